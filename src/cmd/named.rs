//! The installed extensions a command that takes names or `--all` works on (`update`,
//! `prepare`): each named one once, or every installed one.

use anyhow::Result;

use super::Context;
use crate::catalog::{self, Installed};
use crate::cli::ScopeSelect;
use crate::error::usage;

/// The extensions `names` find in `scope` (each folder once: `update clock clock`, or a name
/// and its folder name), or with `all` every installed one; `verb` names the command in
/// the usage error and the note for an empty store.
pub(super) fn named_or_all(
    ctx: &Context,
    names: &[String],
    all: bool,
    scope: ScopeSelect,
    verb: &str,
) -> Result<Vec<Installed>> {
    if names.is_empty() && !all {
        return Err(usage(format!(
            "name the extensions to {verb}, or pass --all"
        )));
    }
    if all {
        let all = catalog::scan(&ctx.layout, &scope.scopes())?;
        if all.is_empty() {
            ctx.out
                .note(&format!("no extensions installed; nothing to {verb}"));
        }
        return Ok(all);
    }
    let mut found: Vec<Installed> = Vec::new();
    for name in names {
        let target = catalog::find(&ctx.layout, name, scope.scope())?;
        if !found.iter().any(|f| f.dir == target.dir) {
            found.push(target);
        }
    }
    Ok(found)
}
