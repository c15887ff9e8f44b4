//! `zot ext doctor` judges by the facts of one zot version: `--zot-version`, else what the
//! zot agent reports, else the newest known. Built-in names, events, interception and
//! linked folders differ by version; `zot ext link` warns about hosts that skip links.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::extensions::assert_gone;
use crate::support::{Done, Env, write_executable};

/// What a test extension registers and subscribes to.
#[derive(Default)]
struct Spec<'a> {
    commands: &'a [&'a str],
    tools: &'a [&'a str],
    events: &'a [&'a str],
    intercept: &'a [&'a str],
}

/// Writes `<root>/<name>/`: a Python extension that says hello, registers `spec`, sends
/// ready and answers shutdown.
fn py_extension(root: &Path, name: &str, spec: &Spec) -> PathBuf {
    let dir = root.join(name);
    fs::create_dir_all(&dir).unwrap();
    let manifest =
        json!({"name": name, "version": "1.0.0", "exec": "./main.py", "language": "python"});
    fs::write(dir.join("extension.json"), manifest.to_string()).unwrap();
    let list = |items: &[&str]| serde_json::to_string(items).unwrap();
    let program = format!(
        r#"#!/usr/bin/env python3
import json, sys

def send(frame):
    sys.stdout.write(json.dumps(frame) + "\n")
    sys.stdout.flush()

send({{"type": "hello", "name": {name}, "version": "1.0.0"}})
sys.stdin.readline()
for command in {commands}:
    send({{"type": "register_command", "name": command, "description": "test"}})
for tool in {tools}:
    send({{"type": "register_tool", "name": tool, "description": "test", "schema": {{"type": "object"}}}})
events, intercept = {events}, {intercept}
if events or intercept:
    send({{"type": "subscribe", "events": events, "intercept": intercept}})
send({{"type": "ready"}})
for line in sys.stdin:
    if json.loads(line).get("type") == "shutdown":
        send({{"type": "shutdown_ack"}})
        break
"#,
        name = json!(name),
        commands = list(spec.commands),
        tools = list(spec.tools),
        events = list(spec.events),
        intercept = list(spec.intercept),
    );
    write_executable(&dir.join("main.py"), &program);
    dir
}

/// `zot ext doctor --json <args>`; every process it started is gone afterwards.
fn doctor_json(env: &Env, args: &[&str], agent: Option<&Path>) -> (Done, Value) {
    let mut full = vec!["ext", "doctor", "--json"];
    full.extend_from_slice(args);
    let mut run = env.zot(&full);
    if let Some(agent) = agent {
        run = run.env("ZOT_AGENT", agent);
    }
    let done = run.output();
    let json = done.json();
    for report in json["extensions"].as_array().unwrap() {
        if let Some(pid) = report["pid"].as_i64() {
            assert_gone(pid as i32);
        }
    }
    (done, json)
}

/// The report of the one global extension `name` with `spec`, judged by `version`.
fn judged(env: &Env, name: &str, spec: &Spec, version: &str) -> (i32, Value) {
    if !env.global_root().join(name).exists() {
        py_extension(&env.global_root(), name, spec);
    }
    let (done, json) = doctor_json(env, &[name, "--zot-version", version], None);
    (done.code, json["extensions"][0].clone())
}

fn messages(report: &Value, kind: &str) -> Vec<String> {
    report[kind]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["message"].as_str().unwrap().to_string())
        .collect()
}

/// A fake zot agent: a shell script `work/<file>` with `body`.
fn fake_agent(env: &Env, file: &str, body: &str) -> PathBuf {
    let path = env.work.join(file);
    write_executable(&path, &format!("#!/bin/sh\n{body}"));
    path
}

#[test]
fn yolo_is_an_error_at_0_1_62() {
    let env = Env::new();
    let spec = Spec {
        commands: &["yolo"],
        ..Spec::default()
    };
    let (code, report) = judged(&env, "gamble", &spec, "0.1.62");
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(report["status"], "error");
    assert_eq!(
        messages(&report, "errors"),
        ["/yolo is a built-in command of zot 0.1.62, so zot never calls this extension for it"]
    );
    assert_eq!(
        report["errors"][0]["fix"],
        "rename the command, e.g. /gamble-yolo"
    );
}

#[test]
fn names_zot_does_not_have_are_free() {
    let env = Env::new();
    let spec = Spec {
        commands: &["new", "cd", "swarm", "matrix", "Help"],
        ..Spec::default()
    };
    for version in ["0.1.62", "0.1.63"] {
        let (code, report) = judged(&env, "roomy", &spec, version);
        assert_eq!(code, 0, "{version}: {report:#}");
        assert_eq!(report["status"], "ok", "{version}: {report:#}");
        assert_eq!(report["commands"].as_array().unwrap().len(), 5);
    }
}

