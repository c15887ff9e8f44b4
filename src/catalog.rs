//! Discovery: every installed extension of both scopes in the host's precedence order,
//! with its manifest or the reason it cannot be read, and which copy of a name wins.

use std::ffi::OsStr;
use std::fs;
use std::path::PathBuf;

use anyhow::{Result, bail};

use crate::manifest::{self, Manifest, ManifestError};
use crate::paths::{Layout, Scope};

/// One folder (or symlink) in an extensions root.
#[derive(Debug, Clone)]
pub struct Installed {
    pub scope: Scope,
    /// The folder name inside the root.
    pub dir_name: String,
    /// The path inside the root (a symlink for linked extensions).
    pub dir: PathBuf,
    /// Where a symlinked extension points.
    pub link_target: Option<PathBuf>,
    pub manifest: Result<Manifest, ManifestError>,
    /// A copy earlier in precedence order has the same name; the host never loads this one.
    pub shadowed: bool,
}

impl Installed {
    /// The folder's name in its root, exactly (`dir_name` is its lossy UTF-8 form).
    pub fn folder_name(&self) -> &OsStr {
        self.dir.file_name().unwrap_or_default()
    }

    /// The name the host knows it by: the manifest's, or the folder's when it is unreadable.
    pub fn name(&self) -> &str {
        match &self.manifest {
            Ok(m) => &m.name,
            Err(_) => &self.dir_name,
        }
    }
}

/// Lists the extensions of `scopes` (in the order given), folders sorted by name within a
/// scope. A copy is shadowed when one earlier in the host's load order (project before
/// global) has the same name, whether or not that scope is listed.
pub fn scan(layout: &Layout, scopes: &[Scope]) -> Result<Vec<Installed>> {
    let mut found: Vec<Installed> = Vec::new();
    for scope in Scope::ALL {
        found.extend(scan_root(layout, scope)?);
    }
    for i in 0..found.len() {
        let name = found[i].name().to_string();
        found[i].shadowed = found[..i].iter().any(|earlier| earlier.name() == name);
    }
    found.retain(|e| scopes.contains(&e.scope));
    found.sort_by_key(|e| scopes.iter().position(|s| *s == e.scope));
    Ok(found)
}

fn scan_root(layout: &Layout, scope: Scope) -> Result<Vec<Installed>> {
    let root = layout.scope(scope).extensions();
    let entries = match fs::read_dir(&root) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => bail!("cannot read {}: {e}", root.display()),
    };
    let mut here: Vec<Installed> = entries
        .flatten()
        .filter_map(|entry| inspect(scope, entry.path()))
        .collect();
    here.sort_by(|a, b| a.dir.file_name().cmp(&b.dir.file_name()));
    Ok(here)
}

fn inspect(scope: Scope, dir: PathBuf) -> Option<Installed> {
    let meta = fs::symlink_metadata(&dir).ok()?;
    let link_target = meta
        .file_type()
        .is_symlink()
        .then(|| fs::read_link(&dir).ok())
        .flatten();
    // Plain files in the root are not extensions; the host skips them too.
    if link_target.is_none() && !meta.is_dir() {
        return None;
    }
    let dir_name = dir.file_name()?.to_string_lossy().into_owned();
    let manifest = match &link_target {
        Some(target) if !dir.exists() => Err(ManifestError {
            path: dir.clone(),
            position: None,
            message: format!(
                "broken link: its target {} does not exist",
                target.display()
            ),
        }),
        _ => manifest::read(&dir),
    };
    Some(Installed {
        scope,
        dir_name,
        dir,
        link_target,
        manifest,
        shadowed: false,
    })
}

/// The copy of `name` that commands act on: the one in `scope` if given, else the winning one.
pub fn find(layout: &Layout, name: &str, scope: Option<Scope>) -> Result<Installed> {
    let scopes: Vec<Scope> = match scope {
        Some(s) => vec![s],
        None => Scope::ALL.to_vec(),
    };
    let all = scan(layout, &scopes)?;
    // The host loads by manifest name, first copy wins; a folder name only helps for a
    // copy whose manifest says otherwise (or cannot be read).
    let by_manifest = all.iter().find(|e| e.name() == name);
    let by_dir = || all.iter().find(|e| e.dir_name == name);
    if let Some(found) = by_manifest.or_else(by_dir) {
        return Ok(found.clone());
    }
    let looked: Vec<String> = scopes
        .iter()
        .map(|s| layout.scope(*s).extensions().display().to_string())
        .collect();
    bail!(
        "no extension named \"{name}\" is installed (looked in {}); `zot ext list` shows what is",
        looked.join(" and ")
    )
}
