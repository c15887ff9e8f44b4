#!/usr/bin/env python3
"""Fixture generators and measuring helpers for bench/run (Python 3 standard library only).

Subcommands:
  node DIR FILES NAME          a node_modules-like extension tree of FILES files
  big DIR FILES BYTES NAME     an extension of FILES incompressible files of BYTES each
  exts EXT_DIR COUNT           COUNT installed extensions (manifest + run.sh) in EXT_DIR
  doctor EXT_DIR COUNT WAIT    COUNT extensions that sleep WAIT seconds before hello
  log PATH BYTES               a log of BYTES bytes of 107-byte lines
  project FILE URL...          a project file naming one git extension per URL
  rss CMD...                   run CMD (stdout to /dev/null), print its peak RSS in KiB
  follow LOG PROBES CMD...     append PROBES lines to LOG; print each follower's latencies
                               (one line per follower: microseconds, space-separated);
                               followers are the commands separated by "--"
  httpd ROOT PORTFILE          serve git smart HTTP from ROOT via git http-backend on
                               127.0.0.1 (a free port, written to PORTFILE)
  go DIR NAME                  a Go extension using only the standard library, exec ./NAME
  npm REG DIR COUNT            COUNT small packages (tarballs) in the registry folder REG and
                               an npm extension in DIR depending on all of them
  npmreg REG PORTFILE          serve REG as an npm registry on 127.0.0.1 (a free port,
                               written to PORTFILE)
Every tree is generated from a fixed seed, so two runs build the same bytes.
"""

import json
import os
import random
import select
import subprocess
import sys
import time


def write(path, data, mode=0o644):
    with open(path, "wb") as f:
        f.write(data)
    os.chmod(path, mode)


def manifest(name, exec_path="./run.sh"):
    return json.dumps({"name": name, "version": "1.0.0", "exec": exec_path,
                       "language": "shell", "description": "benchmark fixture"}, indent=2).encode()


def node(root, files, name):
    """A tree shaped like node_modules: many packages of small files, some nested, with
    package.json files and .bin links, sizes skewed small (median ~1.5 KiB)."""
    rng = random.Random(42)
    os.makedirs(root)
    write(os.path.join(root, "extension.json"), manifest(name, "./bin/run"))
    os.makedirs(os.path.join(root, "bin"))
    write(os.path.join(root, "bin", "run"), b"#!/bin/sh\nexec cat\n", 0o755)
    made, pkg, total = 2, 0, 0
    bindir = os.path.join(root, "node_modules", ".bin")
    os.makedirs(bindir)
    while made < files:
        parent = os.path.join(root, "node_modules")
        if pkg % 7 == 3:  # a nested dependency
            parent = os.path.join(parent, f"pkg{pkg - 1:05}", "node_modules")
        top = os.path.join(parent, f"pkg{pkg:05}")
        os.makedirs(os.path.join(top, "lib", "util"), exist_ok=True)
        write(os.path.join(top, "package.json"),
              json.dumps({"name": f"pkg{pkg:05}", "version": "1.0.0", "main": "lib/index.js"}).encode())
        made += 1
        for i in range(min(rng.randint(4, 30), files - made)):
            size = min(int(rng.lognormvariate(7.3, 1.1)), 256 << 10)
            sub = "lib" if i % 3 else os.path.join("lib", "util")
            exe = i == 0 and pkg % 5 == 0
            path = os.path.join(top, sub, f"file{i:03}.js")
            write(path, rng.randbytes(size), 0o755 if exe else 0o644)
            if exe:
                os.symlink(os.path.relpath(path, bindir), os.path.join(bindir, f"pkg{pkg:05}"))
            made += 1
            total += size
        pkg += 1
    print(f"{root}: {made} files, {pkg} packages, {total / 1e6:.1f} MB")


def big(root, files, size, name):
    rng = random.Random(7)
    os.makedirs(os.path.join(root, "data"))
    write(os.path.join(root, "extension.json"), manifest(name))
    write(os.path.join(root, "run.sh"), b"#!/bin/sh\nexec cat\n", 0o755)
    for i in range(files - 2):
        write(os.path.join(root, "data", f"blob{i:04}.bin"), rng.randbytes(size))
    print(f"{root}: {files} files, {(files - 2) * size / 1e6:.0f} MB")


