//! Beside the agent: invoked as `zot` with a command line that is not `ext` or
//! `completions`, the binary hands it to the zot agent (a fake one here: a script that
//! prints its argv and stdin and exits 7).

#![cfg(unix)]

use std::ffi::OsString;
use std::fs;
use std::io::{Read, Write};
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{Done, Env, command_line};

const FAKE_AGENT: &str = "#!/bin/sh\n\
printf 'agent argv:'\n\
for a in \"$@\"; do printf ' [%s]' \"$a\"; done\n\
echo\n\
printf 'agent stdin: '\n\
cat\n\
echo \"agent depth: $ZOT_EXT_PASSTHROUGH\"\n\
exit 7\n";

/// Writes an executable script `dir/name`, creating `dir`.
fn script(dir: &Path, name: &str, text: &str) -> PathBuf {
    fs::create_dir_all(dir).unwrap();
    let path = dir.join(name);
    fs::write(&path, text).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// A folder holding a link named `name` to the binary under test.
fn link_to_us(dir: &Path, name: &str) -> PathBuf {
    fs::create_dir_all(dir).unwrap();
    let link = dir.join(name);
    symlink(env!("CARGO_BIN_EXE_zot"), &link).unwrap();
    link
}

/// Runs `program args` in `env`'s world with `path` as PATH and `input` on stdin; kills it
/// and fails the test after 30 seconds (a pass-through loop must not hang the suite).
fn run(env: &Env, program: &Path, args: &[&str], path: OsString, vars: &[(&str, &Path)]) -> Done {
    let mut cmd = Command::new(program);
    cmd.args(args)
        .current_dir(&env.project)
        .env_clear()
        .env("PATH", path)
        .env("HOME", &env.user_home)
        .env("ZOT_HOME", &env.home)
        .env("LANG", "C.UTF-8")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (key, value) in vars {
        cmd.env(key, value);
    }
    let mut child = cmd.spawn().expect("spawn");
    let _ = child.stdin.take().unwrap().write_all(b"from stdin\n");
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("{} {args:?} still running after 30 s", program.display());
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Done {
        command: command_line(&cmd),
        code: status.code().unwrap_or(-1),
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}

fn us() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_zot"))
}

#[test]
fn agent_command_lines_reach_the_agent_with_args_stdin_and_status() {
    let env = Env::new();
    let bin = env.work.join("agent-bin");
    script(&bin, "zot", FAKE_AGENT);
    let path = env.path_with(&bin);
    run(&env, &us(), &["--ext", "./x", "foo bar"], path.clone(), &[])
        .failure(7)
        .stdout_has("agent argv: [--ext] [./x] [foo bar]\n")
        .stdout_has("agent stdin: from stdin\n")
        .stdout_has("agent depth: 1\n")
        .stderr_is("");
    // With an agent, the bare `zot`, help and version are the agent's.
    for args in [&[][..], &["--help"], &["-V"]] {
        run(&env, &us(), args, path.clone(), &[]).failure(7);
    }
}

#[test]
fn our_commands_never_pass_through() {
    let env = Env::new();
    let bin = env.work.join("agent-bin");
    script(&bin, "zot", FAKE_AGENT);
    let path = env.path_with(&bin);
    for args in [
        &["ext", "list"][..],
        &["completions", "bash"],
        &["-q", "ext", "list"],
        &["help", "ext"],
    ] {
        run(&env, &us(), args, path.clone(), &[])
            .success()
            .stdout_lacks("agent argv");
    }
}

#[test]
fn zot_agent_wins_over_path() {
    let env = Env::new();
    let bin = env.work.join("agent-bin");
    script(&bin, "zot", "#!/bin/sh\necho wrong agent\nexit 3\n");
    let named = script(&env.work.join("elsewhere"), "my-agent", FAKE_AGENT);
    let path = env.path_with(&bin);
    run(&env, &us(), &["--ext", "x"], path, &[("ZOT_AGENT", &named)])
        .failure(7)
        .stdout_has("agent argv: [--ext] [x]");
}

#[test]
fn a_link_to_ourselves_first_on_path_is_skipped() {
    let env = Env::new();
    let ours = env.work.join("cargo-bin");
    let link = link_to_us(&ours, "zot");
    let agent_dir = env.work.join("agent-bin");
    script(&agent_dir, "zot", FAKE_AGENT);
    let mut dirs = vec![ours, agent_dir];
    dirs.extend(std::env::split_paths(&env.path_with(&env.work)));
    let path = std::env::join_paths(dirs).unwrap();
    run(&env, &link, &["--ext", "./x", "foo"], path, &[])
        .failure(7)
        .stdout_has("agent argv: [--ext] [./x] [foo]");
}

#[test]
fn no_agent_is_a_usage_error_with_a_hint_but_help_still_answers() {
    let env = Env::new();
    let ours = env.work.join("cargo-bin");
    let link = link_to_us(&ours, "zot");
    let path = env.path_with(&ours);
    let done = run(&env, &link, &["--ext", "./x"], path.clone(), &[]);
    done.failure(2);
    done.stderr_one_line();
    done.stderr_has("the zot agent was not found")
        .stderr_has("ZOT_AGENT")
        .stderr_has("https://github.com/patriceckhart/zot");
    let done = run(&env, &link, &["--version"], path.clone(), &[]);
    done.success();
    assert!(done.stdout.starts_with("zot-ext "), "{done:#?}");
    let missing = env.work.join("missing");
    run(
        &env,
        &link,
        &["--ext", "x"],
        path,
        &[("ZOT_AGENT", &missing)],
    )
    .failure(2)
    .stderr_has("is not an executable file");
}

/// With no agent, a first word close to one of ours gets the command line it meant.
#[test]
fn no_agent_suggests_our_command_for_a_close_first_word() {
    let env = Env::new();
    let ours = env.work.join("cargo-bin");
    let link = link_to_us(&ours, "zot");
    let path = env.path_with(&ours);
    for (args, meant) in [
        (&["completion", "bash"][..], "zot completions bash"),
        (&["ex", "list"][..], "zot ext list"),
        (&["extension", "list"][..], "zot ext list"),
        (&["version"][..], "zot --version"),
    ] {
        let done = run(&env, &link, args, path.clone(), &[]);
        done.failure(2);
        done.stderr_one_line();
        done.stderr_has("the zot agent was not found")
            .stderr_has(&format!("; did you mean: {meant}\n"));
    }
    run(&env, &link, &["chat"], path, &[])
        .failure(2)
        .stderr_lacks("did you mean");
}

#[test]
fn invoked_as_zot_ext_it_is_always_the_manager() {
    let env = Env::new();
    let bin = env.work.join("agent-bin");
    script(&bin, "zot", FAKE_AGENT);
    let alias = link_to_us(&env.work.join("alias"), "zot-ext");
    run(&env, &alias, &["--ext", "x"], env.path_with(&bin), &[])
        .failure(2)
        .stdout_lacks("agent argv")
        .stderr_has("--ext");
}

#[test]
fn a_wrapper_agent_that_calls_zot_back_does_not_loop() {
    let env = Env::new();
    let ours = env.work.join("cargo-bin");
    let link = link_to_us(&ours, "zot");
    let wrapper_dir = env.work.join("wrapper-bin");
    script(&wrapper_dir, "zot", "#!/bin/sh\nexec zot \"$@\"\n");
    let mut dirs = vec![ours, wrapper_dir];
    dirs.extend(std::env::split_paths(&env.path_with(&env.work)));
    let path = std::env::join_paths(dirs).unwrap();
    let done = run(&env, &link, &["--ext", "x"], path, &[]);
    done.failure(2);
    done.stderr_one_line();
    done.stderr_has("seems to call `zot` back")
        .stderr_has("(ZOT_EXT_PASSTHROUGH=4)");
}

#[test]
fn completion_requests_stay_ours() {
    let env = Env::new();
    let bin = env.work.join("agent-bin");
    script(&bin, "zot", FAKE_AGENT);
    run(
        &env,
        &us(),
        &["--", "zot", "ext", "li"],
        env.path_with(&bin),
        &[("COMPLETE", Path::new("fish"))],
    )
    .stdout_lacks("agent argv")
    .stdout_has("list");
}

#[test]
fn raw_arguments_and_signals_pass_through() {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::process::ExitStatusExt;
    let env = Env::new();
    let bin = env.work.join("agent-bin");
    let record = env.work.join("argv");
    let text = format!(
        "#!/bin/sh\nprintf '%s' \"$1\" > '{}'\nkill -TERM $$\n",
        record.display()
    );
    script(&bin, "zot", &text);
    let raw = std::ffi::OsStr::from_bytes(b"caf\xe9");
    let status = Command::new(us())
        .arg(raw)
        .current_dir(&env.project)
        .env_clear()
        .env("PATH", env.path_with(&bin))
        .env("ZOT_HOME", &env.home)
        .status()
        .unwrap();
    assert_eq!(status.signal(), Some(SIGTERM), "{status:?}");
    assert_eq!(fs::read(&record).unwrap(), b"caf\xe9");
}

/// The signal number of SIGTERM on every Unix.
const SIGTERM: i32 = 15;

/// A copy (not a link) of the binary under test, named `zot`, in `dir`.
fn copy_of_us(dir: &Path) -> PathBuf {
    fs::create_dir_all(dir).unwrap();
    let copy = dir.join("zot");
    fs::copy(env!("CARGO_BIN_EXE_zot"), &copy).unwrap();
    copy
}

/// Two copies of the binary on PATH before the agent (`~/.cargo/bin` and `/usr/local/bin`,
/// say) are different files: each hand-over tells the next copy which copies handed over,
/// so the second goes on to the agent instead of handing back to the first.
#[test]
fn two_copies_on_path_hand_over_to_the_agent_not_to_each_other() {
    let env = Env::new();
    let first = copy_of_us(&env.work.join("cargo-bin"));
    copy_of_us(&env.work.join("local-bin"));
    let agent_dir = env.work.join("agent-bin");
    script(&agent_dir, "zot", FAKE_AGENT);
    let mut dirs = vec![
        env.work.join("cargo-bin"),
        env.work.join("local-bin"),
        agent_dir,
    ];
    dirs.extend(std::env::split_paths(&env.path_with(&env.work)));
    let path = std::env::join_paths(dirs).unwrap();
    run(&env, &first, &["--ext", "./x"], path, &[])
        .failure(7)
        .stdout_has("agent argv: [--ext] [./x]")
        .stdout_has("agent depth: 2\n")
        .stderr_is("");
}

/// `ZOT_AGENT` without a slash is a name looked up on PATH (this binary left out), for the
/// check and the run alike; a `zot` in the current folder is used only when written as a
/// path (`./zot`).
#[test]
fn zot_agent_without_a_slash_is_looked_up_on_path_for_check_and_run() {
    let env = Env::new();
    script(
        &env.project,
        "zot",
        "#!/bin/sh\necho the zot in the current folder\nexit 3\n",
    );
    let ours = env.work.join("cargo-bin");
    let link = link_to_us(&ours, "zot");
    let agent_dir = env.work.join("agent-bin");
    script(&agent_dir, "zot", FAKE_AGENT);
    let mut dirs = vec![ours.clone(), agent_dir];
    dirs.extend(std::env::split_paths(&env.path_with(&env.work)));
    let path = std::env::join_paths(dirs).unwrap();
    run(
        &env,
        &link,
        &["--ext", "x"],
        path.clone(),
        &[("ZOT_AGENT", Path::new("zot"))],
    )
    .failure(7)
    .stdout_has("agent argv: [--ext] [x]")
    .stdout_lacks("current folder");
    run(
        &env,
        &link,
        &["--ext", "x"],
        path,
        &[("ZOT_AGENT", Path::new("./zot"))],
    )
    .failure(3)
    .stdout_has("the zot in the current folder");
    let done = run(
        &env,
        &link,
        &["--ext", "x"],
        env.path_with(&ours),
        &[("ZOT_AGENT", Path::new("zot"))],
    );
    done.failure(2);
    done.stderr_one_line();
    done.stderr_has("ZOT_AGENT=zot names no executable file on PATH");
}
