//! Per-install file lists: what an install or update placed in an extension folder, kept
//! next to its install record (`<base>/.ext-store/files/<name>.json`) and written with it
//! through the store's journal ([`crate::store::Store::publish_all`]), so that a list always
//! describes the tree in place. Also the tree hash, and the classification of an installed
//! copy's files against its list (what the install placed, what the user edited, what the
//! extension or the user created).
//!
//! **Entries.** Every entry under the root, never the root itself: its path relative to the
//! root with `/` between names, its type (`file`, `dir`, `link`), its mode (permission
//! bits), and for files the size and SHA-256 of the content, for links the target as
//! stored. Links are never followed (`lstat`, `readlink`, files opened with `O_NOFOLLOW`
//! and `O_NONBLOCK`); special files (pipes, sockets, devices) are refused. Files are hashed
//! as a stream (a fixed buffer), never read whole into memory.
//!
//! **Names that are not UTF-8.** Paths and link targets are byte strings. In the JSON file a
//! name that is valid UTF-8 is stored as `path` (`target`); any other is stored as
//! `path_hex` (`target_hex`): the lowercase hexadecimal of its bytes. Nothing is lost.
//!
//! **Order.** Entries are sorted by the bytes of their path, so the file is the same
//! whatever order the directories were read in.
//!
//! **Tree hash.** `sha256:` and the hexadecimal SHA-256 of the concatenation, in that order,
//! of one line per entry: `<path bytes> NUL <type> SP <x> SP <digest> LF`, where `<type>` is
//! `f`, `d` or `l`; `<x>` is `x` for a file with its owner-executable bit set, else `-`;
//! `<digest>` is the hexadecimal SHA-256 of a file's content or of a link's target bytes, and
//! `-` for a directory. A path never holds NUL, so the encoding is unambiguous. Like git,
//! only the executable bit of the mode counts: the other bits depend on the umask and the
//! file system of the machine that copied or cloned the tree, and would make the same tree
//! hash differently on two machines. Sizes are implied by the digests, and times are left
//! out (a copy or a clone does not keep them).
//!
//! **Prepared outputs.** What preparing made in the staged copy (`node_modules`, `.venv`, a
//! built program: [`crate::prepare`]) is listed too, under the list's `prepared` roots (a
//! top-level array of relative paths, left out when empty, so a list without it reads as
//! one with nothing prepared). Entries at or under a prepared root are checked like the rest
//! (`zot ext verify` names them apart) but left out of the tree hash: it covers what the
//! source placed, so the same source hashes the same whether or not, and on whichever
//! machine, it was prepared.

use std::borrow::Cow;
use std::ffi::OsStr;
use std::fs::{self, File};
use std::io::{self, Read};
use std::num::NonZero;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::thread;

use anyhow::{Context, Result, anyhow, bail};
use rustix::fs::OFlags;
use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::journal;
use super::state::{MAX_FILE_LIST, read_state_file_up_to};
use crate::catalog::paths::ScopeDirs;
use crate::output::printable;

/// The version of the file format.
const FORMAT: u32 = 1;

/// Entries from which [`FileList::drop_aside`] frees a list on a thread of its own, unwaited
/// (below, starting a thread costs more than it saves).
const LARGE_LIST: usize = 2000;

/// The type of an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EntryKind {
    File,
    Dir,
    Link,
}

/// One entry of a file list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Relative to the root, `/`-separated, as bytes.
    pub path: Vec<u8>,
    pub kind: EntryKind,
    /// Permission bits (`mode & 0o7777`).
    pub mode: u32,
    /// Size in bytes (files; 0 otherwise).
    pub size: u64,
    /// Hexadecimal SHA-256 of the content (files).
    pub sha256: Option<String>,
    /// The link's target as stored (links).
    pub target: Option<Vec<u8>>,
}

impl Entry {
    /// The path for messages (escaped, not UTF-8 bytes replaced).
    pub fn shown(&self) -> String {
        shown(&self.path)
    }

    /// The path as a relative filesystem path.
    pub fn rel(&self) -> &Path {
        Path::new(OsStr::from_bytes(&self.path))
    }

    /// Appends this entry's line of the tree hash to `line` (see the module documentation).
    fn hash_line(&self, line: &mut Vec<u8>) {
        line.extend_from_slice(&self.path);
        line.push(0);
        let x = if self.kind == EntryKind::File && self.mode & 0o100 != 0 {
            b'x'
        } else {
            b'-'
        };
        let kind = match self.kind {
            EntryKind::File => b'f',
            EntryKind::Dir => b'd',
            EntryKind::Link => b'l',
        };
        line.extend_from_slice(&[kind, b' ', x, b' ']);
        match self.kind {
            EntryKind::File => {
                line.extend_from_slice(self.sha256.as_deref().unwrap_or_default().as_bytes());
            }
            EntryKind::Dir => line.push(b'-'),
            EntryKind::Link => {
                let digest = Sha256::digest(self.target.as_deref().unwrap_or_default());
                push_hex(line, &digest);
            }
        }
        line.push(b'\n');
    }
}

/// A path given as bytes, escaped for one-line messages.
pub(crate) fn shown(path: &[u8]) -> String {
    printable(&String::from_utf8_lossy(path))
}

/// What an install placed: its entries sorted by path bytes.
#[derive(Debug, Clone, Default)]
pub struct FileList {
    entries: Vec<Entry>,
    /// The prepared roots (relative paths, sorted): what preparing made.
    prepared: Vec<String>,
    /// The tree hash, once computed: an install needs it for the stored list and for its
    /// report, and it is a SHA-256 over every entry. Cleared by every change of `entries`.
    tree_hash: OnceLock<String>,
}

impl PartialEq for FileList {
    fn eq(&self, other: &FileList) -> bool {
        self.entries == other.entries && self.prepared == other.prepared
    }
}

impl Eq for FileList {}

/// How an entry of an installed copy stands against its file list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Standing {
    /// Placed by the install and as it was placed.
    Unchanged,
    /// Placed by the install and changed since (content, link target or type).
    Edited,
    /// Not placed by the install: created by the extension or the user. For a folder, the
    /// whole folder (its contents are not listed separately).
    NotPlaced,
    /// Placed by the install and gone since.
    Missing,
    /// A pipe, socket or device (never placed: file lists refuse them).
    Special,
}

/// One entry of an installed copy, classified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classified {
    pub path: Vec<u8>,
    pub standing: Standing,
    /// The type on disk (for `Missing`, the type in the list; `File` for `Special`).
    pub kind: EntryKind,
    /// At or under a prepared root: made by preparing, not by the source.
    pub prepared: bool,
}

