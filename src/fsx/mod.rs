//! The filesystem, treated as untrusted: anything under a root or a state folder may be a
//! link, a FIFO, a device, huge or unreadable.
//!
//! Here: folder handles that never follow a symbolic link (every name is looked up relative
//! to an open directory with `O_NOFOLLOW`, so a link planted in the store's state folder
//! cannot lead a deletion or a write outside it; the one deletion function,
//! [`Folder::remove`], lives here). In [`bounded`]: reads that never block on a special file
//! and never take more than a cap.

pub(crate) mod bounded;
pub(crate) mod crashpoint;

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use rustix::fs::{AtFlags, CWD, FileType, Mode, OFlags, Stat};
use rustix::io::Errno;

/// Whether a write is flushed to disk at once, or left to the caller's later flush of the
/// file system ([`Folder::sync_filesystem`]: one flush for many files).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flush {
    Now,
    Later,
}

/// An open directory and the path it was opened at (for messages only).
#[derive(Debug)]
pub(crate) struct Folder {
    fd: OwnedFd,
    path: PathBuf,
}

/// What stands at a name that had to be a folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wrong {
    Link,
    NotFolder(&'static str),
}

/// Opening a folder failed: something else is there, or an I/O error.
#[derive(Debug)]
pub(crate) enum OpenError {
    Wrong(Wrong),
    Io(io::Error),
}

impl From<Errno> for OpenError {
    fn from(e: Errno) -> Self {
        OpenError::Io(e.into())
    }
}

/// A folder opened to be read or to have things made in it, never through a link.
pub(crate) const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

/// The identity of a file system object, which a rename keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Identity {
    pub dev: u64,
    pub ino: u64,
}

impl Identity {
    // The field types differ between platforms (u32 on some).
    #[allow(clippy::unnecessary_cast)]
    pub(crate) fn of(stat: &Stat) -> Identity {
        Identity {
            dev: stat.st_dev as u64,
            ino: stat.st_ino as u64,
        }
    }
}

/// A name for a temporary entry that no other run of zot picks at the same time.
pub(crate) fn unique_name(prefix: &str) -> String {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{prefix}{}-{nanos:x}-{n}", std::process::id())
}

/// The kind of a file, in words.
pub(crate) fn kind_of(stat: &Stat) -> &'static str {
    match FileType::from_raw_mode(stat.st_mode) {
        FileType::RegularFile => "a regular file",
        FileType::Directory => "a folder",
        FileType::Symlink => "a symbolic link",
        FileType::Fifo => "a named pipe",
        FileType::Socket => "a socket",
        FileType::CharacterDevice | FileType::BlockDevice => "a device",
        FileType::Unknown => "an unknown kind of file",
    }
}

