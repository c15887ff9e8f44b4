//! A fetch-cache entry made of hard links to a checked-out tree ([`link_tree`]), so a fresh
//! git install writes each file once: the cache shares the checkout's files instead of
//! holding a second copy of them.
//!
//! This is safe because the cache never trusts an entry's bytes: [`super::cache::Cache::get`]
//! copies an entry out (it never links) and hashes what it copied, so an entry whose files
//! were later changed through the installed extension is only a miss (and is deleted). The
//! store itself never writes into an installed file: manifest edits and carried files
//! replace the file (a new inode), leaving the cache's link untouched.
//!
//! The walk follows the given list, never the disk: folders are made (with their modes when
//! those leave them open to the owner, else open and their modes set last, the deepest
//! first, so a read-only folder is filled before it closes), files are linked from
//! the checkout through folder handles opened without following links (`linkat` itself
//! never follows a link either), and links are made as links. The checkout is reached
//! through a handle on its top folder, not its path, so the walk may go on while the tree
//! is renamed into place.

use std::ffi::OsStr;
use std::io;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use rustix::fs::{AtFlags, CWD, Mode};

use crate::fsx::DIR_FLAGS;
use crate::store::filelist::{Entry, EntryKind, FileList};

/// The mode a folder is made with when its own would close it (set at the end).
const OPEN_FOLDER: u32 = 0o700;

/// Makes `to` (a new folder) the tree `list` describes, its files hard links to those of
/// the tree `from` is the top folder of (the tree `list` was made of). Any error leaves `to`
/// for the caller to delete: `EXDEV` when `from` is on another file system, `EPERM` where
/// hard links are refused, `EMLINK` at the link limit.
pub(crate) fn link_tree(from: BorrowedFd, to: &Path, list: &FileList) -> io::Result<()> {
    rustix::fs::mkdir(to, Mode::from_raw_mode(OPEN_FOLDER))?;
    let mut walk = Walk::new(from, to)?;
    let mut modes = FolderModes::default();
    for entry in list.entries() {
        let (parent, name) = split(&entry.path);
        let (src, dst) = walk.enter(parent)?;
        match entry.kind {
            EntryKind::Dir => modes.make(dst, name, entry.mode)?,
            EntryKind::File => rustix::fs::linkat(src, name, dst, name, AtFlags::empty())?,
            EntryKind::Link => {
                let target = entry.target.as_deref().unwrap_or_default();
                rustix::fs::symlinkat(target, dst, name)?;
            }
        }
    }
    set_folder_modes(from, to, list, &modes)
}

/// Gives every folder of `to` that `mkdir` did not make as listed its listed mode, the
/// deepest first (in reverse order of the sorted list, what a folder holds comes before
/// it).
fn set_folder_modes(
    from: BorrowedFd,
    to: &Path,
    list: &FileList,
    modes: &FolderModes,
) -> io::Result<()> {
    let mut walk = Walk::new(from, to)?;
    let folders = list.entries().iter().rev();
    let unmade = folders.filter(|e| e.kind == EntryKind::Dir && !modes.made_as(e.mode));
    for Entry { path, mode, .. } in unmade {
        let (parent, name) = split(path);
        let (_, dst) = walk.enter(parent)?;
        rustix::fs::chmodat(dst, name, Mode::from_raw_mode(*mode), AtFlags::empty())?;
    }
    Ok(())
}

/// The listed folder modes that `mkdir` gives exactly here (the umask, a default ACL or a
/// set-group-id folder above may change what is asked for): learned from the first folder
/// made with each. A mode without full access for the owner, or with special bits, is never
/// asked of `mkdir` (such a folder is made open and its mode set at the end).
#[derive(Default)]
struct FolderModes {
    learned: Vec<(u32, bool)>,
}

impl FolderModes {
    /// Makes the folder `name` in `at` for the listed `mode`.
    fn make(&mut self, at: &OwnedFd, name: &OsStr, mode: u32) -> io::Result<()> {
        let asked = if mode & 0o7700 == 0o700 {
            mode
        } else {
            OPEN_FOLDER
        };
        rustix::fs::mkdirat(at, name, Mode::from_raw_mode(asked))?;
        if asked == mode && !self.learned.iter().any(|(m, _)| *m == mode) {
            let stat = rustix::fs::statat(at, name, AtFlags::SYMLINK_NOFOLLOW)?;
            // `st_mode` is narrower than u32 on macOS.
            #[allow(clippy::unnecessary_cast)]
            let exact = stat.st_mode as u32 & 0o7777 == mode;
            self.learned.push((mode, exact));
        }
        Ok(())
    }

    /// Whether folders listed with `mode` were made with it.
    fn made_as(&self, mode: u32) -> bool {
        self.learned.iter().any(|(m, exact)| *m == mode && *exact)
    }
}

/// `path`'s folder (empty at the top) and its name.
fn split(path: &[u8]) -> (&[u8], &OsStr) {
    match path.iter().rposition(|b| *b == b'/') {
        Some(at) => (&path[..at], OsStr::from_bytes(&path[at + 1..])),
        None => (&[], OsStr::from_bytes(path)),
    }
}

/// The folders open on the way to the current one, in both trees (the top first).
struct Walk {
    open: Vec<Level>,
}

struct Level {
    name: Vec<u8>,
    from: OwnedFd,
    to: OwnedFd,
}

impl Walk {
    fn new(from: BorrowedFd, to: &Path) -> io::Result<Walk> {
        let top = Level {
            name: Vec::new(),
            from: from.try_clone_to_owned()?,
            to: rustix::fs::openat(CWD, to, DIR_FLAGS, Mode::empty())?,
        };
        Ok(Walk { open: vec![top] })
    }

