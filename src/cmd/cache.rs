//! `zot ext cache clean`: empty the fetch cache ([`crate::source::git::cache`]).

use anyhow::Result;
use serde::Serialize;

use super::{Context, Run};
use crate::cli::{CacheArgs, CacheCommand};
use crate::fsx::bounded::human_size;
use crate::output::printable;
use crate::source::git::cache::Cache;

/// `zot ext cache clean --json` output.
#[derive(Debug, Serialize)]
struct Cleaned {
    /// The cache folder.
    dir: String,
    /// Cached commits deleted.
    entries: u64,
    /// Bytes freed (files an installed extension still shares are not counted).
    bytes: u64,
}

impl Run for CacheArgs {
    fn run(&self, ctx: &Context) -> Result<()> {
        match self.command {
            CacheCommand::Clean => clean(ctx),
        }
    }
}

fn clean(ctx: &Context) -> Result<()> {
    let cache = Cache::open(&ctx.layout)?;
    let stats = cache.clean()?;
    let dir = cache.path();
    if ctx.out.json {
        return Ok(ctx.out.json(&Cleaned {
            dir: dir.display().to_string(),
            entries: stats.entries,
            bytes: stats.bytes,
        })?);
    }
    let commits = if stats.entries == 1 {
        "commit"
    } else {
        "commits"
    };
    ctx.out.say(&format!(
        "cleaned {}: {} cached {commits}, {} freed",
        printable(&dir.display().to_string()),
        stats.entries,
        human_size(stats.bytes)
    ))?;
    Ok(())
}