#[test]
fn settings_reaches_the_extension_only_when_typed_in_full() {
    let env = Env::new();
    let spec = Spec {
        commands: &["settings", "tg"],
        ..Spec::default()
    };
    let (code, report) = judged(&env, "prefs", &spec, "0.1.62");
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["status"], "warning", "{report:#}");
    assert_eq!(
        messages(&report, "warnings"),
        [
            "/settings picked from zot's suggestion list runs zot 0.1.62's own /settings; only typed in full does it reach this extension",
            "/tg picked from zot's suggestion list runs zot 0.1.62's own /tg; only typed in full does it reach this extension",
        ]
    );
}

#[test]
fn glob_clashes_only_with_newer_zot() {
    let env = Env::new();
    let spec = Spec {
        tools: &["glob"],
        ..Spec::default()
    };
    let (code, report) = judged(&env, "globber", &spec, "0.1.62");
    assert_eq!((code, &report["status"]), (0, &json!("ok")), "{report:#}");
    let (code, report) = judged(&env, "globber", &spec, "0.1.63");
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(
        messages(&report, "errors"),
        [
            "glob is a built-in tool of zot >0.1.62, so the model never reaches this extension's tool"
        ]
    );
}

#[test]
fn session_end_is_a_warning_only_at_0_1_62() {
    let env = Env::new();
    let spec = Spec {
        events: &["session_start", "session_end"],
        intercept: &["tool_call"],
        ..Spec::default()
    };
    let (code, report) = judged(&env, "ender", &spec, "0.1.62");
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["status"], "warning");
    assert_eq!(
        messages(&report, "warnings"),
        ["subscribes to \"session_end\", an event zot 0.1.62 never sends (zot >0.1.62 does)"]
    );
    let (_, report) = judged(&env, "ender", &spec, "0.2.0");
    assert_eq!(report["status"], "ok", "{report:#}");
}

#[test]
fn a_linked_folder_is_an_error_only_at_0_1_62() {
    let env = Env::new();
    let wc = py_extension(&env.work, "linked", &Spec::default());
    // No agent here: no zot to warn for (the note spoke of old versions to everyone).
    let link = env.zot(["ext", "link", wc.to_str().unwrap()]).ok();
    assert_eq!(link.stderr, "");
    let (done, json) = doctor_json(&env, &["linked", "--zot-version", "0.1.62"], None);
    assert_eq!(done.code, 1, "{done:#?}");
    let report = &json["extensions"][0];
    assert_eq!(
        messages(report, "errors"),
        [
            "the extension folder is a symbolic link (as zot ext link makes), and zot 0.1.62 does not load linked extension folders: it skips this one"
        ]
    );
    assert_eq!(
        report["errors"][0]["fix"],
        format!(
            "install a copy instead: zot ext install --force {}, or use zot >0.1.62, which follows links",
            wc.display()
        )
    );
    let (done, json) = doctor_json(&env, &["linked", "--zot-version", "0.1.63"], None);
    assert_eq!(done.code, 0, "{done:#?}");
    assert_eq!(json["extensions"][0]["status"], "ok");
}

#[test]
fn link_warns_when_the_agent_skips_links() {
    let env = Env::new();
    let wc = py_extension(&env.work, "linked", &Spec::default());
    let quiet = env.zot(["ext", "-q", "link", wc.to_str().unwrap()]).ok();
    assert_eq!(quiet.stderr, "");
    // An agent that follows links: nothing to say.
    let newer = fake_agent(&env, "zot-new", "echo 'zot 0.1.63'\n");
    let done = env
        .zot(["ext", "link", "--force", wc.to_str().unwrap()])
        .env("ZOT_AGENT", &newer)
        .ok();
    assert_eq!(done.stderr, "");
    let agent = fake_agent(&env, "zot", "echo 'zot 0.1.62'\n");
    let done = env
        .zot(["ext", "-q", "link", "--force", wc.to_str().unwrap()])
        .env("ZOT_AGENT", &agent)
        .ok();
    assert_eq!(
        done.stderr,
        format!(
            "warning: the zot agent {} is zot 0.1.62, which does not load linked extension folders, so it will not start linked; install a copy instead: zot ext install --force {}\n",
            agent.display(),
            wc.display()
        )
    );
}

#[test]
fn the_agent_names_the_version() {
    let env = Env::new();
    let spec = Spec {
        events: &["session_end"],
        ..Spec::default()
    };
    py_extension(&env.global_root(), "ender", &spec);
    let agent = fake_agent(
        &env,
        "zot-agent",
        "[ \"$1\" = --version ] && echo 'zot 0.1.62 (380eca9, 2026-01-01)'\n",
    );
    let why = format!(
        "judged for zot 0.1.62 (the agent ZOT_AGENT names, {})",
        agent.display()
    );
    let (_, json) = doctor_json(&env, &[], Some(&agent));
    assert_eq!(
        json["zot"],
        json!({"version": "0.1.62", "facts": "0.1.62", "from": "agent", "why": why})
    );
    assert_eq!(json["extensions"][0]["status"], "warning", "{json:#}");
    let text = env.zot(["ext", "doctor"]).env("ZOT_AGENT", &agent).ok();
    assert!(
        text.stdout.ends_with(&format!(
            "\n1 extension checked: 0 ok, 1 with warnings, 0 with errors\n{why}\n"
        )),
        "{}",
        text.stdout
    );
}

