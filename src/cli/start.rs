//! The process's start and end, without the set-up Rust's runtime makes before `main`.
//! That set-up finds the main thread's stack by reading `/proc/self/maps` (glibc's
//! `pthread_getattr_np`, which parses every line with `sscanf`: 11% of the instructions of
//! `zot ext logs -n 100`) to install a handler that names a stack overflow, and names the
//! main thread. The `zot` binary is `#![no_main]` and calls [`run`] from its C `main`, which
//! keeps what matters of that set-up: `SIGPIPE` ignored (a closed pipe is an error to
//! handle, not a signal that kills), standard descriptors that were closed opened on
//! `/dev/null` (so that no file zot opens becomes its stdout), a panic ending the process
//! with status 101, and stdout flushed at the end. A stack overflow still ends the process,
//! by `SIGSEGV` instead of an abort with a message. `zot --version` and `logs -n 100`: 40
//! and 100 µs less a run.

use std::io::Write as _;

/// Runs `main` as the process's body and returns its exit status for C's `main`.
pub fn run(main: fn() -> u8) -> i32 {
    ignore_sigpipe();
    open_closed_standard_descriptors();
    // A panic ends zot as it ends under Rust's runtime: the hook's message, then status
    // 101. Left to unwind into C's `main` (which cannot unwind), it would abort instead.
    let code = std::panic::catch_unwind(main).unwrap_or(101);
    // Rust's runtime flushes stdout at exit; a `print!` without a newline is still there.
    let _ = std::io::stdout().flush();
    i32::from(code)
}

fn ignore_sigpipe() {
    // SAFETY: sets a signal's disposition to SIG_IGN, before any other thread exists.
    // Children get it back at its default: std's spawn resets SIGPIPE in the child.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
}

/// Opens `/dev/null` on each of the descriptors 0, 1 and 2 that is closed, as Rust's
/// runtime does: `open` takes the lowest free descriptor.
fn open_closed_standard_descriptors() {
    use rustix::event::{PollFd, PollFlags, poll};
    use std::os::fd::BorrowedFd;
    // SAFETY: 0, 1 and 2 are only polled; a closed one says POLLNVAL.
    let fds = [0, 1, 2].map(|fd| unsafe { BorrowedFd::borrow_raw(fd) });
    let mut polled = fds.each_ref().map(|fd| PollFd::new(fd, PollFlags::empty()));
    if poll(&mut polled, Some(&rustix::event::Timespec::default())).is_err() {
        return;
    }
    for fd in &polled {
        if fd.revents().contains(PollFlags::NVAL) {
            let opened = rustix::fs::open(
                "/dev/null",
                rustix::fs::OFlags::RDWR,
                rustix::fs::Mode::empty(),
            );
            // Kept open for the life of the process, as the descriptor it stands in for.
            if let Ok(null) = opened {
                std::mem::forget(null);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_ends_the_process_with_status_101_as_under_rusts_runtime() {
        assert_eq!(run(|| panic!("a deliberate panic")), 101);
        assert_eq!(run(|| 2), 2);
    }
}
