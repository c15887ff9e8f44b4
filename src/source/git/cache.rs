//! The shared fetch cache: `$ZOT_HOME/.ext-store/cache/<commit>/` holds the whole checked-out
//! tree of a git commit (without `.git`, before any subfolder is picked) and
//! `<commit>.tree` its tree hash ([`FileList::tree_hash`]), so installing a commit that was
//! fetched before, into either scope, needs no network. A registry's manifest is kept as
//! `<digest>.layer`, its compressed layer as fetched, with the layer's digest in
//! `<digest>.tree` ([`Cache::layer`], [`Cache::put_layer`]): unpacked again on a hit, and
//! checked against that digest while it is.
//!
//! **Trust.** An entry is served only when a fresh hash of the cached tree matches the
//! recorded one ([`Cache::get`]); anything else (a file edited, added or removed, a special
//! file, a missing record) makes the entry a miss and it is deleted. The hash is that of the
//! copy served, made while copying it out (one pass over the data): it is the only check that
//! catches an edit which keeps sizes and times.
//!
//! **Sources.** An entry answers only for a repository that served that commit:
//! `<commit>.sources` holds one line per source that fetched it (the SHA-256 of the source's
//! key, [`crate::source::git::url::GitUrl::cache_key`]: the URL without credentials, so no secret is
//! written here). A commit asked for under another URL is fetched from that URL (and fails
//! there when that repository does not have it), then that URL is added. An entry without
//! the file (made before sources were kept) answers for none until a fetch adds one.
//!
//! **Atomic.** An entry is built in `cache/.put-<unique>/` (copied there) and
//! renamed into place, the
//! tree first and its record last; a run killed in between leaves a tree without a record, which
//! is a miss and is replaced by the next put. The cache folder is state: it is opened
//! without following links ([`crate::fsx::Folder`]), and a link or a file in its place is an
//! error that names it.
//!
//! **Not flushed.** Nothing here waits for the disk: whatever a crash leaves of an entry (a
//! tree without its record, an empty record, a tree missing files or holding unwritten
//! ones) fails the hash of [`Cache::get`], so it is a miss, deleted and fetched again. An
//! install never depends on the cache: the installed tree is flushed by the store before it
//! is placed.

use std::cell::OnceCell;
use std::collections::HashMap;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow};
use rustix::fs::FileType;

use crate::catalog::paths::{Layout, ScopeDirs};
use crate::fsx::{Folder, unique_name};
use crate::source::copy_tree;
use crate::store::filelist::FileList;
use crate::store::state::{lenient, open_state, state_error};
use crate::store::{Staging, create_dir};

/// The cache folder's name inside the global state folder.
const CACHE: &str = "cache";

/// Longest record read: `sha256:` and 64 hexadecimal digits, then for a layer what it is
/// (one line of its caller's, some kilobytes).
const MAX_RECORD: u64 = 64 << 10;

/// A compressed layer kept in the cache, open, with its descriptor (its recorded digest,
/// its size) and what its caller said it is when it was put ([`Cache::put_layer`]).
pub(crate) struct Layer {
    pub file: fs::File,
    pub digest: String,
    pub size: u64,
    pub about: Option<String>,
}

/// The fetch cache. The folder is made by the first put, so a command that only reads it
/// changes nothing.
pub(crate) struct Cache {
    /// `$ZOT_HOME`'s scope, where the state folder is.
    global: ScopeDirs,
    /// The cache folder, once it exists.
    folder: OnceCell<Folder>,
}

/// What [`Cache::clean`] removed.
#[derive(Debug, Default, Clone, Copy, serde::Serialize)]
pub(crate) struct Stats {
    /// Cached commits removed.
    pub entries: u64,
    /// Bytes freed: the sizes of the files removed, each counted once, and only when its
    /// last hard link was removed.
    pub bytes: u64,
}

