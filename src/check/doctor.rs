//! The checks behind `zot ext doctor`: static checks of one extension, a live conversation
//! run the way zot runs it, and the names extensions take from each other and from zot.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use super::handshake::{self, Handshake};
use super::prepare_hint;
use super::{Level, Problem};
use crate::agent::{self, AgentVersion, NoAgent};
use crate::catalog::manifest::Manifest;
use crate::catalog::paths::{Layout, Scope};
use crate::catalog::target::{self, Target};
use crate::host::{self, Leftover, Session, Stopped};
use crate::output::printable;
use crate::output::sh_quote;
use crate::protocol::zot::{self, Chosen, Fit, HostFacts};

/// Which zot the checks judge by, and why (`zot` in `zot ext doctor --json`).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct JudgedBy {
    /// The version given or reported (`None` when there was none).
    pub version: Option<String>,
    /// The facts used: `0.1.62` or `>0.1.62`.
    pub facts: &'static str,
    /// Where the version came from: `option`, `agent` or `default` (no version: the newest).
    pub from: &'static str,
    /// The line the text report prints.
    pub why: String,
    #[serde(skip)]
    pub host: &'static HostFacts,
}

impl JudgedBy {
    /// The facts for `--zot-version <version>`.
    pub(crate) fn option(version: &str) -> JudgedBy {
        let chosen = zot::facts_for(version);
        JudgedBy::chosen(chosen, version, "option", "--zot-version")
    }

    /// The facts for the version the agent reports, else the newest.
    pub(crate) fn agent(found: AgentVersion) -> JudgedBy {
        let sets_it = "--zot-version sets it";
        match found {
            AgentVersion::Reported { agent, version } => {
                let place = if std::env::var_os(agent::AGENT_VAR).is_some() {
                    format!("{} names", agent::AGENT_VAR)
                } else {
                    "on PATH".to_string()
                };
                let said = format!(
                    "the agent {place}, {}",
                    printable(&agent.display().to_string())
                );
                JudgedBy::chosen(zot::facts_for(&version), &version, "agent", &said)
            }
            AgentVersion::Silent { agent, why } => JudgedBy::newest(&format!(
                "the zot agent {} {why}; {sets_it}",
                printable(&agent.display().to_string())
            )),
            AgentVersion::Missing(NoAgent::NotFound) => {
                JudgedBy::newest(&format!("no zot agent found; {sets_it}"))
            }
            AgentVersion::Missing(NoAgent::BadVariable(why)) => {
                JudgedBy::newest(&format!("{why}; {sets_it}"))
            }
        }
    }

    /// Judged for `version`, which `given` gave.
    fn chosen(chosen: Chosen, version: &str, from: &'static str, given: &str) -> JudgedBy {
        let facts = chosen.facts;
        let shown = printable(version);
        let why = match chosen.fit {
            Fit::Known => format!("judged for zot {shown} ({given})"),
            Fit::OlderThanKnown => format!(
                "judged for zot {shown} as for {}, the oldest zot known ({given})",
                facts.label()
            ),
            Fit::Unversioned => format!(
                "judged for the newest zot known ({given} says {shown}, the version of a build without one)"
            ),
            Fit::NotAVersion => format!(
                "judged for the newest zot known ({given} says {shown}, which is not a version)"
            ),
        };
        JudgedBy {
            version: Some(version.to_string()),
            facts: facts.versions,
            from,
            why,
            host: facts,
        }
    }

    fn newest(reason: &str) -> JudgedBy {
        let facts = zot::newest();
        JudgedBy {
            version: None,
            facts: facts.versions,
            from: "default",
            why: format!("judged for the newest zot known ({reason})"),
            host: facts,
        }
    }
}

/// Lines of stderr shown for a failing extension.
const STDERR_LINES: usize = 20;

/// The working folder the live check tells the extension, how long it waits, and which zot
/// it judges by.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    pub timeout: Duration,
    pub cwd: PathBuf,
    pub facts: &'static HostFacts,
}

