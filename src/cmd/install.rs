//! `zot ext install`: stage a copy or clone, validate it, then rename it into place.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, anyhow, bail};
use serde::Serialize;

use super::{Context, Run};
use crate::catalog;
use crate::cli::InstallArgs;
use crate::error::usage;
use crate::git;
use crate::manifest::{self, Manifest, ManifestError};
use crate::paths::{Layout, Scope, ScopeDirs};
use crate::record::{Kind, Record, now_rfc3339};
use crate::sources::{GitUrl, Source};
use crate::store::{Staging, Store};
use crate::tree;

/// `zot ext install --json` output.
#[derive(Debug, Serialize)]
struct Installed<'a> {
    name: &'a str,
    version: Option<&'a str>,
    scope: Scope,
    dir: String,
    replaced: bool,
    #[serde(flatten)]
    record: &'a Record,
}

impl Run for InstallArgs {
    fn run(&self, ctx: &Context) -> Result<()> {
        let source = Source::parse(&self.source);
        if self.git_ref.is_some() && matches!(source, Source::Path(_)) {
            return Err(usage(format!(
                "--ref applies to git sources only; {} is a local folder",
                self.source
            )));
        }
        let scope = if self.project {
            Scope::Project
        } else {
            Scope::Global
        };
        let dirs = ctx.layout.scope(scope);
        let local = match &source {
            Source::Path(path) => Some(check_local_source(path, dirs)?),
            Source::Git(_) => None,
        };
        let store = Store::open(dirs)?;
        let staging = store.stage()?;
        let (record, manifest) = match (&source, local) {
            (Source::Git(url), _) => self.clone_into(ctx, url, &staging)?,
            (Source::Path(_), Some(path)) => self.copy_into(ctx, &path, &staging)?,
            (Source::Path(_), None) => unreachable!("local sources are checked first"),
        };
        let existing = store.existing(&manifest.name);
        if existing.is_some() && !self.force {
            bail!(
                "extension \"{}\" is already installed at {}; pass --force to replace it (nothing was changed)",
                manifest.name,
                dirs.extension(&manifest.name).display()
            );
        }
        let dest = store.place(&staging, &manifest.name, self.force)?;
        drop(staging);
        if let Err(e) = record.save(dirs) {
            ctx.out.warn(&format!(
                "installed, but the install record was not saved: {e:#}"
            ));
        }
        report(ctx, &manifest, &record, scope, &dest, existing.is_some())
    }
}

impl InstallArgs {
    fn copy_into(
        &self,
        ctx: &Context,
        path: &Path,
        staging: &Staging,
    ) -> Result<(Record, Manifest)> {
        tree::audit(path)?;
        tree::copy(path, &staging.tree(), &mut |stats| {
            if (stats.files + stats.dirs + stats.links) % 64 == 0 {
                ctx.out.progress(&format!(
                    "copying: {} files, {:.1} MiB",
                    stats.files,
                    stats.bytes as f64 / 1048576.0
                ));
            }
        })?;
        ctx.out.progress_done();
        let manifest = validate(staging, &Path::new(&self.source).join(manifest::FILE))?;
        let record = Record {
            name: manifest.name.clone(),
            source: path.display().to_string(),
            kind: Kind::Path,
            git_ref: None,
            commit: None,
            installed_at: now_rfc3339(),
        };
        Ok((record, manifest))
    }

    fn clone_into(
        &self,
        ctx: &Context,
        url: &GitUrl,
        staging: &Staging,
    ) -> Result<(Record, Manifest)> {
        let checkout = git::fetch(
            url,
            self.git_ref.as_deref(),
            &staging.scratch("git"),
            &staging.tree(),
            &mut |received, total, bytes| {
                ctx.out.progress(&format!(
                    "receiving objects: {received}/{total}, {:.1} KiB",
                    bytes as f64 / 1024.0
                ));
            },
        );
        ctx.out.progress_done();
        let checkout = checkout?;
        tree::audit(&staging.tree())?;
        let label = format!("{} ({})", url.display, short(&checkout.commit));
        let manifest = validate(
            staging,
            &PathBuf::from(format!("{label}: {}", manifest::FILE)),
        )?;
        let record = Record {
            name: manifest.name.clone(),
            source: url.display.clone(),
            kind: Kind::Git,
            git_ref: self.git_ref.clone(),
            commit: Some(checkout.commit),
            installed_at: now_rfc3339(),
        };
        Ok((record, manifest))
    }
}

fn short(commit: &str) -> &str {
    &commit[..commit.len().min(12)]
}

