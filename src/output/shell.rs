//! Command lines printed for the user to run: each word quoted so sh reads it back as it is.

/// `word` as sh reads it back: as-is when it has only safe characters, else in single
/// quotes (a quote inside written as `'\''`).
pub fn sh_quote(word: &str) -> String {
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
        assert_eq!(sh_quote("/a/b-c_1.2"), "/a/b-c_1.2");
        assert_eq!(sh_quote("a b"), "'a b'");
        assert_eq!(sh_quote("Bad Name!"), "'Bad Name!'");
        assert_eq!(sh_quote("it's"), r"'it'\''s'");
        assert_eq!(sh_quote("$x"), "'$x'");
        assert_eq!(sh_quote(""), "''");
    }
}
