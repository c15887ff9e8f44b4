//! `zot ext enable` and `zot ext disable`: rewrite only the manifest's `enabled` field,
//! under the store's lock, never through a link.

use anyhow::Result;
use serde::Serialize;

use super::{Context, Run};
use crate::catalog;
use crate::catalog::manifest;
use crate::catalog::paths::Scope;
use crate::cli::{DisableArgs, EnableArgs, ScopeSelect};
use crate::store::Store;

/// Enable (`enable: true`) or disable the extension `name`.
struct Toggle<'a> {
    name: &'a str,
    scope: ScopeSelect,
    enable: bool,
}

impl Run for EnableArgs {
    fn run(&self, ctx: &Context) -> Result<()> {
        let toggle = Toggle {
            name: &self.name,
            scope: self.scope,
            enable: true,
        };
        toggle.run(ctx)
    }
}

impl Run for DisableArgs {
    fn run(&self, ctx: &Context) -> Result<()> {
        let toggle = Toggle {
            name: &self.name,
            scope: self.scope,
            enable: false,
        };
        toggle.run(ctx)
    }
}

#[derive(Debug, Serialize)]
struct Toggled<'a> {
    name: &'a str,
    scope: Scope,
    dir: String,
    enabled: bool,
    changed: bool,
}

impl Run for Toggle<'_> {
    fn run(&self, ctx: &Context) -> Result<()> {
        let verb = if self.enable { "enable" } else { "disable" };
        let target = super::named::find_to_change(ctx, self.name, self.scope.scope(), verb)?;
        if let Some(note) = target.twin_note() {
            ctx.out.note(&note);
        }
        // The manifest is judged only under the lock: read before it, a folder another
        // command is moving away reads as one without its manifest.
        let store = Store::open(ctx.layout.scope(target.scope))?;
        // What this run found may have changed while it waited for the lock.
        let Ok(target) = catalog::find(&ctx.layout, self.name, Some(target.scope)) else {
            return Err(store.gone_meanwhile(target.name()));
        };
        if let Err(e) = &target.manifest {
            anyhow::bail!("{e}; fix the manifest first");
        }
        let changed = manifest::set_enabled(&target.dir, self.enable, store.scratch_folder())?;
        if ctx.out.json {
            return Ok(ctx.out.json(&Toggled {
                name: target.name(),
                scope: target.scope,
                dir: target.dir.display().to_string(),
                enabled: self.enable,
                changed,
            })?);
        }
        let state = if self.enable { "enabled" } else { "disabled" };
        let message = if changed {
            format!("{state} {} ({})", target.name(), target.scope)
        } else {
            format!("{} ({}) is already {state}", target.name(), target.scope)
        };
        ctx.out.say(&message)?;
        if changed {
            ctx.out.note("restart zot for the change to take effect");
        }
        Ok(())
    }
}
