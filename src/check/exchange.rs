//! One request to an extension, as `zot ext call` makes it: start the extension, shake
//! hands, check that it registers what is asked for, send `command_invoked` or `tool_call`,
//! wait for the matching reply (skipping and reporting lines that are no usable frame,
//! passing every other frame to the caller as it comes, cancelling a tool call that times
//! out), then shut the extension down.

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, anyhow, bail};
use serde::Serialize;
use serde_json::Value;

use super::Level;
use super::handshake::{self, Handshake};
use crate::host::{self, Incoming, Launch, Session};
use crate::output::Output;
use crate::output::sh_quote;
use crate::protocol::{
    CommandInvoked, CommandResponse, DecodeError, FromExt, FromHost, ToolCall, ToolCancel,
    ToolResult,
};

/// The correlation id of the one request sent.
const ID: &str = "1";

/// What to ask the extension.
#[derive(Debug, PartialEq)]
pub(crate) enum Request {
    Command { name: String, args: String },
    Tool { name: String, args: Value },
}

/// The extension's answer.
pub(crate) enum Reply {
    Command(CommandResponse),
    Tool(ToolResult),
}

/// The whole exchange, as `zot ext call --json` prints it: the frame sent, every frame
/// received after it, the answer.
#[derive(Serialize)]
pub(crate) struct Transcript {
    request: Value,
    frames: Vec<Value>,
    response: Value,
    /// What the extension wrote on stderr (its last lines), as written.
    stderr: String,
}

/// Lines of the extension's stderr shown after a call.
const STDERR_LINES: usize = 50;

/// The extension called: its name, and the fix printed when it fails to start saying a
/// dependency is missing (its step has not run).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Callee<'a> {
    pub name: &'a str,
    pub prepare_fix: &'a str,
}

/// Starts the extension `who.name` with `launch` in `cwd`, asks it `request`, waits up to
/// `timeout` for the handshake and again for the answer, and stops it. Frames that come
/// before the answer go to `on_frame` (an error from it ends the call); warnings, and the
/// stderr of an extension that does not start, go to `out`.
pub(crate) fn call(
    out: &Output,
    who: Callee,
    launch: &Launch,
    cwd: &Path,
    request: &Request,
    timeout: Duration,
    on_frame: impl FnMut(&FromExt) -> Result<()>,
) -> Result<(Reply, Transcript)> {
    let name = who.name;
    host::become_subreaper();
    let mut session = Session::start(launch)
        .with_context(|| format!("cannot start {}", launch.command_line()))?;
    let registered = |hs: &Handshake| request.registered(hs).is_some();
    let hs = handshake::handshake(&mut session, name, cwd, timeout, &registered);
    if hs.broken {
        return Err(start_failure(out, who, &hs, &session));
    }
    request.check_registered(name, &hs)?;
    let result = exchange(out, &mut session, request, timeout, &hs, on_frame);
    stop(out, &mut session, name);
    // What the extension said on stderr, which zot writes to its log: without the agent
    // there is no log to read it in.
    let stderr = session.stderr_tail(STDERR_LINES);
    if !out.json && !stderr.trim().is_empty() {
        out.note(&format!("{name} stderr:"));
        for line in stderr.lines() {
            out.note(&format!("    | {line}"));
        }
    }
    result.map(|(reply, transcript)| {
        (
            reply,
            Transcript {
                stderr,
                ..transcript
            },
        )
    })
}

impl Request {
    /// How long zot itself waits for the answer: the default for `--timeout`.
    pub(crate) fn limit(&self) -> Duration {
        match self {
            Request::Command { .. } => host::COMMAND_LIMIT,
            Request::Tool { .. } => host::TOOL_LIMIT,
        }
    }

    fn frame(&self) -> FromHost {
        match self {
            Request::Command { name, args } => FromHost::CommandInvoked(CommandInvoked {
                id: ID.into(),
                name: name.clone(),
                args: args.clone(),
            }),
            Request::Tool { name, args } => FromHost::ToolCall(ToolCall {
                id: ID.into(),
                name: name.clone(),
                args: args.clone(),
            }),
        }
    }

    /// Whether the extension registered what is asked for; for a tool, whether it is
    /// interactive.
    fn registered(&self, hs: &Handshake) -> Option<bool> {
        match self {
            Request::Command { name, .. } => {
                hs.commands.iter().any(|c| c.name == *name).then_some(false)
            }
            Request::Tool { name, .. } => hs
                .tools
                .iter()
                .find(|t| t.name == *name)
                .map(|t| t.interactive),
        }
    }

