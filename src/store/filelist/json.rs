//! The file list's JSON form, written straight into one buffer: byte for byte what
//! `serde_json::to_vec_pretty` makes of the stored form (two-space indent, fields in their
//! declared order, absent options left out, strings escaped as `serde_json` escapes them),
//! without building a `StoredEntry` (and its strings) per entry. A list of 20,000 entries is
//! 4 to 5 MB, written once per install on the thread every install waits for; the reader
//! stays serde's.

use super::{Entry, EntryKind, hex};

/// Bytes a typical entry takes (path, digest, punctuation): the buffer's first size is made
/// of it, so that a large list is not copied over and over as it grows.
const ENTRY_BYTES: usize = 200;

/// The pretty JSON of a list of `format` with the tree hash `tree_hash` gives (it may be
/// computed on another thread while the entries are written: room is left at the start for
/// the header that names it) and `entries`.
pub(super) fn pretty_hashing(
    format: u32,
    entries: &[Entry],
    tree_hash: impl FnOnce() -> String,
) -> Vec<u8> {
    let room = header(format, &format!("sha256:{}", "0".repeat(64))).len();
    let mut out = Vec::with_capacity(room + 8 + entries.len() * ENTRY_BYTES);
    out.resize(room, b' ');
    for (i, entry) in entries.iter().enumerate() {
        out.extend_from_slice(if i == 0 { b"\n    {" } else { b",\n    {" });
        fields(&mut out, entry);
        out.extend_from_slice(b"\n    }");
    }
    if !entries.is_empty() {
        out.extend_from_slice(b"\n  ");
    }
    out.extend_from_slice(b"]\n}");
    let header = header(format, &tree_hash());
    if header.len() == room {
        out[..room].copy_from_slice(&header);
        return out;
    }
    let mut whole = header;
    whole.extend_from_slice(&out[room..]);
    whole
}

/// Everything before the first entry.
fn header(format: u32, tree_hash: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(128);
    out.extend_from_slice(b"{\n  \"format\": ");
    number(&mut out, u64::from(format));
    out.extend_from_slice(b",\n  \"tree_hash\": ");
    string(&mut out, tree_hash);
    out.extend_from_slice(b",\n  \"entries\": [");
    out
}

/// The fields of one entry, each on its own line (the first after a newline).
fn fields(out: &mut Vec<u8>, entry: &Entry) {
    let mut first = true;
    let mut key = |out: &mut Vec<u8>, name: &str| {
        out.extend_from_slice(if first { b"\n      \"" } else { b",\n      \"" });
        first = false;
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b"\": ");
    };
    name(out, &mut key, "path", &entry.path);
    key(out, "type");
    out.extend_from_slice(match entry.kind {
        EntryKind::File => b"\"file\"",
        EntryKind::Dir => b"\"dir\"",
        EntryKind::Link => b"\"link\"",
    });
    key(out, "mode");
    number(out, u64::from(entry.mode));
    key(out, "size");
    number(out, entry.size);
    if let Some(digest) = &entry.sha256 {
        key(out, "sha256");
        string(out, digest);
    }
    if let Some(target) = &entry.target {
        name(out, &mut key, "target", target);
    }
}

/// A byte string as `<what>` (UTF-8) or `<what>_hex` (any other bytes).
fn name(out: &mut Vec<u8>, key: &mut impl FnMut(&mut Vec<u8>, &str), what: &str, bytes: &[u8]) {
    if let Ok(text) = std::str::from_utf8(bytes) {
        key(out, what);
        string(out, text);
    } else {
        key(out, &format!("{what}_hex"));
        string(out, &hex(bytes));
    }
}

