//! Extension trees on disk: the audit (special files refused, links that point outside the
//! tree or nowhere listed), the pieces the recursive copy of [`super::copy_tree`] checks with
//! as it goes (the copy keeps file modes — the unsafe bits are dropped after staging:
//! [`crate::store::filelist::UNSAFE_MODE_BITS`] — times and symbolic links, as links whatever
//! they point to, and leaves out `.git` and the source's own `.zot/`, zot's state for that
//! folder as a project), and working out where a link leads without ever opening what it
//! points to.
//!
//! No function here follows a symbolic link to read or write: links are read with
//! `readlink`, entries looked at with `lstat`, and only absolute targets are `stat`ed to
//! recognise the tree's own folder under another name (a `stat` never opens a file, so a
//! link to a named pipe or `/dev/zero` cannot block or flood anything).

use std::collections::VecDeque;
use std::ffi::OsString;
use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::Serialize;
use walkdir::{DirEntry, WalkDir};

use crate::catalog::manifest;
use crate::output::printable;
use crate::store::filelist::{EntryKind, FileList};

/// Running totals of a copy, reported to the progress callback.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct CopyStats {
    pub files: u64,
    pub dirs: u64,
    pub links: u64,
    pub bytes: u64,
}

/// Where a symbolic link in a tree leads, worked out inside the tree only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Leads {
    /// To an entry of the tree.
    Inside,
    /// Out of the tree (an absolute path elsewhere, or `..` above the top).
    Outside,
    /// To nothing: a part of the path does not exist (a dangling link).
    Nowhere,
    /// Round in circles (more than [`MAX_HOPS`] links in a row).
    Loop,
}

/// A link kept in a tree that points outside it or nowhere, as listed after an install and
/// by `info`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct LooseLink {
    /// The link, relative to the extension folder.
    pub path: String,
    /// What the link holds, as stored.
    pub target: String,
    /// `outside`, `nowhere` (dangling) or `loop`.
    pub leads: Leads,
}

impl LooseLink {
    /// The link at `path` (relative to the tree) holding `target`, when it `leads` outside
    /// or nowhere.
    pub(super) fn of(path: &Path, target: &Path, leads: Leads) -> Option<LooseLink> {
        (leads != Leads::Inside).then(|| LooseLink {
            path: path.to_string_lossy().into_owned(),
            target: target.to_string_lossy().into_owned(),
            leads,
        })
    }

    /// `path -> target`, escaped, with `(dangling)` or `(loop)` when it leads nowhere.
    pub(crate) fn describe(&self) -> String {
        let why = match self.leads {
            Leads::Nowhere => " (dangling)",
            Leads::Loop => " (loop)",
            Leads::Inside | Leads::Outside => "",
        };
        format!(
            "{} -> {}{why}",
            printable(&self.path),
            printable(&self.target)
        )
    }
}

/// How many links a one-line list names before it says "and N more".
pub(crate) const LISTED: usize = 5;

/// The list of `links` on one line: the first few, then how many more.
pub(crate) fn list_links(links: &[LooseLink]) -> String {
    crate::output::first_few(links.iter().map(LooseLink::describe), LISTED)
}

/// What the links point to, for a note: "outside the extension", "… or nowhere".
pub(crate) fn loose_summary(links: &[LooseLink]) -> String {
    let count = links.len();
    let noun = if count == 1 {
        "link that points"
    } else {
        "links that point"
    };
    let nowhere = links.iter().any(|l| l.leads != Leads::Outside);
    let whither = if nowhere {
        "outside the extension or nowhere"
    } else {
        "outside the extension"
    };
    format!("{count} {noun} {whither}")
}

/// The note shown after installing or updating `name` (without the `note:` label): one line
/// naming the links that were kept although they point outside the extension or nowhere;
/// None when there are none.
pub(crate) fn loose_note(name: &str, links: &[LooseLink]) -> Option<String> {
    if links.is_empty() {
        return None;
    }
    let all = if links.len() > LISTED {
        format!(
            " (zot ext info --json {} lists them all)",
            crate::output::sh_quote(name)
        )
    } else {
        String::new()
    };
    Some(format!(
        "kept {}: {}{all}",
        loose_summary(links),
        list_links(links)
    ))
}