/// Mode bits no installed file or folder keeps: set-user-ID, set-group-ID and sticky, and
/// write permission for the group and for others (`cp` without `-p` drops the first two;
/// a git checkout has none of them). The executable bits stay.
pub(crate) const UNSAFE_MODE_BITS: u32 = 0o7022;

impl FileList {
    /// Clears [`UNSAFE_MODE_BITS`] from the tree at `root` that this lists (just staged,
    /// so its entries are what the list says) and from the list: every file and folder,
    /// and `root` itself. Links have no mode of their own and are left alone. Returns how
    /// many entries were changed.
    pub(crate) fn drop_unsafe_modes(&mut self, root: &Path) -> Result<usize> {
        use rustix::fs::{AtFlags, Mode};
        let top = rustix::fs::open(root, crate::fsx::DIR_FLAGS, Mode::empty())
            .with_context(|| format!("cannot open {}", root.display()))?;
        let fail = |path: &Path, e: rustix::io::Errno| {
            anyhow!(
                "cannot set the mode of {}: {e}",
                printable(&path.display().to_string())
            )
        };
        let mut changed = 0;
        let mode = rustix::fs::fstat(&top).map_err(|e| fail(root, e))?.st_mode & 0o7777;
        if mode & UNSAFE_MODE_BITS != 0 {
            rustix::fs::fchmod(&top, Mode::from_raw_mode(mode & !UNSAFE_MODE_BITS))
                .map_err(|e| fail(root, e))?;
            changed += 1;
        }
        for entry in &mut self.entries {
            if entry.kind == EntryKind::Link || entry.mode & UNSAFE_MODE_BITS == 0 {
                continue;
            }
            let path = OsStr::from_bytes(&entry.path);
            let mode = entry.mode & !UNSAFE_MODE_BITS;
            rustix::fs::chmodat(&top, path, Mode::from_raw_mode(mode), AtFlags::empty())
                .map_err(|e| fail(&root.join(path), e))?;
            entry.mode = mode;
            changed += 1;
        }
        if changed > 0 {
            self.tree_hash = OnceLock::new();
        }
        Ok(changed)
    }

    /// Lists the tree at `root` (a folder, not a link), hashing every file.
    pub fn scan(root: &Path) -> Result<FileList> {
        FileList::scan_at_most(root, usize::MAX)
    }

    /// [`FileList::scan`] of a tree that is an error past `most` entries (before any file is
    /// hashed).
    pub(crate) fn scan_at_most(root: &Path, most: usize) -> Result<FileList> {
        check_root(root)?;
        let mut entries = Vec::new();
        let mut todo = vec![Vec::new()];
        while let Some(dir) = todo.pop() {
            for (path, meta) in read_dir(root, &dir)? {
                if entries.len() == most {
                    bail!("{} holds more than {most} entries", root.display());
                }
                let entry = describe(root, path, &meta, false)?;
                if entry.kind == EntryKind::Dir {
                    todo.push(entry.path.clone());
                }
                entries.push(entry);
            }
        }
        entries.sort_by(|a, b| a.path.cmp(&b.path));
        hash_files(root, &mut entries)?;
        Ok(FileList::sorted(entries))
    }

    /// The list of `entries` (in any order), as a step that wrote the tree (a copy, a
    /// checkout) gathered them on its way: sorted here by path bytes.
    pub(crate) fn from_entries(mut entries: Vec<Entry>) -> FileList {
        entries.sort_by(|a, b| a.path.cmp(&b.path));
        FileList::sorted(entries)
    }

    /// The list of `entries`, already sorted by path bytes.
    fn sorted(entries: Vec<Entry>) -> FileList {
        FileList {
            entries,
            prepared: Vec::new(),
            tree_hash: OnceLock::new(),
        }
    }

    /// Lists `path` (relative to `root`) afresh after it was rewritten: its entry is
    /// replaced (or added in order), its content hashed again.
    pub fn relist(&mut self, root: &Path, path: &[u8]) -> Result<()> {
        let meta = fs::symlink_metadata(join(root, path))
            .with_context(|| format!("cannot read {}", shown(path)))?;
        let entry = describe(root, path.to_vec(), &meta, true)?;
        if entry.kind == EntryKind::Dir {
            bail!("{} became a folder; cannot list it alone", shown(path));
        }
        match self
            .entries
            .binary_search_by(|e| e.path.as_slice().cmp(path))
        {
            Ok(i) => self.entries[i] = entry,
            Err(i) => self.entries.insert(i, entry),
        }
        self.tree_hash.take();
        Ok(())
    }

    /// The file list of `extensions/<name>` in this scope; `None` when there is none (an
    /// install by hand or by an older zot) or it cannot be read. While a change is being
    /// made, the journal's list counts as soon as its tree is in place.
    pub fn load(dirs: &ScopeDirs, name: &str) -> Option<FileList> {
        // The entry's record is skipped, not parsed (the store writes only records that
        // parse); an entry without a list falls back to the committed one.
        let journalled = journal::journalled::<IgnoredAny, FileList>(dirs, name);
        if let Some(intent) = journalled {
            if let Some(list) = intent.files {
                return Some(list);
            }
            if intent.files_beside
                && let Some(list) = Self::beside(dirs, name, intent.tree)
            {
                return Some(list);
            }
        }
        let bytes = read_state_file_up_to(dirs, "files", &Self::file_name(name), MAX_FILE_LIST)?;
        FileList::from_bytes(&bytes).ok()
    }

    /// The list beside the journal entry of `name` for `tree`; `None` once it is committed
    /// (moved into `files/`), or when the entry was meanwhile replaced by another's.
    fn beside(dirs: &ScopeDirs, name: &str, tree: crate::fsx::Identity) -> Option<FileList> {
        let list_name = journal::list_name(name);
        let bytes = read_state_file_up_to(dirs, "pending", &list_name, MAX_FILE_LIST)?;
        let still = journal::journalled::<IgnoredAny, IgnoredAny>(dirs, name)?;
        (still.tree == tree).then(|| FileList::from_bytes(&bytes).ok())?
    }

    /// Drops the list; a large one on a thread of its own, not waited for: freeing the tens
    /// of thousands of names and digests of a large tree one by one takes milliseconds,
    /// which a command that is about to exit (the operating system takes the memory back
    /// whole) need not wait for.
    pub(crate) fn drop_aside(self) {
        if self.entries.len() >= LARGE_LIST {
            // Should no thread start, the list is dropped here with the closure.
            let _ = thread::Builder::new().spawn(move || drop(self));
        }
    }

