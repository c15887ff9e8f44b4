//! Extension log files: printing one whole or its last lines (found by reading backwards),
//! and following it like `tail -F` through appends, truncation, rotation and late creation.
//!
//! The follower is written here rather than taken from a tail crate: it must treat the log as
//! untrusted (never block on a FIFO that replaces it, cap what it reads), notice a rotation by
//! inode and a truncation by length, and stop when the reader of stdout has gone. On Linux
//! the log folder's inotify handle, polled with stdout on the follower's own thread, wakes it
//! (an append is printed with one read of the file); elsewhere `notify` does. A slow poll
//! covers filesystems without events and checks rotation.

use std::ffi::OsString;
use std::fmt;
use std::fs::{self, File, Metadata};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
#[cfg(not(target_os = "linux"))]
use std::sync::mpsc::{self, Receiver, Sender};
use std::time::{Duration, Instant};

#[cfg(not(target_os = "linux"))]
use notify::{Event, RecommendedWatcher, RecursiveMode, Watcher};

use crate::fsx::bounded::{self, ReadError};

/// How much is read at a time when searching backwards for line starts.
pub(crate) const BLOCK: usize = 64 * 1024;

/// Whether stdout is a pipe whose reader has gone, so an idle follower can stop without
/// waiting for the next write to fail (as `tail -f` does).
fn stdout_closed() -> bool {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    let stdout = io::stdout();
    let mut fds = [PollFd::new(&stdout, PollFlags::empty())];
    let now = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    matches!(poll(&mut fds, Some(&now)), Ok(n) if n > 0)
        && fds[0].revents().intersects(PollFlags::ERR | PollFlags::HUP)
}

/// The longest a follower sleeps between two checks, events or not.
pub(crate) const POLL: Duration = Duration::from_millis(250);

/// The offset where the last `lines` lines of `file` (`len` bytes long) start, found by
/// reading backwards from the end in blocks of [`BLOCK`] bytes. A final line without a
/// trailing newline counts as a line; only `\n` ends a line (a `\r` before it is kept).
pub(crate) fn tail_start<R: Read + Seek>(file: &mut R, len: u64, lines: u64) -> io::Result<u64> {
    tail_start_in_blocks(file, len, lines, BLOCK)
}

fn tail_start_in_blocks<R: Read + Seek>(
    file: &mut R,
    len: u64,
    lines: u64,
    block: usize,
) -> io::Result<u64> {
    if lines == 0 {
        return Ok(len);
    }
    let mut buf = vec![0u8; block];
    let mut end = len;
    // The newline ending the last line does not start another one: skip it.
    let mut first = true;
    let mut wanted = lines;
    while end > 0 {
        let start = end.saturating_sub(block as u64);
        let chunk = &mut buf[..(end - start) as usize];
        file.seek(SeekFrom::Start(start))?;
        match file.read_exact(chunk) {
            // The file shrank under us: its beginning is as good a start as any.
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(0),
            other => other?,
        }
        if let Some(i) = line_start_in(chunk, first, &mut wanted) {
            return Ok(start + i as u64);
        }
        first = false;
        end = start;
    }
    Ok(0)
}

/// Where in `chunk` the last `wanted` lines start, counting backwards from its end; when
/// they do not all fit, `wanted` is left at the lines still to find before `chunk`. `last`
/// says `chunk` ends the file, where a final newline ends the last line instead of
/// starting another one.
fn line_start_in(chunk: &[u8], last: bool, wanted: &mut u64) -> Option<usize> {
    let mut scan = chunk;
    if last && scan.last() == Some(&b'\n') {
        scan = &scan[..scan.len() - 1];
    }
    for i in newline_finder().iter(scan).rev() {
        *wanted -= 1;
        if *wanted == 0 {
            return Some(i + 1);
        }
    }
    None
}

/// A newline searcher that needs no CPU feature check: SSE2 on `x86_64` and NEON on `aarch64`
/// (always there), memchr's word-at-a-time search elsewhere. `memchr::memrchr` would pick
/// AVX2 at its first call by asking the CPU (`cpuid`, which traps to the hypervisor in a
/// virtual machine): 4% of the time `logs -n 100` took (perf), to search a few kilobytes.
#[cfg(target_arch = "x86_64")]
fn newline_finder() -> memchr::arch::x86_64::sse2::memchr::One {
    memchr::arch::x86_64::sse2::memchr::One::new(b'\n').expect("x86_64 has SSE2")
}