#[test]
fn without_an_agent_the_newest_facts_apply() {
    let env = Env::new();
    py_extension(&env.global_root(), "plain", &Spec::default());
    let (done, json) = doctor_json(&env, &[], None);
    assert_eq!(done.code, 0, "{done:#?}");
    assert_eq!(
        json["zot"],
        json!({
            "version": null,
            "facts": ">0.1.62",
            "from": "default",
            "why": "judged for the newest zot known (no zot agent found; --zot-version sets it)"
        })
    );
}

#[test]
fn a_hanging_agent_is_given_up_on() {
    let env = Env::new();
    py_extension(&env.global_root(), "plain", &Spec::default());
    let pid_file = env.work.join("agent.pid");
    let agent = fake_agent(
        &env,
        "zot",
        &format!("echo $$ > '{}'\nsleep 300\n", pid_file.display()),
    );
    let started = Instant::now();
    let (done, json) = doctor_json(&env, &[], Some(&agent));
    assert!(started.elapsed() < Duration::from_secs(120));
    assert_eq!(done.code, 0, "{done:#?}");
    assert_eq!(json["zot"]["facts"], ">0.1.62");
    assert_eq!(json["zot"]["from"], "default");
    assert_eq!(
        json["zot"]["why"],
        format!(
            "judged for the newest zot known (the zot agent {} did not answer --version within 2s; --zot-version sets it)",
            agent.display()
        )
    );
    let pid: i32 = fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_gone(pid);
}

#[test]
fn an_agent_calling_zot_back_is_asked_once() {
    let env = Env::new();
    let calls = env.work.join("calls");
    let agent = fake_agent(
        &env,
        "wrapper",
        &format!(
            "echo x >> '{}'\nexec '{}' \"$@\"\n",
            calls.display(),
            env!("CARGO_BIN_EXE_zot")
        ),
    );
    let (done, json) = doctor_json(&env, &[], Some(&agent));
    assert_eq!(done.code, 0, "{done:#?}");
    assert_eq!(fs::read_to_string(&calls).unwrap(), "x\n");
    assert_eq!(json["zot"]["from"], "default");
    assert!(
        json["zot"]["why"]
            .as_str()
            .unwrap()
            .ends_with("exited with exit status 2 on --version; --zot-version sets it)"),
        "{json:#}"
    );
}

#[test]
fn the_option_wins_and_says_how_it_was_read() {
    let env = Env::new();
    let agent = fake_agent(&env, "zot", "echo 'zot 0.1.62'\n");
    let pick = |version: &str| {
        let (_, json) = doctor_json(&env, &["--zot-version", version], Some(&agent));
        json["zot"].clone()
    };
    assert_eq!(
        pick("0.2.0"),
        json!({"version": "0.2.0", "facts": ">0.1.62", "from": "option",
               "why": "judged for zot 0.2.0 (--zot-version)"})
    );
    assert_eq!(
        pick("0.1.40")["why"],
        "judged for zot 0.1.40 as for zot 0.1.62, the oldest zot known (--zot-version)"
    );
    assert_eq!(
        pick("0.0.0")["why"],
        "judged for the newest zot known (--zot-version says 0.0.0, the version of a build without one)"
    );
    assert_eq!(
        pick("latest")["why"],
        "judged for the newest zot known (--zot-version says latest, which is not a version)"
    );
}

#[test]
fn a_project_link_hides_the_global_folder_only_for_zot_following_links() {
    let env = Env::new();
    let spec = Spec {
        commands: &["deploy"],
        ..Spec::default()
    };
    py_extension(&env.global_root(), "dup", &spec);
    let wc = py_extension(&env.work, "dup", &spec);
    fs::create_dir_all(env.project_root()).unwrap();
    std::os::unix::fs::symlink(&wc, env.project_root().join("dup")).unwrap();

    // zot 0.1.62 skips the link before noting its folder name: the global copy starts,
    // alone, and nothing else takes its command.
    let (done, json) = doctor_json(&env, &["--zot-version", "0.1.62"], None);
    assert_eq!(done.code, 1, "{done:#?}");
    let [link, global] = [&json["extensions"][0], &json["extensions"][1]];
    assert_eq!(
        (&link["scope"], &link["loaded"]),
        (&json!("project"), &json!(false))
    );
    assert_eq!(
        (&global["scope"], &global["loaded"]),
        (&json!("global"), &json!(true))
    );
    assert_eq!(global["status"], "ok", "{global:#}");
    done.stdout_lacks("shadowed");
    env.zot(["ext", "doctor", "--zot-version", "0.1.62"])
        .fails(1)
        .stdout_has("dup (project, linked: the zot judged by skips linked folders)");

    // Newer zot follows the link, which hides the global folder of the same name.
    let (done, json) = doctor_json(&env, &["--zot-version", "0.1.63"], None);
    assert_eq!(done.code, 0, "{done:#?}");
    assert_eq!(json["extensions"][0]["loaded"], true);
    assert_eq!(json["extensions"][1]["loaded"], false);
}
