#!/usr/bin/env python3
"""Protocol smoke test for zot extensions.

Usage: check.py EXTENSION_DIR [EXTENSION_DIR ...]

Starts each extension the way the zot host does (working directory = the
extension's folder, `exec` from extension.json resolved relative to it, plus
`args`), then walks through one session:

  hello -> hello_ack -> registrations until ready (5s)
  -> command_invoked (first command, id "1") -> command_response id "1"
  -> tool_call (first tool, id "2", args {}) -> tool_result id "2"
  -> shutdown -> shutdown_ack (2s) -> process exit (2s)

Prints one line per step and exits 0 when every extension passes, 1 when one
fails (with the reason and the extension's stderr), 2 on bad usage.
Python 3 standard library only.
"""

import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time

READY_TIMEOUT = 5.0     # hello + registrations + ready
REPLY_TIMEOUT = 5.0     # command_response / tool_result
SHUTDOWN_TIMEOUT = 2.0  # shutdown_ack, then again for the exit

COMMAND_ACTIONS = {"prompt", "insert", "display", "noop"}
REGISTRATION_FRAMES = {"register_command", "register_tool", "subscribe", "notify"}


class CheckFailed(Exception):
    pass


class Session:
    def __init__(self, ext_dir):
        self.dir = os.path.abspath(ext_dir)
        self.manifest = self._read_manifest()
        exec_path = self.manifest["exec"]
        if not os.path.isabs(exec_path):
            exec_path = os.path.normpath(os.path.join(self.dir, exec_path))
        if not os.path.isfile(exec_path):
            raise CheckFailed(f"exec {self.manifest['exec']!r} does not exist ({exec_path})")
        if not os.access(exec_path, os.X_OK):
            raise CheckFailed(f"exec {exec_path} is not executable (chmod +x it)")
        args = self.manifest.get("args") or []
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise CheckFailed("extension.json: args must be a list of strings")
        self.argv = [exec_path] + args
        self.stderr = tempfile.TemporaryFile()
        self.frames = queue.Queue()
        self.proc = None

    def _read_manifest(self):
        path = os.path.join(self.dir, "extension.json")
        try:
            with open(path, encoding="utf-8") as f:
                manifest = json.load(f)
        except FileNotFoundError:
            raise CheckFailed(f"{path} not found")
        except (OSError, ValueError) as e:
            raise CheckFailed(f"{path}: {e}")
        if not isinstance(manifest, dict):
            raise CheckFailed(f"{path}: expected a JSON object")
        for field in ("name", "exec"):
            if not isinstance(manifest.get(field), str) or not manifest[field]:
                raise CheckFailed(f"{path}: {field!r} is required and must be a string")
        return manifest

    def start(self):
        try:
            self.proc = subprocess.Popen(
                self.argv, cwd=self.dir, stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=self.stderr,
            )
        except OSError as e:
            raise CheckFailed(f"cannot start {' '.join(self.argv)}: {e}")
        threading.Thread(target=self._read_stdout, daemon=True).start()

    def _read_stdout(self):
        for raw in self.proc.stdout:
            self.frames.put(raw)
        self.frames.put(None)  # EOF

    def send(self, frame):
        try:
            self.proc.stdin.write((json.dumps(frame) + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as e:
            raise CheckFailed(f"cannot send {frame['type']}: the extension's stdin is closed ({e})")

    def receive(self, deadline, waiting_for):
        """The next frame as a dict; fails on timeout, EOF or a malformed line."""
        remaining = deadline - time.monotonic()
        try:
            raw = self.frames.get(timeout=max(remaining, 0))
        except queue.Empty:
            raise CheckFailed(f"timed out waiting for {waiting_for}")
        if raw is None:
            code = self.proc.wait()
            raise CheckFailed(f"stdout closed (exit status {code}) while waiting for {waiting_for}")
        text = raw.decode("utf-8", "replace").strip()
        try:
            frame = json.loads(text)
        except ValueError:
            raise CheckFailed(f"not a JSON line on stdout: {text[:120]!r}")
        if not isinstance(frame, dict) or not isinstance(frame.get("type"), str):
            raise CheckFailed(f"frame without a string \"type\": {text[:120]}")
        return frame

    def stderr_text(self):
        self.stderr.seek(0)
        return self.stderr.read().decode("utf-8", "replace")

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def step(message):
    print(f"  ok  {message}", flush=True)


def expect_reply(session, reply_type, frame_id, timeout):
    """Waits for `reply_type` (with `frame_id` unless None), allowing notify frames in between."""
    deadline = time.monotonic() + timeout
    while True:
        frame = session.receive(deadline, f"{reply_type} with id {frame_id!r}")
        if frame["type"] == "notify":
            continue
        if frame["type"] != reply_type:
            raise CheckFailed(f"expected {reply_type}, got {json.dumps(frame)}")
        if frame_id is not None and frame.get("id") != frame_id:
            raise CheckFailed(f"{reply_type} has id {frame.get('id')!r}, expected {frame_id!r}")
        return frame


def run_session(s):
    name = s.manifest["name"]
    s.start()
    step(f"started {' '.join(s.argv)} in {s.dir}")

    deadline = time.monotonic() + READY_TIMEOUT
    hello = s.receive(deadline, "hello")
    if hello["type"] != "hello":
        raise CheckFailed(f"first frame must be hello, got {json.dumps(hello)}")
    if hello.get("name") != name:
        raise CheckFailed(f"hello name {hello.get('name')!r} does not match extension.json name {name!r}")
    step(f"hello: {hello.get('name')} {hello.get('version', '')} capabilities={hello.get('capabilities', [])}")

    s.send({"type": "hello_ack", "protocol_version": 1, "zot_version": "0.0.0",
            "provider": "test", "model": "test", "cwd": s.dir})

    commands, tools = [], []
    while True:
        frame = s.receive(deadline, "ready")
        kind = frame["type"]
        if kind == "ready":
            break
        if kind not in REGISTRATION_FRAMES:
            raise CheckFailed(f"unexpected frame before ready: {json.dumps(frame)}")
        if kind in ("register_command", "register_tool") and not isinstance(frame.get("name"), str):
            raise CheckFailed(f"{kind} without a string name: {json.dumps(frame)}")
        if kind == "register_command":
            commands.append(frame["name"])
        elif kind == "register_tool":
            schema = frame.get("schema")
            if not isinstance(schema, dict) or schema.get("type") != "object":
                raise CheckFailed(f"register_tool {frame['name']!r}: schema must be a JSON Schema object with type \"object\"")
            tools.append(frame["name"])
    step(f"ready: commands={commands} tools={tools}")

    if commands:
        s.send({"type": "command_invoked", "id": "1", "name": commands[0], "args": ""})
        reply = expect_reply(s, "command_response", "1", REPLY_TIMEOUT)
        action = reply.get("action")
        if action not in COMMAND_ACTIONS:
            raise CheckFailed(f"command_response action {action!r} is not one of {sorted(COMMAND_ACTIONS)}")
        if action in ("prompt", "insert", "display") and not isinstance(reply.get(action), str):
            raise CheckFailed(f"command_response with action {action!r} lacks a string {action!r} field")
        step(f"/{commands[0]} -> command_response action={action}")
    else:
        step("no commands registered; command_invoked skipped")

    if tools:
        s.send({"type": "tool_call", "id": "2", "name": tools[0], "args": {}})
        reply = expect_reply(s, "tool_result", "2", REPLY_TIMEOUT)
        content = reply.get("content")
        if not isinstance(content, list) or not all(
                isinstance(b, dict) and b.get("type") in ("text", "image") for b in content):
            raise CheckFailed(f"tool_result content must be a list of text/image blocks: {json.dumps(reply)}")
        texts = [b.get("text", "") for b in content if b.get("type") == "text"]
        step(f"tool {tools[0]} -> tool_result is_error={bool(reply.get('is_error'))} text={' '.join(texts)[:60]!r}")
    else:
        step("no tools registered; tool_call skipped")

    s.send({"type": "shutdown"})
    expect_reply(s, "shutdown_ack", None, SHUTDOWN_TIMEOUT)
    try:
        code = s.proc.wait(timeout=SHUTDOWN_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise CheckFailed(f"sent shutdown_ack but did not exit within {SHUTDOWN_TIMEOUT:g}s")
    step(f"shutdown -> shutdown_ack, exited with status {code}")


def check(ext_dir):
    print(f"{ext_dir}:", flush=True)
    session = None
    try:
        session = Session(ext_dir)
        run_session(session)
        print(f"PASS {ext_dir}", flush=True)
        return True
    except CheckFailed as e:
        print(f"FAIL {ext_dir}: {e}", file=sys.stderr, flush=True)
        if session:
            session.kill()
            err = session.stderr_text().strip()
            if err:
                print("---- extension stderr ----\n" + err + "\n--------------------------", file=sys.stderr)
        return False


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr if len(argv) < 2 else sys.stdout)
        return 2 if len(argv) < 2 else 0
    results = [check(d) for d in argv[1:]]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
