//! Running beside the zot agent. `cargo install` puts this binary on PATH as `zot`, the
//! agent's own name, so before any parsing the binary decides whose command line it holds:
//!
//! - Invoked as `zot-ext` (the file name's stem): always the manager.
//! - Invoked as `zot` (or any other name): the manager when the first word after our global
//!   flags (`-q`/`--quiet`, `--json`, `--color WHEN`) is `ext` or `completions`, or it is
//!   `help` followed by one of those. Everything else (`zot`, `zot --ext ./x`, `zot -p ...`,
//!   `zot --help`, `zot --version`) belongs to the agent and is handed to it with `exec`.
//! - With no agent found, the bare `zot`, `zot help`, `zot -h`/`--help` and
//!   `zot -V`/`--version` fall back to the manager's help and version; anything else
//!   exits 2 with a one-line hint on how to get the agent.
//!
//! The agent is `$ZOT_AGENT` when set (and not empty), else the first `zot` on PATH that is
//! an executable file and not this binary, compared by file identity (device and inode of
//! the file a link resolves to), so links to ourselves are skipped. A `ZOT_AGENT` without a
//! slash is a name looked up on PATH the same way (and the file found is the one run); one
//! with a slash is a path, relative to the current folder if it does not start with `/`.
//! Relative PATH entries are skipped: a `zot` in whatever folder the shell is in is never
//! run.
//!
//! Two copies of this binary on PATH (`~/.cargo/bin` and `/usr/local/bin`) are different
//! files, so the first would hand over to the second and the second back to the first. Each
//! hand-over therefore adds the identity of the copy that made it to `ZOT_EXT_HANDED_OVER`,
//! and every copy skips the files listed there as it skips itself: the search goes on past
//! them to the agent. The child also gets `ZOT_EXT_PASSTHROUGH=<depth>`; an agent that is a
//! wrapper calling `zot` back would otherwise loop, so after `MAX_DEPTH` nested hand-overs
//! the binary refuses (exit 2). The limit is not 1 so that the agent may itself run `zot` (a
//! sub-agent, a bash tool).
//!
//! [`agent_version`] asks that agent for its version (`<agent> --version`), bounded in time
//! and output, for the commands that judge extensions by what the host does.

use std::ffi::{OsStr, OsString};
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use crate::host::Group;
use crate::output::{Output, printable};

/// Environment variable naming the agent's executable.
pub const AGENT_VAR: &str = "ZOT_AGENT";
/// Environment variable counting nested hand-overs to the agent.
pub const DEPTH_VAR: &str = "ZOT_EXT_PASSTHROUGH";
/// Nested hand-overs allowed before the binary assumes a loop.
pub const MAX_DEPTH: u32 = 4;
/// Environment variable listing the copies of this binary that handed over: their file
/// identities (`device:inode`), separated by spaces.
pub const HANDED_OVER_VAR: &str = "ZOT_EXT_HANDED_OVER";
/// At most this many identities are read from [`HANDED_OVER_VAR`].
const HANDED_OVER_CAP: usize = 16;

/// Where the agent lives, to say in the no-agent hint.
pub const AGENT_HOME: &str = "https://github.com/patriceckhart/zot";

/// Who handles a command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// This binary's own commands (`zot ext`, `zot completions`).
    Manager,
    /// The zot agent; the manager answers only if no agent is found.
    AgentOrHelp,
    /// The zot agent only.
    Agent,
}

/// A file's identity: its device and inode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileId((u64, u64));

impl FileId {
    /// The identity of the file `path` resolves to, if it exists.
    pub fn of(path: &Path) -> Option<FileId> {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(path).ok()?;
        Some(FileId((meta.dev(), meta.ino())))
    }

    /// The identity as written in [`HANDED_OVER_VAR`]: `device:inode`.
    fn to_word(&self) -> String {
        let FileId((dev, ino)) = self;
        format!("{dev}:{ino}")
    }

    fn from_word(word: &str) -> Option<FileId> {
        let (dev, ino) = word.split_once(':')?;
        Some(FileId((dev.parse().ok()?, ino.parse().ok()?)))
    }
}

/// The files that are this program: the running binary and the copies of it that handed
/// the command line over ([`HANDED_OVER_VAR`]). The agent search skips all of them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Us {
    me: Option<FileId>,
    handed_over: Vec<FileId>,
}

