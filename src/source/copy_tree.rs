//! The copy of a tree in one walk (what [`super::copy::copy`] and
//! [`super::copy::copy_source`] run): folders are read and recreated in walk order on the
//! walking thread, each entry checked as it is met (the audit of
//! [`super::copy::audit_source`]: special files refused, the manifest link checked), links
//! recreated as links, and regular files handed to a few worker threads.
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
//! btrfs and XFS), else `copy_file_range`, else reads and writes; its mode and modification
//! time are set on the open copy. Folders get their modes and times last, deepest first, so
//! read-only folders can still be filled and their times are not changed by the filling.
//!
//! Errors keep the order the separate audit gave them: a problem the audit reports
//! (anywhere in the tree) wins over a failure to copy, which wins over the check of the copy.

use std::ffi::{CStr, OsStr, OsString};
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use anyhow::{Context, Result, anyhow};
use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags, Stat, Timespec, Timestamps};

use super::copy::{
    CopyStats, LooseLink, PROJECT_STATE, Root, check_manifest_link, io_reason, reach,
    special_kind_of,
};
use crate::catalog::manifest;
use crate::output::printable;

/// Folders this deep and shallower are kept open while the walk is inside them; deeper ones
/// are reached by a relative path from the deepest kept one, so a very deep tree cannot run
/// the process out of file descriptors (2 per level, plus 2 per queued file).
const HELD_LEVELS: usize = 64;

/// Files are handed to the workers in batches of the files of one folder, up to this many: one
/// wake-up per batch, not per file, and two workers seldom create files in the same folder at
/// once (a creation locks its folder)...
const BATCH: usize = 256;

/// ... and this many batches wait at most: enough to keep the workers busy while the walk
/// creates a folder, few enough to bound the folder handles queued files keep open (a
/// batch holds two).
const QUEUE: usize = 4;

/// At most this many workers. Copying small files is system calls (create, allocate, write
/// an inode), which on one filesystem scale to a few threads, not more: files in one folder
/// are created under that folder's lock. Two keep two cores busy while the walk reads
/// folders; up to four overlap the waits of a source that is not in the page cache.
const MAX_WORKERS: usize = 4;

/// What a copy checks on the way.
#[derive(Debug, Clone, Copy)]
pub(super) enum Check<'a> {
    /// Special files refused with the audit's message, the manifest link checked; messages
    /// show paths after this prefix instead of under the source.
    Audit(&'a str),
    /// Special files refused all the same, with a plain message.
    Plain,
}

/// What a copy leaves behind for the check of the copy: its links, in walk order.
pub(super) struct Copied {
    pub stats: CopyStats,
    /// Each link's path relative to the tree and the target it was given.
    pub links: Vec<(PathBuf, PathBuf)>,
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
    let shared = Arc::new(Shared::new(dst, src));
    let mut walker = Walker {
        tree,
        src,
        check,
        shared: Arc::clone(&shared),
        pool: Pool::new(workers),
        stats: CopyStats::default(),
        entries: 0,
        dirs: Vec::new(),
        links: Vec::new(),
        progress,
    };
    let outcome = walker.walk_root(dst);
    let Walker {
        pool,
        mut stats,
        dirs,
        links,
        ..
    } = walker;
    if outcome.is_err() {
        shared.cancel.store(true, Ordering::Relaxed);
    }
    pool.finish(&shared);
    outcome?;
    if let Some((_, error)) = shared.error.lock().expect("no worker panics").take() {
        return Err(error);
    }
    finish_dirs(dst, &dirs)?;
    stats.bytes = shared.bytes.load(Ordering::Relaxed);
    Ok(Copied { stats, links })
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
}

/// The walking thread's state.
struct Walker<'p> {
    tree: Root,
    src: &'p Path,
    check: Check<'p>,
    shared: Arc<Shared>,
    pool: Pool,
    stats: CopyStats,
    /// Entries seen so far: the index of the next one, to order failures as the walk met them.
    entries: u64,
    dirs: Vec<DirTimes>,
    links: Vec<(PathBuf, PathBuf)>,
    progress: &'p mut dyn FnMut(&CopyStats),
}

