//! Opening and reading files zot does not control (manifests, logs, the first line of an
//! extension's program): opened without blocking, checked to be regular files before
//! anything is read, and read only up to a limit. A named pipe, socket or device in their
//! place is reported as such instead of hanging zot or filling its memory.

use std::fmt;
use std::fs::{self, File, Metadata};
use std::io::{self, Read};
use std::os::fd::BorrowedFd;
use std::path::Path;

/// Why a file was not read.
#[derive(Debug)]
pub(crate) enum ReadError {
    /// Nothing at the path (or a symbolic link to nothing).
    Missing,
    /// A directory where a file was expected.
    Directory,
    /// A named pipe, socket or device; the text names which ("a named pipe").
    Special(&'static str),
    /// A regular file larger than the limit (`size` is how large it was seen to be).
    TooLarge { size: u64, limit: u64 },
    /// Any other failure to open or read (permissions, I/O errors, link loops).
    Io(io::Error),
}

impl fmt::Display for ReadError {
    /// A phrase to follow the file's path: "is a named pipe, not a file".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::Missing => f.write_str("does not exist"),
            ReadError::Directory => f.write_str("is a directory, not a file"),
            ReadError::Special(kind) => write!(f, "is {kind}, not a file"),
            ReadError::TooLarge { size, limit } => write!(
                f,
                "is {} ({size} bytes), more than the {} zot reads",
                human_size(*size),
                human_size(*limit)
            ),
            ReadError::Io(e) => write!(f, "cannot be read: {e}"),
        }
    }
}

impl std::error::Error for ReadError {}

impl From<io::Error> for ReadError {
    fn from(e: io::Error) -> ReadError {
        match e.kind() {
            io::ErrorKind::NotFound => ReadError::Missing,
            _ => ReadError::Io(e),
        }
    }
}

/// A size as people read it: bytes below 1 KiB, else KiB, MiB or GiB with one decimal
/// (none when whole).
pub(crate) fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 3] = ["KiB", "MiB", "GiB"];
    if bytes < 1024 {
        return format!("{bytes} bytes");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    let shown = format!("{value:.1}");
    let shown = shown.strip_suffix(".0").unwrap_or(&shown);
    format!("{shown} {}", UNITS[unit])
}

/// What kind of non-regular file `meta` describes; `Ok` for a regular file.
fn check_kind(meta: &Metadata) -> Result<(), ReadError> {
    let kind = meta.file_type();
    if kind.is_file() {
        return Ok(());
    }
    if kind.is_dir() {
        return Err(ReadError::Directory);
    }
    Err(ReadError::Special(kind_name(kind)))
}

/// What `kind` is, as a message says it: "a file", "a folder", "a named pipe", ...
pub(crate) fn kind_name(kind: fs::FileType) -> &'static str {
    if kind.is_file() {
        "a file"
    } else if kind.is_dir() {
        "a folder"
    } else if kind.is_symlink() {
        "a symbolic link"
    } else {
        special_kind(kind)
    }
}

