//! `zot ext sync`: make one scope's installed extensions match its project file. The plan
//! is worked out offline from the project file, the lock, the install records and a re-hash
//! of every installed tree; what must be fetched is staged in parallel, then placed one by
//! one (each atomically), enabled states are set, `--prune` removes what the file does not
//! name, and the lock is written.
//!
//! Up to date means: the lock entry agrees with the file (source, ref, subdir), the file
//! list recorded at install hashes to the lock's tree hash, the install record was prepared
//! as the lock entry's `prepared` says (where it says anything), and re-hashing the
//! installed files against that list (prepared outputs included) finds none edited or
//! missing. With `--frozen`, a staged copy prepared otherwise than locked is refused before
//! anything is placed. The re-hash (rather than trusting
//! the recorded hash alone) catches a tree changed by hand; it reads only local files, so an
//! up-to-date sync needs no network. Every placed file counts, `extension.json` included:
//! only its `enabled` value may differ (enable and disable rewrite it, and sync sets it from
//! the file), judged by the rule `verify` uses ([`manifest_toggled_only`]). Files the install
//! did not place are the extension's own data. A placed file changed is reinstalled by
//! `sync` and refused by `--frozen`, naming the files.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::sync::{Arc, Mutex, PoisonError};

use anyhow::{Result, anyhow, bail};
use serde::Serialize;

use super::{Context, Run};
use crate::catalog;
use crate::catalog::manifest;
use crate::catalog::paths::{Scope, ScopeDirs};
use crate::cli::SyncArgs;
use crate::install::{self, Outcome, Ready};
use crate::output::redact::redact;
use crate::output::{ColorChoice, Output, printable};
use crate::project::lock::{self, Lock};
use crate::project::{self, ProjectFile, Where};
use crate::source::Source;
use crate::source::git::cache::Cache;
use crate::store::Store;
use crate::store::carry::manifest_toggled_only;
use crate::store::filelist::{FileList, Standing};
use crate::store::record::Record;

/// What the plan does with one extension.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
enum Action {
    Install,
    Update,
    #[default]
    UpToDate,
    Remove,
}

/// What happened to one extension (or, with `--dry-run`, would).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
enum Status {
    Installed,
    Updated,
    UpToDate,
    Removed,
    #[default]
    Failed,
    WouldInstall,
    WouldUpdate,
    WouldRemove,
}

/// One extension in the plan.
#[derive(Debug, Clone, Default)]
struct Item {
    name: String,
    action: Action,
    /// Why it is updated.
    reason: Option<String>,
    /// The file's entry (none for a removal).
    entry: Option<project::Entry>,
    /// The lock entry when it agrees with the file.
    locked: Option<lock::Entry>,
    /// The enabled state to set on an extension that stays (`None`: already right).
    set_enabled: Option<bool>,
    /// The placed files changed since the install (shown), which `--frozen` refuses.
    edited: Vec<String>,
}

/// One element of `zot ext sync --json`, and one line of text.
#[derive(Debug, Default, Serialize)]
struct Report {
    name: String,
    status: Status,
    version: Option<String>,
    commit: Option<String>,
    /// The manifest digest of an extension from an OCI registry; absent for other sources.
    #[serde(skip_serializing_if = "Option::is_none")]
    digest: Option<String>,
    tree: Option<String>,
    enabled: Option<bool>,
    /// Why it was updated, or why it failed.
    message: Option<String>,
    /// Where what the update replaced was saved (edited files, files the new version
    /// ships), if anything was.
    #[serde(skip_serializing_if = "Option::is_none")]
    backup: Option<String>,
    /// What preparing ran for the copy in place (for the lock).
    #[serde(skip)]
    prepared: Option<lock::Prepared>,
    /// What is wrong with the placed copy but did not stop the install (`{"message", "fix"}`).
    warnings: Vec<crate::check::Problem>,
}

#[derive(Debug, Default, Serialize)]
struct Summary {
    installed: usize,
    updated: usize,
    up_to_date: usize,
    removed: usize,
    failed: usize,
}