    /// The list's file name in `.ext-store/files`.
    pub fn file_name(name: &str) -> String {
        format!("{name}.json")
    }

    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The entry at `path`, if listed.
    pub fn get(&self, path: &[u8]) -> Option<&Entry> {
        self.entries
            .binary_search_by(|e| e.path.as_slice().cmp(path))
            .ok()
            .map(|i| &self.entries[i])
    }

    /// The prepared roots: what preparing made, relative to the root.
    pub fn prepared(&self) -> &[String] {
        &self.prepared
    }

    /// Whether `path` is at or under a prepared root.
    pub fn is_prepared(&self, path: &[u8]) -> bool {
        at_or_under(path, &self.prepared)
    }

    /// Marks `roots`, listed already, as prepared: a tree fetched with what preparing made in
    /// it (a registry's manifest built for a platform) is then listed as if preparing had run
    /// here, and hashes as its source does. A root that is not a listed entry is an error.
    pub(crate) fn mark_prepared(&mut self, roots: &[String]) -> Result<()> {
        for root in roots {
            check_relative(root.as_bytes())?;
            if self.get(root.as_bytes()).is_none() {
                bail!(
                    "the prepared output {} is not in the tree",
                    shown(root.as_bytes())
                );
            }
        }
        self.prepared = roots.to_vec();
        self.prepared.sort();
        self.prepared.dedup();
        self.tree_hash.take();
        Ok(())
    }

    /// Lists what preparing made in the tree at `root` (`outputs`, relative paths such as
    /// `node_modules` or `./bin/hello`) as prepared: each output's topmost folder not listed
    /// yet (a `bin/` the build made for its program) becomes a prepared root, and everything
    /// under it is listed and hashed. An output missing from the tree, one the source itself
    /// placed, or one below a listed link or file is left as it is. The tree hash does not
    /// change: it covers the source's entries only.
    pub(crate) fn add_prepared(&mut self, root: &Path, outputs: &[String]) -> Result<()> {
        check_root(root)?;
        let mut added = Vec::new();
        for output in outputs {
            let Some(top) = self.unlisted_top(root, output) else {
                continue;
            };
            if self.is_prepared(top.as_bytes()) {
                continue;
            }
            let meta = fs::symlink_metadata(join(root, top.as_bytes()))
                .with_context(|| format!("cannot read {}", printable(&top)))?;
            let mut todo = Vec::new();
            let entry = describe(root, top.clone().into_bytes(), &meta, false)?;
            if entry.kind == EntryKind::Dir {
                todo.push(entry.path.clone());
            }
            added.push(entry);
            while let Some(dir) = todo.pop() {
                for (path, meta) in read_dir(root, &dir)? {
                    let entry = describe(root, path, &meta, false)?;
                    if entry.kind == EntryKind::Dir {
                        todo.push(entry.path.clone());
                    }
                    added.push(entry);
                }
            }
            self.prepared.push(top);
            self.prepared.sort();
        }
        added.sort_by(|a, b| a.path.cmp(&b.path));
        hash_files(root, &mut added)?;
        self.entries.extend(added);
        self.entries.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(())
    }

    /// The topmost path from `output` down that is not listed, when `output` is in the tree
    /// at `root` and every listed folder above it is a folder.
    fn unlisted_top(&self, root: &Path, output: &str) -> Option<String> {
        let parts: Vec<&str> = output
            .split('/')
            .filter(|p| !p.is_empty() && *p != ".")
            .collect();
        if parts.is_empty() || parts.contains(&"..") {
            return None;
        }
        fs::symlink_metadata(root.join(parts.join("/"))).ok()?;
        for end in 1..=parts.len() {
            let at = parts[..end].join("/");
            match self.get(at.as_bytes()) {
                None => return Some(at),
                Some(listed) if listed.kind != EntryKind::Dir => return None,
                Some(_) => {}
            }
        }
        None
    }

    /// `sha256:<hex>` (see the module documentation for the definition); computed once.
    pub fn tree_hash(&self) -> String {
        self.tree_hash.get_or_init(|| self.hash_tree()).clone()
    }

    /// The tree hash, computed: the lines go to the hasher many at a time (one call per
    /// line piece costs about as much as hashing it).
    fn hash_tree(&self) -> String {
        const BATCH: usize = 32 * 1024;
        let mut hasher = Sha256::new();
        let mut lines = Vec::with_capacity(BATCH + 1024);
        for entry in self.entries.iter().filter(|e| !self.is_prepared(&e.path)) {
            entry.hash_line(&mut lines);
            if lines.len() >= BATCH {
                hasher.update(&lines);
                lines.clear();
            }
        }
        hasher.update(&lines);
        format!("sha256:{}", hex(&hasher.finalize()))
    }

    /// Classifies the entries of the copy at `root` against this list. A folder the install
    /// did not place is one `NotPlaced` entry (not entered); placed folders are entered and
    /// not reported themselves. Only files whose size matches their entry are hashed.
    /// Sorted by path bytes.
    pub fn classify(&self, root: &Path) -> Result<Vec<Classified>> {
        check_root(root)?;
        let mut out = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let mut todo = vec![Vec::new()];
        while let Some(dir) = todo.pop() {
            for (path, meta) in read_dir(root, &dir)? {
                let Ok(kind) = kind_of(&meta, root, &path) else {
                    out.push(Classified {
                        prepared: self.is_prepared(&path),
                        path,
                        standing: Standing::Special,
                        kind: EntryKind::File,
                    });
                    continue;
                };
                let Some(listed) = self.get(&path) else {
                    out.push(Classified {
                        prepared: self.is_prepared(&path),
                        path,
                        standing: Standing::NotPlaced,
                        kind,
                    });
                    continue;
                };
                seen.insert(path.clone());
                if kind == EntryKind::Dir && listed.kind == EntryKind::Dir {
                    todo.push(path);
                    continue;
                }
                let standing = if Self::same(root, listed, &meta, kind)? {
                    Standing::Unchanged
                } else {
                    Standing::Edited
                };
                out.push(Classified {
                    prepared: self.is_prepared(&path),
                    path,
                    standing,
                    kind,
                });
            }
        }
        for entry in &self.entries {
            if !seen.contains(&entry.path) {
                out.push(Classified {
                    path: entry.path.clone(),
                    standing: Standing::Missing,
                    kind: entry.kind,
                    prepared: self.is_prepared(&entry.path),
                });
            }
        }
        out.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(out)
    }