def exts(ext_dir, count):
    for i in range(count):
        name = f"ext-{i:05}"
        d = os.path.join(ext_dir, name)
        os.makedirs(d)
        body = json.loads(manifest(name))
        body["version"] = f"1.{i % 7}.{i % 13}"
        body["enabled"] = i % 10 != 0
        write(os.path.join(d, "extension.json"), json.dumps(body, indent=2).encode())
        write(os.path.join(d, "run.sh"), b"#!/bin/sh\nexec cat\n", 0o755)
    print(f"{ext_dir}: {count} extensions")


DOCTOR_SCRIPT = """#!/bin/sh
# Waits before hello, like a slow start; sends ready at once; acknowledges shutdown.
sleep {wait}
printf '%s\\n' '{{"type":"hello","name":"{name}","version":"1.0.0"}}'
printf '%s\\n' '{{"type":"ready"}}'
while IFS= read -r line; do
  case $line in *'"shutdown"'*) printf '%s\\n' '{{"type":"shutdown_ack"}}'; exit 0 ;; esac
done
"""


def doctor(ext_dir, count, wait):
    for i in range(1, count + 1):
        name = f"doc-{i:02}"
        d = os.path.join(ext_dir, name)
        os.makedirs(d)
        write(os.path.join(d, "extension.json"), manifest(name))
        write(os.path.join(d, "run.sh"), DOCTOR_SCRIPT.format(wait=wait, name=name).encode(), 0o755)
    print(f"{ext_dir}: {count} extensions waiting {wait} s before hello")


def log(path, size):
    line = "2026-01-01T12:00:00Z bench[4242]: request {:09d} handled in 12.5ms, cache hit ratio 0.93, queue depth 7\n"
    written, i = 0, 0
    with open(path, "w") as f:
        while written < size:
            chunk = "".join(line.format(n) for n in range(i, i + 10000))
            chunk = chunk[: size - written]
            f.write(chunk)
            written += len(chunk)
            i += 10000
    print(f"{path}: {written / 1e6:.0f} MB")


def project(path, urls):
    entries = {u.rsplit("/", 1)[1].removesuffix(".git"): {"source": u} for u in urls}
    os.makedirs(os.path.dirname(path), exist_ok=True)
    write(path, json.dumps({"extensions": entries}, indent=2).encode() + b"\n")


def rss(cmd):
    """Peak RSS of CMD alone. Linux counts, in the peak RSS of a process, that of the memory
    it had before its exec: a child of this Python process (forked or vforked) would report
    Python's own peak (some 15 MiB) for any command. So a small shell forks CMD's process,
    which waits on a pipe, and exits; this process, made a child subreaper, inherits the
    orphan, lets it run CMD only then (so the shell can never reap it) and takes the peak
    from its own wait4."""
    import ctypes
    pr_set_child_subreaper = 36
    if ctypes.CDLL(None, use_errno=True).prctl(pr_set_child_subreaper, 1, 0, 0, 0) != 0:
        sys.exit(f"rss: prctl(PR_SET_CHILD_SUBREAPER) failed: {os.strerror(ctypes.get_errno())}")
    gate, opener = os.pipe()
    script = 'exec 3<&0 </dev/null; (read -r _ <&3; exec 3<&- "$@") >/dev/null & echo $!'
    started = subprocess.run(["sh", "-c", script, "sh", *cmd], stdin=gate,
                             stdout=subprocess.PIPE, check=True, text=True)
    os.close(gate)
    os.close(opener)
    _, status, usage = os.wait4(int(started.stdout), 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise subprocess.CalledProcessError(os.waitstatus_to_exitcode(status), cmd)
    print(usage.ru_maxrss)


def follow(path, probes, commands):
    """Starts every follower, waits until each prints a line appended after it started,
    then appends PROBES lines one at a time and records, per follower, the time from the
    write to the line arriving on its stdout. A follower that misses a line for 2 s fails."""
    procs = [subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL) for c in commands]
    bufs = [b""] * len(procs)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)

    def wait_for(marker, deadline):
        """Arrival time of the first line holding marker, per follower (None: never)."""
        arrived = [None] * len(procs)
        while None in arrived:
            left = deadline - time.perf_counter()
            if left <= 0:
                break
            ready, _, _ = select.select([p.stdout for p in procs], [], [], left)
            now = time.perf_counter()
            for r in ready:
                k = [p.stdout for p in procs].index(r)
                data = os.read(r.fileno(), 65536)
                if not data:
                    raise SystemExit(f"follower {k + 1} exited: {' '.join(commands[k])}")
                bufs[k] += data
            for k in range(len(procs)):
                if arrived[k] is None and marker in bufs[k]:
                    arrived[k] = now
                    bufs[k] = bufs[k][bufs[k].index(marker) + len(marker):]
        return arrived

    try:
        start = time.perf_counter()
        for k in range(100):  # until every follower is watching
            os.write(fd, f"warm-up {k}\n".encode())
            got = wait_for(f"warm-up {k}\n".encode(), time.perf_counter() + 0.1)
            if None not in got:
                break
            if time.perf_counter() - start > 10:
                raise SystemExit("a follower printed nothing for 10 s")
        time.sleep(0.1)
        for k in range(len(bufs)):
            bufs[k] = b""
        lat = [[] for _ in procs]
        rng = random.Random(3)
        for i in range(probes):
            marker = f"probe {i} ".encode()
            t0 = time.perf_counter()
            os.write(fd, marker + b"x" * 60 + b"\n")
            arrived = wait_for(marker, t0 + 2.0)
            for k, t in enumerate(arrived):
                if t is None:
                    raise SystemExit(f"follower {k + 1} did not print line {i} within 2 s: {' '.join(commands[k])}")
                lat[k].append(int((t - t0) * 1e6))
            time.sleep(rng.uniform(0.01, 0.03))
        for row in lat:
            print(" ".join(map(str, row)))
    finally:
        for p in procs:
            p.kill()
            p.wait()


