//! `zot`'s side: start `zot-ext-git` beside the running binary for one request, draw its
//! progress ([`super::progress`]), and turn its answer back into a checkout, a probe or the error it met;
//! a helper whose transfer is too slow, or that stops answering, is killed
//! ([`super::watch`]).

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read as _};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::Instant;

use anyhow::{Context as _, Result, anyhow, bail};

use super::progress::ProgressLine;
use super::watch::Watch;
use super::wire::HELPER;
use super::wire::{
    FETCH, HEAD, MAX_LINE, Message, OCI_PROBE, OciRequest, PROBE, PULL, PUSH, Request,
};
use crate::error::usage;
use crate::host::die_with_parent;
use crate::output::redact::redact;
use crate::output::{Output, printable};
use crate::source::controls;
use crate::source::git::url::GitUrl;
use crate::source::git::{Checkout, Head, Probe};
use crate::source::oci::pack::Packed;
use crate::source::oci::reference::OciRef;
use crate::source::oci::{ForPlatform, Pulled, Pushed};

/// Clones `url` at `git_ref` (the default branch when `None`) into `tree`, with `git_dir`
/// as the scratch object store, limited to the folder `only` of the repository when given:
/// `source::git::fetch`, run by the helper. Its progress is drawn on a terminal's stderr as
/// `out` allows ([`ProgressLine`]) and erased when it ends.
pub(crate) fn fetch(
    url: &GitUrl,
    git_ref: Option<&str>,
    git_dir: &Path,
    tree: &Path,
    only: Option<&Path>,
    out: &Output,
) -> Result<Checkout> {
    let mut args = vec![OsStr::new(FETCH), git_dir.as_os_str(), tree.as_os_str()];
    args.extend(only.map(Path::as_os_str));
    let mut line = ProgressLine::new(out);
    let mut helper = Helper::start_git(&args, url, git_ref)?;
    loop {
        let message = helper.next(&mut |now| line.tick(now))?;
        match message {
            Message::Step(step) => line.step(step, Instant::now()),
            Message::Fetched {
                commit,
                ref_kind,
                branch,
            } => {
                line.finish();
                helper.finish()?;
                return Ok(Checkout {
                    commit,
                    ref_kind,
                    branch,
                });
            }
            other => return Err(helper.unexpected(&other)),
        }
    }
}

/// What `git_ref` (the default branch when `None`) points at on the remote, found without
/// fetching: `source::git::probe`, run by the helper in the empty folder `scratch`.
pub(crate) fn probe(url: &GitUrl, git_ref: Option<&str>, scratch: &Path) -> Result<Probe> {
    let mut helper = Helper::start_git(&[OsStr::new(PROBE), scratch.as_os_str()], url, git_ref)?;
    match helper.next(&mut |_| {})? {
        Message::Probed(probe) => {
            helper.finish()?;
            Ok(probe)
        }
        other => Err(helper.unexpected(&other)),
    }
}

/// Pulls the extension `reference` names into `tree` (the compressed layer kept in `keep`,
/// a new file, when given): `source::oci::pull`, run by the helper; what it fetched.
pub(crate) fn pull(
    reference: &OciRef,
    tree: &Path,
    keep: Option<&Path>,
    out: &Output,
) -> Result<Pulled> {
    let mut args = vec![OsStr::new(PULL), tree.as_os_str()];
    args.extend(keep.map(Path::as_os_str));
    let mut line = ProgressLine::new(out);
    let mut helper = Helper::start_oci(&args, &OciRequest::of(reference))?;
    let answer = helper.next(&mut |now| line.tick(now));
    line.finish();
    helper.pulled(answer?)
}

/// The digest of the manifest `reference` names now, asked by the helper.
pub(crate) fn probe_oci(reference: &OciRef) -> Result<String> {
    let mut helper = Helper::start_oci(&[OsStr::new(OCI_PROBE)], &OciRequest::of(reference))?;
    let answer = helper.next(&mut |_| {})?;
    Ok(helper.pulled(answer)?.digest)
}

