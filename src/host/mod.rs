//! Running an extension the way zot does: started from its folder in its own process group,
//! stdin and stdout piped, stderr captured; lines read on a thread and taken with deadlines;
//! shutdown with the host's escalation (shutdown, 2 s, SIGTERM, 1 s, SIGKILL). Dropping a
//! [`Session`] kills whatever is left of the group and reaps the process; processes that
//! left the group are found and ended too (see [`orphans`]), and on Linux the extension gets
//! SIGKILL from the kernel if zot itself is killed (see [`lifetime`]).

pub(crate) mod exec;
mod group;
pub(crate) mod interrupt;
mod lifetime;
pub(crate) mod orphans;

use std::io::{self, BufRead, BufReader, PipeReader, Read as _, Write};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, ChildStderr, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

pub(crate) use exec::{ExecError, resolve};
pub(crate) use group::{Exit, Group};
pub(crate) use lifetime::die_with_parent;
pub(crate) use orphans::{Leftover, become_subreaper};

use crate::protocol::{self, DecodeError, Decoded, FromExt, FromHost, zot};

/// How long zot waits for `shutdown_ack` and the exit before SIGTERM.
pub(crate) const SHUTDOWN_GRACE: Duration = zot::TIMING.shutdown_grace;

/// How long zot waits for an extension's `command_response` to a slash command; `zot ext
/// call` waits as long by default. These limits are zot's, not ours.
pub(crate) const COMMAND_LIMIT: Duration = zot::TIMING.command_limit;

/// How long zot waits for an extension's `tool_result`; `zot ext call --tool` waits as long
/// by default.
pub(crate) const TOOL_LIMIT: Duration = zot::TIMING.tool_limit;

/// How long zot waits after SIGTERM before SIGKILL.
const TERM_GRACE: Duration = zot::TIMING.term_grace;

/// How much of stderr is kept (the end of it).
const STDERR_KEEP: usize = 64 * 1024;

/// Lines the reader may queue before it stops reading (and the extension blocks writing).
const QUEUE: usize = 256;

/// What to start: the resolved program, its arguments and the extension folder.
#[derive(Debug, Clone)]
pub(crate) struct Launch {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub dir: PathBuf,
}

impl Launch {
    /// The command as a user would type it in the extension folder.
    /// The command line as a user types it into sh: every word quoted where it needs to be.
    pub(crate) fn shell_line(&self) -> String {
        std::iter::once(self.program.display().to_string())
            .chain(self.args.iter().cloned())
            .map(|word| crate::output::sh_quote(&word))
            .collect::<Vec<_>>()
            .join(" ")
    }

    pub(crate) fn command_line(&self) -> String {
        std::iter::once(self.program.display().to_string())
            .chain(self.args.iter().cloned())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// One event from the extension's stdout.
#[derive(Debug)]
pub(crate) enum Incoming {
    /// A frame of a known type, with the JSON it came as.
    Frame { frame: FromExt, raw: Value },
    /// A JSON frame of a type this version does not know.
    Unknown { kind: String, raw: Value },
    /// A line that is not a usable frame.
    Malformed { line: String, error: DecodeError },
    /// A line longer than zot accepts; nothing after it is read.
    TooLong,
    /// stdout closed.
    Closed,
    /// The deadline passed.
    Timeout,
}

enum Read {
    Line(Vec<u8>, Instant),
    TooLong,
    /// stdout closed, seen at this moment.
    Eof(Instant),
}

/// The end of stderr, and whether it has closed.
#[derive(Default)]
struct Tail {
    bytes: Vec<u8>,
    closed: bool,
}

/// How a session ended after [`Session::stop`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Stopped {
    /// It had exited, or closed stdout, before `shutdown` was sent.
    pub gone_before: bool,
    /// `shutdown_ack` arrived within the grace period.
    pub acked: bool,
    /// How the process ended (None if even SIGKILL did not end it in time).
    pub exit: Option<Exit>,
    /// SIGTERM was needed.
    pub terminated: bool,
    /// SIGKILL was needed.
    pub killed: bool,
    /// From sending `shutdown` to the exit.
    pub took: Duration,
    /// Processes that had left its process group and were still running (now ended).
    pub leftovers: Vec<Leftover>,
}

/// A running extension.
pub(crate) struct Session {
    child: Child,
    group: Group,
    input: Option<Sender<String>>,
    lines: Receiver<Read>,
    stderr: Arc<Mutex<Tail>>,
    started: Instant,
    last_line: Instant,
    lines_read: usize,
    closed: bool,
    /// When the reader saw stdout close.
    eof_at: Option<Instant>,
    /// Set once [`Session::stop`] has dealt with escaped processes.
    stopped: bool,
    /// A copy of the read end of its stdin (see [`Session::start_watching_stdin`]).
    stdin_view: Option<PipeReader>,
    /// Set by the stdin writer once every queued frame is written and stdin is closing.
    stdin_written: Arc<AtomicBool>,
    pub launch: Launch,
}

impl Session {
    /// Starts `launch` as zot does: in its folder, in a new process group, stdio piped.
    pub(crate) fn start(launch: &Launch) -> io::Result<Session> {
        Session::spawn(launch, false)
    }

