//! `zot ext logs`: print, tail or follow an extension's log.

use anyhow::Result;

use super::{Context, Run};
use crate::cli::LogsArgs;

impl Run for LogsArgs {
    fn run(&self, _ctx: &Context) -> Result<()> {
        anyhow::bail!("logs: not built yet")
    }
}
