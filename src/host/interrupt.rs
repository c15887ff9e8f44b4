//! Interruption: extensions run in process groups of their own, so Ctrl-C at the terminal
//! does not reach them. While any is running, SIGINT, SIGTERM and SIGHUP kill every such
//! group, then end zot with the same signal as before.

use std::sync::Once;
use std::sync::atomic::{AtomicI32, Ordering};

/// Process groups of running extensions; 0 marks a free slot.
static GROUPS: [AtomicI32; 256] = [const { AtomicI32::new(0) }; 256];

static INSTALL: Once = Once::new();

/// Remembers a running extension's process group (installing the handler on first use).
pub fn register(pgid: i32) {
    INSTALL.call_once(install);
    for slot in &GROUPS {
        if slot
            .compare_exchange(0, pgid, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            return;
        }
    }
}

/// Forgets a process group that has been killed.
pub fn unregister(pgid: i32) {
    for slot in &GROUPS {
        let _ = slot.compare_exchange(pgid, 0, Ordering::SeqCst, Ordering::SeqCst);
    }
}

/// Only async-signal-safe calls: atomic loads, kill, signal and raise.
extern "C" fn on_signal(signal: libc::c_int) {
    for slot in &GROUPS {
        let pgid = slot.load(Ordering::SeqCst);
        if pgid > 0 {
            // SAFETY: kill(2) is async-signal-safe and takes plain integers.
            unsafe { libc::kill(-pgid, libc::SIGKILL) };
        }
    }
    // SAFETY: restoring the default action and re-raising are async-signal-safe.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
        libc::raise(signal);
    }
}

fn install() {
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: sigaction with zeroed (then filled) structs; a signal ignored by whoever
        // started zot (nohup) stays ignored.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(signal, std::ptr::null(), &mut old) != 0
                || old.sa_sigaction == libc::SIG_IGN
            {
                continue;
            }
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_reused() {
        register(-5);
        assert!(GROUPS.iter().any(|s| s.load(Ordering::SeqCst) == -5));
        unregister(-5);
        assert!(GROUPS.iter().all(|s| s.load(Ordering::SeqCst) != -5));
    }
}