impl Walker<'_> {
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
        self.dirs.push(dir_times(PathBuf::new(), &stat));
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
        for (name, kind) in entries {
            relative.push(&name);
            let done = self.entry(src, dst, &name, kind, relative, depth + 1);
            relative.pop();
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
        if left_out(name, kind, depth) {
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
        self.dirs.push(dir_times(relative.clone(), &stat));
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
        let target = self.tree.relocate(&target, relative);
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
        self.pool.send(
            &self.shared,
            Job {
                index,
                from: (src.clone(), name.to_os_string()),
                to: dst.clone(),
                relative: relative.to_path_buf(),
            },
        );
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
            Check::Plain => anyhow!(
                "{} is a special file; refusing to copy it",
                printable(&path.display().to_string())
            ),
        }
    }

    fn checked(&self, e: anyhow::Error) -> anyhow::Error {
        checked(self.check, self.src, e)
    }
}

/// An error of the check of `src`, its paths shown after the prefix (see
/// [`super::copy::audit`]).
fn checked(check: Check<'_>, src: &Path, e: anyhow::Error) -> anyhow::Error {
    match check {
        Check::Audit(prefix) => super::copy::shown_after(src, prefix, &e),
        Check::Plain => e,
    }
}

/// A folder opened to be read or to have things made in it, never through a link.
const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

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

fn dir_times(relative: PathBuf, stat: &Stat) -> DirTimes {
    DirTimes {
        relative,
        mode: Mode::from_raw_mode(stat.st_mode),
        modified: modified(stat),
    }
}

#[allow(clippy::cast_possible_wrap, clippy::unnecessary_cast)]
fn modified(stat: &Stat) -> Timespec {
    Timespec {
        tv_sec: stat.st_mtime as i64,
        tv_nsec: stat.st_mtime_nsec as _,
    }
}

/// The entries of a folder (its kind as the folder lists it), sorted by name.
fn read_sorted(dir: &Handle) -> io::Result<Vec<(OsString, FileType)>> {
    let fd = if dir.below.as_os_str().is_empty() {
        rustix::io::dup(&*dir.base)?
    } else {
        rustix::fs::openat(&*dir.base, &dir.below, DIR_FLAGS, Mode::empty())?
    };
    let reader = Dir::new(fd)?;
    let mut entries = Vec::new();
    for entry in reader {
        let entry = entry?;
        let name = entry.file_name();
        if name != c"." && name != c".." {
            entries.push((os(name), entry.file_type()));
        }
    }
    entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    Ok(entries)
}

fn os(name: &CStr) -> OsString {
    OsStr::from_bytes(name.to_bytes()).to_os_string()
}

/// Folder modes and times, deepest first (the reverse of the walk order).
fn finish_dirs(dst: &Path, dirs: &[DirTimes]) -> Result<()> {
    let root = rustix::fs::open(dst, DIR_FLAGS, Mode::empty())
        .map_err(io::Error::from)
        .with_context(|| format!("cannot open {}", dst.display()))?;
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
        rustix::fs::chmodat(&root, at, dir.mode, AtFlags::empty())
            .map_err(io::Error::from)
            .with_context(|| format!("cannot set the mode of {}", dst.join(at).display()))?;
    }
    Ok(())
}

fn omit() -> Timespec {
    Timespec {
        tv_sec: 0,
        tv_nsec: rustix::fs::UTIME_OMIT,
    }
}

/// One regular file to copy: its folder and name in the source, the folder of its copy, its
/// path in the tree (for messages) and its place in the walk.
struct Job {
    index: u64,
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
    /// Whether reflinks and `copy_file_range` are still worth trying (cleared on the first
    /// refusal: the filesystem does not do them, and every file would ask again).
    reflink: AtomicBool,
    range: AtomicBool,
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
            range: AtomicBool::new(true),
        }
    }

    /// Notes that entry `index` failed to copy; the failure first in walk order is kept.
    fn failed(&self, index: u64, error: anyhow::Error) {
        let mut slot = self.error.lock().expect("no worker panics");
        if slot.as_ref().is_none_or(|(at, _)| index < *at) {
            *slot = Some((index, error));
        }
        self.failed_at.fetch_min(index, Ordering::Relaxed);
    }

    /// Whether job `index` is still to be done (nothing before it in the walk failed).
    fn wanted(&self, index: u64) -> bool {
        !self.cancel.load(Ordering::Relaxed) && index < self.failed_at.load(Ordering::Relaxed)
    }
}

