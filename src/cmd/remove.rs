//! `zot ext remove`: confirm (only at a terminal), then move the extension out and delete it.

use std::io::{self, BufRead, IsTerminal, Write};

use anyhow::{Result, bail};
use serde::Serialize;

use super::{Context, Run};
use crate::catalog;
use crate::cli::RemoveArgs;
use crate::error::usage;
use crate::output::clean;
use crate::paths::Scope;
use crate::store::Store;

#[derive(Debug, Serialize)]
struct Removed<'a> {
    name: &'a str,
    scope: Scope,
    dir: String,
    linked: bool,
}

impl Run for RemoveArgs {
    fn run(&self, ctx: &Context) -> Result<()> {
        let target = catalog::find(&ctx.layout, &self.name, self.scope.scope())?;
        let what = format!(
            "{} ({}) at {}",
            target.name(),
            target.scope,
            target.dir.display()
        );
        if !self.yes {
            if !io::stdin().is_terminal() {
                return Err(usage(format!(
                    "not removing {what}: stdin is not a terminal, so there is no one to confirm; pass --yes to remove it"
                )));
            }
            if !confirm(&format!("remove {what}? [y/N] "))? {
                bail!("nothing was removed (the answer was not yes)");
            }
        }
        let store = Store::open(ctx.layout.scope(target.scope))?;
        store.remove(target.folder_name())?;
        let linked = target.link_target.is_some();
        if ctx.out.json {
            return Ok(ctx.out.json(&Removed {
                name: target.name(),
                scope: target.scope,
                dir: target.dir.display().to_string(),
                linked,
            })?);
        }
        let what = if linked { "unlinked" } else { "removed" };
        ctx.out.say(&format!(
            "{what} {} ({}) from {}",
            target.name(),
            target.scope,
            target.dir.display()
        ))?;
        if let Ok(other) = catalog::find(&ctx.layout, target.name(), None) {
            ctx.out.note(&format!(
                "note: the {} copy in {} is still installed",
                other.scope,
                other.dir.display()
            ));
        }
        Ok(())
    }
}

/// Asks on stderr (escaped, as it names a folder) and reads one line from the terminal;
/// only "y" or "yes" agree.
fn confirm(question: &str) -> Result<bool> {
    let mut err = io::stderr().lock();
    write!(err, "{}", clean(question))?;
    err.flush()?;
    let mut answer = String::new();
    io::stdin().lock().read_line(&mut answer)?;
    Ok(matches!(
        answer.trim().to_ascii_lowercase().as_str(),
        "y" | "yes"
    ))
}
