//! Making text safe to show: credentials redacted and hidden characters escaped, so one
//! call prints one line and no credential, and what a terminal shows is what is stored.
//!
//! Hidden characters are those a terminal does not show as themselves: control characters
//! (C0, DEL, C1: newlines, escape sequences), the line and paragraph separators, and every
//! character Unicode calls a format character (general category Cf: the bidirectional
//! controls that reorder text, zero-width spaces and joiners, the byte order mark, tags) or
//! default-ignorable (drawn as nothing: variation selectors, fillers, the combining grapheme
//! joiner). That is the rule Unicode gives for characters to show visibly when text must be
//! told apart (UTS #39 and the `Default_Ignorable_Code_Point` property), applied to every
//! printed name, path and message alike; the table is [`HIDDEN`]. One exception keeps emoji
//! whole: a zero-width joiner or an emoji/text variation selector right after a pictograph
//! (`❤️`, `👩‍💻`) is shown as it is.

use super::redact::redact_text;

/// A message as it may be shown: URL-shaped words redacted
/// ([`redact_text`]), then hidden characters escaped ([`printable`]).
pub fn clean(message: &str) -> String {
    printable(&redact_text(message))
}

/// `text` with its hidden characters written as escapes (`\n`, `\u{1b}`, `\u{200b}`), so it
/// stays on one line, reads in the order it is stored, shows every character it holds and
/// cannot send commands to the terminal.
pub fn printable(text: &str) -> String {
    escape(text, |_| false)
}

/// Text an extension sent, as shown on a terminal: like [`printable`], but newlines and
/// tabs are kept, so a multi-line answer stays laid out as its author meant.
pub fn terminal_text(text: &str) -> String {
    escape(text, |c| matches!(c, '\n' | '\t'))
}

/// The first character of `text` that [`printable`] escapes, if any.
pub fn first_hidden(text: &str) -> Option<char> {
    let mut previous = None;
    text.chars().find(|&c| {
        let hidden = is_hidden(c, previous);
        previous = Some(c);
        hidden
    })
}

/// `text` as a terminal shows it: its hidden characters left out.
pub fn without_hidden(text: &str) -> String {
    let mut previous = None;
    text.chars()
        .filter(|&c| {
            let hidden = is_hidden(c, previous);
            previous = Some(c);
            !hidden
        })
        .collect()
}

