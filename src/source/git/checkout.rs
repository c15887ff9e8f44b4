//! Writing a commit's tree into a folder straight from the object database: folders, every
//! blob with its mode, links as links, gitlinks as empty folders, and no index and no
//! filters. On the way each file is hashed for the tree's [`FileList`] and each link noted
//! for the audit, so the tree is never walked again. Used when nothing asks git to change
//! content on checkout (no attributes file in the tree, the repository or the user's and
//! system's git configuration, no line-ending settings, unusual modes); otherwise, or when
//! this says `None`, the checkout is libgit2's (`transport::check_out`).
//!
//! **Safety.** Every name is checked first, as strictly as libgit2's checkout checks it
//! with `core.protectNTFS` and `core.protectHFS` both on (`""`, `.`, `..`, `.git` in any
//! case and its NTFS and HFS+ aliases, `.gitmodules` aliases for links, `/` or NUL in a
//! name), and nothing is written when one is refused. Entries are created relative to open
//! folder handles, never replacing anything (`O_EXCL`, `mkdirat`, `symlinkat`), and folders
//! are opened with `O_NOFOLLOW`: a link in the tree is never written through, even when a
//! crafted tree names a link and a folder alike.

use std::ffi::OsStr;
use std::fs::File;
use std::io::Write as _;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use anyhow::{Context as _, Result, bail};
use git2::{Oid, Repository, Tree};
use rustix::fs::{CWD, Mode, OFlags};
use sha2::{Digest, Sha256};

use crate::fsx::DIR_FLAGS;
use crate::output::printable;
use crate::store::filelist::{Entry, EntryKind, FileList, hex};

/// Modes of tree entries, as git writes them.
const BLOB: i32 = 0o100_644;
const EXECUTABLE: i32 = 0o100_755;
const LINK: i32 = 0o120_000;
const GITLINK: i32 = 0o160_000;
const TREE: i32 = 0o040_000;

/// What was written.
#[derive(Debug, Clone)]
pub(crate) struct Written {
    /// The list of the tree as written (what [`FileList::scan`] of it would say), its links
    /// with their targets.
    pub files: FileList,
    /// Whether the tree has gitlinks (written as empty folders, for the submodules).
    pub gitlinks: bool,
}

/// One entry of the tree, in the order it is written (a folder before what it holds).
struct Item {
    path: Vec<u8>,
    /// Folders above it (0: at the top).
    depth: usize,
    kind: Kind,
    oid: Oid,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Folder,
    File { executable: bool },
    Link,
    Gitlink,
}

/// Writes `tree` into the existing empty folder `dir`. `None`
/// (nothing written) when git would change content on checkout or the tree holds
/// something only libgit2's checkout handles exactly; an error (nothing written) when a
/// name is refused. `label` names the repository in messages.
pub(crate) fn write_tree(
    repo: &Repository,
    tree: &Tree,
    dir: &Path,
    label: &str,
) -> Result<Option<Written>> {
    if !plain_configuration(repo) {
        return Ok(None);
    }
    let Some(items) = plan(repo, tree, label)? else {
        return Ok(None);
    };
    write_items(repo, &items, dir, label).map(Some)
}

/// Whether no configuration asks for content to change on checkout: no line-ending
/// settings, no attributes file (configured, the user's, the system's, the repository's),
/// links checked out as links.
fn plain_configuration(repo: &Repository) -> bool {
    let Ok(config) = repo.config().and_then(|mut c| c.snapshot()) else {
        return false;
    };
    let set = |key: &str| config.get_entry(key).is_ok();
    let autocrlf_off = !set("core.autocrlf") || config.get_bool("core.autocrlf") == Ok(false);
    let symlinks = !set("core.symlinks") || config.get_bool("core.symlinks") == Ok(true);
    autocrlf_off
        && symlinks
        && !set("core.eol")
        && !set("core.attributesfile")
        && !repo.path().join("info/attributes").exists()
        && !attribute_files_exist()
}

/// Whether the user's (`$XDG_CONFIG_HOME/git/attributes`) or the system's
/// (`/etc/gitattributes`) attributes file exists, where libgit2 looks for them.
fn attribute_files_exist() -> bool {
    use git2::ConfigLevel;
    [
        (ConfigLevel::XDG, "attributes"),
        (ConfigLevel::System, "gitattributes"),
    ]
    .iter()
    .any(|(level, name)| {
        // SAFETY: reads a libgit2 global that zot never changes.
        let dirs = unsafe { git2::opts::get_search_path(*level) };
        // A search path that cannot be read may hide a file: assume there is one.
        dirs.map_or(true, |dirs| {
            dirs.as_bytes()
                .split(|b| *b == b':')
                .filter(|d| !d.is_empty())
                .any(|d| Path::new(OsStr::from_bytes(d)).join(name).exists())
        })
    })
}