impl Folder {
    /// Opens the folder at `path`, following links in the path itself (the roots may be
    /// links the user made).
    pub(crate) fn open_path(path: &Path) -> io::Result<Folder> {
        let fd = rustix::fs::openat(
            CWD,
            path,
            DIR_FLAGS.difference(OFlags::NOFOLLOW),
            Mode::empty(),
        )?;
        Ok(Folder {
            fd,
            path: path.to_path_buf(),
        })
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn try_clone(&self) -> io::Result<Folder> {
        Ok(Folder {
            fd: self.fd.try_clone()?,
            path: self.path.clone(),
        })
    }

    /// The folder `name` inside this one, never through a link; with `create`, made when
    /// missing. `Ok(None)`: missing and not created.
    pub(crate) fn sub(&self, name: &str, create: bool) -> Result<Option<Folder>, OpenError> {
        let path = self.path.join(name);
        let open = |fd: BorrowedFd| rustix::fs::openat(fd, name, DIR_FLAGS, Mode::empty());
        let fd = match open(self.fd.as_fd()) {
            Ok(fd) => fd,
            Err(Errno::NOENT) if create => {
                match rustix::fs::mkdirat(&self.fd, name, Mode::from_raw_mode(0o755)) {
                    Ok(()) | Err(Errno::EXIST) => {}
                    Err(e) => return Err(e.into()),
                }
                open(self.fd.as_fd()).map_err(|e| self.explain(name, e))?
            }
            Err(Errno::NOENT) => return Ok(None),
            Err(e) => return Err(self.explain(name, e)),
        };
        Ok(Some(Folder { fd, path }))
    }

    /// Why `name` could not be opened as a folder.
    fn explain(&self, name: &str, e: Errno) -> OpenError {
        if !matches!(e, Errno::LOOP | Errno::NOTDIR | Errno::MLINK) {
            return e.into();
        }
        match self.stat(name) {
            Ok(Some(stat)) if FileType::from_raw_mode(stat.st_mode) == FileType::Symlink => {
                OpenError::Wrong(Wrong::Link)
            }
            Ok(Some(stat)) => OpenError::Wrong(Wrong::NotFolder(kind_of(&stat))),
            _ => e.into(),
        }
    }

    /// The status of `name` itself (a link is not followed); `None` when it does not exist.
    pub(crate) fn stat(&self, name: impl AsRef<OsStr>) -> io::Result<Option<Stat>> {
        match rustix::fs::statat(&self.fd, name.as_ref(), AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => Ok(Some(stat)),
            Err(Errno::NOENT) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Opens the existing regular file `name` for reading, never through a link and never
    /// blocking on a special file.
    pub(crate) fn open_file(&self, name: impl AsRef<OsStr>) -> io::Result<Option<File>> {
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let fd = match rustix::fs::openat(&self.fd, name.as_ref(), flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let stat = rustix::fs::fstat(&fd)?;
        if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
            return Err(io::Error::other(format!(
                "is {}, not a regular file",
                kind_of(&stat)
            )));
        }
        Ok(Some(File::from(fd)))
    }

    /// Reads the regular file `name`, at most `limit` bytes; `None` when it does not exist.
    pub(crate) fn read_file(
        &self,
        name: impl AsRef<OsStr>,
        limit: u64,
    ) -> io::Result<Option<Vec<u8>>> {
        let Some(file) = self.open_file(name)? else {
            return Ok(None);
        };
        let mut bytes = Vec::new();
        file.take(limit + 1).read_to_end(&mut bytes)?;
        if bytes.len() as u64 > limit {
            return Err(io::Error::other(format!("is larger than {limit} bytes")));
        }
        Ok(Some(bytes))
    }

    /// The names in this folder, without `.` and `..`.
    pub(crate) fn names(&self) -> io::Result<Vec<OsString>> {
        let mut dir = rustix::fs::Dir::read_from(&self.fd)?;
        let mut names = Vec::new();
        while let Some(entry) = dir.read() {
            let bytes = entry?.file_name().to_bytes().to_vec();
            if bytes != b"." && bytes != b".." {
                names.push(OsStr::from_bytes(&bytes).to_os_string());
            }
        }
        Ok(names)
    }

    /// Deletes the temporary files a killed write left here: regular files whose names start
    /// with `prefix` (never a link or a folder). Its writers hold the store lock, so no other
    /// run's temporary file is deleted.
    pub(crate) fn clear_leftovers(&self, prefix: &str) {
        for name in self.names().unwrap_or_default() {
            let ours = name.to_str().is_some_and(|n| n.starts_with(prefix));
            let regular = self
                .stat(&name)
                .ok()
                .flatten()
                .is_some_and(|st| FileType::from_raw_mode(st.st_mode).is_file());
            if ours && regular {
                let _ = self.unlink(&name);
            }
        }
    }

    /// Whether this folder holds anything.
    pub(crate) fn is_empty(&self) -> io::Result<bool> {
        Ok(self.names()?.is_empty())
    }

    /// Deletes `name` (a file, a link or a whole tree) inside this folder. It never crosses
    /// a symbolic link (links are deleted, not followed) and never leaves this folder: every
    /// step is relative to an open handle of the folder above. Folders without write
    /// permission are made writable first, through their own handle.
    pub(crate) fn remove(&self, name: impl AsRef<OsStr>) -> io::Result<()> {
        remove_within(self.fd.as_fd(), name.as_ref())
    }

    /// Flushes this folder's entries (after a rename into it or an unlink).
    pub(crate) fn sync(&self) -> io::Result<()> {
        rustix::fs::fsync(&self.fd).map_err(Into::into)
    }

    /// Flushes every written file and folder of the file system this folder is on.
    pub(crate) fn sync_filesystem(&self) -> io::Result<()> {
        rustix::fs::syncfs(&self.fd).map_err(Into::into)
    }

    /// Creates the empty folder `name` (private to the user); fails if anything is there.
    pub(crate) fn create_dir(&self, name: &str) -> io::Result<PathBuf> {
        rustix::fs::mkdirat(&self.fd, name, Mode::from_raw_mode(0o700))?;
        Ok(self.path.join(name))
    }

    /// Writes `contents` to a new file `name` here (never through a link: the name must be
    /// free) with `mode`, and flushes it.
    pub(crate) fn write_new(&self, name: &str, contents: &[u8], mode: u32) -> io::Result<()> {
        self.write_new_file(name, contents, mode, Flush::Now)
    }

    fn write_new_file(
        &self,
        name: &str,
        contents: &[u8],
        mode: u32,
        flush: Flush,
    ) -> io::Result<()> {
        let flags =
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = rustix::fs::openat(&self.fd, name, flags, Mode::from_raw_mode(mode))?;
        // The umask may have cleared bits of `mode`.
        rustix::fs::fchmod(&fd, Mode::from_raw_mode(mode))?;
        let mut file = File::from(fd);
        let written = file.write_all(contents).and_then(|()| match flush {
            Flush::Now => file.sync_all(),
            Flush::Later => Ok(()),
        });
        if let Err(e) = written {
            let _ = rustix::fs::unlinkat(&self.fd, name, AtFlags::empty());
            return Err(e);
        }
        Ok(())
    }

    /// Renames `name` here to `to_name` in `to` (replacing a file there), then flushes `to`.
    pub(crate) fn rename_to(
        &self,
        name: &str,
        to: &Folder,
        to_name: impl AsRef<OsStr>,
    ) -> io::Result<()> {
        rustix::fs::renameat(&self.fd, name, &to.fd, to_name.as_ref())?;
        to.sync()
    }

    /// Writes `contents` as `to_name` in `to` atomically: a temporary file here (`self` is a
    /// scratch folder on the same file system), renamed over the old one; with
    /// [`Flush::Now`], the file and then `to` are flushed.
    pub(crate) fn replace_file(
        &self,
        to: &Folder,
        to_name: impl AsRef<OsStr>,
        contents: &[u8],
        mode: u32,
        flush: Flush,
    ) -> io::Result<()> {
        let to_name = to_name.as_ref();
        let temp = unique_name(".tmp-");
        self.write_new_file(&temp, contents, mode, flush)?;
        let renamed = rustix::fs::renameat(&self.fd, temp.as_str(), &to.fd, to_name)
            .map_err(io::Error::from)
            .and_then(|()| match flush {
                Flush::Now => to.sync(),
                Flush::Later => Ok(()),
            });
        renamed.inspect_err(|_| {
            let _ = rustix::fs::unlinkat(&self.fd, temp.as_str(), AtFlags::empty());
        })
    }

    /// Deletes the file or link `name` (not a folder) if it exists, and flushes the folder.
    pub(crate) fn unlink(&self, name: impl AsRef<OsStr>) -> io::Result<()> {
        if self.unlink_unflushed(name)? {
            self.sync()?;
        }
        Ok(())
    }

    /// [`Folder::unlink`] without the flush; says whether there was anything to delete.
    pub(crate) fn unlink_unflushed(&self, name: impl AsRef<OsStr>) -> io::Result<bool> {
        match rustix::fs::unlinkat(&self.fd, name.as_ref(), AtFlags::empty()) {
            Ok(()) => Ok(true),
            Err(Errno::NOENT) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }
}

impl AsFd for Folder {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

fn remove_within(dir: BorrowedFd, name: &OsStr) -> io::Result<()> {
    let bytes = name.as_bytes();
    if bytes.is_empty() || bytes == b"." || bytes == b".." || bytes.contains(&b'/') {
        // Debug quotes and escapes the name, whatever bytes it holds.
        #[allow(clippy::unnecessary_debug_formatting)]
        return Err(io::Error::other(format!(
            "refusing to delete {name:?}: not a single name inside its folder"
        )));
    }
    let stat = match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat) => stat,
        Err(Errno::NOENT) => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    if FileType::from_raw_mode(stat.st_mode) != FileType::Directory {
        return match rustix::fs::unlinkat(dir, name, AtFlags::empty()) {
            Ok(()) | Err(Errno::NOENT) => Ok(()),
            Err(e) => Err(e.into()),
        };
    }
    // O_NOFOLLOW: should a link have replaced the folder since the stat, this fails.
    let child = rustix::fs::openat(dir, name, DIR_FLAGS, Mode::empty())?;
    if stat.st_mode & 0o700 != 0o700 {
        // Should this fail (not the owner), deleting the contents says why.
        let _ = rustix::fs::fchmod(&child, Mode::from_raw_mode((stat.st_mode | 0o700) & 0o7777));
    }
    let names = Folder {
        fd: child,
        path: PathBuf::new(),
    };
    for entry in names.names()? {
        remove_within(names.fd.as_fd(), &entry)?;
    }
    match rustix::fs::unlinkat(dir, name, AtFlags::REMOVEDIR) {
        Ok(()) | Err(Errno::NOENT) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::{PermissionsExt, symlink};

    #[test]
    fn remove_deletes_links_not_what_they_point_to() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("keep"), "x").unwrap();
        let tree = tmp.path().join("tree");
        fs::create_dir_all(tree.join("a/b")).unwrap();
        symlink(outside.path(), tree.join("a/out")).unwrap();
        symlink(outside.path().join("keep"), tree.join("a/b/file-link")).unwrap();
        fs::write(tree.join("a/b/f"), "x").unwrap();
        Folder::open_path(tmp.path())
            .unwrap()
            .remove("tree")
            .unwrap();
        assert!(!tree.exists());
        assert!(outside.path().join("keep").exists());
    }

    #[test]
    fn remove_of_a_link_to_a_folder_keeps_the_folder() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("keep"), "x").unwrap();
        symlink(outside.path(), tmp.path().join("l")).unwrap();
        Folder::open_path(tmp.path()).unwrap().remove("l").unwrap();
        assert!(fs::symlink_metadata(tmp.path().join("l")).is_err());
        assert!(outside.path().join("keep").exists());
    }

    #[test]
    fn remove_empties_read_only_folders() {
        let tmp = tempfile::tempdir().unwrap();
        let tree = tmp.path().join("t");
        fs::create_dir_all(tree.join("ro/inner")).unwrap();
        fs::write(tree.join("ro/inner/f"), "x").unwrap();
        fs::set_permissions(tree.join("ro/inner"), fs::Permissions::from_mode(0o500)).unwrap();
        fs::set_permissions(tree.join("ro"), fs::Permissions::from_mode(0o500)).unwrap();
        Folder::open_path(tmp.path()).unwrap().remove("t").unwrap();
        assert!(!tree.exists());
    }

    #[test]
    fn remove_refuses_paths() {
        let tmp = tempfile::tempdir().unwrap();
        let folder = Folder::open_path(tmp.path()).unwrap();
        for bad in ["", ".", "..", "a/b", "../x"] {
            assert!(folder.remove(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn sub_refuses_links_and_files() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        symlink(outside.path(), tmp.path().join("l")).unwrap();
        fs::write(tmp.path().join("f"), "").unwrap();
        let folder = Folder::open_path(tmp.path()).unwrap();
        assert!(matches!(
            folder.sub("l", true),
            Err(OpenError::Wrong(Wrong::Link))
        ));
        assert!(matches!(
            folder.sub("f", true),
            Err(OpenError::Wrong(Wrong::NotFolder("a regular file")))
        ));
        assert!(folder.sub("new", false).unwrap().is_none());
        assert!(folder.sub("new", true).unwrap().is_some());
    }

    #[test]
    fn replace_file_writes_atomically_with_the_mode() {
        let tmp = tempfile::tempdir().unwrap();
        fs::create_dir(tmp.path().join("scratch")).unwrap();
        let scratch = Folder::open_path(&tmp.path().join("scratch")).unwrap();
        let here = Folder::open_path(tmp.path()).unwrap();
        fs::write(tmp.path().join("f"), "old").unwrap();
        scratch
            .replace_file(&here, "f", b"new", 0o640, Flush::Now)
            .unwrap();
        assert_eq!(fs::read_to_string(tmp.path().join("f")).unwrap(), "new");
        let mode = fs::metadata(tmp.path().join("f"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o640);
        assert!(scratch.is_empty().unwrap());
    }
}
