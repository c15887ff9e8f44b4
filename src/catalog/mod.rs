//! Discovery: every installed extension of both scopes in the host's precedence order,
//! with its manifest or the reason it cannot be read, and which folders the host skips.
//!
//! The rules follow zot's own discovery (zot 0.1.62, `internal/agent/extensions/manager.go`,
//! `Discover` and `loadOne`, read at commit 380eca9): the project root is walked before the
//! global one and a folder name already seen is skipped, whatever its manifest says, so a
//! project folder hides the global folder of the same folder name. The manifest name is only
//! checked after that, concurrently: two enabled folders whose manifests share a name are both
//! started, and whichever finishes its `hello` last is the one the host keeps (a race).

pub(crate) mod manifest;
#[cfg(test)]
mod manifest_properties;
pub(crate) mod paths;
pub(crate) mod target;

use std::collections::HashMap;
use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Result, bail};

use crate::error;
use crate::protocol::zot::{self, Discovery};
use manifest::{Manifest, ManifestError};
use paths::{Layout, Scope};

/// One extension folder and what its manifest says. `S` says where it was found: a
/// [`Scope`] for a folder in an extensions root ([`Installed`]), or `Option<Scope>` for an
/// extension to check or call, which may also be a folder named on the command line
/// ([`target::Target`], `None`).
#[derive(Debug, Clone)]
pub(crate) struct Found<S> {
    pub scope: S,
    /// The folder name inside the root.
    pub dir_name: String,
    /// The path inside the root (a symlink for linked extensions).
    pub dir: PathBuf,
    /// Where a symlinked extension points (`zot ext link` makes such folders).
    // The link's target, not this struct's.
    #[allow(clippy::struct_field_names)]
    pub link_target: Option<PathBuf>,
    pub manifest: Result<Manifest, ManifestError>,
    /// A project folder of the same folder name hides this global one; the host never
    /// loads it, whatever either manifest says.
    pub shadowed: bool,
    /// A linked folder that a host not following links skips (see [`scan_as`]).
    pub skipped: bool,
    /// Other folders (not hidden) whose readable manifests have this one's name: the host
    /// starts every enabled one of them and keeps whichever says hello last.
    pub twins: Vec<Twin>,
}

/// One folder (or symlink) in an extensions root.
pub(crate) type Installed = Found<Scope>;

/// Another folder whose manifest has the same name as this one's.
#[derive(Debug, Clone)]
pub(crate) struct Twin {
    pub scope: Scope,
    pub dir: PathBuf,
    pub enabled: bool,
}

impl<S> Found<S> {
    /// The folder's name, exactly (`dir_name` is its lossy UTF-8 form).
    pub(crate) fn folder_name(&self) -> &OsStr {
        self.dir.file_name().unwrap_or_default()
    }

    /// The name the host knows it by: the manifest's, or the folder's when it is unreadable.
    pub(crate) fn name(&self) -> &str {
        match &self.manifest {
            Ok(m) => &m.name,
            Err(_) => &self.dir_name,
        }
    }

    /// Whether its manifest is usable and says `enabled`.
    pub(crate) fn enabled(&self) -> bool {
        self.manifest.as_ref().is_ok_and(|m| m.enabled)
    }

    /// Whether zot starts it: enabled, not hidden by a project folder of the same name, and
    /// not a linked folder the zot judged by skips.
    pub(crate) fn loaded(&self) -> bool {
        self.enabled() && !self.shadowed && !self.skipped
    }

    /// The same folder with `scope` mapped (an installed copy as a check target).
    pub(crate) fn map_scope<T>(self, scope: impl FnOnce(S) -> T) -> Found<T> {
        Found {
            scope: scope(self.scope),
            dir_name: self.dir_name,
            dir: self.dir,
            link_target: self.link_target,
            manifest: self.manifest,
            shadowed: self.shadowed,
            skipped: self.skipped,
            twins: self.twins,
        }
    }
}

