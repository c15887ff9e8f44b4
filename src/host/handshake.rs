//! The start of a conversation as zot runs it: `hello`, `hello_ack`, then registrations until
//! `ready` (or the timeout). Every deviation from the protocol is recorded as a [`Problem`]
//! saying how to fix it.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{Incoming, Problem, Session};
use crate::protocol::{
    self, DecodeError, FromExt, FromHost, Hello, HelloAck, Notify, RegisterCommand, RegisterTool,
    Subscribe, zot,
};

/// Without `ready`, zot treats an extension as ready after this much silence on its stdout
/// and builds the agent's tools then; registrations after such a pause come too late.
pub const HOST_READY_IDLE: Duration = zot::TIMING.ready_idle;

/// More lines than this before `ready` is a flood.
pub const MAX_LINES_BEFORE_READY: usize = 1000;

/// Frame types newer zot versions understand beyond the ones this version decodes.
const NEWER_FRAMES: &[&str] = &[
    "call_tool",
    "call_tool_cancel",
    "clear_notes",
    "submit",
    "submit_slash",
];

const NOTIFY_LEVELS: &[&str] = &["info", "success", "warn", "error"];

/// What `hello_ack` tells the extension about the host.
#[derive(Debug, Clone)]
pub struct HostInfo {
    pub zot_version: String,
    pub provider: String,
    pub model: String,
    pub cwd: PathBuf,
}

impl HostInfo {
    fn ack(&self, dir: &Path) -> FromHost {
        let dir = dir.display().to_string();
        FromHost::HelloAck(HelloAck {
            protocol_version: protocol::PROTOCOL_VERSION,
            zot_version: self.zot_version.clone(),
            provider: self.provider.clone(),
            model: self.model.clone(),
            cwd: self.cwd.display().to_string(),
            extension_dir: Some(dir.clone()),
            data_dir: Some(dir),
        })
    }
}

/// What the extension said and did up to `ready`.
#[derive(Debug, Default)]
pub struct Handshake {
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
    /// zot would already have stopped waiting (a pause of [`HOST_READY_IDLE`] without ready).
    host_moved_on: bool,
    /// Registrations that came after such a pause: `/command` or `tool name`.
    late: Vec<String>,
}

/// Runs the handshake on a freshly started session: `hello` within `timeout` of the start,
/// `hello_ack` back, then registrations until `ready` or, without it, the timeout.
pub fn handshake(
    session: &mut Session,
    name: &str,
    host: &HostInfo,
    timeout: Duration,
) -> Handshake {
    handshake_until(session, name, host, timeout, &|_| false)
}

/// [`handshake`], but once `enough` holds, a pause of [`HOST_READY_IDLE`] without `ready`
/// also ends registration (as it ends zot's wait), quietly.
pub fn handshake_until(
    session: &mut Session,
    name: &str,
    host: &HostInfo,
    timeout: Duration,
    enough: &dyn Fn(&Handshake) -> bool,
) -> Handshake {
    let mut h = Handshake::default();
    let deadline = session.started() + timeout;
    if let Err(problem) = h.await_hello(session, name, deadline, timeout) {
        h.fatal(problem);
        return h;
    }
    let _ = session.send(&host.ack(&session.launch.dir));
    h.collect(session, deadline, timeout, enough);
    h.count_malformed();
    h
}

