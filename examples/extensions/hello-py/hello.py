#!/usr/bin/env python3
# hello-py: the Python quick-start extension from the zot extension docs.
# Speaks newline-delimited JSON over stdin/stdout; no SDK required.
import json
import os
import sys

# Where the extension keeps its state: data_dir from hello_ack (zot gives every extension
# its own folder), until then the script's folder.
data_dir = os.path.dirname(os.path.abspath(__file__))


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


emit({"type": "hello", "name": "hello-py", "version": "1.0.0", "capabilities": ["commands"]})
emit({"type": "register_command", "name": "hellopy", "description": "say hi (python)"})
emit({"type": "register_command", "name": "hellocount", "description": "count greetings (state.json)"})
emit({"type": "ready"})

def count_greeting(folder):
    """Adds one to the count in <folder>/state.json (written atomically) and returns it."""
    path = os.path.join(folder, "state.json")
    try:
        with open(path) as f:
            count = int(json.load(f).get("greetings", 0))
    except (OSError, ValueError, AttributeError):
        count = 0
    count += 1
    with open(path + ".tmp", "w") as f:
        json.dump({"greetings": count}, f)
    os.replace(path + ".tmp", path)
    return count


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
    if kind == "hello_ack" and isinstance(msg.get("data_dir"), str):
        data_dir = msg["data_dir"]
    elif kind == "command_invoked" and msg.get("name") == "hellocount":
        emit({"type": "command_response", "id": msg.get("id"), "action": "display",
              "display": f"greetings so far: {count_greeting(data_dir)}"})
    elif kind == "command_invoked":
        emit({"type": "command_response", "id": msg.get("id"), "action": "prompt",
              "prompt": "Greet me very briefly. Add one emoji."})
    elif kind == "shutdown":
        emit({"type": "shutdown_ack"})
        break
    # Anything else (hello_ack, events, frames from newer protocol versions) is ignored.

sys.exit(0)
