//! The copy of a tree in one walk ([`copy`], [`copy_source`], [`copy_listed`]): folders are
//! read and recreated in walk order on the walking thread, each entry checked as it is met
//! (what `copy::audit_source`, the tests' reference, checks: special files refused, the
//! manifest link checked), links recreated as links, and regular files handed to a few
//! worker threads.
//!
//! Every name is looked up relative to an open handle on its folder (`openat` and friends,
//! `O_NOFOLLOW`), never through a long path: the walk holds the handles of the folders it is
//! in (down to [`HELD_LEVELS`]; deeper folders are reached by a relative path from the
//! deepest held one, whose middle parts, folders when they were read, are not re-checked),
//! and a queued file holds the handles of its two folders.
//!
//! A file is opened without following a link and without blocking, its kind and metadata
//! taken from that open handle (one `fstat`, which also catches a file swapped for something
//! else since the folder was read), and copied into a new file by a reflink (`FICLONE`, on
//! btrfs and XFS), else by reads and writes; its mode and modification time are set on the
//! open copy. Folders get their modes and times last, deepest first, so read-only folders can
//! still be filled and their times are not changed by the filling.
//!
//! **The copy's file list.** The walk also lists the copy as [`FileList::scan`] would, so
//! nothing reads it again: folders and links as the walk makes them, files by the worker that
//! copies them. A worker hashes the bytes it writes, as it writes them (reads and writes),
//! or reads the copy back after a reflink: the digest and size are always those of the copy,
//! even when the source changes meanwhile (the copy then holds some of both, and its entry
//! says exactly what it holds). Modes are the ones set on the copy (a set-group-ID bit, which
//! the system may drop, is read back from the copy).
//!
//! Errors keep the order the separate audit gave them: a problem the audit reports
//! (anywhere in the tree) wins over a failure to copy, which wins over the check of the copy.

use std::ffi::{CStr, OsStr, OsString};
use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result, anyhow};
use rayon::prelude::*;
use rustix::fs::{AtFlags, FileType, Mode, OFlags, Stat, Timespec, Timestamps};
use sha2::{Digest, Sha256};

use super::copy::{
    CopyStats, LooseLink, PROJECT_STATE, Root, check_manifest_link, io_reason, links_of_copy,
    reach, shown_after, special_kind_of,
};
use crate::catalog::manifest;
use crate::fsx::DIR_FLAGS;
use crate::output::printable;
use crate::store::filelist::{Entry, EntryKind, FileList, hex};

/// Folders this deep and shallower are kept open while the walk is inside them; deeper ones
/// are reached by a relative path from the deepest kept one, so a very deep tree cannot run
/// the process out of file descriptors (2 per level, plus 2 per queued file).
const HELD_LEVELS: usize = 64;

/// Files are handed to the workers in batches of the files of one folder, up to this many: one
/// task per batch, not per file, and two workers seldom create files in the same folder at
/// once (a creation locks its folder). Within a batch, idle workers take a share (rayon's
/// work stealing), so a folder of large files is copied by all of them...
const BATCH: usize = 256;

/// ... and this many batches wait at most: few enough to bound the folder handles queued
/// files keep open (a batch holds two). With that many waiting, the walk copies the next
/// batch itself.
const QUEUE: usize = 32;

/// The buffer of reads and writes: a large file is copied in few system calls, and each
/// piece is hashed while it is still in the processor's cache.
const BUFFER: usize = 256 * 1024;

/// At most this many workers. Copying small files is system calls (create, allocate, write
/// an inode), which on one filesystem scale to a few threads, not more: files in one folder
/// are created under that folder's lock. Two keep two cores busy while the walk reads
/// folders; up to four overlap the waits of a source that is not in the page cache.
const MAX_WORKERS: usize = 4;

/// What a copy checks on the way.
#[derive(Debug, Clone, Copy)]
pub(super) enum Check<'a> {
    /// A local source: special files refused with the audit's message, the manifest link
    /// checked, `.git` and the top [`PROJECT_STATE`] folder left out, absolute links into the
    /// tree made relative; messages show paths after this prefix instead of under the source.
    Audit(&'a str),
    /// The tree exactly as it is (nothing left out, link targets as stored); special files
    /// refused with a plain message.
    Exact,
    /// Only what this list holds and is still of its listed kind (an installed copy staged
    /// again); anything else, a special file too, is left out; link targets as stored.
    Listed(&'a FileList),
}

/// What a copy leaves behind for the check of the copy: its links, in walk order, and its
/// file list.
pub(super) struct Copied {
    pub stats: CopyStats,
    /// Each link's path relative to the tree and the target it was given.
    pub links: Vec<(PathBuf, PathBuf)>,
    /// The copy, listed as [`FileList::scan`] lists it.
    pub files: FileList,
}

/// How many workers copy files: as many as there are cores, at least 2 (the walk waits on
/// folders meanwhile), at most [`MAX_WORKERS`].
pub(super) fn workers() -> usize {
    let cores = std::thread::available_parallelism().map_or(2, usize::from);
    cores.clamp(2, MAX_WORKERS)
}

/// Copies `src` to `dst` (which must not exist) with up to `workers` threads copying files;
/// see the module documentation.
pub(super) fn run(
    src: &Path,
    dst: &Path,
    check: Check<'_>,
    workers: usize,
    progress: &mut dyn FnMut(&CopyStats),
) -> Result<Copied> {
    let tree = Root::new(src).map_err(|e| checked(check, src, e))?;
    let shared = Shared::new(dst, src);
    // Without a thread to copy on, the walk copies every file itself.
    let threads = crate::threads::pool(workers, "copy");
    let walked = in_scope(threads.as_ref(), |scope| {
        let mut walker = Walker {
            tree,
            src,
            check,
            shared: &shared,
            pool: Pool {
                batch: Vec::new(),
                scope,
            },
            stats: CopyStats::default(),
            entries: 0,
            dirs: Vec::new(),
            links: Vec::new(),
            listed: Vec::new(),
            progress,
        };
        let outcome = walker.walk();
        (
            outcome,
            walker.stats,
            walker.dirs,
            walker.links,
            walker.listed,
        )
    });
    let (outcome, mut stats, dirs, links, mut listed) = walked;
    outcome?;
    if let Some((_, error)) = shared.error.lock().expect("no worker panics").take() {
        return Err(error);
    }
    finish_dirs(dst, &dirs, &mut listed, shared.umask)?;
    for facts in shared.facts.into_inner().expect("no worker panics") {
        let slot = facts.slot;
        facts.fill(&mut listed[slot]);
    }
    stats.bytes = shared.bytes.load(Ordering::Relaxed);
    Ok(Copied {
        stats,
        links,
        files: FileList::from_entries(listed),
    })
}

/// Runs `run` with a scope of `threads` to hand batches to (returning once all are copied),
/// or with none.
fn in_scope<'s, R>(
    threads: Option<&rayon::ThreadPool>,
    run: impl FnOnce(Option<&rayon::Scope<'s>>) -> R,
) -> R {
    match threads {
        Some(threads) => threads.in_place_scope(|scope| run(Some(scope))),
        None => run(None),
    }
}

/// An open folder, or one below it reached by a relative path (past [`HELD_LEVELS`]).
#[derive(Clone)]
struct Handle {
    base: Arc<OwnedFd>,
    below: PathBuf,
}

impl Handle {
    fn open(fd: OwnedFd) -> Handle {
        Handle {
            base: Arc::new(fd),
            below: PathBuf::new(),
        }
    }

    /// The path of `name` in this folder, relative to `base`.
    fn name<'a>(&self, name: &'a OsStr) -> std::borrow::Cow<'a, Path> {
        if self.below.as_os_str().is_empty() {
            std::borrow::Cow::Borrowed(Path::new(name))
        } else {
            std::borrow::Cow::Owned(self.below.join(name))
        }
    }

    /// Whether `other` is this folder.
    fn same(&self, other: &Handle) -> bool {
        Arc::ptr_eq(&self.base, &other.base) && self.below == other.below
    }

    /// The handle of the folder `name` in this one: `fd` when given (an open handle on it),
    /// else a path from this folder's base.
    fn child(&self, name: &OsStr, fd: Option<OwnedFd>) -> Handle {
        match fd {
            Some(fd) => Handle::open(fd),
            None => Handle {
                base: Arc::clone(&self.base),
                below: self.below.join(name),
            },
        }
    }
}

