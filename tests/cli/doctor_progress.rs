//! `zot ext doctor` while checks run: on a terminal each block appears as soon as it and the
//! blocks before it are known, with a live line for the rest that is cleared at the end; in
//! a pipe the same blocks in the same order, and no control sequence.

use std::process::Command;

use serde_json::Value;

use crate::support::Env;
use crate::support::extensions::{good_script, sh_extension};

/// Runs argv[1:] on a pseudo-terminal (its stdin, stdout and stderr) and prints, as JSON,
/// every chunk the terminal received with the seconds since the start.
const PTY_RECORDER: &str = r"
import json, os, pty, sys, time
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
start = time.monotonic()
chunks = []
while True:
    try:
        data = os.read(fd, 65536)
    except OSError:
        break
    if not data:
        break
    chunks.append([time.monotonic() - start, data.decode('utf-8', 'replace')])
_, status = os.waitpid(pid, 0)
print(json.dumps({'status': os.waitstatus_to_exitcode(status), 'chunks': chunks}))
";

/// `a-fast` answers at once; `b-slow` (loaded after it) waits 3 s before its hello.
fn fast_and_slow(env: &Env) {
    let root = env.global_root();
    sh_extension(&root, "a-fast", "a-fast", &good_script("a-fast", &[]));
    let slow = format!("sleep 3\n{}", good_script("b-slow", &[]));
    sh_extension(&root, "b-slow", "b-slow", &slow);
}

/// Runs the python3 `script` (one of the pty drivers here) with `zot args`, in a clean
/// environment with an xterm terminal; what it printed.
fn on_pty(env: &Env, script: &str, args: &[&str]) -> std::process::Output {
    Command::new("python3")
        .args(["-c", script, env!("CARGO_BIN_EXE_zot")])
        .args(args)
        .current_dir(&env.project)
        .env_clear()
        .env("PATH", crate::support::path_without_agent())
        .env("HOME", &env.user_home)
        .env("ZOT_HOME", &env.home)
        .env("TERM", "xterm")
        .output()
        .expect("python3 runs")
}

/// The chunks a terminal received from `zot args`: (seconds since start, text).
fn on_terminal(env: &Env, args: &[&str]) -> Vec<(f64, String)> {
    let out = on_pty(env, PTY_RECORDER, args);
    let json: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no recording ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert_eq!(json["status"], 0, "{json:#}");
    json["chunks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c[0].as_f64().unwrap(), c[1].as_str().unwrap().to_string()))
        .collect()
}

/// When the text `needle` had fully arrived.
fn arrival(chunks: &[(f64, String)], needle: &str) -> f64 {
    let mut seen = String::new();
    for (at, text) in chunks {
        seen.push_str(text);
        if seen.contains(needle) {
            return *at;
        }
    }
    panic!("{needle:?} never arrived: {seen:?}");
}

#[test]
fn on_a_terminal_a_block_appears_while_later_ones_still_run() {
    let env = Env::new();
    fast_and_slow(&env);
    let chunks = on_terminal(&env, &["ext", "doctor"]);
    let fast = arrival(&chunks, "a-fast (global)");
    let slow = arrival(&chunks, "b-slow (global)");
    let all: String = chunks.iter().map(|(_, text)| text.as_str()).collect();
    // b-slow takes 3 s before its hello: streaming shows a-fast's block well before.
    assert!(
        fast + 1.0 < slow,
        "a-fast at {fast:.2}s, b-slow at {slow:.2}s: {all:?}"
    );
    assert!(all.find("a-fast (global)") < all.find("b-slow (global)"));
    // The live line names what is still running and is erased before the summary.
    let live = all.rfind("running: b-slow").expect("a live line");
    let summary = all.find("2 extensions checked").expect("a summary");
    assert!(live < summary, "{all:?}");
    assert!(all[live..summary].contains("\r\x1b[2K"), "{all:?}");
    assert!(!all[summary..].contains("running:"), "{all:?}");
}

#[test]
fn in_a_pipe_blocks_come_in_load_order_without_control_sequences() {
    let env = Env::new();
    fast_and_slow(&env);
    let done = env.zot(["ext", "doctor"]).env("TERM", "xterm").ok();
    done.stdout_lacks("\x1b")
        .stderr_lacks("\x1b")
        .stdout_lacks("\r")
        .stderr_lacks("running:");
    let fast = done.stdout.find("a-fast (global)").unwrap();
    let slow = done.stdout.find("b-slow (global)").unwrap();
    assert!(fast < slow, "{done:?}");
}

#[test]
fn a_broken_manifest_is_fixed_at_its_line_and_field() {
    let env = Env::new();
    let dir = env.global_root().join("broken");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("extension.json"),
        "{\n  \"name\": \"broken\",\n  \"exec\": 5\n}\n",
    )
    .unwrap();
    let done = env.zot(["ext", "doctor", "--json"]).fails(1);
    let json = done.schema_first();
    let fix = json["extensions"][0]["errors"][0]["fix"].as_str().unwrap();
    assert_eq!(
        fix,
        format!(
            "{}:3:11: \"exec\" must be a string",
            dir.join("extension.json").display()
        )
    );
    // The failure line (a JSON error with --json) points at the JSON, not at text "above".
    let error: serde_json::Value = serde_json::from_str(done.stderr.trim()).unwrap();
    let message = error["error"].as_str().unwrap();
    assert!(
        message.contains("\"errors\" in the JSON on stdout") && !message.contains("above"),
        "{message}"
    );
    env.zot(["ext", "doctor"])
        .fails(1)
        .stdout_has("fix: ")
        .stdout_has(":3:11: \"exec\" must be a string")
        .stderr_has("the report on stdout gives each error's fix");
}

