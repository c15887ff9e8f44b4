//! Running one step: through the seal's stages ([`super::sealing`]), stdin from /dev/null,
//! in a process group of its own that Ctrl-C, SIGTERM or SIGHUP end with zot
//! (`host::interrupt`) and that dies with zot (`die_with_parent`), within a time limit. Its output goes to the log file, the last line to a
//! live progress line on a terminal, the last lines into the error when it fails; the
//! options' [`Watcher`] is told when it starts and ends. Once the
//! group is killed, the output is read for a short grace at most: a process that left the
//! group (a daemon) may hold the pipe open for ever.

use std::collections::VecDeque;
use std::fs::{self, File};
use std::io::{self, BufRead, BufReader, Write};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, anyhow, bail};

use super::options::{Options, Watcher};
use super::sealing::{self, Seal};
use super::step::Step;
use crate::host::{Group, die_with_parent, interrupt};
use crate::output::{Output, printable};

/// Lines of output kept for the error.
const LAST_LINES: usize = 5;

/// How often the progress line is redrawn.
const TICK: Duration = Duration::from_millis(200);

/// How long the output is still read once the step's group was killed.
const PIPE_GRACE: Duration = Duration::from_secs(2);

/// Runs the steps of one extension, all into one log file.
pub(super) struct Runner<'a> {
    log: Arc<Mutex<File>>,
    log_path: PathBuf,
    name: String,
    timeout: Duration,
    watcher: Option<Arc<dyn Watcher>>,
    /// The platform built for (`publish --platform`), if not the running one's default.
    target: Option<String>,
    out: &'a Output,
}

/// What the reader thread saw.
#[derive(Default)]
struct Seen {
    last: VecDeque<String>,
    /// Set when zot stopped waiting for the output: the thread writes no more to the log.
    abandoned: bool,
}

/// The thread reading the step's output; `done` disconnects when it ends.
struct Reader {
    thread: std::thread::JoinHandle<()>,
    done: mpsc::Receiver<()>,
}

