//! `zot ext doctor`: real extensions pass; each kind of broken extension gets the right
//! diagnosis within the timeout, and no process it started is left running.

use std::fs;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::extensions::{assert_gone, examples, good_script, on_path, sh_extension};
use crate::support::{Done, Env};

const HELLO: &str = r#"echo '{"type":"hello","name":"NAME","version":"1.0.0"}'
read ack
"#;

/// Runs `zot ext doctor --json` with `args`, checks every started process is gone, and
/// returns the output, the JSON and how long it took.
fn doctor(env: &Env, args: &[&str]) -> (Done, Value, Duration) {
    let mut full = vec!["ext", "doctor", "--json"];
    full.extend_from_slice(args);
    let started = Instant::now();
    let done = env.zot(&full).output();
    let took = started.elapsed();
    let json = done.json();
    for report in json["extensions"].as_array().unwrap() {
        if let Some(pid) = report["pid"].as_i64() {
            assert_gone(pid as i32);
        }
    }
    (done, json, took)
}

/// Writes a global extension `name` running `script` (NAME in it becomes the name), checks
/// it alone, and returns its report.
fn check(env: &Env, name: &str, script: &str, timeout: &str) -> (Done, Value, Duration) {
    sh_extension(
        &env.global_root(),
        name,
        name,
        &script.replace("NAME", name),
    );
    let (done, json, took) = doctor(env, &[name, "--timeout", timeout]);
    let report = json["extensions"][0].clone();
    (done, report, took)
}

fn messages(report: &Value, kind: &str) -> Vec<String> {
    report[kind]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["message"].as_str().unwrap().to_string())
        .collect()
}

fn assert_has(report: &Value, kind: &str, needle: &str) {
    let found = messages(report, kind);
    assert!(
        found.iter().any(|m| m.contains(needle)),
        "no {kind} containing {needle:?}: {report:#}"
    );
}

#[test]
fn the_examples_pass() {
    let env = Env::new();
    let mut paths = vec![examples().join("hello-py")];
    if on_path("node") {
        paths.push(examples().join("clock"));
    } else {
        eprintln!("skipping the clock example: node is not on PATH");
    }
    let args: Vec<&str> = paths.iter().map(|p| p.to_str().unwrap()).collect();
    let (done, json, _) = doctor(&env, &args);
    assert_eq!(done.code, 0, "{done:#?}");
    for report in json["extensions"].as_array().unwrap() {
        assert_eq!(report["status"], "ok", "{report:#}");
        assert_eq!(report["scope"], "path");
        assert!(
            report["hello_ms"].is_u64() && report["ready_ms"].is_u64(),
            "{report:#}"
        );
    }
    assert_eq!(json["extensions"][0]["commands"][0]["name"], "hellopy");
    if paths.len() == 2 {
        assert_eq!(json["extensions"][1]["tools"][0]["name"], "clock");
    }
}

#[test]
fn an_installed_example_is_checked_by_name_with_a_readable_report() {
    let env = Env::new();
    let src = examples().join("hello-py");
    env.zot(["ext", "install", src.to_str().unwrap()]).ok();
    let done = env.zot(["ext", "doctor"]).ok();
    assert!(
        done.stdout.starts_with("hello-py (global)  ok\n"),
        "{}",
        done.stdout
    );
    assert!(
        done.stdout.contains("  commands: /hellopy, /hellocount\n"),
        "{}",
        done.stdout
    );
    assert!(
        done.stdout
            .contains("1 extension checked: 1 ok, 0 with warnings, 0 with errors"),
        "{}",
        done.stdout
    );
}