/// A decimal number.
fn number(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

/// A JSON string as `serde_json` writes it: `"` and `\` escaped, control characters as
/// `\b \t \n \f \r` or `\u00xx` (lowercase), everything else (DEL and non-ASCII too) as is.
/// Eight bytes at a time are passed over while none of them needs escaping (paths and
/// digests seldom do).
fn string(out: &mut Vec<u8>, text: &str) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    out.push(b'"');
    let bytes = text.as_bytes();
    let mut plain = 0;
    let mut at = 0;
    let mut unicode = *b"\\u0000";
    while at < bytes.len() {
        if let Some(word) = bytes.get(at..at + 8)
            && !needs_escape(u64::from_le_bytes(word.try_into().expect("eight bytes")))
        {
            at += 8;
            continue;
        }
        let b = bytes[at];
        at += 1;
        let escape: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            0x08 => b"\\b",
            b'\t' => b"\\t",
            b'\n' => b"\\n",
            0x0c => b"\\f",
            b'\r' => b"\\r",
            0..=0x1f => {
                unicode[4] = DIGITS[usize::from(b >> 4)];
                unicode[5] = DIGITS[usize::from(b & 0xf)];
                &unicode
            }
            _ => continue,
        };
        out.extend_from_slice(&bytes[plain..at - 1]);
        out.extend_from_slice(escape);
        plain = at;
    }
    out.extend_from_slice(&bytes[plain..]);
    out.push(b'"');
}

/// Whether any of the eight bytes of `word` is a control character, `"` or `\`: a byte is
/// "below" a limit of at most 0x80 when subtracting the limit sets its high bit, which it did
/// not have; a borrow into the next byte comes only from a byte that counts itself.
fn needs_escape(word: u64) -> bool {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);
    let below = |limit: u8, w: u64| w.wrapping_sub(ONES * u64::from(limit)) & !w & HIGH;
    let quote = word ^ (ONES * u64::from(b'"'));
    let backslash = word ^ (ONES * u64::from(b'\\'));
    below(0x20, word) | below(1, quote) | below(1, backslash) != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_escaped_as_serde_json_escapes_them() {
        let every_ascii: String = (0u8..128).map(char::from).collect();
        for text in [
            "",
            "plain",
            every_ascii.as_str(),
            "caf\u{e9} \u{1f600} \u{2028}\u{7f}",
            "\"\\\"",
        ] {
            let mut out = Vec::new();
            string(&mut out, text);
            assert_eq!(out, serde_json::to_vec(text).unwrap(), "{text:?}");
        }
    }

    #[test]
    fn a_word_needs_escaping_exactly_when_one_of_its_bytes_does() {
        for filler in [b'a', 0x7f, 0x80, 0xff, b' '] {
            for at in 0..8 {
                for b in 0..=255u8 {
                    let mut word = [filler; 8];
                    word[at] = b;
                    let expected = word.iter().any(|&c| c < 0x20 || c == b'"' || c == b'\\');
                    assert_eq!(needs_escape(u64::from_le_bytes(word)), expected, "{word:?}");
                }
            }
        }
    }

    #[test]
    fn long_strings_are_escaped_as_serde_json_escapes_them() {
        let every_byte: String = (0u8..128)
            .map(char::from)
            .chain("\u{e9}\u{1f600}".chars())
            .collect();
        for len in 0..40 {
            for start in 0..every_byte.len() {
                let text: String = every_byte.chars().cycle().skip(start).take(len).collect();
                let mut out = Vec::new();
                string(&mut out, &text);
                assert_eq!(out, serde_json::to_vec(&text).unwrap(), "{text:?}");
            }
        }
    }

    #[test]
    fn a_header_longer_or_shorter_than_the_room_left_for_it_is_written_whole() {
        let entries = [Entry {
            path: b"a".to_vec(),
            kind: EntryKind::Dir,
            mode: 0o755,
            size: 0,
            sha256: None,
            target: None,
        }];
        for hash in [
            "",
            "sha256:0",
            &format!("sha256:{}", "f".repeat(64)),
            &"x".repeat(200),
        ] {
            let stored = super::super::Stored {
                format: 1,
                tree_hash: hash.to_string(),
                entries: entries
                    .iter()
                    .map(super::super::StoredEntry::from)
                    .collect(),
            };
            let written = pretty_hashing(1, &entries, || hash.to_string());
            assert_eq!(
                written,
                serde_json::to_vec_pretty(&stored).unwrap(),
                "{hash}"
            );
        }
    }

    #[test]
    fn numbers_are_written_as_serde_json_writes_them() {
        for n in [0, 7, 10, 493, 4_294_967_295, u64::MAX] {
            let mut out = Vec::new();
            number(&mut out, n);
            assert_eq!(out, serde_json::to_vec(&n).unwrap());
        }
    }
}
