#!/usr/bin/env node
// __NAME__: a zot extension in plain Node (no dependencies).
// Registers the /__COMMAND__ slash command and the __TOOL__ tool. It speaks
// newline-delimited JSON on stdin/stdout; messages for people go to stderr, which
// zot keeps in $ZOT_HOME/logs/ext-__NAME__.log.
"use strict";

const readline = require("node:readline");

const NAME = "__NAME__";
const VERSION = "0.1.0";

function send(frame) {
  process.stdout.write(JSON.stringify(frame) + "\n");
}

function log(message) {
  process.stderr.write(`${NAME}: ${message}\n`);
}

// Announces the command and the tool once zot has answered hello, then ready.
function register() {
  send({ type: "register_command", name: "__COMMAND__", description: `say hello from ${NAME}` });
  send({
    type: "register_tool",
    name: "__TOOL__",
    description: "Echo a text back (an example tool).",
    schema: {
      type: "object",
      properties: { text: { type: "string", description: "the text to echo" } },
      required: ["text"],
    },
  });
  send({ type: "ready" });
}

// /__COMMAND__ [args]: shows a note in the chat, without a model call.
function onCommand(frame) {
  const args = typeof frame.args === "string" ? frame.args : "";
  const text = `hello from ${NAME}` + (args ? `, you said: ${args}` : "");
  send({ type: "command_response", id: frame.id, action: "display", display: text });
}

// The __TOOL__ tool: answers with the "text" argument.
function onTool(frame) {
  const text = frame.args && typeof frame.args === "object" ? frame.args.text : undefined;
  if (typeof text !== "string") {
    send({ type: "tool_result", id: frame.id, is_error: true,
           content: [{ type: "text", text: '"text" must be a string' }] });
    return;
  }
  send({ type: "tool_result", id: frame.id, content: [{ type: "text", text }] });
}

let stopping = false;
const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });

function handle(frame) {
  switch (frame.type) {
    case "hello_ack":
      register();
      break;
    case "command_invoked":
      onCommand(frame);
      break;
    case "tool_call":
      onTool(frame);
      break;
    case "shutdown":
      stopping = true;
      lines.close();
      send({ type: "shutdown_ack" });
      process.stdout.write("", () => process.exit(0)); // exit once stdout is flushed
      break;
    default:
      // Events and frames of newer zot versions are ignored.
      break;
  }
}

send({ type: "hello", name: NAME, version: VERSION, capabilities: ["commands", "tools"] });

lines.on("line", (line) => {
  if (stopping || !line.trim()) return;
  let frame;
  try {
    frame = JSON.parse(line);
  } catch {
    log(`ignoring a line that is not JSON: ${line.slice(0, 80)}`);
    return;
  }
  if (frame && typeof frame === "object") handle(frame);
});
// zot went away without a shutdown frame: leave too.
lines.on("close", () => {
  if (!stopping) process.exit(0);
});
