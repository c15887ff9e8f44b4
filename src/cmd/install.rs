//! `zot ext install`: stage a copy or clone, validate it, then rename it into place.

use std::path::Path;

use anyhow::{Result, bail};
use serde::Serialize;

use super::{Context, Run};
use crate::catalog;
use crate::catalog::manifest;
use crate::catalog::paths::{Layout, Scope};
use crate::cli::InstallArgs;
use crate::error::usage;
use crate::source::Source;
use crate::source::copy::{self, LooseLink};
use crate::source::fetch::{self, Request, Staged};
use crate::store::Store;
use crate::store::cache::Cache;
use crate::store::carry::{self, Plan};
use crate::store::record::Record;

/// `zot ext install --json` output.
#[derive(Debug, Serialize)]
struct Installed<'a> {
    /// `name` comes first, from the record, then the install record's other fields.
    #[serde(flatten)]
    record: &'a Record,
    version: Option<&'a str>,
    scope: Scope,
    dir: String,
    replaced: bool,
    /// Links kept in the copy that point outside it or nowhere.
    outside_links: &'a [LooseLink],
    /// What was carried over from the replaced copy, saved or overwritten (`--force`).
    #[serde(skip_serializing_if = "Option::is_none")]
    carry_over: Option<&'a Plan>,
}

impl Run for InstallArgs {
    fn run(&self, ctx: &Context) -> Result<()> {
        if self.source.trim().is_empty() {
            return Err(usage(
                "the source is empty; give a folder that holds extension.json or a git URL",
            ));
        }
        let source = Source::parse_on_disk(&self.source);
        let subdir = self.subdir(&source)?;
        if self.git_ref.is_some() && matches!(source, Source::Path(_)) {
            return Err(usage(format!(
                "--ref applies to git sources only; {} is a local folder",
                self.source
            )));
        }
        let scope = self.scope.scope().unwrap_or(Scope::Global);
        let store = Store::open(ctx.layout.scope(scope))?;
        let cache = fetch_cache(ctx, &source)?;
        let request = Request {
            source: &source,
            shown: &self.source,
            git_ref: self.git_ref.as_deref(),
            subdir: subdir.as_deref(),
            cache: cache.as_ref(),
        };
        if let Some(name) = self.local_name(&store, &source) {
            self.refuse_existing(&store, &name)?;
        }
        let staged = fetch::stage(&store, &request, &ctx.out)?;
        let name = &staged.manifest.name;
        let replaced = self.refuse_existing(&store, name)?;
        let options = self.carry.options();
        let dirs = store.dirs.clone();
        let prepared = carry::prepare(&store, &dirs, &staged.staging, name, options)?;
        let published = store.publish_listed(
            &staged.staging,
            name,
            self.force,
            &staged.record,
            Some(&prepared.files),
        )?;
        let _ = store.rotate_backups(name);
        if let Some(e) = published.record_error {
            ctx.out.warn(&format!(
                "installed, but the install record was not saved: {e:#}; the next zot ext command saves it"
            ));
        }
        let carried = replaced.then_some(&prepared.plan);
        report(ctx, &staged, scope, &published.dest, carried)
    }
}

impl InstallArgs {
    /// The name in a local source's manifest, read before anything is copied, so a clash is
    /// refused at once rather than after copying a large tree. (The staged copy's manifest is
    /// checked again: it is the one that counts.)
    fn local_name(&self, store: &Store, source: &Source) -> Option<String> {
        let Source::Path(path) = source else {
            return None;
        };
        if self.subdir.is_some() {
            return None; // the subfolder is checked link by link while staging
        }
        // A source the staging step would refuse anyway gets that step's message.
        let path = fetch::check_local_source(path, &store.dirs).ok()?;
        manifest::read(&path).ok().map(|m| m.name)
    }

    /// Fails when `name` is installed and `--force` was not given; otherwise says whether
    /// an installed copy will be replaced.
    fn refuse_existing(&self, store: &Store, name: &str) -> Result<bool> {
        let exists = store.existing(name).is_some();
        if exists && !self.force {
            bail!(
                "extension \"{name}\" is already installed at {}; pass --force to replace it (nothing was changed)",
                store.dirs.extension(name).display()
            );
        }
        Ok(exists)
    }

    /// The subfolder from `--subdir` or a `URL#path` fragment (not both).
    fn subdir(&self, source: &Source) -> Result<Option<String>> {
        let fragment = match source {
            Source::Git(url) => url.subdir.clone(),
            Source::Path(_) => None,
        };
        match (&self.subdir, fragment) {
            (Some(_), Some(_)) => Err(usage(
                "give the subfolder once: either --subdir or URL#path, not both",
            )),
            (Some(flag), None) => Ok(Some(flag.clone())),
            (None, fragment) => Ok(fragment),
        }
    }
}

fn report(
    ctx: &Context,
    staged: &Staged,
    scope: Scope,
    dest: &Path,
    carried: Option<&Plan>,
) -> Result<()> {
    let manifest = &staged.manifest;
    let replaced = carried.is_some();
    if ctx.out.json {
        return Ok(ctx.out.json(&Installed {
            version: manifest.version.as_deref(),
            scope,
            dir: dest.display().to_string(),
            replaced,
            record: &staged.record,
            outside_links: &staged.outside_links,
            carry_over: carried,
        })?);
    }
    let version = manifest
        .version
        .as_deref()
        .map(|v| format!(" {v}"))
        .unwrap_or_default();
    let verb = if replaced { "replaced" } else { "installed" };
    ctx.out.say(&format!(
        "{verb} {}{version} ({scope}) in {}",
        manifest.name,
        dest.display()
    ))?;
    for line in carried.iter().flat_map(|p| p.lines(true)) {
        ctx.out.say(&format!("  {line}"))?;
    }
    for note in &manifest.notes {
        ctx.out.warn(note);
    }
    if let Some(note) = copy::loose_note(&manifest.name, &staged.outside_links) {
        ctx.out.note(&format!("note: {note}"));
    }
    shadow_note(ctx, &ctx.layout, &manifest.name, scope);
    Ok(())
}

fn shadow_note(ctx: &Context, layout: &Layout, name: &str, scope: Scope) {
    let other = match scope {
        Scope::Project => Scope::Global,
        Scope::Global => Scope::Project,
    };
    if let Ok(found) = catalog::find(layout, name, Some(other)) {
        // zot skips a global folder only for a project folder of the same folder name; a
        // differently named folder with the same manifest name is started too (a race).
        let message = match scope {
            _ if found.folder_name() != std::ffi::OsStr::new(name) => format!(
                "note: {} also has the name \"{}\": zot starts both and keeps whichever says hello last",
                crate::output::printable(&found.dir.display().to_string()),
                crate::output::printable(name)
            ),
            Scope::Project => format!(
                "note: this project copy takes precedence over the global one in {}",
                found.dir.display()
            ),
            Scope::Global => format!(
                "note: the project copy in {} takes precedence here",
                found.dir.display()
            ),
        };
        ctx.out.note(&message);
    }
}

/// The fetch cache, for a git source (a folder is copied as it is now).
pub(super) fn fetch_cache(ctx: &Context, source: &Source) -> Result<Option<Cache>> {
    match source {
        Source::Git(_) => Ok(Some(Cache::open(&ctx.layout)?)),
        Source::Path(_) => Ok(None),
    }
}