    /// Whether the entry on disk is still the listed one.
    fn same(root: &Path, listed: &Entry, meta: &fs::Metadata, kind: EntryKind) -> Result<bool> {
        if kind != listed.kind {
            return Ok(false);
        }
        if kind == EntryKind::File && meta.len() != listed.size {
            return Ok(false);
        }
        let now = describe(root, listed.path.clone(), meta, true)?;
        Ok(now.sha256 == listed.sha256 && now.target == listed.target)
    }

    /// The stable JSON form (entries sorted by path bytes): the pretty JSON of the stored
    /// form and a newline.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut bytes = serde_json::to_vec_pretty(self).expect("a file list serializes");
        bytes.push(b'\n');
        bytes
    }

    /// Reads the JSON form; entries are sorted again and checked.
    pub fn from_bytes(bytes: &[u8]) -> Result<FileList> {
        let file: Stored = serde_json::from_slice(bytes).context("not a file list")?;
        if file.format != FORMAT {
            bail!("file list format {} is not {FORMAT}", file.format);
        }
        FileList::from_stored(file)
    }

    /// The list a stored form holds: entries sorted again, every path checked.
    fn from_stored(file: Stored) -> Result<FileList> {
        let mut entries = file
            .entries
            .into_iter()
            .map(Entry::try_from)
            .collect::<Result<Vec<_>>>()?;
        entries.sort_by(|a, b| a.path.cmp(&b.path));
        let mut prepared = file.prepared.into_owned();
        for root in &prepared {
            check_relative(root.as_bytes())?;
        }
        prepared.sort();
        Ok(FileList {
            prepared,
            ..FileList::sorted(entries)
        })
    }
}

impl Serialize for FileList {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        Stored {
            format: FORMAT,
            tree_hash: self.tree_hash().into(),
            prepared: Cow::Borrowed(&self.prepared),
            entries: Written(&self.entries),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for FileList {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<FileList, D::Error> {
        let file = Stored::deserialize(d)?;
        FileList::from_stored(file).map_err(serde::de::Error::custom)
    }
}

/// The stored form: read with its entries as `Vec<StoredEntry>`, written from a list's
/// entries ([`Written`]) with no string copied per entry.
#[derive(Serialize, Deserialize)]
struct Stored<'a, E = Vec<StoredEntry<'a>>> {
    format: u32,
    /// Written for readers; recomputed, never trusted, on reading.
    tree_hash: Cow<'a, str>,
    /// Absent in lists written before preparing (and left out when empty): nothing prepared.
    #[serde(default, skip_serializing_if = "<[String]>::is_empty")]
    prepared: Cow<'a, [String]>,
    entries: E,
}

/// A list's entries, written one [`StoredEntry`] at a time.
struct Written<'a>(&'a [Entry]);

impl Serialize for Written<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(StoredEntry::from))
    }
}

#[derive(Serialize, Deserialize)]
struct StoredEntry<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    path: Option<Cow<'a, str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    path_hex: Option<String>,
    #[serde(rename = "type")]
    kind: EntryKind,
    mode: u32,
    #[serde(default)]
    size: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    sha256: Option<Cow<'a, str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    target: Option<Cow<'a, str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    target_hex: Option<String>,
}

impl<'a> From<&'a Entry> for StoredEntry<'a> {
    fn from(e: &'a Entry) -> StoredEntry<'a> {
        let (path, path_hex) = split_name(&e.path);
        let (target, target_hex) = match &e.target {
            Some(t) => split_name(t),
            None => (None, None),
        };
        StoredEntry {
            path,
            path_hex,
            kind: e.kind,
            mode: e.mode,
            size: e.size,
            sha256: e.sha256.as_deref().map(Cow::Borrowed),
            target,
            target_hex,
        }
    }
}

/// A name as (`utf8`, `hex`): one of the two is set.
fn split_name(bytes: &[u8]) -> (Option<Cow<'_, str>>, Option<String>) {
    match std::str::from_utf8(bytes) {
        Ok(s) => (Some(Cow::Borrowed(s)), None),
        Err(_) => (None, Some(hex(bytes))),
    }
}

fn join_name(utf8: Option<Cow<str>>, hexed: Option<String>, what: &str) -> Result<Option<Vec<u8>>> {
    match (utf8, hexed) {
        (Some(s), None) => Ok(Some(s.into_owned().into_bytes())),
        (None, Some(h)) => unhex(&h)
            .map(Some)
            .ok_or_else(|| anyhow!("{what}_hex is not hexadecimal")),
        (None, None) => Ok(None),
        (Some(_), Some(_)) => bail!("an entry has both {what} and {what}_hex"),
    }
}

impl TryFrom<StoredEntry<'_>> for Entry {
    type Error = anyhow::Error;
    fn try_from(s: StoredEntry) -> Result<Entry> {
        let path = join_name(s.path, s.path_hex, "path")?
            .ok_or_else(|| anyhow!("an entry has no path"))?;
        check_relative(&path)?;
        Ok(Entry {
            path,
            kind: s.kind,
            mode: s.mode & 0o7777,
            size: s.size,
            sha256: s.sha256.map(Cow::into_owned),
            target: join_name(s.target, s.target_hex, "target")?,
        })
    }
}

/// A path of the list: relative, `/`-separated, no empty, `.` or `..` part, no NUL.
fn check_relative(path: &[u8]) -> Result<()> {
    let bad = path.is_empty()
        || path.contains(&0)
        || path
            .split(|b| *b == b'/')
            .any(|part| part.is_empty() || part == b"." || part == b"..");
    if bad {
        bail!("the entry {} is not a relative path", shown(path));
    }
    Ok(())
}

fn check_root(root: &Path) -> Result<()> {
    let meta = fs::symlink_metadata(root)
        .with_context(|| format!("cannot read {}", printable(&root.display().to_string())))?;
    if !meta.is_dir() {
        bail!(
            "{} is not a folder; cannot list its files",
            printable(&root.display().to_string())
        );
    }
    Ok(())
}

/// The entries of `root/dir` with their `lstat`, as (relative path bytes, metadata).
fn read_dir(root: &Path, dir: &[u8]) -> Result<Vec<(Vec<u8>, fs::Metadata)>> {
    let full = join(root, dir);
    let shown_dir = || printable(&full.display().to_string());
    let mut out = Vec::new();
    for item in fs::read_dir(&full).with_context(|| format!("cannot read {}", shown_dir()))? {
        let item = item.with_context(|| format!("cannot read {}", shown_dir()))?;
        let name = item.file_name();
        let mut path = dir.to_vec();
        if !path.is_empty() {
            path.push(b'/');
        }
        path.extend_from_slice(name.as_bytes());
        let meta = fs::symlink_metadata(item.path())
            .with_context(|| format!("cannot read {}", shown(&path)))?;
        out.push((path, meta));
    }
    Ok(out)
}

