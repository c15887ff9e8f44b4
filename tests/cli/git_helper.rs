//! `zot-ext-git`, the helper every git operation runs in: found beside `zot`, its failures
//! reported as errors (never a hang), credentials kept off its command line, killed with
//! `zot`, and refusing to be run by hand.

use std::fs;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::git_install::{bounded, extension_repo};
use crate::support::{Env, write_executable};

/// `work/bin/zot`: the `zot` under test, hard-linked (copied across file systems) into a
/// folder of its own, with no helper beside it.
fn lone_zot(env: &Env) -> PathBuf {
    let bin = env.work.join("bin");
    fs::create_dir_all(&bin).unwrap();
    let zot = bin.join("zot");
    if fs::hard_link(env!("CARGO_BIN_EXE_zot"), &zot).is_err() {
        fs::copy(env!("CARGO_BIN_EXE_zot"), &zot).unwrap();
    }
    zot
}

/// A local bare repository holding the extension `x`.
fn repository(env: &Env) -> String {
    let root = env.work.join("srv");
    fs::create_dir_all(&root).unwrap();
    extension_repo(env, &root, "x").bare.display().to_string()
}

#[test]
fn zot_without_its_helper_says_where_it_looked_and_what_to_do() {
    let env = Env::new();
    let zot = lone_zot(&env);
    let repo = repository(&env);
    let helper = zot.with_file_name("zot-ext-git");
    env.zot_at(&zot, ["ext", "install", &repo])
        .fails(1)
        .stderr_has(&format!("cannot run the fetch helper {}", helper.display()))
        .stderr_has("reinstall zot-ext");
    assert!(env.installed_names().is_empty());
    // Commands that do not fetch need no helper.
    env.zot_at(&zot, ["ext", "list"]).ok();
}

#[test]
fn a_helper_that_answers_nonsense_or_stops_early_is_an_error_not_a_hang() {
    let env = Env::new();
    let zot = lone_zot(&env);
    let repo = repository(&env);
    let helper = zot.with_file_name("zot-ext-git");
    for (script, expected) in [
        (
            "cat >/dev/null; echo 'not json'",
            "said something zot does not understand",
        ),
        ("exit 3", "stopped before it answered (exit status: 3)"),
        (
            "cat >/dev/null; printf '{\"progress\":[1,2,3]}'",
            "stopped before it answered",
        ),
        // A line longer than zot reads (1 MiB). This one ends; a helper that went on
        // writing would wait for zot to read, while zot waited for it to exit.
        (
            "cat >/dev/null; yes | tr -d '\\n' | head -c 1048600",
            "said something zot does not understand (a line over",
        ),
        (
            "cat >/dev/null; echo '{\"probed\":{\"commit\":null,\"ref_kind\":\"branch\",\"branch\":null}}'",
            "which zot did not ask for",
        ),
        (
            "cat >/dev/null; echo '{\"failed\":{\"message\":\"no such ref\",\"usage\":true}}'",
            "error: no such ref",
        ),
        // A message of a kind zot does not know: the two binaries ship together, so it is
        // an error, not passed over.
        (
            "cat >/dev/null; echo '{\"phase\":1}'; echo '{\"failed\":{\"message\":\"no such ref\",\"usage\":true}}'",
            "said something zot does not understand",
        ),
    ] {
        write_executable(&helper, &format!("#!/bin/sh\n{script}\n"));
        let code = if expected.contains("no such ref") {
            2
        } else {
            1
        };
        env.zot_at(&zot, ["ext", "install", &repo])
            .fails(code)
            .stderr_has(expected);
        assert!(env.installed_names().is_empty(), "{script}");
    }
}

