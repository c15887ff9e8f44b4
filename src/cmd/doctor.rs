//! `zot ext doctor`: check extensions statically and live, a few at a time, then across each
//! other, judged by the facts of one zot version (`--zot-version`, else the agent's own).
//! Text reports stream: each extension's block is printed on stdout as soon as it and every
//! block before it are known ([`live`]), with a live line on a terminal stderr meanwhile.

mod live;

use std::fmt::Write as _;
use std::io::{self, IsTerminal};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};

use anyhow::{Result, bail};
use serde::Serialize;

use super::{Context, Run};
use crate::agent;
use crate::catalog::target::Target;
use crate::check::Problem;
use crate::check::doctor::{self, JudgedBy, Options, Report, Status, TakenNames};
use crate::cli::DoctorArgs;
use crate::host::{self, Leftover};
use crate::output::{BAD, DIM, GOOD, Output, WARN, clean};
use crate::project;
use crate::protocol::zot::Discovery;
use live::{Board, Event};

/// Counts of extensions by verdict.
#[derive(Debug, Default, Serialize)]
struct Summary {
    checked: usize,
    ok: usize,
    /// Counts of extensions (`with_`: `warnings` and `errors` are lists of findings).
    #[serde(rename = "with_warnings")]
    warnings: usize,
    #[serde(rename = "with_errors")]
    errors: usize,
    /// Extensions checked a second time alone (see [`check_all`]).
    checked_again_alone: usize,
}

/// `zot ext doctor --json` output.
#[derive(Debug, Serialize)]
struct Doctor<'a> {
    extensions: &'a [Report],
    summary: &'a Summary,
    zot: &'a JudgedBy,
}

impl Run for DoctorArgs {
    fn run(&self, ctx: &Context) -> Result<()> {
        // Before becoming a subreaper: whatever `zot --version` leaves behind is not an
        // extension's.
        let judged = self.judged_by();
        let targets = self.targets(ctx, judged.host.discovery)?;
        let subfolder = project::subfolder_note(&ctx.layout, self.scope.scope());
        if let Some(note) = &subfolder {
            ctx.out.note(note);
        } else if targets.is_empty() {
            ctx.out
                .note("no extensions installed; create one with `zot ext new <name>`");
        }
        let cwd = std::env::current_dir()?;
        let options = Options {
            timeout: self.timeout,
            cwd,
            facts: judged.host,
        };
        host::become_subreaper();
        let jobs = self.jobs.map_or_else(default_jobs, |n| n as usize);
        let mut taken = TakenNames::default();
        let mut failed = None;
        let mut reports = check_all(&targets, &options, jobs, &ctx.out, |report| {
            taken.claim(report);
            if !ctx.out.json && failed.is_none() {
                failed = print_block(&ctx.out, report).err();
            }
        });
        if let Some(e) = failed {
            return Err(e.into());
        }
        let owner = adopted_leftovers(ctx, &mut reports, host::end_adopted());
        let summary = summarize(&reports);
        if ctx.out.json {
            ctx.out.json(&Doctor {
                extensions: &reports,
                summary: &summary,
                zot: &judged,
            })?;
        } else {
            if let Some((report, before)) = owner.map(|(i, before)| (&reports[i], before)) {
                ctx.out.print(&render_late(report, before, &ctx.out))?;
            }
            print_summary(&ctx.out, &summary, &judged)?;
        }
        verdict(&summary, self.strict, FixesAt::of(&ctx.out))
    }
}

impl DoctorArgs {
    /// The zot version to judge by: --zot-version, else the agent's, else the newest known.
    fn judged_by(&self) -> JudgedBy {
        match &self.zot_version {
            Some(version) => JudgedBy::option(version),
            None => JudgedBy::agent(agent::agent_version()),
        }
    }

    /// The named extensions (each once), or every installed one in load order.
    fn targets(&self, ctx: &Context, rules: Discovery) -> Result<Vec<Target>> {
        if self.names.is_empty() {
            return Target::all(&ctx.layout, &self.scope.scopes(), rules);
        }
        let mut targets: Vec<Target> = Vec::new();
        for name in &self.names {
            let target = Target::find_as(&ctx.layout, name, self.scope.scope(), rules)?;
            if !targets.iter().any(|t| t.dir == target.dir) {
                targets.push(target);
            }
        }
        Ok(targets)
    }
}

