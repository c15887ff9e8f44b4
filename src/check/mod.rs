//! Judging an extension the way zot would treat it: the findings ([`Problem`], [`Level`]),
//! the start of a conversation as zot runs it ([`handshake`]), doctor's checks
//! ([`doctor`]), one request and its answer for `zot ext call` ([`exchange`]), and the build
//! command for a compiled extension that is not built yet ([`build_hint`]), and whether its
//! build or dependency install is needed and has not run ([`prepare_hint`]).

pub(crate) mod build_hint;
pub(crate) mod doctor;
pub(crate) mod exchange;
pub(crate) mod handshake;
pub(crate) mod prepare_hint;

use std::fs;

use serde::Serialize;

use crate::catalog::manifest::Manifest;
use crate::catalog::target::Target;
use crate::host::{ExecError, Launch};

/// The program zot would start for `target`, or why it cannot (for a compiled extension not
/// built yet, the fix is the command that builds it).
pub(crate) fn launch(target: &Target, manifest: &Manifest) -> Result<Launch, ExecError> {
    let place = prepare_hint::place_of(target, manifest);
    let program = build_hint::resolve(&target.dir, manifest, place)?;
    Ok(Launch {
        program,
        args: manifest.args.clone(),
        dir: fs::canonicalize(&target.dir).unwrap_or_else(|_| target.dir.clone()),
    })
}

/// How serious a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Level {
    Error,
    Warning,
    /// Worth knowing, but nothing to fix (`--strict` ignores it).
    Note,
}

/// A finding about an extension and how to fix it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Problem {
    #[serde(skip)]
    pub level: Level,
    pub message: String,
    pub fix: Option<String>,
    /// A finding about timing (a hello after a second, a registration or `ready` after zot
    /// stopped waiting), which the machine's load can cause as well as the extension.
    #[serde(skip)]
    pub timed: bool,
}

impl Problem {
    pub(crate) fn error(message: impl Into<String>, fix: impl Into<String>) -> Problem {
        Problem {
            level: Level::Error,
            message: message.into(),
            fix: Some(fix.into()).filter(|f: &String| !f.is_empty()),
            timed: false,
        }
    }

    /// This finding, marked as one about timing (see [`Problem::timed`]).
    #[must_use]
    pub(crate) fn about_timing(self) -> Problem {
        Problem {
            timed: true,
            ..self
        }
    }

    pub(crate) fn warning(message: impl Into<String>, fix: impl Into<String>) -> Problem {
        Problem {
            level: Level::Warning,
            ..Problem::error(message, fix)
        }
    }

    pub(crate) fn note(message: impl Into<String>, fix: impl Into<String>) -> Problem {
        Problem {
            level: Level::Note,
            ..Problem::error(message, fix)
        }
    }
}
