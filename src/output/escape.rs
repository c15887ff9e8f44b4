//! Making text safe to show: credentials redacted and control characters escaped, so one
//! call prints one line and no credential.

use super::redact::redact_text;

/// A message as it may be shown: URL-shaped words redacted
/// ([`redact_text`]), then control characters escaped ([`printable`]).
pub fn clean(message: &str) -> String {
    printable(&redact_text(message))
}

/// `text` with control characters (newlines, escape sequences), the Unicode line and
/// paragraph separators and the bidirectional overrides written as escapes, so it stays on
/// one line, reads in the order it is stored and cannot send commands to the terminal.
pub fn printable(text: &str) -> String {
    if !text.chars().any(needs_escape) {
        return text.to_string();
    }
    text.chars()
        .map(|c| {
            if needs_escape(c) {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{2028}' | '\u{2029}' | '\u{200e}' | '\u{200f}')
        || ('\u{202a}'..='\u{202e}').contains(&c)
        || ('\u{2066}'..='\u{2069}').contains(&c)
}