#[cfg(target_arch = "aarch64")]
fn newline_finder() -> memchr::arch::aarch64::neon::memchr::One {
    memchr::arch::aarch64::neon::memchr::One::new(b'\n').expect("aarch64 has NEON")
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn newline_finder() -> memchr::arch::all::memchr::One {
    memchr::arch::all::memchr::One::new(b'\n')
}

/// The first read of [`write_tail_of_last_block`]: room for `lines` lines of 128 bytes, at
/// least 8 KiB, at most [`BLOCK`]. A log's lines are mostly shorter; a tail that does not
/// fit is read again with a whole block. (Reading a whole block each time zeroed and
/// filled 16 pages for the 6 KB that `logs -n 100` usually prints.)
fn first_read(lines: u64) -> usize {
    usize::try_from(lines.saturating_mul(128))
        .unwrap_or(BLOCK)
        .clamp(8 * 1024, BLOCK)
}

/// Writes the last `lines` lines of `file` (`len` bytes long) to `out` when they lie within
/// its final [`BLOCK`] bytes, read with one `pread` (two when they do not fit in
/// [`first_read`]) into `block` and written from there;
/// returns the offset to copy on from: `len`, or, when nothing was written (the lines begin
/// further back, or the file shrank under the read), where [`tail_start`] says they start.
fn write_tail_of_last_block<W: Write>(
    file: &File,
    len: u64,
    lines: u64,
    block: &mut Vec<u8>,
    out: &mut W,
) -> io::Result<u64> {
    use std::os::unix::fs::FileExt;
    if lines == 0 {
        return Ok(len);
    }
    let mut size = first_read(lines);
    loop {
        let start = len.saturating_sub(size as u64);
        block.resize((len - start) as usize, 0);
        let read = loop {
            match file.read_at(block, start) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                other => break other?,
            }
        };
        if read < block.len() {
            // The file shrank under us (as `tail_start` says, its beginning will do), or
            // the read was short: the block-by-block search settles it.
            let mut reader = file;
            return tail_start(&mut reader, len, lines);
        }
        let mut wanted = lines;
        match line_start_in(block, true, &mut wanted) {
            Some(i) => {
                out.write_all(&block[i..])?;
                return Ok(len);
            }
            None if start == 0 => {
                out.write_all(block)?;
                return Ok(len);
            }
            None if size < BLOCK => size = BLOCK,
            // A tail longer than the block (rare): found block by block from the end.
            None => {
                let mut reader = file;
                return tail_start(&mut reader, len, lines);
            }
        }
    }
}

/// Copies `file` from `offset` up to `end` (its length when last seen) into `out` and
/// flushes it, reading at the offset (no seek); returns the number of bytes copied, fewer
/// if the file shrank meanwhile.
fn copy_range<W: Write>(file: &File, offset: u64, end: u64, out: &mut W) -> io::Result<u64> {
    use std::os::unix::fs::FileExt;
    let mut buf = vec![0u8; usize::try_from(end - offset).unwrap_or(BLOCK).min(BLOCK)];
    let mut at = offset;
    while at < end {
        let want = usize::try_from(end - at).unwrap_or(BLOCK).min(buf.len());
        let n = match file.read_at(&mut buf[..want], at) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        out.write_all(&buf[..n])?;
        at += n as u64;
    }
    out.flush()?;
    Ok(at - offset)
}

/// Prints a log to `out`: all of it, or only its last `lines` lines (see [`print_tail`]).
pub(crate) fn print<W: Write>(file: &File, lines: Option<u64>, out: &mut W) -> io::Result<()> {
    let (offset, buf) = print_tail(file, lines, out)?;
    copy_through_buffer(file, offset, out, buf)
}

/// With `lines`, reads the final block once ([`write_tail_of_last_block`]) and writes the
/// lines found in it; returns the offset to copy on from (what the file gained since, or
/// all of it without `lines`) and the block, to copy through.
fn print_tail<W: Write>(
    file: &File,
    lines: Option<u64>,
    out: &mut W,
) -> io::Result<(u64, Vec<u8>)> {
    let mut buf = Vec::new();
    let offset = match lines {
        Some(n) => write_tail_of_last_block(file, file.metadata()?.len(), n, &mut buf, out)?,
        None => 0,
    };
    Ok((offset, buf))
}

/// How much one `sendfile` call is asked to move (the kernel moves at most about 2 GiB).
const SEND_CHUNK: usize = 1 << 30;

/// How much the copy through memory (stdout on a terminal) reads at a time.
const COPY_BUFFER: usize = 256 * 1024;

