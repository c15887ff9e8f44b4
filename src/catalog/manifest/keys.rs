//! The fields of zot's manifest struct and how Go's decoder matches a JSON key to one.

/// The fields zot's manifest struct has, spelled as documented.
pub(crate) const FIELDS: [&str; 7] = [
    "name",
    "version",
    "exec",
    "args",
    "language",
    "enabled",
    "description",
];

/// Whether JSON key `key` sets the field spelled `field` (lowercase ASCII) in Go's decoder:
/// the same name under Unicode simple case folding.
pub fn key_matches(key: &str, field: &str) -> bool {
    let mut key = key.chars().map(|c| match c {
        '\u{17f}' => 's',  // ſ folds with s
        '\u{212a}' => 'k', // the Kelvin sign folds with k
        c => c.to_ascii_lowercase(),
    });
    let mut field = field.chars();
    loop {
        match (key.next(), field.next()) {
            (None, None) => return true,
            (Some(a), Some(b)) if a == b => {}
            _ => return false,
        }
    }
}
