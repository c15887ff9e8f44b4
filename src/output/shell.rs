//! Words written into a command line the user may copy into sh: quoted so that sh reads
//! them back as they are.

/// `word` as sh reads it back: as-is when it has only safe characters, else in single
/// quotes (a quote inside written as `'\''`).
pub(crate) fn quote(word: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "_./,:=@%+-".contains(c);
    if !word.is_empty() && word.chars().all(safe) {
        return word.to_string();
    }
    format!("'{}'", word.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_quoted_for_sh() {
        assert_eq!(quote("/a/b-c_1.2"), "/a/b-c_1.2");
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(quote("$x"), "'$x'");
        assert_eq!(quote(""), "''");
    }
}
