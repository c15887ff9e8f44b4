//! `zot ext update`: re-fetch extensions from their recorded source and swap the new
//! version in atomically, or say what would change.

use anyhow::{Result, bail};
use serde::Serialize;

use super::{Context, Run};
use crate::catalog::{self, Installed};
use crate::cli::UpdateArgs;
use crate::error::usage;
use crate::fetch::{self, Request, short};
use crate::git;
use crate::output::printable;
use crate::paths::{Scope, ScopeDirs};
use crate::record::{Kind, Record};
use crate::sources::{Source, redact};
use crate::store::Store;
use crate::tree::{self, LooseLink};

/// What happened to one extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
enum Status {
    Updated,
    UpToDate,
    WouldUpdate,
    Skipped,
    UnknownSource,
    Failed,
}

/// A version of an extension: its manifest version and, for git installs, its commit.
#[derive(Debug, Clone, Default, Serialize)]
struct Version {
    version: Option<String>,
    commit: Option<String>,
}

/// One element of `zot ext update --json`.
#[derive(Debug, Serialize)]
struct Outcome {
    name: String,
    scope: Scope,
    kind: Option<Kind>,
    status: Status,
    current: Version,
    available: Option<Version>,
    message: Option<String>,
    /// Links kept in the new version that point outside it or nowhere (empty when nothing
    /// was fetched).
    outside_links: Vec<LooseLink>,
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
        if ctx.out.json {
            ctx.out.json(&outcomes)?;
        } else {
            for outcome in &outcomes {
                ctx.out.say(&describe(outcome))?;
                let kept = match outcome.status {
                    Status::Updated => tree::loose_note(&outcome.name, &outcome.outside_links),
                    _ => None,
                };
                if let Some(note) = kept {
                    ctx.out
                        .note(&format!("note: {}: {note}", printable(&outcome.name)));
                }
            }
        }
        let failed = outcomes
            .iter()
            .filter(|o| o.status == Status::Failed)
            .count();
        if failed > 0 {
            bail!(
                "{failed} of {} extensions failed to update; the old versions are still in place",
                outcomes.len()
            );
        }
        Ok(())
    }
}

impl UpdateArgs {
    /// `--ref` re-pins one git install; anything else is a usage error.
    fn check_ref_target(&self, ctx: &Context, targets: &[Installed]) -> Result<()> {
        let (Some(_), [target]) = (&self.git_ref, targets) else {
            return Ok(());
        };
        let record = Record::load(ctx.layout.scope(target.scope), &target.dir_name);
        match record.map(|r| (r.kind, r.source)) {
            Some((Kind::Git, _)) => Ok(()),
            Some((_, source)) => Err(usage(format!(
                "--ref applies to git installs; {} was installed from the folder {}",
                target.name(),
                redact(&source)
            ))),
            None => Err(usage(format!(
                "--ref applies to git installs; {} has no install record",
                target.name()
            ))),
        }
    }

    fn targets(&self, ctx: &Context) -> Result<Vec<Installed>> {
        if self.names.is_empty() && !self.all {
            return Err(usage("name the extensions to update, or pass --all"));
        }
        if self.git_ref.is_some() && self.names.len() != 1 {
            return Err(usage("--ref re-pins one extension: name exactly one"));
        }
        if self.all {
            let scopes = match self.scope.scope() {
                Some(scope) => vec![scope],
                None => Scope::ALL.to_vec(),
            };
            let all = catalog::scan(&ctx.layout, &scopes)?;
            if all.is_empty() {
                ctx.out.note("no extensions installed; nothing to update");
            }
            return Ok(all);
        }
        self.names
            .iter()
            .map(|name| catalog::find(&ctx.layout, name, self.scope.scope()))
            .collect()
    }

