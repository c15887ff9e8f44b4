//! `zot ext verify`: each installed extension's folder against the file list its install
//! recorded (`store::filelist`, classified as carry-over classifies it), and against the
//! scope's lock file where there is one.
//!
//! Only what the install placed counts: a placed file edited, deleted, or replaced by
//! another kind of entry (a link, a folder, a special file) is a modification; files the
//! install did not place are the extension's data ([`crate::store::carry`]) and never count.
//! A manifest that differs only in `enabled` (`zot ext enable`/`disable`) is not modified.
//! What preparing made (the list's prepared outputs: `node_modules`, `.venv`, a built
//! program) is checked apart: present and unchanged since it was prepared, named as
//! prepared outputs when not.

use std::path::Path;

use anyhow::{Result, bail};
use serde::Serialize;

use super::{Context, Run};
use crate::catalog::paths::{Scope, ScopeDirs};
use crate::catalog::{self, Installed};
use crate::cli::VerifyArgs;
use crate::output::{BAD, GOOD, WARN};
use crate::project::lock::{self, Lock};
use crate::store::Store;
use crate::store::carry::manifest_toggled_only;
use crate::store::filelist::{self, EntryKind, FileList, Standing};

/// How one extension stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
enum Status {
    /// As placed, and as locked where a lock file names it.
    Ok,
    /// A placed file was edited, deleted or replaced.
    Modified,
    /// The placed files are as placed, but a prepared output was edited, deleted or replaced.
    PreparedModified,
    /// Named in the lock file, not installed.
    Missing,
    /// As placed, but the lock records another tree.
    DiffersFromLock,
    /// Installed, the scope has a lock file, and it does not name the extension.
    NotInLock,
    /// No file list: copied in by hand, linked, or installed by an older zot ext.
    NoFileList,
    /// The folder could not be read.
    Unreadable,
}

impl Status {
    fn fails(self) -> bool {
        matches!(
            self,
            Status::Modified
                | Status::PreparedModified
                | Status::Missing
                | Status::DiffersFromLock
                | Status::Unreadable
        )
    }

    fn words(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Modified => "modified",
            Status::PreparedModified => "prepared outputs modified",
            Status::Missing => "missing: in the lock file, not installed",
            Status::DiffersFromLock => "differs from the lock: another tree is installed",
            Status::NotInLock => "not in the lock",
            Status::NoFileList => "no file list: cannot verify",
            Status::Unreadable => "cannot be read",
        }
    }
}

/// What the scope's lock file says about one installed extension.
enum Locked<'a> {
    /// The scope has no lock file.
    NoLockFile,
    /// The lock file does not name it.
    Absent,
    Entry(&'a lock::Entry),
}

/// One extension's verdict, as `--json` prints it.
#[derive(Debug, Serialize)]
struct Report {
    name: String,
    scope: Scope,
    /// The extension's folder (where it is or, for a missing one, would be).
    dir: String,
    status: Status,
    /// Placed files edited or replaced (a folder with `/`).
    changed: Vec<String>,
    /// Placed files gone (a folder gone is named once, with `/`).
    removed: Vec<String>,
    /// Prepared outputs edited or replaced since they were prepared.
    prepared_changed: Vec<String>,
    /// Prepared outputs gone (a folder gone is named once, with `/`).
    prepared_removed: Vec<String>,
    /// The tree hash of what the install placed (its file list), if there is one.
    tree_hash: Option<String>,
    /// The tree hash the lock file records, if it names the extension.
    lock_tree_hash: Option<String>,
    /// Why the status is what it is, beyond the files (no file list, unreadable).
    reason: Option<String>,
}

impl Report {
    fn new(name: &str, scope: Scope, dir: &Path, status: Status) -> Report {
        Report {
            name: name.to_string(),
            scope,
            dir: dir.display().to_string(),
            status,
            changed: Vec::new(),
            removed: Vec::new(),
            prepared_changed: Vec::new(),
            prepared_removed: Vec::new(),
            tree_hash: None,
            lock_tree_hash: None,
            reason: None,
        }
    }
}

impl Run for VerifyArgs {
    fn run(&self, ctx: &Context) -> Result<()> {
        let scopes = self.scope.scopes();
        for scope in Scope::ALL {
            Store::tidy(ctx.layout.scope(scope))?;
        }
        let installed = catalog::scan(&ctx.layout, &scopes)?;
        let mut reports = Vec::new();
        for scope in &scopes {
            let dirs = ctx.layout.scope(*scope);
            let lock = load_lock(dirs)?;
            let here: Vec<&Installed> = installed.iter().filter(|e| e.scope == *scope).collect();
            for e in here.iter().filter(|e| self.wants(&e.dir_name, e.name())) {
                let locked = match &lock {
                    None => Locked::NoLockFile,
                    Some(l) => l
                        .extensions
                        .get(&e.dir_name)
                        .map_or(Locked::Absent, Locked::Entry),
                };
                reports.push(check(dirs, e, &locked));
            }
            for (name, _) in lock.iter().flat_map(|l| &l.extensions) {
                let present = here.iter().any(|e| e.dir_name == *name || e.name() == name);
                if !present && self.wants(name, name) {
                    let mut report =
                        Report::new(name, *scope, &dirs.extension(name), Status::Missing);
                    report.lock_tree_hash = lock.as_ref().map(|l| l.extensions[name].tree.clone());
                    reports.push(report);
                }
            }
        }
        self.check_names(ctx, &reports)?;
        print(ctx, &reports)?;
        verdict(&reports)
    }
}

