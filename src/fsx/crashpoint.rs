//! Named points where the torture suite kills `zot` on purpose (`ZOT_EXT_CRASH_AT=<point>`),
//! so crash safety is proven at the exact instants that matter, not only at random ones.
//!
//! When the variable names the point being passed, the process sends itself SIGKILL: no
//! destructor, no flush, no cleanup runs, exactly as with `kill -9` from outside. Unset, a
//! point costs one cached environment look-up. Only test builds have the points (the cargo
//! feature `crash-points`, which the test suite turns on); elsewhere [`hit`] is empty.

/// Every named point, in the order an operation passes them. The torture suite iterates
/// this list, so a point added to the code must be added here.
pub(crate) const POINTS: &[&str] = &[
    // install, install --force, update: the staged tree is complete, nothing is published.
    "stage.done",
    // update, install --force: the old copy's data is carried into the staged tree and
    // what it replaces is saved in .ext-store/backup; nothing is published.
    "carry.done",
    // the pending install records are on disk, no tree is placed yet.
    "place.before",
    // one tree is in place, its install record is not committed yet; the other trees of a
    // batch (sync) are not placed yet.
    "place.after",
    // every tree of the batch is in place and flushed, no install record is committed yet.
    "place.all",
    // the install records are committed; the old copies (after --force/update) are still
    // in staging.
    "record.after",
    // remove: the extension is in the trash, its record still exists.
    "remove.moved",
    // remove: the record is gone, the trash is not emptied yet.
    "remove.unrecorded",
    // enable/disable: the new manifest is written to a temporary file, not renamed yet.
    "toggle.temp",
    // enable/disable: the new manifest is in place.
    "toggle.after",
];

/// The environment variable that names the point to die at.
#[cfg(feature = "crash-points")]
const VAR: &str = "ZOT_EXT_CRASH_AT";

/// Without the `crash-points` feature: nothing.
#[cfg(not(feature = "crash-points"))]
pub(crate) fn hit(point: &str) {
    debug_assert!(POINTS.contains(&point), "unknown crash point {point}");
}

/// Kills the process with SIGKILL when `ZOT_EXT_CRASH_AT` names `point`.
#[cfg(feature = "crash-points")]
pub(crate) fn hit(point: &str) {
    use std::sync::OnceLock;
    static ARMED: OnceLock<Option<String>> = OnceLock::new();
    debug_assert!(POINTS.contains(&point), "unknown crash point {point}");
    let armed = ARMED.get_or_init(|| std::env::var(VAR).ok().filter(|v| !v.is_empty()));
    if armed.as_deref() == Some(point) {
        kill_self();
    }
}

#[cfg(feature = "crash-points")]
fn kill_self() {
    let _ = rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::KILL);
    // SIGKILL cannot be caught; should delivery be delayed, never run on past the point.
    loop {
        std::thread::park();
    }
}
