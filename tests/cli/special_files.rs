//! Special and huge files where zot reads: a named pipe, a socket, a link to /dev/zero or a
//! 2 MiB file as an extension's manifest (installed, in a source, in a folder given by path)
//! or as a log. Every command answers at once with one line naming the problem, and leaves
//! the store as it was. Each run has a deadline, so a regression fails instead of hanging.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::thread;
use std::time::{Duration, Instant};

use crate::support::{Done, Env, Run, command_line, manifest};

/// The longest any command here may take; each answers in milliseconds when it works.
const LIMIT: Duration = Duration::from_secs(10);

/// Runs to completion within [`LIMIT`], or kills the command and fails the test.
fn within_limit(run: Run) -> Done {
    let mut cmd = run.cmd;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn zot");
    let drain = |mut pipe: Box<dyn Read + Send>| {
        thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            String::from_utf8_lossy(&bytes).into_owned()
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            let args: Vec<_> = cmd.get_args().collect();
            panic!("zot {args:?} was still running after {LIMIT:?}; killed it");
        }
        thread::sleep(Duration::from_millis(10));
    };
    Done {
        command: command_line(&cmd),
        code: status.code().unwrap_or(-1),
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}

fn zot(env: &Env, args: &[&str]) -> Done {
    within_limit(env.zot(args))
}

/// Asserts exit 1 and one line of error that contains every piece of `says`.
fn fails_saying(done: &Done, says: &[&str]) {
    done.failure(1).stderr_one_line();
    assert!(done.stderr.starts_with("error: "), "{done:?}");
    for piece in says {
        done.stderr_has(piece);
    }
}

fn mkfifo(path: &Path) {
    let mode = rustix::fs::Mode::from_raw_mode(0o644);
    rustix::fs::mkfifoat(rustix::fs::CWD, path, mode).expect("mkfifo");
}

/// The special things an extension's manifest can be, each with what the error calls it.
#[derive(Clone, Copy, Debug)]
enum Special {
    Fifo,
    Zero,
    Huge,
    Socket,
}

impl Special {
    const ALL: [Special; 4] = [Special::Fifo, Special::Zero, Special::Huge, Special::Socket];

    /// Puts one at `path`; a socket's listener must live as long as the test.
    fn make(self, path: &Path) -> Option<std::os::unix::net::UnixListener> {
        match self {
            Special::Fifo => mkfifo(path),
            Special::Zero => std::os::unix::fs::symlink("/dev/zero", path).unwrap(),
            Special::Huge => {
                let mut text = manifest("huge");
                text.push_str(&" ".repeat(2 << 20));
                fs::write(path, text).unwrap();
            }
            Special::Socket => return Some(std::os::unix::net::UnixListener::bind(path).unwrap()),
        }
        None
    }

    /// What the error says about the manifest, right after its path and ": ".
    fn called(self) -> String {
        match self {
            Special::Fifo => format!("is a named pipe, not a file; {REGULAR}"),
            Special::Zero => format!("is a character device, not a file; {REGULAR}"),
            Special::Huge => format!(
                "is 2 MiB ({} bytes); a manifest may be at most 1 MiB",
                manifest("huge").len() + (2 << 20)
            ),
            Special::Socket => format!("is a socket, not a file; {REGULAR}"),
        }
    }
}

/// What every refusal of a special manifest adds.
const REGULAR: &str = "the manifest must be a regular file (or a link to one)";

/// A world with a good global extension and `bad`, whose manifest is `special`.
fn store_with(special: Special) -> (Env, Option<std::os::unix::net::UnixListener>) {
    let env = Env::new();
    env.installed("good", false);
    let bad = env.global_root().join("bad");
    fs::create_dir_all(&bad).unwrap();
    let listener = special.make(&bad.join("extension.json"));
    (env, listener)
}

