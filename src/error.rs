//! Error kinds that decide the exit code (usage errors exit 2, everything else 1), and
//! errors that carry "did you mean" suggestions, with the closeness rule that picks them.

use std::fmt;

/// A command line that cannot be acted on as given (exit status 2).
#[derive(Debug)]
pub struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// Shorthand for returning a usage error.
pub fn usage(message: impl Into<String>) -> anyhow::Error {
    UsageError(message.into()).into()
}

/// A question the user answered no: nothing was done, which is said as a note, not an
/// error (exit status 1: what was asked for did not happen).
#[derive(Debug)]
pub struct Declined(pub String);

impl fmt::Display for Declined {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Declined {}

/// Shorthand for returning a [`Declined`] answer.
pub fn decline(message: impl Into<String>) -> anyhow::Error {
    Declined(message.into()).into()
}

/// The note of a [`Declined`] answer, if `error` is one.
pub fn declined(error: &anyhow::Error) -> Option<&str> {
    error.downcast_ref::<Declined>().map(|d| d.0.as_str())
}

/// An error that names what was probably meant (`did you mean clock?` is in the message);
/// `--json` prints the names as `suggestions`.
#[derive(Debug)]
pub struct Suggested {
    pub message: String,
    pub suggestions: Vec<String>,
}

impl fmt::Display for Suggested {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Suggested {}

/// The suggestions of the first [`Suggested`] in the error's chain (none if there is none).
pub fn suggestions(error: &anyhow::Error) -> &[String] {
    error
        .chain()
        .find_map(|e| e.downcast_ref::<Suggested>())
        .map_or(&[], |s| &s.suggestions)
}

/// At most this many names are suggested.
const MAX_SUGGESTIONS: usize = 3;

/// The candidates close to `wanted`, closest first (then alphabetically), each once: equal
/// ignoring case, or within an edit distance (Damerau-Levenshtein: a swap of two neighbours
/// counts once) of a third of the longer name, ignoring case.
pub fn closest<'a>(wanted: &str, candidates: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let wanted_lower = wanted.to_lowercase();
    let mut close: Vec<(usize, &str)> = candidates
        .into_iter()
        .filter(|c| *c != wanted)
        .filter_map(|c| {
            let lower = c.to_lowercase();
            let distance = strsim::damerau_levenshtein(&wanted_lower, &lower);
            let longer = wanted_lower.chars().count().max(lower.chars().count());
            (distance * 3 <= longer).then_some((distance, c))
        })
        .collect();
    close.sort_unstable();
    close.dedup_by(|a, b| a.1 == b.1);
    close
        .into_iter()
        .take(MAX_SUGGESTIONS)
        .map(|(_, c)| c.to_owned())
        .collect()
}

/// `did you mean a?`, `did you mean a or b?`, `did you mean a, b or c?`; `None` for no names.
pub fn did_you_mean(names: &[String]) -> Option<String> {
    let (last, rest) = names.split_last()?;
    if rest.is_empty() {
        return Some(format!("did you mean {last}?"));
    }
    Some(format!("did you mean {} or {last}?", rest.join(", ")))
}

/// The exit status for an error: 2 for usage errors, 0 for a closed output pipe, else 1.
pub fn exit_code(error: &anyhow::Error) -> u8 {
    if error
        .chain()
        .any(<dyn std::error::Error + 'static>::is::<UsageError>)
    {
        return 2;
    }
    if is_broken_pipe(error) {
        return 0;
    }
    1
}

/// Whether the error is (or was caused by) writing to a closed pipe.
pub fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|e| {
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes() {
        assert_eq!(exit_code(&usage("x")), 2);
        assert_eq!(exit_code(&usage("x").context("outer")), 2);
        assert_eq!(exit_code(&anyhow::anyhow!("x")), 1);
        let pipe = std::io::Error::from(std::io::ErrorKind::BrokenPipe);
        assert_eq!(exit_code(&anyhow::Error::from(pipe).context("writing")), 0);
    }

    #[test]
    fn closest_names_ignore_case_and_come_closest_first() {
        let installed = ["clock", "clocks", "weather", "CLOCK-2", "x"];
        assert_eq!(closest("CLOCK", installed), ["clock", "clocks", "CLOCK-2"]);
        assert_eq!(closest("clok", installed), ["clock", "clocks"]);
        assert_eq!(closest("wether", installed), ["weather"]);
        assert_eq!(closest("lcock", installed), ["clock", "clocks"]);
        assert!(closest("zzzzz", installed).is_empty());
        assert!(
            closest("y", installed).is_empty(),
            "one letter off is not close"
        );
        assert!(
            closest("clock", ["clock"]).is_empty(),
            "the name itself is no suggestion"
        );
        assert_eq!(closest("ab", ["abc", "abc"]), ["abc"]);
    }

    #[test]
    fn did_you_mean_lists_names() {
        let names = |n: &[&str]| n.iter().map(ToString::to_string).collect::<Vec<_>>();
        assert_eq!(did_you_mean(&[]), None);
        assert_eq!(did_you_mean(&names(&["a"])).unwrap(), "did you mean a?");
        assert_eq!(
            did_you_mean(&names(&["a", "b"])).unwrap(),
            "did you mean a or b?"
        );
        assert_eq!(
            did_you_mean(&names(&["a", "b", "c"])).unwrap(),
            "did you mean a, b or c?"
        );
        let error = anyhow::Error::from(Suggested {
            message: "m".into(),
            suggestions: names(&["a"]),
        });
        assert_eq!(suggestions(&error.context("outer")), ["a"]);
        assert!(suggestions(&anyhow::anyhow!("x")).is_empty());
    }
}