impl Cache {
    /// Opens the cache of `layout`'s `$ZOT_HOME` (made by the first put when missing). A
    /// link or a file in place of the state folder or the cache folder is an error.
    pub(crate) fn open(layout: &Layout) -> Result<Cache> {
        Cache::in_scope(&layout.global)
    }

    /// [`Cache::open`] given the global scope's folders (one handle per thread: the folder
    /// is opened lazily and not shared).
    pub(crate) fn in_scope(global: &ScopeDirs) -> Result<Cache> {
        let folder = OnceCell::new();
        if let Some(existing) = existing(global)? {
            let _ = folder.set(existing);
        }
        Ok(Cache {
            global: global.clone(),
            folder,
        })
    }

    /// The cache folder (where it is or would be).
    pub(crate) fn path(&self) -> PathBuf {
        self.global.state().join(CACHE)
    }

    /// Copies the cached tree of `commit` into `into` (a new folder), listing the copy on the
    /// way: its file list when its tree hash is the recorded one. `None` when there is no
    /// entry, when `source` (a [`crate::source::git::url::GitUrl::cache_key`]) did not fetch it, or when the copy is not the recorded tree (the entry was edited, holds a
    /// special file, or was deleted meanwhile): the entry is then deleted, and what was
    /// copied stays in `into` for the caller to drop.
    pub(crate) fn get(&self, commit: &str, source: &str, into: &Path) -> Result<Option<FileList>> {
        let Some((folder, recorded)) = self.answering(commit, source) else {
            return Ok(None);
        };
        let is_dir = folder
            .stat(commit)?
            .is_some_and(|s| FileType::from_raw_mode(s.st_mode) == FileType::Directory);
        if is_dir
            && let Ok((_, list)) = copy_tree::copy(&folder.path().join(commit), into, &mut |_| {})
            && list.tree_hash() == recorded
        {
            return Ok(Some(list));
        }
        forget(folder, commit);
        Ok(None)
    }

    /// [`Cache::get`] into `into` through a scratch folder of `staging`, so a copy that
    /// fails (an entry edited or deleted meanwhile: it is fetched after all) leaves `into`
    /// free; the half copy goes with the staging folder.
    pub(crate) fn copy_out(
        &self,
        staging: &Staging,
        key: &str,
        source: &str,
        into: &Path,
    ) -> Result<Option<FileList>> {
        let copied = staging.scratch("cached");
        let Some(files) = self.get(key, source, &copied)? else {
            return Ok(None);
        };
        fs::rename(&copied, into)
            .with_context(|| format!("cannot move {} into staging", copied.display()))?;
        Ok(Some(files))
    }

    /// The compressed layer kept for the registry manifest `key` (its digest's hex) fetched
    /// from `source`: read it through [`crate::source::oci::verified::Verified`], and
    /// [`Cache::forget`] it when it fails. `None` when there is none for that source.
    pub(crate) fn layer(&self, key: &str, source: &str) -> Result<Option<Layer>> {
        let Some((folder, digest)) = self.answering(key, source) else {
            return Ok(None);
        };
        let Ok(Some(file)) = folder.open_file(layer_name(key)) else {
            return Ok(None);
        };
        let size = file.metadata()?.len();
        let about = record_lines(folder, key).and_then(|(_, about)| about);
        Ok(Some(Layer {
            file,
            digest,
            size,
            about,
        }))
    }

