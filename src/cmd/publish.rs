//! `zot ext publish <folder|name> oci://<registry>/<repository>:<tag>`: the extension staged
//! as installing it would stage it (a folder with the install's checks; an installed copy
//! from its file list, without what a build made or the user's runtime files), packed
//! ([`crate::source::oci::pack`]) and pushed by the helper.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Result, bail};
use serde::Serialize;

use super::{Context, Run};
use crate::catalog;
use crate::catalog::paths::Scope;
use crate::cli::PublishArgs;
use crate::error::usage;
use crate::install;
use crate::install::fetch::Staged;
use crate::output::printable;
use crate::output::redact::redact;
use crate::source::copy_tree;
use crate::source::git::Head;
use crate::source::oci::platform::Platform;
use crate::source::oci::reference::OciRef;
use crate::source::oci::{ForPlatform, artifact, pack};
use crate::source::{Fetch, Source, helper};
use crate::store::Store;
use crate::store::filelist::FileList;
use crate::store::record::{Kind, Prepared, Record};

/// `zot ext publish --json` output.
#[derive(Serialize)]
struct Published {
    name: String,
    version: Option<String>,
    reference: String,
    /// What the tag names: the source manifest, or (with platforms) the index.
    digest: String,
    /// The source manifest's digest, and its layer.
    source_digest: String,
    layer: String,
    layer_size: u64,
    /// The manifests built for platforms, pushed now.
    platforms: Vec<PublishedFor>,
    /// Platforms of the index the tag named before, kept (same source).
    kept_platforms: Vec<String>,
}

#[derive(Serialize)]
struct PublishedFor {
    platform: String,
    digest: String,
    layer: String,
    layer_size: u64,
}

impl Run for PublishArgs {
    fn run(&self, ctx: &Context) -> Result<()> {
        let reference = destination(&self.reference)?;
        let platforms = self.platforms()?;
        let (store, _base) = install::trial_store(Scope::Global)?;
        let staged = self.stage(ctx, &store)?;
        let tree = staged.staging.tree();
        let files = FileList::scan(&tree)?;
        let head = self.folder().and_then(|folder| match helper::head(folder) {
            Ok(head) => head,
            Err(e) => {
                ctx.out.note(&format!(
                    "note: the git commit of {} is not known, so the artifact names no revision: {e:#}",
                    printable(&folder.display().to_string())
                ));
                None
            }
        });
        let notes = annotations(&staged.manifest, &staged.record, head.as_ref());
        let packed = pack::pack(&tree, &files, &staged.staging.scratch("artifact"), &notes)?;
        // Each platform's staging folder lives until the push has sent its blobs.
        let (built, _stagings): (Vec<ForPlatform>, Vec<Staged>) = platforms
            .iter()
            .map(|platform| self.build_for(ctx, &store, &staged, platform, &notes))
            .collect::<Result<Vec<_>>>()?
            .into_iter()
            .unzip();
        let pushed = helper::push(&reference, &packed, built.clone())?;
        let done = Published {
            name: staged.manifest.name.clone(),
            version: staged.manifest.version.clone(),
            reference: reference.to_string(),
            digest: pushed.digest,
            source_digest: packed.digest,
            layer: packed.layer.digest,
            layer_size: packed.layer.size,
            platforms: built
                .into_iter()
                .map(|b| PublishedFor {
                    platform: b.platform.to_string(),
                    digest: b.packed.digest,
                    layer: b.packed.layer.digest,
                    layer_size: b.packed.layer.size,
                })
                .collect(),
            kept_platforms: pushed.kept.iter().map(Platform::to_string).collect(),
        };
        if ctx.out.json {
            return Ok(ctx.out.json(&done)?);
        }
        ctx.out.say(&said(&done))?;
        Ok(())
    }
}

/// What publishing did, in words.
fn said(done: &Published) -> String {
    let mut line = format!(
        "published {} {} to {} ({})",
        printable(&done.name),
        printable(done.version.as_deref().unwrap_or("(no version)")),
        printable(&done.reference),
        done.digest
    );
    if !done.platforms.is_empty() {
        let built: Vec<&str> = done.platforms.iter().map(|p| p.platform.as_str()).collect();
        let _ = write!(line, ": the source, and built for {}", built.join(", "));
    }
    if !done.kept_platforms.is_empty() {
        let _ = write!(
            line,
            "; kept from the index there: {}",
            done.kept_platforms.join(", ")
        );
    }
    line
}

impl PublishArgs {
    /// The extension staged in the temporary `store`: the folder `source` names (a path, or
    /// a name with a slash or a folder of that name here), else the installed copy of that
    /// name.
    fn stage(&self, ctx: &Context, store: &Store) -> Result<Staged> {
        if let Some(path) = self.folder() {
            let source = Source::Path(path.to_path_buf());
            let fetch = Fetch {
                source: &source,
                shown: &self.source,
                git_ref: None,
                subdir: None,
                cache: None,
            };
            return install::fetch::stage(store, &fetch, &ctx.out);
        }
        let found = catalog::lookup(&ctx.layout, &self.source, self.scope.scope())?;
        let dirs = ctx.layout.scope(found.scope);
        let manifest = found.manifest.clone().map_err(anyhow::Error::from)?;
        let (Some(record), Some(files)) = (
            Record::load(dirs, &found.dir_name),
            FileList::load(dirs, &found.dir_name),
        ) else {
            bail!(
                "{} has no install record or file list, so what its install placed is not known; publish its folder instead",
                printable(&self.source)
            );
        };
        install::again::stage(store, &found.dir, &manifest, &record, &files)
    }
}