/// [`print`] to stdout as it is: when stdout is a pipe, a file or a socket the kernel moves
/// the bytes (`sendfile` on Linux, no copy through this process), else (a terminal, or
/// another system) they go through one large buffer. Reads to the file's end as it is when
/// reached.
pub(crate) fn print_to_stdout(
    file: &File,
    lines: Option<u64>,
    out: &mut io::StdoutLock<'_>,
) -> io::Result<()> {
    let (offset, buf) = print_tail(file, lines, out)?;
    out.flush()?;
    #[cfg(target_os = "linux")]
    let Some(offset) = send_file(file, offset, out)? else {
        return Ok(());
    };
    copy_through_buffer(file, offset, out, buf)
}

/// Sends `file` from `offset` to its end to `out` by `sendfile` when `out` takes it;
/// `None` when all is sent, else the offset to copy on from through memory.
#[cfg(target_os = "linux")]
fn send_file(file: &File, mut offset: u64, out: &io::StdoutLock<'_>) -> io::Result<Option<u64>> {
    if !takes_sendfile(out) {
        return Ok(Some(offset));
    }
    loop {
        match rustix::fs::sendfile(out, file, Some(&mut offset), SEND_CHUNK) {
            Ok(0) => return Ok(None),
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            // Not supported for this pair: copy the rest through memory.
            Err(rustix::io::Errno::INVAL | rustix::io::Errno::NOSYS) => return Ok(Some(offset)),
            Err(e) => return Err(e.into()),
        }
    }
}

/// Whether `out` is a pipe, a regular file or a socket (what `sendfile` writes to best).
#[cfg(target_os = "linux")]
fn takes_sendfile(out: &impl std::os::fd::AsFd) -> bool {
    use rustix::fs::FileType;
    rustix::fs::fstat(out).is_ok_and(|st| {
        matches!(
            FileType::from_raw_mode(st.st_mode),
            FileType::Fifo | FileType::RegularFile | FileType::Socket
        )
    })
}

/// Copies `file` from `offset` to its end into `out` through one buffer of [`COPY_BUFFER`]
/// bytes; the first read goes into `buf` when it is not empty (the block a tail was read
/// into, enough to find that nothing was appended since without allocating more).
fn copy_through_buffer(
    file: &File,
    mut offset: u64,
    out: &mut impl Write,
    mut buf: Vec<u8>,
) -> io::Result<()> {
    use std::os::unix::fs::FileExt;
    if buf.is_empty() {
        buf.resize(COPY_BUFFER, 0);
    }
    loop {
        let n = match file.read_at(&mut buf, offset) {
            Ok(0) => return out.flush(),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        out.write_all(&buf[..n])?;
        offset += n as u64;
        if buf.len() < COPY_BUFFER {
            buf.resize(COPY_BUFFER, 0);
        }
    }
}

/// Something a follower noticed about the file, worth a note to the user.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Change {
    /// The file does not exist (yet) when following starts.
    Missing,
    /// A file that was missing now exists.
    Appeared,
    /// The file got shorter; reading continues from its new start.
    Truncated,
    /// The path no longer exists; the file that was there is still read.
    Gone,
    /// Another file now lives at the path; the old one was read to its end.
    Replaced,
}

/// A [`Change`] to the file at `path`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Notice<'a> {
    pub path: &'a Path,
    pub change: Change,
}

impl fmt::Display for Notice<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.change {
            Change::Missing => "does not exist yet; waiting for it to appear",
            Change::Appeared => "has appeared; following it",
            Change::Truncated => "file truncated",
            Change::Gone => "has been removed or renamed; waiting for a new file",
            Change::Replaced => "has been replaced; following the new file",
        };
        write!(f, "{}: {what}", self.path.display())
    }
}

/// Which file a path or handle refers to, to tell a rotated file from the one in place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileId(u64, u64);

fn file_id(meta: &Metadata) -> FileId {
    use std::os::unix::fs::MetadataExt;
    FileId(meta.dev(), meta.ino())
}

/// The file being read: its handle, identity and how far it has been printed.
struct Tracked {
    file: File,
    id: FileId,
    pos: u64,
}

/// Opens the file at `path`, or `None` when there is none. It must be a regular file: a
/// named pipe, socket or device put there is an error (opening it never waits).
fn open_tracked(path: &Path) -> io::Result<Option<Tracked>> {
    let file = match bounded::open(path) {
        Ok(file) => file,
        Err(ReadError::Missing) => return Ok(None),
        Err(ReadError::Io(e)) => return Err(e),
        Err(other) => {
            let why = format!("it {other}; zot only follows a regular file");
            return Err(io::Error::new(io::ErrorKind::InvalidData, why));
        }
    };
    let id = file_id(&file.metadata()?);
    Ok(Some(Tracked { file, id, pos: 0 }))
}