impl Us {
    /// `me` and the copies listed in `handed_over` (the variable's value).
    pub fn new(me: Option<FileId>, handed_over: Option<&OsStr>) -> Us {
        let words = handed_over.and_then(OsStr::to_str).unwrap_or_default();
        Us {
            me,
            handed_over: words
                .split_whitespace()
                .filter_map(FileId::from_word)
                .take(HANDED_OVER_CAP)
                .collect(),
        }
    }

    /// This process's running binary and `ZOT_EXT_HANDED_OVER`.
    pub fn from_env() -> Us {
        let me = std::env::current_exe().ok().and_then(|p| FileId::of(&p));
        Us::new(me, std::env::var_os(HANDED_OVER_VAR).as_deref())
    }

    /// Whether `path` resolves to one of these files.
    fn holds(&self, path: &Path) -> bool {
        let Some(id) = FileId::of(path) else {
            return false;
        };
        self.me.as_ref() == Some(&id) || self.handed_over.contains(&id)
    }

    /// The value of [`HANDED_OVER_VAR`] for the agent: the copies before, and this one.
    fn handed_over_value(&self) -> String {
        let mut words: Vec<String> = self.handed_over.iter().map(FileId::to_word).collect();
        if let Some(me) = self.me.as_ref().filter(|me| !self.handed_over.contains(me)) {
            words.push(me.to_word());
        }
        words.join(" ")
    }
}

/// Classifies a command line (with its program name first).
pub fn route(args: &[OsString]) -> Route {
    let Some((program, rest)) = args.split_first() else {
        return Route::Manager;
    };
    if Path::new(program).file_stem() == Some(OsStr::new("zot-ext")) {
        return Route::Manager;
    }
    if names_manager_command(rest) {
        return Route::Manager;
    }
    let asks_help = match rest {
        [] => true,
        [one] => ["help", "-h", "--help", "-V", "--version"]
            .iter()
            .any(|f| one == f),
        _ => false,
    };
    if asks_help {
        Route::AgentOrHelp
    } else {
        Route::Agent
    }
}

/// Whether the first word after our global flags is one of our subcommands.
fn names_manager_command(rest: &[OsString]) -> bool {
    let mut words = rest.iter();
    while let Some(word) = words.next() {
        let Some(text) = word.to_str() else {
            return false;
        };
        match text {
            "-q" | "--quiet" | "--json" => {}
            "--color" => {
                words.next();
            }
            _ if text.starts_with("--color=") => {}
            "ext" | "completions" => return true,
            "help" => {
                let next = words.next().and_then(|w| w.to_str());
                return matches!(next, Some("ext" | "completions"));
            }
            _ => return false,
        }
    }
    false
}

/// How long `<agent> --version` may take before it is killed.
const VERSION_WAIT: Duration = Duration::from_secs(2);

/// How much of the `--version` output is read.
const VERSION_OUTPUT_CAP: u64 = 4096;

/// What the agent says about its version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentVersion {
    /// It printed `zot <version>`.
    Reported { agent: PathBuf, version: String },
    /// It ran but gave no version: why, as a phrase (`did not answer ... within 2s`).
    Silent { agent: PathBuf, why: String },
    /// No agent to ask.
    Missing(NoAgent),
}

/// Finds the agent ([`find_agent_from_env`]) and asks it for its version.
pub fn agent_version() -> AgentVersion {
    match find_agent_from_env() {
        Err(e) => AgentVersion::Missing(e),
        Ok(agent) => match ask_version(&agent, VERSION_WAIT) {
            Ok(version) => AgentVersion::Reported { agent, version },
            Err(why) => AgentVersion::Silent { agent, why },
        },
    }
}