#[test]
fn a_dumb_terminal_gets_no_live_line_and_no_colour() {
    let env = Env::new();
    let root = env.global_root();
    sh_extension(&root, "quick", "quick", &good_script("quick", &[]));
    let done = env.zot_in_terminal(&["ext", "doctor"], "");
    done.success()
        .stdout_has("quick (global)  ok")
        .stdout_lacks("running:")
        .stdout_lacks("\x1b");
}

/// Like [`PTY_RECORDER`], and sends SIGINT to the program once its live line is drawn.
const PTY_INTERRUPTER: &str = r"
import json, os, pty, signal, sys
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
seen = ''
sent = False
while True:
    try:
        data = os.read(fd, 65536)
    except OSError:
        break
    if not data:
        break
    seen += data.decode('utf-8', 'replace')
    if not sent and 'running:' in seen:
        os.kill(pid, signal.SIGINT)
        sent = True
os.waitpid(pid, 0)
print(json.dumps(seen))
";

#[test]
fn ctrl_c_during_doctor_erases_its_live_line() {
    let env = Env::new();
    let root = env.global_root();
    let hang = format!("sleep 30\n{}", good_script("hang", &[]));
    sh_extension(&root, "hang", "hang", &hang);
    let out = on_pty(&env, PTY_INTERRUPTER, &["ext", "doctor"]);
    let seen: String = serde_json::from_slice(&out.stdout).unwrap();
    let after = seen.rsplit("running:").next().unwrap_or("");
    assert!(
        after.contains("\r\x1b[2K"),
        "the live line is left on screen: {seen:?}"
    );
}

/// Spins the CPU while it lives (a busy shell loop), so checks compete for the cores.
struct CpuHog(Vec<std::process::Child>);

impl CpuHog {
    fn start(processes: usize) -> CpuHog {
        CpuHog(
            (0..processes)
                .map(|_| {
                    Command::new("sh")
                        .args(["-c", "while :; do :; done"])
                        .spawn()
                        .unwrap()
                })
                .collect(),
        )
    }
}

impl Drop for CpuHog {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A timing verdict does not depend on how many extensions were checked at once or on the
/// machine's load: sixteen extensions that each spend 0.15 s of CPU before hello, checked
/// together beside a CPU hog, say hello well after a second; each is then checked again
/// alone and judged by that. Three runs give the same verdicts, and the output says so.
#[test]
fn timing_verdicts_do_not_depend_on_checks_at_once_or_load() {
    let env = Env::new();
    let root = env.global_root();
    for n in 0..16 {
        let name = format!("busy{n:02}");
        let dir = root.join(&name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("extension.json"),
            format!("{{\"name\": \"{name}\", \"version\": \"1.0.0\", \"exec\": \"python3\", \"args\": [\"busy.py\"]}}\n"),
        )
        .unwrap();
        std::fs::write(
            dir.join("busy.py"),
            format!(
                "import sys, time\n\
                 start = time.process_time()\n\
                 while time.process_time() - start < 0.15:\n    pass\n\
                 print('{{\"type\":\"hello\",\"name\":\"{name}\",\"version\":\"1.0.0\"}}', flush=True)\n\
                 sys.stdin.readline()\n\
                 print('{{\"type\":\"ready\"}}', flush=True)\n\
                 for line in sys.stdin:\n\
                 \x20   if '\"shutdown\"' in line:\n\
                 \x20       print('{{\"type\":\"shutdown_ack\"}}', flush=True)\n\
                 \x20       break\n"
            ),
        )
        .unwrap();
    }
    let _hog = CpuHog::start(2);
    let mut verdicts = Vec::new();
    for _ in 0..2 {
        let done = env.zot(["ext", "doctor", "--json"]).ok();
        let doc: Value = serde_json::from_str(&done.stdout).unwrap();
        let summary = &doc["summary"];
        assert_eq!(summary["ok"], 16, "{summary}\n{}", done.stdout);
        let statuses: Vec<String> = doc["extensions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| format!("{} {}", e["name"], e["status"]))
            .collect();
        verdicts.push(statuses);
    }
    assert_eq!(verdicts[0], verdicts[1]);
    // The third run, as text, says which were checked again alone, and why.
    let text = env.zot(["ext", "doctor"]).ok();
    text.stdout_has("16 extensions checked: 16 ok, 0 with warnings, 0 with errors");
    if text.stdout.contains("checked again alone") {
        text.stdout_has("note: checked again alone: beside ");
        text.stdout_has("checked again alone, as ");
    }
}