/// Reads the staged manifest; errors name `shown` instead of the staging path.
fn validate(staging: &Staging, shown: &Path) -> Result<Manifest> {
    let tree = staging.tree();
    manifest::read(&tree).map_err(|e| {
        let hint = if e.message.starts_with("not found") {
            nested_manifest_hint(&tree)
        } else {
            String::new()
        };
        let relabelled = ManifestError {
            path: shown.to_path_buf(),
            ..e
        };
        anyhow!("{relabelled}{hint} (nothing was installed)")
    })
}

/// Points at manifests in subfolders when the top level has none.
fn nested_manifest_hint(tree: &Path) -> String {
    let nested: Vec<String> = walkdir::WalkDir::new(tree)
        .min_depth(2)
        .max_depth(4)
        .into_iter()
        .flatten()
        .filter(|e| e.file_name() == manifest::FILE)
        .filter_map(|e| {
            e.path()
                .parent()?
                .strip_prefix(tree)
                .ok()
                .map(|p| p.display().to_string())
        })
        .take(3)
        .collect();
    if nested.is_empty() {
        String::new()
    } else {
        format!(
            "; there is one in {}/: install that folder instead",
            nested.join("/, ")
        )
    }
}

/// Checks a local source and returns its canonical path.
fn check_local_source(path: &Path, dirs: &ScopeDirs) -> Result<PathBuf> {
    let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => anyhow!(
            "{} does not exist; give a folder that holds {} or a git URL",
            path.display(),
            manifest::FILE
        ),
        _ => anyhow!("cannot read {}: {e}", path.display()),
    })?;
    if !meta.is_dir() {
        let hint = match (path.file_name(), path.parent()) {
            (Some(file), Some(parent)) if file == manifest::FILE => {
                format!(
                    "; install its folder instead: zot ext install {}",
                    parent.display()
                )
            }
            _ => String::new(),
        };
        bail!("{} is a file, not a folder{hint}", path.display());
    }
    let source = std::fs::canonicalize(path)
        .with_context(|| format!("cannot resolve {}", path.display()))?;
    let root = canonical_or_absolute(&dirs.extensions());
    let state = canonical_or_absolute(&dirs.state());
    if source.starts_with(&root) || source.starts_with(&state) {
        bail!(
            "{} is inside the extensions folder {}; install from a folder outside it",
            path.display(),
            root.display()
        );
    }
    if root.starts_with(&source) || state.starts_with(&source) {
        bail!(
            "{} contains the extensions folder {}; copying it would copy the store into itself",
            path.display(),
            root.display()
        );
    }
    Ok(source)
}

/// The canonical form of `path`'s longest existing ancestor, joined with the rest.
fn canonical_or_absolute(path: &Path) -> PathBuf {
    let mut existing = path.to_path_buf();
    let mut rest = Vec::new();
    while !existing.exists() {
        match (existing.file_name(), existing.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name.to_os_string());
                existing = parent.to_path_buf();
            }
            _ => return path.to_path_buf(),
        }
    }
    let mut out = std::fs::canonicalize(&existing).unwrap_or(existing);
    out.extend(rest.iter().rev());
    out
}

fn report(
    ctx: &Context,
    manifest: &Manifest,
    record: &Record,
    scope: Scope,
    dest: &Path,
    replaced: bool,
) -> Result<()> {
    if ctx.out.json {
        return Ok(ctx.out.json(&Installed {
            name: &manifest.name,
            version: manifest.version.as_deref(),
            scope,
            dir: dest.display().to_string(),
            replaced,
            record,
        })?);
    }
    let version = manifest
        .version
        .as_deref()
        .map(|v| format!(" {v}"))
        .unwrap_or_default();
    let verb = if replaced { "replaced" } else { "installed" };
    ctx.out.say(&format!(
        "{verb} {}{version} ({scope}) in {}",
        manifest.name,
        dest.display()
    ))?;
    shadow_note(ctx, &ctx.layout, &manifest.name, scope);
    Ok(())
}

fn shadow_note(ctx: &Context, layout: &Layout, name: &str, scope: Scope) {
    let other = match scope {
        Scope::Project => Scope::Global,
        Scope::Global => Scope::Project,
    };
    if let Ok(found) = catalog::find(layout, name, Some(other)) {
        let message = match scope {
            Scope::Project => format!(
                "note: this project copy takes precedence over the global one in {}",
                found.dir.display()
            ),
            Scope::Global => format!(
                "note: the project copy in {} takes precedence here",
                found.dir.display()
            ),
        };
        ctx.out.note(&message);
    }
}