/// The worker threads, started as batches turn up (a tree of one folder starts one).
struct Pool {
    batch: Vec<Job>,
    sender: Option<SyncSender<Vec<Job>>>,
    receiver: Arc<Mutex<Receiver<Vec<Job>>>>,
    workers: Vec<JoinHandle<()>>,
    max: usize,
}

impl Pool {
    fn new(workers: usize) -> Pool {
        let (sender, receiver) = sync_channel(QUEUE);
        Pool {
            batch: Vec::new(),
            sender: Some(sender),
            receiver: Arc::new(Mutex::new(receiver)),
            workers: Vec::new(),
            max: workers.max(1),
        }
    }

    fn send(&mut self, shared: &Arc<Shared>, job: Job) {
        if self.batch.last().is_some_and(|last| !last.to.same(&job.to)) {
            self.flush(shared);
        }
        self.batch.push(job);
        if self.batch.len() == BATCH {
            self.flush(shared);
        }
    }

    /// Hands the files gathered so far to a worker, starting one if fewer run than allowed.
    fn flush(&mut self, shared: &Arc<Shared>) {
        if self.batch.is_empty() {
            return;
        }
        if self.workers.len() < self.max {
            self.spawn(shared);
        }
        let batch = std::mem::take(&mut self.batch);
        let sender = self.sender.as_ref().expect("sender kept until finish");
        if let Err(failed) = sender.send(batch) {
            // No worker is left (none could be started): copy them here.
            copy_batch(shared, &failed.0, &mut Vec::new());
        }
    }

    fn spawn(&mut self, shared: &Arc<Shared>) {
        let shared = Arc::clone(shared);
        let receiver = Arc::clone(&self.receiver);
        let started = std::thread::Builder::new()
            .name("copy".into())
            .spawn(move || work(&shared, &receiver));
        match started {
            Ok(handle) => self.workers.push(handle),
            // Cannot start a thread: make do with those there are (or none, see `flush`).
            Err(_) => self.max = self.workers.len(),
        }
    }

    /// Waits for the queued files to be copied.
    fn finish(mut self, shared: &Arc<Shared>) {
        self.flush(shared);
        self.sender = None;
        for worker in self.workers.drain(..) {
            worker.join().expect("a copy worker panicked");
        }
    }
}

fn work(shared: &Shared, receiver: &Mutex<Receiver<Vec<Job>>>) {
    let mut buffer = Vec::new();
    loop {
        let batch = receiver.lock().expect("no worker panics").recv();
        let Ok(batch) = batch else { return };
        copy_batch(shared, &batch, &mut buffer);
    }
}

fn copy_batch(shared: &Shared, batch: &[Job], buffer: &mut Vec<u8>) {
    for job in batch {
        if !shared.wanted(job.index) {
            return;
        }
        match copy_file(shared, job, buffer) {
            Ok(bytes) => {
                shared.bytes.fetch_add(bytes, Ordering::Relaxed);
            }
            Err(e) => shared.failed(job.index, e),
        }
    }
}

/// Copies one regular file with its mode and modification time (see the module
/// documentation); the copy is a new file, never an existing one.
fn copy_file(shared: &Shared, job: &Job, buffer: &mut Vec<u8>) -> Result<u64> {
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
    let write = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let copy = rustix::fs::openat(
        &*job.to.base,
        &*job.to.name(name),
        write,
        Mode::RUSR | Mode::WUSR,
    )
    .map_err(io::Error::from)
    .with_context(|| format!("cannot create {}", to().display()))?;
    let size = u64::try_from(stat.st_size).unwrap_or(0);
    let bytes = contents(shared, &source, &copy, size, buffer).map_err(fail)?;
    rustix::fs::fchmod(&copy, Mode::from_raw_mode(stat.st_mode))
        .map_err(io::Error::from)
        .with_context(|| format!("cannot set the mode of {}", to().display()))?;
    let times = Timestamps {
        last_access: omit(),
        last_modification: modified(&stat),
    };
    let _ = rustix::fs::futimens(&copy, &times);
    Ok(bytes)
}

