//! `zot ext logs`: whole logs, the last lines, errors, following through appends,
//! truncation, rotation and late creation, and closed pipes. Every wait is bounded.

use std::fmt::Write as _;
use std::fs::{self, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::thread;
use std::time::{Duration, Instant};

use crate::support::Env;
use crate::support::extensions::{good_script, sh_extension};
#[cfg(target_os = "linux")]
use crate::support::opens::Opens;

/// The longest any single wait lasts.
const WAIT: Duration = Duration::from_secs(5);

fn log_path(env: &Env, name: &str) -> PathBuf {
    env.home.join("logs").join(format!("ext-{name}.log"))
}

/// Writes `name`'s log (creating the logs folder) and returns its path.
fn write_log(env: &Env, name: &str, content: &str) -> PathBuf {
    let path = log_path(env, name);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(&path, content).unwrap();
    path
}

fn append(path: &Path, text: &str) {
    let mut file = OpenOptions::new().append(true).open(path).unwrap();
    file.write_all(text.as_bytes()).unwrap();
}

fn numbered(from: u32, to: u32) -> String {
    let mut text = String::new();
    for i in from..=to {
        let _ = writeln!(text, "line {i}");
    }
    text
}

/// Sends everything read from `source` over a channel, chunk by chunk, until it ends.
fn pump(mut source: impl Read + Send + 'static) -> Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let mut buf = [0u8; 8192];
        while let Ok(n) = source.read(&mut buf) {
            if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    rx
}

/// Reads from `rx` into `seen` until `done(seen)` holds or `WAIT` passes.
fn collect_until(rx: &Receiver<Vec<u8>>, seen: &mut String, done: impl Fn(&str) -> bool) {
    let deadline = Instant::now() + WAIT;
    while !done(seen) {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(chunk) => seen.push_str(&String::from_utf8_lossy(&chunk)),
            Err(_) => break,
        }
    }
}

/// Polls `child` until it exits or `WAIT` passes.
fn wait_exit(child: &mut Child) -> Option<ExitStatus> {
    let deadline = Instant::now() + WAIT;
    while Instant::now() < deadline {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        thread::sleep(Duration::from_millis(20));
    }
    None
}

/// A running `zot` whose output is read as it comes; killed when dropped.
struct Running {
    child: Child,
    stdout: Receiver<Vec<u8>>,
    stderr: Receiver<Vec<u8>>,
    out: String,
    err: String,
}

impl Running {
    fn spawn(env: &Env, args: &[&str]) -> Running {
        let mut cmd = env.zot(args).cmd;
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn zot");
        let stdout = pump(child.stdout.take().unwrap());
        let stderr = pump(child.stderr.take().unwrap());
        Running {
            child,
            stdout,
            stderr,
            out: String::new(),
            err: String::new(),
        }
    }

    /// Waits until everything printed on stdout so far is `expected`.
    fn expect_stdout(&mut self, expected: &str) {
        collect_until(&self.stdout, &mut self.out, |seen| {
            seen.len() >= expected.len()
        });
        assert_eq!(self.out, expected, "stderr so far: {}", self.err);
    }

    /// Waits until stderr contains `needle`.
    fn expect_stderr(&mut self, needle: &str) {
        collect_until(&self.stderr, &mut self.err, |seen| seen.contains(needle));
        assert!(
            self.err.contains(needle),
            "no {needle:?} in stderr: {}",
            self.err
        );
    }

    /// Kills the process and returns all it printed on stderr.
    fn stop(mut self) -> String {
        self.kill();
        while let Ok(chunk) = self.stderr.recv_timeout(WAIT) {
            self.err.push_str(&String::from_utf8_lossy(&chunk));
        }
        std::mem::take(&mut self.err)
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.kill();
    }
}

#[test]
fn prints_the_whole_log() {
    let env = Env::new();
    env.installed("x", false);
    let content = "first\r\nsecond\n\nlast without newline";
    write_log(&env, "x", content);
    env.zot(["ext", "logs", "x"]).ok().stdout_is(content);
    // With --json, one document per line (a `\r` before the newline is the line's own).
    env.zot(["--json", "ext", "logs", "x"]).ok().stdout_is(
        "{\"schema_version\":1,\"line\":\"first\\r\"}\n\
         {\"schema_version\":1,\"line\":\"second\"}\n\
         {\"schema_version\":1,\"line\":\"\"}\n\
         {\"schema_version\":1,\"line\":\"last without newline\"}\n",
    );
    env.zot(["ext", "logs", "x", "--json", "-n", "1"])
        .ok()
        .stdout_is("{\"schema_version\":1,\"line\":\"last without newline\"}\n");
}

#[test]
fn follow_with_json_prints_a_document_per_complete_line() {
    let env = Env::new();
    env.installed("x", false);
    let path = write_log(&env, "x", &numbered(1, 30));
    let mut run = Running::spawn(&env, &["ext", "logs", "x", "-f", "-n", "1", "--json"]);
    let mut expected = "{\"schema_version\":1,\"line\":\"line 30\"}\n".to_string();
    run.expect_stdout(&expected);
    append(&path, "partial");
    append(&path, " end\n");
    expected.push_str("{\"schema_version\":1,\"line\":\"partial end\"}\n");
    run.expect_stdout(&expected);
    assert_eq!(run.stop(), "");
}

#[test]
fn project_extensions_log_under_zot_home_too() {
    let env = Env::new();
    env.installed("p", true);
    write_log(&env, "p", "from the project copy\n");
    env.zot(["ext", "logs", "p"])
        .ok()
        .stdout_is("from the project copy\n");
}

#[test]
fn prints_the_last_lines() {
    let env = Env::new();
    env.installed("x", false);
    write_log(&env, "x", &numbered(1, 100));
    env.zot(["ext", "logs", "x", "-n", "3"])
        .ok()
        .stdout_is(&numbered(98, 100));
    env.zot(["ext", "logs", "x", "--lines", "1"])
        .ok()
        .stdout_is("line 100\n");
    env.zot(["ext", "logs", "x", "-n", "0"]).ok().stdout_is("");
    env.zot(["ext", "logs", "x", "-n", "500"])
        .ok()
        .stdout_is(&numbered(1, 100));
    write_log(&env, "x", "a\nb\nno newline");
    env.zot(["ext", "logs", "x", "-n", "2"])
        .ok()
        .stdout_is("b\nno newline");
}

#[test]
fn unknown_extension_fails() {
    let env = Env::new();
    env.zot(["ext", "logs", "nope"])
        .fails(1)
        .stdout_is("")
        .stderr_is(&format!(
            "error: no extension named \"nope\" is installed and it has no log: \
             {} does not exist; `zot ext list` shows what is installed\n",
            log_path(&env, "nope").display()
        ));
}

#[test]
fn a_log_without_an_installed_extension_is_printed() {
    // An extension loaded with `zot --ext ./dir` is not installed, but zot writes its log.
    let env = Env::new();
    let path = write_log(&env, "loose one", &numbered(1, 30));
    env.zot(["ext", "logs", "loose one"])
        .ok()
        .stdout_is(&numbered(1, 30));
    env.zot(["ext", "logs", "loose one", "-n", "2"])
        .ok()
        .stdout_is(&numbered(29, 30));
    let mut run = Running::spawn(&env, &["ext", "logs", "loose one", "-f", "-n", "1"]);
    run.expect_stdout("line 30\n");
    append(&path, "line 31\n");
    run.expect_stdout("line 30\nline 31\n");
    assert_eq!(run.stop(), "");
}

#[test]
fn an_unknown_name_without_a_log_fails_naming_the_path() {
    let env = Env::new();
    let path = log_path(&env, "nope");
    for args in [
        &["ext", "logs", "nope"][..],
        &["ext", "logs", "nope", "-n", "3"],
        &["ext", "logs", "nope", "-f"],
    ] {
        env.zot(args)
            .fails(1)
            .stdout_is("")
            .stderr_has(&path.display().to_string())
            .stderr_has("no extension named \"nope\" is installed");
    }
}

#[test]
fn a_name_that_is_not_one_file_name_is_refused() {
    let env = Env::new();
    // Files the hostile names would reach if they were joined into the path.
    let logs = env.home.join("logs");
    fs::create_dir_all(logs.join("ext-..")).unwrap();
    fs::write(logs.join("ext-../x.log"), "outside\n").unwrap();
    fs::create_dir_all(logs.join("ext-a")).unwrap();
    fs::write(logs.join("ext-a/b.log"), "outside\n").unwrap();
    fs::write(logs.join("ext-..log"), "dot\n").unwrap();
    for name in ["../x", "a/b", "a\\b", ".", "..", "a\nb", ""] {
        for follow in [false, true] {
            let mut args = vec!["ext", "logs", name];
            if follow {
                args.push("-f");
            }
            let done = env.zot(&args).fails(2);
            done.stdout_is("").stderr_lacks("outside");
            done.stderr_one_line();
        }
    }
}

#[test]
fn missing_log_fails_naming_the_path() {
    let env = Env::new();
    env.installed("x", false);
    let done = env.zot(["ext", "logs", "x"]).fails(1);
    let path = log_path(&env, "x");
    done.stderr_has(&path.display().to_string())
        .stderr_has("no log yet for \"x\"");
    env.zot(["ext", "logs", "x", "-n", "5"]).fails(1);
}

#[test]
fn follow_prints_the_last_ten_lines_then_appends() {
    let env = Env::new();
    env.installed("x", false);
    let path = write_log(&env, "x", &numbered(1, 30));
    let mut run = Running::spawn(&env, &["ext", "logs", "x", "-f"]);
    let mut expected = numbered(21, 30);
    run.expect_stdout(&expected);
    append(&path, "line 31\n");
    expected.push_str("line 31\n");
    run.expect_stdout(&expected);
    append(&path, "partial");
    expected.push_str("partial");
    run.expect_stdout(&expected);
    append(&path, " end\n");
    expected.push_str(" end\n");
    run.expect_stdout(&expected);
    assert_eq!(run.stop(), "");
}

#[test]
fn follow_with_a_line_count() {
    let env = Env::new();
    env.installed("x", false);
    let path = write_log(&env, "x", &numbered(1, 30));
    let mut run = Running::spawn(&env, &["ext", "logs", "x", "-f", "-n", "2"]);
    run.expect_stdout(&numbered(29, 30));
    append(&path, "line 31\n");
    run.expect_stdout(&numbered(29, 31));
}

#[test]
fn follow_survives_truncation() {
    let env = Env::new();
    env.installed("x", false);
    let path = write_log(&env, "x", "a fairly long first line\nand a second one\n");
    let mut run = Running::spawn(&env, &["ext", "logs", "x", "-f"]);
    run.expect_stdout("a fairly long first line\nand a second one\n");
    fs::write(&path, "new\n").unwrap();
    run.expect_stdout("a fairly long first line\nand a second one\nnew\n");
    run.expect_stderr(&format!("zot: {}: file truncated", path.display()));
    append(&path, "more\n");
    run.expect_stdout("a fairly long first line\nand a second one\nnew\nmore\n");
}

#[test]
fn follow_survives_rotation() {
    let env = Env::new();
    env.installed("x", false);
    let path = write_log(&env, "x", "old 1\n");
    let mut run = Running::spawn(&env, &["ext", "logs", "x", "-f"]);
    run.expect_stdout("old 1\n");
    let rotated = path.with_extension("log.1");
    fs::rename(&path, &rotated).unwrap();
    append(&rotated, "old 2\n");
    fs::write(&path, "new 1\n").unwrap();
    run.expect_stdout("old 1\nold 2\nnew 1\n");
    run.expect_stderr("replaced");
    append(&path, "new 2\n");
    run.expect_stdout("old 1\nold 2\nnew 1\nnew 2\n");
}

#[test]
fn follow_waits_for_a_log_that_does_not_exist_yet() {
    let env = Env::new();
    env.installed("x", false);
    let path = log_path(&env, "x");
    assert!(!path.parent().unwrap().exists());
    let mut run = Running::spawn(&env, &["ext", "logs", "x", "-f"]);
    run.expect_stderr("does not exist yet");
    assert!(
        !path.parent().unwrap().exists(),
        "the logs folder must not be created"
    );
    write_log(&env, "x", "hello\n");
    run.expect_stdout("hello\n");
    append(&path, "again\n");
    run.expect_stdout("hello\nagain\n");
    run.expect_stderr("has appeared");
}

#[test]
fn follow_quiet_prints_no_notes() {
    let env = Env::new();
    env.installed("x", false);
    let mut run = Running::spawn(&env, &["ext", "logs", "x", "-f", "--quiet"]);
    // Give it time to find the log missing, then create it.
    thread::sleep(Duration::from_millis(300));
    let path = write_log(&env, "x", "hello\n");
    run.expect_stdout("hello\n");
    fs::write(&path, "\n").unwrap();
    run.expect_stdout("hello\n\n");
    assert_eq!(run.stop(), "");
}

/// Starts `zot` with `args`, reads `take` bytes of its stdout, then closes the pipe;
/// returns the child and the bytes read.
fn read_then_close(env: &Env, args: &[&str], take: usize) -> (Child, Vec<u8>) {
    let mut cmd = env.zot(args).cmd;
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn zot");
    let mut stdout: ChildStdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let mut buf = vec![0u8; take];
        let read = stdout.read_exact(&mut buf).map(|()| buf);
        drop(stdout); // closes the pipe before the test goes on
        let _ = tx.send(read);
    });
    match rx.recv_timeout(WAIT) {
        Ok(Ok(bytes)) => (child, bytes),
        other => {
            let _ = child.kill();
            let _ = child.wait();
            panic!("could not read {take} bytes: {other:?}");
        }
    }
}

