//! Error kinds that decide the exit code: usage errors exit 2, everything else 1.

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
}
