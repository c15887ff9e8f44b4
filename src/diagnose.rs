//! The checks behind `zot ext doctor`: static checks of one extension, a live conversation
//! run the way zot runs it, and the names extensions take from each other and from zot.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::host::{self, Handshake, HostInfo, Leftover, Level, Problem, Session, Stopped};
use crate::manifest::Manifest;
use crate::target::{Origin, Target};

/// zot's own tools; an extension tool of the same name is shadowed.
pub const BUILTIN_TOOLS: &[&str] = &["read", "write", "edit", "bash", "glob", "skill"];

/// zot's own slash commands; an extension command of the same name never runs.
pub const BUILTIN_COMMANDS: &[&str] = &[
    "help",
    "login",
    "logout",
    "model",
    "new",
    "sessions",
    "session",
    "jump",
    "compact",
    "study",
    "btw",
    "jail",
    "unjail",
    "skills",
    "swarm",
    "reload-ext",
    "telegram",
    "matrix",
    "settings",
    "clear",
    "exit",
    "cd",
];

/// Lines of stderr shown for a failing extension.
const STDERR_LINES: usize = 20;

/// How long doctor watches an extension after `ready` before asking it to stop, to catch one
/// that exits on its own (zot would talk to it for a whole session).
const AFTER_READY: Duration = Duration::from_millis(100);

/// What the live check tells the extension and how long it waits.
#[derive(Debug, Clone)]
pub struct Options {
    pub timeout: Duration,
    pub host: HostInfo,
}

impl HostInfo {
    /// The `hello_ack` values `zot ext` sends: its own version, no provider or model.
    pub fn for_cli(cwd: PathBuf) -> HostInfo {
        HostInfo {
            zot_version: env!("CARGO_PKG_VERSION").to_string(),
            provider: "zot-ext".into(),
            model: "none".into(),
            cwd,
        }
    }
}

/// Overall verdict for one extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    Warning,
    Error,
}

/// A registered command.
#[derive(Debug, Clone, Serialize)]
pub struct Named {
    pub name: String,
    pub description: String,
}

/// A registered tool: `deferred` ones stay hidden until a tool result activates them,
/// `interactive` ones wait for the user (headless hosts refuse them).
#[derive(Debug, Clone, Serialize)]
pub struct Tool {
    pub name: String,
    pub description: String,
    pub deferred: bool,
    pub interactive: bool,
}

/// What the extension subscribed to.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Subscriptions {
    pub events: Vec<String>,
    pub intercept: Vec<String>,
}

/// Everything doctor found about one extension (`zot ext doctor --json` prints a list).
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub name: String,
    pub scope: Origin,
    pub dir: String,
    pub status: Status,
    pub enabled: Option<bool>,
    pub loaded: bool,
    pub version: Option<String>,
    pub pid: Option<i32>,
    pub commands: Vec<Named>,
    pub tools: Vec<Tool>,
    pub subscriptions: Subscriptions,
    pub hello_ms: Option<u64>,
    pub ready_ms: Option<u64>,
    pub shutdown_ms: Option<u64>,
    pub errors: Vec<Problem>,
    pub warnings: Vec<Problem>,
    pub notes: Vec<Problem>,
    pub stderr: Option<String>,
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl Report {
    fn new(target: &Target) -> Report {
        let manifest = target.manifest.as_ref().ok();
        Report {
            enabled: manifest.map(|m| m.enabled),
            loaded: target.loaded(),
            version: manifest.and_then(|m| m.version.clone()),
            ..Report::blank(
                target.name().to_string(),
                target.origin,
                target.dir.display().to_string(),
            )
        }
    }

    /// A report with nothing found yet.
    fn blank(name: String, scope: Origin, dir: String) -> Report {
        Report {
            name,
            scope,
            dir,
            status: Status::Ok,
            enabled: None,
            loaded: false,
            version: None,
            pid: None,
            commands: Vec::new(),
            tools: Vec::new(),
            subscriptions: Subscriptions::default(),
            hello_ms: None,
            ready_ms: None,
            shutdown_ms: None,
            errors: Vec::new(),
            warnings: Vec::new(),
            notes: Vec::new(),
            stderr: None,
        }
    }

    fn add(&mut self, problem: Problem) {
        match problem.level {
            Level::Error => self.errors.push(problem),
            Level::Warning => self.warnings.push(problem),
            Level::Note => self.notes.push(problem),
        }
        self.status = if !self.errors.is_empty() {
            Status::Error
        } else if !self.warnings.is_empty() {
            Status::Warning
        } else {
            Status::Ok
        };
    }
}