/// Follows the file at a path like `tail -F`, writing what is appended to `out` and
/// reporting changes to `note`.
pub(crate) struct Follower<W: Write, N: FnMut(Notice<'_>)> {
    path: PathBuf,
    out: W,
    note: N,
    current: Option<Tracked>,
    gone: bool,
}

impl<W: Write, N: FnMut(Notice<'_>)> Follower<W, N> {
    pub(crate) fn new(path: PathBuf, out: W, note: N) -> Self {
        Follower {
            path,
            out,
            note,
            current: None,
            gone: false,
        }
    }

    /// Prints the last `lines` lines, then prints whatever is appended, forever; returns
    /// only on an error (such as a closed stdout).
    ///
    /// An append to the file is printed as soon as the watch reports it, reading only the
    /// file; whether the path still names it, the folder's watch and stdout's reader are
    /// checked on any other event and at least every [`POLL`].
    pub(crate) fn run(mut self, lines: u64) -> io::Result<()> {
        let mut watch = Watch::new(&self.path);
        watch.refresh();
        self.start(lines)?;
        let mut checked = Instant::now();
        loop {
            let wake = watch.wait(POLL.saturating_sub(checked.elapsed()));
            if wake == Wake::StdoutClosed {
                return Err(io::ErrorKind::BrokenPipe.into());
            }
            if wake == Wake::Appended
                && let Some(mut tracked) = self.current.take()
            {
                let drained = self.drain(&mut tracked);
                self.current = Some(tracked);
                drained?;
                if checked.elapsed() < POLL {
                    continue;
                }
            }
            if stdout_closed() {
                return Err(io::ErrorKind::BrokenPipe.into());
            }
            self.check()?;
            watch.refresh();
            checked = Instant::now();
        }
    }

    /// Prints the last `lines` lines of the file, or notes that it does not exist yet.
    pub(crate) fn start(&mut self, lines: u64) -> io::Result<()> {
        let Some(mut tracked) = open_tracked(&self.path)? else {
            self.notice(Change::Missing);
            return Ok(());
        };
        let len = tracked.file.metadata()?.len();
        tracked.pos = tail_start(&mut tracked.file, len, lines)?;
        self.drain(&mut tracked)?;
        self.current = Some(tracked);
        Ok(())
    }

    /// One round: prints what was appended and reacts to truncation, rotation or creation.
    pub(crate) fn check(&mut self) -> io::Result<()> {
        match self.current.take() {
            None => self.pick_up(Change::Appeared),
            Some(mut tracked) => {
                self.drain(&mut tracked)?;
                self.follow_path(tracked)
            }
        }
    }

    /// Starts on the file now at the path, if any, from its beginning.
    fn pick_up(&mut self, change: Change) -> io::Result<()> {
        if let Some(mut tracked) = open_tracked(&self.path)? {
            self.notice(change);
            self.gone = false;
            self.drain(&mut tracked)?;
            self.current = Some(tracked);
        }
        Ok(())
    }

    /// Keeps `tracked` while the path still names it (or nothing); switches to a new file.
    fn follow_path(&mut self, tracked: Tracked) -> io::Result<()> {
        let at_path = fs::metadata(&self.path).ok().map(|m| file_id(&m));
        match at_path {
            Some(id) if id != tracked.id => {
                self.pick_up(Change::Replaced)?;
                if self.current.is_none() {
                    // Gone again before it could be opened: keep reading the old one.
                    self.current = Some(tracked);
                }
                return Ok(());
            }
            Some(_) => self.gone = false,
            None if !self.gone => {
                self.gone = true;
                self.notice(Change::Gone);
            }
            None => {}
        }
        self.current = Some(tracked);
        Ok(())
    }

    /// Prints `tracked` from its position to its end, starting over if it shrank.
    fn drain(&mut self, tracked: &mut Tracked) -> io::Result<()> {
        let len = tracked.file.metadata()?.len();
        if len < tracked.pos {
            self.notice(Change::Truncated);
            tracked.pos = 0;
        }
        if len > tracked.pos {
            tracked.pos += copy_range(&tracked.file, tracked.pos, len, &mut self.out)?;
        }
        Ok(())
    }

    fn notice(&mut self, change: Change) {
        (self.note)(Notice {
            path: &self.path,
            change,
        });
    }
}

/// Why a follower's wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
enum Wake {
    /// Only appends to the followed file (it was written to).
    Appended,
    /// Something else happened in the folder: creation, removal, renaming, a lost event.
    Changed,
    /// Nothing that concerns the file within the time given.
    Timeout,
    /// The reader of stdout has gone.
    StdoutClosed,
}