/// A folder's mode and modification time, set on its copy last.
struct DirTimes {
    relative: PathBuf,
    mode: Mode,
    modified: Timespec,
    /// Its entry in the file list (none for the top folder).
    slot: Option<usize>,
}

/// The walking thread's state.
struct Walker<'p, 's> {
    tree: Root,
    src: &'p Path,
    check: Check<'p>,
    shared: &'s Shared,
    pool: Pool<'p, 's>,
    stats: CopyStats,
    /// Entries seen so far: the index of the next one, to order failures as the walk met them.
    entries: u64,
    dirs: Vec<DirTimes>,
    links: Vec<(PathBuf, PathBuf)>,
    /// The copy's file list in walk order; files get their digests from the workers.
    listed: Vec<Entry>,
    progress: &'p mut dyn FnMut(&CopyStats),
}

impl Walker<'_, '_> {
    /// Walks the tree, handing its files to the pool; when the walk stops on an error, the
    /// files still queued are dropped.
    fn walk(&mut self) -> Result<()> {
        let dst = self.shared.dst.clone();
        let outcome = self.walk_root(&dst);
        match outcome {
            Ok(()) => self.pool.flush(self.shared),
            // The batch gathered last is dropped with the walker.
            Err(_) => self.shared.cancel.store(true, Ordering::Relaxed),
        }
        outcome
    }

    fn walk_root(&mut self, dst: &Path) -> Result<()> {
        // The top folder is opened as named (a link to it is how the user named it).
        let top = DIR_FLAGS.difference(OFlags::NOFOLLOW);
        let (src_fd, stat) = rustix::fs::open(self.src, top, Mode::empty())
            .and_then(with_stat)
            .map_err(|e| self.walk_failed(Path::new(""), e))?;
        let dst_fd = self.made(0, || {
            rustix::fs::mkdir(dst, Mode::from_bits_truncate(0o777))
                .and_then(|()| rustix::fs::open(dst, DIR_FLAGS, Mode::empty()))
                .map_err(io::Error::from)
                .with_context(|| format!("cannot create {}", dst.display()))
        });
        self.entries += 1;
        self.dirs.push(dir_times(PathBuf::new(), &stat, None));
        self.stats.dirs += 1;
        self.report();
        let src = Handle::open(src_fd);
        let dst = dst_fd.map(Handle::open);
        self.walk_dir(&src, dst.as_ref(), &mut PathBuf::new(), 0)
    }

    /// Walks the folder `src` (at `relative`, `depth` levels down), copying into `dst` while
    /// nothing failed to copy (None after a failure: the walk then only checks).
    fn walk_dir(
        &mut self,
        src: &Handle,
        dst: Option<&Handle>,
        relative: &mut PathBuf,
        depth: usize,
    ) -> Result<()> {
        let entries = read_sorted(src).map_err(|e| self.walk_failed(relative, e))?;
        let len = relative.as_os_str().len();
        for (name, kind) in entries {
            relative.push(&name);
            let done = self.entry(src, dst, &name, kind, relative, depth + 1);
            truncate(relative, len);
            done?;
        }
        Ok(())
    }

    fn entry(
        &mut self,
        src: &Handle,
        dst: Option<&Handle>,
        name: &OsStr,
        kind: FileType,
        relative: &mut PathBuf,
        depth: usize,
    ) -> Result<()> {
        let kind = match kind {
            FileType::Unknown => {
                rustix::fs::statat(&*src.base, &*src.name(name), AtFlags::SYMLINK_NOFOLLOW)
                    .map(|s| FileType::from_raw_mode(s.st_mode))
                    .map_err(|e| self.walk_failed(relative, e))?
            }
            known => known,
        };
        if matches!(self.check, Check::Audit(_)) && left_out(name, kind, depth) {
            return Ok(());
        }
        if let Check::Listed(list) = self.check
            && !still_listed(list, relative, kind)
        {
            return Ok(());
        }
        let index = self.entries;
        self.entries += 1;
        let dst = dst.filter(|_| self.copying());
        match kind {
            FileType::Directory => return self.dir(src, dst, name, relative, (index, depth)),
            FileType::Symlink => self.link(src, dst, name, relative, index)?,
            FileType::RegularFile => self.file(src, dst, name, relative, index),
            special => return Err(self.special(relative, special)),
        }
        self.report();
        Ok(())
    }

    /// Copies the folder `name` (entry `index` of the walk, `depth` levels down) and walks it.
    fn dir(
        &mut self,
        src: &Handle,
        dst: Option<&Handle>,
        name: &OsStr,
        relative: &mut PathBuf,
        (index, depth): (u64, usize),
    ) -> Result<()> {
        let held = depth <= HELD_LEVELS;
        let opened = rustix::fs::openat(&*src.base, &*src.name(name), DIR_FLAGS, Mode::empty())
            .and_then(with_stat);
        let copy = dst.and_then(|dst| {
            self.made(index, || {
                make_dir(dst, name, held)
                    .map_err(io::Error::from)
                    .with_context(|| {
                        format!(
                            "cannot create {}",
                            self.shared.dst.join(&*relative).display()
                        )
                    })
            })
        });
        self.stats.dirs += 1;
        self.report();
        let (fd, stat) = opened.map_err(|e| self.walk_failed(relative, e))?;
        let slot = self.list(relative, EntryKind::Dir, stat.st_mode, None);
        self.dirs
            .push(dir_times(relative.clone(), &stat, Some(slot)));
        let src = src.child(name, held.then_some(fd));
        self.walk_dir(&src, copy.as_ref(), relative, depth)
    }

    fn link(
        &mut self,
        src: &Handle,
        dst: Option<&Handle>,
        name: &OsStr,
        relative: &Path,
        index: u64,
    ) -> Result<()> {
        let path = self.src.join(relative);
        let target = rustix::fs::readlinkat(&*src.base, &*src.name(name), Vec::new())
            .map(|t| PathBuf::from(OsStr::from_bytes(t.as_bytes())))
            .map_err(io::Error::from)
            .with_context(|| format!("cannot read the symbolic link {}", path.display()))
            .map_err(|e| self.checked(e))?;
        if matches!(self.check, Check::Audit(_)) && relative == Path::new(manifest::FILE) {
            let leads = reach(&self.tree, relative, &target);
            let link = LooseLink::of(relative, &target, leads);
            check_manifest_link(&path, link.as_ref()).map_err(|e| self.checked(e))?;
        }
        let target = match self.check {
            Check::Audit(_) => self.tree.relocate(&target, relative),
            Check::Exact | Check::Listed(_) => target,
        };
        if let Some(dst) = dst {
            self.made(index, || {
                rustix::fs::symlinkat(&target, &*dst.base, &*dst.name(name))
                    .map_err(io::Error::from)
                    .with_context(|| {
                        format!(
                            "cannot create the link {}",
                            self.shared.dst.join(relative).display()
                        )
                    })
            });
        }
        let stored = target.as_os_str().as_bytes().to_vec();
        self.list(relative, EntryKind::Link, 0o777, Some(stored));
        self.links.push((relative.to_path_buf(), target));
        self.stats.links += 1;
        Ok(())
    }

