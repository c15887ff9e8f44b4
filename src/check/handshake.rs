//! The start of a conversation as zot runs it: `hello`, `hello_ack`, then registrations until
//! `ready`, timed the way zot 0.1.62 times them (`internal/agent/extensions/manager.go`), so
//! a registration zot would miss is named. Every deviation from the protocol is recorded as a
//! [`Problem`] saying how to fix it.

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::Problem;
use crate::host::{Incoming, Session};
use crate::protocol::{
    self, DecodeError, FromExt, FromHost, Hello, HelloAck, Notify, RegisterCommand, RegisterTool,
    Subscribe, zot,
};

/// Without `ready`, zot treats an extension as ready after this much silence on its stdout
/// and builds the agent's tools then; registrations after such a pause come too late.
/// (`readyIdleWindow`; `assumeReadyAfterIdle` looks every 250 ms, counting from hello, whether
/// a line came since its last look, and declares the extension ready at the first look that
/// finds none. Every line counts, even one that is not JSON: `readLoop` stamps
/// `lastFrameTime` before decoding.)
pub(crate) const HOST_READY_IDLE: Duration = zot::TIMING.ready_idle;

/// zot's startup waits at most this long for `ready` (`WaitForReady(3 * time.Second)` in
/// `cli.go` and `rpc.go`), even from an extension that keeps writing.
pub(crate) const HOST_READY_GRACE: Duration = zot::TIMING.ready_grace;

/// zot's startup blocks until every extension has said hello (`spawn` reads the first line
/// with no time limit), so a hello slower than this delays zot noticeably.
pub(crate) const SLOW_HELLO: Duration = Duration::from_secs(1);

/// Once zot would have stopped waiting, doctor keeps listening until `ready`, or until this
/// much silence: long enough to catch registrations held back by a slow setup step (a
/// network call, a cold import), which zot would miss, yet short enough that an extension
/// that never sends `ready` (which zot allows) costs doctor only this much. Never beyond
/// `--timeout`.
pub(crate) const LATE_QUIET: Duration = Duration::from_secs(2);

/// ... and at most this long after zot stopped waiting, so an extension that writes without
/// pause and never sends `ready` does not keep doctor until the timeout.
pub(crate) const LATE_LIMIT: Duration = Duration::from_secs(5);

/// More lines than this before `ready` is a flood.
pub(crate) const MAX_LINES_BEFORE_READY: usize = 1000;

/// Frame types newer zot versions understand beyond the ones this version decodes.
const NEWER_FRAMES: &[&str] = &[
    "call_tool",
    "call_tool_cancel",
    "clear_notes",
    "submit",
    "submit_slash",
];

const NOTIFY_LEVELS: &[&str] = &["info", "success", "warn", "error"];

/// The `hello_ack` `zot ext` sends: its own version, no provider or model, the working
/// folder `cwd`, and the extension's folder `dir` as both its folder and its data folder.
fn ack(cwd: &Path, dir: &Path) -> FromHost {
    let dir = dir.display().to_string();
    FromHost::HelloAck(HelloAck {
        protocol_version: protocol::PROTOCOL_VERSION,
        zot_version: env!("CARGO_PKG_VERSION").to_string(),
        provider: "zot-ext".into(),
        model: "none".into(),
        cwd: cwd.display().to_string(),
        extension_dir: Some(dir.clone()),
        data_dir: Some(dir),
    })
}

/// What the extension said and did up to `ready`.
#[derive(Debug, Default)]
pub(crate) struct Handshake {
    pub hello: Option<Hello>,
    pub commands: Vec<RegisterCommand>,
    pub tools: Vec<RegisterTool>,
    pub events: Vec<String>,
    pub intercept: Vec<String>,
    pub hello_after: Option<Duration>,
    pub ready_after: Option<Duration>,
    pub problems: Vec<Problem>,
    /// A fatal problem ended the conversation; the extension cannot be talked to further.
    pub broken: bool,
    /// Index in `problems` of the first malformed line, and how many more followed.
    malformed: Option<(usize, usize)>,
    /// When zot would stop waiting for registrations, replayed line by line.
    wait: HostWait,
}

