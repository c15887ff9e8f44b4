//! `zot ext call`: start an extension, run one of its commands or tools, print the answer.

use std::io::{self, Write};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, anyhow, bail};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::Serialize;
use serde_json::Value;

use super::{Context, Run};
use crate::cli::CallArgs;
use crate::error::usage;
use crate::host::{self, Handshake, HostInfo, Incoming, Session};
use crate::output::clean;
use crate::protocol::{
    CommandInvoked, CommandResponse, DecodeError, FromExt, FromHost, PanelContent, ToolCall,
    ToolCancel, ToolResult,
};
use crate::target::Target;

/// The correlation id of the one request `call` sends.
const ID: &str = "1";

/// What to ask the extension.
#[derive(Debug, PartialEq)]
enum Request {
    Command { name: String, args: String },
    Tool { name: String, args: Value },
}

/// The extension's answer.
enum Reply {
    Command(CommandResponse),
    Tool(ToolResult),
}

/// `zot ext call --json` output: the frame sent, every frame received after it, the answer.
#[derive(Serialize)]
struct Exchange {
    request: Value,
    frames: Vec<Value>,
    response: Value,
}

impl Run for CallArgs {
    fn run(&self, ctx: &Context) -> Result<()> {
        let request = self.request()?;
        let target = Target::find(&ctx.layout, &self.name)?;
        let manifest = target
            .manifest
            .as_ref()
            .map_err(|e| anyhow!("{e}; fix the manifest first (zot ext doctor shows more)"))?;
        let launch = target
            .launch(manifest)
            .map_err(|e| anyhow!("{}; {}", e.message, e.fix))?;
        let timeout = self.timeout.unwrap_or_else(|| request.limit());
        let host = HostInfo::for_cli(std::env::current_dir()?);
        host::become_subreaper();
        let mut session = Session::start(&launch)
            .with_context(|| format!("cannot start {}", launch.command_line()))?;
        let registered = |hs: &Handshake| request.registered(hs).is_some();
        let hs = host::handshake_until(&mut session, &manifest.name, &host, timeout, &registered);
        if hs.broken {
            return Err(start_failure(ctx, &manifest.name, &hs, &session));
        }
        request.check_registered(&manifest.name, &hs)?;
        let result = exchange(ctx, &mut session, &request, timeout, &hs);
        stop(ctx, &mut session, &manifest.name);
        let (reply, exchange) = result?;
        if ctx.out.json {
            ctx.out.json(&exchange)?;
        } else {
            print_reply(&reply)?;
        }
        reply.outcome(&request)
    }
}

impl CallArgs {
    /// The request from the command line; malformed input is a usage error.
    fn request(&self) -> Result<Request> {
        match &self.tool {
            Some(tool) => tool_request(tool, &self.input),
            None => command_request(&self.input),
        }
    }
}

fn command_request(input: &[String]) -> Result<Request> {
    let Some(first) = input.first() else {
        return Err(usage(
            "name what to run: zot ext call <name> /<command> [args...], or --tool <tool> '<json args>'",
        ));
    };
    let name = first.strip_prefix('/').unwrap_or(first);
    if name.is_empty() {
        return Err(usage("the command name is empty; write it as /<command>"));
    }
    Ok(Request::Command {
        name: name.to_string(),
        args: input[1..].join(" ").trim().to_string(),
    })
}

fn tool_request(tool: &str, input: &[String]) -> Result<Request> {
    if input.len() > 1 {
        return Err(usage(
            "with --tool, give the arguments as one JSON object in quotes: '{\"city\":\"Berlin\"}'",
        ));
    }
    let text = input.first().map_or("{}", String::as_str);
    let args: Value = serde_json::from_str(text).map_err(|e| {
        usage(format!("the tool arguments are not valid JSON ({e}); give one object such as '{{\"city\":\"Berlin\"}}'"))
    })?;
    if !args.is_object() {
        return Err(usage(format!(
            "the tool arguments must be a JSON object, not {text}; e.g. '{{\"city\":\"Berlin\"}}'"
        )));
    }
    Ok(Request::Tool {
        name: tool.to_string(),
        args,
    })
}

