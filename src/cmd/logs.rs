//! `zot ext logs`: print, tail or follow an extension's log: an installed extension's, or
//! any name's whose log file exists (an extension loaded with `zot --ext` has a log but is
//! not installed). The name must be a single safe file-name component. With `--json`, each
//! line is one JSON document of its own (`{"schema_version":1,"line":"..."}`), also with
//! `-n` and `--follow`.

use std::io::{self, Write};
use std::path::Path;

use anyhow::{Context as _, Result, anyhow};

use super::{Context, Run};
use crate::catalog::manifest;
use crate::catalog::{self, Named};
use crate::cli::LogsArgs;
use crate::error::{self, usage};
use crate::fsx::bounded::{self, ReadError};
use crate::logs::{self, Follower, Notice};
use crate::output::Output;
use crate::protocol::zot;

/// Lines `--follow` prints before following when `-n` is not given.
const FOLLOW_LINES: u64 = 10;

impl Run for LogsArgs {
    fn run(&self, ctx: &Context) -> Result<()> {
        check_log_name(&self.name)?;
        // Only a folder of this name can make it mean another name (its manifest's); the
        // store is scanned only for that, or when there is no log to show.
        let rules = zot::newest().discovery;
        let installed = match catalog::named_folder(&ctx.layout, &self.name, None, rules) {
            Named::Found(found) => Some(*found),
            Named::Absent => None,
            Named::Unsure => catalog::find(&ctx.layout, &self.name, None).ok(),
        };
        let name = installed.as_ref().map_or(self.name.as_str(), |e| e.name());
        check_log_name(name)?;
        let path = ctx.layout.log_file(name);
        // Never waits: a named pipe, socket or device is refused by every form of `logs`
        // (`--follow` included), as it is no log zot writes and reading it could block
        // forever or never end.
        let log = bounded::open(&path);
        if installed.is_none() && matches!(log, Err(ReadError::Missing)) {
            // Installed under another folder name, or not at all.
            if let Err(e) = catalog::find(&ctx.layout, &self.name, None) {
                return Err(not_installed(name, &path, &e));
            }
        }
        if self.follow {
            // A log that is missing yet is waited for; anything else wrong ends here.
            match log {
                Ok(_) | Err(ReadError::Missing) => {}
                Err(e) => return Err(refusal(name, &path, e)),
            }
            follow(ctx, &path, self.lines.unwrap_or(FOLLOW_LINES))
        } else {
            let file = log.map_err(|e| refusal(name, &path, e))?;
            let mut out = Lines::new(&ctx.out);
            let printed = if let Lines::Raw(stdout) = &mut out {
                logs::print_to_stdout(&file, self.lines, stdout)
            } else {
                logs::print(&file, self.lines, &mut out).and_then(|()| out.finish())
            };
            printed.with_context(|| format!("cannot print {}", path.display()))
        }
    }
}

/// A name that is neither installed nor has a log, with the installed names close to it.
fn not_installed(name: &str, path: &Path, found: &anyhow::Error) -> anyhow::Error {
    let suggestions = error::suggestions(found).to_vec();
    let hint = error::did_you_mean(&suggestions)
        .unwrap_or_else(|| "`zot ext list` shows what is installed".to_owned());
    let message = format!(
        "no extension named \"{name}\" is installed and it has no log: {} does not exist; {hint}",
        path.display()
    );
    error::Suggested {
        message,
        suggestions,
    }
    .into()
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
    Follower::new(path.to_path_buf(), Lines::new(&ctx.out), note)
        .run(lines)
        .with_context(|| format!("cannot follow {}", path.display()))
}

/// The longest piece of a line kept waiting for its newline with `--json`; a longer line is
/// printed in pieces of this size, so a log without newlines cannot fill memory.
const MAX_LINE: usize = 1 << 20;

/// Where log bytes go: stdout as they are, or with `--json` one `{"line": ...}` document per
/// complete line (invalid UTF-8 replaced, the `\n` left out; a last line without one is
/// printed by [`Lines::finish`], or when followed, once its newline arrives).
enum Lines<'a> {
    Raw(io::StdoutLock<'static>),
    Json {
        out: &'a Output,
        stdout: io::StdoutLock<'static>,
        pending: Vec<u8>,
    },
}

#[derive(serde::Serialize)]
struct Line<'a> {
    line: &'a str,
}

impl<'a> Lines<'a> {
    fn new(out: &'a Output) -> Self {
        if out.json {
            Lines::Json {
                out,
                stdout: out.stream(),
                pending: Vec::new(),
            }
        } else {
            Lines::Raw(out.stream())
        }
    }

    /// Prints a last line that has no newline.
    fn finish(&mut self) -> io::Result<()> {
        if let Lines::Json {
            out,
            stdout,
            pending,
        } = self
            && !pending.is_empty()
        {
            let line = std::mem::take(pending);
            out.json_line(
                stdout,
                &Line {
                    line: &String::from_utf8_lossy(&line),
                },
            )?;
        }
        self.flush()
    }
}

impl Write for Lines<'_> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        match self {
            Lines::Raw(stdout) => stdout.write(bytes),
            Lines::Json {
                out,
                stdout,
                pending,
            } => {
                pending.extend_from_slice(bytes);
                print_lines(out, stdout, pending)?;
                Ok(bytes.len())
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Lines::Raw(stdout) | Lines::Json { stdout, .. } => stdout.flush(),
        }
    }
}

/// Prints the complete lines at the start of `pending` as JSON, and pieces of
/// [`MAX_LINE`] bytes of a longer one; keeps the rest.
fn print_lines(out: &Output, stdout: &mut impl Write, pending: &mut Vec<u8>) -> io::Result<()> {
    let mut start = 0;
    while let Some(end) = pending[start..].iter().position(|&b| b == b'\n') {
        let line = String::from_utf8_lossy(&pending[start..start + end]);
        out.json_line(stdout, &Line { line: &line })?;
        start += end + 1;
    }
    pending.drain(..start);
    while pending.len() >= MAX_LINE {
        let piece: Vec<u8> = pending.drain(..MAX_LINE).collect();
        out.json_line(
            stdout,
            &Line {
                line: &String::from_utf8_lossy(&piece),
            },
        )?;
    }
    Ok(())
}