fn secs(d: Duration) -> String {
    format!("{}s", d.as_secs_f64())
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
        session.launch.dir.display(),
        session.launch.command_line()
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
                self.hello_after = Some(session.last_line_after());
                self.check_hello_name(&hello, name);
                self.hello = Some(hello);
                return Ok(());
            }
            Incoming::Frame { frame, .. } => frame.kind().to_string(),
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

    fn check_hello_name(&mut self, hello: &Hello, name: &str) {
        if hello.name != name {
            self.problems.push(Problem::error(
                format!(
                    "hello says the name is \"{}\" but extension.json says \"{name}\"",
                    hello.name
                ),
                format!(
                    "send \"name\":\"{name}\" in hello, or rename the extension in extension.json"
                ),
            ));
        }
    }

    fn collect(
        &mut self,
        session: &mut Session,
        deadline: Instant,
        timeout: Duration,
        enough: &dyn Fn(&Handshake) -> bool,
    ) {
        let mut last = Instant::now();
        loop {
            if session.lines_read() > MAX_LINES_BEFORE_READY {
                return self.fatal(Problem::error(
                    format!(
                        "flooded stdout: more than {MAX_LINES_BEFORE_READY} lines before ready"
                    ),
                    "send hello, the register_* frames and ready, then only answers; log to stderr",
                ));
            }
            let until = if enough(self) {
                deadline.min(last + HOST_READY_IDLE)
            } else {
                deadline
            };
            match self.next(session, until) {
                Incoming::Frame {
                    frame: FromExt::Ready,
                    ..
                } => {
                    self.ready_after = Some(session.last_line_after());
                    return;
                }
                Incoming::TooLong => return self.fatal(too_long()),
                Incoming::Closed => {
                    return self.fatal(ended(session, "after hello, before ready"));
                }
                Incoming::Timeout if Instant::now() >= deadline => return self.no_ready(timeout),
                Incoming::Timeout => return,
                Incoming::Frame { frame, raw } => self.on_frame(frame, &raw),
                Incoming::Unknown { kind, .. } => self.on_unknown(&kind),
                Incoming::Malformed { line, error } => self.on_malformed(&line, &error),
            }
            last = Instant::now();
        }
    }

    /// The next line, noting when it came after a pause long enough for zot to move on.
    fn next(&mut self, session: &mut Session, until: Instant) -> Incoming {
        let before = session.last_line_after();
        let incoming = session.recv(until);
        if session.last_line_after() > before + HOST_READY_IDLE {
            self.host_moved_on = true;
        }
        incoming
    }

    fn no_ready(&mut self, timeout: Duration) {
        let mut message = format!(
            "did not send ready within {}; without it zot stops waiting {} ms after the last \
             frame and builds the agent's tools then",
            secs(timeout),
            HOST_READY_IDLE.as_millis()
        );
        if !self.late.is_empty() {
            message += &format!(
                ", so it would miss {} (registered after such a pause)",
                self.late.join(", ")
            );
        }
        self.problems.push(Problem::warning(
            message,
            "send {\"type\":\"ready\"} after the last register_*/subscribe frame",
        ));
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
                "",
            )),
            // Panels may be opened, drawn and closed at any time.
            FromExt::OpenPanel(_) | FromExt::PanelRender(_) | FromExt::PanelClose(_) => {}
            other => self.problems.push(Problem::warning(
                format!(
                    "sent {} before ready, when nothing had been asked",
                    other.kind()
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

    fn on_malformed(&mut self, line: &str, error: &DecodeError) {
        if let Some((_, more)) = &mut self.malformed {
            *more += 1;
            return;
        }
        self.malformed = Some((self.problems.len(), 0));
        self.problems.push(match error {
            DecodeError::Invalid { .. } => Problem::error(
                format!(
                    "sent a frame zot cannot decode ({error}), so zot drops it: {}",
                    excerpt(line)
                ),
                "fix the frame's fields (see the protocol reference)",
            ),
            _ => Problem::error(
                format!(
                    "wrote a line on stdout that is not a JSON frame: {}",
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
            self.problems[index].message += &format!(" (and {more} more such lines)");
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
        if self.host_moved_on {
            self.late.push(format!("/{name}"));
        }
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
        if self.host_moved_on {
            self.late.push(format!("the tool {name}"));
        }
        self.tools.push(tool);
    }

    /// Records the subscriptions; which of them the host honours depends on its version,
    /// so they are judged later, against the chosen facts.
    fn on_subscribe(&mut self, subscribe: Subscribe) {
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
pub fn command_name_problem(name: &str) -> Option<Problem> {
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
pub fn tool_name_problem(name: &str) -> Option<Problem> {
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
pub fn schema_problem(tool: &str, schema: Option<&Value>) -> Option<Problem> {
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
    use crate::host::Level;
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

    #[test]
    fn excerpts_are_short_and_quoted() {
        assert_eq!(excerpt("hi"), "\"hi\"");
        assert!(excerpt(&"y".repeat(200)).ends_with("\"..."));
    }
}