#[derive(Serialize)]
struct Document<'a> {
    scope: Scope,
    project_file: String,
    lock_file: String,
    frozen: bool,
    dry_run: bool,
    extensions: &'a [Report],
    summary: &'a Summary,
}

impl Run for SyncArgs {
    fn run(&self, ctx: &Context) -> Result<()> {
        // In a subfolder of a project, the project file is the one above.
        match ctx.in_project_above(self.global, "syncing") {
            Some(above) => self.sync(&above),
            None => self.sync(ctx),
        }
    }
}

impl SyncArgs {
    fn sync(&self, ctx: &Context) -> Result<()> {
        let scope = if self.global {
            Scope::Global
        } else {
            Scope::Project
        };
        let at = Where::of(&ctx.layout, scope);
        let dirs = ctx.layout.scope(scope);
        let Some(file) = ProjectFile::load(&at.project_file())? else {
            bail!(
                "there is no project file {}; create it with zot ext add <source>",
                at.project_file().display()
            );
        };
        // Read once: the text tells at the end whether the lock needs writing.
        let lock_text = project::read_text(&at.lock_file())?;
        let lock = match &lock_text {
            Some(text) => Lock::parse(text, &at.lock_file())?,
            None => Lock::default(),
        };
        if self.frozen {
            check_frozen(&at, &file, &lock)?;
        }
        if self.dry_run {
            Store::tidy(dirs)?;
            let items = self.plan(ctx, &at, dirs, &file, &lock)?;
            if self.frozen {
                check_frozen_edits(&at, &items)?;
            }
            let reports: Vec<Report> = items.iter().map(dry_report).collect();
            return self.finish(ctx, &at, &reports);
        }
        let store = Store::open(dirs)?;
        let items = self.plan(ctx, &at, dirs, &file, &lock)?;
        if self.frozen {
            check_frozen_edits(&at, &items)?;
        }
        note_scripts(ctx, &items, self.prepare.step.allow_scripts);
        let reports = self.apply(&at, &store, &items, &ctx.layout.global, &ctx.out)?;
        if !self.frozen {
            save_lock(&at, &lock, lock_text.as_deref(), &file, &reports)?;
            project::ignore::keep_managed_out(&at, file.extensions.keys().map(String::as_str))?;
        }
        self.finish(ctx, &at, &reports)
    }

    /// What to do with each extension, worked out without the network.
    fn plan(
        &self,
        ctx: &Context,
        at: &Where,
        dirs: &ScopeDirs,
        file: &ProjectFile,
        lock: &Lock,
    ) -> Result<Vec<Item>> {
        let mut items: Vec<Item> = file
            .extensions
            .iter()
            .map(|(name, entry)| plan_one(dirs, name, entry, lock.extensions.get(name)))
            .collect();
        if self.prune {
            for found in catalog::scan(&ctx.layout, &[at.scope])? {
                if !file.extensions.contains_key(&found.dir_name) {
                    items.push(Item {
                        name: found.dir_name.clone(),
                        action: Action::Remove,
                        ..Item::default()
                    });
                }
            }
        }
        Ok(items)
    }

