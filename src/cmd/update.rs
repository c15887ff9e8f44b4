//! `zot ext update`: re-fetch extensions from their recorded source and swap the new
//! version in atomically, or say what would change.

use std::path::Path;

use anyhow::{Result, bail};
use serde::Serialize;

use super::{Context, Run};
use crate::catalog::Installed;
use crate::catalog::paths::{Scope, ScopeDirs};
use crate::cli::UpdateArgs;
use crate::error::usage;
use crate::install::fetch;
use crate::install::replace::{self, Replaced};
use crate::output::printable;
use crate::output::redact::redact;
use crate::output::sh_quote;
use crate::source::Fetch as Request;
use crate::source::Source;
use crate::source::copy::{self, LooseLink};
use crate::source::git::Probe;
use crate::source::staged::short;
use crate::store::Store;
use crate::store::carry;
use crate::store::record::{Kind, Record};

/// What happened to one extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
enum Status {
    Updated,
    UpToDate,
    /// Only the ref changed (`--ref` to a ref naming the installed content): the record
    /// changed, the tree did not.
    RePinned,
    WouldUpdate,
    WouldRePin,
    Skipped,
    UnknownSource,
    Failed,
}

/// A release of an extension: its manifest version and, for git installs, its commit.
#[derive(Debug, Clone, Default, Serialize)]
struct Release {
    version: Option<String>,
    commit: Option<String>,
    /// The tree hash of what the install placed (the file list's), when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    tree: Option<String>,
}

/// One element of `zot ext update --json`.
#[derive(Debug, Serialize)]
struct Outcome {
    name: String,
    scope: Scope,
    kind: Option<Kind>,
    status: Status,
    current: Release,
    available: Option<Release>,
    message: Option<String>,
    /// Links kept in the new version that point outside it or nowhere (empty when nothing
    /// was fetched).
    outside_links: Vec<LooseLink>,
    /// Whether it cannot be updated at all (linked, no install record, made by `new`):
    /// an error when named, a note with `--all`.
    #[serde(skip)]
    refused: bool,
    /// What was (with --dry-run: would be) carried over, saved or overwritten.
    carry_over: Option<carry::Plan>,
    /// What is wrong with the new version but did not stop the update (`{"message", "fix"}`).
    warnings: Vec<crate::check::Problem>,
}

impl Run for UpdateArgs {
    fn run(&self, ctx: &Context) -> Result<()> {
        // Records are read before the lock is taken: finish what a killed run left first.
        for scope in Scope::ALL {
            Store::tidy(ctx.layout.scope(scope))?;
        }
        let targets = self.targets(ctx)?;
        self.check_ref_target(ctx, &targets)?;
        let outcomes: Vec<Outcome> = targets.iter().map(|t| self.update(ctx, t)).collect();
        let problems: Vec<String> = outcomes
            .iter()
            .filter(|o| self.is_problem(o))
            .map(|o| describe(o, self.dry_run))
            .collect();
        // Extensions skipped by choice (pinned) or that cannot be updated do not count.
        let tried = outcomes
            .iter()
            .filter(|o| self.is_problem(o) || !(o.refused || o.status == Status::Skipped))
            .count();
        if ctx.out.json {
            ctx.out
                .json(&serde_json::json!({ "extensions": outcomes }))?;
        } else {
            self.report(ctx, &outcomes)?;
        }
        // On stderr as text, with --json too.
        for warning in outcomes.iter().flat_map(|o| &o.warnings) {
            ctx.out.warn(&crate::install::warning_line(warning));
        }
        match problems.as_slice() {
            [] => Ok(()),
            // One extension: its reason is the error (main prints it on stderr).
            [only] if tried <= 1 => bail!("{only}"),
            [only] => bail!("{only} (1 of {tried} extensions tried)"),
            _ => {
                for line in &problems {
                    ctx.out.fail(line);
                }
                bail!(
                    "{} of {tried} extensions tried were not updated (see above); the old versions are still in place",
                    problems.len(),
                )
            }
        }
    }
}

impl UpdateArgs {
    /// What the update carries over: an edit of a file the new version ships unchanged is
    /// kept (only the user changed it).
    fn carry_options(&self) -> carry::Options {
        carry::Options {
            keep_unchanged_edits: true,
            ..self.carry.options()
        }
    }

