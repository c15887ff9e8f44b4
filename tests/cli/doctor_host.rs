//! `zot ext doctor` grades the handshake as zot 0.1.62 treats it: what zot refuses is an
//! error, what it loads but degrades is a warning, what is harmless is a note. Each case is
//! a small Python extension built for it.

use std::fs;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::extensions::{assert_gone, on_path};
use crate::support::{Done, Env, write_executable};

/// The start of every test extension: `emit`, `hello`, and `serve`, which answers commands,
/// tools and shutdown until stdin closes.
const PRELUDE: &str = r#"import json, sys, time

def emit(frame):
    sys.stdout.write(json.dumps(frame) + "\n")
    sys.stdout.flush()

def say(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()

def hello(name):
    emit({"type": "hello", "name": name, "version": "1.0.0"})
    sys.stdin.readline()

def command(name):
    emit({"type": "register_command", "name": name})

def tool(name):
    emit({"type": "register_tool", "name": name, "schema": {"type": "object"}})

def ready():
    emit({"type": "ready"})

def serve():
    for line in sys.stdin:
        msg = json.loads(line)
        kind = msg.get("type")
        if kind == "command_invoked":
            emit({"type": "command_response", "id": msg["id"], "action": "display", "display": "done"})
        elif kind == "tool_call":
            emit({"type": "tool_result", "id": msg["id"], "content": [{"type": "text", "text": "tool done"}]})
        elif kind == "shutdown":
            emit({"type": "shutdown_ack"})
            return

"#;

/// Writes global extension folder `dir` whose manifest says `name`, running `body` after
/// [`PRELUDE`]; None (and a message) where python3 is missing.
fn python_extension(env: &Env, dir: &str, name: &str, body: &str) -> Option<PathBuf> {
    if !on_path("python3") {
        eprintln!("skipping: python3 is not on PATH");
        return None;
    }
    let path = env.global_root().join(dir);
    fs::create_dir_all(&path).unwrap();
    let manifest = format!(
        "{{\"name\": \"{name}\", \"version\": \"1.0.0\", \"exec\": \"./run.py\", \"language\": \"python\"}}\n"
    );
    fs::write(path.join("extension.json"), manifest).unwrap();
    write_executable(
        &path.join("run.py"),
        &format!("#!/usr/bin/env python3\n{PRELUDE}{body}"),
    );
    Some(path)
}

/// `zot ext doctor --json <name> [args]`: the run, its one report, how long it took; checks
/// that nothing it started is left running.
fn doctor(env: &Env, name: &str, args: &[&str]) -> (Done, Value, Duration) {
    let mut full = vec!["ext", "doctor", "--json", name];
    full.extend_from_slice(args);
    let started = Instant::now();
    let done = env.zot(&full).output();
    let took = started.elapsed();
    let report = done.json()["extensions"][0].clone();
    if let Some(pid) = report["pid"].as_i64() {
        assert_gone(pid as i32);
    }
    (done, report, took)
}

fn messages(report: &Value, level: &str) -> Vec<String> {
    report[level]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["message"].as_str().unwrap().to_string())
        .collect()
}

/// The one message of `level` containing `needle`.
fn find(report: &Value, level: &str, needle: &str) -> String {
    let found: Vec<String> = messages(report, level)
        .into_iter()
        .filter(|m| m.contains(needle))
        .collect();
    assert_eq!(found.len(), 1, "one {level} with {needle:?}: {report:#}");
    found[0].clone()
}

fn none_mention(report: &Value, needle: &str) {
    for level in ["errors", "warnings", "notes"] {
        for message in messages(report, level) {
            assert!(!message.contains(needle), "{level}: {message}\n{report:#}");
        }
    }
}

/// The number of seconds in "... 1.5 s ..." right after `prefix`.
fn seconds_after(message: &str, prefix: &str) -> f64 {
    let rest = &message[message.find(prefix).unwrap() + prefix.len()..];
    let number = rest.split(" s").next().unwrap();
    number
        .parse()
        .unwrap_or_else(|_| panic!("no seconds after {prefix:?}: {message}"))
}

fn names(report: &Value, what: &str) -> Vec<String> {
    report[what]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_string())
        .collect()
}

/// zot trusts the manifest's name and ignores hello's: a warning, not an error.
#[test]
fn a_different_name_in_hello_is_a_warning() {
    let env = Env::new();
    let body = "hello(\"other\")\ncommand(\"hi\")\nready()\nserve()\n";
    if python_extension(&env, "mismatch", "mismatch", body).is_none() {
        return;
    }
    let (done, report, _) = doctor(&env, "mismatch", &[]);
    assert_eq!(done.code, 0, "{done:#?}");
    assert!(
        report["errors"].as_array().unwrap().is_empty(),
        "{report:#}"
    );
    let warning = find(&report, "warnings", "hello says the name is");
    assert_eq!(
        warning,
        "hello says the name is \"other\" but extension.json says \"mismatch\"; zot goes by extension.json and ignores the name in hello"
    );
    assert_eq!(names(&report, "commands"), ["hi"]);
    env.zot(["ext", "doctor", "mismatch", "--strict"]).fails(1);
}

