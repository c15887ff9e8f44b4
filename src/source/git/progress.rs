//! What a fetch reports while it runs, in the helper: the server's own words while it
//! counts and compresses (its sideband text, cut into single lines of bounded length), the
//! transfer (objects, bytes, deltas resolved) and the checkout. zot's side draws them
//! (`source/helper/progress.rs`).

use serde::{Deserialize, Serialize};

/// The longest line of the server's text passed on, in characters: git's own lines
/// (`Compressing objects: 100% (1234/1234), done.`) are well under it.
pub(crate) const MAX_REMOTE_LINE: usize = 160;

/// One step of a fetch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Step {
    /// A line the server wrote while it prepares the pack (`Counting objects:  45%
    /// (12/26)`): remote text, one line, at most [`MAX_REMOTE_LINE`] characters, not yet
    /// escaped.
    Remote(String),
    /// The pack being received and indexed.
    Receiving(Transfer),
    /// The files being written.
    Checkout,
}

/// The transfer so far, as libgit2's indexer counts it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Transfer {
    /// Objects received, of `total`.
    pub objects: usize,
    pub total: usize,
    /// Bytes received.
    pub bytes: u64,
    /// Deltas resolved, of `total_deltas`.
    pub deltas: usize,
    pub total_deltas: usize,
}

impl Transfer {
    /// Whether every object is in and every delta resolved.
    pub(crate) fn done(&self) -> bool {
        self.objects == self.total && self.deltas == self.total_deltas
    }
}

/// Progress of a fetch: called with each step (libgit2 reports every object; the caller
/// throttles).
pub(crate) type Progress<'a> = &'a mut dyn FnMut(Step);

/// Cuts the server's sideband text, which comes in pieces of any size with lines ended by
/// `\r` (a line redrawn) or `\n`, into whole lines.
#[derive(Debug, Default)]
pub(crate) struct RemoteText {
    /// The line begun and not yet ended (at most [`MAX_REMOTE_LINE`] characters kept).
    partial: String,
}

impl RemoteText {
    /// Takes in a piece of text; the last non-blank line it ended, if any (trimmed, cut
    /// to [`MAX_REMOTE_LINE`] characters).
    pub(crate) fn take(&mut self, piece: &[u8]) -> Option<String> {
        let text = String::from_utf8_lossy(piece);
        let mut ended = None;
        for c in text.chars() {
            if matches!(c, '\r' | '\n') {
                let line = std::mem::take(&mut self.partial);
                if !line.trim().is_empty() {
                    ended = Some(line.trim().to_string());
                }
            } else if self.partial.chars().count() < MAX_REMOTE_LINE {
                self.partial.push(c);
            }
        }
        ended
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sideband_pieces_become_whole_lines() {
        let mut text = RemoteText::default();
        assert_eq!(text.take(b"Enumerating obj"), None);
        assert_eq!(
            text.take(b"ects: 5, done.\nCounting objects:  20% (1/5)\rCounting"),
            Some("Counting objects:  20% (1/5)".to_string())
        );
        assert_eq!(
            text.take(b" objects: 100% (5/5), done.\n\n"),
            Some("Counting objects: 100% (5/5), done.".to_string())
        );
    }

    #[test]
    fn a_line_without_end_is_bounded() {
        let mut text = RemoteText::default();
        assert_eq!(text.take("x".repeat(100_000).as_bytes()), None);
        let line = text.take(b"\n").unwrap();
        assert_eq!(line.chars().count(), MAX_REMOTE_LINE);
        // Not valid UTF-8, and controls other than line ends, are kept for zot to escape.
        assert_eq!(
            text.take(b"a\xff\x1b[2Jb\r").unwrap(),
            "a\u{fffd}\u{1b}[2Jb"
        );
    }
}
