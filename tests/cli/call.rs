//! `zot ext call`: run a command or a tool of a real extension without the agent.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use crate::support::Env;
use crate::support::extensions::{assert_gone, examples, good_script, on_path, sh_extension};
#[cfg(target_os = "linux")]
use crate::support::opens::Opens;

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
        .zot(["ext", "call", "--json", "hello-py", "/hellopy"])
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
        .zot(["ext", "call", "--json", "noisy", "/go"])
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
        .zot(["ext", "call", "--timeout", "1", "mute", "/wait"])
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

/// An extension that records what it is sent and answers with the given lines.
fn recorder(env: &Env, name: &str, caps: &str, registrations: &[&str], answers: &str) {
    let mut script = format!(
        "echo '{{\"type\":\"hello\",\"name\":\"{name}\",\"version\":\"1\",\"capabilities\":[{caps}]}}'\nread ack\n"
    );
    for line in registrations {
        let _ = writeln!(script, "echo '{line}'");
    }
    script += "echo '{\"type\":\"ready\"}'\nwhile IFS= read -r line; do\n  printf '%s\\n' \"$line\" >> received\n  case $line in\n";
    script += answers;
    script += "    '{\"type\":\"shutdown\"'*) echo '{\"type\":\"shutdown_ack\"}'; exit 0 ;;\n  esac\ndone\n";
    sh_extension(&env.global_root(), name, name, &script);
}

fn received(env: &Env, name: &str) -> String {
    std::fs::read_to_string(env.global_root().join(name).join("received")).unwrap_or_default()
}

/// Everything after /<command> is the command's arguments, flags included; flags of call
/// itself go before the name.
#[test]
fn arguments_after_the_command_are_passed_verbatim() {
    let env = Env::new();
    let answer = "    '{\"type\":\"command_invoked\"'*) echo '{\"type\":\"command_response\",\"id\":\"1\",\"action\":\"display\",\"display\":\"ok\"}' ;;\n";
    recorder(
        &env,
        "args",
        "",
        &[r#"{"type":"register_command","name":"echo"}"#],
        answer,
    );
    let done = env
        .zot([
            "ext",
            "call",
            "args",
            "/echo",
            "-v",
            "--json",
            "--timeout",
            "x",
        ])
        .ok();
    assert_eq!(done.stdout, "display: ok\n");
    assert!(
        received(&env, "args").contains(r#""args":"-v --json --timeout x""#),
        "{}",
        received(&env, "args")
    );
    let json = env
        .zot([
            "ext",
            "call",
            "--json",
            "--timeout",
            "5",
            "args",
            "/echo",
            "-v",
        ])
        .ok()
        .json();
    assert_eq!(json["request"]["args"], "-v");
    assert_eq!(json["response"]["display"], "ok");
}

/// Go's SDK writes a nil content slice as null: still a result. A result that does not
/// decode fails at once, naming the field.
#[test]
fn null_content_is_empty_and_bad_content_is_named() {
    let env = Env::new();
    let answers = r#"    '{"type":"tool_call","id":"1","name":"empty"'*) echo '{"type":"tool_result","id":"1","content":null}' ;;
    '{"type":"tool_call","id":"1","name":"broken"'*) echo '{"type":"tool_result","id":"1","content":5}' ;;
"#;
    recorder(
        &env,
        "nulls",
        "",
        &[
            r#"{"type":"register_tool","name":"empty","schema":{"type":"object"}}"#,
            r#"{"type":"register_tool","name":"broken","schema":{"type":"object"}}"#,
        ],
        answers,
    );
    let done = env.zot(["ext", "call", "nulls", "--tool", "empty"]).ok();
    assert_eq!(done.stdout, "");
    let started = Instant::now();
    let done = env
        .zot([
            "ext",
            "call",
            "--timeout",
            "30",
            "nulls",
            "--tool",
            "broken",
        ])
        .fails(1);
    assert!(
        done.stderr.contains(
            "tool_result that zot cannot decode (tool_result: content: invalid type: integer `5`, expected a sequence)"
        ),
        "{}",
        done.stderr
    );
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "it waited for the timeout"
    );
}

/// Headless callers must refuse interactive tools; deferred ones can be called.
#[test]
fn interactive_tools_are_refused() {
    let env = Env::new();
    let answer = "    '{\"type\":\"tool_call\"'*) echo '{\"type\":\"tool_result\",\"id\":\"1\",\"content\":[{\"type\":\"text\",\"text\":\"ran\"}]}' ;;\n";
    recorder(
        &env,
        "asker",
        "",
        &[
            r#"{"type":"register_tool","name":"ask","schema":{"type":"object"},"interactive":true}"#,
            r#"{"type":"register_tool","name":"later","schema":{"type":"object"},"deferred":true}"#,
        ],
        answer,
    );
    let done = env.zot(["ext", "call", "asker", "--tool", "ask"]).fails(1);
    assert!(
        done.stderr.contains("the tool ask of asker is interactive")
            && done.stderr.contains("refuse"),
        "{}",
        done.stderr
    );
    assert!(
        !received(&env, "asker").contains("tool_call"),
        "it was called"
    );
    let done = env.zot(["ext", "call", "asker", "--tool", "later"]).ok();
    assert_eq!(done.stdout, "ran\n");
}

