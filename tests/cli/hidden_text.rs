//! Characters a terminal does not show as themselves: a name holding a zero-width space
//! (U+200B), manifest fields holding a right-to-left override (U+202E) and C1 controls
//! (U+009B, the one-byte CSI), and an extension's answer holding escape sequences. Every
//! name and field is shown escaped wherever it is printed, through a pipe and on a terminal
//! alike, and completion never hands them raw to the shell; an extension's answer is
//! escaped on a terminal and byte-exact into a pipe.

use crate::support::extensions::good_script;
use crate::support::{Done, Env, write_executable};

/// The name: `hello` with a zero-width space inside.
const NAME: &str = "hel\u{200b}lo";
/// How it is shown.
const SHOWN: &str = "hel\\u{200b}lo";
/// A description that reads backwards from the override on and holds a C1 control.
const DESCRIPTION: &str = "says hi \u{202e}exe.txt\u{9b}2J";

/// The characters none of the output may hold raw.
const RAW: [char; 4] = ['\u{200b}', '\u{202e}', '\u{9b}', '\u{1b}'];

fn assert_nothing_raw(done: &Done) {
    for c in RAW {
        assert!(
            !done.stdout.contains(c) && !done.stderr.contains(c),
            "{c:?} printed raw: {done:#?}"
        );
    }
}

/// Installs the extension named [`NAME`] (a well-behaved script) globally.
fn install_hidden_name(env: &Env) -> Done {
    let manifest = serde_json::json!({
        "name": NAME,
        "version": "1.0.0",
        "exec": "./run.sh",
        "description": DESCRIPTION,
    });
    let source = env.source_with_manifest("src", &manifest.to_string());
    write_executable(
        &source.join("run.sh"),
        &format!("#!/bin/sh\n{}", good_script(NAME, &[])),
    );
    env.install(&source)
}

#[test]
fn a_name_with_an_invisible_character_is_installed_with_one_warning() {
    let env = Env::new();
    let done = install_hidden_name(&env);
    assert_nothing_raw(&done);
    done.stdout_has(&format!("installed {SHOWN} 1.0.0 (global)"));
    let warnings: Vec<&str> = done
        .stderr
        .lines()
        .filter(|l| l.starts_with("warning:"))
        .collect();
    assert_eq!(warnings.len(), 1, "{done:#?}");
    assert!(
        warnings[0].contains(&format!("the name \"{SHOWN}\" holds U+200B"))
            && warnings[0].contains("it reads \"hello\""),
        "{done:#?}"
    );
    assert_eq!(env.installed_names(), [NAME]);
}

#[test]
fn names_and_fields_are_escaped_in_list_info_doctor_and_errors() {
    let env = Env::new();
    install_hidden_name(&env);
    let escaped_description = "says hi \\u{202e}exe.txt\\u{9b}2J";
    for done in [
        env.zot(["ext", "list"]).ok(),
        env.zot_in_terminal(&["ext", "list", "--wide"], ""),
        env.zot(["ext", "info", NAME]).ok(),
        env.zot_in_terminal(&["ext", "info", NAME], ""),
    ] {
        assert_nothing_raw(&done);
        done.stdout_has(SHOWN).stdout_has(escaped_description);
    }
    let done = env.zot(["ext", "doctor", NAME]).ok();
    assert_nothing_raw(&done);
    done.stdout_has(&format!("{SHOWN} (global)"));
    for done in [
        env.zot(["ext", "info", "hello"]).fails(1),
        env.zot_in_terminal(&["ext", "info", "hello"], ""),
    ] {
        assert_nothing_raw(&done);
        let text = format!("{}{}", done.stdout, done.stderr);
        assert!(text.contains(&format!("did you mean {SHOWN}")), "{done:#?}");
    }
    let typed = "hel\u{202e}lo";
    let done = env.zot(["ext", "info", typed]).fails(1);
    assert_nothing_raw(&done);
    done.stderr_has("hel\\u{202e}lo");
}

