# hello-venv: a Python extension that runs in its own virtual environment (.venv).
# zot starts it as `.venv/bin/python hello_venv.py` in the extension's folder, so the
# packages installed in .venv are importable here. Standard library only, so creating
# the venv needs no network; add `.venv/bin/pip install ...` for real dependencies.
import json
import sys


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def in_venv():
    return sys.prefix != sys.base_prefix


emit({"type": "hello", "name": "hello-venv", "version": "1.0.0", "capabilities": ["commands"]})
emit({"type": "register_command", "name": "hellovenv", "description": "say where the venv is"})
emit({"type": "ready"})

for line in sys.stdin:
    line = line.strip()
    if not line:
        continue
    try:
        msg = json.loads(line)
    except json.JSONDecodeError:
        print(f"hello-venv: ignoring a line that is not JSON: {line[:80]!r}", file=sys.stderr)
        continue
    if not isinstance(msg, dict):
        continue
    kind = msg.get("type")
    if kind == "command_invoked":
        where = f"a virtual environment at {sys.prefix}" if in_venv() else "no virtual environment"
        emit({"type": "command_response", "id": msg.get("id"), "action": "display",
              "display": f"hello from {where}"})
    elif kind == "shutdown":
        emit({"type": "shutdown_ack"})
        break
    # Anything else (hello_ack, events, frames from newer protocol versions) is ignored.

sys.exit(0)
