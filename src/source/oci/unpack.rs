//! An extension's layer (a gzip-compressed tar) unpacked into a new folder, with the rules a
//! copy from disk follows and the stricter ones a stranger's archive needs: only files,
//! folders and symbolic links (a hard link, a device, a named pipe is refused), relative
//! paths without `..`, each path once, nothing under a link (links are never followed; where
//! they lead is judged on the unpacked tree, [`super::stage`]), and at most [`MAX_ENTRIES`] entries and [`MAX_BYTES`] bytes unpacked. A refusal
//! leaves the folder to the staging that owns it, which deletes it: nothing is placed.

use std::collections::HashMap;
use std::fs::{self, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::output::printable;

/// The most entries a layer may hold.
pub(crate) const MAX_ENTRIES: usize = 500_000;
/// The most bytes a layer may unpack to.
pub(crate) const MAX_BYTES: u64 = 8 << 30;

/// What an unpacked path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Dir,
    File,
    Link,
}

/// Unpacks the gzip-compressed tar `layer` into `dest` (an empty folder); `shown` names the
/// artifact in messages. The layer is read and inflated on a second thread while this one
/// creates the files, as `tar -xz` runs gzip beside tar; `layer` is read about as far as
/// the archive needs (its caller reads the rest to check the whole).
pub(crate) fn unpack(layer: impl Read + Send, dest: &Path, shown: &str) -> Result<()> {
    std::thread::scope(|s| {
        let (chunks, inflated) = std::sync::mpsc::sync_channel(INFLATED_AHEAD);
        let inflating = std::thread::Builder::new()
            .name("inflate".into())
            .spawn_scoped(s, move || inflate(layer, &chunks))
            .context("cannot start the thread that inflates the layer")?;
        let unpacked = unpack_tar(Inflated::new(inflated), dest, shown);
        // The receiver is gone: the inflating thread stops at its next chunk. One that
        // panicked dropped its sender, which reads as the layer's end: never a success.
        if inflating.join().is_err() {
            bail!("{shown}: inflating the layer failed; nothing was installed");
        }
        unpacked
    })
}

/// How many inflated chunks may wait for the unpacking thread.
const INFLATED_AHEAD: usize = 16;
/// The size of one inflated chunk.
const CHUNK: usize = 128 << 10;