/// zot refuses a hello without a name.
#[test]
fn an_empty_name_in_hello_is_an_error() {
    let env = Env::new();
    let body =
        "emit({\"type\": \"hello\", \"name\": \"\"})\nsys.stdin.readline()\nready()\nserve()\n";
    if python_extension(&env, "nameless", "nameless", body).is_none() {
        return;
    }
    let (done, report, _) = doctor(&env, "nameless", &[]);
    assert_eq!(done.code, 1, "{done:#?}");
    find(
        &report,
        "errors",
        "hello has an empty name, which zot refuses",
    );
}

/// zot's startup waits for hello without a limit: a slow one is a warning with the time,
/// and --timeout only bounds doctor's wait.
#[test]
fn a_slow_hello_is_a_warning_showing_the_time() {
    let env = Env::new();
    let body = "time.sleep(1.5)\nhello(\"slowstart\")\ncommand(\"hi\")\nready()\nserve()\n";
    if python_extension(&env, "slowstart", "slowstart", body).is_none() {
        return;
    }
    let (done, report, _) = doctor(&env, "slowstart", &[]);
    assert_eq!(done.code, 0, "{done:#?}");
    let warning = find(&report, "warnings", "said hello ");
    assert!(
        warning.ends_with(
            " s after it was started; zot's startup waits for every extension's hello, so zot would start that much later"
        ),
        "{warning}"
    );
    assert!(seconds_after(&warning, "said hello ") >= 1.5, "{warning}");
    let hello_ms = report["hello_ms"].as_u64().unwrap();
    assert!(hello_ms >= 1500, "{report:#}");
    let fix = report["warnings"][0]["fix"].as_str().unwrap();
    assert!(
        fix.contains("instead of compiling on every start with go run or npx tsx"),
        "{fix}"
    );
    let text = env.zot(["ext", "doctor", "slowstart"]).ok();
    assert!(text.stdout.contains("  hello after "), "{}", text.stdout);
    assert!(
        text.stdout.contains("  warning: said hello "),
        "{}",
        text.stdout
    );
}

#[test]
fn a_hello_slower_than_the_timeout_is_still_an_error() {
    let env = Env::new();
    let body = "time.sleep(2)\nhello(\"tooslow\")\nready()\nserve()\n";
    if python_extension(&env, "tooslow", "tooslow", body).is_none() {
        return;
    }
    let (done, report, took) = doctor(&env, "tooslow", &["--timeout", "1"]);
    assert_eq!(done.code, 1, "{done:#?}");
    find(&report, "errors", "did not send hello within 1s");
    assert!(took < Duration::from_secs(10), "{took:?}");
}

/// zot logs a stray line as malformed json and reads on; a register frame it cannot decode
/// is dropped, so what it registers is missing.
#[test]
fn stray_lines_after_hello_are_warnings() {
    let env = Env::new();
    let body = r#"hello("chatty")
say("debug: connected")
command("hi")
say("debug: registered")
emit({"type": "register_tool", "name": "broken", "description": 5, "schema": {"type": "object"}})
ready()
serve()
"#;
    if python_extension(&env, "chatty", "chatty", body).is_none() {
        return;
    }
    let (done, report, _) = doctor(&env, "chatty", &[]);
    assert_eq!(done.code, 0, "{done:#?}");
    assert_eq!(report["status"], "warning", "{report:#}");
    assert_eq!(
        find(&report, "warnings", "not a JSON frame"),
        "wrote a line on stdout that is not a JSON frame, which zot logs as malformed and ignores: \"debug: connected\" (and 1 more such lines)"
    );
    let dropped = find(&report, "warnings", "cannot decode");
    assert!(
        dropped.starts_with(
            "sent a register_tool frame zot cannot decode (register_tool: description: invalid type: integer `5`"
        ) && dropped.contains("so zot drops it and the tool \"broken\" is missing"),
        "{dropped}"
    );
    assert_eq!(names(&report, "commands"), ["hi"]);
    assert!(names(&report, "tools").is_empty(), "{report:#}");
}

