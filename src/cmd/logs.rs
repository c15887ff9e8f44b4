//! `zot ext logs`: print, tail or follow an extension's log: an installed extension's, or
//! any name's whose log file exists (an extension loaded with `zot --ext` has a log but is
//! not installed). The name must be a single safe file-name component.

use std::path::Path;

use anyhow::{Context as _, Result, anyhow};

use super::{Context, Run};
use crate::catalog;
use crate::catalog::manifest;
use crate::cli::LogsArgs;
use crate::error::{self, usage};
use crate::fsx::bounded::{self, ReadError};
use crate::logs::{self, Follower, Notice};

/// Lines `--follow` prints before following when `-n` is not given.
const FOLLOW_LINES: u64 = 10;

impl Run for LogsArgs {
    // The log is raw text: `--json` does not change it.
    fn run(&self, ctx: &Context) -> Result<()> {
        check_log_name(&self.name)?;
        let found = catalog::find(&ctx.layout, &self.name, None);
        let suggestions = found.as_ref().err().map(error::suggestions);
        let suggestions = suggestions.unwrap_or_default().to_vec();
        let installed = found.ok();
        if let Some(note) = installed
            .as_ref()
            .and_then(super::super::catalog::Installed::twin_note)
        {
            ctx.out.note(&note);
        }
        let name = installed.as_ref().map_or(self.name.as_str(), |e| e.name());
        check_log_name(name)?;
        let path = ctx.layout.log_file(name);
        // Never waits: a named pipe, socket or device is refused by every form of `logs`
        // (`--follow` included), as it is no log zot writes and reading it could block
        // forever or never end.
        let log = bounded::open(&path);
        if installed.is_none() && matches!(log, Err(ReadError::Missing)) {
            let hint = error::did_you_mean(&suggestions)
                .unwrap_or_else(|| "`zot ext list` shows what is installed".to_owned());
            let message = format!(
                "no extension named \"{name}\" is installed and it has no log: {} does not exist; {hint}",
                path.display()
            );
            return Err(error::Suggested {
                message,
                suggestions,
            }
            .into());
        }
        if self.follow {
            // A log that is missing yet is waited for; anything else wrong ends here.
            match log {
                Ok(_) | Err(ReadError::Missing) => {}
                Err(e) => return Err(refusal(name, &path, e)),
            }
            follow(ctx, &path, self.lines.unwrap_or(FOLLOW_LINES))
        } else {
            let mut file = log.map_err(|e| refusal(name, &path, e))?;
            logs::print(&mut file, self.lines, &mut ctx.out.stream())
                .with_context(|| format!("cannot print {}", path.display()))
        }
    }
}

/// Refuses a name that is not one safe file-name component, so that the log path cannot
/// leave the logs folder: no `/`, `\`, NUL or control characters, not `.` or `..`, and short
/// enough for its log file name.
fn check_log_name(name: &str) -> Result<()> {
    let problem = if name.is_empty() {
        Some("is empty")
    } else if name == "." || name == ".." {
        Some("is not a name")
    } else if name.contains(['/', '\\']) {
        Some("contains a path separator")
    } else if name.chars().any(char::is_control) {
        Some("contains a control character")
    } else if name.len() > manifest::MAX_NAME_LEN {
        Some("is too long for a log file name")
    } else {
        None
    };
    match problem {
        None => Ok(()),
        Some(problem) => Err(usage(format!(
            "\"{name}\" {problem}; give the extension's name, as `zot ext list` shows it"
        ))),
    }
}

/// Why the log at `path` cannot be shown, with what to do.
fn refusal(name: &str, path: &Path, e: ReadError) -> anyhow::Error {
    let shown = path.display();
    match e {
        ReadError::Missing => anyhow!(
            "no log yet for \"{name}\": {shown} does not exist; it is written when zot starts the extension"
        ),
        ReadError::Io(e) => anyhow!("cannot open {shown}: {e}"),
        other => anyhow!(
            "{shown} {other}; zot writes an extension's log as a regular file: remove it, and zot creates a new log when it next starts \"{name}\""
        ),
    }
}

/// Prints the last `lines` lines, then everything appended, until killed or stdout closes.
fn follow(ctx: &Context, path: &Path, lines: u64) -> Result<()> {
    let note = |notice: Notice<'_>| ctx.out.note(&format!("zot: {notice}"));
    Follower::new(path.to_path_buf(), ctx.out.stream(), note)
        .run(lines)
        .with_context(|| format!("cannot follow {}", path.display()))
}
