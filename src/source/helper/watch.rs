//! The low-speed watchdog zot keeps over a `zot-ext-git` helper, one rule for every
//! transport: a transfer that receives fewer than `limit` bytes per second over
//! `seconds` (git's `http.lowSpeedLimit` / `http.lowSpeedTime`, or
//! `GIT_HTTP_LOW_SPEED_LIMIT` / `GIT_HTTP_LOW_SPEED_TIME`; by default 1,000 bytes per
//! second over 60 s) is too slow, and a helper that sends nothing, not even its heartbeat,
//! for that long has stopped answering. Time while the helper writes a checkout or waits
//! for a credential helper does not count (its heartbeat says so). Its window of samples
//! ([`Samples`]) also gives the live line its rate.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::source::meter::LowSpeed;

/// The watchdog's view of one helper.
pub(super) struct Watch {
    low_speed: LowSpeed,
    /// Heartbeats of the current metered stretch, with the bytes received by then.
    samples: Samples,
}

/// Counts over time: when, and the count by then; the oldest kept is the newest one at
/// least the window old, so the first and the last span the latest window. The
/// watchdog's heartbeats, and the transfer's rate on the live line.
#[derive(Default)]
pub(super) struct Samples(VecDeque<(Instant, u64)>);

impl Samples {
    /// Takes in `count` at `now`, dropping what the latest `window` does not need.
    pub(super) fn add(&mut self, now: Instant, count: u64, window: Duration) {
        self.0.push_back((now, count));
        while self
            .0
            .get(1)
            .is_some_and(|&(at, _)| now.duration_since(at) >= window)
        {
            self.0.pop_front();
        }
    }

    pub(super) fn clear(&mut self) {
        self.0.clear();
    }

    pub(super) fn first(&self) -> Option<(Instant, u64)> {
        self.0.front().copied()
    }

    pub(super) fn last(&self) -> Option<(Instant, u64)> {
        self.0.back().copied()
    }
}

/// A transfer found too slow.
#[derive(Debug, PartialEq)]
pub(super) struct Slow {
    pub received: u64,
    pub over: Duration,
    pub low_speed: LowSpeed,
}

impl Slow {
    /// The error: the URL, the rate and the limit, and how to change it.
    pub(super) fn describe(&self, url: &str) -> String {
        let seconds = self.over.as_secs_f64().max(1.0);
        #[allow(clippy::cast_precision_loss)]
        let rate = self.received as f64 / seconds;
        format!(
            "cannot fetch {url}: the transfer was too slow ({} bytes in the last {:.0} s, {rate:.0} bytes per second, under the limit of {} bytes per second for {} s); it was stopped. The limit is git's http.lowSpeedLimit and http.lowSpeedTime (or GIT_HTTP_LOW_SPEED_LIMIT and GIT_HTTP_LOW_SPEED_TIME; 0 turns it off)",
            self.received,
            self.over.as_secs_f64(),
            self.low_speed.limit,
            self.low_speed.seconds
        )
    }
}

impl Watch {
    pub(super) fn new() -> Watch {
        Watch {
            // The environment's limits, until the helper's first heartbeat (which also
            // reads the git configuration).
            low_speed: LowSpeed::read(|_| None),
            samples: Samples::default(),
        }
    }

    /// How long the helper may stay silent: the low-speed time (60 s when the limit is off).
    pub(super) fn silence_allowed(&self) -> Duration {
        self.low_speed.time()
    }

    /// Takes in a heartbeat; `Some` when the transfer has been too slow for the whole time.
    pub(super) fn beat(
        &mut self,
        received: u64,
        metered: bool,
        low_speed: LowSpeed,
    ) -> Option<Slow> {
        self.beat_at(Instant::now(), received, metered, low_speed)
    }

    fn beat_at(
        &mut self,
        now: Instant,
        received: u64,
        metered: bool,
        low_speed: LowSpeed,
    ) -> Option<Slow> {
        self.low_speed = low_speed;
        if !metered {
            self.samples.clear();
            return None;
        }
        let window = Duration::from_secs(low_speed.seconds);
        self.samples.add(now, received, window);
        if low_speed.limit == 0 || low_speed.seconds == 0 {
            return None;
        }
        let (since, from) = self.samples.first()?;
        let over = now.duration_since(since);
        if over < window {
            return None;
        }
        let got = received.saturating_sub(from);
        let wanted = u128::from(low_speed.limit) * over.as_millis() / 1000;
        (u128::from(got) < wanted).then_some(Slow {
            received: got,
            over,
            low_speed,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOW: LowSpeed = LowSpeed {
        limit: 1000,
        seconds: 10,
    };

    fn at(start: Instant, seconds: u64) -> Instant {
        start + Duration::from_secs(seconds)
    }

    #[test]
    fn a_transfer_under_the_limit_for_the_whole_time_is_slow() {
        let start = Instant::now();
        let mut watch = Watch::new();
        for s in 0..10 {
            assert_eq!(watch.beat_at(at(start, s), s * 100, true, LOW), None);
        }
        let slow = watch.beat_at(at(start, 10), 1000, true, LOW).unwrap();
        assert_eq!((slow.received, slow.over.as_secs()), (1000, 10));
        let message = slow.describe("http://h/r.git");
        assert!(message.contains("http://h/r.git"), "{message}");
        assert!(message.contains("100 bytes per second"), "{message}");
    }

    #[test]
    fn fast_transfers_and_unmetered_time_are_not_slow() {
        let start = Instant::now();
        let mut watch = Watch::new();
        for s in 0..30 {
            assert_eq!(watch.beat_at(at(start, s), s * 2000, true, LOW), None);
        }
        // A long checkout (unmetered) between two transfers restarts the window.
        for s in 30..100 {
            assert_eq!(watch.beat_at(at(start, s), 60_000, false, LOW), None);
        }
        for s in 100..109 {
            assert_eq!(watch.beat_at(at(start, s), 60_000, true, LOW), None);
        }
        assert!(watch.beat_at(at(start, 110), 60_000, true, LOW).is_some());
        let off = LowSpeed {
            limit: 0,
            seconds: 10,
        };
        assert_eq!(watch.beat_at(at(start, 200), 60_000, true, off), None);
    }

    #[test]
    fn a_burst_then_a_trickle_is_slow_once_the_burst_leaves_the_window() {
        let start = Instant::now();
        let mut watch = Watch::new();
        assert_eq!(watch.beat_at(start, 0, true, LOW), None);
        assert_eq!(watch.beat_at(at(start, 1), 50_000, true, LOW), None);
        for s in 2..11 {
            assert_eq!(
                watch.beat_at(at(start, s), 50_000 + s, true, LOW),
                None,
                "{s}"
            );
        }
        // 11 bytes over the last 10 s.
        let slow = watch.beat_at(at(start, 11), 50_011, true, LOW).unwrap();
        assert_eq!(slow.received, 11);
    }
}