/// Runs `<agent> --version` with stdin empty, stderr discarded, in a process group of its
/// own, and the hand-over counter at its limit, so a wrapper that calls `zot` back is refused
/// at once instead of looping. Reads at most [`VERSION_OUTPUT_CAP`] bytes; after `wait` the
/// group is killed.
fn ask_version(agent: &Path, wait: Duration) -> Result<String, String> {
    let deadline = Instant::now() + wait;
    let mut command = Command::new(agent);
    command
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .env(DEPTH_VAR, MAX_DEPTH.to_string());
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let mut child = command
        .spawn()
        .map_err(|e| format!("could not be run for --version ({e})"))?;
    let stdout = child.stdout.take().expect("stdout is piped");
    let (sender, output) = mpsc::channel();
    thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = stdout.take(VERSION_OUTPUT_CAP).read_to_end(&mut bytes);
        let _ = sender.send(bytes);
    });
    let group = Group::of(&child);
    let status = group.wait_exit(deadline);
    // Whatever it left behind in its group goes with it.
    group.kill();
    let _ = child.wait();
    let Some(status) = status else {
        return Err(format!(
            "did not answer --version within {}s",
            wait.as_secs_f64()
        ));
    };
    let left = deadline.saturating_duration_since(Instant::now());
    let bytes = output.recv_timeout(left).unwrap_or_default();
    let text = String::from_utf8_lossy(&bytes);
    if !status.success() {
        return Err(format!("exited with {status} on --version"));
    }
    crate::protocol::zot::version_in_banner(&text).ok_or_else(|| {
        let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        let shown: String = first.chars().take(60).collect();
        format!("printed no version on --version ({:?})", printable(&shown))
    })
}

/// Why no agent can be run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoAgent {
    /// No `ZOT_AGENT` and no other `zot` on PATH.
    NotFound,
    /// `ZOT_AGENT` names something that cannot be run as the agent.
    BadVariable(String),
}

impl NoAgent {
    /// The one-line message for this failure.
    pub fn message(&self) -> String {
        match self {
            NoAgent::NotFound => format!(
                "the zot agent was not found: no other `zot` on PATH and {AGENT_VAR} is not set; \
                 install the agent ({AGENT_HOME}) or set {AGENT_VAR} to its path \
                 (this binary itself only runs `zot ext ...` and `zot completions ...`)"
            ),
            NoAgent::BadVariable(why) => why.clone(),
        }
    }
}

/// Finds the agent: `zot_agent` (the value of `ZOT_AGENT`) if set, else the first `zot` on
/// `path` that is an executable file and none of `us`.
pub fn find_agent(
    zot_agent: Option<&OsStr>,
    path: Option<&OsStr>,
    us: &Us,
) -> Result<PathBuf, NoAgent> {
    let path = path.unwrap_or_default();
    match zot_agent.filter(|v| !v.is_empty()) {
        Some(named) if !named.as_encoded_bytes().contains(&b'/') => {
            search_path(named, path, us).ok_or_else(|| not_on_path(named))
        }
        Some(named) => check_named_agent(Path::new(named), us),
        None => search_path(OsStr::new("zot"), path, us).ok_or(NoAgent::NotFound),
    }
}

/// The first `name` in an absolute folder of `path` that is an executable file and none of
/// `us`.
fn search_path(name: &OsStr, path: &OsStr, us: &Us) -> Option<PathBuf> {
    std::env::split_paths(path)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable_file(candidate) && !us.holds(candidate))
}

/// The agent found from this process's environment (`ZOT_AGENT`, PATH, the running
/// executable and the copies that handed over), for any command that needs to ask the agent
/// something.
pub fn find_agent_from_env() -> Result<PathBuf, NoAgent> {
    find_agent(
        std::env::var_os(AGENT_VAR).as_deref(),
        std::env::var_os("PATH").as_deref(),
        &Us::from_env(),
    )
}

fn not_on_path(named: &OsStr) -> NoAgent {
    let shown = printable(&named.to_string_lossy());
    NoAgent::BadVariable(format!(
        "{AGENT_VAR}={shown} names no executable file on PATH other than this zot ext binary \
         (a name without a slash is looked up on PATH); set it to the agent's path or unset it"
    ))
}

fn check_named_agent(named: &Path, us: &Us) -> Result<PathBuf, NoAgent> {
    let shown = printable(&named.to_string_lossy());
    if !is_executable_file(named) {
        return Err(NoAgent::BadVariable(format!(
            "{AGENT_VAR}={shown} is not an executable file; point it at the zot agent or unset it"
        )));
    }
    if us.holds(named) {
        return Err(NoAgent::BadVariable(format!(
            "{AGENT_VAR}={shown} is this zot ext binary, not the agent; point it at the zot \
             agent or unset it"
        )));
    }
    Ok(named.to_path_buf())
}