    /// Refuses names the extension does not register, and interactive tools, which wait for
    /// a user that a headless caller does not have.
    fn check_registered(&self, ext: &str, hs: &Handshake) -> Result<()> {
        match (self, self.registered(hs)) {
            (Request::Tool { name, .. }, Some(true)) => bail!(
                "the tool {name} of {ext} is interactive: it waits for input from the user in zot, \
                 and headless hosts such as zot ext call refuse such tools; try it in zot"
            ),
            (_, Some(false)) => Ok(()),
            _ => self.unregistered(ext, hs),
        }
    }

    fn unregistered(&self, ext: &str, hs: &Handshake) -> Result<()> {
        let (what, name, known): (&str, &str, Vec<String>) = match self {
            Request::Command { name, .. } => (
                "command",
                name,
                hs.commands.iter().map(|c| format!("/{}", c.name)).collect(),
            ),
            Request::Tool { name, .. } => (
                "tool",
                name,
                hs.tools.iter().map(|t| t.name.clone()).collect(),
            ),
        };
        let shown = |n: &str| {
            if what == "command" {
                format!("/{n}")
            } else {
                n.to_string()
            }
        };
        let registered = if known.is_empty() {
            format!("it registers no {what}s")
        } else {
            format!("it registers {}", known.join(", "))
        };
        bail!(
            "{ext} does not register the {what} {}; {registered}",
            shown(name)
        )
    }

    fn awaited(&self) -> &'static str {
        match self {
            Request::Command { .. } => "command_response",
            Request::Tool { .. } => "tool_result",
        }
    }
}

impl Reply {
    /// Fails (exit 1) when the extension reported a failure.
    pub(crate) fn outcome(&self, request: &Request) -> Result<()> {
        match (self, request) {
            (Reply::Command(r), Request::Command { name, .. }) if !r.error.is_empty() => {
                bail!("/{name} failed: {}", r.error)
            }
            (Reply::Tool(r), Request::Tool { name, .. }) if r.is_error => {
                bail!("the tool {name} reported an error (is_error: true)")
            }
            _ => Ok(()),
        }
    }
}

/// Why the extension could not be talked to, with its fix, as one line; the last lines of
/// its stderr are noted before it (one note each, so each stays one line).
fn start_failure(out: &Output, who: Callee, hs: &Handshake, session: &Session) -> anyhow::Error {
    let Callee { name, prepare_fix } = who;
    let stderr = session.stderr_tail(20);
    if !stderr.trim().is_empty() {
        out.note(&format!("{name} stderr (last lines):"));
        for line in stderr.lines() {
            out.note(&format!("    | {line}"));
        }
    }
    let mut text = format!("{name} did not start properly");
    if let Some(marker) = super::prepare_hint::stderr_says_missing(&stderr) {
        let _ = write!(
            text,
            ": its stderr says a dependency is missing ({marker}): its dependency install or build has not run; fix: {prepare_fix}"
        );
        return anyhow!(text);
    }
    if let Some(problem) = hs.problems.iter().rfind(|p| p.level == Level::Error) {
        let _ = write!(text, ": {}", problem.message);
        if let Some(fix) = &problem.fix {
            let _ = write!(text, "; fix: {fix}");
        }
    }
    anyhow!(text)
}

/// Sends the request and collects frames until the answer, passing the others to
/// `on_frame` as they come. A tool call that times out is cancelled (`tool_cancel`) when
/// the extension supports it.
fn exchange(
    out: &Output,
    session: &mut Session,
    request: &Request,
    timeout: Duration,
    hs: &Handshake,
    mut on_frame: impl FnMut(&FromExt) -> Result<()>,
) -> Result<(Reply, Transcript)> {
    session
        .send(&request.frame())
        .map_err(|_| anyhow!("the extension closed its stdin before the request could be sent"))?;
    let deadline = Instant::now() + timeout;
    let mut frames = Vec::new();
    loop {
        let (frame, raw) = match session.recv(deadline) {
            Incoming::Frame { frame, raw } => (frame, raw),
            Incoming::Unknown { raw, .. } => {
                frames.push(raw);
                continue;
            }
            Incoming::Malformed { line, error } => {
                malformed(out, request, &line, &error)?;
                continue;
            }
            Incoming::TooLong => bail!("the extension wrote a line longer than zot accepts"),
            Incoming::Closed => bail!(
                "the extension closed stdout (exited?) before sending a {}",
                request.awaited()
            ),
            Incoming::Timeout => {
                let cancelled = cancel(session, request, hs);
                bail!(
                    "no {} within {}s{cancelled}; raise --timeout if it needs longer",
                    request.awaited(),
                    timeout.as_secs_f64()
                )
            }
        };
        frames.push(raw.clone());
        let reply = match frame {
            FromExt::CommandResponse(r) if r.id == ID => Reply::Command(*r),
            FromExt::ToolResult(r) if r.id == ID => Reply::Tool(r),
            other => {
                on_frame(&other)?;
                continue;
            }
        };
        let transcript = Transcript {
            request: serde_json::to_value(request.frame())?,
            frames,
            response: raw,
            stderr: String::new(),
        };
        return Ok((reply, transcript));
    }
}