/// The folder at the top of a working copy where zot keeps its state for that folder as a
/// project (`.zot/extensions/`, and `.zot/.ext-store/` beside it): never part of an
/// extension, so a local source's is neither audited nor copied.
pub(crate) const PROJECT_STATE: &str = ".zot";

/// What a walk covers: a tree as it is (`.git` left out), or a local source about to be
/// copied (its top-level [`PROJECT_STATE`] folder left out too).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Walk {
    Tree,
    Source,
}

fn walk(root: &Path, what: Walk) -> impl Iterator<Item = walkdir::Result<DirEntry>> {
    WalkDir::new(root)
        .follow_links(false)
        .follow_root_links(false)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(move |e| {
            e.depth() == 0
                || (e.file_name() != ".git" && !(what == Walk::Source && is_project_state(e)))
        })
}

fn is_project_state(entry: &DirEntry) -> bool {
    entry.depth() == 1 && entry.file_name() == PROJECT_STATE && entry.file_type().is_dir()
}

/// Whether the local source at `root` has a [`PROJECT_STATE`] folder, which the copy leaves out.
pub(crate) fn has_project_state(root: &Path) -> bool {
    fs::symlink_metadata(root.join(PROJECT_STATE)).is_ok_and(|m| m.is_dir())
}

#[cfg(test)]
fn walk_error(e: walkdir::Error) -> anyhow::Error {
    if e.loop_ancestor().is_some() {
        return anyhow::anyhow!("{}", printable(&e.to_string()));
    }
    let path = printable(&e.path().unwrap_or(Path::new("")).display().to_string());
    match e.into_io_error() {
        Some(io) => anyhow::anyhow!("cannot read {path}: {}", io_reason(&io)),
        None => anyhow::anyhow!("cannot read {path}"),
    }
}

pub(super) fn io_reason(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::PermissionDenied => "permission denied".into(),
        io::ErrorKind::NotFound => "no such file or directory".into(),
        _ => e.to_string(),
    }
}

/// `path` relative to `root` (every walked path lies under its root).
fn inside<'a>(root: &Path, path: &'a Path) -> &'a Path {
    path.strip_prefix(root).expect("walk stays under its root")
}

/// The top folder of a tree: its canonical path and its identity on disk, to recognise
/// absolute link targets that name it.
pub(super) struct Root {
    path: PathBuf,
    id: Option<(u64, u64)>,
}

impl Root {
    pub(super) fn new(root: &Path) -> Result<Root> {
        let path =
            fs::canonicalize(root).with_context(|| format!("cannot resolve {}", root.display()))?;
        Ok(Root {
            id: file_id(&path),
            path,
        })
    }

    /// The part of the absolute `target` below this folder: lexically under its canonical
    /// path, or under an ancestor of `target` that is this very folder by another name
    /// (`/tmp` for `/private/tmp`). Ancestors are only `stat`ed, never opened. None when
    /// `target` lies elsewhere.
    fn below(&self, target: &Path) -> Option<PathBuf> {
        if let Ok(rest) = target.strip_prefix(&self.path) {
            return Some(rest.to_path_buf());
        }
        let id = self.id?;
        let mut rest = Vec::new();
        let mut at = target;
        loop {
            if file_id(at) == Some(id) {
                return Some(rest.iter().rev().collect());
            }
            match (at.file_name(), at.parent()) {
                (Some(name), Some(parent)) => {
                    rest.push(name);
                    at = parent;
                }
                _ => return None,
            }
        }
    }

    /// The target a copy of the link at `link` (relative to the tree) gets: an absolute
    /// target inside the tree becomes relative, so the copy points into itself; any other
    /// target is kept as it is.
    pub(super) fn relocate(&self, target: &Path, link: &Path) -> PathBuf {
        if !target.is_absolute() {
            return target.to_path_buf();
        }
        let Some(rest) = self.below(target) else {
            return target.to_path_buf();
        };
        let depth = link.parent().map_or(0, |p| p.components().count());
        let mut out: PathBuf = std::iter::repeat_n(Component::ParentDir, depth).collect();
        out.push(rest);
        if out.as_os_str().is_empty() {
            out.push(".");
        }
        out
    }
}