    /// Like [`Session::start`], also keeping a copy of the read end of its stdin, so that
    /// [`Session::stop`] can tell an extension that exited with `shutdown` still unread (it
    /// had gone on its own) from one that read it. Frames sent after it exits then wait in
    /// the pipe instead of failing.
    pub(crate) fn start_watching_stdin(launch: &Launch) -> io::Result<Session> {
        Session::spawn(launch, true)
    }

    fn spawn(launch: &Launch, watch_stdin: bool) -> io::Result<Session> {
        let (stdin_read, stdin_write) = io::pipe()?;
        let stdin_view = if watch_stdin {
            Some(stdin_read.try_clone()?)
        } else {
            None
        };
        let mut command = Command::new(&launch.program);
        command
            .args(&launch.args)
            .current_dir(&launch.dir)
            .stdin(Stdio::from(stdin_read))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        // A SIGKILLed zot cannot stop it; the kernel then does.
        lifetime::exec_dying_with_parent(&mut command, &launch.program, &launch.args)?;
        let mut child = command.spawn()?;
        let started = Instant::now();
        let group = Group::of(&child);
        interrupt::register(group.id());
        let stdin_written = Arc::new(AtomicBool::new(false));
        let (input, lines, stderr) =
            spawn_pipes(&mut child, stdin_write, Arc::clone(&stdin_written));
        Ok(Session {
            child,
            group,
            input: Some(input),
            lines,
            stderr,
            started,
            last_line: started,
            lines_read: 0,
            closed: false,
            eof_at: None,
            stopped: false,
            stdin_view,
            stdin_written,
            launch: launch.clone(),
        })
    }

    /// The process id, which is also its process group id.
    pub(crate) fn pid(&self) -> i32 {
        self.group.id()
    }

    /// When the process was started.
    pub(crate) fn started(&self) -> Instant {
        self.started
    }

    /// Time from the start to the last line read.
    pub(crate) fn last_line_after(&self) -> Duration {
        self.last_line.duration_since(self.started)
    }

    /// Lines read from stdout so far.
    pub(crate) fn lines_read(&self) -> usize {
        self.lines_read
    }

    /// Queues a frame for stdin; fails once stdin is closed. Never blocks.
    pub(crate) fn send(&self, frame: &FromHost) -> io::Result<()> {
        let closed =
            || io::Error::new(io::ErrorKind::BrokenPipe, "the extension's stdin is closed");
        let input = self.input.as_ref().ok_or_else(closed)?;
        input.send(protocol::encode(frame)).map_err(|_| closed())
    }

    /// Closes stdin once queued frames are written.
    pub(crate) fn close_stdin(&mut self) {
        self.input = None;
    }