/// Whether `path` is one of `roots` (relative paths) or inside one.
pub(crate) fn at_or_under(path: &[u8], roots: &[String]) -> bool {
    roots.iter().any(|root| {
        path.strip_prefix(root.as_bytes())
            .is_some_and(|rest| rest.is_empty() || rest[0] == b'/')
    })
}

/// `root/<rel>` (`rel` empty: `root` itself).
pub(crate) fn join(root: &Path, rel: &[u8]) -> PathBuf {
    if rel.is_empty() {
        root.to_path_buf()
    } else {
        root.join(OsStr::from_bytes(rel))
    }
}

/// The kind of the entry `root/<path>` (`meta`, its `lstat`); an error for a special file.
pub(crate) fn kind_of(meta: &fs::Metadata, root: &Path, path: &[u8]) -> Result<EntryKind> {
    let t = meta.file_type();
    if t.is_dir() {
        Ok(EntryKind::Dir)
    } else if t.is_symlink() {
        Ok(EntryKind::Link)
    } else if t.is_file() {
        Ok(EntryKind::File)
    } else {
        bail!(
            "{} is a special file ({}); extension folders hold only files, folders and links: remove it",
            printable(&join(root, path).display().to_string()),
            crate::fsx::bounded::kind_name(t)
        )
    }
}

/// The entry for `path` (with `hash`, a file's content is hashed).
fn describe(root: &Path, path: Vec<u8>, meta: &fs::Metadata, hash: bool) -> Result<Entry> {
    let kind = kind_of(meta, root, &path)?;
    let full = join(root, &path);
    let mut entry = Entry {
        path,
        kind,
        mode: meta.mode() & 0o7777,
        size: 0,
        sha256: None,
        target: None,
    };
    match kind {
        EntryKind::File => {
            entry.size = meta.len();
            if hash {
                let (digest, size) = hash_file(&full)?;
                entry.sha256 = Some(digest);
                entry.size = size;
            }
        }
        EntryKind::Link => {
            let target = fs::read_link(&full).with_context(|| {
                format!(
                    "cannot read the link {}",
                    printable(&full.display().to_string())
                )
            })?;
            entry.target = Some(target.as_os_str().as_bytes().to_vec());
        }
        EntryKind::Dir => {}
    }
    Ok(entry)
}

/// Most threads [`hash_files`] hashes with.
const HASHERS: usize = 4;

/// Bytes of files per hashing thread: a smaller tree is hashed on the calling thread, since
/// starting a thread costs more than hashing it (and `sync` already stages several trees at
/// once).
const BYTES_PER_HASHER: u64 = 512 * 1024;

/// Hashes the files among `entries` (sorted), a few at a time: hashing is bound by the CPU and
/// files are independent, so on two cores a large tree is hashed in about half the time. The
/// error is the first failing file in path order, whatever the threads' timing.
fn hash_files(root: &Path, entries: &mut [Entry]) -> Result<()> {
    let files: Vec<usize> = (0..entries.len())
        .filter(|&i| entries[i].kind == EntryKind::File)
        .collect();
    let paths: Vec<PathBuf> = files
        .iter()
        .map(|&i| join(root, &entries[i].path))
        .collect();
    let bytes: u64 = files.iter().map(|&i| entries[i].size).sum();
    let worth = usize::try_from(bytes / BYTES_PER_HASHER).unwrap_or(usize::MAX);
    let workers = thread::available_parallelism()
        .map_or(1, NonZero::get)
        .clamp(1, HASHERS)
        .min(paths.len())
        .min(worth.saturating_add(1));
    let hashed =
        crate::threads::map_each(&paths, workers, "hash", || (), |(), path| hash_file(path));
    for (k, result) in hashed.into_iter().enumerate() {
        let (digest, size) = result?;
        let entry = &mut entries[files[k]];
        entry.sha256 = Some(digest);
        entry.size = size;
    }
    Ok(())
}

/// SHA-256 and size of the regular file at `path`, streamed; never through a link and
/// never blocking (a file replaced by a pipe or a link since the walk is refused).
pub(crate) fn hash_file(path: &Path) -> Result<(String, u64)> {
    let fail = |e: io::Error| {
        anyhow!(
            "cannot read {}: {e}",
            printable(&path.display().to_string())
        )
    };
    let flags = OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY;
    let mut file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags.bits().cast_signed())
        .open(path)
        .map_err(fail)?;
    let meta = file.metadata().map_err(fail)?;
    if !meta.is_file() {
        bail!(
            "{} is no longer a regular file (it changed while it was read); try again",
            printable(&path.display().to_string())
        );
    }
    hash_reader(&mut file, meta.len()).map_err(fail)
}

/// Largest read buffer [`hash_reader`] uses.
const HASH_BUFFER: u64 = 64 * 1024;