fn is_executable_file(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let Ok(meta) = std::fs::metadata(path) else {
        return false;
    };
    meta.is_file() && meta.permissions().mode() & 0o111 != 0
}

/// The depth recorded by an outer hand-over (0 when there was none).
fn depth(value: Option<&OsStr>) -> u32 {
    value
        .and_then(|v| v.to_str())
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

/// Hands the command line to the agent when it is the agent's; returns the exit code to end
/// with, or `None` when the manager should handle it. On Unix a successful hand-over never
/// returns: the agent replaces this process, so its signals and exit status are the
/// caller's.
pub fn pass_through_if_agents() -> Option<u8> {
    let args: Vec<OsString> = std::env::args_os().collect();
    let route = route(&args);
    if route == Route::Manager {
        return None;
    }
    let us = Us::from_env();
    let found = find_agent(
        std::env::var_os(AGENT_VAR).as_deref(),
        std::env::var_os("PATH").as_deref(),
        &us,
    );
    let agent = match found {
        Ok(agent) => agent,
        Err(NoAgent::NotFound) if route == Route::AgentOrHelp => return None,
        Err(e @ NoAgent::NotFound) => {
            let message = match meant_command(&args[1..]) {
                Some(meant) => format!("{}; did you mean: {meant}", e.message()),
                None => e.message(),
            };
            return Some(fail(&message, 2));
        }
        Err(e) => return Some(fail(&e.message(), 2)),
    };
    let depth = depth(std::env::var_os(DEPTH_VAR).as_deref());
    if depth >= MAX_DEPTH {
        let shown = printable(&agent.to_string_lossy());
        return Some(fail(
            &format!(
                "handed over to the agent {depth} times in a row ({DEPTH_VAR}={depth}): \
                 {shown} seems to call `zot` back; set {AGENT_VAR} to the real zot agent"
            ),
            2,
        ));
    }
    let mut command = std::process::Command::new(&agent);
    command
        .args(&args[1..])
        .env(DEPTH_VAR, (depth + 1).to_string())
        .env(HANDED_OVER_VAR, us.handed_over_value());
    Some(run(command, &agent))
}

/// With no agent to hand a command line over to, the command of this binary its first word
/// was probably meant to be, written out with the rest of the line (`zot completion bash`:
/// `zot completions bash`; `zot ex list`: `zot ext list`; `zot version`: `zot --version`).
fn meant_command(rest: &[OsString]) -> Option<String> {
    let (first, more) = rest.split_first()?;
    let word = first.to_str()?.to_lowercase();
    let meant = match word.as_str() {
        "version" | "-v" | "-version" | "--v" | "ver" => return Some("zot --version".into()),
        "ex" | "et" | "xt" | "exts" | "extension" | "extensions" | "extention" | "extentions"
        | "plugin" | "plugins" => "ext",
        _ if word.starts_with("complet")
            || strsim::damerau_levenshtein(&word, "completions") <= 2 =>
        {
            "completions"
        }
        _ => return None,
    };
    let mut line = format!("zot {meant}");
    for arg in more {
        line.push(' ');
        line.push_str(&crate::output::sh_quote(&arg.to_string_lossy()));
    }
    Some(line)
}

fn run(mut command: std::process::Command, agent: &Path) -> u8 {
    use std::os::unix::process::CommandExt;
    let err = command.exec();
    let shown = printable(&agent.to_string_lossy());
    fail(&format!("could not run the zot agent {shown}: {err}"), 1)
}

fn fail(message: &str, code: u8) -> u8 {
    Output::plain().fail(message);
    code
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Vec<OsString> {
        words.iter().map(OsString::from).collect()
    }

    #[test]
    fn our_subcommands_go_to_the_manager() {
        for line in [
            &["zot", "ext", "list"][..],
            &["zot", "ext"],
            &["zot", "completions", "bash"],
            &["/usr/bin/zot", "-q", "--color", "never", "ext", "list"],
            &["zot", "--json", "--color=always", "ext", "list"],
            &["zot", "help", "ext"],
            &["zot", "help", "completions"],
            &["zot-ext", "--ext", "x"],
            &["/opt/bin/zot-ext", "anything"],
            &["zot-ext"],
        ] {
            assert_eq!(route(&args(line)), Route::Manager, "{line:?}");
        }
    }

    #[test]
    fn help_and_version_alone_prefer_the_agent() {
        for line in [
            &["zot"][..],
            &["zot", "--help"],
            &["zot", "-h"],
            &["zot", "-V"],
            &["zot", "--version"],
            &["zot", "help"],
        ] {
            assert_eq!(route(&args(line)), Route::AgentOrHelp, "{line:?}");
        }
    }

    #[test]
    fn everything_else_is_the_agents() {
        for line in [
            &["zot", "--ext", "./my-extension"][..],
            &["zot", "-p", "ext"],
            &["zot", "--help", "ext"],
            &["zot", "help", "me"],
            &["zot", "extension"],
            &["zot", "-q"],
            &["zot", "--color", "never"],
            &["zot", "--model", "x", "ext"],
        ] {
            assert_eq!(route(&args(line)), Route::Agent, "{line:?}");
        }
    }

    #[test]
    fn non_utf8_words_are_the_agents() {
        use std::os::unix::ffi::OsStringExt;
        let line = vec![OsString::from("zot"), OsString::from_vec(vec![0xff, b'x'])];
        assert_eq!(route(&line), Route::Agent);
    }

    fn executable(path: &Path) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::write(path, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn path_search_skips_ourselves_by_identity_and_non_executables() {
        let root = tempfile::tempdir().unwrap();
        let [me_dir, link_dir, plain_dir, agent_dir] =
            ["me", "link", "plain", "agent"].map(|d| root.path().join(d));
        for dir in [&me_dir, &link_dir, &plain_dir, &agent_dir] {
            std::fs::create_dir(dir).unwrap();
        }
        executable(&me_dir.join("zot"));
        std::os::unix::fs::symlink(me_dir.join("zot"), link_dir.join("zot")).unwrap();
        std::fs::write(plain_dir.join("zot"), "not executable").unwrap();
        executable(&agent_dir.join("zot"));
        let me = Us::new(FileId::of(&me_dir.join("zot")), None);
        let path = std::env::join_paths(["relative", "", &link_dir.to_string_lossy()]).unwrap();
        let mut dirs = std::env::split_paths(&path).collect::<Vec<_>>();
        dirs.extend([me_dir.clone(), plain_dir.clone(), agent_dir.clone()]);
        let path = std::env::join_paths(dirs).unwrap();
        let found = find_agent(None, Some(&path), &me).unwrap();
        assert_eq!(found, agent_dir.join("zot"));
        let without_agent =
            std::env::join_paths([link_dir.clone(), me_dir.clone(), plain_dir.clone()]).unwrap();
        assert_eq!(
            find_agent(None, Some(&without_agent), &me),
            Err(NoAgent::NotFound)
        );
        assert_eq!(find_agent(None, None, &me), Err(NoAgent::NotFound));
    }

    #[test]
    fn a_relative_path_entry_is_never_searched() {
        let root = tempfile::tempdir().unwrap();
        executable(&root.path().join("zot"));
        let cwd = std::env::current_dir().unwrap();
        let relative = pathdiff(root.path(), &cwd);
        let path = std::env::join_paths([relative]).unwrap();
        assert_eq!(
            find_agent(None, Some(&path), &Us::default()),
            Err(NoAgent::NotFound)
        );
    }

    /// `target` written relative to `base` with `..` steps.
    fn pathdiff(target: &Path, base: &Path) -> PathBuf {
        let ups = base.components().count() - 1;
        let mut out = PathBuf::new();
        for _ in 0..ups {
            out.push("..");
        }
        out.join(target.strip_prefix("/").unwrap())
    }

    #[test]
    fn zot_agent_wins_and_is_checked() {
        let root = tempfile::tempdir().unwrap();
        let [named, on_path, me] = ["named", "on-path", "me"].map(|f| root.path().join(f));
        for file in [&named, &on_path, &me] {
            executable(file);
        }
        std::fs::create_dir(root.path().join("bin")).unwrap();
        std::os::unix::fs::symlink(&on_path, root.path().join("bin/zot")).unwrap();
        let path = root.path().join("bin").into_os_string();
        let me_id = Us::new(FileId::of(&me), None);
        let found = find_agent(Some(named.as_os_str()), Some(&path), &me_id);
        assert_eq!(found, Ok(named.clone()));
        let empty = find_agent(Some(OsStr::new("")), Some(&path), &me_id);
        assert_eq!(empty, Ok(root.path().join("bin/zot")));
        let missing = root.path().join("missing");
        let err = find_agent(Some(missing.as_os_str()), Some(&path), &Us::default()).unwrap_err();
        assert!(
            err.message().contains("is not an executable file"),
            "{err:?}"
        );
        let err = find_agent(Some(me.as_os_str()), Some(&path), &me_id).unwrap_err();
        assert!(err.message().contains("is this zot ext binary"), "{err:?}");
    }

    #[test]
    fn a_name_without_a_slash_is_looked_up_on_path_and_one_with_a_slash_is_a_path() {
        let root = tempfile::tempdir().unwrap();
        let [me_dir, agent_dir] = ["me", "agent"].map(|d| root.path().join(d));
        for dir in [&me_dir, &agent_dir] {
            std::fs::create_dir(dir).unwrap();
            executable(&dir.join("my-zot"));
        }
        let us = Us::new(FileId::of(&me_dir.join("my-zot")), None);
        let path = std::env::join_paths([&me_dir, &agent_dir]).unwrap();
        let found = find_agent(Some(OsStr::new("my-zot")), Some(&path), &us);
        assert_eq!(found, Ok(agent_dir.join("my-zot")));
        let err = find_agent(Some(OsStr::new("other")), Some(&path), &us).unwrap_err();
        assert!(
            err.message().contains("names no executable file on PATH"),
            "{err:?}"
        );
        // A path (here relative to a current folder that has no `agent/`) is not searched.
        let relative = OsStr::new("agent/my-zot");
        let err = find_agent(Some(relative), Some(&path), &us).unwrap_err();
        assert!(
            err.message().contains("is not an executable file"),
            "{err:?}"
        );
    }

    #[test]
    fn copies_that_handed_over_are_skipped_and_passed_on() {
        let root = tempfile::tempdir().unwrap();
        let [first, second, agent] = ["first", "second", "agent"].map(|d| root.path().join(d));
        for dir in [&first, &second, &agent] {
            std::fs::create_dir(dir).unwrap();
            executable(&dir.join("zot"));
        }
        let [first_id, second_id] = [&first, &second].map(|d| FileId::of(&d.join("zot")).unwrap());
        let path = std::env::join_paths([&first, &second, &agent]).unwrap();
        let at_first = Us::new(Some(first_id.clone()), None);
        assert_eq!(
            find_agent(None, Some(&path), &at_first),
            Ok(second.join("zot"))
        );
        let passed = at_first.handed_over_value();
        assert_eq!(passed, first_id.to_word());
        let at_second = Us::new(Some(second_id.clone()), Some(OsStr::new(&passed)));
        assert_eq!(
            find_agent(None, Some(&path), &at_second),
            Ok(agent.join("zot"))
        );
        assert_eq!(
            at_second.handed_over_value(),
            format!("{} {}", first_id.to_word(), second_id.to_word())
        );
        let junk = Us::new(None, Some(OsStr::new("x 1:y :2 3:4:5")));
        assert_eq!(junk, Us::default());
    }

    #[test]
    fn depth_reads_the_marker() {
        assert_eq!(depth(None), 0);
        assert_eq!(depth(Some(OsStr::new("3"))), 3);
        assert_eq!(depth(Some(OsStr::new("junk"))), 0);
    }

    #[test]
    fn a_first_word_close_to_ours_is_written_out_as_ours() {
        let meant = |words: &[&str]| meant_command(&args(words)[1..]);
        assert_eq!(
            meant(&["zot", "completion", "bash"]).unwrap(),
            "zot completions bash"
        );
        assert_eq!(meant(&["zot", "ex", "list"]).unwrap(), "zot ext list");
        assert_eq!(
            meant(&["zot", "extension", "list", "a b"]).unwrap(),
            "zot ext list 'a b'"
        );
        assert_eq!(meant(&["zot", "version"]).unwrap(), "zot --version");
        assert_eq!(meant(&["zot", "chat"]), None);
        assert_eq!(meant(&["zot", "fix the tests"]), None);
    }

    #[test]
    fn the_no_agent_message_is_one_line_and_says_how_to_get_one() {
        let message = NoAgent::NotFound.message();
        assert!(!message.contains('\n'));
        assert!(message.contains(AGENT_HOME) && message.contains(AGENT_VAR));
    }
}
