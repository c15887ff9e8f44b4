//! What a step gets: its command through the seal's stages ([`crate::seal`]), its
//! environment, and for a sealed build the folders it may read and write.
//!
//! | | fetch | sealed build | build with `--no-sandbox` (or no seal, `--allow-scripts`) |
//! |---|---|---|---|
//! | files | as the user | reads: the system, PATH, the toolchain, the staged copy, zot's caches; writes: the staged copy, a private home and temporary folder, zot's caches | as the user |
//! | network | yes (no with `--offline`) | no | yes |
//! | environment | the user's | PATH, locale, TERM, TZ and what zot sets for the tool | the user's less `*_TOKEN`, `*_SECRET`, `*_PASSWORD`, `GIT_ASKPASS`, `SSH_AUTH_SOCK` |
//! | HOME | the user's | a private empty folder | the user's |
//!
//! Every step runs through both stages, so none leaves a process behind.

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, Result};

use super::step::{Dir, Phase, Program, Step};
use crate::seal::{Rules, Spec};

/// How the build steps of a plan run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Seal {
    /// In the seal.
    On,
    /// Without it: `--no-sandbox`, or no seal here and the user gave their word.
    Off,
}

/// System folders a sealed build reads (those that exist).
const SYSTEM: [&str; 9] = [
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/proc", "/sys",
];

/// What of `/etc` a sealed build reads: how to find users, hosts, libraries, certificates,
/// the time zone and the default programs (Debian's alternatives), not the machine's
/// secrets (`shadow`, ssh host keys, other services' configuration).
const ETC: [&str; 25] = [
    "alternatives",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "passwd",
    "group",
    "nsswitch.conf",
    "hosts",
    "host.conf",
    "resolv.conf",
    "gai.conf",
    "protocols",
    "services",
    "localtime",
    "timezone",
    "os-release",
    "debian_version",
    "mime.types",
    "locale.alias",
    "ssl",
    "ca-certificates",
    "ca-certificates.conf",
    "pki",
    "crypto-policies",
    "profile",
];

/// Devices a sealed build reads and writes.
const DEVICES: [&str; 5] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];

/// Variables a sealed build keeps from the user's environment.
const KEPT: [&str; 4] = ["TERM", "TZ", "LANG", "LANGUAGE"];

/// `ZOT_EXT_SEAL_NAMESPACES=0`: the seal makes no namespaces (Landlock cuts TCP, a
/// subreaper ends what is left), as on a machine that forbids them.
const NAMESPACES: &str = "ZOT_EXT_SEAL_NAMESPACES";

/// The command that runs `step` for the staged folder `tree`, with `scratch` beside it
/// (made here: its `home` and `tmp` are a sealed build's), through the seal's stages; in
/// `workspace` (the root of the module the folder is in for the time of the steps) when
/// there is one.
pub(super) fn command(
    tree: &Path,
    scratch: &Path,
    workspace: Option<&Path>,
    step: &Step,
    seal: Seal,
    offline: bool,
) -> Result<Command> {
    let program = match &step.program {
        Program::Tool(path) => path.clone(),
        Program::InTree(rel) => tree.join(rel),
    };
    let dir = match step.dir {
        Dir::Tree => tree.to_path_buf(),
        Dir::Outside => scratch.to_path_buf(),
        Dir::Workspace => workspace.unwrap_or(tree).to_path_buf(),
    };
    // In a workspace the staged folder is inside its root for the time of the steps.
    let tree = workspace.unwrap_or(tree);
    fs::create_dir_all(scratch).with_context(|| format!("cannot create {}", scratch.display()))?;
    let mut spec = Spec::new(program, step.args_for(tree), dir.clone());
    spec.namespaces = std::env::var_os(NAMESPACES).is_none_or(|v| v != "0");
    let env = match (step.phase, seal) {
        (Phase::Fetch, _) => {
            spec.network = !offline;
            // The user's own tool, which runs no stranger's code: namespaces only to cut
            // the network (a user namespace would take away its supplementary groups).
            spec.namespaces &= offline;
            user_env(false)
        }
        (Phase::Build, Seal::Off) => user_env(true),
        (Phase::Build, Seal::On) => {
            let (home, tmp) = (scratch.join("home"), scratch.join("tmp"));
            for folder in [&home, &tmp] {
                fs::create_dir_all(folder)
                    .with_context(|| format!("cannot create {}", folder.display()))?;
            }
            let path = sealed_path(step);
            spec.network = false;
            spec.rules = Some(rules(tree, scratch, step, &path));
            sealed_env(&home, &tmp, &path)
        }
    };
    let mut command = crate::seal::command(&spec).context("cannot find zot's own program")?;
    command.env_clear().envs(env).current_dir(&dir);
    for (key, value) in &step.env {
        command.env(key, value);
    }
    Ok(command)
}