impl Installed {
    /// A note for commands that act on this copy by name while another folder has the
    /// same manifest name: which one was taken and how to pick the other.
    pub(crate) fn twin_note(&self) -> Option<String> {
        let other = self.twins.first()?;
        Some(format!(
            "note: another folder, {}, also has the name \"{}\" (zot starts both); acting on {} ({}); pick the other by its folder name, {}{}",
            crate::output::printable(&other.dir.display().to_string()),
            crate::output::printable(self.name()),
            crate::output::printable(&self.dir.display().to_string()),
            self.scope,
            crate::output::printable(&other.dir.file_name().unwrap_or_default().to_string_lossy()),
            if other.scope == self.scope {
                String::new()
            } else {
                format!(", with --{}", other.scope)
            }
        ))
    }
}

/// Lists the extensions of `scopes` (in the order given), folders sorted by name within a
/// scope. A global folder is shadowed when the project root has a folder of the same folder
/// name (the host dedups by folder name first); folders left whose readable manifests share
/// a name are each other's twins. Both are judged over both scopes, whichever are listed.
pub(crate) fn scan(layout: &Layout, scopes: &[Scope]) -> Result<Vec<Installed>> {
    scan_as(layout, scopes, zot::newest().discovery)
}

/// [`scan`] as a host with these discovery rules sees it: one that does not follow links
/// skips linked folders before it notes their folder names (zot 0.1.62), so such a folder
/// hides nothing, has no twins, and is marked `skipped`.
pub(crate) fn scan_as(
    layout: &Layout,
    scopes: &[Scope],
    rules: Discovery,
) -> Result<Vec<Installed>> {
    let mut found = Vec::new();
    each_as(layout, &Scope::ALL, rules, |e| {
        found.push(e);
        Ok(())
    })?;
    find_twins(&mut found);
    found.retain(|e| scopes.contains(&e.scope));
    found.sort_by_key(|e| scopes.iter().position(|s| *s == e.scope));
    Ok(found)
}

/// Folders the host loads whose readable manifests share a name are each other's twins.
fn find_twins(found: &mut [Installed]) {
    let mut by_name: HashMap<String, Vec<usize>> = HashMap::new();
    for (i, e) in found.iter().enumerate() {
        if !e.shadowed && !e.skipped && e.manifest.is_ok() {
            by_name.entry(e.name().to_owned()).or_default().push(i);
        }
    }
    for group in by_name.values().filter(|group| group.len() > 1) {
        for &i in group {
            let twins = group
                .iter()
                .filter(|&&j| j != i)
                .map(|&j| Twin {
                    scope: found[j].scope,
                    dir: found[j].dir.clone(),
                    enabled: found[j].manifest.as_ref().is_ok_and(|m| m.enabled),
                })
                .collect();
            found[i].twins = twins;
        }
    }
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
    Some(found(scope, dir_name, dir, link_target, manifest::read))
}

/// The extension folder `dir` of `scope` as found alone (not yet compared with the others),
/// its manifest read by `read`, unless it is a link whose target is gone.
fn found(
    scope: Scope,
    dir_name: String,
    dir: PathBuf,
    link_target: Option<PathBuf>,
    read: impl FnOnce(&Path) -> Result<Manifest, ManifestError>,
) -> Installed {
    let manifest = match &link_target {
        Some(target) if !dir.exists() => Err(ManifestError::new(
            dir.clone(),
            format!(
                "broken link: its target {} does not exist",
                target.display()
            ),
        )),
        _ => read(&dir),
    };
    Installed {
        scope,
        dir_name,
        dir,
        link_target,
        manifest,
        shadowed: false,
        skipped: false,
        twins: Vec::new(),
    }
}

/// Calls `each` with every extension of `scopes` in [`scan`]'s order, with the same
/// `shadowed` marks but no `twins`, reading one manifest at a time: first only the folder
/// names of the roots (a project name hides the global folder of that name), then each
/// manifest when its turn comes, opened relative to its root's folder handle and read into
/// one reused buffer. Returns how many there were.
pub(crate) fn scan_each(
    layout: &Layout,
    scopes: &[Scope],
    each: impl FnMut(Installed) -> Result<()>,
) -> Result<usize> {
    each_as(layout, scopes, zot::newest().discovery, each)
}