impl VerifyArgs {
    /// Whether the extension (folder `dir_name`, manifest name `name`) is asked for.
    fn wants(&self, dir_name: &str, name: &str) -> bool {
        self.names.is_empty() || self.names.iter().any(|n| n == dir_name || n == name)
    }

    /// A name that matched nothing is the catalog's "not installed" error (with the names
    /// it is close to).
    fn check_names(&self, ctx: &Context, reports: &[Report]) -> Result<()> {
        for name in &self.names {
            let matched = reports
                .iter()
                .any(|r| r.name == *name || Path::new(&r.dir).file_name() == Some(name.as_ref()));
            if !matched {
                catalog::find(&ctx.layout, name, self.scope.scope())?;
            }
        }
        Ok(())
    }
}

/// The lock file of `dirs`' scope; `None` when there is none.
fn load_lock(dirs: &ScopeDirs) -> Result<Option<Lock>> {
    Lock::load(&dirs.base.join(lock::FILE))
}

/// Verifies one installed extension.
fn check(dirs: &ScopeDirs, e: &Installed, locked: &Locked) -> Report {
    let mut report = Report::new(e.name(), dirs.scope, &e.dir, Status::Ok);
    if let Locked::Entry(entry) = locked {
        report.lock_tree_hash = Some(entry.tree.clone());
    }
    let list = match (&e.link_target, FileList::load(dirs, &e.dir_name)) {
        (None, Some(list)) => list,
        (linked, _) => {
            report.status = Status::NoFileList;
            report.reason = Some(if linked.is_some() {
                "a linked working copy (zot ext link) has no file list".into()
            } else {
                "copied in by hand or installed by an older zot ext".into()
            });
            return report;
        }
    };
    report.tree_hash = Some(list.tree_hash());
    if let Err(e) = compare(&list, &e.dir, &mut report) {
        report.status = Status::Unreadable;
        report.reason = Some(format!("{e:#}"));
        return report;
    }
    report.status = if !report.changed.is_empty() || !report.removed.is_empty() {
        Status::Modified
    } else if !report.prepared_changed.is_empty() || !report.prepared_removed.is_empty() {
        Status::PreparedModified
    } else {
        match locked {
            Locked::NoLockFile => Status::Ok,
            Locked::Absent => Status::NotInLock,
            Locked::Entry(l) if Some(&l.tree) == report.tree_hash.as_ref() => Status::Ok,
            Locked::Entry(_) => Status::DiffersFromLock,
        }
    };
    report
}

/// Fills `report`'s changed and removed files (placed, and prepared outputs apart): the
/// folder at `dir` against `list`.
fn compare(list: &FileList, dir: &Path, report: &mut Report) -> Result<()> {
    let mut removed_dirs: Vec<Vec<u8>> = Vec::new();
    let mut replaced: Vec<Vec<u8>> = Vec::new();
    for entry in list.classify(dir)? {
        let shown = || {
            let slash = if entry.kind == EntryKind::Dir {
                "/"
            } else {
                ""
            };
            format!("{}{slash}", filelist::shown(&entry.path))
        };
        let (changed, removed) = if entry.prepared {
            (&mut report.prepared_changed, &mut report.prepared_removed)
        } else {
            (&mut report.changed, &mut report.removed)
        };
        match entry.standing {
            Standing::Edited if !manifest_toggled_only(dir, Some(list), &entry) => {
                changed.push(shown());
            }
            // A special file counts only where the install placed something (which the
            // classification also reports missing).
            Standing::Special if list.get(&entry.path).is_some() => {
                changed.push(shown());
                replaced.push(entry.path.clone());
            }
            Standing::Missing if !replaced.contains(&entry.path) => {
                let inside_removed = removed_dirs.iter().any(|d| {
                    entry.path.len() > d.len()
                        && entry.path.starts_with(d)
                        && entry.path[d.len()] == b'/'
                });
                if !inside_removed {
                    removed.push(shown());
                }
                if entry.kind == EntryKind::Dir {
                    removed_dirs.push(entry.path.clone());
                }
            }
            // As placed, the extension's own data, or only `enabled` toggled.
            Standing::Unchanged
            | Standing::NotPlaced
            | Standing::Edited
            | Standing::Special
            | Standing::Missing => {}
        }
    }
    Ok(())
}

fn print(ctx: &Context, reports: &[Report]) -> Result<()> {
    if ctx.out.json {
        ctx.out
            .json(&serde_json::json!({ "extensions": reports }))?;
        return Ok(());
    }
    if reports.is_empty() {
        ctx.out
            .note("no extensions installed and no lock file: nothing to verify");
    }
    for r in reports {
        let style = match r.status {
            Status::Ok => GOOD,
            s if s.fails() => BAD,
            _ => WARN,
        };
        let place = format!("{} ({}): ", r.name, r.scope);
        ctx.out
            .say_styled(&[(&place, None), (r.status.words(), Some(style))])?;
        for (what, paths) in [
            ("changed", &r.changed),
            ("removed", &r.removed),
            ("prepared output changed", &r.prepared_changed),
            ("prepared output removed", &r.prepared_removed),
        ] {
            for path in paths {
                ctx.out.say(&format!("  {what}: {path}"))?;
            }
        }
        if let Some(reason) = &r.reason {
            ctx.out.say(&format!("  {reason}"))?;
        }
    }
    Ok(())
}

/// Exit 1 when any extension does not match.
fn verdict(reports: &[Report]) -> Result<()> {
    let failed = reports.iter().filter(|r| r.status.fails()).count();
    if failed > 0 {
        bail!(
            "{failed} of {} extensions do not match what was installed or locked; see the report on stdout",
            reports.len()
        );
    }
    Ok(())
}