def httpd(root, portfile):
    import http.server

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def body(self):
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                data = b""
                while True:
                    n = int(self.rfile.readline().split(b";")[0], 16)
                    if n == 0:
                        self.rfile.readline()
                        return data
                    data += self.rfile.read(n)
                    self.rfile.readline()
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))

        def handle_git(self):
            path, _, query = self.path.partition("?")
            data = self.body() if self.command == "POST" else b""
            env = {"PATH": os.environ["PATH"], "GIT_PROJECT_ROOT": root, "GIT_HTTP_EXPORT_ALL": "1",
                   "REQUEST_METHOD": self.command, "PATH_INFO": path, "QUERY_STRING": query,
                   "REMOTE_ADDR": "127.0.0.1", "CONTENT_TYPE": self.headers.get("Content-Type", ""),
                   "CONTENT_LENGTH": str(len(data))}
            for key, value in self.headers.items():
                if key.lower() not in ("content-type", "content-length", "transfer-encoding"):
                    env["HTTP_" + key.upper().replace("-", "_")] = value
            out = subprocess.run(["git", "http-backend"], input=data, env=env,
                                 capture_output=True).stdout
            head, _, payload = out.partition(b"\r\n\r\n")
            if not _:
                head, _, payload = out.partition(b"\n\n")
            status, headers = 200, []
            for line in head.decode("latin-1").splitlines():
                key, _, value = line.partition(":")
                if key.lower() == "status":
                    status = int(value.split()[0])
                elif key:
                    headers.append((key, value.strip()))
            self.send_response(status)
            for key, value in headers:
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_POST = handle_git

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with open(portfile + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(portfile + ".tmp", portfile)
    server.serve_forever()


GO_MAIN = b"""package main

// A line-oriented extension: answers each JSON request on stdin with one on stdout.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"
)

type frame struct {
	Type string          `json:"type"`
	ID   string          `json:"id,omitempty"`
	Args map[string]any  `json:"args,omitempty"`
	Data json.RawMessage `json:"data,omitempty"`
}

func reply(out *json.Encoder, f frame, data any) error {
	raw, err := json.Marshal(data)
	if err != nil {
		return err
	}
	return out.Encode(frame{Type: f.Type + "_result", ID: f.ID, Data: raw})
}

func describe(args map[string]any) string {
	keys := make([]string, 0, len(args))
	for k := range args {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%v", k, args[k]))
	}
	return strings.Join(parts, " ")
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<24)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var f frame
		if err := json.Unmarshal(in.Bytes(), &f); err != nil {
			fmt.Fprintln(os.Stderr, "bad frame:", err)
			continue
		}
		var err error
		switch f.Type {
		case "hello":
			err = out.Encode(frame{Type: "hello_ack"})
		case "time":
			err = reply(out, f, time.Now().UTC().Format(time.RFC3339))
		case "shutdown":
			_ = out.Encode(frame{Type: "shutdown_ack"})
			return
		default:
			err = reply(out, f, describe(f.Args))
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}
"""


def go_ext(root, name):
    os.makedirs(root)
    write(os.path.join(root, "extension.json"), manifest(name, "./" + name))
    write(os.path.join(root, "go.mod"), f"module example.com/{name}\n\ngo 1.19\n".encode())
    write(os.path.join(root, "main.go"), GO_MAIN)


def npm_tarball(name, rng):
    """A small package as npm packs it: package/ with a manifest, code and a readme."""
    import io
    import tarfile
    files = {
        "package.json": json.dumps({"name": name, "version": "1.0.0", "main": "index.js",
                                    "license": "MIT"}, indent=2).encode(),
        "index.js": f"module.exports = require('./lib/{name}.js');\n".encode(),
        f"lib/{name}.js": b"// generated\nmodule.exports = " + json.dumps(
            [rng.randint(0, 1 << 30) for _ in range(rng.randint(20, 400))]).encode() + b";\n",
        "README.md": f"# {name}\n\nA benchmark fixture.\n".encode(),
    }
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", format=tarfile.USTAR_FORMAT) as tar:
        for path, data in files.items():
            info = tarfile.TarInfo("package/" + path)
            info.size, info.mode, info.mtime = len(data), 0o644, 499162500
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def npm(reg, root, count):
    import base64
    import hashlib
    rng = random.Random(7)
    os.makedirs(os.path.join(reg, "tarballs"))
    deps = {}
    for i in range(count):
        name = f"bench-dep-{i:03}"
        data = npm_tarball(name, rng)
        write(os.path.join(reg, "tarballs", f"{name}-1.0.0.tgz"), data)
        meta = {"integrity": "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode(),
                "shasum": hashlib.sha1(data).hexdigest()}
        write(os.path.join(reg, name + ".json"), json.dumps(meta).encode())
        deps[name] = "1.0.0"
    os.makedirs(root)
    write(os.path.join(root, "extension.json"), json.dumps(
        {"name": "npm-bench", "version": "1.0.0", "exec": "node", "args": ["index.js"]}).encode())
    write(os.path.join(root, "package.json"), json.dumps(
        {"name": "npm-bench", "version": "1.0.0", "private": True, "dependencies": deps},
        indent=2).encode())
    write(os.path.join(root, "index.js"), b"for (const d of Object.keys(require('./package.json').dependencies)) require(d);\n")


def npmreg(reg, portfile):
    """Packuments (one version each) and tarballs, the tarball URLs naming this server."""
    import http.server

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            path = self.path.split("?")[0].strip("/")
            if "/-/" in path:
                file = os.path.join(reg, "tarballs", path.rsplit("/", 1)[1])
                kind = "application/octet-stream"
                body = open(file, "rb").read() if os.path.isfile(file) else None
            else:
                name = path.replace("%2f", "/").replace("%2F", "/")
                file = os.path.join(reg, name + ".json")
                body, kind = None, "application/json"
                if "/" not in name and os.path.isfile(file):
                    dist = json.load(open(file))
                    port = self.server.server_address[1]
                    dist["tarball"] = f"http://127.0.0.1:{port}/{name}/-/{name}-1.0.0.tgz"
                    body = json.dumps({"name": name, "dist-tags": {"latest": "1.0.0"}, "versions": {
                        "1.0.0": {"name": name, "version": "1.0.0", "main": "index.js", "dist": dist}}}).encode()
            if body is None:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with open(portfile + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(portfile + ".tmp", portfile)
    server.serve_forever()


def main(argv):
    cmd, args = argv[1], argv[2:]
    if cmd == "node":
        node(args[0], int(args[1]), args[2])
    elif cmd == "big":
        big(args[0], int(args[1]), int(args[2]), args[3])
    elif cmd == "exts":
        exts(args[0], int(args[1]))
    elif cmd == "doctor":
        doctor(args[0], int(args[1]), args[2])
    elif cmd == "log":
        log(args[0], int(args[1]))
    elif cmd == "project":
        project(args[0], args[1:])
    elif cmd == "rss":
        rss(args)
    elif cmd == "follow":
        commands, current = [], []
        for a in args[2:] + ["--"]:
            if a == "--":
                commands.append(current)
                current = []
            else:
                current.append(a)
        follow(args[0], int(args[1]), [c for c in commands if c])
    elif cmd == "httpd":
        httpd(args[0], args[1])
    elif cmd == "go":
        go_ext(args[0], args[1])
    elif cmd == "npm":
        npm(args[0], args[1], int(args[2]))
    elif cmd == "npmreg":
        npmreg(args[0], args[1])
    else:
        sys.exit(f"unknown fixture command: {cmd}")


if __name__ == "__main__":
    main(sys.argv)
