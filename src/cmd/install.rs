//! `zot ext install`: the arguments checked, then [`crate::install`] stages a copy or
//! clone, validates it and renames it into place; `--dry-run` only says what it would do
//! ([`dry_run`]).

pub(super) mod dry_run;

use anyhow::Result;
use serde::Serialize;

use super::{Context, Run};
use crate::catalog;
use crate::catalog::manifest;
use crate::catalog::paths::{Layout, Scope};
use crate::cli::InstallArgs;
use crate::error::usage;
use crate::install;
use crate::output::Output;
use crate::source::Fetch as Request;
use crate::source::copy::{self, LooseLink};
use crate::source::git::cache::Cache;
use crate::source::{OnDisk, Source};
use crate::store::Store;
use crate::store::carry::Plan;
use crate::store::record::Record;

/// `zot ext install --json` output.
#[derive(Debug, Serialize)]
struct Document<'a> {
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
    /// What is wrong with the placed copy but did not stop the install (`{"message", "fix"}`).
    warnings: &'a [crate::check::Problem],
    /// The same source and version were installed already: nothing was done.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    already_installed: bool,
}

impl Run for InstallArgs {
    fn run(&self, ctx: &Context) -> Result<()> {
        let OnDisk {
            source,
            subdir,
            note,
        } = asked(
            &self.source,
            self.git_ref.as_deref(),
            self.subdir.as_deref(),
            true,
        )?;
        let scope = self.scope.scope().unwrap_or(Scope::Global);
        if let Some(note) = &note {
            ctx.out.note(note);
        }
        let shown = source.shown(&self.source);
        if self.dry_run {
            let trial = dry_run::Trial {
                fetch: Request {
                    source: &source,
                    shown: &shown,
                    git_ref: self.git_ref.as_deref(),
                    subdir: subdir.as_deref(),
                    cache: None,
                },
                dirs: ctx.layout.scope(scope),
                force: self.force,
                carry: self.carry.options(),
                project_file: None,
            };
            return dry_run::run(&trial, &ctx.out);
        }
        let store = Store::open(ctx.layout.scope(scope))?;
        let cache = fetch_cache(ctx, &source)?;
        let prepare = self.prepare.options(&ctx.layout.global);
        let request = install::Request {
            fetch: Request {
                source: &source,
                shown: &shown,
                git_ref: self.git_ref.as_deref(),
                subdir: subdir.as_deref(),
                cache: cache.as_ref(),
            },
            replace: self.force,
            carry: self.carry.options(),
            as_fetched: false,
            expect_tree: None,
            prepare: &prepare,
        };
        // A clash with another source is refused at once, before a large tree is copied;
        // the same source is staged, and is no error if it is what is installed.
        if let Some((name, path)) = local_name(&store, &source, subdir.as_deref())
            && Record::load(&store.dirs, &name).is_none_or(|r| r.source != path)
        {
            install::refuse_existing(&store, &name, self.force)?;
        }
        let done = match install::install_one(&store, &request, &ctx.out) {
            Err(e) if install::already_installed(&e).is_some() => {
                let same = install::already_installed(&e).expect("checked");
                return report_already(ctx, same, scope);
            }
            done => done?,
        };
        warn_unsaved(&ctx.out, &done);
        report(ctx, &done, scope)?;
        if self.carry.keep_local && done.carried.is_none() {
            ctx.out.note(&format!(
                "note: --keep-local had no effect: no copy of {} was installed before, so there were no local edits to keep",
                done.manifest.name
            ));
        }
        Ok(())
    }
}

/// The name in a local source's manifest, read before anything is copied, so a clash is
/// refused at once rather than after copying a large tree. (The staged copy's manifest is
/// checked again: it is the one that counts.)
fn local_name(store: &Store, source: &Source, subdir: Option<&str>) -> Option<(String, String)> {
    if subdir.is_some() {
        return None; // the subfolder is checked link by link while staging
    }
    // A source the staging step would refuse anyway gets that step's message.
    let path = source.check_local(&store.dirs).ok()??;
    manifest::read(&path)
        .ok()
        .map(|m| (m.name, path.display().to_string()))
}

