//! Signals to zot while an extension runs: SIGINT, SIGTERM and SIGHUP each end the
//! extension's whole process tree, a descendant that left its process group with `setsid`
//! included; and a killed zot (SIGKILL), which cannot clean up, does not leave the extension
//! running (Linux: it is started with a parent-death signal).

#![cfg(target_os = "linux")]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::support::Env;
use crate::support::extensions::{alive, sh_extension};

/// An extension that starts a child in a session of its own (its pid in `escaped`), writes
/// its own pid to `pid` and then waits without ever saying hello.
const FORKS_AND_WAITS: &str = "setsid sh -c 'echo $$ > escaped.new && mv escaped.new escaped; exec sleep 300' </dev/null >/dev/null 2>&1 &\n\
while [ ! -s escaped ]; do sleep 0.01; done\n\
echo $$ > pid.new && mv pid.new pid\n\
exec sleep 300\n";

/// The pid written to `dir/file`, waiting up to 10 s for it.
fn pid_in(dir: &Path, file: &str) -> i32 {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(dir.join(file)).unwrap_or_default();
        if let Ok(pid) = text.trim().parse::<i32>() {
            return pid;
        }
        assert!(
            Instant::now() < until,
            "no {file} written in {}",
            dir.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether `pid` ends within 10 s (a zombie counts as ended).
fn ends(pid: i32) -> bool {
    let until = Instant::now() + Duration::from_secs(10);
    while alive(pid) {
        if Instant::now() > until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

fn send(signal: &str, pid: u32) {
    let sent = Command::new("kill")
        .args([format!("-{signal}"), pid.to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
}

/// Kills `pid` if it still runs, so a failed test leaves nothing behind.
fn tidy(pid: i32) {
    let _ = Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status();
}

#[test]
fn every_signal_ends_the_extensions_whole_tree() {
    use std::os::unix::process::ExitStatusExt;
    for (signal, number) in [("TERM", 15), ("HUP", 1), ("INT", 2)] {
        let env = Env::new();
        let dir = sh_extension(&env.global_root(), "forker", "forker", FORKS_AND_WAITS);
        for command in [
            &["ext", "doctor", "--timeout", "60", "forker"][..],
            &["ext", "call", "--timeout", "60", "forker", "/go"],
        ] {
            let _ = std::fs::remove_file(dir.join("pid"));
            let _ = std::fs::remove_file(dir.join("escaped"));
            let mut zot = env.zot(command).spawn_silent();
            let escaped = pid_in(&dir, "escaped");
            let pid = pid_in(&dir, "pid");
            send(signal, zot.id());
            let status = zot.wait().unwrap();
            let (escaped_ended, ended) = (ends(escaped), ends(pid));
            tidy(escaped);
            tidy(pid);
            assert_eq!(status.signal(), Some(number), "{command:?}: {status:?}");
            assert!(
                ended,
                "SIG{signal} to {command:?} left the extension {pid} running"
            );
            assert!(
                escaped_ended,
                "SIG{signal} to {command:?} left the extension's setsid child {escaped} running"
            );
        }
    }
}

#[test]
fn a_killed_zot_does_not_leave_the_extension_running() {
    let env = Env::new();
    let dir = sh_extension(
        &env.global_root(),
        "waiter",
        "waiter",
        "echo $$ > pid.new && mv pid.new pid\nexec sleep 300\n",
    );
    let mut zot = env
        .zot(["ext", "doctor", "--timeout", "60", "waiter"])
        .spawn_silent();
    let pid = pid_in(&dir, "pid");
    zot.kill().unwrap();
    zot.wait().unwrap();
    let ended = ends(pid);
    tidy(pid);
    assert!(ended, "the extension {pid} outlived the SIGKILLed zot");
}
