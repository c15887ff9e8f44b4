//! Node: a `package.json` with `dependencies` and a lock gets them fetched by the lock's
//! tool, frozen and with every lifecycle script off; with `--allow-scripts` the scripts then
//! run sealed, in the tool's rebuild (npm's and pnpm's `rebuild`, yarn berry's; npm's for
//! yarn classic and bun, whose installs cannot run them apart from fetching).
//!
//! The flags follow the tool that runs: yarn 1 (classic) takes `--frozen-lockfile
//! --ignore-scripts`, yarn 2 and later `--immutable --mode=skip-build`. The configuration
//! files an extension ships (`.npmrc`, `.yarnrc`, `.yarnrc.yml`, `.pnpmfile.cjs`,
//! `bunfig.toml`) are set aside while its steps run ([`super::config`]).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Result, anyhow, bail};
use serde_json::Value;

use super::config::SetAside;
use super::files::is_file;
use super::options::Options;
use super::step::{Plan, Step};
use super::toolchain::{find, on_path};
use crate::fsx::bounded;
use crate::output::printable;

/// Bytes of a `package.json` read.
const PACKAGE_JSON_MAX: u64 = 4 * 1024 * 1024;

/// Bytes of a `package-lock.json` read for the entries `--offline` cannot fetch.
const LOCK_MAX: u64 = 64 * 1024 * 1024;

/// Whether `tree` has a `package.json` whose `dependencies` are not empty.
pub(crate) fn node_dependencies(tree: &Path) -> Result<bool> {
    let path = tree.join("package.json");
    if !is_file(&path) {
        return Ok(false);
    }
    let bytes = bounded::read(&path, PACKAGE_JSON_MAX)
        .map_err(|e| anyhow!("cannot read package.json: {e}"))?;
    let package: Value = serde_json::from_slice(&bytes)
        .map_err(|e| anyhow!("package.json:{}:{}: {e}", e.line(), e.column()))?;
    Ok(package
        .get("dependencies")
        .and_then(Value::as_object)
        .is_some_and(|d| !d.is_empty()))
}

/// Whether `tree`'s dependencies came with it: a `node_modules/` folder and no lock file.
/// It runs as it is: there is nothing to install (nor a lock to install it from).
pub(crate) fn vendored(tree: &Path) -> bool {
    lock_of(tree).is_none()
        && std::fs::symlink_metadata(tree.join("node_modules")).is_ok_and(|m| m.is_dir())
}

/// The install a user runs by hand in a working copy with `package.json` dependencies, by
/// its lock file as [`plan`] picks the tool (`npm install` without one).
pub(crate) fn node_command(tree: &Path) -> &'static str {
    match lock_of(tree) {
        Some(Lock::Npm) => "npm ci",
        Some(Lock::Pnpm) => "pnpm install --frozen-lockfile",
        Some(Lock::Yarn) => "yarn install --immutable",
        Some(Lock::Bun(_)) => "bun install --frozen-lockfile",
        None => "npm install",
    }
}

/// The lock file found, in the order they are looked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lock {
    Npm,
    Pnpm,
    Yarn,
    Bun(&'static str),
}

fn lock_of(tree: &Path) -> Option<Lock> {
    let has = |name: &str| is_file(&tree.join(name));
    if has("package-lock.json") || has("npm-shrinkwrap.json") {
        Some(Lock::Npm)
    } else if has("pnpm-lock.yaml") {
        Some(Lock::Pnpm)
    } else if has("yarn.lock") {
        Some(Lock::Yarn)
    } else if has("bun.lock") {
        Some(Lock::Bun("bun.lock"))
    } else if has("bun.lockb") {
        Some(Lock::Bun("bun.lockb"))
    } else {
        None
    }
}

/// The plan for a Node extension at `tree`, or `None` when it has no dependencies.
pub(super) fn plan(tree: &Path, options: &Options, aside: &SetAside) -> Result<Option<Plan>> {
    if !node_dependencies(tree)? {
        return Ok(None);
    }
    let Some(lock) = lock_of(tree) else {
        if vendored(tree) {
            return Ok(None);
        }
        bail!(
            "package.json has dependencies but no lock file (package-lock.json, npm-shrinkwrap.json, pnpm-lock.yaml, yarn.lock or bun.lock): installs would not be reproducible; commit a lock file or pass --no-prepare"
        );
    };
    // The fetch, and the tool's own rebuild (`None`: npm's, of what the tool installed).
    let (fetch, rebuild) = match lock {
        Lock::Npm => npm(tree, options)?,
        Lock::Pnpm => pnpm(options)?,
        Lock::Yarn => yarn(tree, options, aside)?,
        Lock::Bun(file) => (bun(file)?, None),
    };
    let mut steps = vec![fetch];
    if options.allow_scripts {
        let rebuild = match rebuild {
            Some(rebuild) => rebuild,
            None => npm_rebuild(find(
                "npm",
                "install npm: it runs the lifecycle scripts of what yarn or bun installed",
            )?),
        };
        steps.push(with_node_reads(rebuild.building()));
    }
    for step in &mut steps {
        // Corepack (a `yarn` or `pnpm` that is its shim) never stops to ask before it
        // downloads the version package.json names.
        *step = step.clone().env("COREPACK_ENABLE_DOWNLOAD_PROMPT", "0");
    }
    let builds = steps.len() > 1;
    Ok(Some(Plan {
        scripts: options.allow_scripts,
        builds: builds.then(|| "the packages' lifecycle scripts".to_string()),
        ..Plan::of(steps, Some("node_modules"))
    }))
}

