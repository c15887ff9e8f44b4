#!/usr/bin/env node
// clock: a zot extension in plain Node (no dependencies, no SDK).
// Registers the /clock slash command and the `clock` tool the LLM can call.
// Protocol: newline-delimited JSON over stdin/stdout; stderr goes to zot's log.
"use strict";

const readline = require("node:readline");

function emit(frame) {
  process.stdout.write(JSON.stringify(frame) + "\n");
}

function log(message) {
  process.stderr.write(`clock: ${message}\n`);
}

// The current time, in `timezone` (an IANA name such as "Europe/Berlin") if given.
function now(timezone) {
  const date = new Date();
  const options = {
    dateStyle: "full",
    timeStyle: "long",
    ...(timezone ? { timeZone: timezone } : {}),
  };
  return new Intl.DateTimeFormat("en-GB", options).format(date);
}

emit({ type: "hello", name: "clock", version: "1.0.0", capabilities: ["commands", "tools"] });
emit({ type: "register_command", name: "clock", description: "show the current time" });
emit({
  type: "register_tool",
  name: "clock",
  description: "Get the current date and time, optionally in a given IANA time zone.",
  schema: {
    type: "object",
    properties: {
      timezone: {
        type: "string",
        description: 'IANA time zone name, e.g. "Europe/Berlin"; defaults to the local zone',
      },
    },
  },
});
emit({ type: "ready" });

let shuttingDown = false;

function handle(msg) {
  switch (msg.type) {
    case "command_invoked": {
      const zone = typeof msg.args === "string" ? msg.args.trim() : "";
      try {
        emit({ type: "command_response", id: msg.id, action: "display", display: now(zone) });
      } catch (e) {
        emit({ type: "command_response", id: msg.id, action: "noop", error: `unknown time zone: ${zone}` });
      }
      break;
    }
    case "tool_call": {
      const args = msg.args && typeof msg.args === "object" ? msg.args : {};
      const zone = args.timezone;
      if (zone !== undefined && typeof zone !== "string") {
        emit({ type: "tool_result", id: msg.id, is_error: true,
               content: [{ type: "text", text: "timezone must be a string" }] });
        break;
      }
      try {
        emit({ type: "tool_result", id: msg.id, content: [{ type: "text", text: now(zone) }] });
      } catch (e) {
        emit({ type: "tool_result", id: msg.id, is_error: true,
               content: [{ type: "text", text: `unknown time zone: ${zone}` }] });
      }
      break;
    }
    case "shutdown":
      shuttingDown = true;
      lines.close();
      emit({ type: "shutdown_ack" });
      // Exit once stdout is flushed.
      process.stdout.write("", () => process.exit(0));
      break;
    default:
      // hello_ack, events and frames from newer protocol versions: nothing to do.
      break;
  }
}

const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
lines.on("line", (line) => {
  if (shuttingDown || !line.trim()) return;
  let msg;
  try {
    msg = JSON.parse(line);
  } catch (e) {
    log(`ignoring a line that is not JSON: ${line.slice(0, 80)}`);
    return;
  }
  if (msg && typeof msg === "object") handle(msg);
});
// The host went away without a shutdown frame: leave too.
lines.on("close", () => {
  if (!shuttingDown) process.exit(0);
});