/// A command answering with a panel prints its title, lines and footer.
#[test]
fn an_open_panel_response_is_printed() {
    let env = Env::new();
    let answer = r#"    '{"type":"command_invoked"'*)
      echo '{"type":"panel_render","panel_id":"q","title":"Busy","lines":["working"]}'
      echo '{"type":"command_response","id":"1","action":"open_panel","open_panel":{"id":"p","title":"Pick one","lines":["a","> b"],"footer":"esc closes"}}' ;;
"#;
    recorder(
        &env,
        "panels",
        "\"panels\"",
        &[r#"{"type":"register_command","name":"pick"}"#],
        answer,
    );
    let done = env.zot(["ext", "call", "panels", "/pick"]).ok();
    assert_eq!(
        done.stdout,
        "[panel q] Busy\n  working\nopen_panel: Pick one\n  a\n  > b\n  esc closes\n"
    );
}

/// A tool call that times out is cancelled before the shutdown, when the extension says it
/// understands `tool_cancel`.
#[test]
fn a_timed_out_tool_call_is_cancelled() {
    let env = Env::new();
    recorder(
        &env,
        "sloth",
        "\"tools\",\"tool_cancel\"",
        &[r#"{"type":"register_tool","name":"nap","schema":{"type":"object"}}"#],
        "",
    );
    let done = env
        .zot(["ext", "call", "--timeout", "1", "sloth", "--tool", "nap"])
        .fails(1);
    assert!(
        done.stderr
            .contains("no tool_result within 1s (sent tool_cancel)"),
        "{}",
        done.stderr
    );
    let lines: Vec<String> = received(&env, "sloth").lines().map(String::from).collect();
    let kinds: Vec<&str> = lines
        .iter()
        .map(|l| l.split('"').nth(3).unwrap_or_default())
        .collect();
    assert_eq!(kinds, ["tool_call", "tool_cancel", "shutdown"], "{lines:?}");
    assert!(lines[1].contains(r#""id":"1""#), "{lines:?}");
}

/// SIGTERM while an extension works on the call ends it before zot exits by that signal.
#[test]
fn terminating_call_leaves_nothing_running() {
    use std::os::unix::process::ExitStatusExt;
    use std::process::Command;

    let env = Env::new();
    let script = "echo '{\"type\":\"hello\",\"name\":\"busy\",\"version\":\"1\"}'\nread ack\necho '{\"type\":\"register_command\",\"name\":\"work\"}'\necho '{\"type\":\"ready\"}'\nread call\necho $$ > pid\nsleep 300\n";
    let dir = sh_extension(&env.global_root(), "busy", "busy", script);
    let mut zot = env
        .zot(["ext", "call", "--timeout", "60", "busy", "/work"])
        .spawn_silent();
    let until = Instant::now() + Duration::from_secs(10);
    let pid = loop {
        let text = std::fs::read_to_string(dir.join("pid")).unwrap_or_default();
        if let Ok(pid) = text.trim().parse::<i32>() {
            break pid;
        }
        assert!(Instant::now() < until, "the extension never got the call");
        std::thread::sleep(Duration::from_millis(20));
    };
    let sent = Command::new("kill")
        .args(["-TERM", &zot.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let status = zot.wait().unwrap();
    assert_eq!(status.signal(), Some(15), "{status:?}");
    assert_gone(pid);
}

/// A grandchild that leaves the process group is ended and named.
#[test]
fn an_escaped_grandchild_is_ended() {
    let env = Env::new();
    let script = format!(
        "echo '{{\"type\":\"hello\",\"name\":\"escapee\",\"version\":\"1\"}}'\nread ack\necho '{{\"type\":\"register_command\",\"name\":\"go\"}}'\nsetsid sh -c 'echo $$ > grandchild.new && mv grandchild.new grandchild; exec sleep 300' </dev/null >/dev/null 2>&1 &\nwhile [ ! -s grandchild ]; do sleep 0.01; done\necho '{{\"type\":\"ready\"}}'\n{}",
        crate::support::extensions::SERVE
    );
    let dir = sh_extension(&env.global_root(), "escapee", "escapee", &script);
    let done = env.zot(["ext", "call", "escapee", "/go"]).ok();
    let pid: i32 = std::fs::read_to_string(dir.join("grandchild"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        !crate::support::extensions::alive(pid),
        "the grandchild {pid} is still running"
    );
    assert!(
        // The grandchild wrote its pid from its own session, so it has escaped the group
        // before ready; caught before or after it execs sleep, its command line ends so.
        done.stderr.contains(&format!(
            "escapee left a process running after shutdown: pid {pid} ("
        )) && done.stderr.contains("sleep 300)"),
        "{}",
        done.stderr
    );
}

/// Without ready, call does not wait for the timeout: like zot, it goes on once the command
/// is registered and the extension has been quiet for 250 ms.
#[test]
fn an_extension_without_ready_is_called_without_waiting_for_the_timeout() {
    let env = Env::new();
    let script = format!(
        "echo '{{\"type\":\"hello\",\"name\":\"legacy\",\"version\":\"1\"}}'\nread ack\necho '{{\"type\":\"register_command\",\"name\":\"go\"}}'\n{}",
        crate::support::extensions::SERVE
    );
    sh_extension(&env.global_root(), "legacy", "legacy", &script);
    let started = Instant::now();
    let done = env
        .zot(["ext", "call", "--timeout", "30", "legacy", "/go"])
        .ok();
    assert_eq!(done.stdout, "display: done\n");
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "it waited for the timeout"
    );
}

/// The default wait is zot's own limit (30 s for a command, 60 s for a tool), stated in the
/// help; waiting that long is too slow for a test, so `--timeout` overriding it is tested
/// above (`--timeout 1`) and the defaults in `call`'s unit tests.
#[test]
fn help_states_zots_limits_as_the_default_timeout() {
    let env = Env::new();
    let help = env.zot(["ext", "call", "--help"]).ok().stdout;
    let flat = help.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains("[default: 30 for a command, 60 for a tool: zot's own limits]"),
        "{help}"
    );
    assert!(!flat.contains("[default: 10]"), "{help}");
}

#[test]
fn a_folder_here_named_like_the_argument_is_suggested_as_a_path() {
    let env = Env::new();
    sh_extension(&env.project, "d1", "d1", &good_script("d1", &[]));
    for command in [&["ext", "call", "d1", "/d1"][..], &["ext", "doctor", "d1"]] {
        env.zot(command)
            .fails(1)
            .stderr_has("; did you mean ./d1? (a folder in the current directory)\n");
    }
}

#[test]
fn a_missing_folder_is_named_without_os_error_text() {
    let env = Env::new();
    for command in [
        &["ext", "call", "./nonexist", "/x"][..],
        &["ext", "doctor", "./nonexist"],
    ] {
        env.zot(command).fails(1).stderr_is(
            "error: ./nonexist does not exist; give an extension folder or an installed name\n",
        );
    }
}

#[test]
fn calling_a_disabled_extension_notes_that_zot_does_not_start_it() {
    let env = Env::new();
    let script = good_script("off", &[r#"{"type":"register_command","name":"off"}"#]);
    sh_extension(&env.global_root(), "off", "off", &script);
    env.zot(["ext", "disable", "off"]).ok();
    env.zot(["ext", "call", "off", "/off"]).output().stderr_has(
        "note: off is disabled: zot does not start it (zot ext enable off turns it on); calling it anyway\n",
    );
}

#[test]
#[cfg(target_os = "linux")]
fn calling_by_name_reads_no_other_extensions_manifest() {
    let env = Env::new();
    let script = good_script("few", &[r#"{"type":"register_command","name":"one"}"#]);
    sh_extension(&env.global_root(), "few", "few", &script);
    let other = env.installed("other", false);
    let watch = Opens::watch(&other);
    env.zot(["ext", "call", "few", "/two"])
        .fails(1)
        .stderr_has("few does not register the command /two");
    assert_eq!(watch.seen(), Vec::<String>::new());
}

#[test]
fn what_the_extension_says_on_stderr_is_shown_marked_as_its_own() {
    let env = Env::new();
    let root = env.global_root();
    let script = format!(
        "echo 'loading config from ~/.talk' >&2\nprintf 'bell \\033]0;title\\007 here\\n' >&2\n{}",
        good_script(
            "talk",
            &["{\"type\":\"register_command\",\"name\":\"talk\",\"description\":\"d\"}"]
        )
    );
    sh_extension(&root, "talk", "talk", &script);
    let done = env.zot(["ext", "call", "talk", "/talk"]).ok();
    done.stderr_has(
        "talk stderr:\n    | loading config from ~/.talk\n    | bell \\u{1b}]0;title\\u{7} here\n",
    );
    let json = env
        .zot(["ext", "call", "--json", "talk", "/talk"])
        .ok()
        .json();
    assert_eq!(
        json["stderr"],
        "loading config from ~/.talk\nbell \u{1b}]0;title\u{7} here"
    );
}