    /// A failure, or an extension named on the command line that cannot be updated: its
    /// reason goes to stderr and the run exits 1.
    fn is_problem(&self, o: &Outcome) -> bool {
        o.status == Status::Failed || (o.refused && !self.all)
    }

    /// The text output: what happened to each extension on stdout, the reason an extension
    /// `--all` skipped as a note on stderr (problems are printed by the caller).
    fn report(&self, ctx: &Context, outcomes: &[Outcome]) -> Result<()> {
        for outcome in outcomes {
            if self.is_problem(outcome) {
                continue;
            }
            if outcome.refused {
                let reason = outcome.message.as_deref().unwrap_or("");
                ctx.out.note(&format!(
                    "note: skipped {} ({}): {reason}",
                    outcome.name, outcome.scope
                ));
                continue;
            }
            ctx.out.say(&describe(outcome, self.dry_run))?;
            let done = outcome.status == Status::Updated;
            for line in outcome.carry_over.iter().flat_map(|p| p.lines(done)) {
                ctx.out.say(&format!("  {line}"))?;
            }
            let kept = match outcome.status {
                Status::Updated => copy::loose_note(&outcome.name, &outcome.outside_links),
                _ => None,
            };
            if let Some(note) = kept {
                ctx.out
                    .note(&format!("note: {}: {note}", printable(&outcome.name)));
            }
        }
        Ok(())
    }

    /// `--ref` re-pins one git install; anything else is a usage error.
    fn check_ref_target(&self, ctx: &Context, targets: &[Installed]) -> Result<()> {
        let (Some(_), [target]) = (&self.git_ref, targets) else {
            return Ok(());
        };
        let record = Record::load(ctx.layout.scope(target.scope), &target.dir_name);
        let name = target.name();
        match record {
            Some(r) if Source::recorded(&r).is_some_and(|s| s.takes_ref()) => Ok(()),
            Some(r) => Err(usage(format!(
                "--ref applies to git installs; {name} {}",
                r.kind.how_installed(&redact(&r.source))
            ))),
            None => Err(usage(format!(
                "--ref applies to git installs; {name} has no install record"
            ))),
        }
    }

    fn targets(&self, ctx: &Context) -> Result<Vec<Installed>> {
        if self.git_ref.is_some() && self.names.len() != 1 {
            return Err(usage("--ref re-pins one extension: name exactly one"));
        }
        super::named::named_or_all(ctx, &self.names, self.all, self.scope, "update")
    }

    fn update(&self, ctx: &Context, target: &Installed) -> Outcome {
        let dirs = ctx.layout.scope(target.scope);
        let record = Record::load(dirs, &target.dir_name);
        let mut outcome = Outcome {
            name: target.name().to_string(),
            scope: target.scope,
            kind: record.as_ref().map(|r| r.kind),
            status: Status::Failed,
            current: Release {
                version: target
                    .manifest
                    .as_ref()
                    .ok()
                    .and_then(|m| m.version.clone()),
                commit: record.as_ref().and_then(|r| r.commit.clone()),
                tree: None,
            },
            available: None,
            message: None,
            outside_links: Vec::new(),
            refused: false,
            carry_over: None,
            warnings: Vec::new(),
        };
        let result = match (&target.link_target, record) {
            (Some(to), _) => Err(refuse(format!(
                "linked to {}: the working copy is used as it is",
                to.display()
            ))),
            (None, None) => Err(Skip {
                status: Status::UnknownSource,
                message: match Record::problem(dirs, &target.dir_name) {
                    Some(problem) => format!(
                        "unknown source: {problem}; delete it and reinstall with zot ext install --force <source>"
                    ),
                    None => format!(
                        "unknown source: there is no install record for {} (copied in by hand?); reinstall it with zot ext install --force <source>",
                        target.dir.display()
                    ),
                },
                refused: true,
            }),
            (None, Some(record)) => self.update_from(ctx, dirs, target, &record, &mut outcome),
        };
        match result {
            Ok(status) => outcome.status = status,
            Err(skip) => {
                outcome.status = skip.status;
                outcome.message = Some(skip.message);
                outcome.refused = skip.refused;
            }
        }
        outcome
    }

