//! The state folder `<base>/.ext-store`: its name, opening it (and its subfolders) without
//! following links, the error that says what is wrong with one, bounded reads of the files
//! kept there, and the identity a tree keeps when renamed. Every other part of the store
//! builds on this; it depends on none of them.

use std::fs;
use std::io;
use std::path::Path;

use anyhow::{Result, anyhow};

use crate::catalog::paths::ScopeDirs;
use crate::fsx::{Folder, Identity, OpenError, Wrong};
use crate::output::printable;

/// The state folder's name inside a scope's base.
pub(super) const STATE: &str = ".ext-store";

/// Longest record or journal entry read (they are a few hundred bytes).
pub(super) const MAX_STATE_FILE: u64 = 1 << 20;

/// Longest file list read (about 300 000 entries).
pub(crate) const MAX_FILE_LIST: u64 = 64 << 20;

/// `<base>/.ext-store`, never through a link; `None` when it is missing and not created.
/// Without `create` (read-only commands), a folder that cannot be opened for another
/// reason than being the wrong kind of file counts as missing.
pub(crate) fn open_state(dirs: &ScopeDirs, create: bool) -> Result<Option<Folder>> {
    let base = match Folder::open_path(&dirs.base) {
        Ok(base) => base,
        Err(_) if !create => return Ok(None),
        Err(e) => return Err(anyhow!("cannot open {}: {e}", dirs.base.display())),
    };
    let state =
        lenient(base.sub(STATE, create), create).map_err(|e| state_error(&dirs.state(), e))?;
    if create && let Some(state) = &state {
        ignore_all(state);
    }
    Ok(state)
}

/// The state folder's `.gitignore`: everything in it is this machine's (the lock, records,
/// file lists, backups), never part of a project's repository.
pub(super) const GITIGNORE: &str = ".gitignore";

/// Writes `.gitignore` of `*` into the state folder when it has none (never through a link:
/// an entry of that name, whatever it is, is left alone). Best effort: the store works
/// without it, and a read-only folder fails the command soon after anyway.
fn ignore_all(state: &Folder) {
    if matches!(state.stat(GITIGNORE), Ok(None)) {
        let _ = state.write_new(GITIGNORE, b"*\n", 0o644);
    }
}

/// Without `create`, an I/O error opening a folder makes it count as missing.
pub(crate) fn lenient<T>(
    opened: Result<Option<T>, OpenError>,
    create: bool,
) -> Result<Option<T>, OpenError> {
    match opened {
        Err(OpenError::Io(_)) if !create => Ok(None),
        other => other,
    }
}

/// A state folder `path` that could not be opened: what is wrong, and the fix.
pub(crate) fn state_error(path: &Path, e: OpenError) -> anyhow::Error {
    let shown = printable(&path.display().to_string());
    match e {
        OpenError::Wrong(Wrong::Link) => anyhow!(
            "{shown} is a symbolic link; zot ext never follows links in its state folder: remove it; zot ext recreates it (nothing was changed)"
        ),
        OpenError::Wrong(Wrong::NotFolder(kind)) => anyhow!(
            "{shown} is {kind}, not a folder; zot ext keeps its state there: remove it; zot ext recreates it (nothing was changed)"
        ),
        OpenError::Io(e) if e.kind() == io::ErrorKind::PermissionDenied => {
            anyhow!("cannot open {shown}: permission denied; zot ext needs write access there")
        }
        OpenError::Io(e) => anyhow!("cannot open {shown}: {e}"),
    }
}
/// Reads `<state>/<sub>/<name>` without following links and at most [`MAX_STATE_FILE`]
/// bytes; `None` when it is missing or cannot be read.
pub(super) fn read_state_file(dirs: &ScopeDirs, sub: &str, name: &str) -> Option<Vec<u8>> {
    read_state_file_up_to(dirs, sub, name, MAX_STATE_FILE)
}

/// [`read_state_file`] with another limit.
pub(super) fn read_state_file_up_to(
    dirs: &ScopeDirs,
    sub: &str,
    name: &str,
    limit: u64,
) -> Option<Vec<u8>> {
    try_read_state_file_up_to(dirs, sub, name, limit).ok()?
}

/// [`read_state_file`], saying why a file that is there cannot be read (a link, a named
/// pipe, a folder, too large); `Ok(None)` when it, or its folder, is missing.
pub(super) fn try_read_state_file(
    dirs: &ScopeDirs,
    sub: &str,
    name: &str,
) -> std::io::Result<Option<Vec<u8>>> {
    try_read_state_file_up_to(dirs, sub, name, MAX_STATE_FILE)
}

fn try_read_state_file_up_to(
    dirs: &ScopeDirs,
    sub: &str,
    name: &str,
    limit: u64,
) -> std::io::Result<Option<Vec<u8>>> {
    let Some(state) = open_state(dirs, false).ok().flatten() else {
        return Ok(None);
    };
    let Some(folder) = state.sub(sub, false).ok().flatten() else {
        return Ok(None);
    };
    match folder.read_file(name, limit) {
        Err(e) if e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) => Err(
            std::io::Error::other("is a symbolic link, not a regular file"),
        ),
        other => other,
    }
}

pub(super) fn identity_of(meta: &fs::Metadata) -> Identity {
    use std::os::unix::fs::MetadataExt;
    Identity {
        dev: meta.dev(),
        ino: meta.ino(),
    }
}