/// Pushes `packed` (with the prepared extension for each of `platforms`, under an index)
/// to the tag `reference` names, by the helper.
pub(crate) fn push(
    reference: &OciRef,
    packed: &Packed,
    platforms: Vec<ForPlatform>,
) -> Result<Pushed> {
    let request = OciRequest {
        packed: Some(packed.clone()),
        platforms,
        ..OciRequest::of(reference)
    };
    let mut helper = Helper::start_oci(&[OsStr::new(PUSH)], &request)?;
    match helper.next(&mut |_| {})? {
        Message::Pushed(pushed) => {
            helper.finish()?;
            Ok(pushed)
        }
        other => Err(helper.unexpected(&other)),
    }
}

/// The `HEAD` commit of the working copy `folder` is in, asked of the helper (libgit2 is
/// linked there only); `None` outside one.
pub(crate) fn head(folder: &Path) -> Result<Option<Head>> {
    let args = [OsStr::new(HEAD), folder.as_os_str()];
    let mut helper = Helper::start(
        &args,
        &serde_json::json!({}),
        printable(&folder.display().to_string()),
    )?;
    match helper.next(&mut |_| {})? {
        Message::Head(head) => {
            helper.finish()?;
            Ok(head)
        }
        other => Err(helper.unexpected(&other)),
    }
}

/// A running helper. Dropped before it finished (the caller gave up), it is killed.
struct Helper {
    path: PathBuf,
    child: Child,
    /// What the reader thread read from the helper's stdout.
    lines: Receiver<FromHelper>,
    /// The URL being fetched (the helper says when a submodule's is), redacted, for the
    /// low-speed error.
    shown_url: String,
    watch: Watch,
}

/// What the reader thread passes on: a line, or the end of the helper's stdout.
enum FromHelper {
    Line(Vec<u8>),
    /// The helper's stdout ended (or failed) before a whole line; `Some` for a line too long.
    End(Option<u64>),
}

impl Helper {
    fn start_git(args: &[&OsStr], url: &GitUrl, git_ref: Option<&str>) -> Result<Helper> {
        controls::check(&url.url).map_err(|why| anyhow!(why))?;
        let request = Request {
            url: url.clone(),
            git_ref: git_ref.map(str::to_string),
        };
        Helper::start(args, &request, printable(&url.display))
    }

    fn start_oci(args: &[&OsStr], request: &OciRequest) -> Result<Helper> {
        request.reference.check().map_err(|why| anyhow!(why))?;
        let shown = printable(&request.reference.to_string());
        Helper::start(args, request, shown)
    }

    /// A pull or OCI probe's answer.
    fn pulled(&mut self, answer: Message) -> Result<Pulled> {
        match answer {
            Message::Pulled(pulled) => {
                self.finish()?;
                Ok(*pulled)
            }
            other => Err(self.unexpected(&other)),
        }
    }

    fn start(
        args: &[&OsStr],
        request: &impl serde::Serialize,
        shown_url: String,
    ) -> Result<Helper> {
        let path = helper_path()?;
        let mut command = Command::new(&path);
        command
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        // Killed with zot: it must not go on writing into a staging folder that the next
        // command clears.
        die_with_parent(&mut command);
        let mut child = command.spawn().map_err(|e| {
            anyhow!(
                "cannot run the fetch helper {}: {e}; it is installed beside zot (`cargo install` installs both), so reinstall zot-ext",
                printable(&path.display().to_string())
            )
        })?;
        let stdin = child.stdin.take().expect("stdin is piped");
        let out = BufReader::new(child.stdout.take().expect("stdout is piped"));
        // Written whole before anything is read: a request is far smaller than a pipe's
        // buffer. A helper that died at once is reported by what it left on its stdout.
        let _ = serde_json::to_writer(stdin, request);
        let (tx, lines) = mpsc::channel();
        // Not joined: it ends when the helper's stdout does (the helper is killed on drop).
        std::thread::spawn(move || read_lines(out, &tx));
        Ok(Helper {
            path,
            child,
            lines,
            shown_url,
            watch: Watch::new(),
        })
    }

    fn shown(&self) -> String {
        printable(&self.path.display().to_string())
    }