/// Waits for a quiet exit 0 after the pipe closed.
fn assert_quiet_success(mut child: Child) {
    let Some(status) = wait_exit(&mut child) else {
        let _ = child.kill();
        let _ = child.wait();
        panic!("zot did not exit after its stdout was closed");
    };
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert_eq!(status.code(), Some(0), "stderr: {stderr}");
    assert_eq!(stderr, "");
}

/// Started with stdout closed, zot writes to nothing rather than into the first file it
/// opens (which would take descriptor 1): the log, opened for reading, refused the write.
#[test]
fn a_closed_stdout_is_never_a_file_zot_opens() {
    use std::os::unix::process::CommandExt as _;
    let env = Env::new();
    env.installed("x", false);
    let path = write_log(&env, "x", &numbered(1, 10));
    let mut run = env.zot(["ext", "logs", "-n", "1", "x"]);
    // SAFETY: close is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        run.cmd.pre_exec(|| {
            libc::close(1);
            Ok(())
        });
    }
    let out = run.cmd.stderr(Stdio::piped()).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr: {stderr}");
    assert_eq!(stderr, "");
    assert_eq!(fs::read_to_string(path).unwrap(), numbered(1, 10));
}

#[test]
fn closed_pipe_ends_printing_quietly() {
    let env = Env::new();
    env.installed("x", false);
    write_log(&env, "x", &numbered(1, 200_000));
    let (child, bytes) = read_then_close(&env, &["ext", "logs", "x"], 100);
    assert!(bytes.starts_with(b"line 1\nline 2\n"));
    assert_quiet_success(child);
}

