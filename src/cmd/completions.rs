//! `zot completions <shell>`: print the shell's registration script, the same bytes as its
//! file in `completions/`.

use std::io::Write;

use anyhow::{Context as _, Result};

use super::{Context, Run};
use crate::cli::CompletionsArgs;
use crate::complete;

impl Run for CompletionsArgs {
    fn run(&self, _ctx: &Context) -> Result<()> {
        let mut stdout = std::io::stdout().lock();
        stdout
            .write_all(&complete::registration(self.shell))
            .and_then(|()| stdout.flush())
            .context("cannot write the completion script to stdout")
    }
}
