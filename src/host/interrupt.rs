//! Interruption: extensions run in process groups of their own, so Ctrl-C at the terminal
//! does not reach them. While any is running, SIGINT, SIGTERM and SIGHUP kill every such
//! group, then end zot with the same signal as before. The table of groups grows in chunks
//! that are never freed, so registering never fails and the handler reads it lock-free.

use std::ptr;
use std::sync::Once;
use std::sync::atomic::{AtomicI32, AtomicPtr, Ordering};

/// Slots per chunk of the table.
const CHUNK: usize = 64;

/// A piece of the table: process groups of running extensions (0 marks a free slot), and
/// the next chunk once this one has filled up.
struct Chunk {
    slots: [AtomicI32; CHUNK],
    next: AtomicPtr<Chunk>,
}

impl Chunk {
    const fn new() -> Chunk {
        Chunk {
            slots: [const { AtomicI32::new(0) }; CHUNK],
            next: AtomicPtr::new(ptr::null_mut()),
        }
    }

    /// Claims a free slot for `pgid`.
    fn claim(&self, pgid: i32) -> bool {
        self.slots.iter().any(|slot| {
            slot.compare_exchange(0, pgid, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
        })
    }

    /// The next chunk, appending an empty one if there is none yet.
    fn next_or_grow(&self) -> &'static Chunk {
        let next = self.next.load(Ordering::SeqCst);
        if !next.is_null() {
            // SAFETY: chunks are leaked boxes, never freed, so the pointer stays valid.
            return unsafe { &*next };
        }
        let fresh = Box::into_raw(Box::new(Chunk::new()));
        match self
            .next
            .compare_exchange(ptr::null_mut(), fresh, Ordering::SeqCst, Ordering::SeqCst)
        {
            // SAFETY: `fresh` was just leaked and is now owned by the table forever.
            Ok(_) => unsafe { &*fresh },
            Err(winner) => {
                // Another thread appended first; ours was never shared, so it can be freed.
                // SAFETY: `fresh` came from Box::into_raw above and nobody else saw it.
                drop(unsafe { Box::from_raw(fresh) });
                // SAFETY: as above, chunks in the table are never freed.
                unsafe { &*winner }
            }
        }
    }
}

static FIRST: Chunk = Chunk::new();

static INSTALL: Once = Once::new();

/// Every chunk of the table, in order (async-signal-safe: atomic loads only).
fn chunks() -> impl Iterator<Item = &'static Chunk> {
    std::iter::successors(Some(&FIRST), |chunk| {
        let next = chunk.next.load(Ordering::SeqCst);
        // SAFETY: chunks are leaked boxes, never freed.
        (!next.is_null()).then(|| unsafe { &*next })
    })
}

/// Remembers a running extension's process group (installing the handler on first use).
/// Never fails: when every slot is taken, the table grows.
pub fn register(pgid: i32) {
    INSTALL.call_once(install);
    let mut chunk: &'static Chunk = &FIRST;
    while !chunk.claim(pgid) {
        chunk = chunk.next_or_grow();
    }
}

/// Forgets a process group that has been killed.
pub fn unregister(pgid: i32) {
    for slot in chunks().flat_map(|c| &c.slots) {
        let _ = slot.compare_exchange(pgid, 0, Ordering::SeqCst, Ordering::SeqCst);
    }
}

/// The process groups registered now.
pub fn registered() -> Vec<i32> {
    chunks()
        .flat_map(|c| &c.slots)
        .map(|slot| slot.load(Ordering::SeqCst))
        .filter(|&pgid| pgid != 0)
        .collect()
}

/// Only async-signal-safe calls: atomic loads, kill, signal and raise.
extern "C" fn on_signal(signal: libc::c_int) {
    for slot in chunks().flat_map(|c| &c.slots) {
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
        assert!(registered().contains(&-5));
        unregister(-5);
        assert!(!registered().contains(&-5));
    }

    /// More groups than the first chunks hold (the old table had 256 slots and silently
    /// dropped the rest) are all remembered. Negative ids are never signalled.
    #[test]
    fn the_table_grows_instead_of_dropping_groups() {
        let ids: Vec<i32> = (0..600).map(|i| -10_000 - i).collect();
        let threads: Vec<_> = ids
            .chunks(150)
            .map(|part| {
                let part = part.to_vec();
                std::thread::spawn(move || part.into_iter().for_each(register))
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        let now = registered();
        let missing: Vec<&i32> = ids.iter().filter(|id| !now.contains(id)).collect();
        assert!(missing.is_empty(), "not registered: {missing:?}");
        ids.iter().copied().for_each(unregister);
        let now = registered();
        assert!(ids.iter().all(|id| !now.contains(id)));
    }
}