#[test]
fn closed_pipe_ends_following_quietly() {
    let env = Env::new();
    env.installed("x", false);
    write_log(&env, "x", &numbered(1, 200_000));
    let args = ["ext", "logs", "x", "-f", "-n", "200000"];
    let (child, _) = read_then_close(&env, &args, 100);
    assert_quiet_success(child);
}

#[test]
fn closed_pipe_ends_following_at_the_next_append() {
    let env = Env::new();
    env.installed("x", false);
    let path = write_log(&env, "x", "only line\n");
    let (child, bytes) = read_then_close(&env, &["ext", "logs", "x", "-f"], 10);
    assert_eq!(bytes, b"only line\n");
    // Whether the idle check or this write notices first, it ends quietly.
    append(&path, "more\n");
    assert_quiet_success(child);
}

#[test]
fn closed_pipe_ends_an_idle_follow() {
    let env = Env::new();
    env.installed("x", false);
    write_log(&env, "x", "only line\n");
    let (child, bytes) = read_then_close(&env, &["ext", "logs", "x", "-f"], 10);
    assert_eq!(bytes, b"only line\n");
    // Nothing more is written: it must notice the closed pipe by itself.
    assert_quiet_success(child);
}

#[test]
#[cfg(target_os = "linux")]
fn reading_a_log_reads_no_other_extensions_manifest() {
    let env = Env::new();
    env.installed("x", false);
    let other = env.installed("other", false);
    let project = env.installed("mine", true);
    write_log(&env, "x", "hello\n");
    write_log(&env, "loaded-with-ext", "not installed\n");
    let watches = [Opens::watch(&other), Opens::watch(&project)];
    env.zot(["ext", "logs", "x"]).ok().stdout_is("hello\n");
    env.zot(["ext", "logs", "x", "-n", "1"])
        .ok()
        .stdout_is("hello\n");
    // A name that is not installed but has a log is found without the store either.
    env.zot(["ext", "logs", "loaded-with-ext"])
        .ok()
        .stdout_is("not installed\n");
    for watch in &watches {
        assert_eq!(watch.seen(), Vec::<String>::new());
    }
    // Another extension's manifest that would block a reader does not matter to it.
    fs::remove_file(other.join("extension.json")).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(other.join("extension.json"))
        .status()
        .unwrap();
    assert!(made.success());
    env.zot(["ext", "logs", "x"])
        .ok()
        .stdout_is("hello\n")
        .stderr_lacks("other");
}