/// Device and inode of what `path` names (following links: a `stat`, which opens nothing).
fn file_id(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// At most this many links are followed in a row, as the kernel does (ELOOP).
pub(crate) const MAX_HOPS: usize = 40;

/// One step of a path being resolved.
enum Step {
    Up,
    Name(OsString),
}

/// Where the link at `link` (relative to the tree) with target `target` leads. Resolves
/// the path the way the kernel would, one component at a time inside the tree (`lstat` and
/// `readlink` only), and stops as soon as it leaves the tree: nothing outside is looked at
/// but the identity of absolute targets' folders (see [`Root::below`]).
pub(super) fn reach(tree: &Root, link: &Path, target: &Path) -> Leads {
    resolve(tree, link, target, |relative| {
        let path = tree.path.join(relative);
        let meta = fs::symlink_metadata(&path).ok()?;
        Some(if meta.file_type().is_symlink() {
            Found::Link(fs::read_link(&path).ok()?)
        } else if meta.is_dir() {
            Found::Dir
        } else {
            Found::Other
        })
    })
}

/// [`reach`] in the tree `files` lists (a copy, listed as it was made), without looking at
/// the disk inside the tree: what the list says is what `lstat` and `readlink` find there.
fn reach_listed(tree: &Root, files: &FileList, link: &Path, target: &Path) -> Leads {
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    resolve(tree, link, target, |relative| {
        let entry = files.get(relative.as_os_str().as_bytes())?;
        Some(match entry.kind {
            EntryKind::Dir => Found::Dir,
            EntryKind::Link => {
                let target = entry.target.clone().unwrap_or_default();
                Found::Link(OsString::from_vec(target).into())
            }
            EntryKind::File => Found::Other,
        })
    })
}

/// What a path inside the tree names, for [`resolve`].
enum Found {
    Dir,
    Link(PathBuf),
    /// A file, or anything else that is not a folder or a link.
    Other,
}

/// Where a link leads (see [`reach`]), with `look` saying what each path inside the tree
/// (relative to it) names; `None` for nothing.
fn resolve(
    tree: &Root,
    link: &Path,
    target: &Path,
    mut look: impl FnMut(&Path) -> Option<Found>,
) -> Leads {
    let mut dir: Vec<OsString> = link
        .parent()
        .into_iter()
        .flat_map(Path::components)
        .map(|c| c.as_os_str().to_os_string())
        .collect();
    let mut pending = VecDeque::new();
    if !enter(tree, target, &mut dir, &mut pending) {
        return Leads::Outside;
    }
    let mut hops = 1;
    while let Some(step) = pending.pop_front() {
        let name = match step {
            Step::Up => match dir.pop() {
                Some(_) => continue,
                None => return Leads::Outside,
            },
            Step::Name(name) => name,
        };
        let mut relative: PathBuf = dir.iter().collect();
        relative.push(&name);
        match look(&relative) {
            None => return Leads::Nowhere,
            Some(Found::Link(next)) => {
                hops += 1;
                if hops > MAX_HOPS {
                    return Leads::Loop;
                }
                if !enter(tree, &next, &mut dir, &mut pending) {
                    return Leads::Outside;
                }
            }
            Some(Found::Dir) => dir.push(name),
            Some(Found::Other) if !pending.is_empty() => {
                return Leads::Nowhere; // a file in the middle of a path
            }
            Some(Found::Other) => {}
        }
    }
    Leads::Inside
}

/// Puts the steps of link target `target` in front of `pending`; an absolute target
/// restarts at the top of the tree. False when an absolute target lies outside the tree.
fn enter(
    tree: &Root,
    target: &Path,
    dir: &mut Vec<OsString>,
    pending: &mut VecDeque<Step>,
) -> bool {
    let relative = if target.is_absolute() {
        let Some(rest) = tree.below(target) else {
            return false;
        };
        dir.clear();
        rest
    } else {
        target.to_path_buf()
    };
    let steps: Vec<Step> = relative
        .components()
        .filter_map(|c| match c {
            Component::ParentDir => Some(Step::Up),
            Component::Normal(name) => Some(Step::Name(name.to_os_string())),
            _ => None,
        })
        .collect();
    for step in steps.into_iter().rev() {
        pending.push_front(step);
    }
    true
}

/// Examines the link at `path` in the tree; Some when it points outside or nowhere.
fn loose(tree: &Root, root: &Path, path: &Path) -> Result<Option<LooseLink>> {
    let target = fs::read_link(path)
        .with_context(|| format!("cannot read the symbolic link {}", path.display()))?;
    let link = inside(root, path);
    Ok(LooseLink::of(link, &target, reach(tree, link, &target)))
}

/// Checks every entry of `root` in a walk of its own (the reference the copy's tests compare
/// with; installs judge their trees on the way: the copy, or a checkout's list): only regular
/// files, directories and symbolic links are allowed, and `extension.json` at the top, if a link, must lead to a file inside the tree.
/// Returns the links that point outside the tree or nowhere (they are kept, and listed).
/// Messages show paths inside the tree after `prefix` instead of under `root` (a staging
/// folder means nothing to the user; the source does): `"src/"` or `"<url> (<commit>): "`.
#[cfg(test)]
pub(crate) fn audit(root: &Path, prefix: &str) -> Result<Vec<LooseLink>> {
    audit_walk(root, prefix, Walk::Tree)
}

/// [`audit`] for a local source before it is copied: what
/// [`super::copy_tree::copy_source`] leaves out is not looked at. That copy checks the same
/// on its way; this, alone, is what its tests compare with.
#[cfg(test)]
pub(crate) fn audit_source(root: &Path, prefix: &str) -> Result<Vec<LooseLink>> {
    audit_walk(root, prefix, Walk::Source)
}

#[cfg(test)]
fn audit_walk(root: &Path, prefix: &str, what: Walk) -> Result<Vec<LooseLink>> {
    audit_tree(root, what).map_err(|e| shown_after(root, prefix, &e))
}

/// The error `e` of the audit of `root` (one line, escaped), its paths under `root` shown
/// after `prefix` instead.
pub(super) fn shown_after(root: &Path, prefix: &str, e: &anyhow::Error) -> anyhow::Error {
    let message = format!("{e:#}");
    let root = format!("{}/", root.display());
    anyhow::anyhow!("{}", printable(&message.replace(&root, prefix)))
}

#[cfg(test)]
fn audit_tree(root: &Path, what: Walk) -> Result<Vec<LooseLink>> {
    let tree = Root::new(root)?;
    let mut found = Vec::new();
    for entry in walk(root, what) {
        let entry = entry.map_err(walk_error)?;
        let kind = entry.file_type();
        if kind.is_symlink() {
            let link = loose(&tree, root, entry.path())?;
            if inside(root, entry.path()) == Path::new(manifest::FILE) {
                check_manifest_link(entry.path(), link.as_ref())?;
            }
            found.extend(link);
        } else if !kind.is_dir() && !kind.is_file() {
            bail!(
                "{} is a special file ({}); an extension may only hold files, folders and symbolic links",
                entry.path().display(),
                special_kind(kind)
            );
        }
    }
    Ok(found)
}

/// The manifest may be a link to a file in the tree (as it always could), not one that
/// leads out of it or nowhere: zot reads it, and `enable`/`disable` rewrite it.
pub(super) fn check_manifest_link(path: &Path, link: Option<&LooseLink>) -> Result<()> {
    let Some(link) = link else { return Ok(()) };
    let what = match link.leads {
        Leads::Outside => "points outside the extension folder",
        Leads::Nowhere => "is a dangling symbolic link (its target does not exist)",
        Leads::Loop | Leads::Inside => "is a symbolic link loop",
    };
    bail!(
        "{} -> {} {what}; {} must be a file inside the extension folder (copy the file in place of the link)",
        path.display(),
        link.target,
        manifest::FILE
    )
}

/// What [`loose_links`] found.
#[derive(Debug, Default)]
pub(crate) struct LinkScan {
    pub links: Vec<LooseLink>,
    /// False when the walk stopped at the entry limit or at an unreadable folder.
    pub complete: bool,
}

/// The links in the tree at `root` that point outside it or nowhere, looking at no more
/// than `max_entries` entries. Never fails: what cannot be read is left out (and the scan
/// marked incomplete). For `info`, which describes one installed extension.
pub(crate) fn loose_links(root: &Path, max_entries: usize) -> LinkScan {
    let Ok(tree) = Root::new(root) else {
        return LinkScan::default();
    };
    let mut scan = LinkScan {
        links: Vec::new(),
        complete: true,
    };
    for (seen, entry) in walk(root, Walk::Tree).enumerate() {
        if seen >= max_entries {
            scan.complete = false;
            break;
        }
        let Ok(entry) = entry else {
            scan.complete = false;
            continue;
        };
        if entry.file_type().is_symlink() {
            match loose(&tree, root, entry.path()) {
                Ok(link) => scan.links.extend(link),
                Err(_) => scan.complete = false,
            }
        }
    }
    scan
}

#[cfg(test)]
fn special_kind(kind: fs::FileType) -> &'static str {
    use rustix::fs::FileType;
    use std::os::unix::fs::FileTypeExt;
    special_kind_of(if kind.is_fifo() {
        FileType::Fifo
    } else if kind.is_socket() {
        FileType::Socket
    } else if kind.is_block_device() || kind.is_char_device() {
        FileType::CharacterDevice
    } else {
        FileType::Unknown
    })
}