    /// Keeps the compressed layer at `path` (a file, moved when it is on the cache's file
    /// system, else copied) as the entry of the registry manifest `key`, fetched from
    /// `source`, its digest `digest`, with `about` (one line: what the layer is, given back
    /// by [`Cache::layer`]); a complete entry there already gets `source` added.
    pub(crate) fn put_layer(
        &self,
        key: &str,
        source: &str,
        path: &Path,
        digest: &str,
        about: Option<&str>,
    ) -> Result<()> {
        if about.is_some_and(|a| a.contains('\n') || a.len() as u64 >= MAX_RECORD / 2) {
            return Err(anyhow!(
                "what a layer is must be one line of at most {} bytes",
                MAX_RECORD / 2
            ));
        }
        let Some(folder) = self.missing(key, source, &layer_name(key))? else {
            return Ok(());
        };
        let shown = || format!("cannot cache {key} in {}", folder.path().display());
        let temp = unique_name(".put-");
        let placed = keep_file(&folder, path, &temp).and_then(|()| {
            forget(&folder, key);
            let about = about.map(|a| format!("{a}\n")).unwrap_or_default();
            fs::write(
                folder.path().join(format!("{temp}.record")),
                format!("{digest}\n{about}"),
            )?;
            rustix::fs::renameat(&folder, temp.as_str(), &folder, layer_name(key).as_str())?;
            rustix::fs::renameat(
                &folder,
                format!("{temp}.record").as_str(),
                &folder,
                record_name(key).as_str(),
            )?;
            add_source(&folder, key, source)
        });
        let _ = folder.unlink(&temp);
        let _ = folder.unlink(format!("{temp}.record"));
        placed.with_context(shown)
    }

    /// The cache folder and the hash recorded for `key`, when an entry of that key answers
    /// for `source` (a fetch from it put or joined it).
    fn answering(&self, key: &str, source: &str) -> Option<(&Folder, String)> {
        let folder = self.folder.get().filter(|_| is_commit_id(key))?;
        if !sources(folder, key).contains(&source_line(source)) {
            return None;
        }
        Some((folder, recorded(folder, key)?))
    }

    /// Deletes the entry of `key` (one that failed its check when served).
    pub(crate) fn forget(&self, key: &str) {
        if let Some(folder) = self.folder.get() {
            forget(folder, key);
        }
    }

    /// Stores a copy of `tree` (a checked-out commit, a real folder) as `commit`, fetched
    /// from `source`, unless a complete entry is there already (then `source` is added to it). Links are copied as links, never followed; a
    /// special file in `tree` is an error. The tree hash recorded is that of the copy, listed
    /// while it is made: that list, which is `tree`'s too (the copy is exact), when a copy was
    /// made.
    pub(crate) fn put(&self, commit: &str, source: &str, tree: &Path) -> Result<Option<FileList>> {
        let Some(folder) = self.missing(commit, source, commit)? else {
            return Ok(None);
        };
        copy_entry(&folder, commit, source, tree).map(Some)
    }

    /// The cache folder (made when missing) when it has no complete entry for `commit`: its
    /// record and `entry` beside it (the tree, or the layer); a complete one gets `source`,
    /// which has just fetched that commit, among its sources.
    fn missing(&self, commit: &str, source: &str, entry: &str) -> Result<Option<Folder>> {
        if !is_commit_id(commit) {
            return Err(anyhow!("\"{commit}\" is not a commit id or digest"));
        }
        let folder = self.made()?;
        if recorded(&folder, commit).is_some() && folder.stat(entry)?.is_some() {
            add_source(&folder, commit, source)
                .with_context(|| format!("cannot cache {commit} in {}", folder.path().display()))?;
            return Ok(None);
        }
        Ok(Some(folder))
    }

    /// Deletes every entry (and what a killed put left); the cache folder stays.
    pub(crate) fn clean(&self) -> Result<Stats> {
        let mut stats = Stats::default();
        let Some(folder) = self.folder.get() else {
            return Ok(stats);
        };
        let mut freed = Freed::default();
        for name in folder.names()? {
            let path = folder.path().join(&name);
            freed.add(&path);
            folder
                .remove(&name)
                .with_context(|| format!("cannot delete {}", path.display()))?;
            let bytes = name.as_bytes();
            let beside = bytes.ends_with(b".tree") || bytes.ends_with(SOURCES.as_bytes());
            if !bytes.starts_with(b".") && !beside {
                stats.entries += 1;
            }
        }
        stats.bytes = freed.total();
        Ok(stats)
    }