    /// Stages every extension to fetch in parallel, then (with `--frozen`, only when every
    /// one staged and checked out) places them, sets enabled states and prunes.
    fn apply(
        &self,
        at: &Where,
        store: &Store,
        items: &[Item],
        global: &ScopeDirs,
        out: &Output,
    ) -> Result<Vec<Report>> {
        let fetching: Vec<&Item> = items
            .iter()
            .filter(|i| matches!(i.action, Action::Install | Action::Update))
            .collect();
        let jobs = self.jobs.map_or_else(
            || std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
            usize::from,
        );
        let mut prepare = self.prepare.options(global);
        if !out.quiet && !out.json {
            prepare.watcher = Some(Arc::new(Preparing::new(out)));
        }
        let how = How {
            frozen: self.frozen,
            prepare,
        };
        let staged = stage_all(at, store, &fetching, jobs, &how, global);
        if self.frozen && staged.iter().any(Result::is_err) {
            let problems: Vec<String> = fetching
                .iter()
                .zip(&staged)
                .filter_map(|(item, r)| r.as_ref().err().map(|e| format!("{}: {e:#}", item.name)))
                .collect();
            for line in &problems {
                fail_line(line);
            }
            bail!(
                "{} of {} extensions did not match the lock (see above); nothing was changed",
                problems.len(),
                fetching.len()
            );
        }
        let mut placed = place_staged(store, &fetching, staged);
        let mut reports = Vec::new();
        for item in items {
            let report = match item.action {
                Action::Install | Action::Update => {
                    let outcome = placed.remove(item.name.as_str()).expect("placed");
                    placed_report(store, item, outcome)
                }
                Action::UpToDate => keep(store, item),
                Action::Remove => remove(store, item),
            };
            reports.push(report);
        }
        Ok(reports)
    }

    fn finish(&self, ctx: &Context, at: &Where, reports: &[Report]) -> Result<()> {
        let summary = summarize(reports);
        if ctx.out.json {
            ctx.out.json(&Document {
                scope: at.scope,
                project_file: at.project_file().display().to_string(),
                lock_file: at.lock_file().display().to_string(),
                frozen: self.frozen,
                dry_run: self.dry_run,
                extensions: reports,
                summary: &summary,
            })?;
        } else {
            for report in reports {
                match report.status {
                    Status::Failed => fail_line(&line(report)),
                    _ => ctx.out.say(&line(report))?,
                }
            }
            ctx.out.say(&summary_line(&summary, self.dry_run))?;
        }
        // On stderr as text, with --json too.
        for warning in reports.iter().flat_map(|r| &r.warnings) {
            ctx.out.warn(&install::warning_line(warning));
        }
        if summary.failed > 0 {
            bail!(
                "{} of {} extensions failed (see above); the others are in place",
                summary.failed,
                reports.len()
            );
        }
        Ok(())
    }
}

/// The plan for one entry of the file.
fn plan_one(
    dirs: &ScopeDirs,
    name: &str,
    entry: &project::Entry,
    locked: Option<&lock::Entry>,
) -> Item {
    let mut item = Item {
        name: name.to_string(),
        entry: Some(entry.clone()),
        locked: locked.filter(|l| disagreement(l, entry).is_none()).cloned(),
        ..Item::default()
    };
    match drift(dirs, name, locked, entry) {
        Ok(()) => {
            let enabled = manifest::read(&dirs.extension(name)).map(|m| m.enabled);
            item.set_enabled = (enabled.ok() != Some(entry.enabled)).then_some(entry.enabled);
        }
        Err(Drift::Missing) => item.action = Action::Install,
        Err(Drift::Changed(why)) => {
            item.action = Action::Update;
            item.reason = Some(why);
        }
        Err(Drift::Edited(files)) => {
            item.action = Action::Update;
            item.reason = Some(format!(
                "files changed since it was installed: {}",
                files.join(", ")
            ));
            item.edited = files;
        }
    }
    item
}

/// Why an installed extension is not what the lock says.
enum Drift {
    Missing,
    Changed(String),
    /// Placed files edited or missing (shown).
    Edited(Vec<String>),
}