/// The entries of `tree`, depth first (a folder before what it holds), folders that hold
/// no file at any depth left out (git checks out files, not folders). `None` when the tree
/// has an attributes file or an entry of an unusual mode; an error when a name is refused.
fn plan(repo: &Repository, tree: &Tree, label: &str) -> Result<Option<Vec<Item>>> {
    let mut items = Vec::new();
    let Some(mut pending) = entries_of(repo, tree.id(), &[], 0, label)? else {
        return Ok(None);
    };
    while let Some(item) = pending.pop() {
        if item.kind == Kind::Folder {
            let Some(inside) = entries_of(repo, item.oid, &item.path, item.depth + 1, label)?
            else {
                return Ok(None);
            };
            pending.extend(inside);
        }
        items.push(item);
    }
    Ok(Some(without_empty_folders(items)))
}

/// The entries of the tree `id` at `dir`, last first (for a stack); `None` as for [`plan`].
fn entries_of(
    repo: &Repository,
    id: Oid,
    dir: &[u8],
    depth: usize,
    label: &str,
) -> Result<Option<Vec<Item>>> {
    let tree = repo.find_tree(id)?;
    let mut items = Vec::with_capacity(tree.len());
    for entry in &tree {
        let name = entry.name_bytes();
        let path = join(dir, name);
        let mode = entry.filemode_raw();
        if refused(name, mode == LINK) || (mode == LINK && link_path_refused(&path)) {
            bail!(
                "{label}: the repository holds a path that is not safe to check out: {}",
                shown(&path)
            );
        }
        if name.eq_ignore_ascii_case(b".gitattributes") {
            return Ok(None);
        }
        let kind = match mode {
            TREE => Kind::Folder,
            BLOB => Kind::File { executable: false },
            EXECUTABLE => Kind::File { executable: true },
            LINK => Kind::Link,
            GITLINK => Kind::Gitlink,
            _ => return Ok(None),
        };
        items.push(Item {
            path,
            depth,
            kind,
            oid: entry.id(),
        });
    }
    items.reverse();
    Ok(Some(items))
}

/// Drops the folders of `items` (depth-first order) that hold nothing but empty folders.
fn without_empty_folders(items: Vec<Item>) -> Vec<Item> {
    // Walking backwards, a folder comes after everything it holds: `filled[d]` says whether
    // something kept was seen at depth `d` since the last folder at depth `d - 1`.
    let mut keep = vec![true; items.len()];
    let mut filled = vec![false; items.iter().map(|i| i.depth + 2).max().unwrap_or(1)];
    for (i, item) in items.iter().enumerate().rev() {
        if item.kind == Kind::Folder {
            keep[i] = filled[item.depth + 1];
            filled[item.depth + 1] = false;
        }
        if keep[i] {
            filled[item.depth] = true;
        }
    }
    items
        .into_iter()
        .zip(keep)
        .filter_map(|(item, kept)| kept.then_some(item))
        .collect()
}

fn join(dir: &[u8], name: &[u8]) -> Vec<u8> {
    let mut path = dir.to_vec();
    if !path.is_empty() {
        path.push(b'/');
    }
    path.extend_from_slice(name);
    path
}

fn shown(path: &[u8]) -> String {
    printable(&String::from_utf8_lossy(path))
}

/// Files are created, never opened: nothing in place is replaced or written through.
const NEW_FILE: OFlags = OFlags::WRONLY
    .union(OFlags::CREATE)
    .union(OFlags::EXCL)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

/// Trees of this many blobs or more are read on a second thread (see [`write_items`]).
const READ_AHEAD_FROM: usize = 256;

/// How many blobs the reading thread may be ahead of the writing one.
const READ_AHEAD: usize = 64;

/// Blobs larger than this are left to the writing thread, so that those read ahead take
/// at most [`READ_AHEAD`] times this much memory.
const READ_AHEAD_SIZE: usize = 256 * 1024;