/// `install` of what is installed already: said, and no error.
fn report_already(ctx: &Context, same: &install::AlreadyInstalled, scope: Scope) -> Result<()> {
    if ctx.out.json {
        return Ok(ctx.out.json(&Document {
            version: same.version.as_deref(),
            scope,
            dir: same.dest.display().to_string(),
            replaced: false,
            record: &same.record,
            outside_links: &[],
            carry_over: None,
            warnings: &[],
            already_installed: true,
        })?);
    }
    let version = same
        .version
        .as_deref()
        .map(|v| format!(" {v}"))
        .unwrap_or_default();
    Ok(ctx.out.say(&format!(
        "already installed {}{version} ({scope}) in {} (same source, same version); nothing to do",
        same.name,
        same.dest.display()
    ))?)
}

/// What the source argument `arg` of `install` and `add` asks for, checked (not empty, no
/// control characters, the subfolder from `--subdir` or `SOURCE#path` given once, `--ref`
/// for a git source only). With `check_fragment`, a `#path` fragment is checked here and
/// named as written; else the staging step checks it.
pub(super) fn asked(
    arg: &str,
    git_ref: Option<&str>,
    subdir: Option<&str>,
    check_fragment: bool,
) -> Result<OnDisk> {
    if arg.trim().is_empty() {
        return Err(usage(
            "the source is empty; give a folder that holds extension.json or a git URL",
        ));
    }
    let on_disk = Source::parse_on_disk(arg);
    on_disk.source.check_controls().map_err(usage)?;
    let subdir = match (subdir, on_disk.subdir) {
        (Some(_), Some(_)) => {
            return Err(usage(
                "give the subfolder once: either --subdir or SOURCE#path, not both",
            ));
        }
        (Some(flag), None) => Some(flag.to_string()),
        (None, Some(fragment)) if check_fragment => {
            let form = format!("the subfolder \"{fragment}\" after # in {arg}");
            crate::source::staged::check_subdir_as(&fragment, &form)?;
            Some(fragment)
        }
        (None, fragment) => fragment,
    };
    if git_ref.is_some() && !on_disk.source.takes_ref() {
        return Err(usage(format!(
            "--ref applies to git sources only; {arg} is a local folder"
        )));
    }
    Ok(OnDisk { subdir, ..on_disk })
}

/// The warning for an install placed without its record saved.
pub(super) fn warn_unsaved(out: &Output, done: &install::Outcome) {
    if let Some(e) = &done.record_error {
        out.warn(&format!(
            "installed, but the install record was not saved: {e:#}; the next zot ext command saves it"
        ));
    }
}

fn report(ctx: &Context, done: &install::Outcome, scope: Scope) -> Result<()> {
    let manifest = &done.manifest;
    let carried = done.carried.as_ref();
    let dest = &done.dest;
    let replaced = carried.is_some();
    if ctx.out.json {
        ctx.out.json(&Document {
            version: manifest.version.as_deref(),
            scope,
            dir: dest.display().to_string(),
            replaced,
            record: &done.record,
            outside_links: &done.outside_links,
            carry_over: carried,
            warnings: &done.warnings,
            already_installed: false,
        })?;
    } else {
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
    }
    // Warnings and notes go to stderr as text, with --json too.
    for note in &manifest.notes {
        ctx.out.warn(note);
    }
    for warning in &done.warnings {
        ctx.out.warn(&install::warning_line(warning));
    }
    if let Some(warning) = hidden_character_warning(&manifest.name) {
        ctx.out.warn(&warning);
    }
    if let Some(note) = copy::loose_note(&manifest.name, &done.outside_links) {
        ctx.out.note(&format!("note: {note}"));
    }
    if done.left_out_project_state {
        ctx.out.note(
            "note: left out the source's .zot/ folder (zot's state for that folder as a project: the extensions installed there and their store); it is never part of an extension",
        );
    }
    shadow_note(ctx, &ctx.layout, &manifest.name, scope);
    Ok(())
}

/// The warning for a name that holds a character a terminal does not show (zot accepts such
/// names): which one, and how the name reads without it. Printed through
/// [`crate::output::Output::warn`],
/// which shows the name escaped.
fn hidden_character_warning(name: &str) -> Option<String> {
    let hidden = crate::output::first_hidden(name)?;
    let seen = crate::output::escape::without_hidden(name);
    Some(format!(
        "the name \"{name}\" holds U+{:04X}, a character terminals do not show: printed \
         as it is, it reads \"{seen}\" (zot ext shows it escaped; type it as it is to name \
         the extension, or change \"name\" in its extension.json)",
        u32::from(hidden)
    ))
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
    source
        .cached()
        .then(|| Cache::open(&ctx.layout))
        .transpose()
}