    fn update_from(
        &self,
        ctx: &Context,
        dirs: &ScopeDirs,
        target: &Installed,
        record: &Record,
        outcome: &mut Outcome,
    ) -> Result<Status, Skip> {
        // Without a new --ref: the recorded ref, else the branch recorded at install time
        // (not whatever the remote's default branch has become since).
        let git_ref = self.recorded_ref(record).or_else(|| record.branch.clone());
        let git_ref = git_ref.as_deref();
        let Some(source) = Source::recorded(record) else {
            let why = record.kind.without_source().unwrap_or("there is no source");
            return Err(refuse(why.into()));
        };
        if record.pinned() && self.git_ref.is_none() {
            if let (Source::Oci(reference), Some(digest)) = (&source, &record.digest) {
                return Err(skip(format!(
                    "pinned to the digest {digest}; to follow a tag instead: zot ext install --force {}",
                    sh_quote(&format!("{}:<tag>", reference.unpinned()))
                )));
            }
            let pin = record.git_ref.as_deref().unwrap_or("a commit");
            return Err(skip(format!(
                "pinned to {pin}; re-pin with: zot ext update {} --ref <branch|tag|commit>",
                sh_quote(&outcome.name)
            )));
        }
        // --enable/--disable change the manifest: the new version is staged to compare, so a
        // repository is not asked where its ref points (a folder is still checked to be there).
        let enabling = self.carry_options().enabled.is_some();
        if !(enabling && source.takes_ref()) {
            let probe = source.probe(git_ref, &outcome.name).map_err(failed)?;
            if let (Some(probe), false) = (probe, enabling) {
                let known = self.unchanged(dirs, target, record, probe, outcome);
                if let Some(status) = known.map_err(failed)? {
                    return Ok(status);
                }
            }
        }
        // A dry run stages into a scratch store, so the real one is never touched.
        let (store, _scratch) = if self.dry_run {
            let (store, base) = crate::install::trial_store(dirs.scope).map_err(failed)?;
            (store, Some(base))
        } else {
            (locked(dirs, target, record).map_err(failed)?, None)
        };
        let job = Job {
            target,
            record,
            source: &source,
            git_ref,
        };
        self.stage_and_swap(ctx, &store, &job, outcome)
            .map_err(failed)
    }
    /// The `ref` the record keeps: a new `--ref`, else the one given at install time.
    fn recorded_ref(&self, record: &Record) -> Option<String> {
        self.git_ref.clone().or_else(|| record.git_ref.clone())
    }

    /// For git installs, from what the remote advertises (nothing is downloaded):
    /// `Some(UpToDate)` when the ref still points at the installed commit, and
    /// `Some(RePinned)` when a new `--ref` does (only the record changes).
    fn unchanged(
        &self,
        dirs: &ScopeDirs,
        target: &Installed,
        record: &Record,
        probe: Probe,
        outcome: &mut Outcome,
    ) -> Result<Option<Status>> {
        if probe.commit.is_none() || probe.commit.as_deref() != record.pin() {
            return Ok(None);
        }
        outcome.available = Some(outcome.current.clone());
        if self.git_ref.is_none() {
            return Ok(Some(Status::UpToDate));
        }
        let repinned = Record {
            git_ref: self.git_ref.clone(),
            ref_kind: Some(probe.ref_kind),
            branch: probe.branch,
            ..record.clone()
        };
        let save = |new: &Record| locked(dirs, target, record)?.save_record(new);
        let status = self.save_record_only(record, &repinned, save)?;
        if matches!(status, Some(Status::RePinned | Status::WouldRePin)) {
            outcome.message.clone_from(&self.git_ref);
        }
        Ok(Some(status.unwrap_or(Status::UpToDate)))
    }

    /// Saves `new` as the record of an extension whose tree stays as it is (through `save`;
    /// nothing in a dry run). `RePinned` (or `WouldRePin`) when the ref changed, else `None`.
    fn save_record_only(
        &self,
        old: &Record,
        new: &Record,
        save: impl FnOnce(&Record) -> Result<()>,
    ) -> Result<Option<Status>> {
        let repinned =
            (&new.git_ref, new.ref_kind, &new.branch) != (&old.git_ref, old.ref_kind, &old.branch);
        if self.dry_run {
            return Ok(repinned.then_some(Status::WouldRePin));
        }
        if new != old {
            save(new)?;
        }
        Ok(repinned.then_some(Status::RePinned))
    }