/// Creates `items` under `dir`. From [`READ_AHEAD_FROM`] blobs on, a second thread reads
/// them from the object database (inflating them, resolving deltas) and hashes them while
/// this one creates the entries: on its own each half took about as long as the other.
fn write_items(repo: &Repository, items: &[Item], dir: &Path, label: &str) -> Result<Written> {
    let blobs = items.iter().filter(|i| has_blob(i.kind)).count();
    if blobs < READ_AHEAD_FROM {
        return write_all(items, dir, label, &mut |item| read_blob(repo, item));
    }
    let git_dir = repo.path().to_path_buf();
    std::thread::scope(|scope| {
        let (sender, receiver) = std::sync::mpsc::sync_channel(READ_AHEAD);
        let reader = std::thread::Builder::new().spawn_scoped(scope, move || {
            // A handle of its own: a repository is not shared between threads.
            let repo = match Repository::open_bare(&git_dir) {
                Ok(repo) => repo,
                Err(e) => return drop(sender.send(Err(anyhow::Error::from(e)))),
            };
            let odb = repo.odb();
            for item in items.iter().filter(|i| has_blob(i.kind)) {
                let small = odb.as_ref().is_ok_and(|odb| {
                    odb.read_header(item.oid)
                        .is_ok_and(|(size, _)| size <= READ_AHEAD_SIZE)
                });
                // `None`: the writer reads it.
                let blob = small.then(|| read_blob(&repo, item)).transpose();
                let failed = blob.is_err();
                // The writer stopped (it failed): so does the reader.
                if sender.send(blob).is_err() || failed {
                    return;
                }
            }
        });
        if reader.is_err() {
            return write_all(items, dir, label, &mut |item| read_blob(repo, item));
        }
        write_all(items, dir, label, &mut |item| match receiver.recv() {
            Ok(Ok(Some(blob))) => Ok(blob),
            Ok(Ok(None)) => read_blob(repo, item),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(anyhow::anyhow!("the thread reading blobs stopped")),
        })
    })
}

/// Whether an entry of `kind` is written from a blob.
fn has_blob(kind: Kind) -> bool {
    matches!(kind, Kind::File { .. } | Kind::Link)
}

/// A blob's content, and for a file its SHA-256.
struct Blob {
    content: Vec<u8>,
    sha256: Option<String>,
}

fn read_blob(repo: &Repository, item: &Item) -> Result<Blob> {
    let blob = repo.find_blob(item.oid)?;
    let content = blob.content().to_vec();
    let sha256 = matches!(item.kind, Kind::File { .. }).then(|| hex(&Sha256::digest(&content)));
    Ok(Blob { content, sha256 })
}

/// Creates `items` under `dir`, each blob's content from `blob` (asked for in order).
fn write_all(
    items: &[Item],
    dir: &Path,
    label: &str,
    blob: &mut dyn FnMut(&Item) -> Result<Blob>,
) -> Result<Written> {
    let mut writer = Writer {
        open: vec![open_top(dir)?],
        modes: Modes::default(),
    };
    let mut entries = Vec::with_capacity(items.len());
    for item in items {
        let entry = has_blob(item.kind)
            .then(|| blob(item))
            .transpose()
            .and_then(|content| writer.write(item, content))
            .map_err(|e| anyhow::anyhow!("{label}: cannot write {}: {e}", shown(&item.path)))?;
        entries.push(entry);
    }
    Ok(Written {
        files: FileList::from_entries(entries),
        gitlinks: items.iter().any(|i| i.kind == Kind::Gitlink),
    })
}

fn open_top(dir: &Path) -> Result<OwnedFd> {
    rustix::fs::openat(CWD, dir, DIR_FLAGS, Mode::empty())
        .with_context(|| format!("cannot open {}", printable(&dir.display().to_string())))
}

/// Writes items in order, each into the last folder opened at its depth.
struct Writer {
    /// The open folders on the way to the current one (the top first).
    open: Vec<OwnedFd>,
    modes: Modes,
}

impl Writer {
    /// Creates `item` (from `blob`, for a file or a link) and describes it as
    /// [`FileList::scan`] would.
    fn write(&mut self, item: &Item, blob: Option<Blob>) -> Result<Entry> {
        self.open.truncate(item.depth + 1);
        let name = OsStr::from_bytes(item.path.rsplit(|b| *b == b'/').next().unwrap_or(&[]));
        let at = self.open.last().expect("the top folder stays open");
        let mut entry = Entry {
            path: item.path.clone(),
            kind: EntryKind::Dir,
            mode: 0,
            size: 0,
            sha256: None,
            target: None,
        };
        let (bytes, sha256) = blob.map_or((Vec::new(), None), |b| (b.content, b.sha256));
        match item.kind {
            Kind::Folder | Kind::Gitlink => {
                let folder = new_folder(at, name)?;
                entry.mode = Modes::learn(&mut self.modes.folder, &folder)?;
                if item.kind == Kind::Folder {
                    self.open.push(folder);
                }
            }
            Kind::File { executable } => {
                let asked = if executable { 0o755 } else { 0o644 };
                let file = new_file(at, name, asked, &bytes)?;
                let slot = if executable {
                    &mut self.modes.executable
                } else {
                    &mut self.modes.file
                };
                entry.mode = Modes::learn(slot, &file)?;
                entry.kind = EntryKind::File;
                entry.size = bytes.len() as u64;
                entry.sha256 = sha256;
            }
            Kind::Link => {
                rustix::fs::symlinkat(&bytes, at, name)?;
                entry.kind = EntryKind::Link;
                // What `lstat` says of every link on Linux.
                entry.mode = 0o777;
                entry.target = Some(bytes);
            }
        }
        Ok(entry)
    }
}

