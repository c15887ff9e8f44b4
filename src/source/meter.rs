//! What the low-speed watchdog needs from a fetch or pull in the fetch helper: the bytes
//! received so far (git's pack data and the server's sideband messages, a registry's blobs,
//! over every connection of the process), whether the time now counts (not while a checkout
//! is written, a credential helper asked or a publish sends), and the limit: git's `http.lowSpeedLimit` / `http.lowSpeedTime`, or
//! `GIT_HTTP_LOW_SPEED_LIMIT` / `GIT_HTTP_LOW_SPEED_TIME`, by default 1,000 bytes per
//! second over 60 seconds, for every transport. zot's side of the helper enforces it.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

/// Bytes received by this process.
static RECEIVED: AtomicU64 = AtomicU64::new(0);
/// How many pauses are open.
static PAUSED: AtomicUsize = AtomicUsize::new(0);

/// The low-speed limit: a transfer slower than `limit` bytes per second for `seconds`
/// ends. `0` in either turns the limit off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct LowSpeed {
    pub limit: u64,
    pub seconds: u64,
}

impl LowSpeed {
    pub(crate) const DEFAULT: LowSpeed = LowSpeed {
        limit: 1000,
        seconds: 60,
    };

    /// The limit as the environment and the user's git configuration set it (the
    /// environment first, as git reads them).
    pub(crate) fn configured() -> LowSpeed {
        let config = git2::Config::open_default().ok();
        LowSpeed::read(|key| u64::try_from(config.as_ref()?.get_i64(key).ok()?).ok())
    }

    /// The limit the environment sets, else what `lookup` finds for git's configuration
    /// key, else the default. zot's watchdog reads the environment alone (`|_| None`), so
    /// libgit2 stays out of zot's binary.
    pub(crate) fn read(lookup: impl Fn(&str) -> Option<u64>) -> LowSpeed {
        let read = |var: &str, key: &str, default: u64| {
            std::env::var(var)
                .ok()
                .and_then(|v| v.trim().parse().ok())
                .or_else(|| lookup(key))
                .unwrap_or(default)
        };
        LowSpeed {
            limit: read(
                "GIT_HTTP_LOW_SPEED_LIMIT",
                "http.lowSpeedLimit",
                Self::DEFAULT.limit,
            ),
            seconds: read(
                "GIT_HTTP_LOW_SPEED_TIME",
                "http.lowSpeedTime",
                Self::DEFAULT.seconds,
            ),
        }
    }

    /// The low-speed time, or the default's when the limit is off that way (`0`): how long
    /// a helper may stay silent, and a credential helper may take.
    pub(crate) fn time(self) -> Duration {
        match self.seconds {
            0 => Duration::from_secs(Self::DEFAULT.seconds),
            seconds => Duration::from_secs(seconds),
        }
    }
}

/// The (redacted) URL of the repository being fetched now: the top one or a submodule's.
static FETCHING: Mutex<String> = Mutex::new(String::new());

/// Notes that `url` (redacted) is being fetched now, for the low-speed error.
pub(crate) fn fetching(url: &str) {
    if let Ok(mut now) = FETCHING.lock() {
        now.clear();
        now.push_str(url);
    }
}

/// The URL [`fetching`] noted last, if any.
pub(crate) fn fetching_now() -> Option<String> {
    FETCHING
        .lock()
        .ok()
        .map(|now| now.clone())
        .filter(|now| !now.is_empty())
}

/// Counts `bytes` more received.
pub(crate) fn received(bytes: u64) {
    RECEIVED.fetch_add(bytes, Ordering::Relaxed);
}

/// The bytes received so far, and whether the time now counts.
pub(crate) fn reading() -> (u64, bool) {
    (
        RECEIVED.load(Ordering::Relaxed),
        PAUSED.load(Ordering::Relaxed) == 0,
    )
}

/// While this lives, time does not count against the limit.
pub(crate) struct Pause(());

/// Stops the clock until the [`Pause`] is dropped: for work that receives nothing (writing
/// a checkout) or waits on the user (a credential helper, bounded on its own).
pub(crate) fn pause() -> Pause {
    PAUSED.fetch_add(1, Ordering::Relaxed);
    Pause(())
}

impl Drop for Pause {
    fn drop(&mut self) {
        PAUSED.fetch_sub(1, Ordering::Relaxed);
    }
}
