//! The extension's process group: signals to every process in it, and the leader's exit
//! status read without reaping it, so its group id cannot be reused before the final kill.

use std::fmt;
use std::process::Child;

use rustix::process::{Pid, Signal, WaitId, WaitIdOptions};

/// How a process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Exit {
    Code(i32),
    Signal(i32),
}

impl Exit {
    pub(crate) fn success(self) -> bool {
        self == Exit::Code(0)
    }
}

impl fmt::Display for Exit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Exit::Code(code) => write!(f, "exit status {code}"),
            Exit::Signal(n) => match signal_name(n) {
                Some(name) => write!(f, "killed by signal {n} ({name})"),
                None => write!(f, "killed by signal {n}"),
            },
        }
    }
}

fn signal_name(n: i32) -> Option<&'static str> {
    Some(match n {
        1 => "SIGHUP",
        2 => "SIGINT",
        6 => "SIGABRT",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        13 => "SIGPIPE",
        15 => "SIGTERM",
        _ => return None,
    })
}

/// The process group led by an extension started with `process_group(0)`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Group {
    leader: Pid,
}

impl Group {
    pub(super) fn of(child: &Child) -> Group {
        Group {
            leader: Pid::from_child(child),
        }
    }

    /// The leader's pid, which is also the group id.
    pub(super) fn id(self) -> i32 {
        self.leader.as_raw_nonzero().get()
    }

    /// The leader's exit status once it has ended; the process stays unreaped.
    pub(super) fn exited(self) -> Option<Exit> {
        let options = WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT;
        let status = rustix::process::waitid(WaitId::Pid(self.leader), options).ok()??;
        status
            .exit_status()
            .map(Exit::Code)
            .or_else(|| status.terminating_signal().map(Exit::Signal))
    }

    /// Sends SIGTERM to every process in the group.
    pub(super) fn terminate(self) {
        self.signal(Signal::TERM);
    }

    /// Sends SIGKILL to every process in the group.
    pub(super) fn kill(self) {
        self.signal(Signal::KILL);
    }

    fn signal(self, signal: Signal) {
        // ESRCH (nobody left) is the expected outcome once everything has exited.
        let _ = rustix::process::kill_process_group(self.leader, signal);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;
    use std::process::Command;
    use std::time::{Duration, Instant};

    fn wait_exit(group: Group) -> Option<Exit> {
        let until = Instant::now() + Duration::from_secs(5);
        while Instant::now() < until {
            if let Some(exit) = group.exited() {
                return Some(exit);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        None
    }

    #[test]
    fn exit_status_is_read_without_reaping() {
        let mut child = Command::new("sh")
            .args(["-c", "exit 3"])
            .process_group(0)
            .spawn()
            .unwrap();
        let group = Group::of(&child);
        assert_eq!(wait_exit(group), Some(Exit::Code(3)));
        // Still unreaped: asking again gives the same answer, and wait() still works.
        assert_eq!(group.exited(), Some(Exit::Code(3)));
        assert_eq!(child.wait().unwrap().code(), Some(3));
    }

    #[test]
    fn kill_reaches_the_whole_group() {
        let mut child = Command::new("sh")
            .args(["-c", "sleep 30 & sleep 30; wait"])
            .process_group(0)
            .spawn()
            .unwrap();
        let group = Group::of(&child);
        assert_eq!(group.exited(), None);
        group.kill();
        assert_eq!(wait_exit(group), Some(Exit::Signal(9)));
        assert_eq!(Exit::Signal(9).to_string(), "killed by signal 9 (SIGKILL)");
        child.wait().unwrap();
    }
}