/// A new folder `name` in `at`, opened.
fn new_folder(at: &OwnedFd, name: &OsStr) -> Result<OwnedFd> {
    rustix::fs::mkdirat(at, name, Mode::from_raw_mode(0o755))?;
    Ok(rustix::fs::openat(at, name, DIR_FLAGS, Mode::empty())?)
}

/// A new file `name` in `at` asked for with mode `asked`, holding `content`.
fn new_file(at: &OwnedFd, name: &OsStr, asked: u32, content: &[u8]) -> Result<OwnedFd> {
    let fd = rustix::fs::openat(at, name, NEW_FILE, Mode::from_raw_mode(asked))?;
    let mut file = File::from(fd);
    file.write_all(content)?;
    Ok(file.into())
}

/// The modes new entries get here (the umask, a default ACL or a set-group-id folder may
/// change what is asked for): learned from the first entry of each kind.
#[derive(Default)]
struct Modes {
    folder: Option<u32>,
    file: Option<u32>,
    executable: Option<u32>,
}

impl Modes {
    fn learn(slot: &mut Option<u32>, fd: &OwnedFd) -> Result<u32> {
        if let Some(mode) = *slot {
            return Ok(mode);
        }
        let mode = rustix::fs::fstat(fd)?.st_mode & 0o7777;
        *slot = Some(mode);
        Ok(mode)
    }
}

// ---------------------------------------------------------------------------------------------
// Names libgit2 refuses to check out (path.c and fs_path.c of libgit2, with the `.git`
// checks of NTFS and HFS+ both on)

/// Whether an entry named `name` is refused; `link`: the entry is a symbolic link.
pub(crate) fn refused(name: &[u8], link: bool) -> bool {
    name.is_empty()
        || name == b"."
        || name == b".."
        || name.contains(&b'/')
        || name.contains(&0)
        || ntfs_dot_git(name)
        || hfs_is(name, b"git")
        || (link && gitmodules_alias(name))
}

/// Whether a link at `path` is refused for a folder on its way: libgit2 checks every part
/// of a link's path against the `.gitmodules` aliases.
fn link_path_refused(path: &[u8]) -> bool {
    path.split(|b| *b == b'/').any(gitmodules_alias)
}

fn gitmodules_alias(name: &[u8]) -> bool {
    hfs_is(name, b"gitmodules") || ntfs_is(name, b"gitmodules", b"gi7eba")
}

/// `.git` or `git~1` (any case) followed by nothing but dots and spaces, or by `\` or `:`.
fn ntfs_dot_git(name: &[u8]) -> bool {
    let Some(start) = [&b".git"[..], &b"git~1"[..]]
        .iter()
        .find(|r| name.len() >= r.len() && name[..r.len()].eq_ignore_ascii_case(r))
        .map(|r| r.len())
    else {
        return false;
    };
    let rest = &name[start..];
    matches!(rest.first(), Some(b'\\' | b':')) || rest.iter().all(|c| matches!(c, b' ' | b'.'))
}

/// Whether NTFS could take `name` for `.<file>`: the name itself with trailing dots and
/// spaces or an alternate stream, its 8.3 short name (`<file>` cut to 6 and `~1`..`~4`), or
/// a fallback short name (`<short>` cut, `~` and digits).
fn ntfs_is(name: &[u8], file: &[u8], short: &[u8]) -> bool {
    if name.len() > file.len() && name[0] == b'.' && name[1..=file.len()].eq_ignore_ascii_case(file)
    {
        return ntfs_end_of_name(&name[file.len() + 1..]);
    }
    if name.len() >= 8
        && name[..6].eq_ignore_ascii_case(&file[..6])
        && name[6] == b'~'
        && (b'1'..=b'4').contains(&name[7])
    {
        return ntfs_end_of_name(&name[8..]);
    }
    let at = |i: usize| name.get(i).copied().unwrap_or(0);
    let mut saw_tilde = false;
    for i in 0..8 {
        let c = at(i);
        if c == 0 {
            return false;
        } else if saw_tilde {
            if !c.is_ascii_digit() {
                return false;
            }
        } else if c == b'~' {
            if !(b'1'..=b'9').contains(&at(i + 1)) {
                return false;
            }
            saw_tilde = true;
        } else if i >= 6 || c > 127 || Some(&c.to_ascii_lowercase()) != short.get(i) {
            return false;
        }
    }
    ntfs_end_of_name(&name[8..])
}

/// Whether Windows ends the name here: only dots and spaces up to its end or a `:`.
fn ntfs_end_of_name(rest: &[u8]) -> bool {
    for c in rest {
        match c {
            b':' => return true,
            b' ' | b'.' => {}
            _ => return false,
        }
    }
    true
}

