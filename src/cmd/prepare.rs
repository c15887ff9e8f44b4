//! `zot ext prepare`: run installed extensions' build or dependency install again (after
//! installing the toolchain that was missing, say), each in a staged copy of the installed
//! one that is swapped in atomically ([`crate::install::prepare_again`]); a linked working
//! copy is refused with the command to run in it.

use anyhow::{Result, bail};
use serde::Serialize;

use super::{Context, Run};
use crate::catalog::paths::Scope;
use crate::catalog::{self, Installed};
use crate::check::prepare_hint;
use crate::cli::PrepareArgs;
use crate::install;
use crate::output::printable;
use crate::store::Store;
use crate::store::carry;
use crate::store::filelist::FileList;
use crate::store::record::{Prepared, Record};

/// What happened to one extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
enum Status {
    Prepared,
    /// Its files call for no step: left as it is.
    NothingToPrepare,
    /// Linked, or without an install record or file list: cannot be prepared here.
    Refused,
    Failed,
}

/// One element of `zot ext prepare --json`.
#[derive(Debug, Serialize)]
struct Outcome {
    name: String,
    scope: Scope,
    status: Status,
    /// What ran, as the install record now keeps it.
    prepared: Option<Prepared>,
    message: Option<String>,
    /// What was carried over from the installed copy, or saved.
    carry_over: Option<carry::Plan>,
}

impl Run for PrepareArgs {
    fn run(&self, ctx: &Context) -> Result<()> {
        for scope in Scope::ALL {
            Store::tidy(ctx.layout.scope(scope))?;
        }
        let targets =
            super::named::named_or_all(ctx, &self.names, self.all, self.scope, "prepare")?;
        let outcomes: Vec<Outcome> = targets.iter().map(|t| self.prepare(ctx, t)).collect();
        let problems: Vec<String> = outcomes
            .iter()
            .filter(|o| self.is_problem(o))
            .map(describe)
            .collect();
        if ctx.out.json {
            ctx.out
                .json(&serde_json::json!({ "extensions": outcomes }))?;
        } else {
            self.report(ctx, &outcomes)?;
        }
        match problems.as_slice() {
            [] => Ok(()),
            [only] => bail!("{only}"),
            _ => {
                for line in &problems {
                    ctx.out.fail(line);
                }
                bail!(
                    "{} of {} extensions were not prepared (see above); the installed copies are as they were",
                    problems.len(),
                    outcomes.len()
                )
            }
        }
    }
}

impl PrepareArgs {
    /// A failure, or a named extension that cannot be prepared: exit 1.
    fn is_problem(&self, o: &Outcome) -> bool {
        o.status == Status::Failed || (o.status == Status::Refused && !self.all)
    }

    fn report(&self, ctx: &Context, outcomes: &[Outcome]) -> Result<()> {
        for outcome in outcomes.iter().filter(|o| !self.is_problem(o)) {
            if outcome.status == Status::Refused {
                ctx.out
                    .note(&format!("note: skipped {}", describe(outcome)));
                continue;
            }
            ctx.out.say(&describe(outcome))?;
            for line in outcome.carry_over.iter().flat_map(|p| p.lines(true)) {
                ctx.out.say(&format!("  {line}"))?;
            }
        }
        Ok(())
    }

    fn prepare(&self, ctx: &Context, target: &Installed) -> Outcome {
        let mut outcome = Outcome {
            name: target.name().to_string(),
            scope: target.scope,
            status: Status::Failed,
            prepared: None,
            message: None,
            carry_over: None,
        };
        match self.prepare_one(ctx, target, &mut outcome) {
            Ok(status) => outcome.status = status,
            Err(Refusal::Refused(why)) => {
                outcome.status = Status::Refused;
                outcome.message = Some(why);
            }
            Err(Refusal::Failed(e)) => outcome.message = Some(format!("{e:#}")),
        }
        outcome
    }