    fn stage_and_swap(
        &self,
        ctx: &Context,
        store: &Store,
        job: &Job,
        outcome: &mut Outcome,
    ) -> Result<Status> {
        let record = job.record;
        let source = job.source;
        // A dry run changes nothing, the cache included.
        let cache = if self.dry_run {
            None
        } else {
            super::install::fetch_cache(ctx, source)?
        };
        let request = Request {
            source,
            shown: &record.source,
            git_ref: job.git_ref,
            subdir: record.subdir.as_deref(),
            cache: cache.as_ref(),
        };
        let staged = fetch::stage(store, &request, &ctx.out)?;
        outcome.available = Some(Release {
            version: staged.manifest.version.clone(),
            commit: staged.record.commit.clone(),
            tree: None,
        });
        outcome.outside_links.clone_from(&staged.outside_links);
        if staged.manifest.name != outcome.name {
            bail!(
                "the new version's extension.json names it \"{}\", not \"{}\"; install it under its new name with: {}",
                staged.manifest.name,
                outcome.name,
                install_command(record)
            );
        }
        let mut staged = staged;
        staged.record.git_ref = self.recorded_ref(record);
        let folder = job.target.folder_name().to_string_lossy();
        let current = replace::Current {
            dirs: ctx.layout.scope(job.target.scope),
            folder: &folder,
            dir_name: &job.target.dir_name,
            dir: &job.target.dir,
        };
        let how = replace::Replacement {
            carry: self.carry_options(),
            prepare: &self.prepare.options(&ctx.layout.global),
            dry_run: self.dry_run,
            enabled_as_wanted: self.enabled_as_wanted(&job.target.dir),
        };
        let (replaced, trees) = replace::replace(store, &current, staged, &how, &ctx.out)?;
        outcome.current.tree = trees.placed;
        if let Some(available) = &mut outcome.available {
            available.tree = Some(trees.staged);
        }
        match replaced {
            Replaced::Same(record) => self.same_content(store, job, *record, outcome),
            Replaced::Would(plan) => {
                outcome.carry_over = Some(plan);
                Ok(Status::WouldUpdate)
            }
            Replaced::Placed {
                carried,
                warnings,
                record_error,
            } => {
                outcome.carry_over = Some(carried);
                outcome.warnings = warnings;
                match record_error {
                    Some(e) => Err(e.context("the new version is in place, but its install record was not saved; the next zot ext command saves it")),
                    None => Ok(Status::Updated),
                }
            }
        }
    }
}

impl UpdateArgs {
    /// Whether the installed copy's `enabled` is what `--enable`/`--disable` asks for (always,
    /// without them: the installed value is kept).
    fn enabled_as_wanted(&self, dir: &Path) -> bool {
        let Some(want) = self.carry_options().enabled else {
            return true;
        };
        crate::catalog::manifest::read(dir).is_ok_and(|m| m.enabled == want)
    }

    /// The new version is what is installed: the tree stays (same inode, nothing written);
    /// only the record changes when the ref or the commit did.
    fn same_content(
        &self,
        store: &Store,
        job: &Job,
        staged: Record,
        outcome: &mut Outcome,
    ) -> Result<Status> {
        let old = job.record;
        // The tree stays, and with it what was prepared in it (here, or by a publisher).
        let new = Record {
            installed_at: old.installed_at.clone(),
            prepared: old.prepared.clone(),
            platform: old.platform.clone(),
            ..staged
        };
        // Only the fields that name where it came from (what it is pinned to at its source:
        // a commit, a registry's digest); a folder install's record stays.
        let new = if new.pin().is_some() {
            new
        } else {
            old.clone()
        };
        let moved = new.pin() != old.pin();
        // The store is locked and rechecked (see `update_from`).
        let status = self.save_record_only(old, &new, |new| store.save_record(new))?;
        if status.is_some() {
            outcome.message.clone_from(&new.git_ref);
        } else if moved && let Some(pin) = new.pin() {
            outcome.message = Some(format!("{} changes no file of it", short(pin)));
        }
        Ok(status.unwrap_or(Status::UpToDate))
    }
}