/// Extensions checked at once unless --jobs says otherwise: as many as the open-file limit
/// leaves room for (zot starts every extension at once, and most spend their start waiting),
/// from 2 to [`MAX_JOBS`]. Each running extension holds [`FILES_PER_EXTENSION`] descriptors
/// at most (its pipes, a pidfd, and the pipes of a start in flight).
fn default_jobs() -> usize {
    let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile)
        .current
        .unwrap_or(u64::MAX);
    jobs_for_open_files(limit)
}

/// Descriptors kept for zot ext itself (the standard streams, the lock, files it reads).
const RESERVED_FILES: u64 = 64;

/// Descriptors one running extension may hold at once.
const FILES_PER_EXTENSION: u64 = 12;

/// The largest default number of extensions checked at once (--jobs allows as many).
const MAX_JOBS: u64 = 1024;

fn jobs_for_open_files(limit: u64) -> usize {
    let room = limit.saturating_sub(RESERVED_FILES) / FILES_PER_EXTENSION;
    usize::try_from(room.clamp(2, MAX_JOBS)).unwrap_or(2)
}

/// `jobs` workers take the targets in order, each starting its next extension only when the
/// last one is done (so every timeout runs from an actual start); `show` gets the reports in
/// the order of `targets`, each as soon as it and all before it are done, and they are
/// returned in that order. Meanwhile a terminal stderr shows what is running.
///
/// A check that ran beside others and found something about timing (a hello after a
/// second, a late registration) is then run again alone, one at a time, and that check's
/// report counts, with a note of what the first said: how many extensions start at once,
/// and the machine's load, must not change a verdict.
fn check_all(
    targets: &[Target],
    options: &Options,
    jobs: usize,
    out: &Output,
    show: impl FnMut(&mut Report),
) -> Vec<Report> {
    let mut board = Board::new(targets, out, show);
    let all: Vec<usize> = (0..targets.len()).collect();
    check_some(&mut board, &all, targets, options, jobs);
    let held = board.held();
    check_some(&mut board, &held, targets, options, 1);
    board.finish()
}

/// Checks the targets at `indices` with `jobs` workers, telling `board` as they go.
fn check_some<F: FnMut(&mut Report)>(
    board: &mut Board<'_, F>,
    indices: &[usize],
    targets: &[Target],
    options: &Options,
    jobs: usize,
) {
    if indices.is_empty() {
        return;
    }
    let (tell, events) = mpsc::channel();
    let check = |index: usize, tell: Sender<Event>| {
        let _ = tell.send(Event::Started(index));
        let report = doctor::check(&targets[index], options);
        let _ = tell.send(Event::Done(index, Box::new(report)));
    };
    let threads = crate::threads::pool(jobs.clamp(1, indices.len()), "doctor");
    let Some(threads) = threads else {
        // No thread to check on: one at a time, here.
        for &index in indices {
            check(index, tell.clone());
            while let Ok(event) = events.try_recv() {
                board.record(event);
            }
            board.draw();
        }
        return;
    };
    threads.in_place_scope_fifo(|scope| {
        for &index in indices {
            let tell = tell.clone();
            scope.spawn_fifo(move |_| check(index, tell));
        }
        drop(tell);
        loop {
            match events.recv_timeout(live::TICK) {
                Ok(event) => board.record(event),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            board.draw();
        }
    });
}

/// Processes zot adopted whose extension is unknown (their parent exited before they were
/// seen): the one extension started owns them, else they are only named on stderr. Returns
/// the owner's index and its count of warnings before, when it got some.
fn adopted_leftovers(
    ctx: &Context,
    reports: &mut [Report],
    found: Vec<Leftover>,
) -> Option<(usize, usize)> {
    let mut started = reports
        .iter_mut()
        .enumerate()
        .filter(|(_, r)| r.pid.is_some());
    if let (Some((index, only)), None) = (started.next(), started.next()) {
        let before = only.warnings.len();
        doctor::add_leftovers(only, &found);
        return (only.warnings.len() > before).then_some((index, before));
    }
    for leftover in found {
        ctx.out.warn(&format!(
            "an extension left a process running after shutdown: pid {} ({}); zot ext ended it",
            leftover.pid, leftover.command
        ));
    }
    None
}

fn summarize(reports: &[Report]) -> Summary {
    let count = |status| reports.iter().filter(|r| r.status == status).count();
    Summary {
        checked: reports.len(),
        ok: count(Status::Ok),
        warnings: count(Status::Warning),
        errors: count(Status::Error),
        checked_again_alone: reports.iter().filter(|r| r.rechecked_alone).count(),
    }
}

/// Where the report that holds the fixes went, for the last line of a failed run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FixesAt {
    /// Text on a terminal, above the error.
    Above,
    /// Text on stdout, redirected.
    Stdout,
    /// `--json` on stdout.
    Json,
}