fn escape(text: &str, keep: impl Fn(char) -> bool) -> String {
    if first_hidden(text).is_none() {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut previous = None;
    for c in text.chars() {
        if is_hidden(c, previous) && !keep(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
        previous = Some(c);
    }
    out
}

/// Whether `c`, after `previous`, is escaped: a control character, a line or paragraph
/// separator, or in [`HIDDEN`], unless it is part of an emoji ([`joins_emoji`]).
fn is_hidden(c: char, previous: Option<char>) -> bool {
    if c.is_control() || matches!(c, '\u{2028}' | '\u{2029}') {
        return true;
    }
    let listed = HIDDEN
        .binary_search_by(|&(first, last)| {
            if last < c {
                std::cmp::Ordering::Less
            } else if first > c {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok();
    listed && !joins_emoji(c, previous)
}

/// A zero-width joiner or variation selector that belongs to an emoji: right after a
/// pictograph, or (a joiner) after the emoji selector that follows one.
fn joins_emoji(c: char, previous: Option<char>) -> bool {
    let Some(previous) = previous else {
        return false;
    };
    match c {
        '\u{fe0e}' | '\u{fe0f}' => is_pictograph(previous),
        '\u{200d}' => is_pictograph(previous) || previous == '\u{fe0f}',
        _ => false,
    }
}

/// The blocks emoji come from: arrows, technical and miscellaneous symbols, dingbats
/// (U+2190-U+2BFF), and the emoji planes' symbols and pictographs with their skin tones
/// (U+1F000-U+1FAFF).
fn is_pictograph(c: char) -> bool {
    ('\u{2190}'..='\u{2bff}').contains(&c) || ('\u{1f000}'..='\u{1faff}').contains(&c)
}

/// The format characters (Cf) and default-ignorable code points of Unicode 16, as ranges
/// sorted by their first character; control characters are told by `char::is_control`.
const HIDDEN: &[(char, char)] = &[
    ('\u{ad}', '\u{ad}'),       // soft hyphen
    ('\u{34f}', '\u{34f}'),     // combining grapheme joiner
    ('\u{600}', '\u{605}'),     // Arabic number signs
    ('\u{61c}', '\u{61c}'),     // Arabic letter mark
    ('\u{6dd}', '\u{6dd}'),     // Arabic end of ayah
    ('\u{70f}', '\u{70f}'),     // Syriac abbreviation mark
    ('\u{890}', '\u{891}'),     // Arabic pound and piastre marks above
    ('\u{8e2}', '\u{8e2}'),     // Arabic disputed end of ayah
    ('\u{115f}', '\u{1160}'),   // Hangul fillers
    ('\u{17b4}', '\u{17b5}'),   // Khmer inherent vowels
    ('\u{180b}', '\u{180f}'),   // Mongolian variation selectors, vowel separator
    ('\u{200b}', '\u{200f}'),   // zero-width space, non-joiner, joiner; LRM, RLM
    ('\u{202a}', '\u{202e}'),   // bidirectional embeddings and overrides
    ('\u{2060}', '\u{206f}'),   // word joiner, invisible operators, bidi isolates
    ('\u{3164}', '\u{3164}'),   // Hangul filler
    ('\u{fe00}', '\u{fe0f}'),   // variation selectors
    ('\u{feff}', '\u{feff}'),   // zero-width no-break space, byte order mark
    ('\u{ffa0}', '\u{ffa0}'),   // halfwidth Hangul filler
    ('\u{fff0}', '\u{fffb}'),   // unassigned specials, interlinear annotation
    ('\u{110bd}', '\u{110bd}'), // Kaithi number sign
    ('\u{110cd}', '\u{110cd}'), // Kaithi number sign above
    ('\u{13430}', '\u{1343f}'), // Egyptian hieroglyph format controls
    ('\u{1bca0}', '\u{1bca3}'), // shorthand format controls
    ('\u{1d173}', '\u{1d17a}'), // musical symbol format controls
    ('\u{e0000}', '\u{e0fff}'), // tags, variation selectors supplement
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_sorted_and_disjoint() {
        for pair in HIDDEN.windows(2) {
            assert!(pair[0].0 <= pair[0].1 && pair[0].1 < pair[1].0, "{pair:?}");
        }
    }

    #[test]
    fn invisible_characters_in_names_are_escaped() {
        assert_eq!(printable("hel\u{200b}lo"), "hel\\u{200b}lo");
        assert_eq!(
            printable("a\u{feff}b\u{ad}c\u{2060}"),
            "a\\u{feff}b\\u{ad}c\\u{2060}"
        );
        assert_eq!(printable("x\u{e0041}\u{fe0f}"), "x\\u{e0041}\\u{fe0f}");
        assert_eq!(printable("\u{3164}"), "\\u{3164}");
        assert_eq!(first_hidden("hel\u{200b}lo"), Some('\u{200b}'));
        assert_eq!(first_hidden("wetter-größe 天気"), None);
        assert_eq!(without_hidden("hel\u{200b}lo ❤\u{fe0f}"), "hello ❤\u{fe0f}");
    }

    #[test]
    fn emoji_keep_their_joiners_and_selectors() {
        for emoji in [
            "❤\u{fe0f}",
            "👩\u{200d}💻",
            "❤\u{fe0f}\u{200d}🔥",
            "👍🏽",
            "⚠\u{fe0f} x",
        ] {
            assert_eq!(printable(emoji), emoji);
        }
        assert_eq!(printable("a\u{200d}b"), "a\\u{200d}b");
        assert_eq!(printable("\u{200d}"), "\\u{200d}");
    }

    #[test]
    fn terminal_text_keeps_newlines_and_tabs_only() {
        assert_eq!(
            terminal_text("a\n\tb\r\u{1b}[2J\u{85}\u{202e}c"),
            "a\n\tb\\r\\u{1b}[2J\\u{85}\\u{202e}c"
        );
        assert_eq!(terminal_text("plain\n"), "plain\n");
    }
}