/// Inflates `layer` into `chunks` until its end, an error (sent on), or a receiver that
/// stopped listening.
fn inflate(layer: impl Read, chunks: &std::sync::mpsc::SyncSender<io::Result<Vec<u8>>>) {
    let mut gz = flate2::read::GzDecoder::new(layer);
    loop {
        let mut chunk = vec![0; CHUNK];
        let read = match gz.read(&mut chunk) {
            Ok(0) => return,
            Ok(n) => {
                chunk.truncate(n);
                Ok(chunk)
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => Err(e),
        };
        let failed = read.is_err();
        if chunks.send(read).is_err() || failed {
            return;
        }
    }
}

/// The inflated layer as the inflating thread sends it.
struct Inflated {
    chunks: std::sync::mpsc::Receiver<io::Result<Vec<u8>>>,
    chunk: Vec<u8>,
    at: usize,
}

impl Inflated {
    fn new(chunks: std::sync::mpsc::Receiver<io::Result<Vec<u8>>>) -> Inflated {
        Inflated {
            chunks,
            chunk: Vec::new(),
            at: 0,
        }
    }
}

impl Read for Inflated {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.at == self.chunk.len() {
            match self.chunks.recv() {
                // The sender is gone: the end of the layer.
                Err(_) => return Ok(0),
                Ok(chunk) => {
                    self.chunk = chunk?;
                    self.at = 0;
                }
            }
        }
        let n = buf.len().min(self.chunk.len() - self.at);
        buf[..n].copy_from_slice(&self.chunk[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// Unpacks the tar `inflated` into `dest`.
fn unpack_tar(inflated: Inflated, dest: &Path, shown: &str) -> Result<()> {
    let mut archive = tar::Archive::new(inflated);
    let mut unpacker = Unpacker {
        dest,
        shown,
        seen: HashMap::new(),
        dir_modes: Vec::new(),
        unpacked: 0,
    };
    let entries = archive
        .entries()
        .with_context(|| format!("{shown}: the layer is not a tar archive"))?;
    for (count, entry) in entries.enumerate() {
        let mut entry = entry.with_context(|| {
            format!("{shown}: the layer is not a valid gzip-compressed tar archive")
        })?;
        if count >= MAX_ENTRIES {
            bail!(
                "{shown}: the layer holds more than {MAX_ENTRIES} entries; nothing was installed"
            );
        }
        unpacker.entry(&mut entry)?;
    }
    // Folders get their modes last, so a read-only one was still writable while filled.
    for (dir, mode) in unpacker.dir_modes.iter().rev() {
        fs::set_permissions(dir, fs::Permissions::from_mode(*mode))?;
    }
    Ok(())
}

/// One unpacking: where, what is there so far, and how much was written.
struct Unpacker<'a> {
    dest: &'a Path,
    shown: &'a str,
    seen: HashMap<PathBuf, Kind>,
    dir_modes: Vec<(PathBuf, u32)>,
    unpacked: u64,
}

impl Unpacker<'_> {
    fn refuse(&self, path: &Path, why: &str) -> anyhow::Error {
        anyhow::anyhow!(
            "{}: the layer's entry {} {why}; nothing was installed",
            self.shown,
            printable(&path.display().to_string())
        )
    }

    fn entry<R: Read>(&mut self, entry: &mut tar::Entry<R>) -> Result<()> {
        let shown = self.shown;
        let raw = entry
            .path()
            .map_err(|_| anyhow::anyhow!("{shown}: an entry's name is not valid"))?
            .into_owned();
        let Some(path) = relative(&raw) else {
            return Err(self.refuse(&raw, "is an absolute path or climbs out with `..`"));
        };
        if path.as_os_str().is_empty() {
            return Ok(());
        }
        let kind = match entry.header().entry_type() {
            tar::EntryType::Regular | tar::EntryType::Continuous => Kind::File,
            tar::EntryType::Directory => Kind::Dir,
            tar::EntryType::Symlink => Kind::Link,
            tar::EntryType::Link => {
                return Err(self.refuse(&path, "is a hard link, which zot ext does not install"));
            }
            other => {
                let what = format!("is {}, not a file, folder or link", describe(other));
                return Err(self.refuse(&path, &what));
            }
        };
        if self.seen.contains_key(&path) {
            return Err(self.refuse(&path, "is in the layer twice"));
        }
        make_parents(self.dest, &path, &mut self.seen).map_err(|why| self.refuse(&path, &why))?;
        let full = self.dest.join(&path);
        let mode = entry.header().mode().unwrap_or(0o644) & 0o777;
        match kind {
            Kind::Dir => {
                fs::create_dir(&full)
                    .with_context(|| format!("cannot create {}", full.display()))?;
                self.dir_modes.push((full, mode | 0o700));
            }
            Kind::File => self.file(entry, &path, &full, mode)?,
            Kind::Link => self.link(entry, &path, &full)?,
        }
        self.seen.insert(path, kind);
        Ok(())
    }

    fn file<R: Read>(
        &mut self,
        entry: &mut tar::Entry<R>,
        path: &Path,
        full: &Path,
        mode: u32,
    ) -> Result<()> {
        let shown = self.shown;
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW)
            .mode(0o600)
            .open(full)
            .with_context(|| format!("cannot create {}", full.display()))?;
        let left = MAX_BYTES - self.unpacked;
        let copied = io::copy(&mut entry.take(left + 1), &mut file).with_context(|| {
            format!(
                "{shown}: cannot unpack {}",
                printable(&path.display().to_string())
            )
        })?;
        self.unpacked += copied;
        if self.unpacked > MAX_BYTES {
            bail!(
                "{shown}: the layer unpacks to more than {MAX_BYTES} bytes; nothing was installed"
            );
        }
        file.set_permissions(fs::Permissions::from_mode(mode))?;
        Ok(())
    }

    fn link<R: Read>(&self, entry: &tar::Entry<R>, path: &Path, full: &Path) -> Result<()> {
        // Where it leads is judged on the whole tree once it is unpacked (the kind's stage):
        // a link is never followed here.
        let target = entry
            .link_name()
            .ok()
            .flatten()
            .ok_or_else(|| self.refuse(path, "is a link without a target"))?
            .into_owned();
        std::os::unix::fs::symlink(&target, full)
            .with_context(|| format!("cannot create {}", full.display()))
    }
}

/// `path` without `.` components, when it is relative and does not climb with `..`.
fn relative(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::Normal(part) => out.push(part),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(out)
}

/// Creates the folders above `path` that no entry made yet; `Err` when one of them is a
/// file or a link in the layer (nothing is ever written under a link).
fn make_parents(dest: &Path, path: &Path, seen: &mut HashMap<PathBuf, Kind>) -> Result<(), String> {
    let mut above = PathBuf::new();
    let parents: Vec<&std::ffi::OsStr> = path
        .parent()
        .map(|p| p.iter().collect())
        .unwrap_or_default();
    for part in parents {
        above.push(part);
        match seen.get(&above) {
            Some(Kind::Dir) => {}
            Some(Kind::File) => return Err(format!("is under {}, a file", above.display())),
            Some(Kind::Link) => return Err(format!("is under {}, a link", above.display())),
            None => {
                fs::create_dir(dest.join(&above)).map_err(|e| format!("cannot be made: {e}"))?;
                seen.insert(above.clone(), Kind::Dir);
            }
        }
    }
    Ok(())
}

fn describe(kind: tar::EntryType) -> &'static str {
    match kind {
        tar::EntryType::Char => "a character device",
        tar::EntryType::Block => "a block device",
        tar::EntryType::Fifo => "a named pipe",
        _ => "an entry of another type",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layer(build: impl FnOnce(&mut tar::Builder<Vec<u8>>)) -> Vec<u8> {
        let mut builder = tar::Builder::new(Vec::new());
        build(&mut builder);
        let tar = builder.into_inner().unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        io::Write::write_all(&mut gz, &tar).unwrap();
        gz.finish().unwrap()
    }

    fn header(kind: tar::EntryType, size: u64) -> tar::Header {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(kind);
        h.set_size(size);
        h.set_mode(0o755);
        h
    }

    fn file(b: &mut tar::Builder<Vec<u8>>, path: &str, body: &[u8]) {
        let mut h = header(tar::EntryType::Regular, body.len() as u64);
        b.append_data(&mut h, path, body).unwrap();
    }

    fn unpacked(bytes: &[u8]) -> (tempfile::TempDir, Result<()>) {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("x");
        fs::create_dir(&dest).unwrap();
        let done = unpack(bytes, &dest, "oci://r/x:1");
        (dir, done)
    }

    /// More than the inflated chunks that may wait, so the inflating thread waits for the
    /// unpacking one, and files that span chunks.
    #[test]
    fn a_layer_larger_than_the_chunks_in_flight_unpacks_whole() {
        let big: Vec<u8> = (0..3 * INFLATED_AHEAD * CHUNK / 2)
            .map(|i| (i * 7 % 251) as u8)
            .collect();
        let bytes = layer(|b| {
            for n in 0..3 {
                file(b, &format!("part{n}"), &big);
            }
            file(b, "extension.json", b"{}");
        });
        let (dir, done) = unpacked(&bytes);
        done.unwrap();
        for n in 0..3 {
            assert!(fs::read(dir.path().join(format!("x/part{n}"))).unwrap() == big);
        }
        assert_eq!(
            fs::read(dir.path().join("x/extension.json")).unwrap(),
            b"{}"
        );
    }

    /// A layer whose reading fails partway (a registry refused by its digest, a cut
    /// connection) fails the unpack with its reason: never taken for the archive's end.
    #[test]
    fn a_read_error_partway_is_the_unpacks_error() {
        let big: Vec<u8> = (0..4 * CHUNK).map(|i| (i * 13 % 251) as u8).collect();
        let bytes = layer(|b| {
            file(b, "extension.json", b"{}");
            file(b, "big", &big);
            file(b, "after", b"x");
        });
        let failing = io::Read::chain(&bytes[..bytes.len() / 2], Failing);
        let dir = tempfile::tempdir().unwrap();
        let err = unpack(failing, dir.path(), "oci://r/x:1").unwrap_err();
        assert!(
            format!("{err:#}").contains("the connection dropped"),
            "{err:#}"
        );
        assert!(!dir.path().join("after").exists());
    }

    /// A reader that panics: the inflating thread ends without sending an error.
    struct Panicking;

    impl Read for Panicking {
        fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
            panic!("the reader broke");
        }
    }

    #[test]
    fn an_inflating_thread_that_panicked_is_never_the_layers_end() {
        let dir = tempfile::tempdir().unwrap();
        let err = unpack(Panicking, dir.path(), "oci://r/x:1").unwrap_err();
        assert!(
            format!("{err:#}").contains("inflating the layer failed"),
            "{err:#}"
        );
    }

    struct Failing;

    impl Read for Failing {
        fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
            Err(io::Error::other("the connection dropped"))
        }
    }

    #[test]
    fn files_folders_and_inner_links_are_unpacked() {
        let bytes = layer(|b| {
            file(b, "extension.json", b"{}");
            file(b, "bin/run", b"#!/bin/sh\n");
            let mut h = header(tar::EntryType::Symlink, 0);
            b.append_link(&mut h, "bin/again", "../extension.json")
                .unwrap();
        });
        let (dir, done) = unpacked(&bytes);
        done.unwrap();
        let x = dir.path().join("x");
        assert_eq!(fs::read(x.join("extension.json")).unwrap(), b"{}");
        assert_eq!(
            fs::metadata(x.join("bin/run"))
                .unwrap()
                .permissions()
                .mode()
                & 0o777,
            0o755
        );
        assert_eq!(
            fs::read_link(x.join("bin/again")).unwrap(),
            Path::new("../extension.json")
        );
    }

    #[test]
    fn hostile_entries_are_refused() {
        let cases: Vec<(&str, Vec<u8>)> = vec![
            (
                "climbs out",
                layer(|b| {
                    let mut h = header(tar::EntryType::Regular, 1);
                    h.as_gnu_mut().unwrap().name[..7].copy_from_slice(b"../evil");
                    h.set_cksum();
                    b.append(&h, &b"x"[..]).unwrap();
                }),
            ),
            (
                "absolute",
                layer(|b| {
                    let mut h = header(tar::EntryType::Regular, 1);
                    h.as_gnu_mut().unwrap().name[..9].copy_from_slice(b"/etc/evil");
                    h.set_cksum();
                    b.append(&h, &b"x"[..]).unwrap();
                }),
            ),
            (
                "a character device",
                layer(|b| {
                    let mut h = header(tar::EntryType::Char, 0);
                    b.append_data(&mut h, "dev", &[][..]).unwrap();
                }),
            ),
            (
                "a named pipe",
                layer(|b| {
                    let mut h = header(tar::EntryType::Fifo, 0);
                    b.append_data(&mut h, "fifo", &[][..]).unwrap();
                }),
            ),
            (
                "hard link",
                layer(|b| {
                    file(b, "a", b"x");
                    let mut h = header(tar::EntryType::Link, 0);
                    b.append_link(&mut h, "b", "a").unwrap();
                }),
            ),
            (
                "a link",
                layer(|b| {
                    let mut h = header(tar::EntryType::Symlink, 0);
                    b.append_link(&mut h, "d", ".").unwrap();
                    file(b, "d/x", b"x");
                }),
            ),
            (
                "twice",
                layer(|b| {
                    file(b, "a", b"x");
                    file(b, "a", b"y");
                }),
            ),
        ];
        for (why, bytes) in cases {
            let (dir, done) = unpacked(&bytes);
            let message = done.unwrap_err().to_string();
            assert!(message.contains(why), "{why}: {message}");
            assert!(!dir.path().join("evil").exists());
        }
    }
}