/// Wakes a follower when something happens to the log in its folder, through the folder's
/// own inotify handle polled together with stdout on the follower's thread: an append
/// wakes it at once, without another thread between. The folder is watched once it exists
/// (it is never created) and watched again if it is replaced.
#[cfg(target_os = "linux")]
struct Watch {
    dir: PathBuf,
    file_name: Option<OsString>,
    inotify: Option<std::os::fd::OwnedFd>,
    watched: Option<FileId>,
    buf: Vec<std::mem::MaybeUninit<u8>>,
}

#[cfg(target_os = "linux")]
impl Watch {
    fn new(file: &Path) -> Self {
        let dir = match file.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
            _ => PathBuf::from("."),
        };
        Watch {
            dir,
            file_name: file.file_name().map(OsString::from),
            inotify: None,
            watched: None,
            buf: vec![std::mem::MaybeUninit::uninit(); 16 * 1024],
        }
    }

    /// Watches the folder if it appeared or was replaced since the last call.
    fn refresh(&mut self) {
        let now = fs::metadata(&self.dir).ok().map(|m| file_id(&m));
        if now == self.watched {
            return;
        }
        self.watched = now;
        // Without a watch (no folder, or no inotify) the periodic check still runs.
        self.inotify = now.and_then(|_| self.start_watch());
    }

    fn start_watch(&self) -> Option<std::os::fd::OwnedFd> {
        use rustix::fs::inotify::{self, CreateFlags, WatchFlags};
        let fd = inotify::init(CreateFlags::CLOEXEC | CreateFlags::NONBLOCK).ok()?;
        // Not ACCESS, OPEN or CLOSE: reading the log must not wake its own reader.
        let events = WatchFlags::MODIFY
            | WatchFlags::ATTRIB
            | WatchFlags::CREATE
            | WatchFlags::DELETE
            | WatchFlags::MOVED_FROM
            | WatchFlags::MOVED_TO
            | WatchFlags::DELETE_SELF
            | WatchFlags::MOVE_SELF;
        inotify::add_watch(&fd, &self.dir, events).ok()?;
        Some(fd)
    }

    /// Returns at the next event concerning the file, when stdout's reader goes, or after
    /// `timeout`, whichever is first.
    fn wait(&mut self, timeout: Duration) -> Wake {
        use rustix::event::{PollFd, PollFlags, Timespec, poll};
        let stdout = io::stdout();
        let timeout = Timespec {
            tv_sec: i64::try_from(timeout.as_secs()).unwrap_or(i64::MAX),
            tv_nsec: timeout.subsec_nanos().into(),
        };
        let mut fds = vec![PollFd::new(&stdout, PollFlags::empty())];
        if let Some(fd) = &self.inotify {
            fds.push(PollFd::new(fd, PollFlags::IN));
        }
        if poll(&mut fds, Some(&timeout)).is_err() {
            return Wake::Timeout;
        }
        if fds[0].revents().intersects(PollFlags::ERR | PollFlags::HUP) {
            return Wake::StdoutClosed;
        }
        let ready = fds.get(1).is_some_and(|fd| !fd.revents().is_empty());
        drop(fds);
        if ready {
            self.read_events()
        } else {
            Wake::Timeout
        }
    }

    /// What the queued events say about the file: only writes to it, or anything else.
    fn read_events(&mut self) -> Wake {
        use rustix::fs::inotify::{ReadFlags, Reader};
        let Some(fd) = &self.inotify else {
            return Wake::Timeout;
        };
        let name = self
            .file_name
            .as_deref()
            .map(std::os::unix::ffi::OsStrExt::as_bytes);
        let mut reader = Reader::new(fd, &mut self.buf);
        let mut wake = Wake::Timeout;
        while let Ok(event) = reader.next() {
            let about_file = event.file_name().map(std::ffi::CStr::to_bytes) == name;
            let events = event.events();
            if about_file && events == ReadFlags::MODIFY {
                if wake == Wake::Timeout {
                    wake = Wake::Appended;
                }
            } else if about_file || event.file_name().is_none() {
                // The file itself, the folder itself, or a lost event.
                wake = Wake::Changed;
            }
            // What did not fit the buffer wakes the next poll; no read to learn there is none.
            if reader.is_buffer_empty() {
                break;
            }
        }
        wake
    }
}

/// Wakes a follower when something happens in the log's folder. The folder is watched once
/// it exists (it is never created) and watched again if it is replaced.
#[cfg(not(target_os = "linux"))]
struct Watch {
    dir: PathBuf,
    file_name: Option<OsString>,
    tx: Sender<()>,
    rx: Receiver<()>,
    watcher: Option<RecommendedWatcher>,
    watched: Option<FileId>,
}