/// Checks the installed copy of `name` against its lock entry (see the module doc).
fn drift(
    dirs: &ScopeDirs,
    name: &str,
    locked: Option<&lock::Entry>,
    entry: &project::Entry,
) -> Result<(), Drift> {
    let dir = dirs.extension(name);
    let Ok(meta) = std::fs::symlink_metadata(&dir) else {
        return Err(Drift::Missing);
    };
    let changed = |why: &str| Drift::Changed(why.to_string());
    let Some(locked) = locked else {
        return Err(changed("not in the lock"));
    };
    if let Some(why) = disagreement(locked, entry) {
        return Err(Drift::Changed(why));
    }
    if !meta.is_dir() {
        return Err(changed("installed as a link, not from the source"));
    }
    let record = Record::load(dirs, name).ok_or_else(|| changed("no install record"))?;
    if record.commit != locked.commit {
        return Err(changed("the installed commit is not the locked one"));
    }
    if record.digest != locked.digest {
        return Err(changed(
            "the installed manifest digest is not the locked one",
        ));
    }
    let list = FileList::load(dirs, name).ok_or_else(|| changed("no file list"))?;
    if list.tree_hash() != locked.tree {
        return Err(changed("the installed tree is not the locked one"));
    }
    if let Some(want) = &locked.prepared {
        let now = record.prepared.as_ref().map(lock::Prepared::of);
        if let Some(why) = want.differs(now.as_ref()) {
            return Err(Drift::Changed(format!(
                "preparing differs from the lock: {why}"
            )));
        }
    }
    let classified = list
        .classify(&dir)
        .map_err(|e| Drift::Changed(format!("cannot read the installed copy: {e:#}")))?;
    let edited: Vec<String> = classified
        .iter()
        .filter(|c| match c.standing {
            Standing::Missing => true,
            Standing::Edited => !manifest_toggled_only(&dir, Some(&list), c),
            _ => false,
        })
        .map(|c| crate::store::filelist::shown(&c.path))
        .collect();
    if !edited.is_empty() {
        return Err(Drift::Edited(edited));
    }
    Ok(())
}

/// How a lock entry differs from the file's entry, if it does.
fn disagreement(locked: &lock::Entry, entry: &project::Entry) -> Option<String> {
    let shown = |v: &Option<String>| {
        v.as_deref()
            .map_or("none".to_string(), |s| format!("\"{s}\""))
    };
    if locked.source != redact(&entry.source) {
        return Some(format!(
            "source differs: the file says \"{}\", the lock \"{}\"",
            redact(&entry.source),
            locked.source
        ));
    }
    if locked.git_ref != entry.git_ref {
        return Some(format!(
            "ref differs: the file says {}, the lock {}",
            shown(&entry.git_ref),
            shown(&locked.git_ref)
        ));
    }
    if locked.subdir != entry.subdir {
        return Some(format!(
            "subdir differs: the file says {}, the lock {}",
            shown(&entry.subdir),
            shown(&locked.subdir)
        ));
    }
    None
}

/// `--frozen`: every entry of the file is in the lock and agrees with it, every git entry
/// has a commit, and the lock names nothing else. Checked before anything is fetched.
fn check_frozen(at: &Where, file: &ProjectFile, lock: &Lock) -> Result<()> {
    let mut problems = Vec::new();
    for (name, entry) in &file.extensions {
        let name = printable(name);
        match lock.extensions.get(name.as_str()) {
            None => problems.push(format!("{name}: in the project file but not in the lock")),
            Some(locked) => {
                if let Some(why) = disagreement(locked, entry) {
                    problems.push(format!("{name}: {why}"));
                } else if let Some(what) = Source::parse_on_disk(&at.resolve(&entry.source))
                    .source
                    .missing_pin(locked.commit.is_some(), locked.digest.is_some())
                {
                    problems.push(format!("{name}: the lock has no {what}"));
                }
            }
        }
    }
    for name in lock.extensions.keys() {
        if !file.extensions.contains_key(name) {
            problems.push(format!(
                "{}: in the lock but not in the project file",
                printable(name)
            ));
        }
    }
    if problems.is_empty() {
        return Ok(());
    }
    Err(anyhow!(
        "--frozen: {} and {} disagree: {}; nothing was changed (run zot ext sync without --frozen to update the lock)",
        at.project_file().display(),
        at.lock_file().display(),
        problems.join("; ")
    ))
}