    fn file(
        &mut self,
        src: &Handle,
        dst: Option<&Handle>,
        name: &OsStr,
        relative: &Path,
        index: u64,
    ) {
        self.stats.files += 1;
        let Some(dst) = dst else { return };
        let slot = self.list(relative, EntryKind::File, 0, None);
        self.pool.send(
            self.shared,
            Job {
                index,
                slot,
                from: (src.clone(), name.to_os_string()),
                to: dst.clone(),
                relative: relative.to_path_buf(),
            },
        );
    }

    /// Adds the entry at `relative` to the copy's file list; its place in the list.
    fn list(
        &mut self,
        relative: &Path,
        kind: EntryKind,
        mode: u32,
        target: Option<Vec<u8>>,
    ) -> usize {
        self.listed.push(Entry {
            path: relative.as_os_str().as_bytes().to_vec(),
            kind,
            mode: mode & 0o7777,
            size: 0,
            sha256: None,
            target,
        });
        self.listed.len() - 1
    }

    /// Whether the copy goes on: nothing failed to copy so far.
    fn copying(&self) -> bool {
        self.shared.failed_at.load(Ordering::Relaxed) == u64::MAX
    }

    /// Runs `make` (creating something in the copy) and notes its failure as that of entry
    /// `index`; its value when it worked.
    fn made<T>(&self, index: u64, make: impl FnOnce() -> Result<T>) -> Option<T> {
        make().map_err(|e| self.shared.failed(index, e)).ok()
    }

    fn report(&mut self) {
        self.stats.bytes = self.shared.bytes.load(Ordering::Relaxed);
        (self.progress)(&self.stats);
    }

    /// A folder that cannot be read, as the audit says it.
    fn walk_failed(&self, relative: &Path, e: impl Into<io::Error>) -> anyhow::Error {
        let path = if relative.as_os_str().is_empty() {
            self.src.to_path_buf()
        } else {
            self.src.join(relative)
        };
        let path = printable(&path.display().to_string());
        self.checked(anyhow!("cannot read {path}: {}", io_reason(&e.into())))
    }

    fn special(&self, relative: &Path, kind: FileType) -> anyhow::Error {
        let path = self.src.join(relative);
        match self.check {
            Check::Audit(_) => self.checked(anyhow!(
                "{} is a special file ({}); an extension may only hold files, folders and symbolic links",
                path.display(),
                special_kind_of(kind)
            )),
            Check::Exact | Check::Listed(_) => anyhow!(
                "{} is a special file; refusing to copy it",
                printable(&path.display().to_string())
            ),
        }
    }

    fn checked(&self, e: anyhow::Error) -> anyhow::Error {
        checked(self.check, self.src, e)
    }
}

/// An error of the check of `src`, its paths shown after the prefix.
fn checked(check: Check<'_>, src: &Path, e: anyhow::Error) -> anyhow::Error {
    match check {
        Check::Audit(prefix) => shown_after(src, prefix, &e),
        Check::Exact | Check::Listed(_) => e,
    }
}

/// Whether `list` holds `relative` as an entry of `kind`.
fn still_listed(list: &FileList, relative: &Path, kind: FileType) -> bool {
    let listed = list.get(relative.as_os_str().as_bytes()).map(|e| e.kind);
    matches!(
        (listed, kind),
        (Some(EntryKind::Dir), FileType::Directory)
            | (Some(EntryKind::File), FileType::RegularFile)
            | (Some(EntryKind::Link), FileType::Symlink)
    )
}

/// Makes the folder `name` in `dst`: its handle (open when `held`).
fn make_dir(dst: &Handle, name: &OsStr, held: bool) -> rustix::io::Result<Handle> {
    let at = dst.name(name);
    rustix::fs::mkdirat(&*dst.base, &*at, Mode::from_bits_truncate(0o777))?;
    let fd = if held {
        Some(rustix::fs::openat(
            &*dst.base,
            &*at,
            DIR_FLAGS,
            Mode::empty(),
        )?)
    } else {
        None
    };
    Ok(dst.child(name, fd))
}

/// An open folder and its metadata.
fn with_stat(fd: OwnedFd) -> rustix::io::Result<(OwnedFd, Stat)> {
    let stat = rustix::fs::fstat(&fd)?;
    Ok((fd, stat))
}

/// What the walk leaves out: `.git` anywhere, and the top-level [`PROJECT_STATE`] folder.
fn left_out(name: &OsStr, kind: FileType, depth: usize) -> bool {
    name == ".git" || (depth == 1 && name == PROJECT_STATE && kind == FileType::Directory)
}

fn dir_times(relative: PathBuf, stat: &Stat, slot: Option<usize>) -> DirTimes {
    DirTimes {
        relative,
        mode: Mode::from_raw_mode(stat.st_mode),
        modified: modified(stat),
        slot,
    }
}

#[allow(clippy::cast_possible_wrap, clippy::unnecessary_cast)]
fn modified(stat: &Stat) -> Timespec {
    Timespec {
        tv_sec: stat.st_mtime as i64,
        tv_nsec: stat.st_mtime_nsec as _,
    }
}

/// The entries of a folder (its kind as the folder lists it), sorted by name. A held folder
/// is read through its own handle, which nothing else reads (no second handle to open and
/// close); a deeper one is opened for it.
fn read_sorted(dir: &Handle) -> io::Result<Vec<(OsString, FileType)>> {
    let mut entries = if dir.below.as_os_str().is_empty() {
        read_names(&*dir.base)?
    } else {
        read_names(rustix::fs::openat(
            &*dir.base,
            &dir.below,
            DIR_FLAGS,
            Mode::empty(),
        )?)?
    };
    entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    Ok(entries)
}