/// A tool registered after zot stopped waiting never reaches the agent.
#[test]
fn a_tool_registered_after_zot_stopped_waiting_is_named() {
    let env = Env::new();
    let body = "hello(\"latetool\")\ncommand(\"early\")\ntime.sleep(1)\ntool(\"weather\")\nready()\nserve()\n";
    if python_extension(&env, "latetool", "latetool", body).is_none() {
        return;
    }
    let (done, report, _) = doctor(&env, "latetool", &[]);
    assert_eq!(done.code, 0, "{done:#?}");
    let missed = find(&report, "warnings", "zot would miss the tool weather");
    assert!(
        missed.starts_with("zot would miss the tool weather: registered ")
            && missed.contains(" after hello, but zot had stopped waiting for registrations ")
            && missed.ends_with(
                " after hello (at the first 250 ms without a line) and built the agent's tools then"
            ),
        "{missed}"
    );
    assert!(seconds_after(&missed, "registered ") >= 1.0, "{missed}");
    find(&report, "warnings", "sent ready ");
    none_mention(&report, "/early");
    assert_eq!(names(&report, "tools"), ["weather"]);
}

/// zot sends `session_start` right after it stops waiting: a later subscription misses it.
#[test]
fn a_late_subscription_to_session_start_is_named() {
    let env = Env::new();
    let body = "hello(\"latesub\")\ntime.sleep(1)\nemit({\"type\": \"subscribe\", \"events\": [\"session_start\", \"turn_end\"]})\nready()\nserve()\n";
    if python_extension(&env, "latesub", "latesub", body).is_none() {
        return;
    }
    let (done, report, _) = doctor(&env, "latesub", &[]);
    assert_eq!(done.code, 0, "{done:#?}");
    let missed = find(&report, "warnings", "subscribes to session_start ");
    assert!(
        missed.ends_with("and sends session_start then, so this extension would miss it"),
        "{missed}"
    );
    // Subscribed in time, session_start is fine.
    let body = "hello(\"earlysub\")\nemit({\"type\": \"subscribe\", \"events\": [\"session_start\"]})\nready()\nserve()\n";
    python_extension(&env, "earlysub", "earlysub", body);
    let (_, report, _) = doctor(&env, "earlysub", &[]);
    none_mention(&report, "session_start");
}

/// Commands are looked up when typed, so a late one works: nothing is said about it.
#[test]
fn a_command_registered_after_zot_stopped_waiting_is_fine() {
    let env = Env::new();
    let body = "hello(\"latecmd\")\ntime.sleep(1)\ncommand(\"late\")\nready()\nserve()\n";
    if python_extension(&env, "latecmd", "latecmd", body).is_none() {
        return;
    }
    let (done, report, _) = doctor(&env, "latecmd", &[]);
    assert_eq!(done.code, 0, "{done:#?}");
    none_mention(&report, "late\"");
    none_mention(&report, "/late");
    none_mention(&report, "zot would miss");
    assert_eq!(names(&report, "commands"), ["late"]);
    // The ready that follows the pause is late in its own right.
    find(&report, "warnings", "sent ready ");
}

/// `call` stops listening once zot would have, and the command is there: it does not wait
/// out its timeout for a ready that never comes.
#[test]
fn call_runs_a_late_command_without_waiting_for_ready() {
    let env = Env::new();
    let body = "hello(\"noreadycmd\")\ntime.sleep(1)\ncommand(\"late\")\nserve()\n";
    if python_extension(&env, "noreadycmd", "noreadycmd", body).is_none() {
        return;
    }
    let started = Instant::now();
    let called = env.zot(["ext", "call", "noreadycmd", "/late"]).ok();
    assert_eq!(called.stdout, "display: done\n");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
}

/// Without ready, `call` gives up on a name that is not registered soon after zot would
/// have stopped waiting, not at its 30 s timeout.
#[test]
fn call_does_not_wait_out_its_timeout_for_a_name_never_registered() {
    let env = Env::new();
    let body = "hello(\"noreadyother\")\ncommand(\"other\")\nserve()\n";
    if python_extension(&env, "noreadyother", "noreadyother", body).is_none() {
        return;
    }
    let started = Instant::now();
    let called = env
        .zot(["ext", "call", "noreadyother", "/missing"])
        .fails(1);
    assert!(called.stderr.contains("/other"), "{}", called.stderr);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
}

/// `ready` after zot stopped waiting changes nothing in zot: a warning saying so.
#[test]
fn a_late_ready_alone_is_a_warning() {
    let env = Env::new();
    let body =
        "hello(\"lateready\")\ncommand(\"hi\")\ntool(\"clock\")\ntime.sleep(1)\nready()\nserve()\n";
    if python_extension(&env, "lateready", "lateready", body).is_none() {
        return;
    }
    let (done, report, _) = doctor(&env, "lateready", &[]);
    assert_eq!(done.code, 0, "{done:#?}");
    let late = find(&report, "warnings", "sent ready ");
    assert!(
        late.contains(" after hello, but zot had stopped waiting for registrations ")
            && late.ends_with(
                " after hello (at the first 250 ms without a line) and built the agent's tools then"
            ),
        "{late}"
    );
    assert!(seconds_after(&late, "sent ready ") >= 1.0, "{late}");
    assert!(report["ready_ms"].as_u64().unwrap() >= 1000, "{report:#}");
    none_mention(&report, "zot would miss");
    let text = env.zot(["ext", "doctor", "lateready"]).ok();
    assert!(text.stdout.contains(", ready after "), "{}", text.stdout);
}

