//! The first stage, [`super::SUPERVISOR`]: it is not sealed itself, so the step cannot end
//! it. It dies with zot (SIGTERM from the kernel, caught through a pipe it polls beside the
//! confined stage's exit: it has one thread), becomes the subreaper of
//! whatever the step starts, makes a PID namespace (and a network namespace when the
//! network is cut) where the kernel allows one, starts the confined stage, and once that
//! ends, or a signal comes, ends every process left beneath it before it exits with the
//! step's status. In a PID namespace the kernel ends them all as the confined stage (its
//! first process) ends; the subreaper's sweep is what holds without one.

use std::io::PipeReader;
use std::process::{Child, Command, ExitStatus, Stdio};

use super::spec::{CONFINED, Spec, this_program};
use crate::host::{die_with_parent, orphans};

/// Runs the step; its exit status (a signal that ended it ends this stage too).
pub(super) fn run(spec: &Spec) -> Result<u8, String> {
    tie_to_zot(spec.parent)?;
    let signals = catch_signals().map_err(|e| format!("cannot catch signals: {e}"))?;
    let network_namespace = spec.namespaces && enter_namespaces(spec.network);
    let mut confined = Command::new(this_program().map_err(|e| e.to_string())?);
    std::os::unix::process::CommandExt::arg0(&mut confined, CONFINED);
    let inner = Spec {
        network_namespace,
        ..spec.clone()
    };
    confined
        .args(inner.to_args(std::process::id()))
        .stdin(Stdio::null());
    die_with_parent(&mut confined);
    let mut child = confined
        .spawn()
        .map_err(|e| format!("cannot start the confined stage: {e}"))?;
    let status = wait(&mut child, &signals);
    if status.is_none() {
        // The confined stage first, by its pid (unreaped, so still its own): in a PID
        // namespace the kernel then ends every process in it, whatever /proc shows here
        // (the confined stage mounted its own over the one this stage shares).
        let _ = child.kill();
    }
    orphans::end_all_descendants();
    let Some(status) = status else {
        // A signal: zot died (SIGTERM) or is being interrupted.
        let _ = signal_hook::low_level::emulate_default_handler(signal_hook::consts::SIGTERM);
        return Ok(128 + 15);
    };
    Ok(relay(status))
}

/// Waits for the confined stage to end; `None` when a signal came first. One thread: a
/// process that has made a PID namespace for its children cannot start threads.
fn wait(child: &mut Child, signals: &PipeReader) -> Option<ExitStatus> {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    #[cfg(target_os = "linux")]
    let pidfd = rustix::process::pidfd_open(
        rustix::process::Pid::from_child(child),
        rustix::process::PidfdFlags::empty(),
    )
    .ok();
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        let mut fds = vec![PollFd::new(signals, PollFlags::IN)];
        #[cfg(target_os = "linux")]
        if let Some(pidfd) = &pidfd {
            fds.push(PollFd::new(pidfd, PollFlags::IN));
        }
        // Without a pidfd the exit is noticed within the timeout.
        let timeout = Timespec {
            tv_sec: 0,
            tv_nsec: 50_000_000,
        };
        let limit = (fds.len() == 1).then_some(&timeout);
        let _ = poll(&mut fds, limit);
        if fds[0].revents().contains(PollFlags::IN) {
            return None;
        }
    }
}

/// SIGTERM (zot's death), SIGINT and SIGHUP written to a pipe this stage watches.
fn catch_signals() -> std::io::Result<PipeReader> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let (reader, writer) = std::io::pipe()?;
    for signal in [SIGTERM, SIGINT, SIGHUP] {
        signal_hook::low_level::pipe::register(signal, writer.try_clone()?)?;
    }
    Ok(reader)
}

/// SIGTERM when zot dies (caught by [`watch_signals`], which ends the step first); fails
/// when zot is already gone. A subreaper from then on. Linux only.
fn tie_to_zot(parent: u32) -> Result<(), String> {
    #[cfg(target_os = "linux")]
    {
        use rustix::process::{Pid, Signal, getppid, set_parent_process_death_signal};
        set_parent_process_death_signal(Some(Signal::TERM)).map_err(|e| e.to_string())?;
        let parent = Pid::from_raw(i32::try_from(parent).unwrap_or(0));
        if parent.is_none() || getppid() != parent {
            return Err("zot, which started this, is gone".into());
        }
        crate::host::become_subreaper();
    }
    #[cfg(not(target_os = "linux"))]
    let _ = parent;
    Ok(())
}

/// Makes a PID namespace and a mount namespace (whose mounts stay in it), and a network
/// namespace unless `network`, for the processes started from now on; in a user namespace
/// of its own when this process is not root.
/// Whether the network namespace was made (without one the confined stage cuts the network
/// with Landlock, and the subreaper stands for the PID namespace). Must run before any
/// thread is started: the kernel makes a user namespace only for a process with one.
fn enter_namespaces(network: bool) -> bool {
    #[cfg(target_os = "linux")]
    {
        use rustix::mount::{MountPropagationFlags, mount_change};
        use rustix::thread::UnshareFlags;
        let root = rustix::process::geteuid().is_root();
        let user = if root {
            UnshareFlags::empty()
        } else {
            UnshareFlags::NEWUSER
        };
        let net = if network {
            UnshareFlags::empty()
        } else {
            UnshareFlags::NEWNET
        };
        let (uid, gid) = (rustix::process::getuid(), rustix::process::getgid());
        // SAFETY: `unshare_unsafe` is unsafe only for CLONE_FILES (threads that share a
        // descriptor table); none of the flags here touches descriptors, and this process
        // has one thread.
        let all = user | net | UnshareFlags::NEWPID | UnshareFlags::NEWNS;
        let made = unsafe { rustix::thread::unshare_unsafe(all) };
        if made.is_err() {
            return false;
        }
        if !root && !map_ids(uid.as_raw(), gid.as_raw()) {
            return false;
        }
        // The confined stage mounts its own /proc: in this mount namespace only.
        let _ = mount_change(
            "/",
            MountPropagationFlags::PRIVATE | MountPropagationFlags::REC,
        );
        !network
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = network;
        false
    }
}

/// In a new user namespace: this user and group map to themselves, so files keep their
/// owners and nothing gains a right outside.
#[cfg(target_os = "linux")]
fn map_ids(uid: u32, gid: u32) -> bool {
    std::fs::write("/proc/self/uid_map", format!("{uid} {uid} 1\n")).is_ok()
        && std::fs::write("/proc/self/setgroups", "deny").is_ok()
        && std::fs::write("/proc/self/gid_map", format!("{gid} {gid} 1\n")).is_ok()
}

/// The confined stage's status as this stage's own: its exit code, or the signal that
/// ended it sent to this process.
fn relay(status: ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt as _;
    if let Some(code) = status.code() {
        return u8::try_from(code).unwrap_or(1);
    }
    let signal = status.signal().unwrap_or(9);
    // Ends this process as the signal ended the step (SIGKILL and SIGSTOP raised for real).
    let _ = signal_hook::low_level::emulate_default_handler(signal);
    u8::try_from(128 + signal).unwrap_or(1)
}