#[cfg(not(target_os = "linux"))]
impl Watch {
    fn new(file: &Path) -> Self {
        let (tx, rx) = mpsc::channel();
        let dir = match file.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
            _ => PathBuf::from("."),
        };
        Watch {
            dir,
            file_name: file.file_name().map(OsString::from),
            tx,
            rx,
            watcher: None,
            watched: None,
        }
    }

    /// Watches the folder if it appeared or was replaced since the last call.
    fn refresh(&mut self) {
        let now = fs::metadata(&self.dir).ok().map(|m| file_id(&m));
        if now == self.watched {
            return;
        }
        self.watched = now;
        // Without a watcher (no folder, or no watch available) the periodic check still runs.
        self.watcher = now.and_then(|_| self.start_watcher());
    }

    fn start_watcher(&self) -> Option<RecommendedWatcher> {
        let tx = self.tx.clone();
        let name = self.file_name.clone();
        let mut watcher = notify::recommended_watcher(move |event: notify::Result<Event>| {
            if concerns(&event, name.as_deref()) {
                let _ = tx.send(());
            }
        })
        .ok()?;
        watcher.watch(&self.dir, RecursiveMode::NonRecursive).ok()?;
        Some(watcher)
    }

    /// Returns after the next relevant event or after `timeout`, whichever is first (an
    /// event of any kind is [`Wake::Changed`]: it is not told what happened).
    fn wait(&mut self, timeout: Duration) -> Wake {
        let woke = self.rx.recv_timeout(timeout).is_ok();
        while self.rx.try_recv().is_ok() {}
        if woke { Wake::Changed } else { Wake::Timeout }
    }
}

