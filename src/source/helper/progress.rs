//! The live line zot draws on a terminal's stderr while the git helper fetches: the
//! server's own words while it counts and compresses (`remote: Counting objects:  45%
//! (12/26)`, escaped, cut to the terminal), then `receiving objects:  45% (12/26), 1.20 MiB
//! | 3.10 MiB/s`, `resolving deltas:  80% (4/5)` and `checking out files`. Redrawn at most
//! every [`DRAW_EVERY`], never with `--json` or `--quiet` or into a pipe ([`Output`]
//! decides), and erased when the fetch ends, however it ends.

use std::time::{Duration, Instant};

use super::watch::Samples;
use crate::output::table::cut_end;
use crate::output::{Output, clean};
use crate::source::git::progress::{Step, Transfer};

/// The line is redrawn at most this often.
pub(super) const DRAW_EVERY: Duration = Duration::from_millis(100);

/// The rate is the bytes received over about this long, the latest stretch.
const RATE_WINDOW: Duration = Duration::from_secs(2);

/// No rate is shown before the transfer has run this long.
const RATE_AFTER: Duration = Duration::from_millis(500);

/// The live line of one fetch.
pub(super) struct ProgressLine<'o> {
    out: &'o Output,
    live: bool,
    /// The latest step, and whether it is drawn yet.
    latest: Option<Step>,
    pending: bool,
    throttle: Throttle,
    rate: Rate,
    /// Whether something is on the line, to erase.
    drawn: bool,
    /// Whether a transfer has begun since the last checkout: the server's words after it
    /// (`Total 44 (delta 3), reused 0`) are passed over, the transfer says more.
    receiving: bool,
}

impl<'o> ProgressLine<'o> {
    pub(super) fn new(out: &'o Output) -> ProgressLine<'o> {
        ProgressLine {
            out,
            live: !out.json,
            latest: None,
            pending: false,
            throttle: Throttle::new(DRAW_EVERY),
            rate: Rate::default(),
            drawn: false,
            receiving: false,
        }
    }

    /// Takes in a step of the fetch at `now`, drawn if the line is due.
    pub(super) fn step(&mut self, step: Step, now: Instant) {
        match &step {
            Step::Remote(_) if self.receiving => return,
            Step::Remote(_) => {}
            Step::Receiving(transfer) => {
                self.receiving = true;
                self.rate.sample(now, transfer.bytes);
            }
            Step::Checkout => self.receiving = false,
        }
        self.latest = Some(step);
        self.pending = true;
        self.tick(now);
    }

    /// Draws the latest step if it is not drawn yet and the line is due (called as
    /// anything comes from the helper, its heartbeat too, so a step that came too soon
    /// is drawn later).
    pub(super) fn tick(&mut self, now: Instant) {
        if !self.live || !self.pending || !self.throttle.due(now) {
            return;
        }
        let Some(step) = &self.latest else { return };
        let line = describe(step, self.rate.per_second(now));
        self.out.progress(&cut_end(
            &line,
            crate::output::table::stderr_width().saturating_sub(1),
        ));
        self.pending = false;
        self.drawn = true;
    }

    /// Erases the line.
    pub(super) fn finish(&mut self) {
        if self.drawn {
            self.out.progress_done();
            self.drawn = false;
        }
    }
}

impl Drop for ProgressLine<'_> {
    fn drop(&mut self) {
        self.finish();
    }
}

/// The line for `step`, with the transfer's rate in bytes per second when known.
fn describe(step: &Step, rate: Option<f64>) -> String {
    match step {
        Step::Remote(text) => format!("remote: {}", clean(text)),
        Step::Receiving(t) if t.objects == t.total && t.deltas < t.total_deltas => {
            format!("resolving deltas: {}", counted(t.deltas, t.total_deltas))
        }
        Step::Receiving(t) => receiving(t, rate),
        Step::Checkout => "checking out files".to_string(),
    }
}

