//! `zot completions <shell>`: print the shell's registration script, the same bytes as its
//! file in `completions/`.

use anyhow::{Context as _, Result};

use super::{Context, Run};
use crate::cli::CompletionsArgs;
use crate::cli::complete;

impl Run for CompletionsArgs {
    fn run(&self, ctx: &Context) -> Result<()> {
        ctx.out
            .bytes(&complete::registration(self.shell))
            .context("cannot write the completion script to stdout")
    }
}