/// zot's wait for registrations after hello, replayed from the times lines came (all times
/// from the start of the process): `assumeReadyAfterIdle` looks every [`HOST_READY_IDLE`]
/// from hello and ends the wait at the first look that finds no line since the one before;
/// `WaitForReady` ends it [`HOST_READY_GRACE`] after hello in any case. `ready` ends it too.
/// (Lines written before `hello_ack` arrived may be read before the watchdog takes its first
/// reading, and then count as old at its first look; zot may then stop at the first look
/// where this replay waits for the second. doctor gives the extension the benefit of that
/// race.)
#[derive(Debug, Default, Clone, PartialEq)]
struct HostWait {
    hello: Duration,
    /// Looks taken so far; the next is at `hello + (looks + 1) × HOST_READY_IDLE`.
    looks: u32,
    /// A line came since the last look.
    fresh: bool,
    /// The last line came at this moment.
    last: Duration,
    /// zot stopped waiting at this moment, and whether its grace ran out (rather than a look
    /// finding silence).
    moved_on: Option<(Duration, bool)>,
}

impl HostWait {
    fn new(hello: Duration) -> HostWait {
        HostWait {
            hello,
            last: hello,
            ..HostWait::default()
        }
    }

    fn next_look(&self) -> Duration {
        self.hello + HOST_READY_IDLE * (self.looks + 1)
    }

    /// When zot decides next whether to stop waiting.
    fn next_decision(&self) -> Duration {
        self.next_look().min(self.hello + HOST_READY_GRACE)
    }

    /// Replays zot's decisions due before `now`.
    fn advance(&mut self, now: Duration) {
        while self.moved_on.is_none() && self.next_decision() < now {
            let grace = self.hello + HOST_READY_GRACE;
            if grace < self.next_look() {
                self.moved_on = Some((grace, true));
            } else if self.fresh {
                self.fresh = false;
                self.looks += 1;
            } else {
                self.moved_on = Some((self.next_look(), false));
            }
        }
    }

    /// A line came at `at`.
    fn line(&mut self, at: Duration) {
        self.advance(at);
        self.fresh = true;
        self.last = at;
    }

    /// When zot stopped waiting and why, e.g. "500 ms after hello (at the first 250 ms
    /// without a line)".
    fn moved_on_text(&self) -> Option<String> {
        let (at, by_grace) = self.moved_on?;
        let why = if by_grace {
            format!("at its limit of {} s", HOST_READY_GRACE.as_secs())
        } else {
            format!(
                "at the first {} ms without a line",
                HOST_READY_IDLE.as_millis()
            )
        };
        Some(format!(
            "{} after hello ({why})",
            tenths(at.saturating_sub(self.hello))
        ))
    }
}

/// Runs the handshake on a freshly started session: `hello` within `timeout` of the start,
/// `hello_ack` back, then registrations until `ready`; without it, until [`LATE_QUIET`] passes
/// without a line once zot would have stopped waiting. Never beyond `timeout` from the start.
/// Once `enough` holds and zot would have stopped waiting (see [`HOST_READY_IDLE`]),
/// registration ends there, quietly.
pub(crate) fn handshake(
    session: &mut Session,
    name: &str,
    cwd: &Path,
    timeout: Duration,
    enough: &dyn Fn(&Handshake) -> bool,
) -> Handshake {
    let mut h = Handshake::default();
    let deadline = session.started() + timeout;
    if let Err(problem) = h.await_hello(session, name, deadline, timeout) {
        h.fatal(problem);
        return h;
    }
    let _ = session.send(&ack(cwd, &session.launch.dir));
    h.collect(session, deadline, timeout, enough);
    h.count_malformed();
    h
}

fn secs(d: Duration) -> String {
    format!("{}s", d.as_secs_f64())
}