/// [`scan_each`] as a host with these discovery rules sees it (see [`scan_as`]).
fn each_as(
    layout: &Layout,
    scopes: &[Scope],
    rules: Discovery,
    mut each: impl FnMut(Installed) -> Result<()>,
) -> Result<usize> {
    let project = list_root(layout, Scope::Project, rules)?;
    let global = if scopes.contains(&Scope::Global) {
        list_root(layout, Scope::Global, rules)?
    } else {
        None
    };
    let hides = |name: &OsStr| {
        project.as_ref().is_some_and(|(_, names)| {
            names
                .binary_search_by(|(n, _)| n.as_os_str().cmp(name))
                .is_ok_and(|i| !names[i].1.skipped)
        })
    };
    let mut buf = Vec::new();
    let mut count = 0;
    for &scope in scopes {
        let listed = match scope {
            Scope::Project => &project,
            Scope::Global => &global,
        };
        let Some((root, names)) = listed else {
            continue;
        };
        for (name, kind) in names {
            let Some(mut found) = inspect_in(scope, root, name, kind.link, &mut buf) else {
                continue;
            };
            found.skipped = kind.skipped;
            found.shadowed = scope == Scope::Global && !kind.skipped && hides(name);
            each(found)?;
            count += 1;
        }
    }
    Ok(count)
}

/// What a folder name's directory entry says.
#[derive(Debug, Clone, Copy)]
struct EntryKind {
    /// A symbolic link (else a folder).
    link: bool,
    /// A link the host does not follow: it hides nothing.
    skipped: bool,
}

/// A root open as a folder handle, and the names of its folders and links, sorted; `None`
/// when the root does not exist.
type RootNames = Option<(Root, Vec<(std::ffi::OsString, EntryKind)>)>;

/// An extensions root: its path and, when it could be opened, its folder handle.
struct Root {
    path: PathBuf,
    fd: Option<std::os::fd::OwnedFd>,
}

/// The folder names of `scope`'s root (only the directory itself is read).
fn list_root(layout: &Layout, scope: Scope, rules: Discovery) -> Result<RootNames> {
    let path = layout.scope(scope).extensions();
    let entries = match fs::read_dir(&path) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => bail!("cannot read {}: {e}", path.display()),
    };
    let mut names = Vec::new();
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        // Plain files in the root are not extensions; the host skips them too.
        if !kind.is_dir() && !kind.is_symlink() {
            continue;
        }
        let link = kind.is_symlink();
        let skipped = link && !rules.follows_linked_folders;
        names.push((entry.file_name(), EntryKind { link, skipped }));
    }
    // Folder names in a directory are unique: an unstable sort orders them the same.
    names.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let flags =
        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC;
    let fd = rustix::fs::open(&path, flags, rustix::fs::Mode::empty()).ok();
    Ok(Some((Root { path, fd }, names)))
}

/// [`inspect`] of the entry `name` of `root`, its manifest read through the root's handle.
/// `None` for a link that cannot be read, which [`inspect`] does not list either.
fn inspect_in(
    scope: Scope,
    root: &Root,
    name: &OsStr,
    link: bool,
    buf: &mut Vec<u8>,
) -> Option<Installed> {
    let mut dir = PathBuf::with_capacity(root.path.as_os_str().len() + 1 + name.len());
    dir.push(&root.path);
    dir.push(name);
    let link_target = if link {
        Some(fs::read_link(&dir).ok()?)
    } else {
        None
    };
    let dir_name = name.to_string_lossy().into_owned();
    let read = |dir: &Path| match &root.fd {
        Some(fd) => manifest::read_in(std::os::fd::AsFd::as_fd(fd), name, dir, buf),
        None => manifest::read(dir),
    };
    Some(found(scope, dir_name, dir, link_target, read))
}

/// The copy of `name` that commands act on: the one in `scope` if given, else the first in
/// the host's load order that it does not skip (a hidden copy only when no other matches).
/// When another folder has the same manifest name, [`Installed::twin_note`] says so.
pub(crate) fn find(layout: &Layout, name: &str, scope: Option<Scope>) -> Result<Installed> {
    find_as(layout, name, scope, zot::newest().discovery)
}

/// When `name` is not in `scope` but in the other scope: says so and how to reach it.
fn copy_elsewhere(layout: &Layout, name: &str, scope: Scope, rules: Discovery) -> Option<String> {
    let other = Scope::ALL.into_iter().find(|s| *s != scope)?;
    let there = scan_as(layout, &[other], rules).ok()?;
    there
        .iter()
        .find(|e| e.name() == name || e.dir_name == name)?;
    let short = |s: Scope| if s == Scope::Project { "-p" } else { "-g" };
    Some(format!(
        "there is a {other} copy: drop {} or use {}",
        short(scope),
        short(other)
    ))
}