impl Request {
    /// How long zot itself waits for the answer: the default for `--timeout`.
    fn limit(&self) -> Duration {
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

/// Why the extension could not be talked to, with its fix, as one line; the last lines of
/// its stderr are printed before it (one note each, so each stays one line).
fn start_failure(ctx: &Context, name: &str, hs: &Handshake, session: &Session) -> anyhow::Error {
    let stderr = session.stderr_tail(20);
    if !stderr.trim().is_empty() {
        ctx.out.note(&format!("{name} stderr (last lines):"));
        for line in stderr.lines() {
            ctx.out.note(&format!("    | {line}"));
        }
    }
    let mut text = format!("{name} did not start properly");
    if let Some(problem) = hs.problems.iter().rfind(|p| p.level == host::Level::Error) {
        text += &format!(": {}", problem.message);
        if let Some(fix) = &problem.fix {
            text += &format!("; fix: {fix}");
        }
    }
    anyhow!(text)
}

/// Sends the request and collects frames until the answer, printing notes as they come.
/// A tool call that times out is cancelled (`tool_cancel`) when the extension supports it.
fn exchange(
    ctx: &Context,
    session: &mut Session,
    request: &Request,
    timeout: Duration,
    hs: &Handshake,
) -> Result<(Reply, Exchange)> {
    let frame = request.frame();
    session
        .send(&frame)
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
                malformed(ctx, request, &line, &error)?;
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
        if let Some(reply) = answer(frame, ctx)? {
            let exchange = Exchange {
                request: serde_json::to_value(request.frame())?,
                frames,
                response: raw,
            };
            return Ok((reply, exchange));
        }
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
fn malformed(ctx: &Context, request: &Request, line: &str, error: &DecodeError) -> Result<()> {
    let DecodeError::Invalid { kind, .. } = error else {
        ctx.out.warn(&format!(
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
    ctx.out.warn(&format!(
        "ignored a frame zot cannot decode ({error}): {line:.80}"
    ));
    Ok(())
}

/// The reply if `frame` is the answer to our request; notes and panels are printed on the
/// way.
fn answer(frame: FromExt, ctx: &Context) -> Result<Option<Reply>> {
    let mut out = io::stdout().lock();
    match frame {
        FromExt::CommandResponse(r) if r.id == ID => return Ok(Some(Reply::Command(*r))),
        FromExt::ToolResult(r) if r.id == ID => return Ok(Some(Reply::Tool(r))),
        _ if ctx.out.json => {}
        FromExt::Notify(n) => writeln!(out, "[{}] {}", clean(&n.level), clean(&n.message))?,
        FromExt::OpenPanel(p) => write!(
            out,
            "[panel {}] {}",
            p.panel.id,
            panel_text(&p.panel.content)
        )?,
        FromExt::PanelRender(p) => {
            write!(out, "[panel {}] {}", p.panel_id, panel_text(&p.content))?
        }
        _ => {}
    }
    Ok(None)
}

/// A panel as text: its title, then its lines and footer indented.
fn panel_text(panel: &PanelContent) -> String {
    let mut text = format!("{}\n", clean(&panel.title));
    for line in panel
        .lines
        .iter()
        .chain(Some(&panel.footer).filter(|f| !f.is_empty()))
    {
        text += &format!("  {}\n", clean(line));
    }
    text
}

/// Shuts the extension down; says so when it needed a signal or left processes behind.
fn stop(ctx: &Context, session: &mut Session, name: &str) {
    let stopped = session.stop(host::SHUTDOWN_GRACE);
    if stopped.terminated {
        ctx.out.warn(&format!(
            "{name} did not exit within {}s of shutdown and was stopped with a signal; zot ext doctor {name} shows more",
            host::SHUTDOWN_GRACE.as_secs()
        ));
    }
    for leftover in stopped.leftovers.iter().chain(&host::end_adopted()) {
        ctx.out.warn(&format!(
            "{name} left a process running after shutdown: pid {} ({}); zot ext ended it",
            leftover.pid, leftover.command
        ));
    }
}

fn print_reply(reply: &Reply) -> io::Result<()> {
    let mut out = io::stdout().lock();
    match reply {
        Reply::Command(r) => {
            if let Some(panel) = r.open_panel.as_ref().filter(|_| r.action == "open_panel") {
                write!(out, "open_panel: {}", panel_text(&panel.content))?;
                return out.flush();
            }
            let text = match r.action.as_str() {
                "prompt" => Some(&r.prompt),
                "insert" => Some(&r.insert),
                "display" => Some(&r.display),
                _ => None,
            };
            match text {
                Some(text) if text.contains('\n') => writeln!(out, "{}:\n{text}", r.action)?,
                Some(text) => writeln!(out, "{}: {text}", r.action)?,
                None => writeln!(out, "{}", r.action)?,
            }
        }
        Reply::Tool(r) => {
            for block in &r.content {
                match block.kind.as_str() {
                    "text" => writeln!(out, "{}", block.text)?,
                    "image" => writeln!(
                        out,
                        "[image {}, {}]",
                        block.mime_type,
                        image_size(&block.data)
                    )?,
                    other => writeln!(out, "[{other} block]")?,
                }
            }
        }
    }
    out.flush()
}

/// The size of an image sent as base64 `data` (with the `base64` crate's standard engine,
/// as Go's `encoding/base64.StdEncoding` writes it), or that it is not base64.
fn image_size(data: &str) -> String {
    match STANDARD.decode(data.trim()) {
        Ok(bytes) => format!("{} bytes", bytes.len()),
        Err(_) => "not valid base64".to_string(),
    }
}

impl Reply {
    /// Exit 1 when the extension reported a failure.
    fn outcome(&self, request: &Request) -> Result<()> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_default_timeouts_are_zots_limits_and_the_help_says_so() {
        let command = command_request(&strings(&["/clock"])).unwrap();
        let tool = tool_request("clock", &[]).unwrap();
        assert_eq!(command.limit(), Duration::from_secs(30));
        assert_eq!(tool.limit(), Duration::from_secs(60));
        use clap::CommandFactory;
        let cli = crate::cli::Cli::command();
        let call = cli
            .find_subcommand("ext")
            .and_then(|ext| ext.find_subcommand("call"))
            .unwrap();
        let timeout = call
            .get_arguments()
            .find(|a| a.get_id() == "timeout")
            .unwrap();
        let help = timeout.get_long_help().or(timeout.get_help()).unwrap();
        let help = help.to_string();
        let (commands, tools) = (command.limit().as_secs(), tool.limit().as_secs());
        assert!(
            help.contains(&format!("{commands} for a command, {tools} for a tool")),
            "{help}"
        );
        assert!(timeout.get_default_values().is_empty());
    }

    #[test]
    fn command_requests() {
        assert_eq!(
            command_request(&strings(&["/clock", "Asia/Tokyo", " "])).unwrap(),
            Request::Command {
                name: "clock".into(),
                args: "Asia/Tokyo".into()
            }
        );
        assert_eq!(
            command_request(&strings(&["clock"])).unwrap(),
            Request::Command {
                name: "clock".into(),
                args: String::new()
            }
        );
        assert!(command_request(&[]).is_err());
        assert!(command_request(&strings(&["/"])).is_err());
    }

    #[test]
    fn tool_requests() {
        assert_eq!(
            tool_request("t", &[]).unwrap(),
            Request::Tool {
                name: "t".into(),
                args: json!({})
            }
        );
        assert_eq!(
            tool_request("t", &strings(&[r#"{"a":1}"#])).unwrap(),
            Request::Tool {
                name: "t".into(),
                args: json!({"a":1})
            }
        );
        for bad in [&["[1]"][..], &["{"], &["{}", "{}"]] {
            let err = tool_request("t", &strings(bad)).unwrap_err();
            assert_eq!(crate::error::exit_code(&err), 2, "{bad:?}");
        }
    }

    #[test]
    fn panels_print_their_title_lines_and_footer() {
        let panel = PanelContent {
            title: "Pick one".into(),
            lines: vec!["a".into(), "> b".into()],
            footer: "enter picks".into(),
        };
        assert_eq!(panel_text(&panel), "Pick one\n  a\n  > b\n  enter picks\n");
        let bare = PanelContent::default();
        assert_eq!(panel_text(&bare), "\n");
    }

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
        let go = command_request(&strings(&["/Go"])).unwrap();
        assert!(go.check_registered("x", &hs).is_ok());
    }

    #[test]
    fn image_sizes() {
        assert_eq!(image_size("aGk="), "2 bytes");
        assert_eq!(image_size("aGVsbG8=\n"), "5 bytes");
        assert_eq!(image_size("aGVsbG8h"), "6 bytes");
        assert_eq!(image_size(""), "0 bytes");
        assert_eq!(image_size("a*b="), "not valid base64");
    }
}
