//! Preparing a staged extension so that it runs once placed: the build or dependency
//! install its own files call for (a Go or Cargo build of a program not committed, `npm ci`
//! for a locked `package.json`, a Python venv for `requirements.txt`), found from the files
//! in the staged folder only ([`detect`]), never from a command the manifest names, and run
//! in the staged copy before it is published ([`run`]). A step that fails, times out or is
//! interrupted leaves the staging folder to be deleted and the installed copy as it was.

mod detect;
mod run;
mod toolchain;

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Result;

use crate::catalog::manifest::Manifest;
use crate::output::Output;

/// How long a step may run by default.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// What the command line (or a project-file entry) asked for.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    /// `--no-prepare` turns this off: the tree is placed as fetched.
    pub enabled: bool,
    /// `--allow-scripts`: npm/pnpm/yarn/bun lifecycle scripts run.
    pub allow_scripts: bool,
    /// `--offline`: every tool is told to use its local cache only.
    pub offline: bool,
    /// How long one step may run before its whole process group is ended.
    pub timeout: Duration,
    /// Where `prepare-<name>.log` is written (`$ZOT_HOME/logs`).
    pub logs: PathBuf,
}

impl Options {
    /// Preparing on, scripts off, online, the default time limit.
    pub(crate) fn new(logs: PathBuf) -> Options {
        Options {
            enabled: true,
            allow_scripts: false,
            offline: false,
            timeout: DEFAULT_TIMEOUT,
            logs,
        }
    }
}

/// Works out the step `tree` (the staged extension folder, described by `manifest`) needs
/// and runs it there, with `scratch` (beside the tree, deleted with it) for build output
/// that is not placed. `false`: nothing to prepare, or preparing is off.
pub(crate) fn prepare(
    tree: &Path,
    scratch: &Path,
    manifest: &Manifest,
    options: &Options,
    out: &Output,
) -> Result<bool> {
    if !options.enabled {
        return Ok(false);
    }
    let Some(plan) = detect::detect(tree, manifest, options)? else {
        return Ok(false);
    };
    let log = options.logs.join(format!("prepare-{}.log", manifest.name));
    let mut runner = run::Runner::start(&log, &manifest.name, options.timeout, out)?;
    for step in &plan.steps {
        runner.run(tree, scratch, step)?;
    }
    plan.finish(tree, scratch)?;
    Ok(true)
}
