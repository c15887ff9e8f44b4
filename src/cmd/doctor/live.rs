//! Doctor's progress while checks run: reports are handed on in load order, each as soon as
//! it and every report before it are done (so a name two extensions register is judged
//! against the ones loaded before it, and the order never depends on timing), and on a
//! terminal stderr one live line says what is still running (spinner, names, elapsed time),
//! redrawn in place and cleared at the end, or when Ctrl-C ends zot. A report with a
//! finding about timing from a check that ran beside others is held back to be checked
//! again alone ([`Board::held`]); the check alone gives the verdict.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use crate::catalog::target::Target;
use crate::check::Problem;
use crate::check::doctor::Report;
use crate::output::{Output, clean};

/// How often the live line is redrawn while nothing else happens.
pub(super) const TICK: Duration = Duration::from_millis(100);

const SPINNER: [char; 4] = ['|', '/', '-', '\\'];

/// What a worker says.
pub(super) enum Event {
    Started(usize),
    Done(usize, Box<Report>),
}

/// The reports so far, the ones waiting for an earlier one, and what is running.
pub(super) struct Board<'a, F: FnMut(&mut Report)> {
    targets: &'a [Target],
    out: &'a Output,
    show: F,
    running: Vec<(usize, Instant)>,
    /// For each check started, the most other checks that ran while it did.
    beside: HashMap<usize, usize>,
    /// Reports with a finding about timing from a check beside others (how many, at most),
    /// to check again alone.
    held: BTreeMap<usize, (Report, usize)>,
    waiting: BTreeMap<usize, Report>,
    shown: Vec<Report>,
    frame: usize,
    /// Erases the live line when a signal (Ctrl-C) ends zot while checks run.
    _erase: Option<crate::host::interrupt::OnSignal>,
}

impl<'a, F: FnMut(&mut Report)> Board<'a, F> {
    /// `show` gets each report in the order of `targets`, with the live line cleared.
    pub(super) fn new(targets: &'a [Target], out: &'a Output, show: F) -> Self {
        Board {
            targets,
            out,
            show,
            running: Vec::new(),
            beside: HashMap::new(),
            held: BTreeMap::new(),
            waiting: BTreeMap::new(),
            shown: Vec::new(),
            frame: 0,
            _erase: out.draws_progress().then(|| {
                crate::host::interrupt::on_signal(|| {
                    use std::io::Write as _;
                    let _ = std::io::stderr().write_all(b"\r\x1b[2K");
                })
            }),
        }
    }

    pub(super) fn record(&mut self, event: Event) {
        match event {
            Event::Started(index) => self.started(index),
            Event::Done(index, report) => {
                self.running.retain(|(i, _)| *i != index);
                let report = self.judged(index, *report);
                let others = self.beside.get(&index).copied().unwrap_or_default();
                if report.judged_on_timing() && others > 0 {
                    self.held.insert(index, (report, others));
                    return;
                }
                self.waiting.insert(index, report);
                self.show_ready();
            }
        }
    }

    /// Counts the checks running beside the one starting, and it beside each of them.
    fn started(&mut self, index: usize) {
        let others = self.running.len();
        for (i, _) in &self.running {
            let count = self.beside.entry(*i).or_default();
            *count = (*count).max(others);
        }
        self.beside.insert(index, others);
        self.running.push((index, Instant::now()));
    }

    /// The report of a check; for a check again alone, with a note of what the first said.
    fn judged(&mut self, index: usize, mut report: Report) -> Report {
        let Some((first, others)) = self.held.remove(&index) else {
            return report;
        };
        let said = first
            .errors
            .iter()
            .chain(&first.warnings)
            .find(|p| p.timed)
            // The finding, without the reason it matters (after the `;`).
            .map_or_else(String::new, |p| {
                p.message.split(';').next().unwrap_or_default().to_owned()
            });
        report.add(Problem::note(
            format!(
                "checked again alone: beside {} it {said}",
                if others == 1 {
                    "1 other check".to_owned()
                } else {
                    format!("{others} other checks")
                }
            ),
            "",
        ));
        report.rechecked_alone = true;
        report
    }

    /// The targets whose reports are held to be checked again alone, in load order.
    pub(super) fn held(&self) -> Vec<usize> {
        self.held.keys().copied().collect()
    }

    /// Hands on every report whose predecessors have all been handed on.
    fn show_ready(&mut self) {
        let mut cleared = false;
        while let Some(mut report) = self.waiting.remove(&self.shown.len()) {
            if !cleared {
                self.out.progress_done();
                cleared = true;
            }
            (self.show)(&mut report);
            self.shown.push(report);
        }
    }

    /// Redraws the live line (nothing unless stderr is a terminal).
    pub(super) fn draw(&mut self) {
        if self.running.is_empty() {
            return;
        }
        self.frame = (self.frame + 1) % SPINNER.len();
        let names: Vec<String> = self
            .running
            .iter()
            .map(|(i, since)| {
                let name = self.targets.get(*i).map_or("?", Target::name);
                format!("{} {:.1}s", clean(name), since.elapsed().as_secs_f64())
            })
            .collect();
        let line = format!(
            "{} checked {} of {}; running: {}",
            SPINNER[self.frame],
            self.shown.len() + self.waiting.len(),
            self.targets.len(),
            names.join(", ")
        );
        self.out
            .progress(&fit(&line, crate::output::table::stderr_width()));
    }

    /// Clears the live line; the reports in the order of the targets.
    pub(super) fn finish(self) -> Vec<Report> {
        self.out.progress_done();
        self.shown
    }
}

/// `line` cut to `width - 1` characters (the last column would wrap on some terminals,
/// and a wrapped line can no longer be erased in place).
fn fit(line: &str, width: usize) -> String {
    let room = width.saturating_sub(1).max(10);
    if line.chars().count() <= room {
        return line.to_string();
    }
    let mut cut: String = line.chars().take(room - 3).collect();
    cut.push_str("...");
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_lines_are_cut_to_the_terminal() {
        assert_eq!(fit("short", 80), "short");
        assert_eq!(fit(&"x".repeat(100), 21), format!("{}...", "x".repeat(17)));
    }
}
