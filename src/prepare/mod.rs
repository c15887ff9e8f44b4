//! Preparing a staged extension so that it runs once placed: the build or dependency
//! install its own files call for (a Go or Cargo build of a program not committed, `npm ci`
//! for a locked `package.json`, a Python venv for `requirements.txt`), found from the files
//! in the staged folder only ([`detect`]), never from a command the manifest names, and run
//! in the staged copy before it is published ([`run`]). A step that fails, times out or is
//! interrupted leaves the staging folder to be deleted and the installed copy as it was.

mod detect;
mod options;
mod run;
mod toolchain;

pub(crate) use detect::{main_package, node_command, node_dependencies};
pub(crate) use options::{Options, Watcher};

use std::path::Path;

use anyhow::Result;

use crate::catalog::manifest::Manifest;
use crate::output::Output;

/// What preparing ran and made.
#[derive(Debug, Clone)]
pub(crate) struct Done {
    /// The last command, as typed in the extension folder.
    pub step: String,
    pub tool: String,
    pub tool_version: Option<String>,
    /// The dependency lock file and its SHA-256 (hex), when there is one.
    pub lock: Option<(String, String)>,
    pub scripts: bool,
    /// What the steps made, relative to the folder.
    pub outputs: Vec<String>,
}

/// Lock files, in the order they are looked for.
const LOCK_FILES: [&str; 10] = [
    "package-lock.json",
    "npm-shrinkwrap.json",
    "pnpm-lock.yaml",
    "yarn.lock",
    "bun.lock",
    "bun.lockb",
    "go.sum",
    "uv.lock",
    "requirements.txt",
    "Cargo.lock",
];

/// Bytes of a lock file hashed at most.
const LOCK_MAX: u64 = 256 << 20;

/// Works out the step `tree` (the staged extension folder, described by `manifest`) needs
/// and runs it there, with `scratch` (beside the tree, deleted with it) for build output
/// that is not placed. `None`: nothing to prepare, or preparing is off.
pub(crate) fn prepare(
    tree: &Path,
    scratch: &Path,
    manifest: &Manifest,
    options: &Options,
    out: &Output,
) -> Result<Option<Done>> {
    if !options.enabled {
        return Ok(None);
    }
    let Some(plan) = detect::detect(tree, manifest, options)? else {
        return Ok(None);
    };
    let log = options.logs.join(format!("prepare-{}.log", manifest.name));
    let mut runner = run::Runner::start(&log, &manifest.name, options, out)?;
    for step in &plan.steps {
        runner.run(tree, scratch, step)?;
    }
    plan.finish(tree, scratch)?;
    let tool = plan.tool();
    Ok(Some(Done {
        step: plan
            .steps
            .last()
            .map(detect::Step::shown)
            .unwrap_or_default(),
        tool: tool.to_string(),
        tool_version: toolchain::version(tool),
        lock: lock_hash(tree),
        scripts: plan.scripts,
        outputs: plan.outputs,
    }))
}

/// The first lock file in `tree` and its SHA-256.
fn lock_hash(tree: &Path) -> Option<(String, String)> {
    use sha2::{Digest, Sha256};
    use std::fmt::Write as _;
    LOCK_FILES.iter().find_map(|name| {
        let bytes = crate::fsx::bounded::read(&tree.join(name), LOCK_MAX).ok()?;
        let digest = Sha256::digest(&bytes);
        let mut hex = String::with_capacity(64);
        for byte in digest {
            let _ = write!(hex, "{byte:02x}");
        }
        Some(((*name).to_string(), hex))
    })
}