    /// The cache folder, made when missing.
    fn made(&self) -> Result<Folder> {
        if let Some(folder) = self.folder.get() {
            return Ok(folder.try_clone()?);
        }
        create_dir(&self.global.base)?;
        let state = open_state(&self.global, true)?.expect("created");
        let folder = state
            .sub(CACHE, true)
            .map_err(|e| state_error(&state.path().join(CACHE), e))?
            .expect("created");
        let _ = self.folder.set(folder.try_clone()?);
        Ok(folder)
    }
}

/// Puts the file at `path` in `folder` as `name`: renamed there when on the same file
/// system, else copied.
fn keep_file(folder: &Folder, path: &Path, name: &str) -> std::io::Result<()> {
    match rustix::fs::renameat(rustix::fs::CWD, path, folder, name) {
        Ok(()) => Ok(()),
        Err(rustix::io::Errno::XDEV) => fs::copy(path, folder.path().join(name)).map(drop),
        Err(e) => Err(e.into()),
    }
}

/// Puts a copy of `tree`, listed on the way, in `folder` (the cache folder) as `commit`'s
/// entry; the list.
fn copy_entry(folder: &Folder, commit: &str, source: &str, tree: &Path) -> Result<FileList> {
    let temp = unique_name(".put-");
    let built = folder.create_dir(&temp).map_err(anyhow::Error::from);
    let result = built.and_then(|dir| {
        let list = copy_tree::copy(tree, &dir.join("tree"), &mut |_| {})?.1;
        place_entry(folder, &temp, "tree", commit, &list)?;
        add_source(folder, commit, source)?;
        Ok(list)
    });
    let _ = folder.remove(&temp);
    result.with_context(|| format!("cannot cache {commit} in {}", folder.path().display()))
}

/// Puts the tree `made` of the temporary folder `temp` in place as `commit`'s entry, with
/// the record of `list`'s hash beside it (the tree first, the record last). Nothing is
/// flushed: see the module documentation.
fn place_entry(
    folder: &Folder,
    temp: &str,
    made: &str,
    commit: &str,
    list: &FileList,
) -> Result<()> {
    fs::write(
        folder.path().join(temp).join("record"),
        format!("{}\n", list.tree_hash()),
    )?;
    forget(folder, commit);
    rustix::fs::renameat(folder, format!("{temp}/{made}").as_str(), folder, commit)?;
    let record = format!("{temp}/record");
    rustix::fs::renameat(
        folder,
        record.as_str(),
        folder,
        record_name(commit).as_str(),
    )?;
    Ok(())
}

/// The cache folder of `global` if it exists; a link or a file in its place is an error.
fn existing(global: &ScopeDirs) -> Result<Option<Folder>> {
    let Some(state) = open_state(global, false)? else {
        return Ok(None);
    };
    lenient(state.sub(CACHE, false), false).map_err(|e| state_error(&state.path().join(CACHE), e))
}

/// The tree hash recorded for `commit` in `folder`, if a readable record is there.
fn recorded(folder: &Folder, commit: &str) -> Option<String> {
    record_lines(folder, commit).map(|(hash, _)| hash)
}

/// The record of `commit`: its hash (or a layer's digest) and, for a layer, what it is.
fn record_lines(folder: &Folder, commit: &str) -> Option<(String, Option<String>)> {
    let bytes = folder.read_file(record_name(commit), MAX_RECORD).ok()??;
    let text = String::from_utf8(bytes).ok()?;
    let mut lines = text.lines();
    let hash = lines.next()?.trim();
    let about = lines.next().map(str::to_string);
    hash.starts_with("sha256:")
        .then(|| (hash.to_string(), about))
}

/// Deletes the entry of `commit`, record and sources first (a tree without them is never
/// served).
fn forget(folder: &Folder, commit: &str) {
    let _ = folder.unlink(record_name(commit));
    let _ = folder.unlink(sources_name(commit));
    let _ = folder.remove(commit);
    let _ = folder.unlink(layer_name(commit));
}

/// The suffix of the file beside an entry that names the sources that fetched it.
const SOURCES: &str = ".sources";

