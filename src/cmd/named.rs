//! The installed extensions a command that takes names or `--all` works on (`update`,
//! `prepare`, `enable`, `disable`, `remove`): each named one once, or every installed one;
//! from a subfolder of a project, a name the project above has is not quietly taken for
//! the global copy.

use anyhow::{Result, bail};

use super::Context;
use crate::catalog::paths::Scope;
use crate::catalog::{self, Installed};
use crate::cli::ScopeSelect;
use crate::error::usage;
use crate::output::printable;
use crate::project;
use crate::store::Store;
use crate::store::record::Record;

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
        let target = find_to_change(ctx, name, scope.scope(), verb)?;
        if !found.iter().any(|f| f.dir == target.dir) {
            found.push(target);
        }
    }
    Ok(found)
}

/// The installed extension `name` for a command that changes it (`verb`), in `scope` when
/// given. From a subfolder of a project whose project file or extensions folder has the
/// name, the global copy is taken only with `--global` (exit 2 otherwise: zot started here
/// loads the global copy, but the user most likely meant the project's), and a name not
/// found in the subfolder's own project scope says where the project is.
pub(super) fn find_to_change(
    ctx: &Context,
    name: &str,
    scope: Option<Scope>,
    verb: &str,
) -> Result<Installed> {
    let above = || project::project_above(&ctx.layout);
    let found = match catalog::find(&ctx.layout, name, scope) {
        Err(e) if scope == Some(Scope::Project) => {
            return match above() {
                Some(above) if project::has_any(&above, &[name]) => Err(anyhow::anyhow!(
                    "{name} is not in this folder's project scope; {}",
                    project::run_from_above(
                        &project::Where::of(&ctx.layout, Scope::Project).root,
                        &above
                    )
                )),
                _ => Err(e),
            };
        }
        found => found?,
    };
    if let Some(above) = project_copy_above(ctx, name, scope, &found) {
        return Err(usage(format!(
            "{name} here is the global copy, but the project in {} has its own {name} (this folder is inside that project, and zot loads project extensions from the current folder only); pass --global to {verb} the global copy, or {verb} the project's from there (cd {})",
            crate::output::printable(&above.display().to_string()),
            crate::output::sh_quote(&above.display().to_string())
        )));
    }
    Ok(found)
}

/// The root of the project above the working folder when `name`, looked up with no scope
/// given, was `found` in the global scope though that project has its own `name`.
pub(super) fn project_copy_above(
    ctx: &Context,
    name: &str,
    scope: Option<Scope>,
    found: &Installed,
) -> Option<std::path::PathBuf> {
    if scope.is_some() || found.scope != Scope::Global {
        return None;
    }
    let above = project::project_above(&ctx.layout)?;
    project::has_any(&above, &[name, found.name(), &found.dir_name]).then_some(above)
}

/// After the lock is taken: the extension must still be the one `record` described when
/// this run looked, or another command changed it meanwhile (or while this one waited for
/// the lock); `again` ends the message with what to run.
pub(super) fn recheck(
    store: &Store,
    target: &Installed,
    record: &Record,
    again: &str,
) -> Result<()> {
    if store.existing(target.folder_name()).is_none() {
        return Err(store.gone_meanwhile(target.name()));
    }
    if Record::load(&store.dirs, &target.dir_name).as_ref() != Some(record) {
        let when = if store.waited() {
            "while this one waited for the lock"
        } else {
            "meanwhile"
        };
        bail!(
            "\"{}\" was changed by another zot ext command {when}; nothing was changed; {again}",
            printable(target.name())
        );
    }
    Ok(())
}
