//! The extension's process group: signals to every process in it, and the leader's exit
//! status read without reaping it, so its group id cannot be reused before the final kill;
//! on Linux a wait for that exit blocks on a pidfd instead of polling. [`Group::kill_tree`]
//! is the one cleanup every way of ending an extension comes to (a stop, a drop, a signal to
//! zot): the group killed, then the processes of its tree that left the group.

use std::fmt;
use std::process::Child;
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, WaitId, WaitIdOptions};

use super::orphans::{self, Leftover, Proc};

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

/// How often the leader's exit is checked where it cannot be waited for.
const POLL: Duration = Duration::from_millis(10);

/// The process group led by an extension started with `process_group(0)`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Group {
    leader: Pid,
}

impl Group {
    pub(crate) fn of(child: &Child) -> Group {
        Group {
            leader: Pid::from_child(child),
        }
    }

    /// The group whose id (its leader's pid) is `id`, if that can be one.
    pub(super) fn with_id(id: i32) -> Option<Group> {
        let leader = Pid::from_raw(id).filter(|_| id > 0)?;
        Some(Group { leader })
    }

    /// The leader's pid, which is also the group id.
    pub(crate) fn id(self) -> i32 {
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

    /// Waits until the leader ends or `deadline` passes; the process stays unreaped.
    pub(crate) fn wait_exit(self, deadline: Instant) -> Option<Exit> {
        loop {
            if let Some(exit) = self.exited() {
                return Some(exit);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            self.sleep_until_exit(left);
        }
    }

    /// Blocks until the leader ends (its pidfd turns readable) or `most` passes.
    #[cfg(target_os = "linux")]
    fn sleep_until_exit(self, most: Duration) {
        use rustix::event::{PollFd, PollFlags, Timespec, poll};
        use rustix::process::{PidfdFlags, pidfd_open};
        // The leader is unreaped, so its pid cannot name another process yet.
        let Ok(pidfd) = pidfd_open(self.leader, PidfdFlags::empty()) else {
            return std::thread::sleep(most.min(POLL));
        };
        let timeout = Timespec::try_from(most).unwrap_or(Timespec {
            tv_sec: 1,
            tv_nsec: 0,
        });
        let _ = poll(&mut [PollFd::new(&pidfd, PollFlags::IN)], Some(&timeout));
    }

    /// Sleeps a short step (no pidfd outside Linux).
    #[cfg(not(target_os = "linux"))]
    fn sleep_until_exit(self, most: Duration) {
        std::thread::sleep(most.min(POLL));
    }

    /// Sends SIGTERM to every process in the group.
    pub(super) fn terminate(self) {
        self.signal(Signal::TERM);
    }

    /// Sends SIGKILL to every process in the group.
    pub(crate) fn kill(self) {
        self.signal(Signal::KILL);
    }

    /// Kills every process in the group, then ends the processes of `tree` (the leader's
    /// descendants, taken while they were still linked to it) that left the group; returns
    /// those.
    pub(super) fn kill_with(self, tree: &[Proc]) -> Vec<Leftover> {
        self.kill();
        orphans::end_escaped(tree, self.id())
    }

    /// [`Group::kill_with`] the leader's descendants as they are now.
    pub(crate) fn kill_tree(self) -> Vec<Leftover> {
        let tree = orphans::descendants(self.id());
        self.kill_with(&tree)
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

    fn wait_exit(group: Group) -> Option<Exit> {
        group.wait_exit(Instant::now() + Duration::from_secs(5))
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

    #[test]
    fn waiting_for_a_running_leader_ends_at_the_deadline() {
        let mut child = Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap();
        let group = Group::of(&child);
        let began = Instant::now();
        assert_eq!(group.wait_exit(began + Duration::from_millis(50)), None);
        assert!(began.elapsed() >= Duration::from_millis(50));
        group.kill();
        assert_eq!(wait_exit(group), Some(Exit::Signal(9)));
        child.wait().unwrap();
    }
}