#[test]
fn list_shows_a_special_manifest_as_broken_and_lists_the_rest() {
    for special in Special::ALL {
        let (env, _listener) = store_with(special);
        let before = env.snapshot();
        let done = zot(&env, &["ext", "list", "--json"]);
        done.success();
        let list = done.extensions();
        assert_eq!(list[0]["name"], "bad", "{special:?}");
        let error = list[0]["error"].as_str().unwrap();
        let problem = format!("bad/extension.json: {}", special.called());
        assert!(error.ends_with(&problem), "{special:?}: {error}");
        assert_eq!(list[1]["name"], "good");
        assert_eq!(list[1]["error"], serde_json::Value::Null);
        zot(&env, &["ext", "list"]).success().stdout_has("broken");
        assert_eq!(env.snapshot(), before, "{special:?}");
    }
}

#[test]
fn commands_on_an_extension_with_a_special_manifest_fail_at_once() {
    for special in Special::ALL {
        let (env, _listener) = store_with(special);
        let before = env.snapshot();
        let problem = format!("bad/extension.json: {}", special.called());
        for args in [
            &["ext", "disable", "bad"][..],
            &["ext", "enable", "bad"],
            &["ext", "call", "bad", "/x"],
        ] {
            let done = zot(&env, args);
            fails_saying(&done, &[&problem]);
            assert_eq!(env.snapshot(), before, "{special:?} {args:?}");
        }
        zot(&env, &["ext", "info", "bad"])
            .success()
            .stdout_has(&problem);
        let doctor = zot(&env, &["ext", "doctor", "bad"]);
        fails_saying(&doctor, &["failed the checks"]);
        doctor.stdout_has(&problem);
        assert_eq!(env.snapshot(), before, "{special:?}");
    }
}

#[test]
fn remove_answers_at_once_for_a_special_manifest() {
    for special in Special::ALL {
        let (env, _listener) = store_with(special);
        zot(&env, &["ext", "remove", "-y", "bad"]).success();
        assert_eq!(env.installed_names(), ["good"], "{special:?}");
    }
}

#[test]
fn completion_skips_a_special_manifest_at_once() {
    for special in Special::ALL {
        let (env, _listener) = store_with(special);
        let before = env.snapshot();
        let done = within_limit(
            env.zot(["--", "zot", "ext", "disable", ""])
                .env("COMPLETE", "fish"),
        );
        done.success().stderr_is("");
        let offered: Vec<&str> = done.stdout.lines().collect();
        assert_eq!(offered, ["good\ttest extension good"], "{special:?}");
        within_limit(
            env.zot(["--", "zot", "ext", "info", ""])
                .env("COMPLETE", "fish"),
        )
        .stdout_has("bad\tbroken: extension.json cannot be used");
        assert_eq!(env.snapshot(), before, "{special:?}");
    }
}

#[test]
fn a_folder_given_by_path_with_a_special_manifest_fails_at_once() {
    for special in Special::ALL {
        let env = Env::new();
        let dir = env.work.join("wip");
        fs::create_dir_all(&dir).unwrap();
        let _listener = special.make(&dir.join("extension.json"));
        let shown = dir.display().to_string();
        let problem = format!("wip/extension.json: {}", special.called());
        let call = zot(&env, &["ext", "call", &shown, "/x"]);
        fails_saying(&call, &[&problem]);
        let doctor = zot(&env, &["ext", "doctor", &shown]);
        fails_saying(&doctor, &["failed the checks"]);
        doctor.stdout_has(&problem);
    }
}

#[test]
fn installing_a_source_with_a_special_manifest_fails_at_once() {
    for special in Special::ALL {
        let env = Env::new();
        env.installed("good", false);
        env.installed("mine", true);
        let src = env.work.join("src");
        fs::create_dir_all(&src).unwrap();
        let _listener = special.make(&src.join("extension.json"));
        let before = env.snapshot();
        let shown = src.display().to_string();
        for args in [
            &["ext", "install", shown.as_str()][..],
            &["ext", "install", "--project", shown.as_str()],
            &["ext", "install", "--force", shown.as_str()],
        ] {
            let done = zot(&env, args);
            fails_saying(&done, &["extension.json"]);
            assert_eq!(env.snapshot(), before, "{special:?} {args:?}");
        }
        let staging = env.home.join(".ext-store/staging");
        let left = fs::read_dir(&staging).map_or(0, std::iter::Iterator::count);
        assert_eq!(left, 0, "{special:?}: staging not emptied");
    }
}