/// What kind of special file `kind` is, for the audit's message.
pub(super) fn special_kind_of(kind: rustix::fs::FileType) -> &'static str {
    use rustix::fs::FileType;
    match kind {
        FileType::Fifo => "a named pipe",
        FileType::Socket => "a socket",
        FileType::BlockDevice | FileType::CharacterDevice => "a device",
        _ => "not a regular file",
    }
}

/// [`links_of_copy`] of the tree at `root` that `files` lists: its links are the list's.
pub(super) fn links_listed(root: &Path, files: &FileList) -> Result<Vec<LooseLink>> {
    use std::os::unix::ffi::OsStrExt;
    let links: Vec<(PathBuf, PathBuf)> = files
        .entries()
        .iter()
        .filter(|e| e.kind == EntryKind::Link)
        .map(|e| {
            let target = std::ffi::OsStr::from_bytes(e.target.as_deref().unwrap_or_default());
            (e.rel().to_path_buf(), PathBuf::from(target))
        })
        .collect();
    links_of_copy(root, &links, Some(files))
}

/// The links of the copy at `root` (`links`: relative path and target) that point outside it
/// or nowhere; the manifest's link, if any, must lead to a file inside. With `files`, the
/// copy's list, links are followed in the list rather than on disk (some 1,000 `lstat`s
/// less for 200 links into deep folders).
pub(super) fn links_of_copy(
    root: &Path,
    links: &[(PathBuf, PathBuf)],
    files: Option<&FileList>,
) -> Result<Vec<LooseLink>> {
    let tree = Root::new(root)?;
    let mut found = Vec::new();
    for (link, target) in links {
        let leads = match files {
            Some(files) => reach_listed(&tree, files, link, target),
            None => reach(&tree, link, target),
        };
        let loose = LooseLink::of(link, target, leads);
        if link == Path::new(manifest::FILE) {
            check_manifest_link(&root.join(link), loose.as_ref())?;
        }
        found.extend(loose);
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::copy_tree::{copy, copy_source};
    use std::os::unix::fs::{PermissionsExt, symlink};

    fn no_progress() -> impl FnMut(&CopyStats) {
        |_| {}
    }

    /// A canonical temporary folder.
    fn tree() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = fs::canonicalize(dir.path()).unwrap();
        (dir, path)
    }

    fn leads(root: &Path, link: &str) -> Leads {
        let tree = Root::new(root).unwrap();
        let target = fs::read_link(root.join(link)).unwrap();
        reach(&tree, Path::new(link), &target)
    }

    fn mkfifo(path: &Path) {
        let status = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .unwrap();
        assert!(status.success());
    }

    #[test]
    fn copy_keeps_modes_links_and_skips_git() {
        let (_src, s) = tree();
        fs::create_dir_all(s.join("node_modules/.bin")).unwrap();
        fs::create_dir_all(s.join(".git")).unwrap();
        fs::write(s.join(".git/HEAD"), "x").unwrap();
        fs::write(s.join("run.sh"), "#!/bin/sh\n").unwrap();
        fs::set_permissions(s.join("run.sh"), fs::Permissions::from_mode(0o751)).unwrap();
        symlink("../../run.sh", s.join("node_modules/.bin/run")).unwrap();
        symlink(s.join("run.sh"), s.join("abs")).unwrap();
        symlink(s.join("run.sh"), s.join("node_modules/.bin/abs")).unwrap();
        symlink(&s, s.join("node_modules/top")).unwrap();
        assert_eq!(audit(&s, "").unwrap(), []);
        let (_dst, d) = tree();
        let to = d.join("t");
        let (stats, _, _) = copy_source(&s, &to, "", &mut no_progress()).unwrap();
        assert_eq!(stats.links, 4);
        let mode = fs::metadata(to.join("run.sh"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o751);
        for (link, target) in [
            ("node_modules/.bin/run", "../../run.sh"),
            ("abs", "run.sh"),
            ("node_modules/.bin/abs", "../../run.sh"),
            ("node_modules/top", ".."),
        ] {
            assert_eq!(fs::read_link(to.join(link)).unwrap(), Path::new(target));
        }
        assert!(!to.join(".git").exists());
        assert_eq!(audit(&to, "").unwrap(), []);
    }

    #[test]
    fn copy_keeps_times_of_read_only_files_and_folders() {
        use std::time::{Duration, SystemTime};
        let (_src, s) = tree();
        fs::create_dir(s.join("dir")).unwrap();
        fs::write(s.join("dir/ro"), "x").unwrap();
        let old = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
        fs::File::open(s.join("dir/ro"))
            .unwrap()
            .set_modified(old)
            .unwrap();
        fs::set_permissions(s.join("dir/ro"), fs::Permissions::from_mode(0o444)).unwrap();
        fs::File::open(s.join("dir"))
            .unwrap()
            .set_modified(old)
            .unwrap();
        let (_dst, d) = tree();
        let to = d.join("t");
        copy(&s, &to, &mut no_progress()).unwrap();
        for path in ["dir/ro", "dir"] {
            assert_eq!(
                fs::metadata(to.join(path)).unwrap().modified().unwrap(),
                old,
                "{path}"
            );
        }
    }

    #[test]
    fn links_are_resolved_inside_the_tree_only() {
        let (_outside, out) = tree();
        fs::create_dir(out.join("lib")).unwrap();
        let (_dir, d) = tree();
        fs::create_dir_all(d.join("bin")).unwrap();
        fs::create_dir_all(d.join("sub")).unwrap();
        fs::write(d.join("file"), "x").unwrap();
        let cases: [(&str, PathBuf, Leads); 13] = [
            ("bin/rel", "../file".into(), Leads::Inside),
            ("bin/abs", d.join("file"), Leads::Inside),
            ("bin/dotdot", d.join("sub/../file"), Leads::Inside),
            ("bin/up", "../../x".into(), Leads::Outside),
            ("bin/out", "/usr/bin/python3".into(), Leads::Outside),
            ("bin/python", "python3".into(), Leads::Outside), // via bin/python3
            ("bin/python3", out.join("python3"), Leads::Outside),
            ("bin/missing", "nothing".into(), Leads::Nowhere),
            ("bin/through", "../file/x".into(), Leads::Nowhere),
            ("bin/a", "b".into(), Leads::Loop),
            ("bin/b", "a".into(), Leads::Loop),
            ("outlib", out.join("lib"), Leads::Outside),
            // `..` after a link to a folder outside stays outside, as the kernel sees it.
            ("sneaky", "outlib/../file".into(), Leads::Outside),
        ];
        for (link, target, _) in &cases {
            symlink(target, d.join(link)).unwrap();
        }
        for (link, _, expected) in cases {
            assert_eq!(leads(&d, link), expected, "{link}");
        }
    }

    #[test]
    fn links_followed_in_the_copys_list_lead_where_they_lead_on_disk() {
        let (_outside, out) = tree();
        fs::create_dir(out.join("lib")).unwrap();
        let (_dir, d) = tree();
        fs::write(d.join("extension.json"), "{}").unwrap();
        fs::create_dir_all(d.join("bin")).unwrap();
        fs::create_dir_all(d.join("sub/deep/er")).unwrap();
        fs::write(d.join("file"), "x").unwrap();
        fs::write(d.join("sub/deep/er/f"), "y").unwrap();
        let links: [(&str, PathBuf); 16] = [
            ("bin/rel", "../file".into()),
            ("bin/abs", d.join("file")),
            ("bin/dotdot", d.join("sub/../file")),
            ("bin/up", "../../x".into()),
            ("bin/out", "/usr/bin/python3".into()),
            ("bin/python", "python3".into()),
            ("bin/python3", out.join("python3")),
            ("bin/missing", "nothing".into()),
            ("bin/through", "../file/x".into()),
            ("bin/a", "b".into()),
            ("bin/b", "a".into()),
            ("outlib", out.join("lib")),
            ("sneaky", "outlib/../file".into()),
            ("sub/to-deep", "deep".into()),
            ("sub/via", "to-deep/er/./f".into()),
            ("bin/chain", "../sub/via".into()),
        ];
        for (link, target) in &links {
            symlink(target, d.join(link)).unwrap();
        }
        let (_dst, copies) = tree();
        let copy = copies.join("t");
        let (_, loose, files) = copy_source(&d, &copy, "", &mut no_progress()).unwrap();
        let root = Root::new(&copy).unwrap();
        for (link, _) in links {
            let target = fs::read_link(copy.join(link)).unwrap();
            let on_disk = reach(&root, Path::new(link), &target);
            let listed = reach_listed(&root, &files, Path::new(link), &target);
            assert_eq!(listed, on_disk, "{link}");
        }
        let audited = audit(&copy, "").unwrap();
        let paths = |found: &[LooseLink]| -> Vec<String> {
            found
                .iter()
                .map(|l| format!("{} {:?}", l.path, l.leads))
                .collect()
        };
        assert_eq!(paths(&loose), paths(&audited));
    }

    #[test]
    fn absolute_targets_may_name_the_tree_by_another_name() {
        let (_dir, base) = tree();
        let d = base.join("real");
        fs::create_dir(&d).unwrap();
        symlink(&d, base.join("alias")).unwrap();
        fs::write(d.join("file"), "x").unwrap();
        fs::create_dir(d.join("sub")).unwrap();
        symlink(base.join("alias/file"), d.join("sub/l")).unwrap();
        assert_eq!(leads(&d, "sub/l"), Leads::Inside);
        let (_dst, out) = tree();
        copy_source(&d, &out.join("t"), "", &mut no_progress()).unwrap();
        assert_eq!(
            fs::read_link(out.join("t/sub/l")).unwrap(),
            Path::new("../file")
        );
    }

    #[test]
    fn audit_keeps_and_lists_outside_dangling_and_looping_links() {
        let (_dir, d) = tree();
        fs::write(d.join("extension.json"), "{}").unwrap();
        symlink("/etc/passwd", d.join("abs")).unwrap();
        symlink("../../x", d.join("up")).unwrap();
        symlink("missing", d.join("dangling")).unwrap();
        symlink("loop2", d.join("loop1")).unwrap();
        symlink("loop1", d.join("loop2")).unwrap();
        let found = audit(&d, "src/").unwrap();
        let got: Vec<(&str, &str, Leads)> = found
            .iter()
            .map(|l| (l.path.as_str(), l.target.as_str(), l.leads))
            .collect();
        assert_eq!(
            got,
            [
                ("abs", "/etc/passwd", Leads::Outside),
                ("dangling", "missing", Leads::Nowhere),
                ("loop1", "loop2", Leads::Loop),
                ("loop2", "loop1", Leads::Loop),
                ("up", "../../x", Leads::Outside),
            ]
        );
        let (_dst, out) = tree();
        copy(&d, &out.join("t"), &mut no_progress()).unwrap();
        for (link, target, _) in got {
            assert_eq!(
                fs::read_link(out.join("t").join(link)).unwrap(),
                Path::new(target)
            );
        }
    }

    #[test]
    fn links_to_pipes_and_devices_are_kept_without_opening_them() {
        let (_outside, out) = tree();
        mkfifo(&out.join("pipe"));
        let (_dir, d) = tree();
        symlink(out.join("pipe"), d.join("pipe")).unwrap();
        symlink("/dev/zero", d.join("zero")).unwrap();
        // A hang here would be the bug; the CLI tests run the same under a timeout.
        let found = audit(&d, "").unwrap();
        assert_eq!(found.len(), 2);
        let (_dst, to) = tree();
        let (stats, _) = copy(&d, &to.join("t"), &mut no_progress()).unwrap();
        assert_eq!((stats.links, stats.bytes), (2, 0));
        assert_eq!(loose_links(&to.join("t"), 100).links, found);
    }

    #[test]
    fn a_manifest_link_must_lead_to_a_file_inside() {
        let (_outside, out) = tree();
        fs::write(out.join("m.json"), "{}").unwrap();
        let (_dir, d) = tree();
        fs::write(d.join("real.json"), "{}").unwrap();
        symlink("real.json", d.join("extension.json")).unwrap();
        assert_eq!(audit(&d, "src/").unwrap(), []);
        for (target, word) in [
            (out.join("m.json"), "points outside the extension folder"),
            ("gone.json".into(), "dangling"),
            ("extension.json".into(), "loop"),
        ] {
            fs::remove_file(d.join("extension.json")).unwrap();
            symlink(&target, d.join("extension.json")).unwrap();
            let err = audit(&d, "src/").unwrap_err().to_string();
            assert!(err.starts_with("src/extension.json -> "), "{err}");
            assert!(err.contains(word), "{word}: {err}");
        }
    }

    #[test]
    fn audit_refuses_fifos() {
        let (_dir, d) = tree();
        mkfifo(&d.join("pipe"));
        let err = audit(&d, "src/").unwrap_err().to_string();
        assert!(
            err.contains("src/pipe is a special file (a named pipe)"),
            "{err}"
        );
    }

    #[test]
    fn audit_escapes_names() {
        let (_dir, d) = tree();
        mkfifo(&d.join("x\nerror: forged"));
        let err = audit(&d, "src/").unwrap_err().to_string();
        assert!(
            err.contains("src/x\\nerror: forged is a special file"),
            "{err}"
        );
        assert_eq!(err.lines().count(), 1);
    }

    #[test]
    fn the_info_scan_stops_at_its_limit() {
        let (_dir, d) = tree();
        for i in 0..10 {
            symlink("/nowhere", d.join(format!("l{i}"))).unwrap();
        }
        let all = loose_links(&d, 100);
        assert!(all.complete);
        assert_eq!(all.links.len(), 10);
        let some = loose_links(&d, 4);
        assert!(!some.complete);
        assert_eq!(some.links.len(), 3); // the root is the first entry
    }

    #[test]
    fn the_note_names_a_few_links_and_counts_the_rest() {
        let link = |path: &str, target: &str, leads| LooseLink {
            path: path.into(),
            target: target.into(),
            leads,
        };
        let one = [link(
            ".venv/bin/python3",
            "/usr/bin/python3",
            Leads::Outside,
        )];
        assert_eq!(
            loose_note("v", &one).unwrap(),
            "kept 1 link that points outside the extension: .venv/bin/python3 -> /usr/bin/python3"
        );
        assert_eq!(loose_note("v", &[]), None);
        let mut many: Vec<LooseLink> = (0..7)
            .map(|i| link(&format!("l{i}"), "/x", Leads::Outside))
            .collect();
        many[1] = link("d\nforged", "gone", Leads::Nowhere);
        let note = loose_note("v", &many).unwrap();
        assert_eq!(
            note,
            "kept 7 links that point outside the extension or nowhere: l0 -> /x, d\\nforged -> gone (dangling), l2 -> /x, l3 -> /x, l4 -> /x, and 2 more (zot ext info --json v lists them all)"
        );
    }
}