    /// Prepares `found` under the store's lock, judged as it is then: read before the lock,
    /// a folder another command is moving away reads as one without its manifest or record.
    fn prepare_one(
        &self,
        ctx: &Context,
        found: &Installed,
        outcome: &mut Outcome,
    ) -> Result<Status, Refusal> {
        let dirs = ctx.layout.scope(found.scope);
        let store = Store::open(dirs).map_err(Refusal::Failed)?;
        let target = match catalog::find(&ctx.layout, &found.dir_name, Some(found.scope)) {
            Ok(now) if now.dir == found.dir => now,
            _ => return Err(Refusal::Failed(store.gone_meanwhile(found.name()))),
        };
        let target = &target;
        let manifest = target
            .manifest
            .as_ref()
            .map_err(|e| Refusal::Failed(anyhow::anyhow!("{e}")))?;
        if let Some(to) = &target.link_target {
            return Err(Refusal::Refused(linked(to, manifest)));
        }
        let reinstall = "reinstall it with zot ext install --force <source>";
        let Some(record) = Record::load(dirs, &target.dir_name) else {
            return Err(Refusal::Refused(format!(
                "there is no install record for {} (copied in by hand?); {reinstall}",
                printable(&target.dir.display().to_string())
            )));
        };
        let Some(files) = FileList::load(dirs, &target.dir_name) else {
            return Err(Refusal::Refused(format!(
                "it has no file list (installed by an older zot ext), so what its install placed is not known; {reinstall}"
            )));
        };
        if target.dir_name != manifest.name {
            return Err(Refusal::Failed(anyhow::anyhow!(
                "the folder is named \"{}\" but extension.json names it \"{}\"; {reinstall}",
                printable(&target.dir_name),
                printable(&manifest.name)
            )));
        }
        let installed = install::Installed {
            dir: &target.dir,
            manifest,
            record: &record,
            files: &files,
        };
        let options = self.step.options(&ctx.layout.global);
        if record.prepared.as_ref().is_some_and(|p| p.scripts) && !options.allow_scripts {
            ctx.out.note(&format!(
                "note: {}'s lifecycle scripts ran when it was installed; they do not now (pass --allow-scripts to run them)",
                printable(&manifest.name)
            ));
        }
        let done = install::prepare_again(&store, installed, &options, &ctx.out)
            .map_err(Refusal::Failed)?;
        let Some(done) = done else {
            return Ok(Status::NothingToPrepare);
        };
        outcome.prepared.clone_from(&done.record.prepared);
        outcome.carry_over = done.carried;
        if let Some(e) = done.record_error {
            return Err(Refusal::Failed(e.context(
                "the prepared copy is in place, but its install record was not saved; the next zot ext command saves it",
            )));
        }
        Ok(Status::Prepared)
    }
}

/// Why a linked extension is not prepared, with the command to run in its working copy.
fn linked(to: &std::path::Path, manifest: &crate::catalog::manifest::Manifest) -> String {
    let shown = printable(&to.display().to_string());
    match prepare_hint::in_working_copy(to, manifest) {
        Some(command) => format!(
            "linked to {shown}: zot ext never builds in a working copy; run there: {}",
            printable(&command)
        ),
        None => format!(
            "linked to {shown}: zot ext never builds in a working copy, and its files call for no step it knows"
        ),
    }
}

/// Why an extension was not prepared.
enum Refusal {
    Refused(String),
    Failed(anyhow::Error),
}

fn describe(o: &Outcome) -> String {
    let who = format!("{} ({})", printable(&o.name), o.scope);
    let reason = o.message.as_deref().unwrap_or("");
    match o.status {
        Status::Prepared => {
            let Some(p) = &o.prepared else {
                return format!("prepared {who}");
            };
            let version = p
                .tool_version
                .as_deref()
                .map(|v| format!(" ({v})"))
                .unwrap_or_default();
            format!("prepared {who}: {}{version}", printable(&p.step))
        }
        Status::NothingToPrepare => format!(
            "{who}: nothing to prepare (no build or dependency install is called for by its files)"
        ),
        Status::Refused => format!("cannot prepare {who}: {reason}"),
        Status::Failed => format!("failed to prepare {who}: {reason}"),
    }
}
