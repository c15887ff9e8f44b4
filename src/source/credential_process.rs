//! Asking a credential helper (git's `git credential`, Docker's `docker-credential-*`): the
//! program started with the request on its stdin, in a process group of its own, its
//! answer read (bounded) and the group killed when it does not answer in time.

use std::io::{Read as _, Write as _};
use std::os::unix::process::CommandExt as _;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use anyhow::{Result, anyhow, bail};

/// The longest answer read from a helper.
const MAX_ANSWER: u64 = 64 << 10;

/// Runs `command` (a credential helper: git's, Docker's) with `input` on its stdin, in a
/// process group of its own that is killed if it has not answered within `timeout`: its
/// stdout, or `None` when the program is not there or fails (it has nothing).
pub(crate) fn ask(
    mut command: Command,
    input: &str,
    timeout: Duration,
    what: &str,
) -> Result<Option<String>> {
    let spawned = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .process_group(0)
        .spawn();
    let mut child = match spawned {
        Ok(child) => child,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(anyhow!("cannot run {what}: {e}")),
    };
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let mut stdout = child.stdout.take().expect("stdout is piped");
    let input = input.to_string();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        // git that does not read its stdin gets the request dropped.
        let _ = stdin.write_all(input.as_bytes());
        drop(stdin);
        let mut text = Vec::new();
        let read = (&mut stdout).take(MAX_ANSWER).read_to_end(&mut text);
        let _ = tx.send(read.map(|_| text));
    });
    let answer = rx.recv_timeout(timeout);
    if answer.is_err() {
        crate::host::Group::of(&child).kill();
    }
    let status = child.wait();
    match answer {
        Ok(Ok(text)) if status.is_ok_and(|s| s.success()) => {
            Ok(Some(String::from_utf8_lossy(&text).into_owned()))
        }
        Ok(_) => Ok(None),
        Err(_) => bail!(
            "{what} did not answer within {} s; it was stopped",
            timeout.as_secs()
        ),
    }
}
