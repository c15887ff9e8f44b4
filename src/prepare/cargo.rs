//! Cargo: a package whose `exec` names a program not committed is built, and the binary
//! copied to `exec`.
//!
//! Cargo reads `.cargo/config.toml` from its working folder and every folder above (a
//! shipped one can name a `rustc-wrapper`, `runner` or `linker`, or set `[env]`), and
//! rustup's proxies read `rust-toolchain.toml` the same way (whose `path` can point into
//! the extension). So cargo runs from the scratch folder beside the staged copy with
//! `--manifest-path`, as the toolchain's own binary (from `rustc --print sysroot`, asked in
//! `/`), never through the proxy, with the wrappers emptied from outside. Fetching is
//! `cargo fetch --locked` into zot's own `CARGO_HOME`; building (build scripts and
//! proc-macros run) is `cargo build --release --locked --offline`, sealed, reading that
//! `CARGO_HOME` and writing zot's target folder for this extension, kept warm between
//! installs.

use std::path::{Path, PathBuf};

use anyhow::Result;

use super::files::missing_exec;
use super::options::Options;
use super::step::{Dir, Plan, Step};
use super::toolchain::{answer, find};
use crate::catalog::manifest::Manifest;

/// The plan for a Cargo package at `tree`, or `None` when its `exec` is there.
pub(super) fn plan(tree: &Path, manifest: &Manifest, options: &Options) -> Result<Option<Plan>> {
    let Some(exec) = missing_exec(tree, &manifest.exec) else {
        return Ok(None);
    };
    let on_path = find("cargo", "install Rust (https://rustup.rs)")?;
    let toolchain = Toolchain::of(&on_path);
    let home = options.caches.join("cargo-home");
    let target = options.caches.join("cargo-target").join(&manifest.name);
    let mut steps = Vec::new();
    if !options.offline {
        let fetch = toolchain
            .step(&["fetch", "--locked"])
            .arg_in_tree("Cargo.toml")
            .env("CARGO_HOME", &home);
        steps.push(fetch);
    }
    let mut build = toolchain
        .step(&["build", "--release", "--locked", "--offline"])
        .arg_in_tree("Cargo.toml")
        .building()
        .env("CARGO_HOME", &home)
        .env("CARGO_TARGET_DIR", &target)
        .env("CARGO_TERM_PROGRESS_WHEN", "never");
    for key in [
        "RUSTC_WRAPPER",
        "RUSTC_WORKSPACE_WRAPPER",
        "CARGO_BUILD_RUSTC_WRAPPER",
        "CARGO_BUILD_RUSTC_WORKSPACE_WRAPPER",
    ] {
        build = build.env(key, "");
    }
    build.path_first.push(toolchain.bin());
    build.reads.extend(toolchain.sysroot.clone());
    build.reads.push(home);
    build.writes.push(target.clone());
    steps.push(build);
    let base = exec.file_name().unwrap_or_default();
    let output = exec.to_string_lossy().into_owned();
    Ok(Some(Plan {
        place: Some((target.join("release").join(base), exec.clone())),
        builds: Some("cargo build (build scripts and proc-macros)".into()),
        ..Plan::of(steps, Some(&output))
    }))
}

/// The Rust toolchain cargo on PATH stands for.
struct Toolchain {
    /// cargo's own binary (the proxy's target), else the one on PATH.
    cargo: PathBuf,
    /// `rustc --print sysroot`.
    sysroot: Option<PathBuf>,
}

impl Toolchain {
    /// Asks the `rustc` beside `cargo` (a rustup proxy too) for its sysroot, from `/`: the
    /// toolchain the user's default (or `RUSTUP_TOOLCHAIN`) names, not the extension's.
    fn of(cargo: &Path) -> Toolchain {
        let rustc = cargo.with_file_name("rustc");
        let sysroot = answer(&rustc, &["--print", "sysroot"])
            .map(PathBuf::from)
            .filter(|p| p.is_absolute() && p.join("bin/cargo").is_file());
        Toolchain {
            cargo: sysroot
                .as_ref()
                .map_or_else(|| cargo.to_path_buf(), |s| s.join("bin/cargo")),
            sysroot,
        }
    }

    /// The toolchain's `bin` folder, first on PATH for build scripts that run `rustc`.
    fn bin(&self) -> PathBuf {
        self.cargo
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default()
    }

    /// A cargo step run from outside the extension, with `RUSTC` the toolchain's.
    fn step(&self, args: &[&str]) -> Step {
        let mut step = Step::tool("cargo", self.cargo.clone(), args).arg("--manifest-path");
        step.dir = Dir::Outside;
        if let Some(sysroot) = &self.sysroot {
            step = step.env("RUSTC", sysroot.join("bin/rustc"));
        }
        step
    }
}