/// Locks the scope's store and checks the extension is still the one `record` describes.
fn locked(dirs: &ScopeDirs, target: &Installed, record: &Record) -> Result<Store> {
    let store = Store::open(dirs)?;
    super::named::recheck(&store, target, record, "run the update again")?;
    Ok(store)
}

/// One extension to update: where it is, how it was installed, and the ref to fetch.
struct Job<'a> {
    target: &'a Installed,
    record: &'a Record,
    source: &'a Source,
    git_ref: Option<&'a str>,
}

/// `zot ext install <source> [--subdir <path>]` for the recorded source (credentials left
/// out: the record keeps none).
fn install_command(record: &Record) -> String {
    let subdir = record
        .subdir
        .as_ref()
        .map(|s| format!(" --subdir {}", sh_quote(s)))
        .unwrap_or_default();
    format!(
        "zot ext install {}{subdir}",
        sh_quote(&redact(&record.source))
    )
}

/// Why an extension was not updated.
struct Skip {
    status: Status,
    message: String,
    /// It cannot be updated at all (see [`Outcome::refused`]).
    refused: bool,
}

/// Not updated now, by choice (pinned).
fn skip(message: String) -> Skip {
    Skip {
        status: Status::Skipped,
        message,
        refused: false,
    }
}

/// Cannot be updated at all (linked, made by `new`).
fn refuse(message: String) -> Skip {
    Skip {
        refused: true,
        ..skip(message)
    }
}

// By value: it is the function given to `map_err`.
#[allow(clippy::needless_pass_by_value)]
fn failed(error: anyhow::Error) -> Skip {
    Skip {
        status: Status::Failed,
        message: format!("{error:#}"),
        refused: false,
    }
}

fn describe_version(v: &Release) -> String {
    let mut parts = Vec::new();
    if let Some(version) = &v.version {
        parts.push(version.clone());
    }
    if let Some(commit) = &v.commit {
        parts.push(short(commit).to_string());
    }
    if parts.is_empty() {
        "-".into()
    } else {
        parts.join(" ")
    }
}

fn describe(o: &Outcome, dry_run: bool) -> String {
    let who = format!("{} ({})", o.name, o.scope);
    let mut current = describe_version(&o.current);
    let mut available = o
        .available
        .as_ref()
        .map(describe_version)
        .unwrap_or_default();
    // `1.0.0 -> 1.0.0` says nothing: the trees tell the two apart.
    let arrow = matches!(o.status, Status::Updated | Status::WouldUpdate);
    if arrow
        && current == available
        && let (Some(old), Some(new)) = (
            &o.current.tree,
            o.available.as_ref().and_then(|a| a.tree.as_ref()),
        )
    {
        // The first 12 hexadecimal digits of each tree hash (`sha256:…`).
        current = format!("{current} (tree {})", short(old));
        available = format!("{available} (tree {})", short(new));
    }
    let reason = o.message.as_deref().unwrap_or("");
    match o.status {
        Status::Updated => format!("updated {who}: {current} -> {available}"),
        Status::WouldUpdate => format!("would update {who}: {current} -> {available}"),
        Status::UpToDate if o.message.is_some() => {
            format!("{who} is up to date ({current}; {reason})")
        }
        Status::UpToDate => format!("{who} is up to date ({current})"),
        Status::RePinned => {
            format!("re-pinned {who} to {reason}: {current} -> {available}, no file changed")
        }
        Status::WouldRePin => format!(
            "would re-pin {who} to {reason}: {current} -> {available}, no file would change"
        ),
        Status::Failed if dry_run => format!("would fail to update {who}: {reason}"),
        Status::Failed => {
            format!("failed to update {who}: {reason}; the old version is still in place")
        }
        Status::Skipped | Status::UnknownSource if o.refused => {
            format!("cannot update {who}: {reason}")
        }
        Status::Skipped | Status::UnknownSource => format!("skipped {who}: {reason}"),
    }
}