/// Makes zot not dumpable, so a build of the user's (run without capabilities) cannot read
/// zot's environment, which holds the user's (CI's tokens), through `/proc` where the seal
/// could not give the build a `/proc` of its own. Core dumps of zot are lost with it.
pub(super) fn keep_this_process_to_itself() {
    #[cfg(target_os = "linux")]
    {
        use rustix::process::{DumpableBehavior, set_dumpable_behavior};
        let _ = set_dumpable_behavior(DumpableBehavior::NotDumpable);
    }
}

/// The user's environment; for a build that runs unsealed, less what looks like a
/// credential.
fn user_env(drop_credentials: bool) -> Vec<(OsString, OsString)> {
    std::env::vars_os()
        .filter(|(key, _)| !(drop_credentials && is_credential(&key.to_string_lossy())))
        .collect()
}

/// A sealed build's environment: [`KEPT`] and `LC_*`, PATH as [`sealed_path`] makes it,
/// and a private home and temporary folder.
fn sealed_env(home: &Path, tmp: &Path, path: &[PathBuf]) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = std::env::vars_os()
        .filter(|(key, _)| {
            let key = key.to_string_lossy();
            KEPT.contains(&key.as_ref()) || key.starts_with("LC_")
        })
        .collect();
    let joined = std::env::join_paths(path).unwrap_or_default();
    env.push(("PATH".into(), joined));
    for key in ["HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME"] {
        let folder = match key {
            "HOME" => home.to_path_buf(),
            "XDG_CONFIG_HOME" => home.join(".config"),
            "XDG_CACHE_HOME" => home.join(".cache"),
            _ => home.join(".local/share"),
        };
        env.push((key.into(), folder.into_os_string()));
    }
    env.push(("TMPDIR".into(), tmp.as_os_str().to_owned()));
    env
}

/// The PATH of a sealed build: the step's own folders first, then the user's PATH less
/// what is not a folder by an absolute path or would open the home to the build (the home
/// itself, or a folder above it).
fn sealed_path(step: &Step) -> Vec<PathBuf> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let user = std::env::var_os("PATH").unwrap_or_default();
    let mut path: Vec<PathBuf> = step.path_first.clone();
    for folder in std::env::split_paths(&user) {
        let opens_home = home.as_ref().is_some_and(|h| h.starts_with(&folder));
        if folder.is_absolute() && !opens_home && folder.is_dir() && !path.contains(&folder) {
            path.push(folder);
        }
    }
    path
}

/// The folders a sealed build may read and write.
fn rules(tree: &Path, scratch: &Path, step: &Step, path: &[PathBuf]) -> Rules {
    let mut read: Vec<PathBuf> = SYSTEM.iter().map(PathBuf::from).collect();
    read.extend(ETC.iter().map(|name| Path::new("/etc").join(name)));
    read.extend(path.iter().cloned());
    read.extend(path.iter().filter_map(|p| fs::canonicalize(p).ok()));
    // The tool's installation (npm's package, the Go a go started with no GOROOT uses:
    // asking `go env GOROOT` would start go once more, about a tenth of a small build).
    if let Program::Tool(program) = &step.program {
        read.extend(super::toolchain::prefix_of(program));
    }
    read.extend(step.reads.iter().cloned());
    let mut write = vec![tree.to_path_buf(), scratch.to_path_buf()];
    write.extend(DEVICES.iter().map(PathBuf::from));
    write.extend(step.writes.iter().cloned());
    // Nothing that would open the user's home whole (a toolchain in ~/bin gives ~ as its
    // installation): only what lies in it.
    let home = std::env::var_os("HOME").map(PathBuf::from);
    read.retain(|p| p.exists() && !home.as_ref().is_some_and(|h| h.starts_with(p)));
    read.sort();
    read.dedup();
    Rules { read, write }
}

/// Variables an unsealed build never sees: `*_TOKEN`, `*_SECRET`, `*_PASSWORD`,
/// `GIT_ASKPASS`, `SSH_AUTH_SOCK`.
fn is_credential(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    ["_TOKEN", "_SECRET", "_PASSWORD"]
        .iter()
        .any(|end| upper.ends_with(end))
        || upper == "GIT_ASKPASS"
        || upper == "SSH_AUTH_SOCK"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credential_looking_variables_are_recognised() {
        for name in [
            "GITHUB_TOKEN",
            "npm_token",
            "AWS_SECRET",
            "DB_PASSWORD",
            "GIT_ASKPASS",
            "SSH_AUTH_SOCK",
        ] {
            assert!(is_credential(name), "{name}");
        }
        for name in ["PATH", "HOME", "TOKENIZER", "GOFLAGS"] {
            assert!(!is_credential(name), "{name}");
        }
    }
}