    /// The next line from stdout, decoded, or `Timeout` at `deadline`.
    pub(crate) fn recv(&mut self, deadline: Instant) -> Incoming {
        if self.closed {
            return Incoming::Closed;
        }
        let wait = deadline.saturating_duration_since(Instant::now());
        match self.lines.recv_timeout(wait) {
            Ok(Read::Line(bytes, at)) => {
                self.last_line = at;
                self.lines_read += 1;
                decode_line(&bytes)
            }
            Ok(Read::TooLong) => {
                self.closed = true;
                Incoming::TooLong
            }
            Ok(Read::Eof(at)) => {
                self.closed = true;
                self.eof_at = Some(at);
                Incoming::Closed
            }
            Err(RecvTimeoutError::Disconnected) => {
                self.closed = true;
                Incoming::Closed
            }
            Err(RecvTimeoutError::Timeout) => Incoming::Timeout,
        }
    }

    /// The exit status once the process has ended (it stays unreaped until drop).
    pub(crate) fn exited(&self) -> Option<Exit> {
        self.group.exited()
    }

    /// Waits until the process ends or `deadline` passes.
    pub(crate) fn wait_exit(&self, deadline: Instant) -> Option<Exit> {
        self.group.wait_exit(deadline)
    }

    /// Sends `shutdown`, closes stdin and waits up to `grace` for `shutdown_ack` and the
    /// exit; then SIGTERM to the group, and SIGKILL a second later. Whatever is left of the
    /// group is killed, and processes of its tree that left the group are ended.
    pub(crate) fn stop(&mut self, grace: Duration) -> Stopped {
        let exited_before = self.exited().is_some();
        let tree = orphans::descendants(self.pid());
        let begun = Instant::now();
        let deadline = begun + grace;
        let _ = self.send(&FromHost::Shutdown);
        self.close_stdin();
        let acked = self.await_ack(deadline);
        let mut stopped = Stopped {
            acked,
            exit: self.wait_exit(deadline),
            ..Stopped::default()
        };
        if stopped.exit.is_none() {
            self.group.terminate();
            stopped.terminated = true;
            stopped.exit = self.wait_exit(Instant::now() + TERM_GRACE);
        }
        if stopped.exit.is_none() {
            self.group.kill();
            stopped.killed = true;
            stopped.exit = self.wait_exit(Instant::now() + TERM_GRACE);
        }
        stopped.took = begun.elapsed();
        stopped.gone_before = exited_before
            || self.eof_at.is_some_and(|at| at < begun)
            || (!acked && !stopped.terminated && self.left_stdin_unread());
        stopped.leftovers = self.end_group(&tree);
        stopped
    }

    /// Kills what is left of the group, then ends the processes of `tree` that escaped it.
    fn end_group(&mut self, tree: &[orphans::Proc]) -> Vec<Leftover> {
        self.stopped = true;
        self.group.kill_with(tree)
    }

    /// Whether it exited leaving bytes in its stdin (only known when watched): the frames
    /// queued before are written first (a writer still blocked means the pipe is full).
    fn left_stdin_unread(&self) -> bool {
        let Some(view) = &self.stdin_view else {
            return false;
        };
        let until = Instant::now() + Duration::from_millis(500);
        while !self.stdin_written.load(Ordering::Acquire) && Instant::now() < until {
            thread::sleep(Duration::from_millis(5));
        }
        rustix::io::ioctl_fionread(view).is_ok_and(|unread| unread > 0)
    }

    fn await_ack(&mut self, deadline: Instant) -> bool {
        loop {
            match self.recv(deadline) {
                Incoming::Frame {
                    frame: FromExt::ShutdownAck,
                    ..
                } => return true,
                Incoming::Closed | Incoming::TooLong | Incoming::Timeout => return false,
                _ => {}
            }
        }
    }

