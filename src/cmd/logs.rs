//! `zot ext logs`: print, tail or follow an extension's log.

use std::fs::File;
use std::io;
use std::path::Path;

use anyhow::{Context as _, Result, bail};

use super::{Context, Run};
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
        if self.follow {
            follow(ctx, &path, self.lines.unwrap_or(FOLLOW_LINES))
        } else {
            print(name, &path, self.lines)
        }
    }
}

/// Prints the whole log, or its last `lines` lines.
fn print(name: &str, path: &Path, lines: Option<u64>) -> Result<()> {
    let mut file = open(name, path)?;
    logs::print(&mut file, lines, &mut io::stdout().lock())
        .with_context(|| format!("cannot print {}", path.display()))
}

fn open(name: &str, path: &Path) -> Result<File> {
    match File::open(path) {
        Ok(file) => Ok(file),
        Err(e) if e.kind() == io::ErrorKind::NotFound => bail!(
            "no log yet for \"{name}\": {} does not exist; it is written when zot starts the extension",
            path.display()
        ),
        Err(e) => bail!("cannot open {}: {e}", path.display()),
    }
}

/// Prints the last `lines` lines, then everything appended, until killed or stdout closes.
fn follow(ctx: &Context, path: &Path, lines: u64) -> Result<()> {
    let note = |notice: Notice<'_>| ctx.out.note(&format!("zot: {notice}"));
    Follower::new(path.to_path_buf(), io::stdout().lock(), note)
        .run(lines)
        .with_context(|| format!("cannot follow {}", path.display()))
}
