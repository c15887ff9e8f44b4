//! `zot ext call`: turn the command line into a request to an extension, make it
//! ([`crate::check::exchange`]), and print what comes back.

use std::fmt::Write as _;

use anyhow::{Result, anyhow};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

use super::{Context, Run};
use crate::catalog::target::Target;
use crate::check;
use crate::check::exchange::{self, Reply, Request};
use crate::check::prepare_hint;
use crate::cli::CallArgs;
use crate::error::usage;
use crate::output::sh_quote;
use crate::output::{Output, clean};
use crate::protocol::{Action, ContentKind, FromExt, PanelContent};

impl Run for CallArgs {
    fn run(&self, ctx: &Context) -> Result<()> {
        let request = self.request()?;
        let target = Target::find(&ctx.layout, &self.name)?;
        let manifest = target
            .manifest
            .as_ref()
            .map_err(|e| anyhow!("{e}; fix the manifest first (zot ext doctor shows more)"))?;
        if target.scope.is_some() && !manifest.enabled {
            ctx.out.note(&format!(
                "note: {} is disabled: zot does not start it (zot ext enable {} turns it on); calling it anyway",
                manifest.name,
                sh_quote(&manifest.name)
            ));
        }
        let launch =
            check::launch(&target, manifest).map_err(|e| anyhow!("{}; {}", e.message, e.fix))?;
        let place = prepare_hint::place_of(&target, manifest);
        let mut prepare_fix = prepare_hint::fix_or_advice(&target.dir, manifest, place);
        if let Some((what, fix)) = prepare_hint::venv_bypassed(&target.dir, manifest) {
            ctx.out
                .note(&format!("note: {}: {what}; fix: {fix}", manifest.name));
            prepare_fix = fix;
        }
        if let Some(what) = prepare_hint::missing_step(&target.dir, manifest) {
            ctx.out.note(&format!(
                "note: {}: {what}; fix: {prepare_fix}",
                manifest.name
            ));
        }
        let timeout = self.timeout.unwrap_or_else(|| request.limit());
        let cwd = std::env::current_dir()?;
        let on_frame = |frame: &FromExt| print_frame(&ctx.out, frame);
        let (reply, transcript) = exchange::call(
            &ctx.out,
            exchange::Callee {
                name: &manifest.name,
                prepare_fix: &prepare_fix,
            },
            &launch,
            &cwd,
            &request,
            timeout,
            on_frame,
        )?;
        if ctx.out.json {
            ctx.out.json(&transcript)?;
        } else {
            ctx.out.print(&reply_text(&ctx.out, &reply))?;
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

/// Prints a note or panel the extension sends before its answer (not with `--json`, whose
/// output lists every frame).
fn print_frame(out: &Output, frame: &FromExt) -> Result<()> {
    let text = match frame {
        _ if out.json => return Ok(()),
        FromExt::Notify(n) => format!("[{}] {}\n", clean(&n.level), clean(&n.message)),
        FromExt::OpenPanel(p) => panel_frame(out, &p.panel.id, &p.panel.content),
        FromExt::PanelRender(p) => panel_frame(out, &p.panel_id, &p.content),
        _ => return Ok(()),
    };
    Ok(out.print(&text)?)
}

/// A panel frame as printed: `[panel <id>]`, then the panel.
fn panel_frame(out: &Output, id: &str, panel: &PanelContent) -> String {
    format!("[panel {}] {}", out.extension_text(id), panel_text(panel))
}

/// A panel as text: its title, then its lines and footer indented.
fn panel_text(panel: &PanelContent) -> String {
    let mut text = format!("{}\n", clean(&panel.title));
    for line in panel
        .lines
        .iter()
        .chain(Some(&panel.footer).filter(|f| !f.is_empty()))
    {
        let _ = writeln!(text, "  {}", clean(line));
    }
    text
}

/// The answer as printed: the command's action and its text, or the tool's content blocks
/// (escaped on a terminal: [`Output::extension_text`]).
fn reply_text(out: &Output, reply: &Reply) -> String {
    match reply {
        Reply::Command(r) => {
            if let Some(panel) = r
                .open_panel
                .as_ref()
                .filter(|_| r.action == Action::OpenPanel)
            {
                return format!("open_panel: {}", panel_text(&panel.content));
            }
            let text = match r.action {
                Action::Prompt => Some(&r.prompt),
                Action::Insert => Some(&r.insert),
                Action::Display => Some(&r.display),
                _ => None,
            };
            match text.map(|t| out.extension_text(t)) {
                Some(text) if text.contains('\n') => format!("{}:\n{text}\n", r.action),
                Some(text) => format!("{}: {text}\n", r.action),
                None => format!("{}\n", r.action),
            }
        }
        Reply::Tool(r) => r
            .content
            .iter()
            .map(|block| match &block.kind {
                ContentKind::Text => format!("{}\n", out.extension_text(&block.text)),
                ContentKind::Image => format!(
                    "[image {}, {}]\n",
                    out.extension_text(&block.mime_type),
                    image_size(&block.data)
                ),
                ContentKind::Unknown(other) => {
                    format!("[{} block]\n", out.extension_text(other))
                }
            })
            .collect(),
    }
}

/// The size of an image sent as base64 `data` (with the `base64` crate's standard engine,
/// as Go's `encoding/base64.StdEncoding` writes it), or that it is not base64.
fn image_size(data: &str) -> String {
    match STANDARD.decode(data.trim()) {
        Ok(bytes) => format!("{} bytes", bytes.len()),
        Err(_) => "not valid base64".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::time::Duration;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(std::string::ToString::to_string).collect()
    }

    #[test]
    fn the_default_timeouts_are_zots_limits_and_the_help_says_so() {
        use clap::CommandFactory;

        let command = command_request(&strings(&["/clock"])).unwrap();
        let tool = tool_request("clock", &[]).unwrap();
        assert_eq!(command.limit(), Duration::from_secs(30));
        assert_eq!(tool.limit(), Duration::from_secs(60));
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

    fn reply(line: &str) -> Reply {
        match serde_json::from_str::<FromExt>(line).unwrap() {
            FromExt::CommandResponse(r) => Reply::Command(*r),
            FromExt::ToolResult(r) => Reply::Tool(r),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn replies_print_by_action_and_block_kind() {
        let printed = |line: &str| reply_text(&Output::plain(), &reply(line));
        assert_eq!(
            printed(r#"{"type":"command_response","id":"1","action":"insert","insert":"a\nb"}"#),
            "insert:\na\nb\n"
        );
        assert_eq!(
            printed(r#"{"type":"command_response","id":"1","action":"display","display":"hi"}"#),
            "display: hi\n"
        );
        assert_eq!(
            printed(r#"{"type":"command_response","id":"1","action":"later","prompt":"x"}"#),
            "later\n"
        );
        assert_eq!(
            printed(
                r#"{"type":"tool_result","id":"1","content":[{"type":"text","text":"t"},{"type":"image","mime_type":"image/png","data":"aGk="},{"type":"audio"}]}"#
            ),
            "t\n[image image/png, 2 bytes]\n[audio block]\n"
        );
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
