//! __NAME__: a zot extension in Rust.
//!
//! Registers the /__COMMAND__ slash command and the __TOOL__ tool. It speaks
//! newline-delimited JSON on stdin/stdout; messages for people go to stderr, which
//! zot keeps in $ZOT_HOME/logs/ext-__NAME__.log.
//!
//! Build it with `cargo build --release`; extension.json runs target/release/__BINARY__.

use std::io::{self, BufRead, Write};

use serde_json::{json, Value};

const NAME: &str = "__NAME__";
const VERSION: &str = "0.1.0";

/// Writes one frame as one line, flushed so that zot sees it now.
fn send(frame: Value) {
    let mut out = io::stdout().lock();
    if writeln!(out, "{frame}").and_then(|()| out.flush()).is_err() {
        // zot has gone away.
        std::process::exit(1);
    }
}

/// Announces the command and the tool once zot has answered hello, then ready.
fn register() {
    send(json!({"type": "register_command", "name": "__COMMAND__",
                "description": format!("say hello from {NAME}")}));
    send(json!({
        "type": "register_tool",
        "name": "__TOOL__",
        "description": "Echo a text back (an example tool).",
        "schema": {
            "type": "object",
            "properties": {"text": {"type": "string", "description": "the text to echo"}},
            "required": ["text"]
        }
    }));
    send(json!({"type": "ready"}));
}

/// /__COMMAND__ [args]: a note in the chat, without a model call.
fn on_command(frame: &Value) {
    let args = frame["args"].as_str().unwrap_or("").trim();
    let mut text = format!("hello from {NAME}");
    if !args.is_empty() {
        text.push_str(&format!(", you said: {args}"));
    }
    send(json!({"type": "command_response", "id": frame["id"], "action": "display", "display": text}));
}

/// The __TOOL__ tool: answers with the "text" argument.
fn on_tool(frame: &Value) {
    let reply = match frame["args"]["text"].as_str() {
        Some(text) => json!({"type": "tool_result", "id": frame["id"],
                             "content": [{"type": "text", "text": text}]}),
        None => json!({"type": "tool_result", "id": frame["id"], "is_error": true,
                       "content": [{"type": "text", "text": "\"text\" must be a string"}]}),
    };
    send(reply);
}

fn main() {
    send(json!({"type": "hello", "name": NAME, "version": VERSION,
                "capabilities": ["commands", "tools"]}));
    for line in io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        if line.trim().is_empty() {
            continue;
        }
        let frame: Value = match serde_json::from_str(&line) {
            Ok(frame) => frame,
            Err(e) => {
                eprintln!("{NAME}: ignoring a line that is not JSON: {e}");
                continue;
            }
        };
        match frame["type"].as_str() {
            Some("hello_ack") => register(),
            Some("command_invoked") => on_command(&frame),
            Some("tool_call") => on_tool(&frame),
            Some("shutdown") => {
                send(json!({"type": "shutdown_ack"}));
                return;
            }
            // Events and frames of newer zot versions are ignored.
            _ => {}
        }
    }
}