/// Whether a folder event may concern the followed file (errors and unnamed events may).
#[cfg(not(target_os = "linux"))]
fn concerns(event: &notify::Result<Event>, name: Option<&std::ffi::OsStr>) -> bool {
    match event {
        Ok(event) => event.paths.is_empty() || event.paths.iter().any(|p| p.file_name() == name),
        Err(_) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::io::Cursor;
    use std::rc::Rc;

    fn tail(content: &[u8], lines: u64, block: usize) -> Vec<u8> {
        let mut cursor = Cursor::new(content);
        let start = tail_start_in_blocks(&mut cursor, content.len() as u64, lines, block).unwrap();
        content[start as usize..].to_vec()
    }

    /// The obvious answer: split into lines (keeping their ends) and keep the last ones.
    fn naive(content: &[u8], lines: u64) -> Vec<u8> {
        let all: Vec<&[u8]> = content.split_inclusive(|b| *b == b'\n').collect();
        let keep = all.len().saturating_sub(lines as usize);
        all[keep..].concat()
    }

    #[test]
    fn empty_file_has_no_lines() {
        for n in [0, 1, 5] {
            assert_eq!(tail(b"", n, BLOCK), b"");
        }
    }

    #[test]
    fn zero_lines_prints_nothing() {
        assert_eq!(tail(b"a\nb\n", 0, BLOCK), b"");
        assert_eq!(tail(b"a\nb", 0, BLOCK), b"");
    }

    #[test]
    fn last_lines_with_trailing_newline() {
        assert_eq!(tail(b"a\nb\nc\n", 1, BLOCK), b"c\n");
        assert_eq!(tail(b"a\nb\nc\n", 2, BLOCK), b"b\nc\n");
        assert_eq!(tail(b"a\nb\nc\n", 3, BLOCK), b"a\nb\nc\n");
    }

    #[test]
    fn final_line_without_newline_counts() {
        assert_eq!(tail(b"a\nb\nc", 1, BLOCK), b"c");
        assert_eq!(tail(b"a\nb\nc", 2, BLOCK), b"b\nc");
        assert_eq!(tail(b"only", 1, BLOCK), b"only");
    }

    #[test]
    fn more_lines_than_the_file_has_prints_all() {
        assert_eq!(tail(b"a\nb\n", 10, BLOCK), b"a\nb\n");
        assert_eq!(tail(b"a\nb", u64::MAX, BLOCK), b"a\nb");
    }

    #[test]
    fn blank_lines_are_lines() {
        assert_eq!(tail(b"\n\n\n", 2, BLOCK), b"\n\n");
        assert_eq!(tail(b"a\n\n", 1, BLOCK), b"\n");
    }

    #[test]
    fn crlf_is_left_as_is() {
        assert_eq!(tail(b"a\r\nb\r\nc\r\n", 2, BLOCK), b"b\r\nc\r\n");
        assert_eq!(tail(b"a\r\nb\r", 1, BLOCK), b"b\r");
    }

    #[test]
    fn lines_longer_than_the_block() {
        let long = "x".repeat(3 * BLOCK + 17);
        let content = format!("first\n{long}\n{long}\nshort\n");
        assert_eq!(
            tail(content.as_bytes(), 2, BLOCK),
            format!("{long}\nshort\n").as_bytes()
        );
        assert_eq!(
            tail(content.as_bytes(), 3, BLOCK),
            format!("{long}\n{long}\nshort\n").as_bytes()
        );
        let content = format!("first\n{long}");
        assert_eq!(tail(content.as_bytes(), 1, BLOCK), long.as_bytes());
    }

    #[test]
    fn agrees_with_splitting_for_every_block_size() {
        let samples: [&[u8]; 9] = [
            b"",
            b"\n",
            b"a",
            b"a\n",
            b"ab\ncd\nef",
            b"ab\ncd\nef\n",
            b"\n\nx\n\n",
            b"long line here\nx\r\n\r\nend",
            b"aaaaaaaaaaaaaaaaaaaa\nbbbbbbbbbbbbbbbbbbbbbbbbb\n",
        ];
        for content in samples {
            for block in 1..=9 {
                for n in 0..=6 {
                    assert_eq!(
                        tail(content, n, block),
                        naive(content, n),
                        "content {content:?}, block {block}, n {n}"
                    );
                }
            }
        }
    }

    /// A reader that counts the bytes read through it.
    struct Counting<R> {
        inner: R,
        read: usize,
    }

    impl<R: Read> Read for Counting<R> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = self.inner.read(buf)?;
            self.read += n;
            Ok(n)
        }
    }

    impl<R: Seek> Seek for Counting<R> {
        fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
            self.inner.seek(pos)
        }
    }

    /// The last `lines` lines of `content` as `print_to_stdout` prints them: what
    /// [`write_tail_of_last_block`] writes, then the file from the offset it returns.
    fn tail_through_last_block(content: &[u8], lines: u64) -> Vec<u8> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        fs::write(&path, content).unwrap();
        let file = File::open(&path).unwrap();
        let (mut out, mut block) = (Vec::new(), Vec::new());
        let len = content.len() as u64;
        let offset = write_tail_of_last_block(&file, len, lines, &mut block, &mut out).unwrap();
        copy_through_buffer(&file, offset, &mut out, Vec::new()).unwrap();
        out
    }

    #[test]
    fn the_last_block_read_once_gives_the_same_tail() {
        let line = "a line of the log\n";
        let per_block = BLOCK / line.len();
        for content in [
            String::new(),
            "\n".to_owned(),
            "no newline at all".to_owned(),
            line.repeat(3),
            line.repeat(per_block + 5),
            format!("{}unfinished", line.repeat(per_block * 2)),
            "x".repeat(BLOCK - 1) + "\n",
            "x".repeat(BLOCK) + "\n",
            "\n".repeat(BLOCK + 1),
            format!("{}\n{}\n", "y".repeat(BLOCK * 2), "z".repeat(10)),
            // Lines longer than the first read allows for.
            format!("{}\n", "w".repeat(300)).repeat(400),
            format!("{}\n", "w".repeat(8 * 1024)).repeat(3),
        ] {
            for lines in [
                0,
                1,
                2,
                3,
                per_block as u64 - 1,
                per_block as u64,
                per_block as u64 + 7,
                100,
                250,
            ] {
                assert_eq!(
                    tail_through_last_block(content.as_bytes(), lines),
                    naive(content.as_bytes(), lines),
                    "{} bytes, {lines} lines",
                    content.len()
                );
            }
        }
    }

    #[test]
    fn never_reads_the_whole_file() {
        let content = "a log line\n".repeat(200_000);
        let mut reader = Counting {
            inner: Cursor::new(content.as_bytes()),
            read: 0,
        };
        let start = tail_start(&mut reader, content.len() as u64, 3).unwrap();
        assert_eq!(
            &content.as_bytes()[usize::try_from(start).unwrap()..],
            "a log line\n".repeat(3).as_bytes()
        );
        assert!(reader.read <= BLOCK, "read {} bytes", reader.read);
    }

    #[test]
    fn print_whole_and_tail_of_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        fs::write(&path, "one\ntwo\nthree").unwrap();
        let mut out = Vec::new();
        print(&File::open(&path).unwrap(), None, &mut out).unwrap();
        assert_eq!(out, b"one\ntwo\nthree");
        let mut out = Vec::new();
        print(&File::open(&path).unwrap(), Some(2), &mut out).unwrap();
        assert_eq!(out, b"two\nthree");
    }

    /// A writer (or note log) the test can read while a follower holds it.
    #[derive(Clone, Default)]
    struct Shared(Rc<RefCell<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.borrow_mut().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl Shared {
        fn take(&self) -> String {
            String::from_utf8(std::mem::take(&mut *self.0.borrow_mut())).unwrap()
        }
    }

    type Notes = Rc<RefCell<Vec<Change>>>;

    fn follower(path: &Path) -> (Follower<Shared, impl FnMut(Notice<'_>)>, Shared, Notes) {
        let out = Shared::default();
        let notes: Notes = Rc::default();
        let sink = notes.clone();
        let f = Follower::new(path.to_path_buf(), out.clone(), move |n: Notice<'_>| {
            sink.borrow_mut().push(n.change);
        });
        (f, out, notes)
    }

    fn append(path: &Path, text: &str) {
        let mut file = fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(path)
            .unwrap();
        file.write_all(text.as_bytes()).unwrap();
    }

    #[test]
    fn follow_prints_the_tail_then_appends() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        fs::write(&path, "1\n2\n3\n").unwrap();
        let (mut f, out, notes) = follower(&path);
        f.start(2).unwrap();
        assert_eq!(out.take(), "2\n3\n");
        f.check().unwrap();
        assert_eq!(out.take(), "");
        append(&path, "4\npartial");
        f.check().unwrap();
        assert_eq!(out.take(), "4\npartial");
        append(&path, " end\n");
        f.check().unwrap();
        assert_eq!(out.take(), " end\n");
        assert!(notes.borrow().is_empty());
    }

    #[test]
    fn follow_from_zero_lines_prints_only_appends() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        fs::write(&path, "1\n2\n").unwrap();
        let (mut f, out, _) = follower(&path);
        f.start(0).unwrap();
        assert_eq!(out.take(), "");
        append(&path, "3\n");
        f.check().unwrap();
        assert_eq!(out.take(), "3\n");
    }

    #[test]
    fn follow_starts_over_after_truncation() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        fs::write(&path, "a long first line\n").unwrap();
        let (mut f, out, notes) = follower(&path);
        f.start(10).unwrap();
        out.take();
        fs::write(&path, "new\n").unwrap();
        f.check().unwrap();
        assert_eq!(out.take(), "new\n");
        assert_eq!(*notes.borrow(), [Change::Truncated]);
    }

    #[test]
    fn follow_reads_the_rotated_file_out_then_the_new_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        fs::write(&path, "old 1\n").unwrap();
        let (mut f, out, notes) = follower(&path);
        f.start(10).unwrap();
        assert_eq!(out.take(), "old 1\n");
        let rotated = dir.path().join("log.1");
        fs::rename(&path, &rotated).unwrap();
        append(&rotated, "old 2\n");
        f.check().unwrap();
        assert_eq!(out.take(), "old 2\n");
        append(&rotated, "old 3\n");
        fs::write(&path, "new 1\n").unwrap();
        f.check().unwrap();
        assert_eq!(out.take(), "old 3\nnew 1\n");
        append(&path, "new 2\n");
        append(&rotated, "lost\n");
        f.check().unwrap();
        assert_eq!(out.take(), "new 2\n");
        assert_eq!(*notes.borrow(), [Change::Gone, Change::Replaced]);
    }

    #[test]
    fn follow_waits_for_a_missing_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("logs/log");
        let (mut f, out, notes) = follower(&path);
        f.start(10).unwrap();
        f.check().unwrap();
        assert_eq!(out.take(), "");
        fs::create_dir(dir.path().join("logs")).unwrap();
        fs::write(&path, "hello\n").unwrap();
        f.check().unwrap();
        assert_eq!(out.take(), "hello\n");
        assert_eq!(*notes.borrow(), [Change::Missing, Change::Appeared]);
    }

    #[test]
    fn follow_stops_on_a_write_error() {
        struct Closed;
        impl Write for Closed {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(io::ErrorKind::BrokenPipe.into())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        fs::write(&path, "x\n").unwrap();
        let err = Follower::new(path, Closed, |_: Notice<'_>| {})
            .run(10)
            .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::BrokenPipe);
    }

    #[test]
    fn notices_name_the_path() {
        let notice = Notice {
            path: Path::new("/z/logs/ext-a.log"),
            change: Change::Truncated,
        };
        assert_eq!(notice.to_string(), "/z/logs/ext-a.log: file truncated");
    }
}