/// Checks one extension: its manifest and exec, then a live handshake and shutdown.
pub fn check(target: &Target, options: &Options) -> Report {
    let mut report = Report::new(target);
    let manifest = match &target.manifest {
        Ok(manifest) => manifest,
        Err(e) => {
            report.add(Problem::error(e.to_string(), "fix extension.json"));
            return report;
        }
    };
    check_folder_name(&mut report, target, manifest);
    check_twins(&mut report, target, manifest);
    for note in &manifest.notes {
        report.add(Problem::note(note.clone(), ""));
    }
    match target.launch(manifest) {
        Ok(launch) => live(&mut report, &launch, manifest, options),
        Err(e) => report.add(Problem::error(e.message, e.fix)),
    }
    report
}

/// zot dedups by folder name but registers by manifest name; installs keep them equal.
fn check_folder_name(report: &mut Report, target: &Target, manifest: &Manifest) {
    if target.origin != Origin::Path && target.dir_name != manifest.name {
        report.add(Problem::warning(
            format!(
                "the folder is named \"{}\" but extension.json names the extension \"{}\"",
                target.dir_name, manifest.name
            ),
            format!(
                "rename the folder to \"{}\" (zot ext install names it after the manifest)",
                manifest.name
            ),
        ));
    }
}

/// Two enabled folders with the same manifest name: zot 0.1.62 starts both and keeps
/// whichever finishes its hello last (`loadOne` checks for a duplicate before the handshake).
fn check_twins(report: &mut Report, target: &Target, manifest: &Manifest) {
    if !manifest.enabled || target.shadowed {
        return;
    }
    for twin in target.twins.iter().filter(|t| t.enabled) {
        report.add(Problem::warning(
            format!(
                "another folder, {} ({}), also has the name \"{}\": zot starts both and keeps whichever says hello last",
                twin.dir.display(),
                twin.scope,
                manifest.name
            ),
            format!(
                "rename one of them in its extension.json, or disable one: zot ext disable --{} {}",
                twin.scope,
                twin.dir.file_name().unwrap_or_default().to_string_lossy()
            ),
        ));
    }
}

fn live(report: &mut Report, launch: &host::Launch, manifest: &Manifest, options: &Options) {
    let mut session = match Session::start(launch) {
        Ok(session) => session,
        Err(e) => {
            let fix = if e.raw_os_error() == Some(rustix::io::Errno::NOEXEC.raw_os_error()) {
                "a script needs a #! line naming its interpreter, e.g. #!/usr/bin/env python3"
            } else {
                "check \"exec\" and \"args\" in extension.json"
            };
            return report.add(Problem::error(
                format!("cannot start {}: {e}", launch.command_line()),
                fix,
            ));
        }
    };
    report.pid = Some(session.pid());
    let handshake = host::handshake(&mut session, &manifest.name, &options.host, options.timeout);
    absorb(report, &handshake);
    if !handshake.broken {
        if handshake.ready_after.is_some() {
            session.wait_exit(Instant::now() + AFTER_READY);
        }
        let stopped = session.stop(host::SHUTDOWN_GRACE);
        shutdown(report, &stopped);
        add_leftovers(report, &stopped.leftovers);
    }
    if !report.errors.is_empty() {
        report.stderr = Some(session.stderr_tail(STDERR_LINES)).filter(|s| !s.trim().is_empty());
    }
}

fn absorb(report: &mut Report, h: &Handshake) {
    report.hello_ms = h.hello_after.map(millis);
    report.ready_ms = h.ready_after.map(millis);
    report.commands = h
        .commands
        .iter()
        .map(|c| Named {
            name: c.name.clone(),
            description: c.description.clone(),
        })
        .collect();
    report.tools = h
        .tools
        .iter()
        .map(|t| Tool {
            name: t.name.clone(),
            description: t.description.clone(),
            deferred: t.deferred,
            interactive: t.interactive,
        })
        .collect();
    report.subscriptions = Subscriptions {
        events: h.events.clone(),
        intercept: h.intercept.clone(),
    };
    h.problems.iter().cloned().for_each(|p| report.add(p));
    builtin_clashes(report);
}

