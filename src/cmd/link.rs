//! `zot ext link`: register a working copy as an extension through a symbolic link. The
//! working copy is never built or given its dependencies here: when its files call for a
//! step that has not run, the command to run there is printed.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};
use serde::Serialize;

use super::{Context, Run};
use crate::agent::{self, AgentVersion};
use crate::catalog::manifest;
use crate::catalog::paths::Scope;
use crate::catalog::paths::ScopeDirs;
use crate::check::prepare_hint;
use crate::cli::LinkArgs;
use crate::install::Ready;
use crate::output::sh_quote;
use crate::protocol::zot;
use crate::source::folder::{canonical_or_absolute, split_at_folder};
use crate::store::Store;
use crate::store::filelist::FileList;
use crate::store::record::{Kind, Record};

#[derive(Debug, Serialize)]
struct Linked<'a> {
    name: &'a str,
    scope: Scope,
    dir: String,
    target: String,
    replaced: bool,
    /// The build or dependency install to run in the working copy, when its files call for
    /// one that has not run (zot ext never runs it there).
    prepare: Option<String>,
}

impl Run for LinkArgs {
    fn run(&self, ctx: &Context) -> Result<()> {
        let scope = self.scope.scope().unwrap_or(Scope::Global);
        let dirs = ctx.layout.scope(scope);
        let target = link_target(&self.path, dirs)?;
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
        std::os::unix::fs::symlink(&target, staging.tree())
            .with_context(|| format!("cannot create a link to {}", target.display()))?;
        let record = Record::new(name, target.display().to_string(), Kind::Link);
        let ready = Ready::written(
            staging,
            manifest.clone(),
            record,
            FileList::default(),
            self.force,
        );
        let placed = ready.place(&store)?;
        let dest = placed.dest;
        if let Some(e) = placed.record_error {
            ctx.out.warn(&format!(
                "linked, but the install record was not saved: {e:#}; the next zot ext command saves it"
            ));
        }
        let prepare = prepare_hint::missing_step(&target, &manifest)
            .map(|what| (what, prepare_hint::in_working_copy(&target, &manifest)));
        if ctx.out.json {
            warn_old_hosts(ctx, name, scope, &target);
            return Ok(ctx.out.json(&Linked {
                name,
                scope,
                dir: dest.display().to_string(),
                target: target.display().to_string(),
                replaced: existing,
                prepare: prepare.and_then(|(_, command)| command),
            })?);
        }
        ctx.out.say(&format!(
            "linked {name} ({scope}): {} -> {}",
            dest.display(),
            target.display()
        ))?;
        warn_old_hosts(ctx, name, scope, &target);
        if let Some((what, command)) = prepare {
            let run = command.map_or_else(
                || "build it there as its README says".to_string(),
                |c| format!("run there: {c}"),
            );
            ctx.out.note(&format!(
                "note: {what}; zot ext never builds in a working copy: {run}"
            ));
        }
        Ok(())
    }
}

/// Whether the zot agent here loads linked folders: no for zot 0.1.62 and earlier; yes for
/// a newer one, and without one (there is no zot to judge for).
pub(crate) fn agent_loads_links() -> bool {
    old_agent().is_none()
}

/// The zot agent here and its version, when it is a zot that skips linked folders.
fn old_agent() -> Option<(PathBuf, String)> {
    let AgentVersion::Reported { agent, version } = agent::agent_version() else {
        return None;
    };
    let follows = zot::facts_for(&version)
        .facts
        .discovery
        .follows_linked_folders;
    (!follows).then_some((agent, version))
}

/// zot 0.1.62 and earlier skip linked folders: a warning when the agent here is such a zot,
/// and nothing otherwise (a newer agent follows the link; without one there is no zot to
/// judge for, and `doctor --zot-version` tells).
fn warn_old_hosts(ctx: &Context, name: &str, scope: Scope, target: &Path) {
    let Some((agent, version)) = old_agent() else {
        return;
    };
    let project = if scope == Scope::Project {
        " --project"
    } else {
        ""
    };
    ctx.out.warn(&format!(
        "the zot agent {} is zot {version}, which does not load linked extension folders, so it will not start {name}; install a copy instead: zot ext install --force{project} {}",
        agent.display(),
        sh_quote(&target.display().to_string())
    ));
}

/// The working copy to link to, canonical. A folder inside the extensions root is refused
/// (it would link to itself), and so is one that holds the root (`zot ext link . --project`
/// in the working copy): the link would lead back into the folder that holds it, a loop for
/// anything that walks the tree. A project may still link an extension kept in a subfolder.
fn link_target(path: &Path, dirs: &ScopeDirs) -> Result<PathBuf> {
    let target = std::fs::canonicalize(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => match path.to_str().and_then(split_at_folder) {
            Some((folder, sub)) => anyhow::anyhow!(
                "{} does not exist; link takes the extension's own folder, not folder#path: zot ext link {}",
                path.display(),
                sh_quote(&Path::new(folder).join(sub).display().to_string())
            ),
            None => anyhow::anyhow!(
                "{} does not exist; give the folder of an extension's working copy",
                path.display()
            ),
        },
        _ => anyhow::anyhow!("cannot resolve {}: {e}", path.display()),
    })?;
    if !target.is_dir() {
        let kind = std::fs::metadata(&target)
            .map_or("a file", |m| crate::fsx::bounded::kind_name(m.file_type()));
        bail!("{} is {kind}, not a folder", path.display());
    }
    let root = canonical_or_absolute(&dirs.extensions());
    if target.starts_with(&root) {
        bail!(
            "{} is inside the extensions folder {}; link a working copy outside it",
            path.display(),
            root.display()
        );
    }
    if root.starts_with(&target) {
        bail!("{}", holds_the_root(path, &target, &root, dirs.scope));
    }
    Ok(target)
}

/// The refusal for a working copy that holds the extensions root it would be linked into.
fn holds_the_root(path: &Path, target: &Path, root: &Path, scope: Scope) -> String {
    let fix = match scope {
        Scope::Project => format!(
            "link it for every project instead (zot ext link {}), or run zot ext link --project {} in the project that uses it",
            sh_quote(&target.display().to_string()),
            sh_quote(&target.display().to_string())
        ),
        Scope::Global => {
            "keep the extension in a folder of its own, or set ZOT_HOME to a folder outside it"
                .to_string()
        }
    };
    format!(
        "{} holds the extensions folder {}, so the link would lead back into the folder that holds it; {fix} (nothing was linked)",
        path.display(),
        root.display()
    )
}
