//! Which files of a folder a command opens, seen through inotify: proof that a command
//! that should read one extension leaves the others' files alone.

use std::path::Path;

/// Which files in a folder are opened from now on (inotify), to prove a command leaves them
/// alone.
pub(crate) struct Opens {
    fd: std::os::fd::OwnedFd,
}

impl Opens {
    pub(crate) fn watch(dir: &Path) -> Opens {
        use rustix::fs::inotify;
        let fd =
            inotify::init(inotify::CreateFlags::NONBLOCK | inotify::CreateFlags::CLOEXEC).unwrap();
        inotify::add_watch(&fd, dir, inotify::WatchFlags::OPEN).unwrap();
        Opens { fd }
    }

    /// The names of the files opened since the last call.
    pub(crate) fn seen(&self) -> Vec<String> {
        use std::mem::MaybeUninit;
        let mut buf = [MaybeUninit::<u8>::uninit(); 4096];
        let mut reader = rustix::fs::inotify::Reader::new(&self.fd, &mut buf);
        let mut names = Vec::new();
        while let Ok(event) = reader.next() {
            let name = event.file_name().map(|n| n.to_string_lossy().into_owned());
            names.push(name.unwrap_or_else(|| ".".to_owned()));
        }
        names
    }
}