#[test]
fn json_shape() {
    let env = Env::new();
    let script = good_script(
        "shape",
        &[
            r#"{"type":"register_command","name":"go","description":"d"}"#,
            r#"{"type":"register_tool","name":"t","description":"td","schema":{"type":"object"}}"#,
            r#"{"type":"subscribe","events":["turn_start"],"intercept":["tool_call"]}"#,
        ],
    );
    let (done, report, _) = check(&env, "shape", &script, "5");
    assert_eq!(done.code, 0, "{done:#?}");
    let keys: Vec<&str> = report
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "name",
            "scope",
            "dir",
            "status",
            "enabled",
            "loaded",
            "version",
            "pid",
            "commands",
            "tools",
            "subscriptions",
            "hello_ms",
            "ready_ms",
            "shutdown_ms",
            "errors",
            "warnings",
            "notes",
            "stderr",
            "rechecked_alone"
        ]
    );
    assert_eq!(
        report["commands"][0],
        serde_json::json!({"name": "go", "description": "d"})
    );
    assert_eq!(
        report["tools"][0],
        serde_json::json!({"name": "t", "description": "td", "deferred": false, "interactive": false})
    );
    assert_eq!(
        report["subscriptions"],
        serde_json::json!({"events": ["turn_start"], "intercept": ["tool_call"]})
    );
    assert_eq!(report["scope"], "global");
    assert_eq!(report["loaded"], true);
    let top: Vec<String> = done.json().as_object().unwrap().keys().cloned().collect();
    assert_eq!(top, ["schema_version", "extensions", "summary", "zot"]);
    let summary = &done.json()["summary"];
    assert_eq!(
        *summary,
        serde_json::json!({"checked": 1, "ok": 1, "with_warnings": 0, "with_errors": 0, "checked_again_alone": 0})
    );
}