/// `tool` on PATH, or an error naming the lock that needs it.
fn needs(tool: &str, lock: &str) -> Result<PathBuf> {
    on_path(tool).ok_or_else(|| {
        anyhow!("{lock} needs {tool}, which is not on PATH: install {tool}, or pass --no-prepare")
    })
}

fn npm(tree: &Path, options: &Options) -> Result<(Step, Option<Step>)> {
    let npm = find("npm", "install Node.js and npm")?;
    let mut fetch = Step::tool(
        "npm",
        npm.clone(),
        &[
            "ci",
            "--ignore-scripts",
            "--omit=dev",
            "--no-audit",
            "--no-fund",
        ],
    );
    if options.offline {
        refuse_online_entries(tree)?;
        fetch = fetch.arg("--offline");
    }
    Ok((fetch, Some(npm_rebuild(npm))))
}

/// `npm rebuild`: the lifecycle scripts of every installed package and the extension's own
/// (`preinstall`, `install`, `postinstall`).
fn npm_rebuild(npm: PathBuf) -> Step {
    Step::tool("npm", npm, &["rebuild", "--no-audit", "--no-fund"])
}

/// A sealed Node step reads node's installation too (the tool's own, as every tool's, is
/// [`super::sealing`]'s).
fn with_node_reads(mut step: Step) -> Step {
    if let Some(node) = on_path("node") {
        step.reads.extend(super::toolchain::prefix_of(&node));
    }
    step
}

fn pnpm(options: &Options) -> Result<(Step, Option<Step>)> {
    let pnpm = needs("pnpm", "pnpm-lock.yaml")?;
    let mut fetch = Step::tool(
        "pnpm",
        pnpm.clone(),
        &[
            "install",
            "--frozen-lockfile",
            "--prod",
            "--ignore-scripts",
            "--ignore-pnpmfile",
        ],
    );
    if options.offline {
        fetch = fetch.arg("--offline");
    }
    let rebuild = Step::tool("pnpm", pnpm, &["rebuild", "--ignore-pnpmfile"]);
    Ok((fetch, Some(rebuild)))
}

fn yarn(tree: &Path, options: &Options, aside: &SetAside) -> Result<(Step, Option<Step>)> {
    let yarn = needs("yarn", "yarn.lock")?;
    let major = yarn_major(&yarn, tree)?;
    if major == 1 {
        let mut fetch = Step::tool(
            "yarn",
            yarn,
            &[
                "install",
                "--frozen-lockfile",
                "--production",
                "--ignore-scripts",
                "--non-interactive",
            ],
        );
        if options.offline {
            fetch = fetch.arg("--offline");
        }
        return Ok((fetch, None));
    }
    let mut fetch = Step::tool(
        "yarn",
        yarn.clone(),
        &["install", "--immutable", "--mode=skip-build"],
    )
    .env("YARN_ENABLE_SCRIPTS", "false")
    .env("YARN_ENABLE_TELEMETRY", "false");
    if let Some(linker) = aside.node_linker() {
        fetch = fetch.env("YARN_NODE_LINKER", linker);
    }
    if options.offline {
        fetch = fetch.env("YARN_ENABLE_NETWORK", "false");
    }
    let rebuild = Step::tool("yarn", yarn, &["rebuild"])
        .env("YARN_ENABLE_SCRIPTS", "true")
        .env("YARN_ENABLE_NETWORK", "false");
    Ok((fetch, Some(rebuild)))
}

/// The major version of the `yarn` that runs in `tree` (a Corepack shim runs the version
/// `package.json` names), asked there with the extension's configuration set aside.
fn yarn_major(yarn: &Path, tree: &Path) -> Result<u32> {
    let out = Command::new(yarn)
        .arg("--version")
        .current_dir(tree)
        .env("COREPACK_ENABLE_DOWNLOAD_PROMPT", "0")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .map_err(|e| anyhow!("cannot run {} --version: {e}", yarn.display()))?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.trim()
        .split('.')
        .next()
        .and_then(|major| major.parse().ok())
        .filter(|_| out.status.success())
        .ok_or_else(|| {
            anyhow!(
                "cannot tell which yarn runs: `yarn --version` printed {:?}",
                printable(text.trim())
            )
        })
}

fn bun(lock: &str) -> Result<Step> {
    let bun = needs("bun", lock)?;
    Ok(Step::tool(
        "bun",
        bun,
        &[
            "install",
            "--frozen-lockfile",
            "--production",
            "--ignore-scripts",
        ],
    ))
}

/// With `--offline`, a `package-lock.json` entry fetched from a git host cannot be had from
/// the cache (npm contacts the host whatever it is told): named as the error.
fn refuse_online_entries(tree: &Path) -> Result<()> {
    let path = ["package-lock.json", "npm-shrinkwrap.json"]
        .into_iter()
        .map(|name| tree.join(name))
        .find(|p| is_file(p));
    let Some(path) = path else {
        return Ok(());
    };
    let Ok(bytes) = bounded::read(&path, LOCK_MAX) else {
        return Ok(());
    };
    let Ok(lock) = serde_json::from_slice::<Value>(&bytes) else {
        return Ok(());
    };
    let packages = lock.get("packages").and_then(Value::as_object);
    for (name, entry) in packages.into_iter().flatten() {
        let resolved = entry.get("resolved").and_then(Value::as_str).unwrap_or("");
        if resolved.starts_with("git") || resolved.starts_with("github:") {
            bail!(
                "{}: {} is fetched from git ({}), which --offline cannot do (npm contacts the git host whatever it is told): run without --offline",
                path.file_name().unwrap_or_default().to_string_lossy(),
                printable(name),
                printable(resolved)
            );
        }
    }
    Ok(())
}
