//! `zot ext link`: register a working copy as an extension through a symbolic link.

use std::path::Path;

use anyhow::{Context as _, Result, bail};
use serde::Serialize;

use super::{Context, Run};
use crate::cli::LinkArgs;
use crate::fetch::check_local_source;
use crate::manifest;
use crate::paths::Scope;
use crate::record::{Kind, Record};
use crate::store::Store;

#[derive(Debug, Serialize)]
struct Linked<'a> {
    name: &'a str,
    scope: Scope,
    dir: String,
    target: String,
    replaced: bool,
}

impl Run for LinkArgs {
    fn run(&self, ctx: &Context) -> Result<()> {
        let scope = if self.project {
            Scope::Project
        } else {
            Scope::Global
        };
        let dirs = ctx.layout.scope(scope);
        let target = check_local_source(&self.path, dirs)?;
        let manifest = manifest::read(&target)?;
        let name = &manifest.name;
        let store = Store::open(dirs)?;
        let existing = store.existing(name).is_some();
        if existing && !self.force {
            bail!(
                "extension \"{name}\" is already installed at {}; pass --force to replace it with the link",
                dirs.extension(name).display()
            );
        }
        let staging = store.stage()?;
        symlink_dir(&target, &staging.tree())
            .with_context(|| format!("cannot create a link to {}", target.display()))?;
        let dest = store.place(&staging, name, self.force)?;
        let record = Record::new(name, target.display().to_string(), Kind::Link);
        if let Err(e) = record.save(dirs) {
            ctx.out.warn(&format!(
                "linked, but the install record was not saved: {e:#}"
            ));
        }
        if ctx.out.json {
            return Ok(ctx.out.json(&Linked {
                name,
                scope,
                dir: dest.display().to_string(),
                target: target.display().to_string(),
                replaced: existing,
            })?);
        }
        ctx.out.say(&format!(
            "linked {name} ({scope}): {} -> {}",
            dest.display(),
            target.display()
        ))?;
        Ok(())
    }
}

#[cfg(unix)]
fn symlink_dir(target: &Path, link: &Path) -> std::io::Result<()> {
    std::os::unix::fs::symlink(target, link)
}

#[cfg(windows)]
fn symlink_dir(target: &Path, link: &Path) -> std::io::Result<()> {
    std::os::windows::fs::symlink_dir(target, link)
}