impl PublishArgs {
    /// The folder `source` names, when it names one (a path, or a name with a slash, or a
    /// folder of that name here holding a manifest) rather than an installed extension.
    fn folder(&self) -> Option<&Path> {
        let path = Path::new(&self.source);
        (self.source.contains('/') || path.join(crate::catalog::manifest::FILE).is_file())
            .then_some(path)
    }

    /// The platforms asked for (`--platform`), each once.
    fn platforms(&self) -> Result<Vec<Platform>> {
        let mut platforms = Vec::new();
        for text in &self.platforms {
            let platform = Platform::parse(text.trim()).map_err(usage)?;
            if !platforms.contains(&platform) {
                platforms.push(platform);
            }
        }
        Ok(platforms)
    }

    /// A copy of `staged` prepared for `platform` in a staging folder of its own, packed with
    /// `notes` and what preparing ran and made ([`artifact::PREPARED`]); the copy stays
    /// staged as long as the returned [`Staged`] lives.
    fn build_for(
        &self,
        ctx: &Context,
        store: &Store,
        staged: &Staged,
        platform: &Platform,
        notes: &[(&'static str, String)],
    ) -> Result<(ForPlatform, Staged)> {
        let staging = store.stage()?;
        let (_, files) = copy_tree::copy(&staged.staging.tree(), &staging.tree(), &mut |_| {})?;
        let mut copy = Staged {
            staging,
            manifest: staged.manifest.clone(),
            record: staged.record.clone(),
            outside_links: Vec::new(),
            left_out_project_state: false,
            files,
            origin: staged.origin.clone(),
        };
        let mut options = self.step.options(&ctx.layout.global);
        options.target = Some(platform.clone());
        options.offers_no_prepare = false;
        let name = printable(&copy.manifest.name);
        if !install::prepare(&mut copy, &options, &ctx.out)? {
            bail!(
                "{name} has nothing to build or install: its source runs as it is on every platform; publish without --platform"
            );
        }
        let prepared = copy.record.prepared.clone().expect("prepared");
        let built = artifact::Built {
            prepared: Prepared {
                ran_at: None,
                ..prepared
            },
            roots: copy.files.prepared().to_vec(),
        };
        let mut notes = notes.to_vec();
        notes.push((artifact::PREPARED, serde_json::to_string(&built)?));
        notes.sort_by_key(|(key, _)| *key);
        let tree = copy.staging.tree();
        let packed = pack::pack(
            &tree,
            &copy.files,
            &copy.staging.scratch("artifact"),
            &notes,
        )?;
        let platform = platform.clone();
        Ok((ForPlatform { platform, packed }, copy))
    }
}

/// The destination, which must be an `oci://` reference with a tag.
fn destination(arg: &str) -> Result<OciRef> {
    let Some(reference) = OciRef::parse(arg) else {
        return Err(usage(format!(
            "{} is not a registry reference; publish to oci://<registry>/<repository>:<tag>",
            printable(arg)
        )));
    };
    reference.check().map_err(usage)?;
    if reference.digest.is_some() || reference.tag.is_none() {
        return Err(usage(format!(
            "{}: publish to a tag (oci://<registry>/<repository>:<tag>); the digest is what the registry answers",
            printable(arg)
        )));
    }
    Ok(reference)
}

/// The manifest's standard annotations: version and title; source and revision from a git
/// install's record, or from the repository a published folder is in (`head`: its `origin`
/// and `HEAD`); created from `SOURCE_DATE_EPOCH`, else that `HEAD`'s commit time (never the
/// clock).
fn annotations(
    manifest: &crate::catalog::manifest::Manifest,
    record: &Record,
    head: Option<&Head>,
) -> Vec<(&'static str, String)> {
    let mut notes = vec![("org.opencontainers.image.title", manifest.name.clone())];
    if let Some(version) = &manifest.version {
        notes.push(("org.opencontainers.image.version", version.clone()));
    }
    let (source, revision) = match (record.kind, head) {
        (Kind::Git, _) => (Some(record.source.as_str()), record.commit.as_deref()),
        (_, Some(head)) => (head.remote.as_deref(), Some(head.commit.as_str())),
        _ => (None, None),
    };
    if let Some(source) = source {
        notes.push(("org.opencontainers.image.source", redact(source)));
    }
    if let Some(revision) = revision {
        notes.push(("org.opencontainers.image.revision", revision.to_string()));
    }
    let epoch = std::env::var("SOURCE_DATE_EPOCH").ok();
    let created = epoch
        .as_deref()
        .and_then(rfc3339_of_epoch)
        .or_else(|| head.and_then(|h| rfc3339_of_epoch(&h.time.to_string())));
    if let Some(created) = created {
        notes.push(("org.opencontainers.image.created", created));
    }
    notes.sort_by_key(|(key, _)| *key);
    notes
}

/// `SOURCE_DATE_EPOCH` (seconds since 1970) as RFC 3339 UTC.
fn rfc3339_of_epoch(epoch: &str) -> Option<String> {
    let seconds: u64 = epoch.trim().parse().ok()?;
    let time = std::time::UNIX_EPOCH + std::time::Duration::from_secs(seconds);
    Some(humantime::format_rfc3339_seconds(time).to_string())
}