fn builtin_clashes(report: &mut Report) {
    let mut found = Vec::new();
    // zot matches slash commands without regard to case.
    for command in report
        .commands
        .iter()
        .filter(|c| BUILTIN_COMMANDS.contains(&c.name.to_lowercase().as_str()))
    {
        found.push(Problem::warning(
            format!(
                "/{} is a built-in zot command, so zot never calls this extension for it",
                command.name
            ),
            format!("rename the command, e.g. /{}-{}", report.name, command.name),
        ));
    }
    for tool in report
        .tools
        .iter()
        .filter(|t| BUILTIN_TOOLS.contains(&t.name.as_str()))
    {
        found.push(Problem::warning(
            format!(
                "{} is a built-in zot tool, so the model never reaches this extension's tool",
                tool.name
            ),
            format!(
                "rename the tool, e.g. {}_{}",
                report.name.replace(['-', '.'], "_"),
                tool.name
            ),
        ));
    }
    found.into_iter().for_each(|p| report.add(p));
}

fn shutdown(report: &mut Report, stopped: &Stopped) {
    let fix = "on {\"type\":\"shutdown\"} reply {\"type\":\"shutdown_ack\"} and exit";
    let grace = host::SHUTDOWN_GRACE.as_secs();
    report.shutdown_ms = Some(millis(stopped.took));
    if stopped.gone_before {
        return report.add(gone_before(stopped));
    }
    let problem = match *stopped {
        Stopped { exit: None, .. } => {
            Problem::error("still running after SIGKILL", "see its stderr")
        }
        Stopped {
            acked: false,
            terminated: true,
            killed,
            ..
        } => Problem::error(
            format!(
                "ignored shutdown: no shutdown_ack and still running after {grace}s, so it was stopped with SIGTERM{}",
                if killed {
                    ", then SIGKILL (it ignored SIGTERM too)"
                } else {
                    ""
                }
            ),
            fix,
        ),
        Stopped {
            acked: true,
            terminated: true,
            ..
        } => Problem::warning(
            format!(
                "sent shutdown_ack but was still running after {grace}s, so it was stopped with SIGTERM"
            ),
            "exit right after sending shutdown_ack",
        ),
        Stopped { acked: false, .. } => {
            Problem::warning("exited on shutdown without sending shutdown_ack", fix)
        }
        Stopped {
            exit: Some(exit), ..
        } if !exit.success() => Problem::warning(
            format!("exited with {exit} after shutdown_ack"),
            "exit with status 0 on shutdown",
        ),
        _ => return,
    };
    report.add(problem);
}

/// It exited (or closed stdout) on its own after `ready`; zot would drop it mid-session.
fn gone_before(stopped: &Stopped) -> Problem {
    let what = match stopped.exit {
        Some(exit) => format!("exited ({exit})"),
        None => "closed stdout".to_string(),
    };
    Problem::error(
        format!(
            "{what} right after ready, before zot asked it to stop; zot would lose its commands and tools"
        ),
        "keep running and reading stdin until shutdown arrives (or stdin closes): zot talks to an extension for the whole session",
    )
}

/// Processes that left the extension's process group and outlived it (ended since).
pub fn add_leftovers(report: &mut Report, found: &[Leftover]) {
    for leftover in found {
        report.add(Problem::warning(
            format!(
                "left a process running after shutdown: pid {} ({}); zot ext ended it",
                leftover.pid, leftover.command
            ),
            "stop the processes it starts when shutdown arrives; ones that call setsid or fork twice escape the kill of its process group",
        ));
    }
}

/// Marks commands and tools that an extension loaded earlier already took. zot loads project
/// extensions before global ones, folders sorted, and keeps the first registration.
pub fn add_conflicts(reports: &mut [Report]) {
    let mut commands: HashMap<String, (String, Origin)> = HashMap::new();
    let mut tools: HashMap<String, (String, Origin)> = HashMap::new();
    for report in reports.iter_mut().filter(|r| r.loaded) {
        let mut found = Vec::new();
        let me = (report.name.clone(), report.scope);
        for command in &report.commands {
            let key = command.name.to_lowercase();
            match commands.get(&key) {
                Some(owner) if owner.0 != me.0 => {
                    found.push(clash("command /", &command.name, owner))
                }
                Some(_) => {}
                None => {
                    commands.insert(key, me.clone());
                }
            }
        }
        for tool in &report.tools {
            match tools.get(&tool.name) {
                Some(owner) if owner.0 != me.0 => found.push(clash("tool ", &tool.name, owner)),
                Some(_) => {}
                None => {
                    tools.insert(tool.name.clone(), me.clone());
                }
            }
        }
        found.into_iter().for_each(|p| report.add(p));
    }
}

