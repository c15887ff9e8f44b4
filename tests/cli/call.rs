//! `zot ext call`: run a command or a tool of a real extension without the agent.

use std::time::{Duration, Instant};

use crate::support::Env;
use crate::support::extensions::{assert_gone, examples, good_script, on_path, sh_extension};

fn clock() -> Option<String> {
    if on_path("node") {
        Some(examples().join("clock").display().to_string())
    } else {
        eprintln!("skipping: node is not on PATH, so the clock example cannot run");
        None
    }
}

#[test]
fn a_command_with_arguments() {
    let Some(clock) = clock() else { return };
    let env = Env::new();
    let done = env.zot(["ext", "call", &clock, "/clock", "UTC"]).ok();
    assert!(done.stdout.starts_with("display: "), "{}", done.stdout);
    assert!(done.stdout.contains("UTC"), "{}", done.stdout);
}

#[test]
fn a_command_of_an_installed_extension_as_json() {
    let env = Env::new();
    let src = examples().join("hello-py");
    env.zot(["ext", "install", src.to_str().unwrap()]).ok();
    let done = env
        .zot(["ext", "call", "hello-py", "/hellopy", "--json"])
        .ok();
    let json = done.json();
    assert_eq!(
        json["request"],
        serde_json::json!({"type": "command_invoked", "id": "1", "name": "hellopy"})
    );
    assert_eq!(json["response"]["action"], "prompt");
    assert_eq!(
        json["response"]["prompt"],
        "Greet me very briefly. Add one emoji."
    );
    assert_eq!(json["frames"].as_array().unwrap().len(), 1);
    let text = env.zot(["ext", "call", "hello-py", "hellopy"]).ok();
    assert_eq!(
        text.stdout,
        "prompt: Greet me very briefly. Add one emoji.\n"
    );
}

#[test]
fn a_tool_with_json_arguments() {
    let Some(clock) = clock() else { return };
    let env = Env::new();
    let done = env
        .zot([
            "ext",
            "call",
            &clock,
            "--tool",
            "clock",
            r#"{"timezone":"UTC"}"#,
        ])
        .ok();
    assert!(done.stdout.contains("UTC"), "{}", done.stdout);
    let failed = env
        .zot([
            "ext",
            "call",
            &clock,
            "--tool",
            "clock",
            r#"{"timezone":"Nowhere/Else"}"#,
        ])
        .fails(1);
    assert!(
        failed.stdout.contains("unknown time zone"),
        "{}",
        failed.stdout
    );
    assert!(
        failed.stderr.contains("reported an error (is_error: true)"),
        "{}",
        failed.stderr
    );
}

#[test]
fn notify_frames_images_and_command_errors_are_shown() {
    let env = Env::new();
    let script = r#"echo '{"type":"hello","name":"noisy","version":"1"}'
read ack
echo '{"type":"register_command","name":"go"}'
echo '{"type":"register_tool","name":"pic","schema":{"type":"object"}}'
echo '{"type":"ready"}'
while IFS= read -r line; do
  case $line in
    '{"type":"command_invoked"'*)
      echo '{"type":"notify","level":"warn","message":"working on it"}'
      echo '{"type":"command_response","id":"1","action":"noop","error":"it broke"}' ;;
    '{"type":"tool_call"'*)
      echo '{"type":"tool_result","id":"1","content":[{"type":"text","text":"a picture:"},{"type":"image","mime_type":"image/png","data":"aGVsbG8="}]}' ;;
    '{"type":"shutdown"'*) echo '{"type":"shutdown_ack"}'; exit 0 ;;
  esac
done
"#;
    sh_extension(&env.global_root(), "noisy", "noisy", script);
    let done = env.zot(["ext", "call", "noisy", "/go"]).fails(1);
    assert_eq!(done.stdout, "[warn] working on it\nnoop\n");
    assert!(
        done.stderr.contains("error: /go failed: it broke"),
        "{}",
        done.stderr
    );
    let done = env.zot(["ext", "call", "noisy", "--tool", "pic"]).ok();
    assert_eq!(done.stdout, "a picture:\n[image image/png, 5 bytes]\n");
    let json = env
        .zot(["ext", "call", "noisy", "/go", "--json"])
        .fails(1)
        .json();
    assert_eq!(json["frames"][0]["type"], "notify");
    assert_eq!(json["response"]["error"], "it broke");
}

#[test]
fn unregistered_names_are_refused_with_what_is_registered() {
    let env = Env::new();
    let script = good_script("few", &[r#"{"type":"register_command","name":"one"}"#]);
    sh_extension(&env.global_root(), "few", "few", &script);
    let done = env.zot(["ext", "call", "few", "/two"]).fails(1);
    assert!(
        done.stderr
            .contains("few does not register the command /two; it registers /one"),
        "{}",
        done.stderr
    );
    let done = env.zot(["ext", "call", "few", "--tool", "t"]).fails(1);
    assert!(
        done.stderr.contains("it registers no tools"),
        "{}",
        done.stderr
    );
}

#[test]
fn no_answer_times_out_cleanly() {
    let env = Env::new();
    let script = r#"echo '{"type":"hello","name":"mute","version":"1"}'
read ack
echo '{"type":"register_command","name":"wait"}'
echo '{"type":"ready"}'
echo $$ > pid
while IFS= read -r line; do
  case $line in '{"type":"shutdown"'*) echo '{"type":"shutdown_ack"}'; exit 0 ;; esac
done
"#;
    let dir = sh_extension(&env.global_root(), "mute", "mute", script);
    let started = Instant::now();
    let done = env
        .zot(["ext", "call", "mute", "/wait", "--timeout", "1"])
        .fails(1);
    let took = started.elapsed();
    assert!(
        done.stderr
            .contains("no command_response within 1s; raise --timeout"),
        "{}",
        done.stderr
    );
    assert!(
        took >= Duration::from_secs(1) && took < Duration::from_secs(4),
        "{took:?}"
    );
    let pid: i32 = std::fs::read_to_string(dir.join("pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_gone(pid);
}

#[test]
fn a_broken_extension_fails_with_its_diagnosis() {
    let env = Env::new();
    let script = "echo 'oops, no frames' >&2\nexit 2\n";
    sh_extension(&env.global_root(), "dead", "dead", script);
    let done = env.zot(["ext", "call", "dead", "/x"]).fails(1);
    assert!(
        done.stderr.contains(
            "dead did not start properly: exited with exit status 2 before sending hello"
        ),
        "{}",
        done.stderr
    );
    assert!(done.stderr.contains("| oops, no frames"), "{}", done.stderr);
}

#[test]
fn usage_errors() {
    let env = Env::new();
    let script = good_script("u", &[]);
    sh_extension(&env.global_root(), "u", "u", &script);
    let done = env.zot(["ext", "call", "u"]).fails(2);
    assert!(
        done.stderr.contains("zot ext call <name> /<command>"),
        "{}",
        done.stderr
    );
    let done = env.zot(["ext", "call", "u", "--tool", "t", "[1]"]).fails(2);
    assert!(
        done.stderr.contains("must be a JSON object"),
        "{}",
        done.stderr
    );
    env.zot(["ext", "call", "u", "--tool", "t", "{"]).fails(2);
    env.zot(["ext", "call", "u", "--tool", "t", "{}", "{}"])
        .fails(2);
    env.zot(["ext", "call"]).fails(2);
    env.zot(["ext", "call", "nope", "/x"]).fails(1);
}