/// A measured time: "250 ms" under a second, else to a tenth of a second: "1.5 s".
fn tenths(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        format!("{} ms", d.as_millis())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

fn hello_fix(name: &str) -> String {
    format!(
        "write {{\"type\":\"hello\",\"name\":\"{name}\",\"version\":\"1.0.0\"}} as the first line on stdout and flush it"
    )
}

fn excerpt(line: &str) -> String {
    let short: String = line.chars().take(80).collect();
    if short.len() < line.len() {
        format!("{short:?}...")
    } else {
        format!("{short:?}")
    }
}

/// Why the conversation ended early: the exit status, or stdout closed without an exit.
fn ended(session: &Session, when: &str) -> Problem {
    let fix = format!(
        "see its stderr; to reproduce, run it by hand: cd {} && {}",
        crate::output::sh_quote(&session.launch.dir.display().to_string()),
        session.launch.shell_line()
    );
    match session.wait_exit(Instant::now() + Duration::from_secs(1)) {
        Some(exit) => Problem::error(format!("exited with {exit} {when}"), fix),
        None => Problem::error(format!("closed stdout {when} but kept running"), fix),
    }
}

fn too_long() -> Problem {
    Problem::error(
        format!(
            "wrote a line longer than {} MiB on stdout; zot stops reading there and drops the extension",
            protocol::MAX_LINE / (1024 * 1024)
        ),
        "keep frames small and end each with a newline; send bulk data another way",
    )
}

impl Handshake {
    fn fatal(&mut self, problem: Problem) {
        self.problems.push(problem);
        self.broken = true;
    }

    fn await_hello(
        &mut self,
        session: &mut Session,
        name: &str,
        deadline: Instant,
        timeout: Duration,
    ) -> Result<(), Problem> {
        let kind = match session.recv(deadline) {
            Incoming::Frame {
                frame: FromExt::Hello(hello),
                ..
            } => {
                let after = session.last_line_after();
                self.hello_after = Some(after);
                self.wait = HostWait::new(after);
                // `spawn` refuses a hello without a name: "first frame must be hello".
                if hello.name.is_empty() {
                    return Err(Problem::error(
                        "hello has an empty name, which zot refuses: it does not load the extension",
                        hello_fix(name),
                    ));
                }
                self.check_hello_name(&hello, name);
                self.check_hello_time(after);
                self.hello = Some(hello);
                return Ok(());
            }
            Incoming::Frame { raw, .. } => raw["type"].as_str().unwrap_or_default().to_string(),
            Incoming::Unknown { kind, .. } => kind,
            Incoming::Malformed { line, error } => {
                return Err(first_line_problem(&line, &error, name));
            }
            Incoming::TooLong => return Err(too_long()),
            Incoming::Closed => return Err(ended(session, "before sending hello")),
            Incoming::Timeout => {
                return Err(Problem::error(
                    format!("did not send hello within {}", secs(timeout)),
                    format!(
                        "{}; output to a pipe is buffered (Python: flush=True or sys.stdout.flush())",
                        hello_fix(name)
                    ),
                ));
            }
        };
        Err(Problem::error(
            format!("the first frame is {kind}, not hello"),
            hello_fix(name),
        ))
    }

    /// `spawn`: "Trust the manifest's name; ignore mismatch from the hello."
    fn check_hello_name(&mut self, hello: &Hello, name: &str) {
        if hello.name != name {
            self.problems.push(Problem::warning(
                format!(
                    "hello says the name is \"{}\" but extension.json says \"{name}\"; zot goes by extension.json and ignores the name in hello",
                    hello.name
                ),
                format!(
                    "send \"name\":\"{name}\" in hello, or rename the extension in extension.json"
                ),
            ));
        }
    }

    /// zot's startup (`Discover`) waits for every extension's hello before anything else.
    fn check_hello_time(&mut self, after: Duration) {
        if after > SLOW_HELLO {
            self.problems.push(Problem::warning(
                format!(
                    "said hello {} after it was started; zot's startup waits for every extension's hello, so zot would start that much later",
                    tenths(after)
                ),
                "send hello first and do slow setup after ready; run a program built ahead of time (go build, tsc, cargo build) instead of compiling on every start with go run or npx tsx",
            ).about_timing());
        }
    }

    fn collect(
        &mut self,
        session: &mut Session,
        deadline: Instant,
        timeout: Duration,
        enough: &dyn Fn(&Handshake) -> bool,
    ) {
        loop {
            if session.lines_read() > MAX_LINES_BEFORE_READY {
                return self.fatal(Problem::error(
                    format!(
                        "flooded stdout: more than {MAX_LINES_BEFORE_READY} lines before ready"
                    ),
                    "send hello, the register_* frames and ready, then only answers; log to stderr",
                ));
            }
            if self.wait.moved_on.is_some() && enough(self) {
                return;
            }
            let incoming = session.recv(self.wake_at(session, deadline));
            if matches!(
                incoming,
                Incoming::Frame { .. } | Incoming::Unknown { .. } | Incoming::Malformed { .. }
            ) {
                self.wait.line(session.last_line_after());
            }
            match incoming {
                Incoming::Frame {
                    frame: FromExt::Ready,
                    ..
                } => {
                    self.ready_after = Some(session.last_line_after());
                    return self.check_ready_time();
                }
                Incoming::TooLong => return self.fatal(too_long()),
                Incoming::Closed => {
                    return self.fatal(ended(session, "after hello, before ready"));
                }
                Incoming::Timeout => {
                    let now = Instant::now();
                    self.wait.advance(now.duration_since(session.started()));
                    let heard_enough = self.stop_listening_at(session).is_some_and(|at| now >= at);
                    if now >= deadline || heard_enough {
                        if !(self.wait.moved_on.is_some() && enough(self)) {
                            self.no_ready(timeout);
                        }
                        return;
                    }
                }
                Incoming::Frame { frame, raw } => self.on_frame(frame, &raw),
                Incoming::Unknown { kind, .. } => self.on_unknown(&kind),
                Incoming::Malformed { line, error } => self.on_malformed(&line, &error),
            }
        }
    }

    /// When to stop waiting for the next line: zot's next decision while it still waits,
    /// then [`Handshake::stop_listening_at`]; never after `deadline`.
    fn wake_at(&self, session: &Session, deadline: Instant) -> Instant {
        self.stop_listening_at(session)
            .unwrap_or_else(|| session.started() + self.wait.next_decision())
            .min(deadline)
    }

    /// Once zot has stopped waiting: [`LATE_QUIET`] after the last line, at most
    /// [`LATE_LIMIT`] after zot stopped waiting.
    fn stop_listening_at(&self, session: &Session) -> Option<Instant> {
        let start = session.started();
        let (at, _) = self.wait.moved_on?;
        Some((start + self.wait.last.max(at) + LATE_QUIET).min(start + at + LATE_LIMIT))
    }

    /// `ready` after zot stopped waiting changes nothing: `readyOnce` already fired.
    fn check_ready_time(&mut self) {
        let Some(moved_on) = self.wait.moved_on_text() else {
            return;
        };
        self.problems.push(Problem::warning(
            format!(
                "sent ready {} after hello, but zot had stopped waiting for registrations {moved_on} and built the agent's tools then",
                tenths(self.wait.last.saturating_sub(self.wait.hello))
            ),
            "send the register_* frames and ready right after hello, without pausing; do slow setup after ready",
        ).about_timing());
    }

    fn no_ready(&mut self, timeout: Duration) {
        let message = match self.wait.moved_on_text() {
            Some(moved_on) => format!(
                "did not send ready; zot goes on without it, but stops waiting for registrations \
                 {moved_on} and builds the agent's tools then"
            ),
            None => format!(
                "did not send ready within {}; without it zot stops waiting for registrations \
                 at the first {} ms without a line, or {} s after hello, and builds the agent's tools then",
                secs(timeout),
                HOST_READY_IDLE.as_millis(),
                HOST_READY_GRACE.as_secs()
            ),
        };
        let fix = "send {\"type\":\"ready\"} after the last register_*/subscribe frame";
        if self.tools.is_empty() {
            // Commands are looked up live: a late one still works, only tools are fixed then.
            self.problems.push(Problem::note(
                format!("{message}; it registered no tool, and zot looks commands up live, so nothing is lost"),
                fix,
            ));
        } else {
            self.problems.push(Problem::warning(message, fix));
        }
    }

    fn on_frame(&mut self, frame: FromExt, raw: &Value) {
        match frame {
            FromExt::RegisterCommand(command) => self.on_command(command),
            FromExt::RegisterTool(tool) => self.on_tool(tool, raw),
            FromExt::Subscribe(subscribe) => self.on_subscribe(subscribe),
            FromExt::Notify(notify) => self.on_notify(&notify),
            FromExt::Hello(_) => self.problems.push(Problem::warning(
                "sent hello twice",
                "send hello once, as the first frame",
            )),
            FromExt::Error(error) => self.problems.push(Problem::warning(
                format!("sent an error frame: {}", error.message),
                "fix what the message reports: an extension sends an error frame when something it does fails",
            )),
            // Panels may be opened, drawn and closed at any time.
            FromExt::OpenPanel(_) | FromExt::PanelRender(_) | FromExt::PanelClose(_) => {}
            _ => self.problems.push(Problem::warning(
                format!(
                    "sent {} before ready, when nothing had been asked",
                    raw["type"].as_str().unwrap_or_default()
                ),
                "only answer command_invoked, tool_call, event_intercept and shutdown frames",
            )),
        }
    }

    /// Newer frame types are how the protocol grows, so an unknown one is only a note.
    fn on_unknown(&mut self, kind: &str) {
        if !NEWER_FRAMES.contains(&kind) {
            self.problems.push(Problem::note(
                format!(
                    "sent a frame of type \"{kind}\", which this version of zot ext does not know; zot ignores types it does not know"
                ),
                "if it is a typo, check the frame's \"type\" against the protocol reference",
            ));
        }
    }

    /// `readLoop` logs a line that is not JSON ("malformed json from extension") and reads on;
    /// a register frame whose fields do not decode is dropped (`register_command` silently,
    /// `register_tool` with "bad `register_tool` frame"), so what it registers is missing.
    fn on_malformed(&mut self, line: &str, error: &DecodeError) {
        if let DecodeError::Invalid { kind, .. } = error
            && let Some(what) = registration(kind, line)
        {
            return self.problems.push(Problem::warning(
                format!(
                    "sent a {kind} frame zot cannot decode ({error}), so zot drops it and {what} is missing: {}",
                    excerpt(line)
                ),
                "fix the frame's fields (see the protocol reference)",
            ));
        }
        if let Some((_, more)) = &mut self.malformed {
            *more += 1;
            return;
        }
        self.malformed = Some((self.problems.len(), 0));
        self.problems.push(match error {
            DecodeError::Invalid { .. } => Problem::warning(
                format!(
                    "sent a frame zot cannot decode ({error}), so zot drops it: {}",
                    excerpt(line)
                ),
                "fix the frame's fields (see the protocol reference)",
            ),
            _ => Problem::warning(
                format!(
                    "wrote a line on stdout that is not a JSON frame, which zot logs as malformed and ignores: {}",
                    excerpt(line)
                ),
                "stdout carries only JSON frames, one per line; write logs to stderr",
            ),
        });
    }

    fn count_malformed(&mut self) {
        if let Some((index, more)) = self.malformed
            && more > 0
        {
            let _ = write!(
                self.problems[index].message,
                " (and {more} more such lines)"
            );
        }
    }

    fn on_command(&mut self, command: RegisterCommand) {
        let name = command.name.as_str();
        if let Some(problem) = command_name_problem(name) {
            self.problems.push(problem);
        }
        if self
            .commands
            .iter()
            .any(|c| c.name.eq_ignore_ascii_case(name))
        {
            self.problems.push(Problem::warning(
                format!("registers /{name} twice"),
                "register each command once",
            ));
        }
        // Commands are looked up when typed (`HasCommand`, `Invoke`), so a late one still works.
        self.commands.push(command);
    }

    fn on_tool(&mut self, tool: RegisterTool, raw: &Value) {
        let name = tool.name.as_str();
        if let Some(problem) = tool_name_problem(name) {
            self.problems.push(problem);
        }
        if let Some(problem) = schema_problem(name, raw.get("schema")) {
            self.problems.push(problem);
        }
        if self.tools.iter().any(|t| t.name == name) {
            self.problems.push(Problem::warning(
                format!("registers the tool {name} twice"),
                "register each tool once",
            ));
        }
        self.check_tool_time(name);
        self.tools.push(tool);
    }

    /// zot builds the agent's tools once it stops waiting (`MergeExtensionTools` right after
    /// `WaitForReady`); a tool registered later is not among them.
    fn check_tool_time(&mut self, name: &str) {
        let Some(moved_on) = self.wait.moved_on_text() else {
            return;
        };
        self.problems.push(Problem::warning(
            format!(
                "zot would miss the tool {name}: registered {} after hello, but zot had stopped waiting for registrations {moved_on} and built the agent's tools then",
                tenths(self.wait.last.saturating_sub(self.wait.hello))
            ),
            "register every tool right after hello, then send ready; do slow setup after ready or when the tool is first called",
        ).about_timing());
    }

    /// Records the subscriptions; which of them the host honours depends on its version,
    /// so they are judged later, against the chosen facts.
    /// zot sends `session_start` right after it stops waiting (`EmitEvent` just after
    /// `WaitForReady` in cli.go and rpc.go), so a subscription to it that comes later misses it.
    fn on_subscribe(&mut self, subscribe: Subscribe) {
        if subscribe.events.iter().any(|e| e == "session_start")
            && let Some(moved_on) = self.wait.moved_on_text()
        {
            self.problems.push(Problem::warning(
                format!(
                    "subscribes to session_start {} after hello, but zot had stopped waiting for registrations {moved_on} and sends session_start then, so this extension would miss it",
                    tenths(self.wait.last.saturating_sub(self.wait.hello))
                ),
                "send subscribe right after hello, before any slow setup, then ready",
            ).about_timing());
        }
        self.events.extend(subscribe.events);
        self.intercept.extend(subscribe.intercept);
    }

    fn on_notify(&mut self, notify: &Notify) {
        if !NOTIFY_LEVELS.contains(&notify.level.as_str()) {
            self.problems.push(Problem::warning(
                format!("sent a notify with level \"{}\"", notify.level),
                format!("use one of: {}", NOTIFY_LEVELS.join(", ")),
            ));
        }
    }
}

/// What a register frame that cannot be decoded would have registered: "the tool \"x\"",
/// "the command /x", or "a tool" when even its name is unreadable.
fn registration(kind: &str, line: &str) -> Option<String> {
    let name = serde_json::from_str::<Value>(line)
        .ok()
        .and_then(|v| v.get("name").and_then(Value::as_str).map(str::to_string));
    match (kind, name) {
        ("register_tool", Some(name)) => Some(format!("the tool \"{name}\"")),
        ("register_tool", None) => Some("a tool".into()),
        ("register_command", Some(name)) => Some(format!("the command /{name}")),
        ("register_command", None) => Some("a command".into()),
        _ => None,
    }
}

fn first_line_problem(line: &str, error: &DecodeError, name: &str) -> Problem {
    match error {
        DecodeError::Invalid { .. } => {
            Problem::error(format!("{error}: {}", excerpt(line)), hello_fix(name))
        }
        _ => Problem::error(
            format!(
                "the first line on stdout is not a JSON frame: {}",
                excerpt(line)
            ),
            format!(
                "{}; stdout carries only JSON frames, so write logs to stderr",
                hello_fix(name)
            ),
        ),
    }
}

/// zot only treats `/word` as a command when the word is letters, digits, `-` and `_`.
pub(crate) fn command_name_problem(name: &str) -> Option<Problem> {
    if name.is_empty() {
        return Some(Problem::error(
            "registers a command with an empty name",
            "give it a name",
        ));
    }
    if let Some(bare) = name.strip_prefix('/') {
        return Some(Problem::warning(
            format!(
                "registers the command \"{name}\" with a leading slash, so users would type /{name}"
            ),
            format!("register \"{bare}\"; zot adds the slash"),
        ));
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Some(Problem::warning(
            format!(
                "zot does not recognise /{name} as a command (it sends it to the model as text)"
            ),
            "use only letters, digits, '-' and '_' in command names",
        ));
    }
    None
}

/// Model providers accept tool names matching `^[A-Za-z0-9_-]{1,64}$`.
pub(crate) fn tool_name_problem(name: &str) -> Option<Problem> {
    if name.is_empty() {
        return Some(Problem::error(
            "registers a tool with an empty name",
            "give it a name",
        ));
    }
    let valid = name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    (!valid).then(|| {
        Problem::warning(
            format!("the tool name \"{name}\" is rejected by model providers"),
            "use 1 to 64 letters, digits, '_' and '-'",
        )
    })
}

/// A tool's schema must be a JSON object, and should describe an object.
pub(crate) fn schema_problem(tool: &str, schema: Option<&Value>) -> Option<Problem> {
    let example =
        "e.g. \"schema\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}}}";
    let found = match schema {
        None | Some(Value::Null) => "none",
        Some(Value::Object(map)) => {
            return match map.get("type") {
                Some(Value::String(t)) if t == "object" => None,
                Some(other) => Some(Problem::warning(
                    format!(
                        "the schema of tool {tool} has \"type\" {other}, not \"object\"; providers expect an object of arguments"
                    ),
                    example,
                )),
                None => Some(Problem::warning(
                    format!(
                        "the schema of tool {tool} has no \"type\"; providers expect \"type\":\"object\""
                    ),
                    example,
                )),
            };
        }
        Some(Value::String(_)) => "a string",
        Some(Value::Array(_)) => "an array",
        Some(Value::Number(_)) => "a number",
        Some(Value::Bool(_)) => "a boolean",
    };
    Some(Problem::error(
        format!("the schema of tool {tool} must be a JSON object (a JSON Schema), found {found}"),
        example,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::Level;
    use serde_json::json;

    #[test]
    fn schema_rules() {
        assert_eq!(schema_problem("t", Some(&json!({"type":"object"}))), None);
        assert_eq!(schema_problem("t", None).unwrap().level, Level::Error);
        let p = schema_problem("t", Some(&json!("object"))).unwrap();
        assert!(p.message.contains("found a string"), "{p:?}");
        assert_eq!(
            schema_problem("t", Some(&json!({"type":"string"})))
                .unwrap()
                .level,
            Level::Warning
        );
        assert_eq!(
            schema_problem("t", Some(&json!({}))).unwrap().level,
            Level::Warning
        );
    }

    #[test]
    fn name_rules() {
        assert_eq!(command_name_problem("weather"), None);
        assert_eq!(command_name_problem("my-cmd_2"), None);
        assert!(
            command_name_problem("/weather")
                .unwrap()
                .fix
                .unwrap()
                .contains("\"weather\"")
        );
        assert!(command_name_problem("a.b").is_some());
        assert_eq!(command_name_problem("").unwrap().level, Level::Error);
        assert_eq!(tool_name_problem("get_weather"), None);
        assert!(tool_name_problem("get weather").is_some());
        assert!(tool_name_problem(&"x".repeat(65)).is_some());
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// zot's wait after a hello at 1 s, given the lines that followed (ms after hello), as
    /// seen at `now` (ms after hello).
    fn replay(lines: &[u64], now: u64) -> Option<(Duration, bool)> {
        let mut wait = HostWait::new(ms(1000));
        for &at in lines {
            wait.line(ms(1000 + at));
        }
        wait.advance(ms(1000 + now));
        wait.moved_on
    }

    #[test]
    fn zot_stops_waiting_at_the_first_look_that_finds_no_line() {
        assert_eq!(replay(&[], 200), None);
        assert_eq!(replay(&[], 300), Some((ms(1250), false)));
        // A line before the first look keeps zot waiting until the second.
        assert_eq!(replay(&[100], 400), None);
        assert_eq!(replay(&[100], 600), Some((ms(1500), false)));
        // Looks come every 250 ms from hello, so a gap of nearly 500 ms can pass unnoticed...
        assert_eq!(replay(&[10, 490], 700), None);
        assert_eq!(replay(&[10, 490], 800), Some((ms(1750), false)));
        // ... and a line after a look that found none is too late.
        assert_eq!(replay(&[100, 600], 600), Some((ms(1500), false)));
    }

    #[test]
    fn zot_stops_waiting_after_its_grace_however_busy() {
        let busy: Vec<u64> = (1..60).map(|i| i * 100).collect();
        assert_eq!(replay(&busy[..28], 2900), None);
        assert_eq!(replay(&busy, 6000), Some((ms(4000), true)));
    }

    #[test]
    fn registrations_read_the_tool_and_command_names() {
        let tool = r#"{"type":"register_tool","name":"x","description":5}"#;
        assert_eq!(
            registration("register_tool", tool).as_deref(),
            Some("the tool \"x\"")
        );
        let command = r#"{"type":"register_command","name":5}"#;
        assert_eq!(
            registration("register_command", command).as_deref(),
            Some("a command")
        );
        assert_eq!(registration("notify", r#"{"type":"notify"}"#), None);
    }

    #[test]
    fn excerpts_are_short_and_quoted() {
        assert_eq!(excerpt("hi"), "\"hi\"");
        assert!(excerpt(&"y".repeat(200)).ends_with("\"..."));
    }
}