/// Overall verdict for one extension.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Status {
    #[default]
    Ok,
    Warning,
    Error,
}

/// A registered command.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Named {
    pub name: String,
    pub description: String,
}

/// A registered tool: `deferred` ones stay hidden until a tool result activates them,
/// `interactive` ones wait for the user (headless hosts refuse them).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Tool {
    pub name: String,
    pub description: String,
    pub deferred: bool,
    pub interactive: bool,
}

/// What the extension subscribed to.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct Subscriptions {
    pub events: Vec<String>,
    pub intercept: Vec<String>,
}

/// Everything doctor found about one extension (`zot ext doctor --json` prints a list).
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct Report {
    pub name: String,
    #[serde(serialize_with = "target::serialize_place")]
    pub scope: Option<Scope>,
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
    /// Checked a second time, alone, after a finding about timing beside other checks;
    /// this is the second check's report.
    pub rechecked_alone: bool,
    /// Why an enabled extension is not loaded (the text heading says).
    #[serde(skip)]
    pub not_loaded_because: String,
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
            not_loaded_because: if target.skipped {
                "linked: the zot judged by skips linked folders".into()
            } else {
                "shadowed: zot skips it for the project folder of the same folder name".into()
            },
            version: manifest.and_then(|m| m.version.clone()),
            name: target.name().to_string(),
            scope: target.scope,
            dir: target.dir.display().to_string(),
            ..Report::default()
        }
    }

    /// Whether an error or warning of it is about timing (see [`Problem::timed`]): checked
    /// beside others, the verdict may be the machine's load.
    pub(crate) fn judged_on_timing(&self) -> bool {
        self.errors.iter().chain(&self.warnings).any(|p| p.timed)
    }

    /// Adds a finding and sets the status from all of them.
    pub(crate) fn add(&mut self, problem: Problem) {
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
pub(crate) fn check(target: &Target, options: &Options) -> Report {
    let mut report = Report::new(target);
    if target.shadowed && !target.skipped {
        let project = Layout::new(PathBuf::new(), &options.cwd);
        report.not_loaded_because = format!(
            "shadowed by {}: zot skips it for the project folder of the same folder name",
            project.project.extension(&target.dir_name).display()
        );
    }
    let manifest = match &target.manifest {
        Ok(manifest) => manifest,
        Err(e) => {
            report.add(Problem::error(e.to_string(), e.fix()));
            return report;
        }
    };
    check_folder_name(&mut report, target, manifest);
    check_hidden(&mut report, target, manifest, &options.cwd);
    check_twins(&mut report, target, manifest);
    check_linked(&mut report, target, options.facts);
    for note in &manifest.notes {
        report.add(Problem::note(note.clone(), ""));
    }
    match super::launch(target, manifest) {
        Ok(launch) => {
            check_prepared(&mut report, target, manifest);
            live(&mut report, &launch, manifest, options);
            check_missing_on_stderr(&mut report, target, manifest);
        }
        Err(e) => report.add(Problem::error(e.message, e.fix)),
    }
    report
}

/// Dependencies a step installs (`node_modules/`) missing: a warning with the fix, before
/// the start shows what they break.
fn check_prepared(report: &mut Report, target: &Target, manifest: &Manifest) {
    if let Some((what, fix)) = prepare_hint::venv_bypassed(&target.dir, manifest) {
        report.add(Problem::warning(what, fix));
    }
    if let Some(what) = prepare_hint::missing_step(&target.dir, manifest) {
        let place = prepare_hint::place_of(target, manifest);
        report.add(Problem::warning(
            what,
            prepare_hint::fix_or_advice(&target.dir, manifest, place),
        ));
    }
}

/// A start that failed saying on stderr that a module is missing: its step has not run.
fn check_missing_on_stderr(report: &mut Report, target: &Target, manifest: &Manifest) {
    let Some(marker) = report
        .stderr
        .as_deref()
        .and_then(prepare_hint::stderr_says_missing)
    else {
        return;
    };
    // The venv that holds them is there, and another Python ran: checked already.
    if prepare_hint::venv_bypassed(&target.dir, manifest).is_some() {
        return;
    }
    let place = prepare_hint::place_of(target, manifest);
    report.add(Problem::error(
        format!(
            "its stderr says a dependency is missing ({marker}): its dependency install or build has not run"
        ),
        prepare_hint::fix_or_advice(&target.dir, manifest, place),
    ));
}

/// zot dedups by folder name but registers by manifest name; installs keep them equal. zot
/// loads such a folder all the same (`loadOne` reads the name from extension.json only), so
/// this is only a note.
fn check_folder_name(report: &mut Report, target: &Target, manifest: &Manifest) {
    if target.scope.is_some() && target.dir_name != manifest.name {
        report.add(Problem::note(
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

/// A global folder hidden by the project folder of the same folder name, whose manifest names
/// another extension: zot loads one folder per folder name, project first, so this extension
/// is not loaded at all (with the same name, the project copy stands in for it).
fn check_hidden(report: &mut Report, target: &Target, manifest: &Manifest, cwd: &std::path::Path) {
    if !target.shadowed || target.skipped || !manifest.enabled {
        return;
    }
    let project = Layout::new(PathBuf::new(), cwd);
    let hider = project.project.extension(&target.dir_name);
    let hider_name = crate::catalog::manifest::read(&hider).map(|m| m.name);
    if hider_name.as_deref().is_ok_and(|n| n == manifest.name) {
        return;
    }
    let what = match &hider_name {
        Ok(name) => format!("extension \"{name}\""),
        Err(_) => "a folder without a readable extension.json".to_string(),
    };
    report.add(Problem::warning(
        format!(
            "zot will not load \"{}\": the project folder {} ({what}) has the same folder name \"{}\", and zot loads one folder per folder name, the project's first",
            manifest.name,
            hider.display(),
            target.dir_name,
        ),
        format!(
            "rename this folder to \"{}\" (the name in its extension.json), or install it into the project",
            manifest.name
        ),
    ));
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
                sh_quote(&twin.dir.file_name().unwrap_or_default().to_string_lossy())
            ),
        ));
    }
}

/// A folder that is a link (`zot ext link` makes one) is skipped by a zot that does not
/// follow links, so its extension never starts there.
fn check_linked(report: &mut Report, target: &Target, facts: &HostFacts) {
    if target.link_target.is_none()
        || facts.discovery.follows_linked_folders
        || !target.enabled()
        || target.shadowed
    {
        return;
    }
    let source = std::fs::canonicalize(&target.dir).unwrap_or_else(|_| target.dir.clone());
    let newer: Vec<String> = zot::KNOWN
        .iter()
        .filter(|f| f.discovery.follows_linked_folders)
        .map(|f| f.label())
        .collect();
    let project = if target.scope == Some(Scope::Project) {
        " --project"
    } else {
        ""
    };
    report.add(Problem::error(
        format!(
            "the extension folder is a symbolic link (as zot ext link makes), and {} does not load linked extension folders: it skips this one",
            facts.label()
        ),
        format!(
            "install a copy instead: zot ext install --force{project} {}{}",
            sh_quote(&source.display().to_string()),
            if newer.is_empty() {
                String::new()
            } else {
                format!(", or use {}, which follows links", newer.join(" or "))
            }
        ),
    ));
}

fn live(report: &mut Report, launch: &host::Launch, manifest: &Manifest, options: &Options) {
    // Watching stdin tells an extension that exits on its own after `ready` (it leaves
    // `shutdown` unread) from one that exits on it, without waiting before asking it to stop.
    let mut session = match Session::start_watching_stdin(launch) {
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
    let handshake = handshake::handshake(
        &mut session,
        &manifest.name,
        &options.cwd,
        options.timeout,
        &|_| false,
    );
    absorb(report, &handshake);
    judge_by_host(report, options.facts);
    if !handshake.broken {
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
}

/// The judgments that depend on the zot version: names zot keeps for itself, events it
/// never sends, interception it ignores.
fn judge_by_host(report: &mut Report, facts: &HostFacts) {
    builtin_clashes(report, facts);
    subscription_problems(report, facts);
}

/// Commands and tools named like zot's own never reach the extension. Commands match
/// exactly: zot compares a typed `/word` with its own list before asking extensions.
fn builtin_clashes(report: &mut Report, facts: &HostFacts) {
    let mut found = Vec::new();
    for command in report
        .commands
        .iter()
        .filter(|c| facts.has_command(&c.name))
    {
        found.push(Problem::error(
            format!(
                "/{} is a built-in command of {}, so zot never calls this extension for it",
                command.name,
                facts.label()
            ),
            format!("rename the command, e.g. /{}-{}", report.name, command.name),
        ));
    }
    for command in report
        .commands
        .iter()
        .filter(|c| facts.picks_own_command(&c.name))
    {
        found.push(Problem::warning(
            format!(
                "/{} picked from zot's suggestion list runs {}'s own /{}; only typed in full does it reach this extension",
                command.name,
                facts.label(),
                command.name
            ),
            format!("rename the command, e.g. /{}-{}", report.name, command.name),
        ));
    }
    for tool in report.tools.iter().filter(|t| facts.has_tool(&t.name)) {
        found.push(Problem::error(
            format!(
                "{} is a built-in tool of {}, so the model never reaches this extension's tool",
                tool.name,
                facts.label()
            ),
            format!(
                "rename the tool, e.g. {}_{}",
                report.name.replace(['-', '.'], "_"),
                tool.name
            ),
        ));
    }
    for p in found {
        report.add(p);
    }
}

/// The labels of the other known versions for which `holds` is true, as ` (zot X does)`.
fn elsewhere(facts: &HostFacts, holds: impl Fn(&HostFacts) -> bool, verb: &str) -> String {
    let others: Vec<String> = zot::KNOWN
        .iter()
        .filter(|f| **f != facts && holds(f))
        .map(|f| f.label())
        .collect();
    if others.is_empty() {
        String::new()
    } else {
        format!(" ({} {verb})", others.join(" and "))
    }
}

/// Subscriptions to events this zot never sends, and intercepts it ignores.
fn subscription_problems(report: &mut Report, facts: &HostFacts) {
    let mut found = Vec::new();
    for event in report
        .subscriptions
        .events
        .iter()
        .filter(|e| !facts.sends(e))
    {
        let message = if zot::KNOWN.iter().any(|f| f.sends(event)) {
            format!(
                "subscribes to \"{event}\", an event {} never sends{}",
                facts.label(),
                elsewhere(facts, |f| f.sends(event), "does")
            )
        } else {
            format!("subscribes to \"{event}\", an event zot never sends")
        };
        found.push(Problem::warning(
            message,
            format!("use one of: {}", facts.events.join(", ")),
        ));
    }
    for event in report
        .subscriptions
        .intercept
        .iter()
        .filter(|e| !facts.can_intercept(e))
    {
        let (who, others) = if zot::KNOWN.iter().any(|f| f.can_intercept(event)) {
            (
                facts.label(),
                elsewhere(facts, |f| f.can_intercept(event), "can"),
            )
        } else {
            ("zot".to_string(), String::new())
        };
        found.push(Problem::warning(
            format!(
                "asks to intercept \"{event}\", which {who} cannot intercept{others}; the request is ignored"
            ),
            format!(
                "intercept only {}; list other events under \"events\" to observe them",
                facts.interceptable.join(", ")
            ),
        ));
    }
    for p in found {
        report.add(p);
    }
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
        } => Problem::warning(
            format!(
                "ignored shutdown: no shutdown_ack and still running after {grace}s, so it was stopped with SIGTERM{}; zot only asks at exit, so it works all session",
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

/// It exited (or closed stdout) on its own after `ready`, leaving `shutdown` unread; zot would
/// drop it mid-session.
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
pub(crate) fn add_leftovers(report: &mut Report, found: &[Leftover]) {
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
#[cfg(test)]
pub(crate) fn add_conflicts(reports: &mut [Report]) {
    let mut taken = TakenNames::default();
    for report in reports {
        taken.claim(report);
    }
}

/// The commands and tools registered so far, by the extensions loaded first: given the
/// reports in load order, [`TakenNames::claim`] marks each name an earlier one took.
#[derive(Debug, Default)]
pub(crate) struct TakenNames {
    commands: HashMap<String, (String, Option<Scope>)>,
    tools: HashMap<String, (String, Option<Scope>)>,
}

impl TakenNames {
    /// Takes `report`'s names, and adds a warning for each one an earlier report took.
    pub(crate) fn claim(&mut self, report: &mut Report) {
        if !report.loaded {
            return;
        }
        let me = (report.name.clone(), report.scope);
        // zot's command index is keyed by the exact name (`commandIndex`, manager.go).
        let commands = report.commands.iter();
        let tools = report.tools.iter();
        let found: Vec<Problem> = commands
            .filter_map(|c| take(&mut self.commands, "command /", &c.name, &me))
            .chain(tools.filter_map(|t| take(&mut self.tools, "tool ", &t.name, &me)))
            .collect();
        for problem in found {
            report.add(problem);
        }
    }
}

/// Takes `name` for `me` when it is free; a warning when another extension took it first.
fn take(
    taken: &mut HashMap<String, (String, Option<Scope>)>,
    what: &str,
    name: &str,
    me: &(String, Option<Scope>),
) -> Option<Problem> {
    match taken.get(name) {
        Some(owner) if owner.0 != me.0 => Some(clash(what, name, owner)),
        Some(_) => None,
        None => {
            taken.insert(name.to_owned(), me.clone());
            None
        }
    }
}

fn clash(what: &str, name: &str, (owner, scope): &(String, Option<Scope>)) -> Problem {
    Problem::warning(
        format!(
            "{what}{name} is also registered by {owner} ({scope}); zot starts both at once and keeps whichever registers it first, so one of the two is ignored",
            scope = target::place(*scope)
        ),
        format!(
            "rename it in one of the two, or disable one: zot ext disable {}",
            sh_quote(owner)
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(name: &str, scope: Option<Scope>, commands: &[&str], tools: &[&str]) -> Report {
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
            name: name.into(),
            scope,
            ..Report::default()
        }
    }

    #[test]
    fn the_first_loaded_keeps_a_name() {
        let mut reports = vec![
            report("a", Some(Scope::Project), &["go"], &["t"]),
            report("b", Some(Scope::Global), &["go", "Go", "own"], &["t", "u"]),
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
            messages[0].contains("command /go is also registered by a (project)"),
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
        let mut off = report("a", Some(Scope::Project), &["go"], &[]);
        off.loaded = false;
        let mut reports = vec![off, report("b", Some(Scope::Global), &["go"], &[])];
        add_conflicts(&mut reports);
        assert!(reports.iter().all(|r| r.warnings.is_empty()));
    }

    #[test]
    fn builtins_take_extension_names() {
        let mut r = report(
            "x",
            Some(Scope::Global),
            &["help", "mine"],
            &["bash", "fine"],
        );
        builtin_clashes(&mut r, zot::newest());
        assert_eq!(r.errors.len(), 2, "{r:?}");
        assert_eq!(
            r.errors[0].message,
            "/help is a built-in command of zot >0.1.62, so zot never calls this extension for it"
        );
        assert!(r.errors[1].message.starts_with("bash is a built-in tool"));
        assert_eq!(r.status, Status::Error);
    }

    #[test]
    fn builtin_commands_clash_only_when_spelled_exactly() {
        let names = [
            "Help", "MODEL", "new", "cd", "swarm", "matrix", "settings", "yolo",
        ];
        let mut r = report("x", Some(Scope::Global), &names, &[]);
        builtin_clashes(&mut r, &zot::ZOT_0_1_62);
        let messages: Vec<&str> = r.errors.iter().map(|p| p.message.as_str()).collect();
        assert_eq!(messages.len(), 1, "{messages:?}");
        assert!(messages[0].starts_with("/yolo is a built-in command of zot 0.1.62"));
        // `/settings` reaches the extension only when typed in full.
        let warnings: Vec<&str> = r.warnings.iter().map(|p| p.message.as_str()).collect();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].starts_with(
            "/settings picked from zot's suggestion list runs zot 0.1.62's own /settings"
        ));
    }

    #[test]
    fn glob_is_taken_only_by_newer_zot() {
        let mut old = report("x", Some(Scope::Global), &[], &["glob"]);
        builtin_clashes(&mut old, &zot::ZOT_0_1_62);
        assert!(old.errors.is_empty(), "{old:?}");
        let mut new = report("x", Some(Scope::Global), &[], &["glob"]);
        builtin_clashes(&mut new, &zot::NEWER);
        assert_eq!(new.errors.len(), 1, "{new:?}");
    }

    fn subscribed(events: &[&str], intercept: &[&str]) -> Report {
        let mut r = report("x", Some(Scope::Global), &[], &[]);
        r.subscriptions = Subscriptions {
            events: events
                .iter()
                .map(std::string::ToString::to_string)
                .collect(),
            intercept: intercept
                .iter()
                .map(std::string::ToString::to_string)
                .collect(),
        };
        r
    }

    fn warnings_by(facts: &HostFacts, events: &[&str], intercept: &[&str]) -> Vec<String> {
        let mut r = subscribed(events, intercept);
        subscription_problems(&mut r, facts);
        r.warnings.into_iter().map(|p| p.message).collect()
    }

    #[test]
    fn subscriptions_are_judged_by_the_version() {
        let events = ["turn_start", "session_end", "bogus"];
        let intercept = ["tool_call", "before_agent_start", "session_start"];
        assert_eq!(
            warnings_by(&zot::ZOT_0_1_62, &events, &intercept),
            [
                "subscribes to \"session_end\", an event zot 0.1.62 never sends (zot >0.1.62 does)",
                "subscribes to \"bogus\", an event zot never sends",
                "asks to intercept \"before_agent_start\", which zot 0.1.62 cannot intercept (zot >0.1.62 can); the request is ignored",
                "asks to intercept \"session_start\", which zot cannot intercept; the request is ignored",
            ]
        );
        assert_eq!(
            warnings_by(&zot::NEWER, &events, &intercept),
            [
                "subscribes to \"bogus\", an event zot never sends",
                "asks to intercept \"session_start\", which zot cannot intercept; the request is ignored",
            ]
        );
    }

    #[test]
    fn notes_leave_the_status_alone() {
        let mut r = report("x", Some(Scope::Global), &[], &[]);
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
        let mut r = report("x", Some(Scope::Global), &[], &[]);
        shutdown(&mut r, &stopped(true, Some(host::Exit::Code(0))));
        assert_eq!(r.errors.len(), 1, "{r:?}");
        assert!(r.warnings.is_empty(), "{r:?}");
        assert_eq!(
            r.errors[0].message,
            "exited (exit status 0) right after ready, before zot asked it to stop; zot would lose its commands and tools"
        );
        let mut r = report("x", Some(Scope::Global), &[], &[]);
        shutdown(&mut r, &stopped(false, Some(host::Exit::Code(0))));
        assert!(
            r.warnings[0]
                .message
                .contains("without sending shutdown_ack")
        );
    }

    #[test]
    fn leftovers_are_warnings() {
        let mut r = report("x", Some(Scope::Global), &[], &[]);
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