fn clash(what: &str, name: &str, (owner, scope): &(String, Origin)) -> Problem {
    Problem::warning(
        format!(
            "{what}{name} is also registered by {owner} ({scope}), which zot loads first, so this one is ignored",
            scope = scope.as_str()
        ),
        format!("rename it in one of the two, or disable one: zot ext disable {owner}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(name: &str, scope: Origin, commands: &[&str], tools: &[&str]) -> Report {
        let named = |n: &&str| Named {
            name: n.to_string(),
            description: String::new(),
        };
        let tool = |n: &&str| Tool {
            name: n.to_string(),
            description: String::new(),
            deferred: false,
            interactive: false,
        };
        Report {
            enabled: Some(true),
            loaded: true,
            commands: commands.iter().map(named).collect(),
            tools: tools.iter().map(tool).collect(),
            ..Report::blank(name.into(), scope, String::new())
        }
    }

    #[test]
    fn the_first_loaded_keeps_a_name() {
        let mut reports = vec![
            report("a", Origin::Project, &["go"], &["t"]),
            report("b", Origin::Global, &["Go", "own"], &["t", "u"]),
        ];
        add_conflicts(&mut reports);
        assert!(reports[0].warnings.is_empty());
        let messages: Vec<&str> = reports[1]
            .warnings
            .iter()
            .map(|w| w.message.as_str())
            .collect();
        assert_eq!(messages.len(), 2, "{messages:?}");
        assert!(
            messages[0].contains("command /Go is also registered by a (project)"),
            "{messages:?}"
        );
        assert!(
            messages[1].contains("tool t is also registered by a (project)"),
            "{messages:?}"
        );
        assert_eq!(reports[1].status, Status::Warning);
    }

    #[test]
    fn extensions_zot_does_not_load_take_no_names() {
        let mut off = report("a", Origin::Project, &["go"], &[]);
        off.loaded = false;
        let mut reports = vec![off, report("b", Origin::Global, &["go"], &[])];
        add_conflicts(&mut reports);
        assert!(reports.iter().all(|r| r.warnings.is_empty()));
    }

    #[test]
    fn builtins_shadow_extension_names() {
        let mut r = report("x", Origin::Global, &["help", "mine"], &["bash", "fine"]);
        builtin_clashes(&mut r);
        assert_eq!(r.warnings.len(), 2);
        assert!(r.warnings[0].message.starts_with("/help is a built-in"));
        assert!(r.warnings[1].message.starts_with("bash is a built-in"));
    }

    #[test]
    fn builtin_commands_clash_whatever_the_case() {
        let mut r = report("x", Origin::Global, &["Help", "MODEL"], &[]);
        builtin_clashes(&mut r);
        assert_eq!(r.warnings.len(), 2, "{:?}", r.warnings);
        assert!(r.warnings[0].message.starts_with("/Help is a built-in"));
    }

    #[test]
    fn notes_leave_the_status_alone() {
        let mut r = report("x", Origin::Global, &[], &[]);
        r.add(Problem::note("sent a frame of type \"x\"", ""));
        assert_eq!((r.status, r.notes.len()), (Status::Ok, 1));
    }

    fn stopped(gone_before: bool, exit: Option<host::Exit>) -> Stopped {
        Stopped {
            gone_before,
            acked: false,
            exit,
            terminated: false,
            killed: false,
            took: Duration::ZERO,
            leftovers: Vec::new(),
        }
    }

    #[test]
    fn exiting_before_shutdown_is_an_error() {
        let mut r = report("x", Origin::Global, &[], &[]);
        shutdown(&mut r, &stopped(true, Some(host::Exit::Code(0))));
        assert_eq!(r.errors.len(), 1, "{r:?}");
        assert!(r.warnings.is_empty(), "{r:?}");
        assert_eq!(
            r.errors[0].message,
            "exited (exit status 0) right after ready, before zot asked it to stop; zot would lose its commands and tools"
        );
        let mut r = report("x", Origin::Global, &[], &[]);
        shutdown(&mut r, &stopped(false, Some(host::Exit::Code(0))));
        assert!(
            r.warnings[0]
                .message
                .contains("without sending shutdown_ack")
        );
    }

    #[test]
    fn leftovers_are_warnings() {
        let mut r = report("x", Origin::Global, &[], &[]);
        let found = [Leftover {
            pid: 42,
            command: "sleep 300".into(),
        }];
        add_leftovers(&mut r, &found);
        assert!(
            r.warnings[0]
                .message
                .starts_with("left a process running after shutdown: pid 42 (sleep 300)"),
            "{r:?}"
        );
    }
}