/// The copy of `name` that commands which only read look at, found without reading the
/// store: the folder named `name` in the first root (of `scope` if given, else project then
/// global) that has one, when its own manifest has that name and no project folder of that
/// folder name hides it; only that one manifest is read, whatever the store holds. Anything
/// else (no such folder, a manifest naming something else, a hidden or skipped copy) is
/// [`find`]'s scan. It does not look for twins (`twins` stays empty): with two folders of
/// one manifest name it takes the one named like the extension, not the first in load order.
pub(crate) fn lookup(layout: &Layout, name: &str, scope: Option<Scope>) -> Result<Installed> {
    let rules = zot::newest().discovery;
    match named_folder(layout, name, scope, rules) {
        Named::Found(found) => Ok(*found),
        Named::Absent | Named::Unsure => find_as(layout, name, scope, rules),
    }
}

/// What the folder named like an extension says about it.
pub(crate) enum Named {
    /// The folder the host loads first under that folder name has a manifest of that name.
    Found(Box<Installed>),
    /// No root has a folder of that name: only a manifest elsewhere can have the name.
    Absent,
    /// A folder of that name says something else (another name, no readable manifest, a
    /// hidden or skipped copy, another scope): only a scan can tell.
    Unsure,
}

/// The folder named `name` that the host loads first, read alone (see [`Named`]); only
/// folders of `scope` count when it is given.
pub(crate) fn named_folder(
    layout: &Layout,
    name: &str,
    scope: Option<Scope>,
    rules: Discovery,
) -> Named {
    if !is_folder_name(name) {
        return Named::Unsure;
    }
    for s in Scope::ALL {
        let Some(found) = inspect(s, layout.scope(s).extensions().join(name)) else {
            continue;
        };
        let skipped = !rules.follows_linked_folders && found.link_target.is_some();
        let wanted = scope.is_none_or(|w| w == s);
        let named = found.manifest.as_ref().is_ok_and(|m| m.name == name);
        // The first folder of this folder name hides any later one: it is the answer or
        // the question is the scan's.
        return if wanted && named && !skipped {
            Named::Found(Box::new(found))
        } else {
            Named::Unsure
        };
    }
    Named::Absent
}

/// Whether `name` can only be one entry of a root, never a path leaving it.
pub(crate) fn is_folder_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\\', '\0'])
}

/// [`find`] as a host with these discovery rules sees it (see [`scan_as`]).
pub(crate) fn find_as(
    layout: &Layout,
    name: &str,
    scope: Option<Scope>,
    rules: Discovery,
) -> Result<Installed> {
    let scopes: Vec<Scope> = match scope {
        Some(s) => vec![s],
        None => Scope::ALL.to_vec(),
    };
    let all = scan_as(layout, &scopes, rules)?;
    // By manifest name first, then by folder name (a copy whose manifest says otherwise or
    // cannot be read); folders the host loads before ones a project folder hides.
    let hidden_last = all
        .iter()
        .filter(|e| !e.shadowed)
        .chain(all.iter().filter(|e| e.shadowed));
    let by_manifest = hidden_last.clone().find(|e| e.name() == name);
    let by_dir = || hidden_last.clone().find(|e| e.dir_name == name);
    if let Some(found) = by_manifest.or_else(by_dir) {
        return Ok(found.clone());
    }
    let looked: Vec<String> = scopes
        .iter()
        .map(|s| layout.scope(*s).extensions().display().to_string())
        .collect();
    let suggestions = error::closest(name, all.iter().flat_map(|e| [e.name(), &e.dir_name]));
    let hint = error::did_you_mean(&suggestions)
        .or_else(|| copy_elsewhere(layout, name, scope?, rules))
        .unwrap_or_else(|| "`zot ext list` shows what is installed".to_owned());
    let message = format!(
        "no extension named \"{name}\" is installed (looked in {}); {hint}",
        looked.join(" and ")
    );
    Err(error::Suggested {
        message,
        suggestions,
    }
    .into())
}