/// Without ready zot goes on after a pause; doctor says when, and does not wait out the
/// timeout (30 s by default) for it. With no tool registered nothing is lost (commands are
/// looked up live): a note, not a warning.
#[test]
fn no_ready_at_all_without_tools_is_a_note_and_does_not_wait_out_the_timeout() {
    let env = Env::new();
    let body = "hello(\"noready\")\ncommand(\"hi\")\nserve()\n";
    if python_extension(&env, "noready", "noready", body).is_none() {
        return;
    }
    let (done, report, took) = doctor(&env, "noready", &[]);
    assert_eq!(done.code, 0, "{done:#?}");
    let note = find(&report, "notes", "did not send ready");
    assert!(
        note.starts_with(
            "did not send ready; zot goes on without it, but stops waiting for registrations "
        ) && note.ends_with(
            " after hello (at the first 250 ms without a line) and builds the agent's tools then; \
             it registered no tool, and zot looks commands up live, so nothing is lost"
        ),
        "{note}"
    );
    assert_eq!(report["status"], "ok", "{report:#}");
    assert!(report["ready_ms"].is_null());
    assert!(took < Duration::from_secs(20), "{took:?}");
}

/// zot loads a folder whatever its name; only the manifest's name counts.
#[test]
fn a_folder_named_unlike_the_manifest_is_a_note() {
    let env = Env::new();
    let body = "hello(\"renamed\")\ncommand(\"hi\")\nready()\nserve()\n";
    if python_extension(&env, "folder", "renamed", body).is_none() {
        return;
    }
    let (done, report, _) = doctor(&env, "folder", &["--strict"]);
    assert_eq!(done.code, 0, "{done:#?}");
    assert_eq!(
        find(&report, "notes", "the folder is named"),
        "the folder is named \"folder\" but extension.json names the extension \"renamed\""
    );
    none_mention(&report, "hello says");
}

/// zot sends `shutdown` only when it exits, and SIGTERMs what has not gone 2 s later: an
/// extension that answers late has worked all session, so this is a warning.
#[test]
fn a_late_shutdown_ack_is_a_warning() {
    let env = Env::new();
    let body = "hello(\"slowstop\")\ncommand(\"hi\")\nready()\nfor line in sys.stdin:\n    if json.loads(line).get(\"type\") == \"shutdown\":\n        time.sleep(4)\n        emit({\"type\": \"shutdown_ack\"})\n        break\n";
    if python_extension(&env, "slowstop", "slowstop", body).is_none() {
        return;
    }
    let (done, report, _) = doctor(&env, "slowstop", &[]);
    assert_eq!(done.code, 0, "{done:#?}");
    assert!(
        report["errors"].as_array().unwrap().is_empty(),
        "{report:#}"
    );
    let warning = find(&report, "warnings", "ignored shutdown");
    assert!(
        warning.starts_with("ignored shutdown: no shutdown_ack and still running after 2s"),
        "{warning}"
    );
    env.zot(["ext", "doctor", "slowstop", "--strict"]).fails(1);
}

/// zot loads one folder per folder name, the project's first: a global folder of the same
/// folder name whose manifest names another extension is never loaded, and doctor asked about
/// it by that name says so.
#[test]
fn a_global_folder_hidden_by_a_project_folder_of_another_name_is_not_loaded() {
    let env = Env::new();
    let body = "hello(\"beta\")\ncommand(\"hi\")\nready()\nserve()\n";
    if python_extension(&env, "same", "beta", body).is_none() {
        return;
    }
    let project = env.project_root().join("same");
    fs::create_dir_all(&project).unwrap();
    fs::write(
        project.join("extension.json"),
        "{\"name\": \"alpha\", \"version\": \"1.0.0\", \"exec\": \"./run.py\"}\n",
    )
    .unwrap();
    let (done, report, _) = doctor(&env, "beta", &[]);
    assert_eq!(done.code, 0, "{done:#?}");
    assert_eq!(report["loaded"], false, "{report:#}");
    assert_eq!(report["status"], "warning", "{report:#}");
    let warning = find(&report, "warnings", "zot will not load");
    assert_eq!(
        warning,
        format!(
            "zot will not load \"beta\": the project folder {} (extension \"alpha\") has the same folder name \"same\", and zot loads one folder per folder name, the project's first",
            project.display()
        )
    );
    env.zot(["ext", "doctor", "beta", "--strict"]).fails(1);
}