/// Sends `tool_cancel` for a timed-out tool call when the extension's hello lists the
/// capability (as zot does); says so for the error message.
fn cancel(session: &Session, request: &Request, hs: &Handshake) -> &'static str {
    let supported = hs
        .hello
        .as_ref()
        .is_some_and(|h| h.capabilities.iter().any(|c| c == "tool_cancel"));
    if !matches!(request, Request::Tool { .. }) || !supported {
        return "";
    }
    let frame = FromHost::ToolCancel(ToolCancel { id: ID.into() });
    match session.send(&frame) {
        Ok(()) => " (sent tool_cancel)",
        Err(_) => "",
    }
}

/// A line that is not a usable frame: the answer zot cannot read fails the call (zot would
/// drop it and time out); anything else is reported and skipped.
fn malformed(out: &Output, request: &Request, line: &str, error: &DecodeError) -> Result<()> {
    let DecodeError::Invalid { kind, .. } = error else {
        out.warn(&format!(
            "ignored a line on stdout that is not a JSON frame: {line:.80}"
        ));
        return Ok(());
    };
    let id = serde_json::from_str::<Value>(line)
        .ok()
        .and_then(|v| v.get("id").cloned());
    if kind == request.awaited() && id == Some(Value::from(ID)) {
        bail!(
            "the extension answered with a {kind} that zot cannot decode ({error}); zot would drop it"
        );
    }
    out.warn(&format!(
        "ignored a frame zot cannot decode ({error}): {line:.80}"
    ));
    Ok(())
}

/// Shuts the extension down; says so when it needed a signal or left processes behind.
fn stop(out: &Output, session: &mut Session, name: &str) {
    let stopped = session.stop(host::SHUTDOWN_GRACE);
    if stopped.terminated {
        out.warn(&format!(
            "{name} did not exit within {}s of shutdown and was stopped with a signal; zot ext doctor {} shows more",
            host::SHUTDOWN_GRACE.as_secs(),
            sh_quote(name)
        ));
    }
    for leftover in stopped.leftovers.iter().chain(&host::end_adopted()) {
        out.warn(&format!(
            "{name} left a process running after shutdown: pid {} ({}); zot ext ended it",
            leftover.pid, leftover.command
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn handshake(frames: &[&str]) -> Handshake {
        let mut hs = Handshake::default();
        for frame in frames {
            match serde_json::from_str::<FromExt>(frame).unwrap() {
                FromExt::RegisterCommand(c) => hs.commands.push(c),
                FromExt::RegisterTool(t) => hs.tools.push(t),
                _ => unreachable!(),
            }
        }
        hs
    }

    #[test]
    fn interactive_tools_are_refused() {
        let hs = handshake(&[
            r#"{"type":"register_command","name":"Go"}"#,
            r#"{"type":"register_tool","name":"ask","interactive":true}"#,
            r#"{"type":"register_tool","name":"later","deferred":true}"#,
        ]);
        let tool = |name: &str| Request::Tool {
            name: name.into(),
            args: json!({}),
        };
        let err = tool("ask").check_registered("x", &hs).unwrap_err();
        assert!(err.to_string().contains("is interactive"), "{err}");
        assert!(tool("later").check_registered("x", &hs).is_ok());
        assert!(tool("nope").check_registered("x", &hs).is_err());
        let go = Request::Command {
            name: "Go".into(),
            args: String::new(),
        };
        assert!(go.check_registered("x", &hs).is_ok());
    }
}