/// `--frozen`: no installed extension has a placed file changed since its install (an
/// `extension.json` that now runs something else, say); such a copy is not reinstalled
/// behind the user's back but named. Checked before anything is fetched.
fn check_frozen_edits(at: &Where, items: &[Item]) -> Result<()> {
    let problems: Vec<String> = items
        .iter()
        .filter(|i| !i.edited.is_empty())
        .map(|i| {
            format!(
                "{}: {} changed since it was installed",
                printable(&i.name),
                i.edited.join(", ")
            )
        })
        .collect();
    if problems.is_empty() {
        return Ok(());
    }
    Err(anyhow!(
        "--frozen: installed files differ from their file lists in {}: {}; nothing was changed (run zot ext sync without --frozen to install them again)",
        at.dir.display(),
        problems.join("; ")
    ))
}

/// Names the extensions the project file asks lifecycle scripts for (`"allow_scripts":
/// true`): a cloned project is someone else's word, so they run only with the user's
/// (`--allow-scripts` or `ZOT_EXT_ALLOW_SCRIPTS`); without it, the command that gives it.
fn note_scripts(ctx: &Context, items: &[Item], allowed: bool) {
    let asking: Vec<String> = items
        .iter()
        .filter(|item| matches!(item.action, Action::Install | Action::Update))
        .filter(|item| {
            item.entry
                .as_ref()
                .is_some_and(|e| e.allow_scripts && e.prepare)
        })
        .map(|item| printable(&item.name))
        .collect();
    if asking.is_empty() {
        return;
    }
    let names = asking.join(", ");
    if allowed {
        ctx.out.note(&format!(
            "{names}: lifecycle scripts run (sealed), as --allow-scripts allows and the project file asks"
        ));
    } else {
        ctx.out.note(&format!(
            "note: the project file asks for the lifecycle scripts of {names} (\"allow_scripts\": true); they run only with your word: zot ext sync --allow-scripts (or ZOT_EXT_ALLOW_SCRIPTS=1)"
        ));
    }
}

/// The one progress line of the extensions being prepared while others are fetched
/// (`preparing a (go build), b (npm ci)…`), redrawn when a step starts or ends and cleared
/// when none is left; on a terminal only (nothing on a pipe, with `-q` or `--json`).
#[derive(Debug)]
struct Preparing {
    out: Output,
    running: Mutex<Vec<(String, String)>>,
}

impl Preparing {
    fn new(out: &Output) -> Preparing {
        Preparing {
            out: out.clone(),
            running: Mutex::new(Vec::new()),
        }
    }

    fn draw(&self, running: &[(String, String)]) {
        if running.is_empty() {
            return self.out.progress_done();
        }
        let names: Vec<String> = running
            .iter()
            .map(|(name, step)| format!("{} ({step})", printable(name)))
            .collect();
        let line = format!("preparing {}…", names.join(", "));
        let width = crate::output::table::terminal_width().saturating_sub(1);
        self.out
            .progress(&crate::output::table::cut_end(&line, width));
    }
}

impl crate::prepare::Watcher for Preparing {
    fn started(&self, name: &str, step: &str) {
        let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        running.push((name.to_string(), step.to_string()));
        self.draw(&running);
    }

    fn ended(&self, name: &str) {
        let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        running.retain(|(n, _)| n != name);
        self.draw(&running);
    }
}

/// How every extension is staged: `--frozen`, and how it is prepared.
struct How {
    frozen: bool,
    prepare: crate::prepare::Options,
}

/// Stages the items in parallel, `jobs` at a time; results in the items' order.
fn stage_all(
    at: &Where,
    store: &Store,
    items: &[&Item],
    jobs: usize,
    how: &How,
    global: &ScopeDirs,
) -> Vec<Result<Ready>> {
    // Progress lines of parallel fetches would overwrite each other.
    let silent = Output::new(ColorChoice::Never, true, true);
    crate::threads::map_each(
        items,
        jobs,
        "stage",
        || (),
        |(), item| stage_one(at, store, item, how, global, &silent),
    )
}