impl<'a> Runner<'a> {
    /// Creates `log` afresh (the last run's is replaced).
    pub(super) fn start(
        log: &Path,
        name: &str,
        options: &Options,
        out: &'a Output,
    ) -> Result<Runner<'a>> {
        if let Some(dir) = log.parent() {
            fs::create_dir_all(dir)
                .with_context(|| format!("cannot create the log folder {}", dir.display()))?;
        }
        let _ = fs::remove_file(log); // never written through a link left there
        let file = File::options()
            .write(true)
            .create_new(true)
            .open(log)
            .with_context(|| format!("cannot create the log file {}", log.display()))?;
        Ok(Runner {
            log: Arc::new(Mutex::new(file)),
            log_path: log.to_path_buf(),
            name: name.to_string(),
            timeout: options.timeout,
            watcher: options.watcher.clone(),
            target: options.target.as_ref().map(ToString::to_string),
            out,
        })
    }

    /// Runs `step` for `tree`; an error names the step, how it ended, its last lines and
    /// the log.
    pub(super) fn run(
        &mut self,
        tree: &Path,
        scratch: &Path,
        workspace: Option<&Path>,
        step: &Step,
        seal: Seal,
        offline: bool,
    ) -> Result<()> {
        let shown = step.shown();
        let (target, comment) = match &self.target {
            Some(target) => (format!(" for {target}"), format!(" # for {target}")),
            None => (String::new(), String::new()),
        };
        self.out.note(&format!(
            "{}: running `{shown}`{target} in the staged copy",
            self.name
        ));
        self.write_log(&format!("$ {shown}{comment}\n"));
        let mut command = sealing::command(tree, scratch, workspace, step, seal, offline)?;
        let (reader, writer) = io::pipe()?;
        command
            .stdout(writer.try_clone()?)
            .stderr(writer)
            .stdin(Stdio::null());
        die_with_parent(&mut command);
        let mut child = command
            .process_group(0)
            .spawn()
            .map_err(|e| anyhow!("cannot run `{shown}`: {e}"))?;
        drop(command); // our copies of the pipe's writing end
        let group = Group::of(&child);
        interrupt::register(group.id());
        // Ended by Ctrl-C (or SIGTERM, SIGHUP): one line, once everything is cleaned up.
        let erase = if self.out.draws_progress() {
            "\r\x1b[2K"
        } else {
            ""
        };
        let said = format!(
            "{erase}{}: preparing was interrupted; nothing was changed\n",
            self.name
        );
        let _interrupted = interrupt::on_signal(move || {
            let _ = io::stderr().write_all(said.as_bytes());
        });
        if let Some(watcher) = &self.watcher {
            watcher.started(&self.name, &short(&shown));
        }
        let seen = Arc::new(Mutex::new(Seen::default()));
        let reader = self.read_output(reader, Arc::clone(&seen));
        let exit = self.wait(group, &shown, &seen);
        group.kill_tree();
        interrupt::unregister(group.id());
        let _ = child.wait();
        self.finish_reading(reader, &seen);
        self.out.progress_done();
        if let Some(watcher) = &self.watcher {
            watcher.ended(&self.name);
        }
        let last = std::mem::take(&mut seen.lock().unwrap_or_else(PoisonError::into_inner).last);
        let ended = match exit {
            Some(exit) if exit.success() => return Ok(()),
            Some(exit) => exit.to_string(),
            None => format!(
                "was ended after the {} s time limit (--prepare-timeout)",
                self.timeout.as_secs()
            ),
        };
        self.write_log(&format!("# {ended}\n"));
        let tail: Vec<String> = last.iter().map(|l| printable(l)).collect();
        let setup = format!("{}: ", crate::seal::SUPERVISOR);
        if exit
            == Some(crate::host::Exit::Code(i32::from(
                crate::seal::SETUP_FAILED,
            )))
            && let Some(reason) = tail.last().and_then(|l| l.strip_prefix(&setup))
        {
            bail!(
                "preparing {} failed: the seal `{shown}` runs in could not be set up: {reason}; nothing was changed",
                self.name
            );
        }
        let hint = if offline {
            " (with --offline, what is not in the local cache cannot be had: run without --offline)"
        } else {
            ""
        };
        let ended = if exit.is_some() {
            format!("ended with {ended}")
        } else {
            ended
        };
        let last = self.last_lines(&last);
        bail!(
            "preparing {} failed: `{shown}` {ended}{hint}{last}; the whole output is in {}; nothing was changed",
            self.name,
            self.log_path.display()
        )
    }

    /// The step's last lines of output: on a terminal's stderr as an indented block before
    /// the error (which stays one line), said in the error itself when notes are not shown
    /// (`--quiet`, `--json`).
    fn last_lines(&self, last: &VecDeque<String>) -> String {
        let lines: Vec<String> = last
            .iter()
            .map(|line| printable(&line.replace('\t', "    ")))
            .collect();
        if lines.is_empty() {
            return "; it printed nothing".into();
        }
        if self.out.quiet || self.out.json {
            return format!("; last output: {}", lines.join(" | "));
        }
        self.out
            .note(&format!("{}: the step's last lines:", self.name));
        for line in &lines {
            self.out.note(&format!("    | {line}"));
        }
        String::new()
    }

    /// Copies the output into the log line by line, keeping the last lines.
    fn read_output(&self, reader: io::PipeReader, seen: Arc<Mutex<Seen>>) -> Reader {
        let log = Arc::clone(&self.log);
        let (done_sender, done) = mpsc::channel();
        let thread = std::thread::spawn(move || {
            let _done = done_sender; // dropped, so disconnected, when this thread ends
            let mut reader = BufReader::new(reader);
            let mut line = Vec::new();
            while reader.read_until(b'\n', &mut line).is_ok_and(|n| n > 0) {
                let mut seen = seen.lock().unwrap_or_else(PoisonError::into_inner);
                if seen.abandoned {
                    return;
                }
                let _ = log
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .write_all(&line);
                let text = String::from_utf8_lossy(&line).trim_end().to_string();
                line.clear();
                if text.trim().is_empty() {
                    continue;
                }
                if seen.last.len() == LAST_LINES {
                    seen.last.pop_front();
                }
                seen.last.push_back(text);
            }
        });
        Reader { thread, done }
    }

    /// Waits for the reader to reach the end of the output, at most [`PIPE_GRACE`] after
    /// the group was killed; a process outside the group still holding the pipe is left to
    /// it (the thread ends when that process does), and the log says so.
    fn finish_reading(&self, reader: Reader, seen: &Mutex<Seen>) {
        match reader.done.recv_timeout(PIPE_GRACE) {
            Err(RecvTimeoutError::Timeout) => {
                seen.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .abandoned = true;
                self.write_log(&format!(
                    "# the output was still held open {} s after the step's process group was ended (by a process that left the group, such as a daemon it started); stopped reading it\n",
                    PIPE_GRACE.as_secs()
                ));
            }
            _ => {
                let _ = reader.thread.join();
            }
        }
    }

    /// Waits for the step's leader to exit, redrawing the progress line; `None` when the
    /// time limit passed first.
    fn wait(&self, group: Group, shown: &str, seen: &Mutex<Seen>) -> Option<crate::host::Exit> {
        let deadline = Instant::now() + self.timeout;
        loop {
            let next = (Instant::now() + TICK).min(deadline);
            if let Some(exit) = group.wait_exit(next) {
                return Some(exit);
            }
            if Instant::now() >= deadline {
                return None;
            }
            let seen = seen.lock().unwrap_or_else(PoisonError::into_inner);
            let last = seen.last.back().map_or("", String::as_str);
            // The short form of the step: its output is what changes.
            self.out.progress(&format!(
                "{}: {}: {}",
                self.name,
                short(shown),
                printable(last)
            ));
        }
    }

    pub(super) fn write_log(&self, text: &str) {
        let _ = self
            .log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .write_all(text.as_bytes());
    }
}

/// The tool and what it is asked to do, from the command line `shown`: the words up to the
/// first one that is not an option (`go build`, `npm ci`, `python3 -m venv`).
fn short(shown: &str) -> String {
    let mut words = shown.split(' ');
    let mut kept: Vec<&str> = words.next().into_iter().collect();
    for word in words {
        kept.push(word);
        if !word.starts_with('-') {
            break;
        }
    }
    kept.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_is_shown_short_by_its_tool_and_verb() {
        assert_eq!(short("go build -trimpath -o ./hello ."), "go build");
        assert_eq!(short("npm ci --ignore-scripts --omit=dev"), "npm ci");
        assert_eq!(short("python3 -m venv .venv"), "python3 -m venv");
        assert_eq!(short("uv"), "uv");
    }
}