impl FixesAt {
    fn of(out: &Output) -> FixesAt {
        if out.json {
            FixesAt::Json
        } else if io::stdout().is_terminal() {
            FixesAt::Above
        } else {
            FixesAt::Stdout
        }
    }

    fn phrase(self) -> &'static str {
        match self {
            FixesAt::Above => "each error above is followed by its fix",
            FixesAt::Stdout => "the report on stdout gives each error's fix",
            FixesAt::Json => "each extension's \"errors\" in the JSON on stdout give the fixes",
        }
    }
}

fn verdict(summary: &Summary, strict: bool, fixes: FixesAt) -> Result<()> {
    if summary.errors > 0 {
        bail!(
            "{} of {} extensions failed the checks; {}",
            summary.errors,
            summary.checked,
            fixes.phrase()
        );
    }
    if strict && summary.warnings > 0 {
        bail!(
            "{} of {} extensions have warnings (--strict); {}",
            summary.warnings,
            summary.checked,
            fixes.phrase().replace("error", "warning")
        );
    }
    Ok(())
}

/// One extension's block, unless `--quiet` leaves out the ones that are ok.
fn print_block(out: &Output, report: &Report) -> io::Result<()> {
    if out.quiet && report.status == Status::Ok {
        return Ok(());
    }
    out.print(&render(report, out))
}

/// The warnings an extension got after its block was printed (processes adopted once every
/// check was done), under its heading again.
fn render_late(r: &Report, before: usize, out: &Output) -> String {
    let mut text = format!("{}  {}\n", heading(r), status_label(r.status, out));
    for problem in &r.warnings[before..] {
        text += &problem_lines(&out.paint(WARN, "warning:"), problem);
    }
    text
}

