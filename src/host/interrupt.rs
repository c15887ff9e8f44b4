//! Interruption: extensions run in process groups of their own, so Ctrl-C at the terminal
//! does not reach them. While any is running, SIGINT, SIGTERM and SIGHUP end every such
//! extension's whole tree as a stop does ([`Group::kill_tree`]: the group, then the
//! processes that left it with `setsid`), and the processes zot adopted as their subreaper,
//! then end zot with the same signal as before.
//!
//! The signals are caught with the `signal-hook` crate rather than a hand-written
//! `sigaction` handler: its handler only wakes a thread of ours, which does the work outside
//! signal context, so the groups (and cleanups, [`on_signal`]) are kept in a plain locked list (no lock-free table that a
//! handler could read) and zot is ended with `emulate_default_handler`. A signal ignored by
//! whoever started zot (nohup) stays ignored; asking for the current action is the one thing
//! here neither signal-hook nor rustix offers, so that query goes through `libc::sigaction`.

use std::sync::{Mutex, MutexGuard, Once, PoisonError};

use super::group::Group;
use super::orphans;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;
use signal_hook::low_level::emulate_default_handler;

/// Process groups of running extensions.
static GROUPS: Mutex<Vec<i32>> = Mutex::new(Vec::new());

/// What to tidy once the groups are ended and before zot ends (a staging folder a step was
/// writing into), by the id of its [`OnSignal`].
type Cleanup = Box<dyn Fn() + Send>;
static CLEANUPS: Mutex<Vec<(u64, Cleanup)>> = Mutex::new(Vec::new());
static NEXT_CLEANUP: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

fn cleanups() -> MutexGuard<'static, Vec<(u64, Cleanup)>> {
    CLEANUPS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A cleanup that runs if a signal ends zot while this is alive (see [`on_signal`]).
#[must_use = "the cleanup is forgotten when this is dropped"]
pub(crate) struct OnSignal(u64);

impl Drop for OnSignal {
    fn drop(&mut self) {
        cleanups().retain(|(id, _)| *id != self.0);
    }
}

/// Runs `cleanup` when SIGINT, SIGTERM or SIGHUP ends zot while the returned guard lives,
/// after the registered groups are ended (watching the signals from now on). Only for work
/// that is safe while the main thread is anywhere inside the guard's span.
pub(crate) fn on_signal(cleanup: impl Fn() + Send + 'static) -> OnSignal {
    INSTALL.call_once(install);
    let id = NEXT_CLEANUP.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    cleanups().push((id, Box::new(cleanup)));
    OnSignal(id)
}

static INSTALL: Once = Once::new();

fn groups() -> MutexGuard<'static, Vec<i32>> {
    GROUPS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Remembers a running extension's process group (watching the signals on first use).
pub(crate) fn register(pgid: i32) {
    INSTALL.call_once(install);
    groups().push(pgid);
}

/// Forgets a process group that has been killed.
pub(crate) fn unregister(pgid: i32) {
    groups().retain(|&g| g != pgid);
}

/// The process groups registered now.
pub(crate) fn registered() -> Vec<i32> {
    groups().clone()
}

/// Starts the thread that ends the groups and zot when a signal comes. Without it (no
/// thread or pipe to be had) a signal ends zot as it would without extensions running.
fn install() {
    let watched: Vec<i32> = [SIGINT, SIGTERM, SIGHUP]
        .into_iter()
        .filter(|&signal| !ignored(signal))
        .collect();
    let Ok(mut signals) = Signals::new(&watched) else {
        return;
    };
    let _ = std::thread::Builder::new()
        .name("zot-ext signals".into())
        .spawn(move || signals.forever().for_each(end_all));
}

/// Ends the tree of every registered group and the processes zot adopted, then ends zot by
/// `signal`. The list stays locked, so an extension started meanwhile waits to be registered
/// until zot is gone.
fn end_all(signal: i32) {
    let groups = groups();
    for group in groups.iter().filter_map(|&g| Group::with_id(g)) {
        group.kill_tree();
    }
    orphans::end_adopted(&groups);
    for (_, cleanup) in cleanups().iter() {
        cleanup();
    }
    let _ = emulate_default_handler(signal);
}

/// Whether `signal` is ignored (`SIG_IGN`), as nohup leaves SIGHUP for the programs it starts.
fn ignored(signal: i32) -> bool {
    // SAFETY: sigaction(2) only reads the current action into a zeroed struct of ours.
    unsafe {
        let mut current: libc::sigaction = std::mem::zeroed();
        libc::sigaction(signal, std::ptr::null(), &raw mut current) == 0
            && current.sa_sigaction == libc::SIG_IGN
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_are_forgotten() {
        register(-5);
        assert!(registered().contains(&-5));
        unregister(-5);
        assert!(!registered().contains(&-5));
    }

    /// Groups registered from many threads at once are all remembered. Negative ids are
    /// never signalled.
    #[test]
    fn concurrent_registrations_are_all_kept() {
        let ids: Vec<i32> = (0..600).map(|i| -10_000 - i).collect();
        let threads: Vec<_> = ids
            .chunks(150)
            .map(|part| {
                let part = part.to_vec();
                std::thread::spawn(move || part.into_iter().for_each(register))
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let now = registered();
        let missing: Vec<&i32> = ids.iter().filter(|id| !now.contains(id)).collect();
        assert!(missing.is_empty(), "not registered: {missing:?}");
        ids.iter().copied().for_each(unregister);
        let now = registered();
        assert!(ids.iter().all(|id| !now.contains(id)));
    }

    #[test]
    fn only_ignored_signals_count_as_ignored() {
        assert!(!ignored(SIGTERM));
        // Rust's runtime ignores SIGPIPE in every program.
        assert!(ignored(signal_hook::consts::SIGPIPE));
    }
}