/// Longest sources file read: some thousands of sources.
const MAX_SOURCES: u64 = 1 << 20;

fn sources_name(commit: &str) -> String {
    format!("{commit}{SOURCES}")
}

/// The line of `source` in a sources file: the hexadecimal SHA-256 of its key.
fn source_line(source: &str) -> String {
    use sha2::{Digest, Sha256};
    crate::store::filelist::hex(&Sha256::digest(source.as_bytes()))
}

/// The sources recorded for `commit` in `folder` (none when there is no readable file).
fn sources(folder: &Folder, commit: &str) -> Vec<String> {
    let Some(bytes) = folder
        .read_file(sources_name(commit), MAX_SOURCES)
        .ok()
        .flatten()
    else {
        return Vec::new();
    };
    String::from_utf8_lossy(&bytes)
        .lines()
        .map(str::to_string)
        .collect()
}

/// Adds `source` to the sources of `commit` in `folder`: the whole file written beside and
/// renamed over it (two runs adding at once may lose one line: that source is then a miss,
/// fetched again).
fn add_source(folder: &Folder, commit: &str, source: &str) -> std::io::Result<()> {
    let mut lines = sources(folder, commit);
    let line = source_line(source);
    if lines.contains(&line) {
        return Ok(());
    }
    lines.push(line);
    let temp = unique_name(".sources-");
    let mut text = lines.join("\n");
    text.push('\n');
    let written = fs::write(folder.path().join(&temp), text).and_then(|()| {
        rustix::fs::renameat(folder, temp.as_str(), folder, sources_name(commit).as_str())
            .map_err(Into::into)
    });
    if written.is_err() {
        let _ = folder.unlink(&temp);
    }
    written
}

fn layer_name(key: &str) -> String {
    format!("{key}.layer")
}

fn record_name(commit: &str) -> String {
    format!("{commit}.tree")
}