    /// The next message of the helper, heartbeats taken in by the watchdog; `tick` is called
    /// with the time as each message comes. An error it reports is returned as the error; a helper too
    /// slow or silent is killed.
    fn next(&mut self, tick: &mut dyn FnMut(Instant)) -> Result<Message> {
        loop {
            let line = match self.lines.recv_timeout(self.watch.silence_allowed()) {
                Ok(FromHelper::Line(line)) => line,
                Ok(FromHelper::End(Some(_))) => {
                    // Not waited for: it may be blocked writing the rest. Dropped, it is killed.
                    bail!(
                        "the fetch helper {} said something zot does not understand (a line over {MAX_LINE} bytes); is it from another version of zot-ext?",
                        self.shown()
                    );
                }
                Ok(FromHelper::End(None)) | Err(RecvTimeoutError::Disconnected) => {
                    return Err(self.stopped());
                }
                Err(RecvTimeoutError::Timeout) => {
                    let silent = self.watch.silence_allowed().as_secs();
                    return Err(self.stop(&format!(
                        "the fetch helper {} stopped answering for {silent} s while fetching {}; it was stopped",
                        self.shown(),
                        self.shown_url
                    )));
                }
            };
            tick(Instant::now());
            let message: Message = match serde_json::from_slice(&line) {
                Ok(message) => message,
                Err(e) => {
                    return Err(anyhow!(e).context(format!(
                        "the fetch helper {} said something zot does not understand; is it from another version of zot-ext?",
                        self.shown()
                    )));
                }
            };
            match message {
                Message::Heartbeat {
                    received,
                    metered,
                    low_speed,
                    fetching,
                } => {
                    if let Some(fetching) = fetching {
                        self.shown_url = printable(&redact(&fetching));
                    }
                    if let Some(slow) = self.watch.beat(received, metered, low_speed) {
                        let why = slow.describe(&self.shown_url);
                        return Err(self.stop(&why));
                    }
                }
                Message::Failed { message, usage: u } => {
                    let _ = self.finish();
                    return Err(if u { usage(message) } else { anyhow!(message) });
                }
                message => return Ok(message),
            }
        }
    }

    /// Waits for the helper, which has answered, to exit.
    fn finish(&mut self) -> Result<()> {
        let status = self.child.wait()?;
        if !status.success() {
            bail!(
                "the fetch helper {} answered, then exited with {status}",
                self.shown()
            );
        }
        Ok(())
    }

    /// Kills the helper and returns `why` as the error.
    fn stop(&mut self, why: &str) -> anyhow::Error {
        let _ = self.child.kill();
        let _ = self.child.wait();
        anyhow!("{why}")
    }

    /// The error for a helper that stopped before it answered.
    fn stopped(&mut self) -> anyhow::Error {
        match self.child.wait() {
            Ok(status) => anyhow!(
                "the fetch helper {} stopped before it answered ({status})",
                self.shown()
            ),
            Err(e) => anyhow!("cannot wait for the fetch helper {}: {e}", self.shown()),
        }
    }

    fn unexpected(&self, message: &Message) -> anyhow::Error {
        anyhow!(
            "the fetch helper {} answered {message:?}, which zot did not ask for; is it from another version of zot-ext?",
            self.shown()
        )
    }
}

/// The reader thread: passes each line of the helper's stdout on.
fn read_lines(mut out: BufReader<ChildStdout>, tx: &Sender<FromHelper>) {
    loop {
        let mut line = Vec::new();
        let read = (&mut out).take(MAX_LINE).read_until(b'\n', &mut line);
        if read.is_err() || line.last() != Some(&b'\n') {
            let too_long = (line.len() as u64 == MAX_LINE).then_some(MAX_LINE);
            let _ = tx.send(FromHelper::End(too_long));
            return;
        }
        if tx.send(FromHelper::Line(line)).is_err() {
            return;
        }
    }
}

impl Drop for Helper {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// `zot-ext-git` beside the running binary (links to it resolved, so a `zot` on `PATH`
/// that links to an install finds that install's helper).
fn helper_path() -> Result<PathBuf> {
    let me = std::env::current_exe().context("cannot find where zot is installed")?;
    // Linux names the file itself; macOS names the path zot was started by, which may be a
    // link (`~/.local/bin/zot-ext`). A binary replaced while it runs cannot be resolved.
    let me = std::fs::canonicalize(&me).unwrap_or(me);
    Ok(me.with_file_name(HELPER))
}