/// Whether HFS+ could take `name` for `.<word>`, compared as libgit2 compares them (see
/// [`hfs_chars`]).
fn hfs_is(name: &[u8], word: &[u8]) -> bool {
    let mut chars = hfs_chars(name);
    chars.next() == Some(b'.')
        && word.iter().all(|w| chars.next() == Some(*w))
        && chars.next() == Some(0)
}

/// The characters of `name` as libgit2 reads them for HFS+: code points it ignores left
/// out, each other one cut to its low byte and that byte folded to lower case (ASCII), so
/// that U+0147 reads as `g` and U+0100 as the end of the name; `0xff` where the bytes stop
/// being UTF-8 (nothing is read after that), then `0` for ever.
fn hfs_chars(name: &[u8]) -> impl Iterator<Item = u8> + '_ {
    let first = name.utf8_chunks().next();
    let valid = first.as_ref().map_or("", |chunk| chunk.valid());
    let broken = first.is_some_and(|chunk| !chunk.invalid().is_empty());
    valid
        .chars()
        .map(u32::from)
        .filter(|c| !hfs_ignored(*c))
        .map(|c| (c as u8).to_ascii_lowercase())
        .chain(broken.then_some(0xff))
        .chain(std::iter::repeat(0))
}

fn hfs_ignored(c: u32) -> bool {
    matches!(c, 0x200c..=0x200f | 0x202a..=0x202e | 0x206a..=0x206f | 0xfeff)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::git::transport::check_out;
    use std::fs;
    use std::path::PathBuf;

    /// A bare repository in a temporary folder.
    fn repository() -> (tempfile::TempDir, Repository) {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init_bare(dir.path().join("repo.git")).unwrap();
        (dir, repo)
    }

    /// A tree object of `entries` (mode, name, object) exactly as given: no sorting, no
    /// checks, so trees git would never write can be made.
    fn raw_tree(repo: &Repository, entries: &[(&str, &[u8], Oid)]) -> Oid {
        let mut bytes = Vec::new();
        for (mode, name, oid) in entries {
            bytes.extend_from_slice(mode.as_bytes());
            bytes.push(b' ');
            bytes.extend_from_slice(name);
            bytes.push(0);
            bytes.extend_from_slice(oid.as_bytes());
        }
        repo.odb()
            .unwrap()
            .write(git2::ObjectType::Tree, &bytes)
            .unwrap()
    }

    fn commit(repo: &Repository, tree: Oid) -> git2::Commit<'_> {
        let sig = git2::Signature::now("t", "t@t").unwrap();
        let tree = repo.find_tree(tree).unwrap();
        let id = repo.commit(None, &sig, &sig, "m", &tree, &[]).unwrap();
        repo.find_commit(id).unwrap()
    }

    /// Writes `tree` with [`plan`] and [`write_items`] (whatever the user's configuration).
    fn write(repo: &Repository, tree: Oid, dir: &Path) -> Result<Option<Written>> {
        fs::create_dir_all(dir).unwrap();
        let tree = repo.find_tree(tree).unwrap();
        match plan(repo, &tree, "r")? {
            Some(items) => write_items(repo, &items, dir, "r").map(Some),
            None => Ok(None),
        }
    }

    /// A tree with what extensions hold: nested folders, an executable, an empty file,
    /// links (inside, outside, dangling, to a folder), a name that is not UTF-8, a folder
    /// holding only an empty folder (git writes neither) and a gitlink.
    fn varied_tree(repo: &Repository) -> Oid {
        let blob = |content: &[u8]| repo.blob(content).unwrap();
        let empty_tree = raw_tree(repo, &[]);
        let only_empty = raw_tree(repo, &[("40000", b"nothing", empty_tree)]);
        let util = raw_tree(
            repo,
            &[
                ("100644", b"a.js", blob(b"module.exports = 1;\n")),
                ("100644", b"caf\xe9.txt", blob(b"latin-1 name\n")),
                ("100644", b"empty", blob(b"")),
            ],
        );
        let lib = raw_tree(
            repo,
            &[
                ("100755", b"run", blob(b"#!/bin/sh\nexit 0\n")),
                ("40000", b"util", util),
            ],
        );
        raw_tree(
            repo,
            &[
                ("100644", b".github", blob(b"not a folder\n")),
                ("120000", b"abs", blob(b"/etc/hostname")),
                ("120000", b"dangling", blob(b"missing/file")),
                ("100644", b"extension.json", blob(b"{\"name\":\"x\"}\n")),
                ("40000", b"hollow", only_empty),
                ("40000", b"lib", lib),
                ("120000", b"run", blob(b"lib/run")),
                (
                    "160000",
                    b"sub",
                    Oid::from_str("0123456789abcdef0123456789abcdef01234567").unwrap(),
                ),
                ("120000", b"to-lib", blob(b"lib")),
            ],
        )
    }

    #[test]
    fn the_tree_written_is_the_one_libgit2_checks_out_and_its_list_is_a_scan_of_it() {
        let (tmp, repo) = repository();
        let tree = varied_tree(&repo);
        let ours = tmp.path().join("ours");
        let written = write(&repo, tree, &ours).unwrap().unwrap();
        let theirs = tmp.path().join("theirs");
        check_out(&repo, &commit(&repo, tree), &theirs).unwrap();
        let scanned = FileList::scan(&ours).unwrap();
        assert_eq!(scanned, FileList::scan(&theirs).unwrap());
        assert_eq!(written.files, scanned);
        assert!(written.gitlinks);
        assert!(!ours.join("hollow").exists());
        let mut links: Vec<_> = written.files.links().into_iter().map(|(l, _)| l).collect();
        links.sort();
        assert_eq!(
            links,
            ["abs", "dangling", "run", "to-lib"].map(PathBuf::from)
        );
        // The helper sends the list as bytes; the links read back from it are the same.
        let sent = FileList::from_bytes(&written.files.to_bytes()).unwrap();
        assert_eq!(sent.links(), written.files.links());
    }

    #[test]
    fn a_tree_read_on_a_second_thread_is_written_as_libgit2_checks_it_out() {
        let (tmp, repo) = repository();
        let varied = varied_tree(&repo);
        let big = repo.blob(&vec![b'x'; READ_AHEAD_SIZE + 1]).unwrap();
        let mut folders = Vec::new();
        let names: Vec<Vec<String>> = (0..4)
            .map(|f| {
                (0..READ_AHEAD_FROM / 3)
                    .map(|i| format!("f{f}-{i}.js"))
                    .collect()
            })
            .collect();
        for (f, names) in names.iter().enumerate() {
            let blobs: Vec<Oid> = (0..names.len())
                .map(|i| repo.blob(format!("file {f} {i}\n").as_bytes()).unwrap())
                .collect();
            let entries: Vec<(&str, &[u8], Oid)> = names
                .iter()
                .zip(&blobs)
                .map(|(n, b)| ("100644", n.as_bytes(), *b))
                .collect();
            folders.push(raw_tree(&repo, &entries));
        }
        let tree = raw_tree(
            &repo,
            &[
                ("40000", b"a", folders[0]),
                ("40000", b"b", folders[1]),
                ("100644", b"big", big),
                ("40000", b"c", folders[2]),
                ("40000", b"d", folders[3]),
                ("40000", b"varied", varied),
            ],
        );
        let ours = tmp.path().join("ours");
        let written = write(&repo, tree, &ours).unwrap().unwrap();
        let theirs = tmp.path().join("theirs");
        check_out(&repo, &commit(&repo, tree), &theirs).unwrap();
        let scanned = FileList::scan(&ours).unwrap();
        assert!(scanned.entries().len() > READ_AHEAD_FROM);
        assert_eq!(scanned, FileList::scan(&theirs).unwrap());
        assert_eq!(written.files, scanned);
        assert_eq!(written.files.links().len(), 4);
    }

    /// A loose object that says it is a blob of 100 bytes and holds 3: its header reads,
    /// its content does not.
    fn corrupt_blob(repo: &Repository) -> Oid {
        let id = Oid::from_str("00000000000000000000000000000000000c0a7e").unwrap();
        let inflated = b"blob 100\0abc";
        // zlib: one stored deflate block, then the Adler-32 of what it holds.
        let len = u16::try_from(inflated.len()).unwrap();
        let mut bytes = vec![0x78, 0x01, 0x01];
        bytes.extend_from_slice(&len.to_le_bytes());
        bytes.extend_from_slice(&(!len).to_le_bytes());
        bytes.extend_from_slice(inflated);
        let (a, b) = inflated.iter().fold((1_u32, 0_u32), |(a, b), &c| {
            let a = (a + u32::from(c)) % 65521;
            (a, (b + a) % 65521)
        });
        bytes.extend_from_slice(&((b << 16) | a).to_be_bytes());
        let hex = id.to_string();
        let (fan_out, rest) = hex.split_at(2);
        let folder = repo.path().join("objects").join(fan_out);
        fs::create_dir_all(&folder).unwrap();
        fs::write(folder.join(rest), bytes).unwrap();
        assert!(repo.odb().unwrap().read_header(id).is_ok());
        assert!(repo.find_blob(id).is_err());
        id
    }

    #[test]
    fn a_blob_that_cannot_be_read_is_named_with_the_repository_on_either_thread() {
        let (tmp, repo) = repository();
        let missing = Oid::from_str("0123456789abcdef0123456789abcdef01234567").unwrap();
        let corrupt = corrupt_blob(&repo);
        for (count, bad) in [(3, missing), (3, corrupt), (READ_AHEAD_FROM + 10, corrupt)] {
            let names: Vec<String> = (0..count).map(|i| format!("f{i:04}")).collect();
            let mut entries: Vec<(&str, &[u8], Oid)> = names
                .iter()
                .map(|n| ("100644", n.as_bytes(), repo.blob(n.as_bytes()).unwrap()))
                .collect();
            entries.insert(count / 2, ("100644", b"f-bad", bad));
            let tree = raw_tree(&repo, &entries);
            let dir = tmp.path().join(format!("out-{count}-{bad}"));
            let err = write(&repo, tree, &dir).unwrap_err().to_string();
            assert!(err.starts_with("r: cannot write f-bad: "), "{err}");
        }
    }

    #[test]
    fn modes_follow_the_umask_as_libgit2_writes_them() {
        let (tmp, repo) = repository();
        let tree = varied_tree(&repo);
        let ours = tmp.path().join("ours");
        let written = write(&repo, tree, &ours).unwrap().unwrap();
        let mode = |p: &str| {
            use std::os::unix::fs::MetadataExt;
            fs::symlink_metadata(ours.join(p)).unwrap().mode() & 0o7777
        };
        assert_eq!(written.files.get(b"lib/run").unwrap().mode, mode("lib/run"));
        assert_eq!(mode("lib/run") & 0o100, 0o100);
        assert_eq!(mode("extension.json") & 0o111, 0);
        assert_eq!(written.files.get(b"lib").unwrap().mode, mode("lib"));
    }

    #[test]
    fn an_attributes_file_anywhere_leaves_the_checkout_to_libgit2() {
        let (tmp, repo) = repository();
        let text = repo.blob(b"*.txt eol=crlf\n").unwrap();
        let inner = raw_tree(&repo, &[("100644", b".GitAttributes", text)]);
        let tree = raw_tree(
            &repo,
            &[
                ("100644", b"a.txt", repo.blob(b"x\n").unwrap()),
                ("40000", b"deep", inner),
            ],
        );
        let dir = tmp.path().join("out");
        assert!(write(&repo, tree, &dir).unwrap().is_none());
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 0, "nothing written");
    }

    #[test]
    fn unusual_modes_leave_the_checkout_to_libgit2() {
        let (tmp, repo) = repository();
        let blob = repo.blob(b"x").unwrap();
        for mode in ["100664", "100775", "120755"] {
            let tree = raw_tree(&repo, &[(mode, b"f", blob)]);
            assert!(
                write(&repo, tree, &tmp.path().join(mode))
                    .unwrap()
                    .is_none(),
                "{mode}"
            );
        }
    }

    #[test]
    fn line_ending_settings_leave_the_checkout_to_libgit2() {
        let (_tmp, repo) = repository();
        let mut config = repo.config().unwrap();
        let local = |c: &mut git2::Config| c.open_level(git2::ConfigLevel::Local).unwrap();
        let mut local_config = local(&mut config);
        local_config.set_bool("core.autocrlf", false).unwrap();
        local_config.set_bool("core.symlinks", true).unwrap();
        let plain_here = plain_configuration(&repo);
        for (key, value) in [
            ("core.autocrlf", "true"),
            ("core.autocrlf", "input"),
            ("core.eol", "crlf"),
            ("core.attributesFile", "/nowhere/attributes"),
            ("core.symlinks", "false"),
        ] {
            local_config.set_str(key, value).unwrap();
            assert!(!plain_configuration(&repo), "{key} = {value}");
            local_config.remove(key).unwrap();
        }
        // With those settings gone, only the user's own configuration decides.
        assert_eq!(plain_configuration(&repo), plain_here);
    }

    #[test]
    fn a_link_and_a_folder_of_the_same_name_never_write_through_the_link() {
        let (tmp, repo) = repository();
        let outside = tmp.path().join("outside");
        fs::create_dir(&outside).unwrap();
        let target = repo.blob(outside.as_os_str().as_bytes()).unwrap();
        let inner = raw_tree(&repo, &[("100644", b"x", repo.blob(b"pwned").unwrap())]);
        for (n, entries) in [
            [("120000", &b"a"[..], target), ("40000", &b"a"[..], inner)],
            [("40000", &b"a"[..], inner), ("120000", &b"a"[..], target)],
        ]
        .iter()
        .enumerate()
        {
            let tree = raw_tree(&repo, entries);
            let dir = tmp.path().join(format!("out{n}"));
            assert!(write(&repo, tree, &dir).is_err());
            assert!(!outside.join("x").exists());
        }
    }

    #[test]
    fn unsafe_names_are_refused_before_anything_is_written() {
        let (tmp, repo) = repository();
        let blob = repo.blob(b"x").unwrap();
        for name in [
            &b"."[..],
            b"..",
            b".git",
            b".GIT",
            b"a/b",
            b".git.",
            b"git~1",
            b".g\xe2\x80\x8cit",
        ] {
            let inner = raw_tree(&repo, &[("100644", name, blob)]);
            let tree = raw_tree(&repo, &[("100644", b"first", blob), ("40000", b"d", inner)]);
            let dir = tmp.path().join("out");
            let err = write(&repo, tree, &dir).unwrap_err().to_string();
            assert!(err.contains("not safe to check out"), "{err}");
            assert_eq!(fs::read_dir(&dir).unwrap().count(), 0, "{err}");
            fs::remove_dir(&dir).unwrap();
        }
    }

    #[test]
    fn names_refused_as_libgit2_refuses_them() {
        for name in [
            &b""[..],
            b".",
            b"..",
            b".git",
            b".Git",
            b".git ",
            b".git. .",
            b".git:stream",
            b".git\\config",
            b"GIT~1",
            b"git~1..",
            b".g\xe2\x80\x8ci\xef\xbb\xbft",
            b".\xc5\xa7it",      // U+0167: libgit2 compares its low byte, 'g'
            b".\xc5\x87it",      // U+0147: its low byte 'G', folded to 'g'
            b".git\xc4\x80\xff", // U+0100: its low byte NUL ends the name there
            b"a/b",
            b"nul\0",
        ] {
            assert!(refused(name, false), "{}", String::from_utf8_lossy(name));
        }
        for name in [
            &b".github"[..],
            b".gitignore",
            b".gitmodules",
            b"git~10",
            b"git~1.txt",
            b"...",
            b"gitmod~1",
            b"\xff.git",
        ] {
            assert!(!refused(name, false), "{}", String::from_utf8_lossy(name));
        }
        for link in [
            &b".gitmodules"[..],
            b".GITMODULES . ",
            b".gitmodules:x",
            b"gitmod~1",
            b"GITMOD~4",
            b"gi7eba~9",
            b".g\xe2\x80\x8citmodules",
        ] {
            assert!(refused(link, true), "{}", String::from_utf8_lossy(link));
            assert!(!refused(link, false), "{}", String::from_utf8_lossy(link));
        }
        for link in [&b".gitmodulesx"[..], b"gitmod~5", b"gi7eba~x", b"gi7ebb~1"] {
            assert!(!refused(link, true), "{}", String::from_utf8_lossy(link));
        }
        assert!(link_path_refused(b"gitmod~1/run"));
        assert!(!link_path_refused(b"lib/run"));
    }

    /// Whether libgit2 refuses `name` as a path of the index of `repo` (whose configuration
    /// turns on both protections): the `.git` checks of its checkout.
    fn libgit2_refuses(repo: &Repository, name: &[u8]) -> bool {
        let time = git2::IndexTime::new(0, 0);
        let entry = git2::IndexEntry {
            ctime: time,
            mtime: time,
            dev: 0,
            ino: 0,
            mode: 0o100_644,
            uid: 0,
            gid: 0,
            file_size: 0,
            id: repo.blob(b"x").unwrap(),
            flags: 0,
            flags_extended: 0,
            path: name.to_vec(),
        };
        repo.index().unwrap().add(&entry).is_err()
    }

    #[test]
    fn names_like_dot_git_to_hfs_are_refused_exactly_as_libgit2_refuses_them() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = Repository::init(tmp.path().join("work")).unwrap();
        let mut config = repo.config().unwrap();
        config.set_bool("core.protectHFS", true).unwrap();
        config.set_bool("core.protectNTFS", true).unwrap();
        // Code points whose low byte is one of `.git`'s, in either case, or NUL; ones HFS+
        // ignores; others.
        let mut points: Vec<char> = "._gGiItT\u{200c}\u{feff}\u{ff}~1 :".chars().collect();
        for low in [b'.', b'g', b'G', b'i', b't', b'T', 0] {
            for high in [0x100_u32, 0x700, 0x1f00, 0x1_0000] {
                points.extend(char::from_u32(high | u32::from(low)));
            }
        }
        let word: Vec<char> = ".git".chars().collect();
        // Where the bytes stop being UTF-8, and a name ended early by U+0100 before that.
        let mut names: Vec<Vec<u8>> = vec![
            b".git\xff".to_vec(),
            b".\xffgit".to_vec(),
            b".git\xc4\x80\xff".to_vec(),
        ];
        for at in 0..=word.len() {
            for point in &points {
                for replace in [true, false] {
                    let mut name = word.clone();
                    if replace && at < word.len() {
                        name[at] = *point;
                    } else {
                        name.insert(at, *point);
                    }
                    names.push(name.into_iter().collect::<String>().into_bytes());
                }
            }
        }
        // (A path in libgit2's index ends at a NUL.)
        for name in names.iter().filter(|n| !n.contains(&0)) {
            assert_eq!(
                refused(name, false),
                libgit2_refuses(&repo, name),
                "{}",
                String::from_utf8_lossy(name).escape_unicode()
            );
        }
    }
}
