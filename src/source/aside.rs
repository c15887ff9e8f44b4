//! Work a staged install need not wait for: linking a fresh checkout's fetch-cache entry
//! ([`crate::store::cache::Linking`]) runs on a thread of its own while the tree is audited,
//! validated, flushed and placed ([`Aside`]).
//!
//! The work is joined before anything could disturb it: before carry-over writes into the
//! staged tree, before the staging folder is deleted ([`crate::source::fetch::Staged`] drops
//! it first), and at the latest when placing makes the outcome, so no thread outlives the
//! install that started it. What it has to say is a note: a cache that cannot take the
//! tree never fails the install.
//!
//! A thread per staged tree suits commands that stage one tree (`install`, `add`). `sync`
//! stages many on a bounded pool of threads, and `update` edits the staged tree at once,
//! so they link on the staging thread before staging returns.

use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

use crate::output::Output;

/// What the work returns: a note to print, if any.
type Work = Box<dyn FnOnce() -> Option<String> + Send>;

/// Work running beside the install (or already done), and where its note goes.
pub(crate) struct Aside {
    running: Option<JoinHandle<Option<String>>>,
    out: Output,
}

impl Aside {
    /// Nothing to wait for.
    pub(crate) fn none(out: &Output) -> Aside {
        Aside {
            running: None,
            out: out.clone(),
        }
    }

    /// Starts `work` on a thread of its own (or does it here and now when no thread can be
    /// started); its note is printed when it is joined.
    pub(crate) fn start(
        out: &Output,
        work: impl FnOnce() -> Option<String> + Send + 'static,
    ) -> Aside {
        let mut aside = Aside::none(out);
        // Handed over through a slot, so a thread that cannot be started leaves it here.
        let slot: Arc<Mutex<Option<Work>>> = Arc::new(Mutex::new(Some(Box::new(work))));
        let theirs = Arc::clone(&slot);
        let spawned = std::thread::Builder::new()
            .name("aside".into())
            .spawn(move || take(&theirs).and_then(|work| work()));
        match spawned {
            Ok(handle) => aside.running = Some(handle),
            Err(_) => aside.note(take(&slot).and_then(|work| work())),
        }
        aside
    }

    /// Waits for the work to end and prints its note; later calls do nothing.
    pub(crate) fn finish(&mut self) {
        let Some(running) = self.running.take() else {
            return;
        };
        let note = running.join().unwrap_or_else(|_| {
            Some("note: the fetch cache was not updated; the next install fetches it again".into())
        });
        self.note(note);
    }

    fn note(&self, note: Option<String>) {
        if let Some(note) = note {
            self.out.note(&note);
        }
    }
}

impl Drop for Aside {
    fn drop(&mut self) {
        self.finish();
    }
}

/// The work in `slot`, taken out.
fn take(slot: &Mutex<Option<Work>>) -> Option<Work> {
    slot.lock().unwrap_or_else(PoisonError::into_inner).take()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::ColorChoice;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::mpsc;

    fn quiet() -> Output {
        Output::new(ColorChoice::Never, true, false)
    }

    #[test]
    fn the_work_runs_on_another_thread_and_is_joined_when_finished() {
        let (started, wait) = mpsc::channel();
        let (release, released) = mpsc::channel::<()>();
        let done = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&done);
        let here = std::thread::current().id();
        let mut aside = Aside::start(&quiet(), move || {
            started.send(std::thread::current().id()).unwrap();
            released.recv().unwrap();
            flag.store(true, Ordering::SeqCst);
            None
        });
        assert_ne!(wait.recv().unwrap(), here, "the work runs elsewhere");
        assert!(!done.load(Ordering::SeqCst), "the caller went on meanwhile");
        release.send(()).unwrap();
        aside.finish();
        assert!(done.load(Ordering::SeqCst), "finished once joined");
    }

    #[test]
    fn dropping_joins_the_work() {
        let done = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&done);
        let aside = Aside::start(&quiet(), move || {
            std::thread::sleep(std::time::Duration::from_millis(50));
            flag.store(true, Ordering::SeqCst);
            None
        });
        drop(aside);
        assert!(done.load(Ordering::SeqCst));
    }
}