fn print_summary(out: &Output, summary: &Summary, judged: &JudgedBy) -> io::Result<()> {
    if !out.quiet && summary.checked > 0 {
        let again = match summary.checked_again_alone {
            0 => String::new(),
            n => format!(
                "; {n} checked again alone, as {} slow beside the others",
                if n == 1 { "it was" } else { "they were" }
            ),
        };
        out.print(&format!(
            "\n{} checked: {} ok, {} with warnings, {} with errors{again}\n{}\n",
            plural(summary.checked, "extension"),
            summary.ok,
            summary.warnings,
            summary.errors,
            clean(&judged.why)
        ))?;
    }
    Ok(())
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// The text block for one extension.
fn render(r: &Report, out: &Output) -> String {
    let mut text = format!("{}  {}\n", heading(r), status_label(r.status, out));
    if let Some(timing) = timing(r) {
        let _ = writeln!(text, "  {}", out.paint(DIM, &timing));
    }
    if r.hello_ms.is_some() {
        text += &list_line(
            "commands",
            r.commands.iter().map(|c| format!("/{}", c.name)),
        );
        text += &list_line("tools", r.tools.iter().map(tool_label));
        if !r.subscriptions.events.is_empty() || !r.subscriptions.intercept.is_empty() {
            text += &list_line("events", r.subscriptions.events.iter().cloned());
            text += &list_line("intercepts", r.subscriptions.intercept.iter().cloned());
        }
    }
    for problem in &r.errors {
        text += &problem_lines(&out.paint(BAD, "error:"), problem);
    }
    for problem in &r.warnings {
        text += &problem_lines(&out.paint(WARN, "warning:"), problem);
    }
    for problem in &r.notes {
        text += &problem_lines(&out.paint(DIM, "note:"), problem);
    }
    if let Some(stderr) = &r.stderr {
        text += "  stderr (last lines):\n";
        for line in stderr.lines() {
            let _ = writeln!(text, "    | {}", clean(line));
        }
    }
    text
}

fn heading(r: &Report) -> String {
    let mut notes = vec![crate::catalog::target::place(r.scope).to_string()];
    if r.enabled == Some(false) {
        notes.push("disabled".into());
    }
    if r.enabled == Some(true) && !r.loaded {
        notes.push(r.not_loaded_because.clone());
    }
    clean(&format!("{} ({})", r.name, notes.join(", ")))
}

fn status_label(status: Status, out: &Output) -> String {
    match status {
        Status::Ok => out.paint(GOOD, "ok"),
        Status::Warning => out.paint(WARN, "warning"),
        Status::Error => out.paint(BAD, "error"),
    }
}

fn timing(r: &Report) -> Option<String> {
    let hello = r.hello_ms?;
    let ready = r.ready_ms.map_or_else(
        || "no ready".to_string(),
        |ms| format!("ready after {ms} ms"),
    );
    let stopped = r
        .shutdown_ms
        .map(|ms| format!(", stopped in {ms} ms"))
        .unwrap_or_default();
    Some(format!("hello after {hello} ms, {ready}{stopped}"))
}

/// A tool's name, marked when it is deferred or interactive.
fn tool_label(tool: &doctor::Tool) -> String {
    let marks: Vec<&str> = [
        (tool.deferred, "deferred"),
        (tool.interactive, "interactive"),
    ]
    .into_iter()
    .filter_map(|(set, mark)| set.then_some(mark))
    .collect();
    if marks.is_empty() {
        tool.name.clone()
    } else {
        format!("{} ({})", tool.name, marks.join(", "))
    }
}

fn list_line(label: &str, items: impl Iterator<Item = String>) -> String {
    let items: Vec<String> = items.collect();
    let shown = if items.is_empty() {
        "none".to_string()
    } else {
        items.join(", ")
    };
    format!("  {label}: {}\n", clean(&shown))
}

fn problem_lines(label: &str, problem: &Problem) -> String {
    let mut text = format!("  {label} {}\n", clean(&problem.message));
    if let Some(fix) = &problem.fix {
        let _ = writeln!(text, "    fix: {}", clean(fix));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::paths::Scope;
    use crate::check::doctor::Subscriptions;

    fn plain() -> Output {
        Output::plain()
    }

    fn report() -> Report {
        Report {
            name: "clock".into(),
            scope: Some(Scope::Global),
            dir: "/x/clock".into(),
            status: Status::Warning,
            enabled: Some(true),
            loaded: true,
            version: None,
            pid: Some(1),
            commands: vec![doctor::Named {
                name: "clock".into(),
                description: String::new(),
            }],
            tools: Vec::new(),
            subscriptions: Subscriptions::default(),
            hello_ms: Some(30),
            ready_ms: None,
            shutdown_ms: Some(5),
            errors: Vec::new(),
            warnings: vec![Problem::warning("did not send ready", "send ready")],
            notes: Vec::new(),
            stderr: None,
            rechecked_alone: false,
            not_loaded_because: String::new(),
        }
    }

    #[test]
    fn renders_a_readable_block() {
        assert_eq!(
            render(&report(), &plain()),
            "clock (global)  warning\n  hello after 30 ms, no ready, stopped in 5 ms\n  \
             commands: /clock\n  tools: none\n  warning: did not send ready\n    fix: send ready\n"
        );
    }

    #[test]
    fn tools_and_notes_are_shown() {
        let mut r = report();
        let tool = |name: &str, deferred, interactive| doctor::Tool {
            name: name.into(),
            description: String::new(),
            deferred,
            interactive,
        };
        r.tools = vec![
            tool("plain", false, false),
            tool("later", true, false),
            tool("ask", false, true),
        ];
        r.warnings.clear();
        r.notes = vec![Problem::note("sent a frame of type \"x\"", "")];
        let text = render(&r, &plain());
        assert!(
            text.contains("  tools: plain, later (deferred), ask (interactive)\n"),
            "{text}"
        );
        assert!(
            text.ends_with("  note: sent a frame of type \"x\"\n"),
            "{text}"
        );
    }

    #[test]
    fn the_open_file_limit_bounds_how_many_run_at_once() {
        assert!(default_jobs() >= 2);
        assert_eq!(jobs_for_open_files(1024), 80);
        assert_eq!(jobs_for_open_files(20), 2);
        assert_eq!(jobs_for_open_files(u64::MAX), 1024);
    }

    #[test]
    fn exit_rules() {
        let mut s = Summary {
            checked: 2,
            ok: 1,
            warnings: 1,
            errors: 0,
            checked_again_alone: 0,
        };
        assert!(verdict(&s, false, FixesAt::Above).is_ok());
        assert!(verdict(&s, true, FixesAt::Above).is_err());
        s.errors = 1;
        let err = verdict(&s, false, FixesAt::Above).unwrap_err().to_string();
        assert!(err.starts_with("1 of 2 extensions failed"), "{err}");
        let err = verdict(&s, false, FixesAt::Json).unwrap_err().to_string();
        assert!(!err.contains("above"), "{err}");
        assert!(err.contains("\"errors\""), "{err}");
    }
}