/// SHA-256 and size of what `file` holds; `len` (its size when opened) only sizes the
/// buffer, so a small file does not pay for zeroing a large one (one byte more, so that
/// the end is seen in the first read).
fn hash_reader(file: &mut File, len: u64) -> io::Result<(String, u64)> {
    let mut hasher = Sha256::new();
    let cap = usize::try_from(len.saturating_add(1).min(HASH_BUFFER)).expect("at most 64 KiB");
    let mut buf = vec![0u8; cap];
    let mut size = 0u64;
    loop {
        match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                hasher.update(&buf[..n]);
                size += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok((hex(&hasher.finalize()), size))
}

/// Lowercase hexadecimal, two digits a byte (every file's digest goes through here: by
/// table, not by formatting, which costs ten times as much).
pub(crate) fn hex(bytes: &[u8]) -> String {
    let mut out = Vec::with_capacity(bytes.len() * 2);
    push_hex(&mut out, bytes);
    String::from_utf8(out).expect("hexadecimal digits are ASCII")
}

const HEX_DIGITS: &[u8; 16] = b"0123456789abcdef";

/// [`hex`] appended to `out`.
fn push_hex(out: &mut Vec<u8>, bytes: &[u8]) {
    for b in bytes {
        out.push(HEX_DIGITS[usize::from(b >> 4)]);
        out.push(HEX_DIGITS[usize::from(b & 0xf)]);
    }
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Classified entries of one standing, for messages: escaped paths, folders with `/`.
pub(crate) fn names(items: &[Classified], standing: Standing) -> Vec<String> {
    items
        .iter()
        .filter(|c| c.standing == standing)
        .map(|c| {
            let slash = if c.kind == EntryKind::Dir { "/" } else { "" };
            format!("{}{slash}", shown(&c.path))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_hashed_by_several_threads_get_their_own_digests() {
        let tmp = tempfile::tempdir().unwrap();
        for i in 0..200 {
            let dir = tmp.path().join(format!("d{}", i % 7));
            fs::create_dir_all(&dir).unwrap();
            fs::write(dir.join(format!("f{i}")), "x".repeat(i * 37)).unwrap();
        }
        let list = FileList::scan(tmp.path()).unwrap();
        let files: Vec<&Entry> = list
            .entries()
            .iter()
            .filter(|e| e.kind == EntryKind::File)
            .collect();
        assert_eq!(files.len(), 200);
        for entry in files {
            let path = join(tmp.path(), &entry.path);
            let (digest, size) = hash_file(&path).unwrap();
            assert_eq!(
                entry.sha256.as_deref(),
                Some(digest.as_str()),
                "{}",
                path.display()
            );
            assert_eq!(entry.size, size);
        }
    }
    use std::os::unix::fs::{PermissionsExt, symlink};

    #[test]
    fn a_file_is_hashed_whole_whatever_its_size_against_the_buffer() {
        let tmp = tempfile::tempdir().unwrap();
        let big = usize::try_from(HASH_BUFFER).unwrap();
        for len in [0, 1, 4095, big - 1, big, big + 1, 3 * big + 17] {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
            let path = tmp.path().join(format!("f{len}"));
            fs::write(&path, &bytes).unwrap();
            let (digest, size) = hash_file(&path).unwrap();
            assert_eq!(digest, hex(&Sha256::digest(&bytes)), "{len} bytes");
            assert_eq!(size, len as u64);
        }
    }

    #[test]
    fn a_file_that_grew_after_it_was_opened_is_hashed_whole() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("f");
        fs::write(&path, "small").unwrap();
        let mut file = File::open(&path).unwrap();
        let grown = "x".repeat(100_000);
        fs::write(&path, &grown).unwrap();
        // Sized for the 5 bytes it held when opened, it still reads to the end.
        let (digest, size) = hash_reader(&mut file, 5).unwrap();
        assert_eq!(digest, hex(&Sha256::digest(grown.as_bytes())));
        assert_eq!(size, 100_000);
    }

    fn tree() -> tempfile::TempDir {
        let t = tempfile::tempdir().unwrap();
        fs::create_dir_all(t.path().join("a/b")).unwrap();
        fs::write(t.path().join("a/b/f"), "hello").unwrap();
        fs::write(t.path().join("run"), "#!/bin/sh\n").unwrap();
        fs::set_permissions(t.path().join("run"), fs::Permissions::from_mode(0o755)).unwrap();
        symlink("a/b/f", t.path().join("l")).unwrap();
        t
    }

    #[test]
    fn a_relisted_file_is_listed_as_a_fresh_scan_would() {
        let t = tree();
        let mut list = FileList::scan(t.path()).unwrap();
        fs::write(t.path().join("a/b/f"), "changed").unwrap();
        fs::write(t.path().join("a/new"), "added").unwrap();
        list.relist(t.path(), b"a/b/f").unwrap();
        list.relist(t.path(), b"a/new").unwrap();
        assert_eq!(list, FileList::scan(t.path()).unwrap());
    }

    #[test]
    fn a_scan_at_most_n_entries_refuses_a_larger_tree() {
        let t = tree();
        assert_eq!(
            FileList::scan_at_most(t.path(), 5).unwrap(),
            FileList::scan(t.path()).unwrap()
        );
        let err = FileList::scan_at_most(t.path(), 4).unwrap_err().to_string();
        assert!(err.ends_with("holds more than 4 entries"), "{err}");
    }

    #[test]
    fn scan_lists_sorted_with_hashes_and_link_targets() {
        let t = tree();
        let list = FileList::scan(t.path()).unwrap();
        let paths: Vec<_> = list.entries().iter().map(super::Entry::shown).collect();
        assert_eq!(paths, ["a", "a/b", "a/b/f", "l", "run"]);
        let f = list.get(b"a/b/f").unwrap();
        assert_eq!(f.size, 5);
        assert_eq!(
            f.sha256.as_deref(),
            Some("2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824")
        );
        assert_eq!(
            list.get(b"l").unwrap().target.as_deref(),
            Some(&b"a/b/f"[..])
        );
    }

    #[test]
    fn tree_hash_has_a_fixed_definition() {
        let t = tree();
        let list = FileList::scan(t.path()).unwrap();
        let mut expected = Vec::new();
        let hello = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824";
        let target = hex(&Sha256::digest(b"a/b/f"));
        let run = hex(&Sha256::digest(b"#!/bin/sh\n"));
        for line in [
            "a\0d - -\n".to_string(),
            "a/b\0d - -\n".to_string(),
            format!("a/b/f\0f - {hello}\n"),
            format!("l\0l - {target}\n"),
            format!("run\0f x {run}\n"),
        ] {
            expected.extend_from_slice(line.as_bytes());
        }
        assert_eq!(
            list.tree_hash(),
            format!("sha256:{}", hex(&Sha256::digest(&expected)))
        );
    }

    #[test]
    fn only_the_executable_bit_counts_in_the_tree_hash() {
        let t = tree();
        let before = FileList::scan(t.path()).unwrap().tree_hash();
        let f = t.path().join("a/b/f");
        fs::set_permissions(&f, fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(FileList::scan(t.path()).unwrap().tree_hash(), before);
        fs::set_permissions(&f, fs::Permissions::from_mode(0o700)).unwrap();
        assert_ne!(FileList::scan(t.path()).unwrap().tree_hash(), before);
    }

    #[test]
    fn serialization_round_trips_including_names_that_are_not_utf8() {
        let t = tree();
        let odd = OsStr::from_bytes(b"caf\xe9\nx");
        fs::write(t.path().join(odd), "x").unwrap();
        symlink(odd, t.path().join("to-odd")).unwrap();
        let list = FileList::scan(t.path()).unwrap();
        let bytes = list.to_bytes();
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert!(text.contains("\"path_hex\": \"636166e90a78\""), "{text}");
        assert!(text.contains("\"target_hex\""), "{text}");
        assert_eq!(FileList::from_bytes(&bytes).unwrap(), list);
        let json = serde_json::to_vec(&list).unwrap();
        assert_eq!(serde_json::from_slice::<FileList>(&json).unwrap(), list);
    }

    /// The JSON form built field by field as a `serde_json` value (its maps keep their
    /// order), pretty-printed: what `to_bytes` must equal.
    fn expected_bytes(list: &FileList) -> Vec<u8> {
        use serde_json::{Map, Value, json};
        let name = |entry: &mut Map<String, Value>, what: &str, bytes: &[u8]| {
            match std::str::from_utf8(bytes) {
                Ok(text) => entry.insert(what.to_owned(), json!(text)),
                Err(_) => entry.insert(format!("{what}_hex"), json!(hex(bytes))),
            };
        };
        let entries: Vec<Value> = list
            .entries()
            .iter()
            .map(|e| {
                let mut entry = Map::new();
                name(&mut entry, "path", &e.path);
                let kind = match e.kind {
                    EntryKind::File => "file",
                    EntryKind::Dir => "dir",
                    EntryKind::Link => "link",
                };
                entry.insert("type".into(), json!(kind));
                entry.insert("mode".into(), json!(e.mode));
                entry.insert("size".into(), json!(e.size));
                if let Some(digest) = &e.sha256 {
                    entry.insert("sha256".into(), json!(digest));
                }
                if let Some(target) = &e.target {
                    name(&mut entry, "target", target);
                }
                Value::Object(entry)
            })
            .collect();
        let mut whole = Map::new();
        whole.insert("format".into(), json!(FORMAT));
        whole.insert("tree_hash".into(), json!(list.tree_hash()));
        if !list.prepared().is_empty() {
            whole.insert("prepared".into(), json!(list.prepared()));
        }
        whole.insert("entries".into(), json!(entries));
        let whole = Value::Object(whole);
        let mut bytes = serde_json::to_vec_pretty(&whole).unwrap();
        bytes.push(b'\n');
        bytes
    }

    #[test]
    fn the_written_list_is_the_bytes_serde_json_writes() {
        let t = tree();
        let odd = OsStr::from_bytes(b"caf\xe9\nx");
        fs::write(t.path().join(odd), "x").unwrap();
        fs::write(
            t.path()
                .join("tab\there \"q\" back\\slash \u{1}\u{7f} \u{e9}t\u{e9}"),
            "",
        )
        .unwrap();
        symlink(odd, t.path().join("to-odd")).unwrap();
        symlink("../../outside\r", t.path().join("a/b/up")).unwrap();
        fs::create_dir(t.path().join("ro")).unwrap();
        fs::set_permissions(t.path().join("ro"), fs::Permissions::from_mode(0o555)).unwrap();
        let list = FileList::scan(t.path()).unwrap();
        assert_eq!(list.to_bytes(), expected_bytes(&list));
        assert_eq!(FileList::from_bytes(&list.to_bytes()).unwrap(), list);
        assert_eq!(
            FileList::default().to_bytes(),
            expected_bytes(&FileList::default())
        );
        fs::set_permissions(t.path().join("ro"), fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn a_large_list_is_written_as_serde_json_writes_it() {
        let entries: Vec<Entry> = (0..LARGE_LIST * 2)
            .map(|i| Entry {
                path: format!("d{}/f{i}", i % 13).into_bytes(),
                kind: if i % 7 == 0 {
                    EntryKind::Link
                } else {
                    EntryKind::File
                },
                mode: 0o644 | (u32::try_from(i % 2).unwrap() * 0o111),
                size: i as u64,
                sha256: (i % 7 != 0).then(|| hex(&Sha256::digest(i.to_string()))),
                target: (i % 7 == 0).then(|| format!("../t{i}").into_bytes()),
            })
            .collect();
        let list = FileList::from_entries(entries);
        assert_eq!(list.to_bytes(), expected_bytes(&list));
    }

    /// Entries of every kind, names that need escaping and names that are not UTF-8.
    fn pinned_entries() -> Vec<Entry> {
        vec![
            Entry {
                path: b"a".to_vec(),
                kind: EntryKind::Dir,
                mode: 0o755,
                size: 0,
                sha256: None,
                target: None,
            },
            Entry {
                path: "a/tab\t\"q\" \\ \u{1}\u{7f} \u{e9}".as_bytes().to_vec(),
                kind: EntryKind::File,
                mode: 0o644,
                size: 5,
                sha256: Some(hex(&Sha256::digest("hello"))),
                target: None,
            },
            Entry {
                path: b"caf\xe9".to_vec(),
                kind: EntryKind::Link,
                mode: 0o777,
                size: 3,
                sha256: None,
                target: Some(b"\xff/x".to_vec()),
            },
        ]
    }

    /// The JSON form, byte for byte: two-space indent, fields in their order, absent ones
    /// left out, strings escaped as `serde_json` escapes them, names that are not UTF-8 in hex.
    #[test]
    fn the_written_list_is_pinned_byte_for_byte() {
        let list = FileList::from_entries(pinned_entries());
        // <DEL> stands for the character DEL (0x7f), which JSON leaves as it is.
        let expected = r#"{
  "format": 1,
  "tree_hash": "sha256:d66a0f5bb19a52bb514dfbcba706a301d7ae7e88fd82d5bbb852bc23fe1e2ca2",
  "entries": [
    {
      "path": "a",
      "type": "dir",
      "mode": 493,
      "size": 0
    },
    {
      "path": "a/tab\t\"q\" \\ \u0001<DEL> é",
      "type": "file",
      "mode": 420,
      "size": 5,
      "sha256": "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
    },
    {
      "path_hex": "636166e9",
      "type": "link",
      "mode": 511,
      "size": 3,
      "target_hex": "ff2f78"
    }
  ]
}
"#
        .replace("<DEL>", "\u{7f}");
        assert_eq!(String::from_utf8(list.to_bytes()).unwrap(), expected);
    }

    fn any_entry() -> impl proptest::strategy::Strategy<Value = Entry> {
        use proptest::prelude::*;
        let bytes = proptest::collection::vec(any::<u8>(), 1..12);
        let kind = prop_oneof![
            Just(EntryKind::File),
            Just(EntryKind::Dir),
            Just(EntryKind::Link)
        ];
        let text = || {
            proptest::string::string_regex("[a-z\\\\\"\\x00-\\x1f\\x7f\u{e9}\u{1f600}/.]{1,10}")
                .unwrap()
                .prop_map(String::into_bytes)
        };
        let path = prop_oneof![text(), bytes.clone()];
        let target = proptest::option::of(prop_oneof![text(), bytes]);
        let digest = proptest::option::of(any::<[u8; 32]>().prop_map(|d| hex(&d)));
        (path, kind, 0u32..0o10000, any::<u64>(), digest, target).prop_map(
            |(path, kind, mode, size, sha256, target)| Entry {
                path,
                kind,
                mode,
                size,
                sha256,
                target,
            },
        )
    }

    proptest::proptest! {
        #[test]
        fn any_list_is_written_as_serde_json_writes_it(
            entries in proptest::collection::vec(any_entry(), 0..8)
        ) {
            let list = FileList::from_entries(entries);
            proptest::prop_assert_eq!(list.to_bytes(), expected_bytes(&list));
        }
    }

    #[test]
    fn prepared_outputs_are_listed_apart_and_left_out_of_the_tree_hash() {
        let t = tree();
        let mut list = FileList::scan(t.path()).unwrap();
        let source = list.tree_hash();
        fs::create_dir_all(t.path().join("node_modules/x")).unwrap();
        fs::write(t.path().join("node_modules/x/index.js"), "42").unwrap();
        fs::create_dir_all(t.path().join("bin")).unwrap();
        fs::write(t.path().join("bin/hello"), "built").unwrap();
        let outputs = ["node_modules", "./bin/hello", "gone", "a/b/f"].map(String::from);
        list.add_prepared(t.path(), &outputs).unwrap();
        assert_eq!(list.prepared(), ["bin", "node_modules"]);
        assert_eq!(list.tree_hash(), source);
        assert!(
            list.get(b"node_modules/x/index.js")
                .unwrap()
                .sha256
                .is_some()
        );
        assert!(list.is_prepared(b"bin/hello") && !list.is_prepared(b"a/b/f"));
        assert!(!list.is_prepared(b"node_modules2"));
        // Read back, it is the same list, and checked like a fresh scan's.
        let read = FileList::from_bytes(&list.to_bytes()).unwrap();
        assert_eq!(read, list);
        assert_eq!(read.tree_hash(), source);
        assert_eq!(list.to_bytes(), expected_bytes(&list));
        fs::remove_file(t.path().join("node_modules/x/index.js")).unwrap();
        fs::write(t.path().join("node_modules/new.js"), "").unwrap();
        let got: Vec<_> = list
            .classify(t.path())
            .unwrap()
            .into_iter()
            .filter(|c| c.standing != Standing::Unchanged)
            .map(|c| (shown(&c.path), c.standing, c.prepared))
            .collect();
        assert_eq!(
            got,
            [
                ("node_modules/new.js".to_string(), Standing::NotPlaced, true),
                (
                    "node_modules/x/index.js".to_string(),
                    Standing::Missing,
                    true
                ),
            ]
        );
    }

    #[test]
    fn a_list_written_before_prepared_outputs_still_reads() {
        let old = r#"{
  "format": 1,
  "tree_hash": "sha256:d66a0f5bb19a52bb514dfbcba706a301d7ae7e88fd82d5bbb852bc23fe1e2ca2",
  "entries": [
    {
      "path": "node_modules",
      "type": "dir",
      "mode": 493,
      "size": 0
    }
  ]
}
"#;
        let list = FileList::from_bytes(old.as_bytes()).unwrap();
        assert!(list.prepared().is_empty());
        assert!(!list.is_prepared(b"node_modules"));
        assert_eq!(list.to_bytes(), expected_bytes(&list));
        let bad = old.replace("\"entries\"", "\"prepared\": [\"../x\"],\n  \"entries\"");
        assert!(FileList::from_bytes(bad.as_bytes()).is_err());
    }

    #[test]
    fn a_relisted_entry_changes_the_tree_hash_computed_before() {
        let t = tree();
        let mut list = FileList::scan(t.path()).unwrap();
        let before = list.tree_hash();
        fs::write(t.path().join("a/b/f"), "changed").unwrap();
        list.relist(t.path(), b"a/b/f").unwrap();
        assert_ne!(list.tree_hash(), before);
        assert_eq!(
            list.tree_hash(),
            FileList::scan(t.path()).unwrap().tree_hash()
        );
    }

    #[test]
    fn special_files_are_refused() {
        let t = tree();
        let fifo = t.path().join("a/pipe");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap();
        let err = FileList::scan(t.path()).unwrap_err().to_string();
        assert!(
            err.contains("pipe") && err.contains("special file"),
            "{err}"
        );
    }

    #[test]
    fn classify_sorts_an_installed_copy() {
        let t = tree();
        let list = FileList::scan(t.path()).unwrap();
        fs::write(t.path().join("a/b/f"), "HELLO").unwrap();
        fs::remove_file(t.path().join("run")).unwrap();
        fs::create_dir_all(t.path().join("cache/x")).unwrap();
        fs::write(t.path().join("state.json"), "{}").unwrap();
        let socket = std::os::unix::net::UnixListener::bind(t.path().join("sock")).unwrap();
        let got: Vec<_> = list
            .classify(t.path())
            .unwrap()
            .into_iter()
            .map(|c| (shown(&c.path), c.standing))
            .collect();
        assert_eq!(
            got,
            [
                ("a/b/f".to_string(), Standing::Edited),
                ("cache".to_string(), Standing::NotPlaced),
                ("l".to_string(), Standing::Unchanged),
                ("run".to_string(), Standing::Missing),
                ("sock".to_string(), Standing::Special),
                ("state.json".to_string(), Standing::NotPlaced),
            ]
        );
        drop(socket);
    }

    #[test]
    fn a_linked_root_is_not_listed() {
        let t = tree();
        let link = t.path().join("a-link");
        symlink(t.path().join("a"), &link).unwrap();
        assert!(FileList::scan(&link).is_err());
    }

    #[test]
    fn roots_cover_themselves_and_what_is_inside() {
        let roots = vec!["node_modules".to_string(), "hello".to_string()];
        assert!(at_or_under(b"node_modules", &roots));
        assert!(at_or_under(b"node_modules/x/index.js", &roots));
        assert!(at_or_under(b"hello", &roots));
        assert!(!at_or_under(b"hello.go", &roots));
        assert!(!at_or_under(b"node_modules2", &roots));
    }

    #[test]
    fn hex_is_two_lowercase_digits_a_byte() {
        assert_eq!(hex(&[0x00, 0x0f, 0xa5, 0xff, 0x10]), "000fa5ff10");
        assert_eq!(unhex(&hex(&[7, 200, 13])), Some(vec![7, 200, 13]));
    }

    #[test]
    fn paths_that_climb_out_are_rejected_on_reading() {
        let bad =
            br#"{"format":1,"tree_hash":"","entries":[{"path":"../x","type":"file","mode":420}]}"#;
        assert!(FileList::from_bytes(bad).is_err());
    }
}
