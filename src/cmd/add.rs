//! `zot ext add`: install a source as `install` does, record it in the project file
//! (creating it) and write its lock entry; `--dry-run` only says what it would do.

use anyhow::Result;
use serde::Serialize;

use super::{Context, Run};
use crate::catalog::manifest;
use crate::catalog::paths::Scope;
use crate::cli::AddArgs;
use crate::error::usage;
use crate::install::{self, Outcome};
use crate::output::printable;
use crate::project::lock::{self, Lock};
use crate::project::{self, ProjectFile, Where};
use crate::source::staged::short;
use crate::source::{OnDisk, Source};
use crate::store::Store;

/// `zot ext add --json` output.
#[derive(Debug, Serialize)]
struct Added<'a> {
    name: &'a str,
    version: Option<&'a str>,
    scope: Scope,
    dir: String,
    project_file: String,
    lock_file: String,
    entry: &'a project::Entry,
    lock: &'a lock::Entry,
    /// What is wrong with the placed copy but did not stop the install (`{"message", "fix"}`).
    warnings: &'a [crate::check::Problem],
}

impl Run for AddArgs {
    fn run(&self, ctx: &Context) -> Result<()> {
        if self.source.trim().is_empty() {
            return Err(usage(
                "the source is empty; give a folder that holds extension.json or a git URL",
            ));
        }
        if crate::output::redact::redact(&self.source) != self.source {
            return Err(usage(format!(
                "{} holds credentials, and the project file is meant to be shared, so they are not written into it (nothing was changed); give the URL without them and let git supply them (a credential helper, or an SSH key)",
                crate::output::redact::redact(&self.source)
            )));
        }
        // In a subfolder of a project, the project is the one above, not a second one
        // started here.
        match ctx.in_project_above(self.global, "adding to") {
            Some(above) => self.add(&above),
            None => self.add(ctx),
        }
    }
}

impl AddArgs {
    fn add(&self, ctx: &Context) -> Result<()> {
        let scope = if self.global {
            Scope::Global
        } else {
            Scope::Project
        };
        let at = Where::of(&ctx.layout, scope);
        // Read first: a broken project file stops the run before anything is installed.
        let existing = ProjectFile::load(&at.project_file())?;
        let first = existing.is_none();
        let mut file = existing.unwrap_or_default();
        let mut locked = Lock::load(&at.lock_file())?.unwrap_or_default();
        let OnDisk { source, subdir, .. } = super::install::asked(
            &self.source,
            self.git_ref.as_deref(),
            self.subdir.as_deref(),
            false,
        )?;
        if self.dry_run {
            return self.dry_run(ctx, &at, &source, subdir.as_deref());
        }
        let store = Store::open(ctx.layout.scope(scope))?;
        let cache = super::install::fetch_cache(ctx, &source)?;
        let prepare = self.prepare.options(&ctx.layout.global);
        let request = install::Request {
            fetch: crate::source::Fetch {
                source: &source,
                shown: &self.source,
                git_ref: self.git_ref.as_deref(),
                subdir: subdir.as_deref(),
                cache: cache.as_ref(),
            },
            replace: self.force,
            carry: self.carry(),
            as_fetched: true,
            expect_tree: None,
            prepare: &prepare,
        };
        let entry = project::Entry {
            source: self.recorded_source(&at, &source),
            git_ref: self.git_ref.clone(),
            subdir: subdir.clone(),
            enabled: !self.disabled,
            prepare: !self.prepare.no_prepare,
            allow_scripts: self.prepare.step.allow_scripts,
        };
        let done = match install::install_one(&store, &request, &ctx.out) {
            Err(e) if install::already_installed(&e).is_some() => {
                let same = install::already_installed(&e).expect("checked");
                return already_added(ctx, &at, (file, locked), same, entry);
            }
            done => done?,
        };
        super::install::warn_unsaved(&ctx.out, &done);
        if self.disabled {
            manifest::set_enabled(&done.dest, false, store.scratch_folder())?;
        }
        let name = done.manifest.name.clone();
        let lock_entry = super::sync::lock_entry(&entry, &done.record, &done.tree);
        file.extensions.insert(name.clone(), entry.clone());
        locked.extensions.insert(name.clone(), lock_entry.clone());
        file.save(&at.project_file())?;
        locked.save(&at.lock_file())?;
        project::ignore::keep_managed_out(&at, file.extensions.keys().map(String::as_str))?;
        report(ctx, &at, &done, &entry, &lock_entry)?;
        if first && scope == Scope::Project {
            ctx.out.note(
                "note: commit .zot/extensions.json and .zot/extensions.lock (zot ext sync installs from them); the installed folders (.zot/.gitignore) and .zot/.ext-store/ keep themselves out of git",
            );
        }
        Ok(())
    }
}

