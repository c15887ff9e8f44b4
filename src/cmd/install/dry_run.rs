//! `zot ext install --dry-run` and `zot ext add --dry-run`: the source is fetched into a
//! store in a temporary folder (the only way to know its manifest: [`crate::install::trial`]),
//! then the command says
//! what installing it would place where, which installed copy it would replace (its
//! version and source) and what `--force` would carry over from it (the user's files). The
//! temporary store is deleted on the way out; the scope's store, its lock and the fetch
//! cache are never touched, and no project file is written.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Result, anyhow};
use serde::Serialize;

use crate::catalog::manifest;
use crate::catalog::paths::{Scope, ScopeDirs};
use crate::output::Output;
use crate::source::Fetch as Request;
use crate::source::copy::LooseLink;
use crate::source::staged::short;
use crate::store::carry::{Options, Plan};
use crate::store::record::{Kind, Record};

/// What to try: the source, the scope it would go to and the flags that change the plan.
pub(crate) struct Trial<'a> {
    pub fetch: Request<'a>,
    pub dirs: &'a ScopeDirs,
    /// `--force`: without it, an installed copy of the name makes the run fail (exit 1)
    /// after the plan is shown, as the install would.
    pub force: bool,
    pub carry: Options,
    /// `add`: the project file the entry would be written to.
    pub project_file: Option<&'a Path>,
}

/// `--dry-run --json` output.
#[derive(Debug, Serialize)]
struct Would<'a> {
    dry_run: bool,
    name: &'a str,
    version: Option<&'a str>,
    scope: Scope,
    /// Where the extension would be placed.
    dir: String,
    source: &'a str,
    kind: Kind,
    commit: Option<&'a str>,
    /// From a registry: the manifest (or index) digest, and the platform of the manifest
    /// built for this machine that would be placed as published (null: the source).
    digest: Option<&'a str>,
    platform: Option<&'a str>,
    subdir: Option<&'a str>,
    /// The installed copy it would replace, or null.
    replaces: Option<Installed>,
    /// What replacing it would carry over, save or overwrite (as `--force` does), or null.
    carry_over: Option<&'a Plan>,
    outside_links: &'a [LooseLink],
    /// `add`: the project file the entry would be written to.
    #[serde(skip_serializing_if = "Option::is_none")]
    project_file: Option<String>,
}

/// The installed copy of the name.
#[derive(Debug, Serialize)]
struct Installed {
    version: Option<String>,
    /// From its install record (null without one: copied in by hand).
    source: Option<String>,
    commit: Option<String>,
    /// The working copy, for a linked extension.
    linked: Option<String>,
}

impl Installed {
    fn of(dirs: &ScopeDirs, name: &str) -> Option<Installed> {
        let dir = dirs.extension(name);
        let meta = std::fs::symlink_metadata(&dir).ok()?;
        let linked = meta
            .file_type()
            .is_symlink()
            .then(|| std::fs::read_link(&dir).ok())
            .flatten()
            .map(|t| t.display().to_string());
        let record = Record::load(dirs, name);
        Some(Installed {
            version: manifest::read(&dir).ok().and_then(|m| m.version),
            source: record.as_ref().map(|r| r.source.clone()),
            commit: record.and_then(|r| r.commit),
            linked,
        })
    }

    /// `1.0.0 from /src/hello (commit 1a2b3c4d5e6f)`, or `a link to /work/hello`.
    fn describe(&self) -> String {
        if let Some(target) = &self.linked {
            return format!("a link to {target}");
        }
        let version = self.version.as_deref().unwrap_or("(no version)");
        let source = match &self.source {
            Some(source) => format!(" from {source}"),
            None => " (no install record: copied in by hand)".to_string(),
        };
        let commit = self
            .commit
            .as_deref()
            .map(|c| format!(" (commit {})", short(c)))
            .unwrap_or_default();
        format!("{version}{source}{commit}")
    }
}

/// Fetches `trial`'s source into a temporary store and reports what installing it would
/// do; changes nothing. Fails, after the report, where the install would refuse.
pub(crate) fn run(trial: &Trial, out: &Output) -> Result<()> {
    let tried = crate::install::trial(trial.dirs, &trial.fetch, trial.carry, out)?;
    let staged = &tried.staged;
    let name = staged.manifest.name.as_str();
    let replaces = Installed::of(trial.dirs, name);
    let dest = trial.dirs.extension(name);
    let would = Would {
        dry_run: true,
        name,
        version: staged.manifest.version.as_deref(),
        scope: trial.dirs.scope,
        dir: dest.display().to_string(),
        source: &staged.record.source,
        kind: staged.record.kind,
        commit: staged.record.commit.as_deref(),
        digest: staged.record.digest.as_deref(),
        platform: staged.record.platform.as_deref(),
        subdir: staged.record.subdir.as_deref(),
        replaces,
        carry_over: tried.carry_over.as_ref(),
        outside_links: &staged.outside_links,
        project_file: trial.project_file.map(|p| p.display().to_string()),
    };
    report(out, &would)?;
    if would.replaces.is_some() && !trial.force {
        return Err(anyhow!(
            "extension \"{name}\" is already installed at {}; pass --force to replace it (nothing was changed: dry run)",
            dest.display()
        ));
    }
    out.note("note: nothing was changed (dry run)");
    Ok(())
}

fn report(out: &Output, would: &Would) -> Result<()> {
    if out.json {
        return Ok(out.json(would)?);
    }
    let version = would.version.map(|v| format!(" {v}")).unwrap_or_default();
    let mut commit = match (would.commit, would.digest) {
        (Some(c), _) => format!(" (commit {})", short(c)),
        (None, Some(d)) => format!(" (digest {})", short(d)),
        (None, None) => String::new(),
    };
    if let Some(platform) = would.platform {
        let _ = write!(commit, " built for {platform}");
    }
    let verb = match would.replaces {
        Some(_) => "would replace",
        None => "would install",
    };
    out.say(&format!(
        "{verb} {}{version}{commit} ({}) in {}",
        would.name, would.scope, would.dir
    ))?;
    if let Some(installed) = &would.replaces {
        out.say(&format!("  installed now: {}", installed.describe()))?;
    }
    for line in would.carry_over.iter().flat_map(|p| p.lines(false)) {
        out.say(&format!("  {line}"))?;
    }
    if let Some(file) = &would.project_file {
        out.say(&format!("  and record it in {file}"))?;
    }
    Ok(())
}