#[test]
fn never_says_hello() {
    let env = Env::new();
    let (done, report, took) = check(&env, "silent", "sleep 300\n", "1");
    assert_eq!(done.code, 1);
    assert_has(&report, "errors", "did not send hello within 1s");
    let fix = report["errors"][0]["fix"].as_str().unwrap();
    assert!(fix.contains(r#"{"type":"hello","name":"silent""#), "{fix}");
    assert!(
        took >= Duration::from_secs(1) && took < Duration::from_secs(4),
        "{took:?}"
    );
    assert!(
        done.stderr.contains("1 of 1 extensions failed"),
        "{}",
        done.stderr
    );
}

#[test]
fn wrong_name_in_hello() {
    let env = Env::new();
    let script = good_script("other", &[]);
    let (done, report, took) = check(&env, "wrong-name", &script, "5");
    // zot goes by the manifest's name and loads it.
    assert_eq!(done.code, 0);
    assert_has(
        &report,
        "warnings",
        "hello says the name is \"other\" but extension.json says \"wrong-name\"",
    );
    assert!(took < Duration::from_secs(3), "{took:?}");
}

#[test]
fn crashes_after_hello_and_shows_stderr() {
    let env = Env::new();
    let script = format!("{HELLO}echo 'Traceback: something broke' >&2\nexit 3\n");
    let (done, report, took) = check(&env, "crashy", &script, "5");
    assert_eq!(done.code, 1);
    assert_has(
        &report,
        "errors",
        "exited with exit status 3 after hello, before ready",
    );
    assert!(
        report["stderr"]
            .as_str()
            .unwrap()
            .contains("Traceback: something broke"),
        "{report:#}"
    );
    assert!(took < Duration::from_secs(3), "{took:?}");
    // The text report shows the stderr too.
    let text = env.zot(["ext", "doctor", "crashy"]).fails(1);
    assert!(
        text.stdout.contains("    | Traceback: something broke"),
        "{}",
        text.stdout
    );
}

#[test]
fn floods_stdout() {
    let env = Env::new();
    let script = format!(
        "{HELLO}while :; do echo '{{\"type\":\"notify\",\"level\":\"info\",\"message\":\"spam\"}}'; done\n"
    );
    let (done, report, took) = check(&env, "flood", &script, "5");
    assert_eq!(done.code, 1);
    assert_has(
        &report,
        "errors",
        "flooded stdout: more than 1000 lines before ready",
    );
    assert!(took < Duration::from_secs(5), "{took:?}");
}

#[test]
fn an_endless_line_is_cut_off() {
    let env = Env::new();
    let script = format!("{HELLO}head -c 6000000 /dev/zero | tr '\\0' x\nsleep 300\n");
    let (done, report, took) = check(&env, "longline", &script, "5");
    assert_eq!(done.code, 1);
    assert_has(&report, "errors", "wrote a line longer than 4 MiB");
    assert!(took < Duration::from_secs(5), "{took:?}");
}

#[test]
fn invalid_tool_schemas() {
    let env = Env::new();
    let script = good_script(
        "schemas",
        &[
            r#"{"type":"register_tool","name":"bad","schema":"object"}"#,
            r#"{"type":"register_tool","name":"none"}"#,
            r#"{"type":"register_tool","name":"loose","schema":{"properties":{}}}"#,
        ],
    );
    let (done, report, _) = check(&env, "schemas", &script, "5");
    assert_eq!(done.code, 1);
    assert_has(
        &report,
        "errors",
        "the schema of tool bad must be a JSON object (a JSON Schema), found a string",
    );
    assert_has(
        &report,
        "errors",
        "the schema of tool none must be a JSON object (a JSON Schema), found none",
    );
    assert_has(
        &report,
        "warnings",
        "the schema of tool loose has no \"type\"",
    );
    // The rest of the conversation went fine.
    assert!(
        report["ready_ms"].is_u64() && report["shutdown_ms"].is_u64(),
        "{report:#}"
    );
}

#[test]
fn ignores_shutdown_and_sigterm() {
    let env = Env::new();
    let script = format!(
        "{HELLO}echo '{{\"type\":\"ready\"}}'\ntrap '' TERM\nsleep 300 &\nwhile :; do sleep 1; done\n"
    );
    let (done, report, took) = check(&env, "stubborn", &script, "5");
    assert_eq!(done.code, 0);
    assert_has(
        &report,
        "warnings",
        "ignored shutdown: no shutdown_ack and still running after 2s, so it was stopped with SIGTERM, then SIGKILL",
    );
    // 2 s for shutdown_ack, 1 s after SIGTERM, then SIGKILL.
    assert!(
        took >= Duration::from_secs(3) && took < Duration::from_secs(6),
        "{took:?}"
    );
}

#[test]
fn writes_text_before_hello() {
    let env = Env::new();
    let script = format!("echo 'starting up...'\n{HELLO}");
    let (done, report, took) = check(&env, "chatty", &script, "5");
    assert_eq!(done.code, 1);
    assert_has(
        &report,
        "errors",
        "the first line on stdout is not a JSON frame: \"starting up...\"",
    );
    let fix = report["errors"][0]["fix"].as_str().unwrap();
    assert!(fix.contains("write logs to stderr"), "{fix}");
    assert!(took < Duration::from_secs(3), "{took:?}");
}

#[test]
fn writes_text_between_frames() {
    let env = Env::new();
    let script = good_script(
        "debugging",
        &[
            "debug: registering",
            r#"{"type":"register_command","name":"go"}"#,
            "debug: done",
        ],
    );
    let (done, report, _) = check(&env, "debugging", &script, "5");
    assert_eq!(done.code, 0);
    assert_has(
        &report,
        "warnings",
        "wrote a line on stdout that is not a JSON frame, which zot logs as malformed and ignores: \"debug: registering\" (and 1 more such lines)",
    );
    assert_eq!(report["commands"][0]["name"], "go");
}

#[test]
fn a_missing_ready_is_a_warning_and_strict_fails_it() {
    let env = Env::new();
    let script = format!(
        "{HELLO}echo '{{\"type\":\"register_tool\",\"name\":\"t\",\"description\":\"td\",\"schema\":{{\"type\":\"object\"}}}}'\necho '{{\"type\":\"register_command\",\"name\":\"late\"}}'\nsleep 0.6\necho '{{\"type\":\"register_command\",\"name\":\"later\"}}'\n{}",
        crate::support::extensions::SERVE
    );
    let (done, report, _) = check(&env, "noready", &script, "2");
    assert_eq!(done.code, 0, "{done:#?}");
    assert_eq!(report["status"], "warning");
    // doctor listens until the timeout here, and says what zot does without ready; the
    // command that came after zot stopped waiting still works (commands are looked up live).
    assert_has(
        &report,
        "warnings",
        "did not send ready; zot goes on without it, but stops waiting for registrations ",
    );
    assert_has(
        &report,
        "warnings",
        " after hello (at the first 250 ms without a line) and builds the agent's tools then",
    );
    assert_eq!(
        report["warnings"].as_array().unwrap().len(),
        1,
        "{report:#}"
    );
    assert_eq!(report["commands"][1]["name"], "later");
    assert!(report["ready_ms"].is_null());
    assert_eq!(report["commands"][0]["name"], "late");
    let strict = env
        .zot(["ext", "doctor", "noready", "--strict", "--timeout", "1"])
        .fails(1);
    assert!(strict.stderr.contains("(--strict)"), "{}", strict.stderr);
}

#[test]
fn subscriptions_are_checked() {
    let env = Env::new();
    let script = good_script(
        "subs",
        &[
            r#"{"type":"subscribe","events":["turn_start","bogus"],"intercept":["session_start","tool_call"]}"#,
        ],
    );
    let (done, report, _) = check(&env, "subs", &script, "5");
    assert_eq!(done.code, 0, "{done:#?}");
    assert_has(
        &report,
        "warnings",
        "subscribes to \"bogus\", an event zot never sends",
    );
    assert_has(
        &report,
        "warnings",
        "asks to intercept \"session_start\", which zot cannot intercept",
    );
    assert_eq!(messages(&report, "warnings").len(), 2, "{report:#}");
}

#[test]
fn names_taken_by_zot_and_by_extensions_loaded_earlier() {
    let env = Env::new();
    let cmd = |name: &str| format!(r#"{{"type":"register_command","name":"{name}"}}"#);
    let tool = |name: &str| {
        format!(r#"{{"type":"register_tool","name":"{name}","schema":{{"type":"object"}}}}"#)
    };
    let first = good_script("first", &[&cmd("deploy"), &tool("fetch")]);
    sh_extension(&env.project_root(), "first", "first", &first);
    let second = good_script(
        "second",
        &[
            &cmd("deploy"),
            &cmd("Deploy"),
            &tool("fetch"),
            &cmd("help"),
            &tool("bash"),
        ],
    );
    sh_extension(&env.global_root(), "second", "second", &second);
    let off = good_script("off", &[&cmd("deploy")]);
    let dir = sh_extension(&env.global_root(), "off", "off", &off);
    let manifest = fs::read_to_string(dir.join("extension.json")).unwrap();
    fs::write(
        dir.join("extension.json"),
        manifest.replace('}', ", \"enabled\": false}"),
    )
    .unwrap();

    let (done, json, _) = doctor(&env, &[]);
    assert_eq!(done.code, 1, "{done:#?}");
    let reports = json["extensions"].as_array().unwrap();
    let names: Vec<&str> = reports
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["first", "off", "second"]);
    assert!(
        reports[0]["warnings"].as_array().unwrap().is_empty(),
        "{:#}",
        reports[0]
    );
    assert_eq!(reports[1]["enabled"], false);
    assert!(
        reports[1]["warnings"].as_array().unwrap().is_empty(),
        "{:#}",
        reports[1]
    );
    let second = &reports[2];
    assert_has(
        second,
        "warnings",
        "command /deploy is also registered by first (project); zot starts both at once and keeps whichever registers it first",
    );
    // zot matches command names exactly, so /Deploy is a name of its own.
    assert!(
        !second.to_string().contains("/Deploy is also"),
        "{second:#}"
    );
    assert_has(
        second,
        "warnings",
        "tool fetch is also registered by first (project); zot starts both at once",
    );
    assert_has(second, "errors", "/help is a built-in command of zot");
    assert_has(second, "errors", "bash is a built-in tool of zot");
}

#[test]
fn static_problems() {
    let env = Env::new();
    let root = env.global_root();
    let dir = sh_extension(&root, "noexec", "noexec", "");
    fs::set_permissions(
        dir.join("run.sh"),
        std::os::unix::fs::PermissionsExt::from_mode(0o644),
    )
    .unwrap();
    let dir = sh_extension(&root, "missing", "missing", "");
    fs::remove_file(dir.join("run.sh")).unwrap();
    let dir = sh_extension(&root, "bare", "bare", "");
    fs::write(
        dir.join("extension.json"),
        r#"{"name":"bare","exec":"zot-no-such-program"}"#,
    )
    .unwrap();
    let dir = sh_extension(&root, "broken", "broken", "");
    fs::write(
        dir.join("extension.json"),
        "{\"name\": \"broken\",\n \"exec\": 7}",
    )
    .unwrap();
    let dir = sh_extension(&root, "crlf", "crlf", "");
    fs::write(dir.join("run.sh"), "#!/bin/sh\r\necho hi\r\n").unwrap();
    sh_extension(&root, "folder", "renamed", &good_script("renamed", &[]));
    let dir = sh_extension(&root, "noshebang", "noshebang", "");
    crate::support::write_executable(&dir.join("run.sh"), "echo hi\n");

    let (done, json, took) = doctor(&env, &[]);
    assert_eq!(done.code, 1);
    assert!(took < Duration::from_secs(4), "{took:?}");
    let find = |name: &str| {
        json["extensions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .unwrap_or_else(|| panic!("no report for {name}: {json:#}"))
            .clone()
    };
    let noexec = find("noexec");
    assert_has(&noexec, "errors", "\"exec\" ./run.sh is not executable");
    assert!(
        noexec["errors"][0]["fix"]
            .as_str()
            .unwrap()
            .starts_with("set its executable bit in the source (chmod +x, or git update-index --chmod=+x and a commit), then zot ext update noexec (a copy placed by hand: chmod +x ")
    );
    assert_has(
        &find("missing"),
        "errors",
        "\"exec\" ./run.sh does not exist",
    );
    assert_has(
        &find("bare"),
        "errors",
        "\"exec\" is \"zot-no-such-program\", which is not on PATH",
    );
    assert_has(
        &find("broken"),
        "errors",
        "extension.json:2:10: \"exec\" must be a string",
    );
    assert_has(&find("crlf"), "errors", "Windows line endings");
    let noshebang = find("noshebang");
    assert_has(&noshebang, "errors", "cannot start");
    assert!(
        noshebang["errors"][0]["fix"]
            .as_str()
            .unwrap()
            .contains("#! line"),
        "{noshebang:#}"
    );
    let renamed = find("renamed");
    assert_eq!(renamed["status"], "ok");
    assert_has(
        &renamed,
        "notes",
        "the folder is named \"folder\" but extension.json names the extension \"renamed\"",
    );
    for name in ["noexec", "missing", "bare", "broken", "crlf"] {
        assert!(find(name)["pid"].is_null(), "{name} was started");
    }
}

#[test]
fn a_bare_exec_is_found_on_path_and_runs_in_the_extension_folder() {
    let env = Env::new();
    let dir = sh_extension(
        &env.global_root(),
        "viash",
        "viash",
        &good_script("viash", &[]),
    );
    fs::write(
        dir.join("extension.json"),
        r#"{"name":"viash","exec":"sh","args":["run.sh"]}"#,
    )
    .unwrap();
    let (done, json, _) = doctor(&env, &["viash"]);
    assert_eq!(done.code, 0, "{done:#?}");
    assert_eq!(json["extensions"][0]["status"], "ok");
}

#[test]
fn extensions_are_checked_in_parallel() {
    let env = Env::new();
    for name in ["slow-a", "slow-b", "slow-c"] {
        sh_extension(&env.global_root(), name, name, "sleep 300\n");
    }
    let (done, json, took) = doctor(&env, &["--timeout", "1", "--jobs", "3"]);
    assert_eq!(done.code, 1);
    assert_eq!(json["summary"]["with_errors"], 3);
    assert!(took < Duration::from_millis(2800), "{took:?}");
}

/// By default every extension starts at once, as in zot, whatever the number of CPUs: twenty
/// that each take 0.9 s to say hello (on time: nothing to check again alone) take about as
/// long as one (five waves of four would take 4.5 s, twenty in a row 18 s). A generous
/// bound on parallelism, not a measure of speed.
#[test]
fn slow_extensions_all_start_at_once_by_default() {
    let env = Env::new();
    for i in 0..20 {
        let name = format!("sleepy-{i:02}");
        let script = format!("sleep 0.9\n{}", good_script(&name, &[]));
        sh_extension(&env.global_root(), &name, &name, &script);
    }
    let (done, json, took) = doctor(&env, &["--timeout", "20"]);
    assert_eq!(done.code, 0, "{done:#?}");
    assert_eq!(json["summary"]["checked"], 20);
    assert_eq!(json["summary"]["with_errors"], 0, "{json:#}");
    assert!(took < Duration::from_secs(4), "{took:?}");
}

#[test]
fn nothing_installed_and_unknown_names() {
    let env = Env::new();
    let done = env.zot(["ext", "doctor"]).ok();
    assert!(
        done.stderr.contains("no extensions installed"),
        "{}",
        done.stderr
    );
    let done = env.zot(["ext", "doctor", "nope"]).fails(1);
    assert!(
        done.stderr.contains("no extension named \"nope\""),
        "{}",
        done.stderr
    );
    env.zot(["ext", "doctor", "--timeout", "0"]).fails(2);
    env.zot(["ext", "doctor", "--timeout", "soon"]).fails(2);
}

#[test]
fn interrupting_doctor_leaves_nothing_running() {
    use std::os::unix::process::ExitStatusExt;
    use std::process::Command;

    let env = Env::new();
    let dir = sh_extension(
        &env.global_root(),
        "hang",
        "hang",
        "echo $$ > pid\nsleep 300\n",
    );
    let mut zot = env.zot(["ext", "doctor", "--timeout", "60"]).spawn_silent();
    let until = Instant::now() + Duration::from_secs(10);
    let pid = loop {
        let text = fs::read_to_string(dir.join("pid")).unwrap_or_default();
        if let Ok(pid) = text.trim().parse::<i32>() {
            break pid;
        }
        assert!(Instant::now() < until, "the extension never started");
        std::thread::sleep(Duration::from_millis(20));
    };
    let sent = Command::new("sh")
        .args(["-c", &format!("kill -INT {}", zot.id())])
        .status()
        .unwrap();
    assert!(sent.success());
    let status = zot.wait().unwrap();
    assert_eq!(status.signal(), Some(2), "{status:?}");
    assert_gone(pid);
}

/// Many extensions, checked a few at a time: each is timed from its own start, so all pass.
#[test]
fn many_extensions_with_a_small_bound_all_pass() {
    let env = Env::new();
    for i in 0..40 {
        let name = format!("quick-{i:02}");
        let cmd = format!(r#"{{"type":"register_command","name":"c{i}"}}"#);
        sh_extension(
            &env.global_root(),
            &name,
            &name,
            &good_script(&name, &[&cmd]),
        );
    }
    let (done, json, _) = doctor(&env, &["--jobs", "3", "--timeout", "5"]);
    assert_eq!(done.code, 0, "{done:#?}");
    assert_eq!(
        json["summary"],
        serde_json::json!({"checked": 40, "ok": 40, "with_warnings": 0, "with_errors": 0, "checked_again_alone": 0})
    );
    let reports = json["extensions"].as_array().unwrap();
    for (i, report) in reports.iter().enumerate() {
        assert_eq!(report["name"], format!("quick-{i:02}"), "order is kept");
        assert_eq!(report["commands"][0]["name"], format!("c{i}"));
    }
    env.zot(["ext", "doctor", "--jobs", "0"]).fails(2);
}

/// A command registered after zot's pause still works (zot looks commands up when typed), but
/// the ready after the pause comes after zot stopped waiting.
#[test]
fn a_slow_command_works_but_its_late_ready_is_a_warning() {
    let env = Env::new();
    let script = format!(
        "{HELLO}sleep 1.5\necho '{{\"type\":\"register_command\",\"name\":\"slow\"}}'\necho '{{\"type\":\"ready\"}}'\n{}",
        crate::support::extensions::SERVE
    );
    let (done, report, _) = check(&env, "slowpoke", &script, "5");
    assert_eq!(done.code, 0, "{done:#?}");
    assert_eq!(
        report["warnings"].as_array().unwrap().len(),
        1,
        "{report:#}"
    );
    assert_has(
        &report,
        "warnings",
        " s after hello, but zot had stopped waiting for registrations ",
    );
    assert_eq!(report["commands"][0]["name"], "slow");
    assert!(report["ready_ms"].as_u64().unwrap() >= 1500, "{report:#}");
    let called = env.zot(["ext", "call", "slowpoke", "/slow"]).ok();
    assert_eq!(called.stdout, "display: done\n");
}

/// A grandchild that leaves the process group (setsid) is found, ended and reported.
#[test]
fn an_escaped_grandchild_is_ended_and_reported() {
    let env = Env::new();
    let script = format!(
        "{HELLO}setsid sh -c 'echo $$ > grandchild.new && mv grandchild.new grandchild; exec sleep 300' </dev/null >/dev/null 2>&1 &\nwhile [ ! -s grandchild ]; do sleep 0.01; done\necho '{{\"type\":\"ready\"}}'\n{}",
        crate::support::extensions::SERVE
    );
    let (done, report, _) = check(&env, "escapee", &script, "5");
    let text = fs::read_to_string(env.global_root().join("escapee/grandchild")).unwrap();
    let pid: i32 = text.trim().parse().unwrap();
    assert!(
        !crate::support::extensions::alive(pid),
        "the grandchild {pid} is still running"
    );
    assert_eq!(done.code, 0, "{done:#?}");
    assert_eq!(report["status"], "warning", "{report:#}");
    // The grandchild wrote its pid from its own session (it escaped before ready); caught
    // before or after it execs sleep, its command line ends so.
    let message = messages(&report, "warnings")
        .into_iter()
        .find(|m| {
            m.contains(&format!(
                "left a process running after shutdown: pid {pid} ("
            ))
        })
        .unwrap_or_else(|| panic!("no warning about pid {pid}: {report:#}"));
    assert!(message.contains("sleep 300)"), "{message}");
}

/// Exiting on its own right after ready loses the extension in zot: an error, not a
/// shutdown warning.
#[test]
fn exiting_right_after_ready_is_an_error() {
    let env = Env::new();
    let script = format!(
        "{HELLO}echo '{{\"type\":\"register_command\",\"name\":\"gone\"}}'\necho '{{\"type\":\"ready\"}}'\nexit 0\n"
    );
    let (done, report, _) = check(&env, "quitter", &script, "5");
    assert_eq!(done.code, 1, "{done:#?}");
    assert_has(
        &report,
        "errors",
        "exited (exit status 0) right after ready, before zot asked it to stop; zot would lose its commands and tools",
    );
    assert!(messages(&report, "warnings").is_empty(), "{report:#}");
}

/// Unknown frame types are how the protocol grows: a note, which --strict lets pass.
#[test]
fn unknown_frame_types_are_notes() {
    let env = Env::new();
    let script = good_script("future", &[r#"{"type":"frobnicate","x":1}"#]);
    sh_extension(&env.global_root(), "future", "future", &script);
    let (done, json, _) = doctor(&env, &["future", "--strict"]);
    assert_eq!(done.code, 0, "{done:#?}");
    let report = &json["extensions"][0];
    assert_eq!(report["status"], "ok");
    assert_has(report, "notes", "sent a frame of type \"frobnicate\"");
    let text = env.zot(["ext", "doctor", "future"]).ok();
    assert!(
        text.stdout
            .contains("  note: sent a frame of type \"frobnicate\""),
        "{}",
        text.stdout
    );
}

/// null where Go writes nil slices is fine; a known frame that does not decode names the
/// field at fault.
#[test]
fn null_fields_pass_and_bad_fields_are_named() {
    let env = Env::new();
    let script = good_script(
        "nulls",
        &[
            r#"{"type":"register_tool","name":"t","description":null,"schema":{"type":"object"}}"#,
            r#"{"type":"subscribe","events":null,"intercept":["tool_call"]}"#,
        ],
    );
    let (done, report, _) = check(&env, "nulls", &script, "5");
    assert_eq!(done.code, 0, "{done:#?}");
    assert_eq!(report["status"], "ok", "{report:#}");
    let script = good_script("badfield", &[r#"{"type":"register_command","name":5}"#]);
    let (done, report, _) = check(&env, "badfield", &script, "5");
    assert_eq!(done.code, 0);
    assert_has(
        &report,
        "warnings",
        "sent a register_command frame zot cannot decode (register_command: name: invalid type: integer `5`, expected a string), so zot drops it and a command is missing",
    );
}

/// Deferred and interactive tools are listed as such; panel frames are fine at any time.
#[test]
fn deferred_and_interactive_tools_are_listed() {
    let env = Env::new();
    let script = good_script(
        "kinds",
        &[
            r#"{"type":"register_tool","name":"plain","schema":{"type":"object"}}"#,
            r#"{"type":"register_tool","name":"later","schema":{"type":"object"},"deferred":true}"#,
            r#"{"type":"register_tool","name":"ask","schema":{"type":"object"},"interactive":true}"#,
            r#"{"type":"open_panel","panel":{"id":"p","title":"T","lines":null}}"#,
            r#"{"type":"panel_close","panel_id":"p"}"#,
        ],
    );
    let (done, report, _) = check(&env, "kinds", &script, "5");
    assert_eq!(done.code, 0, "{done:#?}");
    assert_eq!(report["status"], "ok", "{report:#}");
    let flags: Vec<(bool, bool)> = report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["deferred"].as_bool().unwrap(),
                t["interactive"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(flags, [(false, false), (true, false), (false, true)]);
    let text = env.zot(["ext", "doctor", "kinds"]).ok();
    assert!(
        text.stdout
            .contains("  tools: plain, later (deferred), ask (interactive)\n"),
        "{}",
        text.stdout
    );
}

/// A queued extension's timeout runs from its own start, not from when doctor began: with
/// one check at a time, three extensions that each take most of the timeout all pass.
#[test]
fn a_queued_extension_is_timed_from_its_own_start() {
    let env = Env::new();
    for name in ["late-a", "late-b", "late-c"] {
        let script = format!("sleep 0.6\n{}", good_script(name, &[]));
        sh_extension(&env.global_root(), name, name, &script);
    }
    let (done, json, _) = doctor(&env, &["--jobs", "1", "--timeout", "1.5"]);
    assert_eq!(done.code, 0, "{done:#?}");
    assert_eq!(json["summary"]["ok"], 3, "{json:#}");
}

/// A grandchild whose parent exits at once (a double fork) is adopted by doctor, which ends
/// it after the check and reports it for the one extension it started.
#[test]
fn a_double_forked_grandchild_is_ended_and_reported() {
    let env = Env::new();
    let script = format!(
        "{HELLO}sh -c 'setsid sh -c \"echo \\$\\$ > grandchild.new && mv grandchild.new grandchild; exec sleep 301\" </dev/null >/dev/null 2>&1 &'\nwhile [ ! -s grandchild ]; do sleep 0.01; done\necho '{{\"type\":\"ready\"}}'\n{}",
        crate::support::extensions::SERVE
    );
    let (done, report, _) = check(&env, "daemonizer", &script, "5");
    let text = fs::read_to_string(env.global_root().join("daemonizer/grandchild")).unwrap();
    let pid: i32 = text.trim().parse().unwrap();
    assert!(
        !crate::support::extensions::alive(pid),
        "the grandchild {pid} is still running"
    );
    assert_eq!(done.code, 0, "{done:#?}");
    // The grandchild wrote its pid from its own session (it escaped before ready); caught
    // before or after it execs sleep, its command line ends so.
    let message = messages(&report, "warnings")
        .into_iter()
        .find(|m| {
            m.contains(&format!(
                "left a process running after shutdown: pid {pid} ("
            ))
        })
        .unwrap_or_else(|| panic!("no warning about pid {pid}: {report:#}"));
    assert!(message.contains("sleep 301)"), "{message}");
}

/// A hangup that whoever started zot ignores (nohup) stays ignored while extensions run;
/// an interrupt still ends zot and them.
#[test]
fn a_hangup_ignored_by_the_parent_stays_ignored() {
    use std::os::unix::process::ExitStatusExt;
    use std::process::{Command, Stdio};

    let env = Env::new();
    let dir = sh_extension(
        &env.global_root(),
        "hang",
        "hang",
        "echo $$ > pid\nsleep 300\n",
    );
    let run = env.zot(["ext", "doctor", "--timeout", "60"]);
    let mut nohup = Command::new("sh");
    nohup
        .args(["-c", "trap '' HUP; exec \"$@\"", "sh"])
        .arg(run.cmd.get_program())
        .args(run.cmd.get_args())
        .current_dir(&env.project)
        .env_clear()
        .envs(run.cmd.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut zot = nohup.spawn().unwrap();
    let until = Instant::now() + Duration::from_secs(10);
    let pid = loop {
        let text = fs::read_to_string(dir.join("pid")).unwrap_or_default();
        if let Ok(pid) = text.trim().parse::<i32>() {
            break pid;
        }
        assert!(Instant::now() < until, "the extension never started");
        std::thread::sleep(Duration::from_millis(20));
    };
    let zot_pid = zot.id().to_string();
    let signal = |name: &str| {
        let sent = Command::new("kill")
            .args([format!("-{name}"), zot_pid.clone()])
            .status()
            .unwrap();
        assert!(sent.success());
    };
    signal("HUP");
    std::thread::sleep(Duration::from_secs(1));
    assert!(
        zot.try_wait().unwrap().is_none(),
        "zot ended on an ignored SIGHUP"
    );
    assert!(crate::support::extensions::alive(pid));
    signal("INT");
    let status = zot.wait().unwrap();
    assert_eq!(status.signal(), Some(2), "{status:?}");
    assert_gone(pid);
}

#[test]
fn the_command_to_run_by_hand_is_quoted_for_sh() {
    let env = Env::new();
    let root = env.global_root();
    crate::support::extensions::sh_extension(&root, "my ext", "spaced", "exit 3\n");
    env.zot(["ext", "doctor", "spaced"])
        .fails(1)
        .stdout_has(&format!(
            "run it by hand: cd '{}' && ",
            root.join("my ext").display()
        ));
}