/// A helper that says nothing at all, not even its heartbeat, is stopped after the
/// low-speed time instead of being waited for.
#[test]
fn a_helper_that_stops_answering_is_stopped() {
    let env = Env::new();
    let zot = lone_zot(&env);
    let repo = repository(&env);
    let helper = zot.with_file_name("zot-ext-git");
    write_executable(&helper, "#!/bin/sh\ncat >/dev/null\nexec sleep 600\n");
    let done = bounded(
        env.zot_at(&zot, ["ext", "install", &repo])
            .env("GIT_HTTP_LOW_SPEED_TIME", "2"),
        &[],
    );
    done.failure(1).stderr_has(&format!(
        "the fetch helper {} stopped answering for 2 s while fetching {repo}; it was stopped",
        helper.display()
    ));
    assert!(env.installed_names().is_empty());
}

#[test]
fn the_helper_is_not_a_command_of_its_own() {
    let helper = env!("CARGO_BIN_EXE_zot-ext-git");
    for (args, stdin) in [
        (&[][..], ""),
        (
            &["fetch"][..],
            r#"{"url":{"url":"x","display":"x","local":true,"subdir":null},"git_ref":null}"#,
        ),
        (
            &["serve", "/tmp"][..],
            r#"{"url":{"url":"x","display":"x","local":true,"subdir":null},"git_ref":null}"#,
        ),
    ] {
        let mut child = Command::new(helper)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::io::Write::write_all(&mut child.stdin.take().unwrap(), stdin.as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("it is not a command of its own"),
            "{stderr}"
        );
    }
}

/// The pids of the processes whose parent is `pid`.
#[cfg(target_os = "linux")]
fn children(pid: u32) -> Vec<u32> {
    let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|t| fs::read_to_string(t.path().join("children")).ok())
        .flat_map(|c| {
            c.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Whether `pid` is gone or a zombie.
#[cfg(target_os = "linux")]
fn ended(pid: u32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z')),
        Err(_) => true,
    }
}

#[test]
#[cfg(target_os = "linux")]
fn killing_zot_mid_fetch_kills_its_helper_which_never_saw_the_password_on_its_command_line() {
    use std::os::unix::process::ExitStatusExt as _;
    let env = Env::new();
    // Never accepts, so never answers (the kernel completes the connection): the fetch
    // waits for the server until zot is killed.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let url = format!("http://someone:hunter2@127.0.0.1:{port}/x.git");
    let mut zot = env.zot(["ext", "install", &url]).spawn_silent();
    let deadline = Instant::now() + Duration::from_secs(30);
    // Between its fork and its exec, the child's command line is still zot's: wait for the
    // helper's own.
    let (helper, cmdline) = loop {
        let started = children(zot.id()).into_iter().find_map(|pid| {
            let cmdline = fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            cmdline.contains("zot-ext-git").then_some((pid, cmdline))
        });
        if let Some(found) = started {
            break found;
        }
        assert!(Instant::now() < deadline, "no helper started");
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(cmdline.contains("zot-ext-git fetch "), "{cmdline}");
    assert!(
        !cmdline.contains("hunter2") && !cmdline.contains("127.0.0.1"),
        "{cmdline}"
    );

    zot.kill().unwrap();
    assert_eq!(zot.wait().unwrap().signal(), Some(9));
    while !ended(helper) {
        assert!(
            Instant::now() < deadline,
            "the helper {helper} outlived zot"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The helper is found through links to `zot`: beside the file they lead to, also through
/// the `zot-ext` alias linked to a link (macOS names the link zot was started by).
#[test]
fn a_link_to_zot_finds_the_helper_beside_the_binary() {
    let env = Env::new();
    let repo = repository(&env);
    let bin = env.work.join("links");
    let alias = env.work.join("alias");
    fs::create_dir_all(&bin).unwrap();
    fs::create_dir_all(&alias).unwrap();
    let link = bin.join("zot");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_zot"), &link).unwrap();
    env.zot_at(&link, ["ext", "install", &repo]).ok();
    assert_eq!(env.installed_names(), ["x"]);
    let zot_ext = alias.join("zot-ext");
    std::os::unix::fs::symlink(&link, &zot_ext).unwrap();
    env.zot_at(&zot_ext, ["install", "--force", &repo]).ok();
    assert_eq!(env.installed_names(), ["x"]);
}