    /// The last `lines` lines of stderr (waiting briefly for it to close if the process ended).
    pub(crate) fn stderr_tail(&self, lines: usize) -> String {
        if self.exited().is_some() {
            let until = Instant::now() + Duration::from_millis(500);
            while !self.stderr.lock().map_or(true, |t| t.closed) && Instant::now() < until {
                thread::sleep(Duration::from_millis(10));
            }
        }
        let tail = self
            .stderr
            .lock()
            .map(|t| t.bytes.clone())
            .unwrap_or_default();
        let text = String::from_utf8_lossy(&tail);
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.input = None;
        // The leader is unreaped until here, so the group id still names this group.
        if !self.stopped {
            self.stopped = true;
            self.group.kill_tree();
        }
        self.group.kill();
        let _ = self.child.wait();
        interrupt::unregister(self.group.id());
    }
}

/// Ends every process zot adopted that is not a running extension's leader (call it once
/// the extensions are stopped); returns the ones that were still running.
pub(crate) fn end_adopted() -> Vec<Leftover> {
    orphans::end_adopted(&interrupt::registered())
}

fn decode_line(bytes: &[u8]) -> Incoming {
    let line = String::from_utf8_lossy(bytes);
    match protocol::decode::<FromExt>(&line) {
        Ok((raw, Decoded::Frame(frame))) => Incoming::Frame { frame, raw },
        Ok((raw, Decoded::Unknown(kind))) => Incoming::Unknown { kind, raw },
        Err(error) => Incoming::Malformed {
            line: line.into_owned(),
            error,
        },
    }
}

type Pipes = (Sender<String>, Receiver<Read>, Arc<Mutex<Tail>>);

/// Starts the stdin writer, stdout reader and stderr collector threads.
fn spawn_pipes(
    child: &mut Child,
    stdin: impl Write + Send + 'static,
    written: Arc<AtomicBool>,
) -> Pipes {
    let (input, to_write) = mpsc::channel::<String>();
    let (line_tx, lines) = mpsc::sync_channel(QUEUE);
    let stderr = Arc::new(Mutex::new(Tail::default()));
    let stdout = child.stdout.take().expect("stdout is piped");
    let err_pipe = child.stderr.take().expect("stderr is piped");
    thread::spawn(move || {
        write_lines(stdin, to_write);
        written.store(true, Ordering::Release);
    });
    thread::spawn(move || read_lines(stdout, &line_tx));
    let tail = Arc::clone(&stderr);
    thread::spawn(move || collect_stderr(err_pipe, &tail));
    (input, lines, stderr)
}

fn write_lines(mut stdin: impl Write, frames: Receiver<String>) {
    for frame in frames {
        if stdin
            .write_all(frame.as_bytes())
            .and_then(|()| stdin.flush())
            .is_err()
        {
            return;
        }
    }
}

/// Splits stdout into lines (dropping a trailing CR, as zot's reader does), stopping at a
/// line longer than [`protocol::MAX_LINE`].
fn read_lines(stdout: ChildStdout, out: &SyncSender<Read>) {
    let mut reader = BufReader::with_capacity(64 * 1024, stdout);
    let most = protocol::MAX_LINE as u64 + 1;
    loop {
        let mut line = Vec::new();
        if let Ok(0) | Err(_) = (&mut reader).take(most).read_until(b'\n', &mut line) {
            break;
        }
        let complete = line.pop_if(|b| *b == b'\n').is_some();
        if line.len() > protocol::MAX_LINE {
            let _ = out.send(Read::TooLong);
            return;
        }
        if complete && line.last() == Some(&b'\r') {
            line.pop();
        }
        if out.send(Read::Line(line, Instant::now())).is_err() {
            return;
        }
        if !complete {
            break;
        }
    }
    let _ = out.send(Read::Eof(Instant::now()));
}

fn collect_stderr(mut pipe: ChildStderr, tail: &Mutex<Tail>) {
    let mut buf = [0u8; 8192];
    loop {
        let n = match pipe.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let Ok(mut tail) = tail.lock() else { return };
        tail.bytes.extend_from_slice(&buf[..n]);
        let excess = tail.bytes.len().saturating_sub(STDERR_KEEP);
        tail.bytes.drain(..excess);
    }
    if let Ok(mut tail) = tail.lock() {
        tail.closed = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Session {
        Session::start(&Launch {
            program: PathBuf::from("/bin/sh"),
            args: vec!["-c".into(), script.into()],
            dir: std::env::temp_dir(),
        })
        .unwrap()
    }

    fn soon() -> Instant {
        Instant::now() + Duration::from_secs(5)
    }

    #[test]
    fn lines_are_decoded_and_eof_reported() {
        let mut s = sh(
            r#"echo '{"type":"ready"}'; printf 'oops\r\n'; echo '{"type":"x"}'; echo 'bad' >&2"#,
        );
        assert!(matches!(
            s.recv(soon()),
            Incoming::Frame {
                frame: FromExt::Ready,
                ..
            }
        ));
        assert!(matches!(s.recv(soon()), Incoming::Malformed { line, .. } if line == "oops"));
        assert!(matches!(s.recv(soon()), Incoming::Unknown { kind, .. } if kind == "x"));
        assert!(matches!(s.recv(soon()), Incoming::Closed));
        assert_eq!(s.wait_exit(soon()), Some(Exit::Code(0)));
        assert_eq!(s.stderr_tail(5), "bad");
        assert_eq!(s.lines_read(), 3);
    }

    #[test]
    fn timeout_then_stop_with_ack() {
        let mut s = sh(r#"read line; echo '{"type":"shutdown_ack"}'"#);
        let started = Instant::now();
        assert!(matches!(
            s.recv(Instant::now() + Duration::from_millis(100)),
            Incoming::Timeout
        ));
        assert!(started.elapsed() >= Duration::from_millis(100));
        let stopped = s.stop(SHUTDOWN_GRACE);
        assert!(stopped.acked && !stopped.terminated, "{stopped:?}");
        assert_eq!(stopped.exit, Some(Exit::Code(0)));
    }

    #[test]
    fn a_stubborn_process_is_terminated_then_killed() {
        let mut s = sh("trap '' TERM; while :; do sleep 1; done");
        let stopped = s.stop(Duration::from_millis(200));
        assert!(
            !stopped.acked && stopped.terminated && stopped.killed,
            "{stopped:?}"
        );
        assert_eq!(stopped.exit, Some(Exit::Signal(9)));
    }

    fn watched(script: &str) -> Session {
        Session::start_watching_stdin(&Launch {
            program: PathBuf::from("/bin/sh"),
            args: vec!["-c".into(), script.into()],
            dir: std::env::temp_dir(),
        })
        .unwrap()
    }

    #[test]
    fn exiting_with_shutdown_unread_was_going_on_its_own() {
        // It exits after a moment, without reading stdin; shutdown is sent at once.
        let mut s = watched(r#"echo '{"type":"ready"}'; sleep 0.3"#);
        assert!(matches!(s.recv(soon()), Incoming::Frame { .. }));
        let stopped = s.stop(SHUTDOWN_GRACE);
        assert!(stopped.gone_before && !stopped.terminated, "{stopped:?}");
    }

    #[test]
    fn exiting_after_reading_shutdown_is_not_going_on_its_own() {
        let mut s = watched(r#"echo '{"type":"ready"}'; read line; exit 3"#);
        assert!(matches!(s.recv(soon()), Incoming::Frame { .. }));
        let stopped = s.stop(SHUTDOWN_GRACE);
        assert!(!stopped.gone_before && !stopped.acked, "{stopped:?}");
        assert_eq!(stopped.exit, Some(Exit::Code(3)));
    }

    #[test]
    fn an_endless_line_is_cut_off() {
        let mut s = sh("head -c 5000000 /dev/zero | tr '\\0' x");
        assert!(matches!(s.recv(soon()), Incoming::TooLong));
        assert!(matches!(s.recv(soon()), Incoming::Closed));
    }
}