    /// The handles of folder `path` (`/`-separated, empty at the top) in both trees: the
    /// open ones it shares with the current folder are kept, the rest opened one part at a
    /// time, never through a link.
    fn enter(&mut self, path: &[u8]) -> io::Result<(&OwnedFd, &OwnedFd)> {
        let parts: Vec<&[u8]> = match path {
            [] => Vec::new(),
            _ => path.split(|b| *b == b'/').collect(),
        };
        let shared = self.open[1..]
            .iter()
            .zip(&parts)
            .take_while(|(level, part)| level.name == **part)
            .count();
        self.open.truncate(shared + 1);
        for part in &parts[shared..] {
            let name = OsStr::from_bytes(part);
            let at = self.open.last().expect("the top stays open");
            let level = Level {
                name: part.to_vec(),
                from: rustix::fs::openat(&at.from, name, DIR_FLAGS, Mode::empty())?,
                to: rustix::fs::openat(&at.to, name, DIR_FLAGS, Mode::empty())?,
            };
            self.open.push(level);
        }
        let last = self.open.last().expect("the top stays open");
        Ok((&last.from, &last.to))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::fd::AsFd;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    /// [`link_tree`] from the tree at `from`.
    fn link_path(from: &Path, to: &Path, list: &FileList) -> io::Result<()> {
        let top = rustix::fs::openat(CWD, from, DIR_FLAGS, Mode::empty())?;
        link_tree(top.as_fd(), to, list)
    }

    /// A tree with a read-only folder, folders of unusual modes, an executable, an empty file, a link, a non-UTF-8
    /// name, and names that sort between a folder and what it holds (`a-b` between `a` and
    /// `a/x`).
    fn tree(root: &Path) {
        fs::create_dir_all(root.join("a/deep/er")).unwrap();
        fs::write(root.join("a/x"), "x").unwrap();
        fs::write(root.join("a-b"), "").unwrap();
        fs::write(root.join("a/deep/er/run"), "#!/bin/sh\n").unwrap();
        fs::set_permissions(
            root.join("a/deep/er/run"),
            fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        fs::write(root.join(OsStr::from_bytes(b"odd\xff")), "odd").unwrap();
        std::os::unix::fs::symlink("a/x", root.join("link")).unwrap();
        // Modes a common umask (022) would cut, and a set-group-id folder.
        for (folder, mode) in [("wide", 0o777), ("shared", 0o2755)] {
            fs::create_dir(root.join(folder)).unwrap();
            fs::write(root.join(folder).join("f"), folder).unwrap();
            fs::set_permissions(root.join(folder), fs::Permissions::from_mode(mode)).unwrap();
        }
        fs::create_dir(root.join("ro")).unwrap();
        fs::write(root.join("ro/inside"), "in").unwrap();
        fs::set_permissions(root.join("ro"), fs::Permissions::from_mode(0o555)).unwrap();
    }

    #[test]
    fn the_linked_tree_is_the_listed_one_and_shares_its_files() {
        let tmp = tempfile::tempdir().unwrap();
        let (from, to) = (tmp.path().join("from"), tmp.path().join("to"));
        fs::create_dir(&from).unwrap();
        tree(&from);
        let list = FileList::scan(&from).unwrap();
        link_path(&from, &to, &list).unwrap();
        assert_eq!(FileList::scan(&to).unwrap(), list);
        let inode = |p: &Path| fs::symlink_metadata(p).unwrap().ino();
        assert_eq!(inode(&from.join("a/x")), inode(&to.join("a/x")));
        assert_eq!(inode(&from.join("ro/inside")), inode(&to.join("ro/inside")));
        assert_eq!(fs::read_link(to.join("link")).unwrap(), Path::new("a/x"));
        fs::set_permissions(to.join("ro"), fs::Permissions::from_mode(0o755)).unwrap();
        fs::set_permissions(from.join("ro"), fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn the_tree_is_reached_through_its_handle_while_it_moves() {
        let tmp = tempfile::tempdir().unwrap();
        let (from, to) = (tmp.path().join("from"), tmp.path().join("to"));
        fs::create_dir(&from).unwrap();
        tree(&from);
        let list = FileList::scan(&from).unwrap();
        let top = rustix::fs::openat(CWD, &from, DIR_FLAGS, Mode::empty()).unwrap();
        let moved = tmp.path().join("moved");
        fs::rename(&from, &moved).unwrap();
        fs::create_dir(&from).unwrap();
        link_tree(top.as_fd(), &to, &list).unwrap();
        assert_eq!(FileList::scan(&to).unwrap(), list);
        let inode = |p: &Path| fs::symlink_metadata(p).unwrap().ino();
        assert_eq!(inode(&moved.join("a/x")), inode(&to.join("a/x")));
        for ro in [&to, &moved] {
            fs::set_permissions(ro.join("ro"), fs::Permissions::from_mode(0o755)).unwrap();
        }
    }

    #[test]
    fn a_folder_that_became_a_link_is_not_followed() {
        let tmp = tempfile::tempdir().unwrap();
        let (from, to) = (tmp.path().join("from"), tmp.path().join("to"));
        let outside = tmp.path().join("outside");
        fs::create_dir_all(from.join("a")).unwrap();
        fs::write(from.join("a/x"), "x").unwrap();
        let list = FileList::scan(&from).unwrap();
        fs::create_dir(&outside).unwrap();
        fs::write(outside.join("x"), "secret").unwrap();
        fs::remove_dir_all(from.join("a")).unwrap();
        std::os::unix::fs::symlink(&outside, from.join("a")).unwrap();
        let err = link_path(&from, &to, &list).unwrap_err();
        assert!(!to.join("a/x").exists(), "{err}");
    }
}