/// A full commit id: 40 (SHA-1) or 64 (SHA-256) lowercase hexadecimal digits.
pub(crate) fn is_commit_id(text: &str) -> bool {
    matches!(text.len(), 40 | 64)
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The bytes that deleting files frees: a file counts once, and only when all its hard
/// links were deleted (a file an entry shares with an installed extension stays on disk).
#[derive(Default)]
struct Freed {
    /// Bytes of files that had one link.
    bytes: u64,
    /// Files with more links, by device and inode: their size, their links, how many of
    /// them were deleted.
    shared: HashMap<(u64, u64), (u64, u64, u64)>,
}

impl Freed {
    /// Counts the files under `path` (links not followed, the root included).
    fn add(&mut self, path: &Path) {
        let files = walkdir::WalkDir::new(path)
            .follow_links(false)
            .follow_root_links(false)
            .into_iter()
            .filter_map(Result::ok)
            .filter_map(|e| e.metadata().ok())
            .filter(fs::Metadata::is_file);
        for meta in files {
            if meta.nlink() <= 1 {
                self.bytes += meta.len();
                continue;
            }
            let file = self.shared.entry((meta.dev(), meta.ino()));
            file.or_insert((meta.len(), meta.nlink(), 0)).2 += 1;
        }
    }

    fn total(&self) -> u64 {
        let all_gone = self
            .shared
            .values()
            .filter(|(_, links, gone)| gone >= links);
        self.bytes + all_gone.map(|(size, ..)| size).sum::<u64>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn layout(home: &Path) -> Layout {
        Layout::new(home.to_path_buf(), home)
    }

    fn tree(dir: &Path) -> PathBuf {
        let tree = dir.join("src");
        fs::create_dir_all(tree.join("sub")).unwrap();
        fs::write(tree.join("extension.json"), "{}").unwrap();
        fs::write(tree.join("sub/run.sh"), "#!/bin/sh\n").unwrap();
        fs::set_permissions(tree.join("sub/run.sh"), fs::Permissions::from_mode(0o755)).unwrap();
        std::os::unix::fs::symlink("sub/run.sh", tree.join("run")).unwrap();
        tree
    }

    const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";
    const SOURCE: &str = "git://host/repo";

    /// What the cache serves for [`COMMIT`], copied into a new folder under `dir`.
    fn served(cache: &Cache, dir: &Path) -> Option<(PathBuf, FileList)> {
        let into = dir.join(unique_name("out-"));
        let list = cache.get(COMMIT, SOURCE, &into).unwrap()?;
        Some((into, list))
    }

    fn entry(cache: &Cache) -> PathBuf {
        cache.path().join(COMMIT)
    }

    #[test]
    fn a_kept_layer_is_served_to_its_source_only_and_forgotten_on_request() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = Cache::open(&layout(&tmp.path().join("home"))).unwrap();
        let key = "ab".repeat(32);
        let layer = tmp.path().join("layer");
        fs::write(&layer, b"gzip bytes").unwrap();
        cache
            .put_layer(&key, SOURCE, &layer, "sha256:00", Some("{\"what\":1}"))
            .unwrap();
        assert!(!layer.exists(), "moved, not copied");
        let kept = cache.layer(&key, SOURCE).unwrap().unwrap();
        assert_eq!((kept.digest.as_str(), kept.size), ("sha256:00", 10));
        assert_eq!(kept.about.as_deref(), Some("{\"what\":1}"));
        assert!(cache.layer(&key, "oci://elsewhere/x").unwrap().is_none());
        cache.forget(&key);
        assert!(cache.layer(&key, SOURCE).unwrap().is_none());
        assert!(
            cache
                .put_layer("../x", SOURCE, &layer, "sha256:00", None)
                .is_err()
        );
    }

    #[test]
    fn a_put_tree_is_served_with_the_same_hash() {
        let tmp = tempfile::tempdir().unwrap();
        let src = tree(tmp.path());
        let cache = Cache::open(&layout(&tmp.path().join("home"))).unwrap();
        assert!(served(&cache, tmp.path()).is_none());
        let put = cache.put(COMMIT, SOURCE, &src).unwrap();
        assert_eq!(
            put,
            Some(FileList::scan(&src).unwrap()),
            "the tree's own list"
        );
        assert_eq!(
            cache.put(COMMIT, SOURCE, &src).unwrap(),
            None,
            "already there"
        );
        let (got, list) = served(&cache, tmp.path()).unwrap();
        assert_eq!(list, FileList::scan(&got).unwrap());
        assert_eq!(list.tree_hash(), FileList::scan(&src).unwrap().tree_hash());
    }

    #[test]
    fn an_edited_entry_is_not_served_and_is_deleted() {
        let tmp = tempfile::tempdir().unwrap();
        let src = tree(tmp.path());
        let cache = Cache::open(&layout(&tmp.path().join("home"))).unwrap();
        cache.put(COMMIT, SOURCE, &src).unwrap();
        assert!(served(&cache, tmp.path()).is_some());
        fs::write(entry(&cache).join("extension.json"), "{\"x\":1}").unwrap();
        assert!(served(&cache, tmp.path()).is_none());
        assert!(!entry(&cache).exists());
        cache.put(COMMIT, SOURCE, &src).unwrap();
        assert!(served(&cache, tmp.path()).is_some());
    }

    #[test]
    fn an_entry_edited_without_changing_sizes_or_times_is_refused_while_copied_out() {
        let tmp = tempfile::tempdir().unwrap();
        let src = tree(tmp.path());
        let cache = Cache::open(&layout(&tmp.path().join("home"))).unwrap();
        cache.put(COMMIT, SOURCE, &src).unwrap();
        let file = entry(&cache).join("sub/run.sh");
        let modified = fs::metadata(&file).unwrap().modified().unwrap();
        fs::write(&file, "#!/bin/XX\n").unwrap();
        fs::File::options()
            .write(true)
            .open(&file)
            .unwrap()
            .set_modified(modified)
            .unwrap();
        let into = tmp.path().join("out");
        assert!(cache.get(COMMIT, SOURCE, &into).unwrap().is_none());
        // The one pass copied it out before it could tell: the caller drops that copy.
        assert_eq!(fs::read(into.join("sub/run.sh")).unwrap(), b"#!/bin/XX\n");
        assert!(!entry(&cache).exists(), "the entry is deleted");
        assert!(!cache.path().join(format!("{COMMIT}.tree")).exists());
    }

    #[test]
    fn an_entry_holding_a_special_file_is_refused_and_deleted() {
        let tmp = tempfile::tempdir().unwrap();
        let src = tree(tmp.path());
        let cache = Cache::open(&layout(&tmp.path().join("home"))).unwrap();
        cache.put(COMMIT, SOURCE, &src).unwrap();
        let status = std::process::Command::new("mkfifo")
            .arg(entry(&cache).join("sub/pipe"))
            .status()
            .unwrap();
        assert!(status.success());
        assert!(served(&cache, tmp.path()).is_none());
        assert!(!entry(&cache).exists());
    }

    #[test]
    fn a_tree_without_its_record_is_replaced() {
        let tmp = tempfile::tempdir().unwrap();
        let src = tree(tmp.path());
        let home = tmp.path().join("home");
        fs::create_dir_all(home.join(".ext-store/cache").join(COMMIT)).unwrap();
        let cache = Cache::open(&layout(&home)).unwrap();
        assert!(served(&cache, tmp.path()).is_none());
        cache.put(COMMIT, SOURCE, &src).unwrap();
        assert!(served(&cache, tmp.path()).is_some());
    }

    #[test]
    fn an_entry_answers_only_for_the_sources_that_fetched_it() {
        let tmp = tempfile::tempdir().unwrap();
        let src = tree(tmp.path());
        let cache = Cache::open(&layout(&tmp.path().join("home"))).unwrap();
        cache.put(COMMIT, SOURCE, &src).unwrap();
        let into = |n: &str| tmp.path().join(n);
        assert!(
            cache
                .get(COMMIT, "git://other/repo", &into("a"))
                .unwrap()
                .is_none()
        );
        assert!(
            entry(&cache).exists(),
            "a miss for another source keeps the entry"
        );
        // The other source fetched it too: it is added, the tree is not copied again.
        assert!(
            cache
                .put(COMMIT, "git://other/repo", &src)
                .unwrap()
                .is_none()
        );
        assert!(
            cache
                .get(COMMIT, "git://other/repo", &into("b"))
                .unwrap()
                .is_some()
        );
        assert!(cache.get(COMMIT, SOURCE, &into("c")).unwrap().is_some());
        let text = fs::read_to_string(cache.path().join(sources_name(COMMIT))).unwrap();
        assert!(!text.contains("git://"), "only digests are written: {text}");
        // An entry of the older layout (no sources) answers for none.
        fs::remove_file(cache.path().join(sources_name(COMMIT))).unwrap();
        assert!(cache.get(COMMIT, SOURCE, &into("d")).unwrap().is_none());
    }

    #[test]
    fn clean_counts_entries_and_bytes() {
        let tmp = tempfile::tempdir().unwrap();
        let src = tree(tmp.path());
        let cache = Cache::open(&layout(&tmp.path().join("home"))).unwrap();
        cache.put(COMMIT, SOURCE, &src).unwrap();
        let stats = cache.clean().unwrap();
        assert_eq!(stats.entries, 1);
        assert_eq!(stats.bytes, 2 + 10 + 72 + 65);
        assert_eq!(fs::read_dir(cache.path()).unwrap().count(), 0);
    }

    #[test]
    fn only_full_lowercase_ids_are_commits() {
        assert!(is_commit_id(COMMIT));
        assert!(!is_commit_id(&COMMIT.to_uppercase()));
        assert!(!is_commit_id("0123abc"));
        assert!(!is_commit_id("../../../../../../../../../../../../../etc"));
    }
}