/// Fetches one extension: the locked commit when the lock agrees with the file (the ref
/// otherwise), checked against the locked tree hash with `--frozen`.
fn stage_one(
    at: &Where,
    store: &Store,
    item: &Item,
    how: &How,
    global: &ScopeDirs,
    out: &Output,
) -> Result<Ready> {
    let entry = item.entry.as_ref().expect("an entry to install");
    let resolved = at.resolve(&entry.source);
    let source = Source::parse_on_disk(&resolved).source;
    let locked = item.locked.as_ref();
    // A registry's source is fetched by the locked digest, as a repository at the locked
    // commit.
    let source = match locked.and_then(|l| l.digest.as_deref()) {
        Some(digest) => source.at_digest(digest),
        None => source,
    };
    let pinned = locked.and_then(|l| l.commit.clone());
    let git_ref = source
        .takes_ref()
        .then(|| pinned.or_else(|| entry.git_ref.clone()))
        .flatten();
    let cache = source
        .cached()
        .then(|| Cache::in_scope(global))
        .transpose()?;
    let mut prepare = how.prepare.clone();
    prepare.enabled &= entry.prepare;
    let request = install::Request {
        fetch: crate::source::Fetch {
            source: &source,
            shown: &entry.source,
            git_ref: git_ref.as_deref(),
            subdir: entry.subdir.as_deref(),
            cache: cache.as_ref(),
        },
        replace: item.action == Action::Update,
        carry: crate::store::carry::Options::default(),
        as_fetched: true,
        prepare: &prepare,
        expect_tree: if how.frozen {
            item.locked.as_ref().map(|l| l.tree.as_str())
        } else {
            None
        },
    };
    let ready = install::stage(store, &request, out)?;
    let named = &ready.staged.manifest.name;
    if *named != item.name {
        bail!(
            "its extension.json names it \"{}\", not \"{}\"; use its name as the key in the project file",
            printable(named),
            printable(&item.name)
        );
    }
    if how.frozen {
        check_frozen_prepared(at, item, &ready)?;
    }
    Ok(ready)
}

/// `--frozen`: what preparing the staged copy ran is what the lock entry records (when it
/// records it), checked before anything is placed.
fn check_frozen_prepared(at: &Where, item: &Item, ready: &Ready) -> Result<()> {
    let Some(want) = item.locked.as_ref().and_then(|l| l.prepared.as_ref()) else {
        return Ok(());
    };
    let now = ready
        .staged
        .record
        .prepared
        .as_ref()
        .map(lock::Prepared::of);
    match want.differs(now.as_ref()) {
        None => Ok(()),
        Some(why) => bail!(
            "preparing differs from {}: {why}; nothing was changed (run zot ext sync without --frozen to update the lock)",
            at.lock_file().display()
        ),
    }
}

/// Places every staged extension at once ([`install::place_all`]: one set of flushes to
/// disk for all); the outcome of each by name, a failed staging's error included.
fn place_staged<'a>(
    store: &Store,
    fetching: &[&'a Item],
    staged: Vec<Result<Ready>>,
) -> BTreeMap<&'a str, Result<Outcome>> {
    let mut outcomes = BTreeMap::new();
    let (mut names, mut ready) = (Vec::new(), Vec::new());
    for (item, staged) in fetching.iter().zip(staged) {
        match staged {
            Ok(one) => {
                names.push(item.name.as_str());
                ready.push(one);
            }
            Err(e) => {
                outcomes.insert(item.name.as_str(), Err(e));
            }
        }
    }
    outcomes.extend(names.into_iter().zip(install::place_all(store, ready)));
    outcomes
}

/// The report of a placed extension, once its enabled state is set.
fn placed_report(store: &Store, item: &Item, placed: Result<Outcome>) -> Report {
    let mut report = empty_report(item);
    let placed = placed.and_then(|done| {
        let want = item.entry.as_ref().is_none_or(|e| e.enabled);
        if done.manifest.enabled != want {
            manifest::set_enabled(&done.dest, want, store.scratch_folder())?;
        }
        Ok(done)
    });
    match placed {
        Ok(done) => {
            report.status = match item.action {
                Action::Install => Status::Installed,
                _ => Status::Updated,
            };
            report.version = done.manifest.version;
            report.prepared = done.record.prepared.as_ref().map(lock::Prepared::of);
            report.commit = done.record.commit;
            report.digest = done.record.digest;
            report.tree = Some(done.tree);
            report.message.clone_from(&item.reason);
            report.backup = done
                .carried
                .as_ref()
                .and_then(|plan| plan.backup.as_ref())
                .map(|dir| dir.display().to_string());
            report.warnings = done.warnings;
        }
        Err(e) => {
            report.status = Status::Failed;
            report.message = Some(format!("{e:#}"));
        }
    }
    report
}