/// The entries of the folder open at `fd`, read from where its position is.
#[cfg(any(target_os = "linux", target_os = "android"))]
fn read_names(fd: impl AsFd) -> io::Result<Vec<(OsString, FileType)>> {
    let mut buffer = Vec::with_capacity(32 * 1024);
    let mut reader = rustix::fs::RawDir::new(fd, buffer.spare_capacity_mut());
    let mut entries = Vec::new();
    while let Some(entry) = reader.next() {
        let entry = entry?;
        let name = entry.file_name();
        if name != c"." && name != c".." {
            entries.push((os(name), entry.file_type()));
        }
    }
    Ok(entries)
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn read_names(fd: impl AsFd) -> io::Result<Vec<(OsString, FileType)>> {
    let reader = rustix::fs::Dir::new(rustix::io::dup(fd)?)?;
    let mut entries = Vec::new();
    for entry in reader {
        let entry = entry?;
        let name = entry.file_name();
        if name != c"." && name != c".." {
            entries.push((os(name), entry.file_type()));
        }
    }
    Ok(entries)
}

/// Cuts `path` back to its first `len` bytes (what it was before a push): unlike
/// [`PathBuf::pop`], which parses the components from the end, this costs nothing per
/// entry of the walk.
fn truncate(path: &mut PathBuf, len: usize) {
    let mut bytes = std::mem::take(path).into_os_string().into_vec();
    bytes.truncate(len);
    *path = PathBuf::from(OsString::from_vec(bytes));
}

fn os(name: &CStr) -> OsString {
    OsStr::from_bytes(name.to_bytes()).to_os_string()
}

/// Folder modes and times, deepest first (the reverse of the walk order); a set-group-ID bit
/// is read back into the folder's entry of `listed`. A folder made with the very mode it
/// needs (see [`made_mode`]) is not changed again: in a tree of 20,000 files that is some
/// 1,800 path look-ups less on the thread every install waits for.
fn finish_dirs(
    dst: &Path,
    dirs: &[DirTimes],
    listed: &mut [Entry],
    umask: Option<u32>,
) -> Result<()> {
    let root = rustix::fs::open(dst, DIR_FLAGS, Mode::empty())
        .map_err(io::Error::from)
        .with_context(|| format!("cannot open {}", dst.display()))?;
    let made = made_mode(&root, umask);
    for dir in dirs.iter().rev() {
        let times = Timestamps {
            last_access: omit(),
            last_modification: dir.modified,
        };
        let at: &Path = if dir.relative.as_os_str().is_empty() {
            Path::new(".")
        } else {
            &dir.relative
        };
        let _ = rustix::fs::utimensat(&root, at, &times, AtFlags::SYMLINK_NOFOLLOW);
        if made != Some(dir.mode.bits() & 0o7777) {
            rustix::fs::chmodat(&root, at, dir.mode, AtFlags::empty())
                .map_err(io::Error::from)
                .with_context(|| format!("cannot set the mode of {}", dst.join(at).display()))?;
        }
        if let Some(slot) = dir.slot.filter(|_| dir.mode.contains(Mode::SGID)) {
            let stat = rustix::fs::statat(&root, at, AtFlags::SYMLINK_NOFOLLOW)
                .map_err(io::Error::from)
                .with_context(|| format!("cannot read {}", dst.join(at).display()))?;
            listed[slot].mode = stat.st_mode & 0o7777;
        }
    }
    Ok(())
}

/// The mode every folder of the copy was made with (`mkdirat` with 0777), when it is known:
/// the umask decides it alone (see [`plain_umask`]) and the top folder `root` (not yet given
/// its own mode) did not take a set-group-ID bit from the folder it was made in, which every
/// folder made below would have taken too.
fn made_mode(root: &OwnedFd, umask: Option<u32>) -> Option<u32> {
    let stat = rustix::fs::fstat(root).ok()?;
    let inherited = Mode::from_raw_mode(stat.st_mode).contains(Mode::SGID);
    umask.filter(|_| !inherited).map(|umask| 0o777 & !umask)
}

fn omit() -> Timespec {
    Timespec {
        tv_sec: 0,
        tv_nsec: rustix::fs::UTIME_OMIT,
    }
}

/// One regular file to copy: its folder and name in the source, the folder of its copy, its
/// path in the tree (for messages), its place in the walk and its entry in the file list.
struct Job {
    index: u64,
    slot: usize,
    from: (Handle, OsString),
    to: Handle,
    relative: PathBuf,
}

/// What the walking thread and the workers share.
struct Shared {
    dst: PathBuf,
    src: PathBuf,
    /// The walk index of the first entry that failed to copy (`u64::MAX`: none).
    failed_at: AtomicU64,
    error: Mutex<Option<(u64, anyhow::Error)>>,
    bytes: AtomicU64,
    /// Set when the walk stopped on an error: the workers drop what is left.
    cancel: AtomicBool,
    /// Whether reflinks are still worth trying (cleared on the first refusal: the filesystem
    /// does not do them, and every file would ask again).
    reflink: AtomicBool,
    /// The umask, when it alone decides the mode a new file in the copy gets (see
    /// [`plain_umask`]): a file whose mode it leaves whole is created with that mode, and
    /// needs no `fchmod`.
    umask: Option<u32>,
    /// Batches handed to the threads and not copied yet.
    queued: AtomicUsize,
    /// What the threads learnt of the files they copied.
    facts: Mutex<Vec<Facts>>,
}

impl Shared {
    fn new(dst: &Path, src: &Path) -> Shared {
        Shared {
            dst: dst.to_path_buf(),
            src: src.to_path_buf(),
            failed_at: AtomicU64::new(u64::MAX),
            error: Mutex::new(None),
            bytes: AtomicU64::new(0),
            cancel: AtomicBool::new(false),
            reflink: AtomicBool::new(true),
            umask: plain_umask(dst),
            queued: AtomicUsize::new(0),
            facts: Mutex::new(Vec::new()),
        }
    }

    /// Whether a file of `mode` (permission bits) is created with that very mode.
    fn created_as(&self, mode: u32) -> bool {
        self.umask
            .is_some_and(|umask| mode & 0o7000 == 0 && mode & umask == 0)
    }

    /// Notes that entry `index` failed to copy; the failure first in walk order is kept.
    fn failed(&self, index: u64, error: anyhow::Error) {
        let mut slot = self.error.lock().expect("no worker panics");
        if slot.as_ref().is_none_or(|(at, _)| index < *at) {
            *slot = Some((index, error));
        }
        self.failed_at.fetch_min(index, Ordering::Relaxed);
    }

    /// Keeps what was learnt of copied files for their entries in the file list.
    fn done(&self, facts: Vec<Facts>) {
        self.facts.lock().expect("no worker panics").extend(facts);
    }

    /// Whether job `index` is still to be done (nothing before it in the walk failed).
    fn wanted(&self, index: u64) -> bool {
        !self.cancel.load(Ordering::Relaxed) && index < self.failed_at.load(Ordering::Relaxed)
    }
}

/// What a worker learnt of the file it copied, for its entry in the file list.
struct Facts {
    slot: usize,
    mode: u32,
    size: u64,
    sha256: String,
}

impl Facts {
    fn fill(self, entry: &mut Entry) {
        entry.mode = self.mode & 0o7777;
        entry.size = self.size;
        entry.sha256 = Some(self.sha256);
    }
}

/// The files gathered for the copy threads, handed over a folder at a time.
struct Pool<'p, 's> {
    batch: Vec<Job>,
    /// Where batches go: `None` without threads (the walk copies them itself).
    scope: Option<&'p rayon::Scope<'s>>,
}

impl<'s> Pool<'_, 's> {
    fn send(&mut self, shared: &'s Shared, job: Job) {
        if self.batch.last().is_some_and(|last| !last.to.same(&job.to)) {
            self.flush(shared);
        }
        self.batch.push(job);
        if self.batch.len() == BATCH {
            self.flush(shared);
        }
    }

    /// Hands the files gathered so far to the threads, or copies them here when there are
    /// none or [`QUEUE`] batches wait already.
    fn flush(&mut self, shared: &'s Shared) {
        if self.batch.is_empty() {
            return;
        }
        let jobs = std::mem::take(&mut self.batch);
        match self.scope {
            Some(scope) if shared.queued.load(Ordering::Relaxed) < QUEUE => {
                shared.queued.fetch_add(1, Ordering::Relaxed);
                scope.spawn(move |_| {
                    let facts = jobs
                        .par_iter()
                        .map_init(Vec::new, |buffer, job| copy_job(shared, job, buffer))
                        .flatten()
                        .collect();
                    shared.done(facts);
                    shared.queued.fetch_sub(1, Ordering::Relaxed);
                });
            }
            _ => {
                let mut buffer = Vec::new();
                let facts = jobs
                    .iter()
                    .filter_map(|job| copy_job(shared, job, &mut buffer))
                    .collect();
                shared.done(facts);
            }
        }
    }
}

