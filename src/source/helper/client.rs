//! `zot`'s side: start `zot-ext-git` beside the running binary for one request, pass its
//! progress on, and turn its answer back into a checkout, a probe or the error it met.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};

use anyhow::{Context as _, Result, anyhow, bail};

use super::HELPER;
use super::wire::{FETCH, MAX_LINE, Message, PROBE, Request};
use crate::error::usage;
use crate::output::printable;
use crate::source::GitUrl;
use crate::source::git::{Checkout, Probe};
use crate::store::filelist::FileList;
use crate::store::state::MAX_FILE_LIST;

/// Clones `url` at `git_ref` (the default branch when `None`) into `tree`, with `git_dir`
/// as the scratch object store, limited to the folder `only` of the repository when given:
/// `source::git::fetch`, run by the helper. `progress` gets objects received, of total, and
/// bytes.
pub(crate) fn fetch(
    url: &GitUrl,
    git_ref: Option<&str>,
    git_dir: &Path,
    tree: &Path,
    only: Option<&Path>,
    progress: &mut dyn FnMut(usize, usize, usize),
) -> Result<Checkout> {
    let mut args = vec![OsStr::new(FETCH), git_dir.as_os_str(), tree.as_os_str()];
    args.extend(only.map(Path::as_os_str));
    let mut helper = Helper::start(&args, url, git_ref)?;
    loop {
        match helper.next()? {
            Message::Progress(received, total, bytes) => progress(received, total, bytes),
            Message::Fetched {
                commit,
                ref_kind,
                branch,
                file_list,
            } => {
                let written = file_list.map(|len| helper.file_list(len)).transpose()?;
                helper.finish()?;
                return Ok(Checkout {
                    commit,
                    ref_kind,
                    branch,
                    written,
                });
            }
            other => return Err(helper.unexpected(&other)),
        }
    }
}

/// What `git_ref` (the default branch when `None`) points at on the remote, found without
/// fetching: `source::git::probe`, run by the helper in the empty folder `scratch`.
pub(crate) fn probe(url: &GitUrl, git_ref: Option<&str>, scratch: &Path) -> Result<Probe> {
    let mut helper = Helper::start(&[OsStr::new(PROBE), scratch.as_os_str()], url, git_ref)?;
    match helper.next()? {
        Message::Probed(probe) => {
            helper.finish()?;
            Ok(probe)
        }
        other => Err(helper.unexpected(&other)),
    }
}

/// A running helper. Dropped before it finished (the caller gave up), it is killed.
struct Helper {
    path: PathBuf,
    child: Child,
    out: BufReader<ChildStdout>,
}

impl Helper {
    fn start(args: &[&OsStr], url: &GitUrl, git_ref: Option<&str>) -> Result<Helper> {
        let path = helper_path()?;
        let mut command = Command::new(&path);
        command
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        die_with_parent(&mut command);
        let mut child = command.spawn().map_err(|e| {
            anyhow!(
                "cannot run the git helper {}: {e}; it is installed beside zot (`cargo install` installs both), so reinstall zot-ext",
                printable(&path.display().to_string())
            )
        })?;
        let request = Request {
            url: url.clone(),
            git_ref: git_ref.map(str::to_string),
        };
        let stdin = child.stdin.take().expect("stdin is piped");
        let out = BufReader::new(child.stdout.take().expect("stdout is piped"));
        // Written whole before anything is read: a request is far smaller than a pipe's
        // buffer. A helper that died at once is reported by what it left on its stdout.
        let _ = serde_json::to_writer(stdin, &request);
        Ok(Helper { path, child, out })
    }

    fn shown(&self) -> String {
        printable(&self.path.display().to_string())
    }

    /// The next line of the helper's stdout. An error it reports is returned as the error.
    fn next(&mut self) -> Result<Message> {
        let mut line = Vec::new();
        (&mut self.out)
            .take(MAX_LINE)
            .read_until(b'\n', &mut line)
            .with_context(|| format!("cannot read from the git helper {}", self.shown()))?;
        if line.last() != Some(&b'\n') {
            if line.len() as u64 == MAX_LINE {
                // Not waited for: it may be blocked writing the rest. Dropped, it is killed.
                bail!(
                    "the git helper {} said something zot does not understand (a line over {MAX_LINE} bytes); is it from another version of zot-ext?",
                    self.shown()
                );
            }
            return Err(self.stopped());
        }
        let message: Message = serde_json::from_slice(&line).with_context(|| {
            format!(
                "the git helper {} said something zot does not understand; is it from another version of zot-ext?",
                self.shown()
            )
        })?;
        match message {
            Message::Failed { message, usage: u } => {
                let _ = self.finish();
                Err(if u { usage(message) } else { anyhow!(message) })
            }
            message => Ok(message),
        }
    }

    /// The `len` bytes of a file list that follow an answer.
    fn file_list(&mut self, len: usize) -> Result<FileList> {
        if len as u64 > MAX_FILE_LIST {
            bail!(
                "the git helper {} sent a file list of {len} bytes, over the {MAX_FILE_LIST}-byte limit",
                self.shown()
            );
        }
        let mut bytes = vec![0; len];
        if self.out.read_exact(&mut bytes).is_err() {
            return Err(self.stopped());
        }
        FileList::from_bytes(&bytes)
            .with_context(|| format!("the file list from the git helper {}", self.shown()))
    }

    /// Waits for the helper, which has answered, to exit.
    fn finish(&mut self) -> Result<()> {
        let status = self.child.wait()?;
        if !status.success() {
            bail!(
                "the git helper {} answered, then exited with {status}",
                self.shown()
            );
        }
        Ok(())
    }

    /// The error for a helper that stopped before it answered.
    fn stopped(&mut self) -> anyhow::Error {
        match self.child.wait() {
            Ok(status) => anyhow!(
                "the git helper {} stopped before it answered ({status})",
                self.shown()
            ),
            Err(e) => anyhow!("cannot wait for the git helper {}: {e}", self.shown()),
        }
    }

    fn unexpected(&self, message: &Message) -> anyhow::Error {
        anyhow!(
            "the git helper {} answered {message:?}, which zot did not ask for; is it from another version of zot-ext?",
            self.shown()
        )
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

/// The helper is killed when the thread that started it ends (zot killed mid-fetch): it
/// must not go on writing into a staging folder that the next command clears. Linux only;
/// elsewhere it finishes its fetch and exits on its own.
pub(crate) fn die_with_parent(command: &mut Command) {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::process::CommandExt as _;
        let parent = libc::pid_t::try_from(std::process::id()).unwrap_or(0);
        // SAFETY: prctl and getppid are async-signal-safe, and the closure allocates nothing.
        unsafe {
            command.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                // zot died before the signal was asked for.
                if libc::getppid() != parent {
                    return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
                }
                Ok(())
            });
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = command;
}