/// An extension that stays: only its enabled state may change.
fn keep(store: &Store, item: &Item) -> Report {
    let mut report = empty_report(item);
    report.status = Status::UpToDate;
    let dirs = &store.dirs;
    let record = Record::load(dirs, &item.name);
    report.prepared = record
        .as_ref()
        .and_then(|r| r.prepared.as_ref())
        .map(lock::Prepared::of);
    report.digest = record.as_ref().and_then(|r| r.digest.clone());
    report.commit = record.and_then(|r| r.commit);
    report.tree = item.locked.as_ref().map(|l| l.tree.clone());
    let dir = dirs.extension(&item.name);
    report.version = manifest::read(&dir).ok().and_then(|m| m.version);
    if let Some(want) = item.set_enabled {
        match manifest::set_enabled(&dir, want, store.scratch_folder()) {
            Ok(_) => report.message = Some(if want { "enabled" } else { "disabled" }.into()),
            Err(e) => {
                report.status = Status::Failed;
                report.message = Some(format!("cannot set \"enabled\": {e:#}"));
            }
        }
    }
    report
}

/// `--prune`: removes an extension the file does not name.
fn remove(store: &Store, item: &Item) -> Report {
    let mut report = empty_report(item);
    match store.remove(&item.name) {
        Ok(_) => report.status = Status::Removed,
        Err(e) => {
            report.status = Status::Failed;
            report.message = Some(format!("{e:#}"));
        }
    }
    report
}

fn empty_report(item: &Item) -> Report {
    Report {
        name: item.name.clone(),
        enabled: item.entry.as_ref().map(|e| e.enabled),
        ..Report::default()
    }
}

/// What `--dry-run` says about one item.
fn dry_report(item: &Item) -> Report {
    let mut report = empty_report(item);
    report.status = match item.action {
        Action::Install => Status::WouldInstall,
        Action::Update => Status::WouldUpdate,
        Action::UpToDate => Status::UpToDate,
        Action::Remove => Status::WouldRemove,
    };
    report.commit = item.locked.as_ref().and_then(|l| l.commit.clone());
    report.digest = item.locked.as_ref().and_then(|l| l.digest.clone());
    report.tree = item.locked.as_ref().map(|l| l.tree.clone());
    report.message = match item.set_enabled {
        Some(true) => Some("would enable".into()),
        Some(false) => Some("would disable".into()),
        None => item.reason.clone(),
    };
    report
}

/// The lock entry for what was installed from `entry`.
pub(crate) fn lock_entry(entry: &project::Entry, record: &Record, tree: &str) -> lock::Entry {
    let prepared = record.prepared.as_ref().map(lock::Prepared::of);
    let pin = (record.commit.clone(), record.digest.clone());
    placed_entry(entry, pin, tree, prepared)
}

/// The lock entry for `(commit, digest)` (of a git or an OCI source) installed from `entry`
/// as `tree`, and prepared as `prepared` says.
fn placed_entry(
    entry: &project::Entry,
    (commit, digest): (Option<String>, Option<String>),
    tree: &str,
    prepared: Option<lock::Prepared>,
) -> lock::Entry {
    lock::Entry {
        source: redact(&entry.source),
        git_ref: entry.git_ref.clone(),
        subdir: entry.subdir.clone(),
        commit,
        digest,
        tree: tree.to_string(),
        prepared,
    }
}