/// Copies the file of `job` unless something before it in the walk failed; what was
/// learnt of it, or `None` (its failure noted in `shared`).
fn copy_job(shared: &Shared, job: &Job, buffer: &mut Vec<u8>) -> Option<Facts> {
    if !shared.wanted(job.index) {
        return None;
    }
    match copy_file(shared, job, buffer) {
        Ok(done) => {
            shared.bytes.fetch_add(done.size, Ordering::Relaxed);
            Some(done)
        }
        Err(e) => {
            shared.failed(job.index, e);
            None
        }
    }
}

/// Copies one regular file with its mode and modification time (see the module
/// documentation); the copy is a new file, never an existing one.
fn copy_file(shared: &Shared, job: &Job, buffer: &mut Vec<u8>) -> Result<Facts> {
    let from = || printable(&shared.src.join(&job.relative).display().to_string());
    let fail = |e: rustix::io::Errno| anyhow!("cannot copy {}: {}", from(), io_reason(&e.into()));
    let (dir, name) = &job.from;
    let read = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let source =
        rustix::fs::openat(&*dir.base, &*dir.name(name), read, Mode::empty()).map_err(fail)?;
    let stat = rustix::fs::fstat(&source).map_err(fail)?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        anyhow::bail!(
            "{} is no longer a regular file (it changed while it was copied); try again",
            from()
        );
    }
    let to = || shared.dst.join(&job.relative);
    // Read and write: a reflinked copy is read back to be hashed. A new file is written to
    // whatever its mode (a read-only one too).
    let write = OFlags::RDWR | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mode = Mode::from_raw_mode(stat.st_mode);
    let created_as = shared.created_as(mode.bits());
    let initial = if created_as {
        mode
    } else {
        Mode::RUSR | Mode::WUSR
    };
    let copy = rustix::fs::openat(&*job.to.base, &*job.to.name(name), write, initial)
        .map_err(io::Error::from)
        .with_context(|| format!("cannot create {}", to().display()))?;
    let size = u64::try_from(stat.st_size).unwrap_or(0);
    let (size, sha256) = contents(shared, &source, &copy, size, buffer).map_err(fail)?;
    if !created_as {
        rustix::fs::fchmod(&copy, mode)
            .map_err(io::Error::from)
            .with_context(|| format!("cannot set the mode of {}", to().display()))?;
    }
    let mode = if mode.contains(Mode::SGID) {
        // The system drops the bit for a group the process is not in.
        rustix::fs::fstat(&copy).map_err(fail)?.st_mode
    } else {
        stat.st_mode
    };
    let times = Timestamps {
        last_access: omit(),
        last_modification: modified(&stat),
    };
    let _ = rustix::fs::futimens(&copy, &times);
    Ok(Facts {
        slot: job.slot,
        mode,
        size,
        sha256,
    })
}

/// The umask, when it is what decides the mode of a file created in the copy at `dst`: it
/// can be read (Linux says it in `/proc/self/status`; reading it with `umask` would change
/// it for a moment, for every thread), and the folder `dst` is made in has no default ACL
/// (which would take the umask's place, and which every folder made below inherits).
fn plain_umask(dst: &Path) -> Option<u32> {
    let parent = match dst.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let none: &mut [u8] = &mut [];
    match rustix::fs::getxattr(parent, "system.posix_acl_default", none) {
        Err(rustix::io::Errno::NODATA | rustix::io::Errno::NOTSUP) => {}
        _ => return None,
    }
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find_map(|l| l.strip_prefix("Umask:"))?;
    u32::from_str_radix(line.trim(), 8).ok()
}

/// Copies the first `size` bytes of `source` (its size when it was opened: the copy is of
/// that moment) into the empty `copy`: the size and SHA-256 of what the copy holds then.
fn contents(
    shared: &Shared,
    source: &OwnedFd,
    copy: &OwnedFd,
    size: u64,
    buffer: &mut Vec<u8>,
) -> rustix::io::Result<(u64, String)> {
    let mut hasher = Sha256::new();
    let copied = if size == 0 {
        0
    } else if reflink(shared, source, copy) {
        // The copy shares the source's blocks, whatever its size is now: hash what it holds.
        read_back(copy, &mut hasher, buffer)?
    } else {
        let copied = read_write(source, copy, size, &mut hasher, buffer)?;
        if copied >= EARLY_WRITEBACK {
            start_writeback(copy);
        }
        copied
    };
    Ok((copied, hex(&hasher.finalize())))
}

/// Files at least this large have their writeback started as soon as they are copied.
const EARLY_WRITEBACK: u64 = 1 << 20;

/// Asks the kernel to start writing `file`'s dirty pages to disk now, without waiting: the
/// install flushes the file system before it places the tree (`syncfs`), and by then the
/// large files are written, or being written, while the rest was copied. Only a hint: an
/// error changes nothing.
#[cfg(any(target_os = "linux", target_os = "android"))]
fn start_writeback(file: &OwnedFd) {
    // SAFETY: `file` is an open descriptor borrowed for the call; no memory is passed.
    unsafe {
        libc::sync_file_range(file.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE);
    }
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn start_writeback(_: &OwnedFd) {}

/// A reflink of the whole file (shares its blocks: instant, no data written); false when the
/// filesystem cannot (ext4: `EOPNOTSUPP`; another filesystem: `EXDEV`), which stops later
/// attempts.
#[cfg(any(target_os = "linux", target_os = "android"))]
fn reflink(shared: &Shared, source: &OwnedFd, copy: &OwnedFd) -> bool {
    if !shared.reflink.load(Ordering::Relaxed) {
        return false;
    }
    if rustix::fs::ioctl_ficlone(copy, source).is_ok() {
        return true;
    }
    shared.reflink.store(false, Ordering::Relaxed);
    false
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn reflink(_: &Shared, _: &OwnedFd, _: &OwnedFd) -> bool {
    false
}

/// Hashes `copy` from its start to its end; its size.
fn read_back(copy: &OwnedFd, hasher: &mut Sha256, buffer: &mut Vec<u8>) -> rustix::io::Result<u64> {
    buffer.resize(BUFFER, 0);
    let mut read = 0;
    loop {
        match rustix::io::pread(copy, &mut buffer[..], read) {
            Ok(0) => return Ok(read),
            Ok(n) => {
                hasher.update(&buffer[..n]);
                read += n as u64;
            }
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e),
        }
    }
}

/// Copies up to `size` bytes by reads and writes through `buffer`, hashing each piece as it
/// is written; the number of bytes copied.
fn read_write(
    source: &OwnedFd,
    copy: &OwnedFd,
    size: u64,
    hasher: &mut Sha256,
    buffer: &mut Vec<u8>,
) -> rustix::io::Result<u64> {
    let want = usize::try_from(size).map_or(BUFFER, |n| n.min(BUFFER));
    if buffer.len() < want {
        buffer.resize(want, 0);
    }
    let mut copied = 0;
    while copied < size {
        let want = usize::try_from(size - copied).map_or(buffer.len(), |n| n.min(buffer.len()));
        let read = match rustix::io::read(source, &mut buffer[..want]) {
            Ok(0) => break,
            Ok(n) => n,
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e),
        };
        let mut written = 0;
        while written < read {
            match rustix::io::write(copy.as_fd(), &buffer[written..read]) {
                Ok(n) => written += n,
                Err(rustix::io::Errno::INTR) => {}
                Err(e) => return Err(e),
            }
        }
        hasher.update(&buffer[..read]);
        copied += read as u64;
    }
    Ok(copied)
}