/// `add` of what is installed already from the same source: recorded in the project file
/// and lock when they lack it, else nothing to do; no error either way.
fn already_added(
    ctx: &Context,
    at: &Where,
    (mut file, mut locked): (ProjectFile, Lock),
    same: &install::AlreadyInstalled,
    entry: project::Entry,
) -> Result<()> {
    let name = &same.name;
    let shown = at.project_file().display().to_string();
    let recorded =
        file.extensions.get(name) == Some(&entry) && locked.extensions.contains_key(name);
    if !recorded {
        let lock_entry = super::sync::lock_entry(&entry, &same.record, &same.tree);
        file.extensions.insert(name.clone(), entry);
        locked.extensions.insert(name.clone(), lock_entry);
        file.save(&at.project_file())?;
        locked.save(&at.lock_file())?;
    }
    project::ignore::keep_managed_out(at, file.extensions.keys().map(String::as_str))?;
    if ctx.out.json {
        return Ok(ctx.out.json(&serde_json::json!({
            "name": name,
            "version": same.version,
            "dir": same.dest.display().to_string(),
            "project_file": shown,
            "lock_file": at.lock_file().display().to_string(),
            "already_installed": true,
            "recorded": !recorded,
        }))?);
    }
    Ok(ctx.out.say(&if recorded {
        format!("{name} is already in {shown} and installed (same source, same version); nothing to do")
    } else {
        format!(
            "added {name} to {shown}; it was installed already (same source, same version), so nothing was fetched again"
        )
    })?)
}

impl AddArgs {
    /// `--dry-run`: what would be installed and recorded; nothing is written.
    fn dry_run(
        &self,
        ctx: &Context,
        at: &Where,
        source: &Source,
        subdir: Option<&str>,
    ) -> Result<()> {
        let project_file = at.project_file();
        let trial = super::install::dry_run::Trial {
            fetch: crate::source::Fetch {
                source,
                shown: &self.source,
                git_ref: self.git_ref.as_deref(),
                subdir,
                cache: None,
            },
            dirs: ctx.layout.scope(at.scope),
            force: self.force,
            carry: self.carry(),
            project_file: Some(&project_file),
        };
        super::install::dry_run::run(&trial, &ctx.out)
    }

    /// What is carried over: the project file records the state asked for, so the new copy
    /// takes it too.
    fn carry(&self) -> crate::store::carry::Options {
        crate::store::carry::Options {
            enabled: Some(!self.disabled),
            ..Default::default()
        }
    }

    /// The source as the project file keeps it: without a `#path` fragment (that is
    /// `subdir`); a relative local path as given when the file is the project's and its
    /// root is the working folder, made relative to the root when it is a folder above,
    /// and made absolute for the global file.
    fn recorded_source(&self, at: &Where, source: &Source) -> String {
        let without_fragment = source.without_fragment(&self.source);
        if !source.is_local_path() || !std::path::Path::new(&without_fragment).is_relative() {
            return without_fragment;
        }
        let Ok(absolute) = std::path::absolute(&without_fragment) else {
            return without_fragment;
        };
        match at.scope {
            Scope::Global => absolute.display().to_string(),
            Scope::Project if std::env::current_dir().is_ok_and(|cwd| cwd == at.root) => {
                without_fragment
            }
            Scope::Project => project::relative_to(&at.root, &absolute),
        }
    }
}

fn report(
    ctx: &Context,
    at: &Where,
    done: &Outcome,
    entry: &project::Entry,
    lock_entry: &lock::Entry,
) -> Result<()> {
    let name = &done.manifest.name;
    for warning in &done.warnings {
        ctx.out.warn(&install::warning_line(warning));
    }
    if ctx.out.json {
        return Ok(ctx.out.json(&Added {
            warnings: &done.warnings,
            name,
            version: done.manifest.version.as_deref(),
            scope: at.scope,
            dir: done.dest.display().to_string(),
            project_file: at.project_file().display().to_string(),
            lock_file: at.lock_file().display().to_string(),
            entry,
            lock: lock_entry,
        })?);
    }
    let version = done
        .manifest
        .version
        .as_deref()
        .map(|v| format!(" {v}"))
        .unwrap_or_default();
    let commit = done
        .record
        .commit
        .as_deref()
        .map(|c| format!(" ({})", short(c)))
        .unwrap_or_default();
    let disabled = if entry.enabled { "" } else { ", disabled" };
    ctx.out.say(&format!(
        "added {}{version}{commit} ({}{disabled}) to {}",
        printable(name),
        at.scope,
        at.project_file().display()
    ))?;
    for line in done.carried.iter().flat_map(|p| p.lines(true)) {
        ctx.out.say(&format!("  {line}"))?;
    }
    Ok(())
}