#[test]
fn a_huge_manifest_in_a_source_says_its_size() {
    let env = Env::new();
    let src = env.work.join("src");
    fs::create_dir_all(&src).unwrap();
    Special::Huge.make(&src.join("extension.json"));
    fs::write(src.join("run.sh"), "#!/bin/sh\n").unwrap();
    let done = zot(&env, &["ext", "install", &src.display().to_string()]);
    fails_saying(&done, &["src/extension.json", &Special::Huge.called()]);
    assert_eq!(env.installed_names(), Vec::<String>::new());
}

/// A global extension `x` and the path of its log, which is `special` if given.
fn log_world(special: Option<Special>) -> (Env, PathBuf) {
    let env = Env::new();
    env.installed("x", false);
    let logs = env.home.join("logs");
    fs::create_dir_all(&logs).unwrap();
    let log = logs.join("ext-x.log");
    if let Some(special) = special {
        special.make(&log);
    }
    (env, log)
}

#[test]
fn logs_of_a_named_pipe_or_device_fail_at_once_in_every_form() {
    for (special, called) in [
        (Special::Fifo, "is a named pipe, not a file"),
        (Special::Zero, "is a character device, not a file"),
    ] {
        let (env, log) = log_world(Some(special));
        for args in [
            &["ext", "logs", "x"][..],
            &["ext", "logs", "-n", "5", "x"],
            &["ext", "logs", "-f", "x"],
        ] {
            let done = zot(&env, args);
            fails_saying(&done, &[&log.display().to_string(), called]);
            done.stdout_is("");
        }
    }
}

#[test]
fn logs_refuse_a_named_pipe_that_replaces_the_log_while_following() {
    let (env, log) = log_world(None);
    fs::write(&log, "first\n").unwrap();
    let mut child = env
        .zot(["ext", "logs", "-f", "x"])
        .cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 6];
    child
        .stdout
        .as_mut()
        .unwrap()
        .read_exact(&mut first)
        .unwrap();
    assert_eq!(&first, b"first\n");
    fs::remove_file(&log).unwrap();
    mkfifo(&log);
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > LIMIT {
            let _ = child.kill();
            panic!("logs -f kept running on a named pipe");
        }
        thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("is a named pipe, not a file"), "{stderr}");
    assert!(
        stderr.lines().last().unwrap().starts_with("error: "),
        "{stderr}"
    );
}

#[test]
fn logs_still_tail_a_large_log_quickly() {
    use std::io::{Seek, SeekFrom, Write};
    let (env, log) = log_world(None);
    let line = "x".repeat(99) + "\n";
    let mut file = fs::File::create(&log).unwrap();
    // A sparse 4 GiB file: tail must seek to its end, not read it.
    file.set_len(4 << 30).unwrap();
    file.seek(SeekFrom::End(0)).unwrap();
    file.write_all(line.repeat(3).as_bytes()).unwrap();
    let done = zot(&env, &["ext", "logs", "-n", "2", "x"]);
    done.success();
    assert_eq!(done.stdout, line.repeat(2));
}

#[test]
fn a_manifest_that_is_a_link_to_a_regular_file_is_still_read() {
    let env = Env::new();
    let real = env.work.join("real.json");
    fs::write(&real, manifest("linked")).unwrap();
    let dir = env.global_root().join("linked");
    fs::create_dir_all(&dir).unwrap();
    std::os::unix::fs::symlink(&real, dir.join("extension.json")).unwrap();
    let list = zot(&env, &["ext", "list", "--json"]).extensions();
    assert_eq!(list[0]["name"], "linked");
    assert_eq!(list[0]["error"], serde_json::Value::Null);
}