/// Copies the local source `src` to `dst` (which must not exist), checking it on the way as
/// `audit_source` (in copy.rs) does (the same errors, paths shown after `prefix`), in one
/// walk ([`run`]). Calls `progress` after each entry. Returns what an audit of the copy
/// would: the copy's links that point outside it or nowhere (looked at one by one in
/// the copy, not by walking it again); and the copy's file list, made on the way.
pub(crate) fn copy_source(
    src: &Path,
    dst: &Path,
    prefix: &str,
    progress: &mut dyn FnMut(&CopyStats),
) -> Result<(CopyStats, Vec<LooseLink>, FileList)> {
    let copied = run(src, dst, Check::Audit(prefix), workers(), progress)?;
    let loose = links_of_copy(dst, &copied.links, Some(&copied.files))
        .map_err(|e| shown_after(dst, prefix, &e))?;
    Ok((copied.stats, loose, copied.files))
}

/// Copies the tree `src` to `dst` (which must not exist) as it is, calling `progress` after
/// each entry: nothing is left out, links are copied as links with their targets as stored,
/// whatever they point to; nothing is followed. Special files are refused. Returns the
/// copy's file list, made on the way (see the module docs).
pub(crate) fn copy(
    src: &Path,
    dst: &Path,
    progress: &mut dyn FnMut(&CopyStats),
) -> Result<(CopyStats, FileList)> {
    let check = Check::Exact;
    let copied = run(src, dst, check, workers(), progress)?;
    Ok((copied.stats, copied.files))
}