fn special_kind(kind: fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_fifo() {
        "a named pipe"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else {
        "a special file"
    }
}

/// Opens the regular file at `path` (following symbolic links) for reading, without ever
/// waiting: the kind is checked before opening, so a socket or device is not even opened,
/// and the open is non-blocking, so a named pipe put there in between cannot stall it; the
/// opened handle is checked again.
pub(crate) fn open(path: &Path) -> Result<File, ReadError> {
    check_kind(&fs::metadata(path)?)?;
    let file = open_nonblocking(path)?;
    check_kind(&file.metadata()?)?;
    Ok(file)
}

fn open_nonblocking(path: &Path) -> io::Result<File> {
    use rustix::fs::OFlags;
    use std::os::unix::fs::OpenOptionsExt;
    fs::OpenOptions::new()
        .read(true)
        .custom_flags((OFlags::NONBLOCK | OFlags::NOCTTY).bits().cast_signed())
        .open(path)
}

/// [`read`] of `path` relative to the folder `dir` is open as, into `buf` (cleared first, so
/// one buffer serves many files): the kind is checked before the one open and again on the
/// handle, and a file read to the size it was seen to have takes one `read`.
pub(crate) fn read_in(
    dir: BorrowedFd<'_>,
    path: &Path,
    limit: u64,
    buf: &mut Vec<u8>,
) -> Result<(), ReadError> {
    use rustix::fs::{AtFlags, Mode, OFlags};
    let seen = rustix::fs::statat(dir, path, AtFlags::empty()).map_err(io::Error::from)?;
    check_mode(seen.st_mode)?;
    let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
    let file =
        File::from(rustix::fs::openat(dir, path, flags, Mode::empty()).map_err(io::Error::from)?);
    let meta = file.metadata()?;
    check_kind(&meta)?;
    let size = meta.len();
    if size > limit {
        return Err(ReadError::TooLarge { size, limit });
    }
    buf.clear();
    buf.resize(usize::try_from(size + 1).unwrap_or(usize::MAX), 0);
    let n = (&file).read(buf)?;
    buf.truncate(n);
    // Shorter or longer than seen (it is being written): read on to its end, up to the limit.
    if n as u64 != size {
        (&file).take(limit + 1 - n as u64).read_to_end(buf)?;
    }
    if buf.len() as u64 > limit {
        return Err(ReadError::TooLarge {
            size: buf.len() as u64,
            limit,
        });
    }
    Ok(())
}

/// [`check_kind`] for a mode as `stat` gives it.
fn check_mode(mode: u32) -> Result<(), ReadError> {
    use rustix::fs::FileType;
    match FileType::from_raw_mode(mode) {
        FileType::RegularFile => Ok(()),
        FileType::Directory => Err(ReadError::Directory),
        FileType::Fifo => Err(ReadError::Special("a named pipe")),
        FileType::Socket => Err(ReadError::Special("a socket")),
        FileType::CharacterDevice => Err(ReadError::Special("a character device")),
        FileType::BlockDevice => Err(ReadError::Special("a block device")),
        _ => Err(ReadError::Special("a special file")),
    }
}

/// The whole content of the regular file at `path`, which must be at most `limit` bytes
/// (a file that grows past it while being read is refused too).
pub(crate) fn read(path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    let file = open(path)?;
    let size = file.metadata()?.len();
    if size > limit {
        return Err(ReadError::TooLarge { size, limit });
    }
    let mut bytes = Vec::with_capacity(size as usize);
    file.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(ReadError::TooLarge {
            size: bytes.len() as u64,
            limit,
        });
    }
    Ok(bytes)
}

/// Up to `buf.len()` bytes from the start of the regular file at `path`.
pub(crate) fn read_head(path: &Path, buf: &mut [u8]) -> Result<usize, ReadError> {
    let file = open(path)?;
    let mut filled = 0;
    let mut reader = file.take(buf.len() as u64);
    loop {
        match reader.read(&mut buf[filled..]) {
            Ok(0) => return Ok(filled),
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn regular_files_are_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        fs::write(&path, b"hello").unwrap();
        assert_eq!(read(&path, 5).unwrap(), b"hello");
        let mut head = [0u8; 3];
        assert_eq!(read_head(&path, &mut head).unwrap(), 3);
        assert_eq!(&head, b"hel");
    }

    #[test]
    fn a_file_over_the_limit_says_its_size() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        fs::write(&path, vec![b' '; 3 << 20]).unwrap();
        let err = read(&path, 1 << 20).unwrap_err();
        assert_eq!(
            err.to_string(),
            "is 3 MiB (3145728 bytes), more than the 1 MiB zot reads"
        );
    }

    #[test]
    fn missing_and_directories_are_named() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(
            read(&dir.path().join("nope"), 10),
            Err(ReadError::Missing)
        ));
        assert!(matches!(read(dir.path(), 10), Err(ReadError::Directory)));
    }

    fn mkfifo(path: &Path) {
        let mode = rustix::fs::Mode::from_raw_mode(0o644);
        rustix::fs::mkfifoat(rustix::fs::CWD, path, mode).unwrap();
    }

    #[test]
    fn a_named_pipe_is_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fifo");
        mkfifo(&path);
        let started = Instant::now();
        let err = read(&path, 10).unwrap_err();
        assert_eq!(err.to_string(), "is a named pipe, not a file");
        assert!(started.elapsed() < Duration::from_secs(2));
    }

    #[test]
    fn devices_and_links_to_them_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("zero");
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        for path in [Path::new("/dev/zero"), &link] {
            let err = read(path, 10).unwrap_err();
            assert_eq!(err.to_string(), "is a character device, not a file");
        }
    }

    #[test]
    fn a_socket_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sock");
        let _listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        let err = read(&path, 10).unwrap_err();
        assert_eq!(err.to_string(), "is a socket, not a file");
    }

    #[test]
    fn sizes_read_as_people_say_them() {
        assert_eq!(human_size(10), "10 bytes");
        assert_eq!(human_size(1536), "1.5 KiB");
        assert_eq!(human_size(2 << 20), "2 MiB");
        assert_eq!(human_size(5 << 30), "5 GiB");
    }
}