#[test]
fn a_log_into_a_pipe_is_exactly_the_files_bytes() {
    let env = Env::new();
    env.installed("x", false);
    // Several MiB of lines of varied length, the last one without a newline.
    let mut content = String::new();
    let mut i: u64 = 0;
    while content.len() < 5 << 20 {
        let _ = writeln!(content, "{i} {}", "ab".repeat((i % 97) as usize));
        i += 1;
    }
    content.push_str("end without newline");
    write_log(&env, "x", &content);
    let done = env.zot(["ext", "logs", "x"]).ok();
    assert!(
        done.stdout == content,
        "{} bytes of {}",
        done.stdout.len(),
        content.len()
    );
    let last = content.rsplit('\n').nth(1).unwrap();
    env.zot(["ext", "logs", "x", "-n", "2"])
        .ok()
        .stdout_is(&format!("{last}\nend without newline"));
}

#[test]
fn a_folder_whose_manifest_says_another_name_shows_that_names_log() {
    let env = Env::new();
    let script = good_script("alpha", &[]);
    sh_extension(&env.project_root(), "same", "alpha", &script);
    let script = good_script("beta", &[]);
    sh_extension(&env.global_root(), "same", "beta", &script);
    write_log(&env, "alpha", "alpha's\n");
    write_log(&env, "beta", "beta's\n");
    write_log(&env, "same", "a log of its own\n");
    // By folder name: the manifest of the folder zot loads under it names the log.
    env.zot(["ext", "logs", "same"]).ok().stdout_is("alpha's\n");
    // The hidden global copy is still found by its manifest name.
    env.zot(["ext", "logs", "beta"]).ok().stdout_is("beta's\n");
}