/// Copies the tree `src` to `dst` (which must not exist) only what `list` holds and is
/// still of its listed kind ([`Check::Listed`]), nothing followed.
pub(crate) fn copy_listed(src: &Path, dst: &Path, list: &FileList) -> Result<()> {
    run(src, dst, Check::Listed(list), workers(), &mut |_| {}).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::copy::audit_source;
    use std::fs;
    use std::os::unix::fs::{FileExt, MetadataExt, PermissionsExt, symlink};
    use std::time::{Duration, SystemTime};

    fn canonical_tempdir() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = fs::canonicalize(dir.path()).unwrap();
        (dir, path)
    }

    fn set_time(path: &Path, seconds: u64) {
        let at = SystemTime::UNIX_EPOCH + Duration::from_secs(seconds) + Duration::from_nanos(7);
        fs::File::open(path).unwrap().set_modified(at).unwrap();
    }

    /// A tree of several hundred files (more than a few batches), with modes, times, empty
    /// and large files, links of every kind, and what a copy leaves out.
    fn rich_tree(root: &Path) {
        for d in 0..6 {
            let dir = root.join(format!("d{d}/sub"));
            fs::create_dir_all(&dir).unwrap();
            for f in 0..60 {
                let file = dir.join(format!("f{f}"));
                fs::write(&file, format!("{d}/{f}").repeat(f * 7)).unwrap();
                let mode = [0o644, 0o755, 0o600, 0o444, 0o4755][f % 5];
                fs::set_permissions(&file, fs::Permissions::from_mode(mode)).unwrap();
                set_time(&file, 1_000_000_000 + (d * 100 + f) as u64);
            }
        }
        let big: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
        fs::write(root.join("big.bin"), big).unwrap();
        symlink("d0/sub/f1", root.join("rel")).unwrap();
        symlink(root.join("d1/sub/f2"), root.join("d2/abs")).unwrap();
        symlink("/etc/passwd", root.join("out")).unwrap();
        symlink("missing", root.join("d3/dangling")).unwrap();
        fs::create_dir_all(root.join(".git/objects")).unwrap();
        fs::write(root.join(".git/HEAD"), "x").unwrap();
        fs::create_dir_all(root.join(".zot/extensions")).unwrap();
        fs::create_dir(root.join("ro")).unwrap();
        fs::write(root.join("ro/inside"), "x").unwrap();
        for dir in ["ro", "d4/sub", "d4", ""] {
            set_time(&root.join(dir), 1_100_000_000);
        }
        fs::set_permissions(root.join("ro"), fs::Permissions::from_mode(0o555)).unwrap();
    }

    /// Every entry of `src` but `.git` and the top `.zot` has its like in `dst`: the same kind,
    /// mode, modification time (files and folders), contents, and link target (absolute ones
    /// inside the tree made relative).
    fn assert_same_tree(src: &Path, dst: &Path) -> usize {
        let mut seen = 0;
        for entry in walkdir::WalkDir::new(src).into_iter().filter_entry(|e| {
            e.file_name() != ".git" && !(e.depth() == 1 && e.file_name() == ".zot")
        }) {
            let entry = entry.unwrap();
            let relative = entry.path().strip_prefix(src).unwrap();
            let copy = dst.join(relative);
            let (a, b) = (
                entry.metadata().unwrap(),
                fs::symlink_metadata(&copy).unwrap(),
            );
            assert_eq!(a.file_type(), b.file_type(), "{}", relative.display());
            if a.file_type().is_symlink() {
                let target = fs::read_link(entry.path()).unwrap();
                let expected = match target.strip_prefix(src) {
                    Ok(rest) => Path::new("..").join(rest),
                    Err(_) => target,
                };
                assert_eq!(
                    fs::read_link(&copy).unwrap(),
                    expected,
                    "{}",
                    relative.display()
                );
            } else {
                assert_eq!(a.mode(), b.mode(), "{}", relative.display());
                assert_eq!(
                    a.modified().unwrap(),
                    b.modified().unwrap(),
                    "{}",
                    relative.display()
                );
            }
            if a.is_file() {
                assert_eq!(fs::read(entry.path()).unwrap(), fs::read(&copy).unwrap());
            }
            seen += 1;
        }
        let copied = walkdir::WalkDir::new(dst).into_iter().count();
        assert_eq!(copied, seen, "the copy holds nothing more");
        seen
    }

    fn make_writable(root: &Path) {
        let _ = fs::set_permissions(root.join("ro"), fs::Permissions::from_mode(0o755));
    }

    #[test]
    fn a_copy_equals_its_source_with_one_or_several_workers() {
        let (_src, s) = canonical_tempdir();
        rich_tree(&s);
        for workers in [1, 2, 4] {
            let (_dst, d) = canonical_tempdir();
            let to = d.join("t");
            let mut reports = 0;
            let copied = run(&s, &to, Check::Audit("src/"), workers, &mut |_| {
                reports += 1;
            })
            .unwrap();
            let entries = assert_same_tree(&s, &to);
            let stats = copied.stats;
            assert_eq!((stats.files, stats.links), (6 * 60 + 2, 4), "{workers}");
            assert_eq!(stats.files + stats.dirs + stats.links, entries as u64);
            assert_eq!(reports, entries, "progress after every entry");
            let bytes: u64 = walkdir::WalkDir::new(&to)
                .into_iter()
                .map(|e| e.unwrap().metadata().unwrap())
                .filter(fs::Metadata::is_file)
                .map(|m| m.len())
                .sum();
            assert_eq!(stats.bytes, bytes);
            make_writable(&to);
        }
        make_writable(&s);
    }

    #[test]
    fn copy_source_lists_the_links_an_audit_of_the_copy_lists() {
        let (_src, s) = canonical_tempdir();
        rich_tree(&s);
        symlink(".git/HEAD", s.join("into-git")).unwrap();
        let (_dst, d) = canonical_tempdir();
        let to = d.join("t");
        let (_, links, _) = copy_source(&s, &to, "src/", &mut |_| {}).unwrap();
        assert_eq!(links, crate::source::copy::audit(&to, "src/").unwrap());
        let listed: Vec<&str> = links.iter().map(|l| l.path.as_str()).collect();
        assert_eq!(listed, ["d3/dangling", "into-git", "out"]);
        make_writable(&to);
        make_writable(&s);
    }

    #[test]
    fn a_special_file_met_mid_walk_stops_the_copy_with_the_audits_message() {
        let (_src, s) = canonical_tempdir();
        rich_tree(&s);
        let status = std::process::Command::new("mkfifo")
            .arg(s.join("d3/sub/pipe"))
            .status()
            .unwrap();
        assert!(status.success());
        let expected = audit_source(&s, "src/").unwrap_err().to_string();
        assert_eq!(
            expected,
            "src/d3/sub/pipe is a special file (a named pipe); an extension may only hold files, folders and symbolic links"
        );
        for workers in [1, 4] {
            let (_staging, staging) = canonical_tempdir();
            let to = staging.join("tree");
            let err = copy_source(&s, &to, "src/", &mut |_| {}).unwrap_err();
            assert_eq!(err.to_string(), expected);
            let err = run(
                &s,
                &to.with_extension("again"),
                Check::Audit("src/"),
                workers,
                &mut |_| {},
            );
            assert_eq!(err.err().unwrap().to_string(), expected);
            // The workers are done (the files still queued were dropped): what was copied
            // stays inside the staging folder, and the part after the special file was never
            // started.
            let made: Vec<_> = fs::read_dir(&staging)
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect();
            assert_eq!(made.len(), 2, "{made:?}");
            assert!(to.join("d2/sub").is_dir());
            assert!(!to.join("d4").exists());
            assert!(!to.join("d3/sub/pipe").exists());
        }
        make_writable(&s);
    }

    #[test]
    fn the_plain_copy_refuses_special_files_too() {
        let (_src, s) = canonical_tempdir();
        fs::create_dir(s.join("a")).unwrap();
        let status = std::process::Command::new("mkfifo")
            .arg(s.join("a/pipe"))
            .status()
            .unwrap();
        assert!(status.success());
        let (_dst, d) = canonical_tempdir();
        let err = copy(&s, &d.join("t"), &mut |_| {}).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "{}/a/pipe is a special file; refusing to copy it",
                s.display()
            )
        );
    }

    /// A copy of what a list holds: an entry of another kind now (a folder now a link, a
    /// file now a pipe) and anything unlisted are left out, nothing followed, no error.
    #[test]
    fn the_listed_copy_takes_only_what_is_still_as_listed() {
        let (_src, s) = canonical_tempdir();
        for dir in ["a", "b", "elsewhere"] {
            fs::create_dir(s.join(dir)).unwrap();
        }
        fs::write(s.join("a/f"), "f").unwrap();
        fs::write(s.join("b/g"), "g").unwrap();
        fs::write(s.join("pipe"), "was a file").unwrap();
        fs::write(s.join("elsewhere/secret"), "s").unwrap();
        let list = FileList::scan(&s).unwrap();
        fs::write(s.join("unlisted"), "u").unwrap();
        fs::remove_file(s.join("pipe")).unwrap();
        let status = std::process::Command::new("mkfifo")
            .arg(s.join("pipe"))
            .status()
            .unwrap();
        assert!(status.success());
        fs::remove_dir_all(s.join("b")).unwrap();
        symlink("elsewhere", s.join("b")).unwrap();
        let (_dst, d) = canonical_tempdir();
        copy_listed(&s, &d.join("t"), &list).unwrap();
        let copied = FileList::scan(&d.join("t")).unwrap();
        let paths: Vec<String> = copied.entries().iter().map(Entry::shown).collect();
        assert_eq!(paths, ["a", "a/f", "elsewhere", "elsewhere/secret"]);
    }

    #[test]
    fn what_the_audit_refuses_outranks_a_failure_to_copy_as_before() {
        let (_src, s) = canonical_tempdir();
        fs::create_dir(s.join("z")).unwrap();
        fs::write(s.join("z/file"), "x").unwrap();
        let (_dst, d) = canonical_tempdir();
        let taken = d.join("t");
        fs::create_dir(&taken).unwrap();
        let err = copy_source(&s, &taken, "src/", &mut |_| {}).unwrap_err();
        assert!(format!("{err:#}").starts_with(&format!("cannot create {}", taken.display())));
        let status = std::process::Command::new("mkfifo")
            .arg(s.join("z/pipe"))
            .status()
            .unwrap();
        assert!(status.success());
        let err = copy_source(&s, &taken, "src/", &mut |_| {}).unwrap_err();
        assert_eq!(
            err.to_string(),
            audit_source(&s, "src/").unwrap_err().to_string()
        );
    }

    #[test]
    fn a_tree_deeper_than_the_folders_kept_open_is_copied() {
        let (_src, s) = canonical_tempdir();
        let mut deep = s.clone();
        for level in 0..HELD_LEVELS + 6 {
            deep.push(format!("{}", level % 10));
            fs::create_dir(&deep).unwrap();
            fs::write(deep.join("f"), level.to_string()).unwrap();
            if level % 20 == 0 {
                symlink("f", deep.join("l")).unwrap();
            }
        }
        let status = std::process::Command::new("mkfifo")
            .arg(deep.join("pipe"))
            .status()
            .unwrap();
        assert!(status.success());
        let (_dst, d) = canonical_tempdir();
        let expected = audit_source(&s, "src/").unwrap_err().to_string();
        let err = copy_source(&s, &d.join("t"), "src/", &mut |_| {}).unwrap_err();
        assert_eq!(err.to_string(), expected);
        fs::remove_file(deep.join("pipe")).unwrap();
        set_time(&deep, 1_000_000_000);
        run(&s, &d.join("u"), Check::Audit("src/"), 2, &mut |_| {}).unwrap();
        assert_same_tree(&s, &d.join("u"));
    }

    /// [`rich_tree`] and more: names and link targets that are not UTF-8, modes the umask
    /// would cut, a set-group-ID folder, and several large files in one folder (which idle
    /// workers help to copy).
    fn richer_tree(root: &Path) {
        rich_tree(root);
        let odd = OsStr::from_bytes(b"caf\xe9\nx");
        fs::create_dir(root.join(odd)).unwrap();
        fs::write(root.join(odd).join(odd), "odd").unwrap();
        symlink(odd, root.join("d5/to-odd")).unwrap();
        // Modes a common umask (022) would cut: created with them, they need a chmod.
        for (name, mode) in [("wide", 0o666), ("group", 0o775), ("sticky", 0o1644)] {
            fs::write(root.join("d5").join(name), name).unwrap();
            fs::set_permissions(root.join("d5").join(name), fs::Permissions::from_mode(mode))
                .unwrap();
        }
        fs::create_dir(root.join("shared")).unwrap();
        fs::write(root.join("shared/f"), "g").unwrap();
        fs::set_permissions(root.join("shared"), fs::Permissions::from_mode(0o2775)).unwrap();
        fs::create_dir(root.join("heavy")).unwrap();
        for i in 0..6u8 {
            let body: Vec<u8> = (0..(512 * 1024 + 4096 * usize::from(i)))
                .map(|n| (n % 253) as u8 ^ i)
                .collect();
            fs::write(root.join(format!("heavy/{i}")), body).unwrap();
        }
    }

    #[test]
    fn the_list_made_while_copying_is_what_a_scan_of_the_copy_finds() {
        let (_src, s) = canonical_tempdir();
        richer_tree(&s);
        for check in [Check::Audit("src/"), Check::Exact] {
            for workers in [1, 2, 4] {
                let (_dst, d) = canonical_tempdir();
                let to = d.join("t");
                let copied = run(&s, &to, check, workers, &mut |_| {}).unwrap();
                let scanned = FileList::scan(&to).unwrap();
                assert_eq!(copied.files, scanned, "{check:?}, {workers} workers");
                let files = scanned.entries().iter();
                let bytes: u64 = files.map(|e| e.size).sum();
                assert_eq!(copied.stats.bytes, bytes);
                make_writable(&to);
            }
        }
        make_writable(&s);
    }

    #[test]
    fn folders_keep_their_own_modes_in_any_parent_folder() {
        let (_src, s) = canonical_tempdir();
        many_small_folders(&s);
        // Folders the umask would not make, one closed to writing above many others.
        fs::set_permissions(s.join("p01"), fs::Permissions::from_mode(0o700)).unwrap();
        fs::set_permissions(s.join("p02"), fs::Permissions::from_mode(0o555)).unwrap();
        let (_dst, d) = canonical_tempdir();
        for (parent, mode) in [("plain", 0o755), ("shared", 0o2755)] {
            let parent = d.join(parent);
            fs::create_dir(&parent).unwrap();
            fs::set_permissions(&parent, fs::Permissions::from_mode(mode)).unwrap();
            let to = parent.join("t");
            let copied = run(&s, &to, Check::Audit("src/"), 2, &mut |_| {}).unwrap();
            assert_same_tree(&s, &to);
            assert_eq!(copied.files, FileList::scan(&to).unwrap());
            fs::set_permissions(to.join("p02"), fs::Permissions::from_mode(0o755)).unwrap();
        }
        fs::set_permissions(s.join("p02"), fs::Permissions::from_mode(0o755)).unwrap();
    }

    /// Folders of a few files each, far more than [`QUEUE`] batches, wide and deep: the walk
    /// fills the queue and waits for room again and again, and workers wait for batches.
    fn many_small_folders(root: &Path) {
        for top in 0..12 {
            let mut dir = root.join(format!("p{top:02}"));
            for level in 0..8 {
                dir.push(format!("n{level}"));
                for side in 0..3 {
                    let leaf = dir.join(format!("s{side}"));
                    fs::create_dir_all(&leaf).unwrap();
                    for f in 0..(top + level + side) % 5 {
                        fs::write(leaf.join(format!("f{f}")), format!("{top}{level}{side}{f}"))
                            .unwrap();
                    }
                }
                fs::write(dir.join("here"), level.to_string()).unwrap();
            }
        }
        symlink("p00/n0/here", root.join("link")).unwrap();
    }

    #[test]
    fn many_small_folders_are_copied_and_listed_alike_by_any_number_of_workers() {
        let (_src, s) = canonical_tempdir();
        many_small_folders(&s);
        let mut lists = Vec::new();
        for workers in [1, 2, 4] {
            let (_dst, d) = canonical_tempdir();
            let to = d.join("t");
            let copied = run(&s, &to, Check::Audit("src/"), workers, &mut |_| {}).unwrap();
            assert!(
                copied.stats.dirs > 8 * QUEUE as u64,
                "{}",
                copied.stats.dirs
            );
            assert_same_tree(&s, &to);
            assert_eq!(
                copied.files,
                FileList::scan(&to).unwrap(),
                "{workers} workers"
            );
            lists.push(copied.files);
        }
        assert!(lists.windows(2).all(|pair| pair[0] == pair[1]));
    }

    #[test]
    fn the_exact_copy_leaves_nothing_out_and_keeps_link_targets() {
        let (_src, s) = canonical_tempdir();
        rich_tree(&s);
        let (_dst, d) = canonical_tempdir();
        let to = d.join("t");
        let copied = run(&s, &to, Check::Exact, 2, &mut |_| {}).unwrap();
        assert_eq!(fs::read(to.join(".git/HEAD")).unwrap(), b"x");
        assert!(to.join(".zot/extensions").is_dir());
        assert_eq!(
            fs::read_link(to.join("d2/abs")).unwrap(),
            s.join("d1/sub/f2")
        );
        let listed = copied.files.get(b"d2/abs").unwrap();
        assert_eq!(
            listed.target.as_deref(),
            Some(s.join("d1/sub/f2").as_os_str().as_bytes())
        );
        make_writable(&to);
        make_writable(&s);
    }

    /// The digest and size of what the file at `path` holds.
    fn digest_of(path: &Path) -> (u64, String) {
        let bytes = fs::read(path).unwrap();
        (bytes.len() as u64, hex(&Sha256::digest(&bytes)))
    }

    #[test]
    fn a_file_that_grew_or_shrank_since_it_was_opened_is_hashed_as_copied() {
        let (_dir, d) = canonical_tempdir();
        let body: Vec<u8> = (0..BUFFER as u32 * 2 + 77)
            .map(|n| (n % 251) as u8)
            .collect();
        fs::write(d.join("src"), &body).unwrap();
        let shared = Shared::new(&d, &d);
        // The size taken when the file was opened: smaller (it grew since) or larger (it
        // shrank since) than what it holds now.
        for (i, size) in [40, BUFFER as u64 + 3, body.len() as u64 * 2]
            .into_iter()
            .enumerate()
        {
            let source = rustix::fs::open(d.join("src"), OFlags::RDONLY, Mode::empty()).unwrap();
            let into = d.join(format!("copy{i}"));
            let flags = OFlags::RDWR | OFlags::CREATE | OFlags::EXCL;
            let copy = rustix::fs::open(&into, flags, Mode::RUSR | Mode::WUSR).unwrap();
            let got = contents(&shared, &source, &copy, size, &mut Vec::new()).unwrap();
            assert_eq!(got, digest_of(&into), "size {size}");
            assert!(got.0 <= size.max(body.len() as u64));
        }
    }

    #[test]
    fn a_file_rewritten_during_copies_is_listed_as_each_copy_holds_it() {
        use std::io::Write;
        let (_src, s) = canonical_tempdir();
        for i in 0..40 {
            fs::write(s.join(format!("still{i:02}")), "x".repeat(i)).unwrap();
        }
        fs::write(s.join("moving"), "").unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let writer = {
            let (stop, path) = (Arc::clone(&stop), s.join("moving"));
            std::thread::spawn(move || {
                let mut file = fs::File::options().write(true).open(path).unwrap();
                let mut round = 0u32;
                while !stop.load(Ordering::Relaxed) {
                    let body = vec![(round % 256) as u8; 1 + (round as usize * 7919) % 300_000];
                    file.set_len(0).unwrap();
                    file.write_all_at(&body, 0).unwrap();
                    file.flush().unwrap();
                    round += 1;
                }
            })
        };
        let (_dst, d) = canonical_tempdir();
        for run_no in 0..30 {
            let to = d.join(format!("t{run_no}"));
            let copied = run(&s, &to, Check::Exact, 2, &mut |_| {}).unwrap();
            let listed = copied.files.get(b"moving").unwrap();
            let held = digest_of(&to.join("moving"));
            assert_eq!((listed.size, listed.sha256.clone().unwrap()), held);
        }
        stop.store(true, Ordering::Relaxed);
        writer.join().unwrap();
    }
}