/// `receiving objects:  45% (12/26), 1.20 MiB | 3.10 MiB/s`.
fn receiving(t: &Transfer, rate: Option<f64>) -> String {
    let objects = if t.total == 0 {
        t.objects.to_string()
    } else {
        counted(t.objects, t.total)
    };
    let size = bytes(t.bytes as f64);
    match rate {
        Some(rate) => format!("receiving objects: {objects}, {size} | {}/s", bytes(rate)),
        None => format!("receiving objects: {objects}, {size}"),
    }
}

/// ` 45% (12/26)`: the percentage rounded down, so 100% is all of it.
fn counted(done: usize, total: usize) -> String {
    let percent = if total == 0 {
        100
    } else {
        (done.min(total) as u128 * 100 / total as u128) as usize
    };
    format!("{percent:>3}% ({done}/{total})")
}

/// A size in binary units to three significant digits: `512 B`, `1.20 KiB`, `12.3 MiB`,
/// `246 MiB`, `0.98 GiB`.
fn bytes(n: f64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if n < 999.5 {
        return format!("{n:.0} B");
    }
    let mut value = n / 1024.0;
    let mut unit = 0;
    while value >= 999.5 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    let unit = UNITS[unit];
    if value < 9.995 {
        format!("{value:.2} {unit}")
    } else if value < 99.95 {
        format!("{value:.1} {unit}")
    } else {
        format!("{value:.0} {unit}")
    }
}

/// Lets something happen at most once every `every`.
struct Throttle {
    every: Duration,
    last: Option<Instant>,
}

impl Throttle {
    fn new(every: Duration) -> Throttle {
        Throttle { every, last: None }
    }

    /// Whether it may happen at `now` (and then it counts as having happened).
    fn due(&mut self, now: Instant) -> bool {
        let due = self
            .last
            .is_none_or(|last| now.duration_since(last) >= self.every);
        if due {
            self.last = Some(now);
        }
        due
    }
}

/// The transfer's rate over its latest [`RATE_WINDOW`]: when, and the bytes received by then.
#[derive(Default)]
struct Rate(Samples);

impl Rate {
    fn sample(&mut self, now: Instant, bytes: u64) {
        // A new transfer (a submodule's) starts its count again.
        if self.0.last().is_some_and(|(_, last)| bytes < last) {
            self.0.clear();
        }
        self.0.add(now, bytes, RATE_WINDOW);
    }

