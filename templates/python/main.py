#!/usr/bin/env python3
"""__NAME__: a zot extension.

Registers the /__COMMAND__ slash command and the __TOOL__ tool. It speaks
newline-delimited JSON on stdin/stdout; messages for people go to stderr, which
zot keeps in $ZOT_HOME/logs/ext-__NAME__.log. Python 3 standard library only.
"""
import json
import sys

NAME = "__NAME__"
VERSION = "0.1.0"


def send(frame):
    """Writes one frame as one line, flushed: output to a pipe is buffered."""
    sys.stdout.write(json.dumps(frame) + "\n")
    sys.stdout.flush()


def log(message):
    print(f"{NAME}: {message}", file=sys.stderr, flush=True)


def register():
    """Announces the command and the tool once zot has answered hello, then ready."""
    send({"type": "register_command", "name": "__COMMAND__",
          "description": f"say hello from {NAME}"})
    send({
        "type": "register_tool",
        "name": "__TOOL__",
        "description": "Echo a text back (an example tool).",
        "schema": {
            "type": "object",
            "properties": {"text": {"type": "string", "description": "the text to echo"}},
            "required": ["text"],
        },
    })
    send({"type": "ready"})


def on_command(frame):
    """/__COMMAND__ [args]: shows a note in the chat, without a model call."""
    args = frame.get("args") or ""
    text = f"hello from {NAME}" + (f", you said: {args}" if args else "")
    send({"type": "command_response", "id": frame.get("id"),
          "action": "display", "display": text})


def on_tool(frame):
    """The __TOOL__ tool: answers with the "text" argument."""
    args = frame.get("args")
    text = args.get("text") if isinstance(args, dict) else None
    if not isinstance(text, str):
        send({"type": "tool_result", "id": frame.get("id"), "is_error": True,
              "content": [{"type": "text", "text": "\"text\" must be a string"}]})
        return
    send({"type": "tool_result", "id": frame.get("id"),
          "content": [{"type": "text", "text": text}]})


def main():
    send({"type": "hello", "name": NAME, "version": VERSION,
          "capabilities": ["commands", "tools"]})
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            frame = json.loads(line)
        except ValueError:
            log(f"ignoring a line that is not JSON: {line[:80]!r}")
            continue
        kind = frame.get("type") if isinstance(frame, dict) else None
        if kind == "hello_ack":
            register()
        elif kind == "command_invoked":
            on_command(frame)
        elif kind == "tool_call":
            on_tool(frame)
        elif kind == "shutdown":
            send({"type": "shutdown_ack"})
            return
        # Anything else (events, frames of newer zot versions) is ignored.


if __name__ == "__main__":
    main()