    fn update(&self, ctx: &Context, target: &Installed) -> Outcome {
        let dirs = ctx.layout.scope(target.scope);
        let record = Record::load(dirs, &target.dir_name);
        let mut outcome = Outcome {
            name: target.name().to_string(),
            scope: target.scope,
            kind: record.as_ref().map(|r| r.kind),
            status: Status::Failed,
            current: Version {
                version: target
                    .manifest
                    .as_ref()
                    .ok()
                    .and_then(|m| m.version.clone()),
                commit: record.as_ref().and_then(|r| r.commit.clone()),
            },
            available: None,
            message: None,
            outside_links: Vec::new(),
        };
        let result = match (&target.link_target, record) {
            (Some(to), _) => Err(skip(format!(
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
            }),
            (None, Some(record)) => self.update_from(ctx, dirs, target, &record, &mut outcome),
        };
        match result {
            Ok(status) => outcome.status = status,
            Err(skip) => {
                outcome.status = skip.status;
                outcome.message = Some(skip.message);
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
        match record.kind {
            Kind::Link => return Err(skip("linked: the working copy is used as it is".into())),
            Kind::Git if record.pinned() && self.git_ref.is_none() => {
                let pin = record.git_ref.as_deref().unwrap_or("a commit");
                return Err(skip(format!(
                    "pinned to {pin}; re-pin with: zot ext update {} --ref <branch|tag|commit>",
                    outcome.name
                )));
            }
            Kind::Git => {
                if let Some(status) = self.unchanged(record, git_ref, outcome).map_err(failed)? {
                    return Ok(status);
                }
            }
            Kind::Path => {}
        }
        // A dry run stages into a scratch store, so the real one is never touched.
        let (store, _scratch) = if self.dry_run {
            scratch_store(dirs.scope).map_err(failed)?
        } else {
            let store = Store::open(dirs).map_err(failed)?;
            recheck(&store, target, record).map_err(failed)?;
            (store, None)
        };
        let job = Job {
            target,
            record,
            git_ref,
        };
        self.stage_and_swap(ctx, &store, &job, outcome)
            .map_err(failed)
    }
    /// The `ref` the record keeps: a new `--ref`, else the one given at install time.
    fn recorded_ref(&self, record: &Record) -> Option<String> {
        self.git_ref.clone().or_else(|| record.git_ref.clone())
    }

    /// For git installs: `Some(UpToDate)` when the ref still points at the installed commit.
    fn unchanged(
        &self,
        record: &Record,
        git_ref: Option<&str>,
        outcome: &mut Outcome,
    ) -> Result<Option<Status>> {
        let Source::Git(url) = Source::parse(&record.source) else {
            bail!(
                "the install record's source {} is not a git URL",
                redact(&record.source)
            );
        };
        let scratch = tempfile::tempdir()?;
        let probe = git::probe(&url, git_ref, scratch.path())?;
        let same_ref = self.git_ref.is_none();
        if same_ref && probe.commit.is_some() && probe.commit == record.commit {
            outcome.available = Some(outcome.current.clone());
            return Ok(Some(Status::UpToDate));
        }
        Ok(None)
    }

    fn stage_and_swap(
        &self,
        ctx: &Context,
        store: &Store,
        job: &Job,
        outcome: &mut Outcome,
    ) -> Result<Status> {
        let record = job.record;
        let source = Source::parse(&record.source);
        let request = Request {
            source: &source,
            shown: &record.source,
            git_ref: job.git_ref,
            subdir: record.subdir.as_deref(),
        };
        let staged = fetch::stage(store, &request, &ctx.out)?;
        outcome.available = Some(Version {
            version: staged.manifest.version.clone(),
            commit: staged.record.commit.clone(),
        });
        outcome.outside_links = staged.outside_links.clone();
        if staged.manifest.name != outcome.name {
            bail!(
                "the new version's extension.json names it \"{}\", not \"{}\"; install it separately",
                staged.manifest.name,
                outcome.name
            );
        }
        if self.dry_run {
            return Ok(Status::WouldUpdate);
        }
        let installed = Record {
            git_ref: self.recorded_ref(record),
            ..staged.record
        };
        let folder = job.target.folder_name().to_string_lossy();
        let published = store.publish(&staged.staging, &folder, true, &installed)?;
        if let Some(e) = published.record_error {
            return Err(e.context("the new version is in place, but its install record was not saved; the next zot ext command saves it"));
        }
        Ok(Status::Updated)
    }
}

/// After the lock is taken: the extension must still be the one the record described
/// when this run looked, or another command changed it while this one waited.
fn recheck(store: &Store, target: &Installed, record: &Record) -> Result<()> {
    if store.existing(target.folder_name()).is_none() {
        return Err(store.gone_meanwhile(target.name()));
    }
    if Record::load(&store.dirs, &target.dir_name).as_ref() != Some(record) {
        let when = if store.waited() {
            "while this one waited for the lock"
        } else {
            "meanwhile"
        };
        bail!(
            "\"{}\" was changed by another zot ext command {when}; nothing was changed; run the update again",
            target.name()
        );
    }
    Ok(())
}

/// One extension to update: where it is, how it was installed, and the ref to fetch.
struct Job<'a> {
    target: &'a Installed,
    record: &'a Record,
    git_ref: Option<&'a str>,
}

/// A store in a temporary folder, for dry runs; it lives as long as the returned guard.
fn scratch_store(scope: Scope) -> Result<(Store, Option<tempfile::TempDir>)> {
    let base = tempfile::tempdir()?;
    let store = Store::open(&ScopeDirs {
        scope,
        base: base.path().to_path_buf(),
    })?;
    Ok((store, Some(base)))
}

/// Why an extension was not updated.
struct Skip {
    status: Status,
    message: String,
}

fn skip(message: String) -> Skip {
    Skip {
        status: Status::Skipped,
        message,
    }
}

fn failed(error: anyhow::Error) -> Skip {
    Skip {
        status: Status::Failed,
        message: format!("{error:#}"),
    }
}

fn describe_version(v: &Version) -> String {
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

fn describe(o: &Outcome) -> String {
    let who = format!("{} ({})", o.name, o.scope);
    let current = describe_version(&o.current);
    let available = o
        .available
        .as_ref()
        .map(describe_version)
        .unwrap_or_default();
    match o.status {
        Status::Updated => format!("updated {who}: {current} -> {available}"),
        Status::WouldUpdate => format!("would update {who}: {current} -> {available}"),
        Status::UpToDate => format!("{who} is up to date ({current})"),
        Status::Skipped | Status::UnknownSource | Status::Failed => {
            let label = match o.status {
                Status::Skipped => "skipped",
                Status::UnknownSource => "not updated",
                _ => "failed to update",
            };
            format!("{label} {who}: {}", o.message.as_deref().unwrap_or(""))
        }
    }
}
