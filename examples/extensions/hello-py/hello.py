#!/usr/bin/env python3
# hello-py: the Python quick-start extension from the zot extension docs.
# Speaks newline-delimited JSON over stdin/stdout; no SDK required.
import json
import sys


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


emit({"type": "hello", "name": "hello-py", "version": "1.0.0", "capabilities": ["commands"]})
emit({"type": "register_command", "name": "hellopy", "description": "say hi (python)"})
emit({"type": "ready"})

for line in sys.stdin:
    line = line.strip()
    if not line:
        continue
    try:
        msg = json.loads(line)
    except json.JSONDecodeError:
        print(f"hello-py: ignoring a line that is not JSON: {line[:80]!r}", file=sys.stderr)
        continue
    if not isinstance(msg, dict):
        continue
    kind = msg.get("type")
    if kind == "command_invoked":
        emit({"type": "command_response", "id": msg.get("id"), "action": "prompt",
              "prompt": "Greet me very briefly. Add one emoji."})
    elif kind == "shutdown":
        emit({"type": "shutdown_ack"})
        break
    # Anything else (hello_ack, events, frames from newer protocol versions) is ignored.

sys.exit(0)