#[test]
fn completion_never_hands_hidden_characters_to_the_shell() {
    let env = Env::new();
    install_hidden_name(&env);
    for shell in ["zsh", "bash"] {
        let done = env
            .zot(["--", "zot", "ext", "info", "h"])
            .env("COMPLETE", shell)
            .env("_CLAP_COMPLETE_INDEX", "3")
            .env("_CLAP_IFS", "\n")
            .ok();
        assert_nothing_raw(&done);
        // Each shell gets the escape quoted its own way (`hel\\u{200b}lo` for zsh).
        done.stdout_has("200b");
    }
    let done = env
        .zot(["--", "zot", "ext", "info", "h"])
        .env("COMPLETE", "fish")
        .ok();
    done.stdout_is(&format!("{SHOWN}\tsays hi \\u{{202e}}exe.txt\\u{{9b}}2J\n"));
}

/// A folder offered for a path-like word is escaped too.
#[test]
fn completed_folders_are_escaped() {
    let env = Env::new();
    std::fs::create_dir_all(env.project.join("dir\u{202e}txt")).unwrap();
    let done = env
        .zot(["--", "zot", "ext", "doctor", "./dir"])
        .env("COMPLETE", "fish")
        .ok();
    assert_nothing_raw(&done);
    done.stdout_has("dir\\u{202e}txt/");
}

/// An extension whose answer, panel id and notification hold escape sequences, C1 controls
/// and a right-to-left override, with newlines and tabs.
fn install_noisy(env: &Env) {
    let answer = r#"while IFS= read -r line; do
  case $line in
    '{"type":"command_invoked"'*)
      printf '%s\n' '{"type":"panel_render","panel_id":"p\u001b]0;title\u0007","title":"T","lines":["l"]}'
      printf '%s\n' '{"type":"command_response","id":"1","action":"display","display":"red \u001b[31mX\u001b[0m\n\tnext \u202erev \u009b2J"}' ;;
    '{"type":"tool_call"'*) printf '%s\n' '{"type":"tool_result","id":"1","content":[{"type":"text","text":"a\u001b[2Jb\tc"}]}' ;;
    '{"type":"shutdown"'*) echo '{"type":"shutdown_ack"}'; exit 0 ;;
  esac
done
"#;
    let script = format!(
        "echo '{{\"type\":\"hello\",\"name\":\"noisy\",\"version\":\"1\"}}'\nread ack\n\
         echo '{{\"type\":\"register_command\",\"name\":\"go\"}}'\n\
         echo '{{\"type\":\"register_tool\",\"name\":\"t\",\"description\":\"d\",\"schema\":{{\"type\":\"object\"}}}}'\n\
         echo '{{\"type\":\"ready\"}}'\n{answer}"
    );
    crate::support::extensions::sh_extension(&env.global_root(), "noisy", "noisy", &script);
}

#[test]
fn an_extensions_answer_is_escaped_on_a_terminal_and_exact_in_a_pipe() {
    let env = Env::new();
    install_noisy(&env);
    let piped = env.zot(["ext", "call", "noisy", "/go"]).ok();
    assert_eq!(
        piped.stdout,
        "[panel p\u{1b}]0;title\u{7}] T\n  l\ndisplay:\nred \u{1b}[31mX\u{1b}[0m\n\tnext \u{202e}rev \u{9b}2J\n"
    );
    let shown = env.zot_in_terminal(&["ext", "call", "noisy", "/go"], "");
    assert_nothing_raw(&shown);
    let text = shown.stdout.replace("\r\n", "\n");
    assert!(
        text.contains(
            "[panel p\\u{1b}]0;title\\u{7}] T\n  l\ndisplay:\nred \\u{1b}[31mX\\u{1b}[0m\n\tnext \\u{202e}rev \\u{9b}2J\n"
        ),
        "{shown:#?}"
    );
    let piped = env.zot(["ext", "call", "noisy", "--tool", "t"]).ok();
    assert_eq!(piped.stdout, "a\u{1b}[2Jb\tc\n");
    let shown = env.zot_in_terminal(&["ext", "call", "noisy", "--tool", "t"], "");
    assert_nothing_raw(&shown);
    assert!(shown.stdout.contains("a\\u{1b}[2Jb\tc"), "{shown:#?}");
}