/// Writes the lock: an entry for every extension of the file that is in place as planned
/// (a failed one keeps its old entry), none for anything else. Unchanged text (`old_text`,
/// as read at the start) is not rewritten.
fn save_lock(
    at: &Where,
    old: &Lock,
    old_text: Option<&str>,
    file: &ProjectFile,
    reports: &[Report],
) -> Result<()> {
    let mut new = Lock::default();
    for report in reports {
        let Some(entry) = file.extensions.get(&report.name) else {
            continue;
        };
        let locked = match (report.status, &report.tree) {
            (Status::Installed | Status::Updated, Some(tree)) => Some(placed_entry(
                entry,
                (report.commit.clone(), report.digest.clone()),
                tree,
                report.prepared.clone(),
            )),
            // An entry written before the lock kept what was prepared gains it.
            (Status::UpToDate, _) => old.extensions.get(&report.name).map(|l| lock::Entry {
                prepared: l.prepared.clone().or_else(|| report.prepared.clone()),
                ..l.clone()
            }),
            _ => old.extensions.get(&report.name).cloned(),
        };
        if let Some(locked) = locked {
            new.extensions.insert(report.name.clone(), locked);
        }
    }
    if old_text != Some(new.to_text().as_str()) {
        new.save(&at.lock_file())?;
    }
    Ok(())
}

fn summarize(reports: &[Report]) -> Summary {
    let mut summary = Summary::default();
    for report in reports {
        match report.status {
            Status::Installed | Status::WouldInstall => summary.installed += 1,
            Status::Updated | Status::WouldUpdate => summary.updated += 1,
            Status::UpToDate => summary.up_to_date += 1,
            Status::Removed | Status::WouldRemove => summary.removed += 1,
            Status::Failed => summary.failed += 1,
        }
    }
    summary
}

fn summary_line(s: &Summary, dry_run: bool) -> String {
    if s.installed + s.updated + s.removed + s.failed == 0 {
        return "up to date".into();
    }
    let (install, update, remove) = if dry_run {
        ("to install", "to update", "to remove")
    } else {
        ("installed", "updated", "removed")
    };
    let mut parts = Vec::new();
    for (n, what) in [
        (s.installed, install),
        (s.updated, update),
        (s.up_to_date, "up to date"),
        (s.removed, remove),
        (s.failed, "failed"),
    ] {
        if n > 0 {
            parts.push(format!("{n} {what}"));
        }
    }
    let tail = if dry_run {
        " (dry run: nothing was changed)"
    } else {
        ""
    };
    format!("{}{tail}", parts.join(", "))
}

/// One line per extension: `+ clock 1.2.0 (3f2c1ab)`, `~ weather updated`, `= hello-py up
/// to date`, `- old removed`, `! broken: <reason>`.
fn line(r: &Report) -> String {
    let name = printable(&r.name);
    let version = r
        .version
        .as_deref()
        .map(|v| format!(" {v}"))
        .unwrap_or_default();
    let commit = r
        .commit
        .as_deref()
        .map(|c| format!(" ({})", printable(&c.chars().take(7).collect::<String>())))
        .unwrap_or_default();
    let why = r
        .message
        .as_deref()
        .map(|m| format!(": {m}"))
        .unwrap_or_default();
    match r.status {
        Status::Installed => format!("+ {name}{version}{commit}"),
        Status::Updated => match &r.backup {
            Some(dir) => format!(
                "~ {name} updated{version}{commit}{why}; what it replaced was saved to {}",
                printable(dir)
            ),
            None => format!("~ {name} updated{version}{commit}{why}"),
        },
        Status::UpToDate => match r.message.as_deref() {
            Some(changed) => format!("= {name} up to date ({changed})"),
            None => format!("= {name} up to date"),
        },
        Status::Removed => format!("- {name} removed"),
        Status::Failed => format!("! {name}{why}"),
        Status::WouldInstall => format!("+ {name} would be installed"),
        Status::WouldUpdate => format!("~ {name} would be updated{why}"),
        Status::WouldRemove => format!("- {name} would be removed"),
    }
}

/// A failure line on stderr, shown even with `--quiet` and `--json`.
fn fail_line(text: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{}", crate::output::clean(text));
}
