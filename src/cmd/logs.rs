//! `zot ext logs`: print, tail or follow an extension's log.

use std::io;
use std::path::Path;

use anyhow::{Context as _, Result, anyhow};

use super::{Context, Run};
use crate::bounded::{self, ReadError};
use crate::catalog;
use crate::cli::LogsArgs;
use crate::logs::{self, Follower, Notice};

/// Lines `--follow` prints before following when `-n` is not given.
const FOLLOW_LINES: u64 = 10;

impl Run for LogsArgs {
    // The log is raw text: `--json` does not change it.
    fn run(&self, ctx: &Context) -> Result<()> {
        let extension = catalog::find(&ctx.layout, &self.name, None)?;
        let name = extension.name();
        let path = ctx.layout.log_file(name);
        // Never waits: a named pipe, socket or device is refused by every form of `logs`
        // (`--follow` included), as it is no log zot writes and reading it could block
        // forever or never end.
        let log = bounded::open(&path);
        if self.follow {
            // A log that is missing yet is waited for; anything else wrong ends here.
            match log {
                Ok(_) | Err(ReadError::Missing) => {}
                Err(e) => return Err(refusal(name, &path, e)),
            }
            follow(ctx, &path, self.lines.unwrap_or(FOLLOW_LINES))
        } else {
            let mut file = log.map_err(|e| refusal(name, &path, e))?;
            logs::print(&mut file, self.lines, &mut io::stdout().lock())
                .with_context(|| format!("cannot print {}", path.display()))
        }
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
    Follower::new(path.to_path_buf(), io::stdout().lock(), note)
        .run(lines)
        .with_context(|| format!("cannot follow {}", path.display()))
}