/// Copies the first `size` bytes of `source` (its size when it was opened: the copy is of
/// that moment) into the empty `copy`; the number of bytes copied.
fn contents(
    shared: &Shared,
    source: &OwnedFd,
    copy: &OwnedFd,
    size: u64,
    buffer: &mut Vec<u8>,
) -> rustix::io::Result<u64> {
    if size == 0 {
        return Ok(0);
    }
    if let Some(done) = reflink(shared, source, copy, size) {
        return Ok(done);
    }
    let mut copied = in_kernel(shared, source, copy, size)?;
    if copied < size && !shared.range.load(Ordering::Relaxed) {
        copied += read_write(source, copy, size - copied, buffer)?;
    }
    Ok(copied)
}

/// A reflink of the whole file (shares its blocks: instant, no data written); None when the
/// filesystem cannot (ext4: `EOPNOTSUPP`; another filesystem: `EXDEV`), which stops later
/// attempts.
#[cfg(any(target_os = "linux", target_os = "android"))]
fn reflink(shared: &Shared, source: &OwnedFd, copy: &OwnedFd, size: u64) -> Option<u64> {
    if !shared.reflink.load(Ordering::Relaxed) {
        return None;
    }
    if rustix::fs::ioctl_ficlone(copy, source).is_ok() {
        return Some(size);
    }
    shared.reflink.store(false, Ordering::Relaxed);
    None
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn reflink(_: &Shared, _: &OwnedFd, _: &OwnedFd, _: u64) -> Option<u64> {
    None
}

/// Copies with `copy_file_range` (the kernel moves the bytes, no copy through this process)
/// until `size` bytes or the end of the source; stops early, clearing `shared.range`, when
/// the kernel or filesystem does not offer it for these files.
#[cfg(any(target_os = "linux", target_os = "android"))]
fn in_kernel(
    shared: &Shared,
    source: &OwnedFd,
    copy: &OwnedFd,
    size: u64,
) -> rustix::io::Result<u64> {
    use rustix::io::Errno;
    let mut copied = 0;
    while copied < size && shared.range.load(Ordering::Relaxed) {
        let want = usize::try_from(size - copied)
            .unwrap_or(usize::MAX)
            .min(1 << 30);
        match rustix::fs::copy_file_range(source, None, copy, None, want) {
            Ok(0) => break,
            Ok(n) => copied += n as u64,
            Err(Errno::NOSYS | Errno::XDEV | Errno::INVAL | Errno::OPNOTSUPP | Errno::PERM)
                if copied == 0 =>
            {
                shared.range.store(false, Ordering::Relaxed);
            }
            Err(e) => return Err(e),
        }
    }
    Ok(copied)
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn in_kernel(shared: &Shared, _: &OwnedFd, _: &OwnedFd, _: u64) -> rustix::io::Result<u64> {
    shared.range.store(false, Ordering::Relaxed);
    Ok(0)
}

/// Copies up to `size` bytes by reads and writes through `buffer`.
fn read_write(
    source: &OwnedFd,
    copy: &OwnedFd,
    size: u64,
    buffer: &mut Vec<u8>,
) -> rustix::io::Result<u64> {
    buffer.resize(64 * 1024, 0);
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
        copied += read as u64;
    }
    Ok(copied)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::copy::{audit_source, copy_source};
    use std::fs;
    use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};
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
        let (_, links) = copy_source(&s, &to, "src/", &mut |_| {}).unwrap();
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
        let err = crate::source::copy::copy(&s, &d.join("t"), &mut |_| {}).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "{}/a/pipe is a special file; refusing to copy it",
                s.display()
            )
        );
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
}
