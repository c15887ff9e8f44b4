//! `zot completions [shell]`: print the shell's registration script, the same bytes as its
//! file in `completions/` (for the shell `$SHELL` names when none is given).

use anyhow::{Context as _, Result};

use super::{Context, Run};
use clap_complete::Shell;

use crate::cli::complete;
use crate::cli::{CompletionsArgs, ShellName};
use crate::error::usage;
use crate::output::printable;

impl Run for CompletionsArgs {
    fn run(&self, ctx: &Context) -> Result<()> {
        let shell = match self.shell {
            Some(shell) => shell,
            None => from_environment()?,
        };
        ctx.out
            .bytes(&complete::registration(shell))
            .context("cannot write the completion script to stdout")
    }
}

/// The shell `$SHELL` names, when no shell is given.
fn from_environment() -> Result<Shell> {
    let named = std::env::var_os("SHELL").unwrap_or_default();
    let named = named.to_string_lossy();
    if named.is_empty() {
        return Err(usage(format!(
            "name the shell (zot completions <shell>): $SHELL is not set; zot completes for {}",
            ShellName::names()
        )));
    }
    ShellName::parse(&named).ok_or_else(|| {
        usage(format!(
            "$SHELL is {}, which zot does not complete for; name one of {} (zot completions <shell>)",
            printable(&named),
            ShellName::names()
        ))
    })
}