    /// Bytes per second, once the samples span [`RATE_AFTER`].
    fn per_second(&self, now: Instant) -> Option<f64> {
        let (since, from) = self.0.first()?;
        let (_, to) = self.0.last()?;
        let over = now.duration_since(since);
        (over >= RATE_AFTER).then(|| (to - from) as f64 / over.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn transfer(objects: usize, total: usize, bytes: u64) -> Step {
        Step::Receiving(Transfer {
            objects,
            total,
            bytes,
            ..Transfer::default()
        })
    }

    #[test]
    fn sizes_take_binary_units_to_three_digits() {
        let cases = [
            (0.0, "0 B"),
            (999.0, "999 B"),
            (1000.0, "0.98 KiB"),
            (1024.0, "1.00 KiB"),
            (12.34 * 1024.0, "12.3 KiB"),
            (252_529.2 * 1024.0, "247 MiB"),
            (1_048_576.0, "1.00 MiB"),
            (1023.9 * 1_048_576.0, "1.00 GiB"),
            (3.5 * 1_073_741_824.0, "3.50 GiB"),
        ];
        for (n, shown) in cases {
            assert_eq!(bytes(n), shown, "{n}");
        }
    }

    #[test]
    fn receiving_shows_a_percentage_the_size_and_the_rate() {
        let step = transfer(8, 14, 252_529 * 1024);
        assert_eq!(
            describe(&step, Some(3.1 * 1_048_576.0)),
            "receiving objects:  57% (8/14), 247 MiB | 3.10 MiB/s"
        );
        assert_eq!(
            describe(&transfer(14, 14, 2048), None),
            "receiving objects: 100% (14/14), 2.00 KiB"
        );
        // Before the server says how many.
        assert_eq!(
            describe(&transfer(3, 0, 10), None),
            "receiving objects: 3, 10 B"
        );
        // 99.9% is not 100%.
        assert_eq!(counted(999, 1000), " 99% (999/1000)");
    }

    #[test]
    fn deltas_and_checkout_follow_the_objects() {
        let resolving = Step::Receiving(Transfer {
            objects: 14,
            total: 14,
            bytes: 100,
            deltas: 4,
            total_deltas: 5,
        });
        assert_eq!(describe(&resolving, None), "resolving deltas:  80% (4/5)");
        assert_eq!(describe(&Step::Checkout, None), "checking out files");
    }

    #[test]
    fn the_servers_text_is_escaped_and_redacted() {
        let step = Step::Remote("Counting \u{1b}[2J\u{202e}objects https://u:secret@h/r".into());
        let line = describe(&step, None);
        assert!(
            line.starts_with("remote: Counting \\u{1b}[2J\\u{202e}objects"),
            "{line}"
        );
        assert!(
            !line.contains('\u{1b}') && !line.contains("secret"),
            "{line}"
        );
    }

    #[test]
    fn the_rate_is_over_the_latest_stretch() {
        let start = Instant::now();
        let at = |ms| start + Duration::from_millis(ms);
        let mut rate = Rate::default();
        rate.sample(at(0), 0);
        rate.sample(at(400), 400_000);
        assert_eq!(rate.per_second(at(400)), None);
        rate.sample(at(1000), 1_000_000);
        assert_eq!(rate.per_second(at(1000)), Some(1_000_000.0));
        // A stall: the samples older than the window leave (but the newest of them), the
        // rate falls.
        rate.sample(at(3000), 1_000_000);
        rate.sample(at(5500), 1_250_000);
        assert_eq!(rate.per_second(at(5500)), Some(100_000.0));
        // A submodule's transfer counts from zero again.
        rate.sample(at(5600), 10);
        assert_eq!(rate.per_second(at(5600)), None);
    }

    #[test]
    fn the_line_is_drawn_at_most_every_100_ms() {
        let start = Instant::now();
        let mut throttle = Throttle::new(DRAW_EVERY);
        let drawn: Vec<u64> = [0, 30, 99, 100, 150, 199, 200, 450]
            .into_iter()
            .filter(|&ms| throttle.due(start + Duration::from_millis(ms)))
            .collect();
        assert_eq!(drawn, [0, 100, 200, 450]);
    }

    #[test]
    fn a_step_that_came_too_soon_is_drawn_at_the_next_tick() {
        let out = Output::new(crate::output::ColorChoice::Never, false, false);
        let start = Instant::now();
        let at = |ms| start + Duration::from_millis(ms);
        let mut line = ProgressLine::new(&out);
        line.live = true;
        line.step(Step::Remote("Counting objects".into()), at(0));
        assert!(!line.pending);
        line.step(transfer(1, 2, 10), at(50));
        assert!(line.pending);
        line.tick(at(90));
        assert!(line.pending);
        line.tick(at(100));
        assert!(!line.pending);
        // The server's words after its pack leave the transfer on the line; after the
        // checkout (a submodule's fetch), they are shown again.
        line.step(Step::Remote("Total 2 (delta 0)".into()), at(300));
        assert_eq!(line.latest, Some(transfer(1, 2, 10)));
        line.step(Step::Checkout, at(400));
        line.step(Step::Remote("Counting objects".into()), at(500));
        assert_eq!(line.latest, Some(Step::Remote("Counting objects".into())));
        // With --json, nothing is drawn.
        let json = Output::new(crate::output::ColorChoice::Never, false, true);
        let mut line = ProgressLine::new(&json);
        line.step(Step::Checkout, at(0));
        assert!(line.pending && !line.drawn);
    }
}
