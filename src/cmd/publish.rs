//! `zot ext publish <folder|name> oci://<registry>/<repository>:<tag>`: the extension staged
//! as installing it would stage it (a folder with the install's checks; an installed copy
//! from its file list, without what a build made or the user's runtime files), packed
//! ([`crate::source::oci::pack`]) and pushed by the helper.

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
use crate::source::oci::pack;
use crate::source::oci::reference::OciRef;
use crate::source::{Fetch, Source, helper};
use crate::store::Store;
use crate::store::filelist::FileList;
use crate::store::record::{Kind, Record};

/// `zot ext publish --json` output.
#[derive(Serialize)]
struct Published {
    name: String,
    version: Option<String>,
    reference: String,
    digest: String,
    layer: String,
    layer_size: u64,
}

impl Run for PublishArgs {
    fn run(&self, ctx: &Context) -> Result<()> {
        let reference = destination(&self.reference)?;
        let (store, _base) = install::trial_store(Scope::Global)?;
        let staged = self.stage(ctx, &store)?;
        let tree = staged.staging.tree();
        let files = FileList::scan(&tree)?;
        let notes = annotations(&staged.manifest, &staged.record);
        let packed = pack::pack(&tree, &files, &staged.staging.scratch("artifact"), &notes)?;
        let digest = helper::push(&reference, &packed)?;
        let done = Published {
            name: staged.manifest.name.clone(),
            version: staged.manifest.version.clone(),
            reference: reference.to_string(),
            digest,
            layer: packed.layer.digest,
            layer_size: packed.layer.size,
        };
        if ctx.out.json {
            return Ok(ctx.out.json(&done)?);
        }
        ctx.out.say(&format!(
            "published {} {} to {} ({})",
            printable(&done.name),
            printable(done.version.as_deref().unwrap_or("(no version)")),
            printable(&done.reference),
            done.digest
        ))?;
        Ok(())
    }
}

impl PublishArgs {
    /// The extension staged in the temporary `store`: the folder `source` names (a path, or
    /// a name with a slash or a folder of that name here), else the installed copy of that
    /// name.
    fn stage(&self, ctx: &Context, store: &Store) -> Result<Staged> {
        let path = Path::new(&self.source);
        if self.source.contains('/') || path.join(crate::catalog::manifest::FILE).is_file() {
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

/// The manifest's standard annotations: version and title; where a git install's record
/// says, its source and revision; created only from `SOURCE_DATE_EPOCH` (never the clock).
fn annotations(
    manifest: &crate::catalog::manifest::Manifest,
    record: &Record,
) -> Vec<(&'static str, String)> {
    let mut notes = vec![("org.opencontainers.image.title", manifest.name.clone())];
    if let Some(version) = &manifest.version {
        notes.push(("org.opencontainers.image.version", version.clone()));
    }
    if record.kind == Kind::Git {
        notes.push(("org.opencontainers.image.source", redact(&record.source)));
        if let Some(commit) = &record.commit {
            notes.push(("org.opencontainers.image.revision", commit.clone()));
        }
    }
    let epoch = std::env::var("SOURCE_DATE_EPOCH").ok();
    if let Some(created) = epoch.as_deref().and_then(rfc3339_of_epoch) {
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
