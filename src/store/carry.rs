//! Carry-over for `update` and `install --force`: what in the installed copy is not the
//! install's to replace goes into the staged new tree before the swap, and what the new
//! version overwrites is saved.
//!
//! The installed copy is classified against its file list ([`crate::store::filelist`]):
//! - entries the install did not place (state, caches, `.env`, a `node_modules` the user
//!   installed) are carried into the new tree unchanged: files are hard-linked (same
//!   content, mode and times; copied when a link is not possible), links are recreated as
//!   links (never followed), folders are made with their mode and times. Where the new
//!   version ships an entry at the same path, the new one wins and the old one is saved;
//! - files the install placed and the user edited since are kept as edited when the new
//!   version ships them unchanged (only the user changed them: dpkg's rule for
//!   configuration files); when both changed they are saved (the new version wins), or with
//!   `--keep-local` carried over the new version's;
//! - an installed copy without a file list (installed by hand or by an older zot) is saved
//!   whole; everything in it the new version does not ship is carried.
//!
//! Nothing is ever written through a link of the new tree: an entry whose parent in the
//! new tree is not a real folder is saved instead of carried. Saved entries are built in
//! the staging folder (beside the new tree), and the store moves them to
//! `.ext-store/backup/<name>/<time>/` before the swap ([`crate::store::Store::keep_backup`]).
//! The plan is worked out first ([`plan`]), so `--dry-run` can show it without changing
//! anything, then carried out ([`apply`]).

use std::fs;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow};
use rustix::fs::OFlags;
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::catalog::manifest;
use crate::catalog::paths::ScopeDirs;
use crate::fsx::{Folder, crashpoint};
use crate::output::{first_few, printable};
use crate::store::filelist::{self, Classified, EntryKind, FileList, Standing, join};
use crate::store::{Staging, Store};

/// What the command line asked for.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// `--keep-local`: edited files the install placed are kept over the new version's.
    pub keep_local: bool,
    /// `--enable` / `--disable`; `None` keeps the installed copy's `enabled`.
    pub enabled: Option<bool>,
    /// `update`: an edited file the new version ships unchanged is kept as edited. Not for
    /// `sync`, whose work is to make the copy what the lock says, nor `install --force`.
    pub keep_unchanged_edits: bool,
}

/// What happens to one entry of the installed copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Action {
    /// Not placed by the install: carried into the new tree.
    Carry,
    /// Not placed by the install, and the new version ships an entry there: the new one
    /// wins, the old one is saved.
    SaveReplaced,
    /// Placed by the install and edited since: the new version wins, the edited one is saved.
    SaveEdited,
    /// Placed by the install and edited since, kept over the new version (`--keep-local`).
    KeepLocal,
    /// Placed by the install and edited since, and the new version ships it unchanged:
    /// only the user changed it, so the edit stays (dpkg's rule for configuration files).
    KeepEdited,
    /// A pipe, socket or device: neither carried nor saved.
    SkipSpecial,
}

/// One entry of the plan.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Item {
    /// Relative to the extension folder (escaped for display; `/` after a folder).
    pub path: String,
    #[serde(skip)]
    raw: Vec<u8>,
    pub action: Action,
}

/// What an update or a forced install does with the installed copy's data.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct Plan {
    pub items: Vec<Item>,
    /// No file list: the whole installed copy is saved.
    pub whole_copy_saved: bool,
    /// The `enabled` value the new manifest gets, when it differs from the new version's.
    pub enabled: Option<bool>,
    /// Whether `enabled` comes from `--enable`/`--disable` (else from the installed copy).
    #[serde(skip)]
    enabled_by_flag: bool,
    /// Where the saved entries went (set once they are saved).
    pub backup: Option<PathBuf>,
}

impl Plan {
    /// Whether anything is saved to a backup folder.
    pub(crate) fn saves(&self) -> bool {
        self.whole_copy_saved
            || self
                .items
                .iter()
                .any(|i| matches!(i.action, Action::SaveReplaced | Action::SaveEdited))
    }

    /// The paths with `action`.
    pub(crate) fn paths(&self, action: Action) -> Vec<&str> {
        self.items
            .iter()
            .filter(|i| i.action == action)
            .map(|i| i.path.as_str())
            .collect()
    }

    /// One line per kind of action, for the text output (without the extension's name).
    pub(crate) fn lines(&self, done: bool) -> Vec<String> {
        let mut out = Vec::new();
        let verb = |now: &'static str, later: &'static str| if done { now } else { later };
        let mut add = |action, what: String| {
            let paths = self.paths(action);
            if !paths.is_empty() {
                out.push(format!("{what}: {}", first_few(paths.iter(), LISTED)));
            }
        };
        add(
            Action::Carry,
            verb("carried over", "would carry over").into(),
        );
        add(
            Action::SaveReplaced,
            format!(
                "{} (the new version ships them)",
                verb("replaced and saved", "would replace and save")
            ),
        );
        add(
            Action::SaveEdited,
            format!(
                "{} (edited since install)",
                verb("overwritten and saved", "would overwrite and save")
            ),
        );
        add(
            Action::KeepLocal,
            verb("kept local edits", "would keep local edits").into(),
        );
        add(
            Action::KeepEdited,
            format!(
                "{} (edited since install; the new version did not change them)",
                verb("kept as edited", "would keep as edited")
            ),
        );
        add(Action::SkipSpecial, "not carried (special files)".into());
        if self.whole_copy_saved {
            out.push(
                verb(
                    "no file list (installed by hand or by an older zot): the whole old copy was saved",
                    "no file list (installed by hand or by an older zot): would save the whole old copy",
                )
                .into(),
            );
        }
        if let Some(enabled) = self.enabled {
            let state = if enabled { "enabled" } else { "disabled" };
            if self.enabled_by_flag {
                out.push(format!("{} {state}", verb("now", "would be")));
            } else {
                out.push(format!("{} {state}", verb("kept", "would keep")));
            }
        }
        if let Some(dir) = &self.backup {
            out.push(format!(
                "saved to {}",
                printable(&dir.display().to_string())
            ));
        }
        out
    }
}

/// What [`prepare`] did: the plan (with the backup folder) and the new version's file list.
pub(crate) struct Prepared {
    pub plan: Plan,
    /// What the new version placed (before anything was carried into it).
    pub files: FileList,
}

/// Carry-over for a staged tree (listed by `files`) about to replace `extensions/<folder>`
/// of `dirs`: works out the plan, writes `enabled` into the staged manifest (and its entry
/// into `files`), then [`carry_out`]. No installed copy, or a linked one: nothing to carry.
pub(crate) fn prepare(
    store: &Store,
    dirs: &ScopeDirs,
    staging: &Staging,
    folder: &str,
    options: Options,
    mut files: FileList,
    new_outputs: &[String],
) -> Result<Prepared> {
    let plan = plan_for(dirs, staging, folder, options, new_outputs)?;
    let new = staging.tree();
    if write_enabled(&plan, &new)? {
        files.relist(&new, manifest::FILE.as_bytes())?;
    }
    carry_out(store, dirs, staging, folder, plan, files)
}

/// What carrying `extensions/<folder>` of `dirs` into the staged tree would do; changes
/// nothing. What the old copy's step made and what the staged copy's step made
/// (`new_outputs`: a `node_modules/` installed there by hand, say) stay with the old copy.
pub(crate) fn plan_for(
    dirs: &ScopeDirs,
    staging: &Staging,
    folder: &str,
    options: Options,
    new_outputs: &[String],
) -> Result<Plan> {
    let old = dirs.extension(folder);
    let new = staging.tree();
    if is_installed(&old) {
        let list = FileList::load(dirs, folder);
        let mut outputs = crate::store::record::Record::load(dirs, folder)
            .and_then(|r| r.prepared)
            .map(|p| p.outputs)
            .unwrap_or_default();
        outputs.extend_from_slice(new_outputs);
        return self::plan(&old, list.as_ref(), &new, options, &outputs);
    }
    // A first install: only --enable/--disable change the manifest.
    Ok(Plan {
        enabled: enabled_to_write(None, &new, options),
        enabled_by_flag: true,
        ..Plan::default()
    })
}

/// Carries out `plan` (from [`plan_for`], with `enabled` already written into the staged
/// manifest and `files` the new tree's list): carries the old copy's data into the staged
/// tree and moves what is saved to `.ext-store/backup/<folder>/<time>/`.
pub(crate) fn carry_out(
    store: &Store,
    dirs: &ScopeDirs,
    staging: &Staging,
    folder: &str,
    mut plan: Plan,
    files: FileList,
) -> Result<Prepared> {
    let old = dirs.extension(folder);
    if is_installed(&old) {
        apply(&plan, &old, &staging.tree(), &staging.scratch(SAVED))?;
    }
    if plan.saves() {
        plan.backup = Some(store.keep_backup(staging, SAVED, folder)?);
    }
    crashpoint::hit("carry.done");
    Ok(Prepared { plan, files })
}

/// An installed copy to carry from: a real folder (a linked working copy is not one).
fn is_installed(old: &Path) -> bool {
    fs::symlink_metadata(old).is_ok_and(|m| m.is_dir())
}

/// The folder beside the staged tree where saved entries are gathered.
const SAVED: &str = "saved";

/// At most this many paths per line; then "and N more".
const LISTED: usize = 8;

/// Works out what happens to the installed copy at `old` (listed by `list`, `None` when it
/// has no file list) when the staged tree at `new` replaces it. Changes nothing. What the
/// old copy's preparing made (the list's prepared roots, and `outputs` from its install
/// record, paths relative to it: `node_modules`, `.venv`, a built program) is left out: the
/// new version is prepared afresh, so those go with the old copy instead of being carried
/// over as the user's data. Only a prepared file edited since is saved (never kept over
/// the new version's).
pub(crate) fn plan(
    old: &Path,
    list: Option<&FileList>,
    new: &Path,
    options: Options,
    outputs: &[String],
) -> Result<Plan> {
    let made_by_prepare = |c: &Classified| {
        c.prepared || c.standing == Standing::NotPlaced && filelist::at_or_under(&c.path, outputs)
    };
    let classified = match list {
        Some(list) => list.classify(old)?,
        None => FileList::default().classify(old)?,
    };
    let mut plan = Plan {
        whole_copy_saved: list.is_none(),
        ..Plan::default()
    };
    for entry in classified {
        if made_by_prepare(&entry) {
            if entry.standing == Standing::Edited {
                plan.items
                    .push(item(entry.path, entry.kind, Action::SaveEdited));
            }
            continue;
        }
        match entry.standing {
            Standing::Unchanged | Standing::Missing => {}
            Standing::Edited if manifest_toggled_only(old, list, &entry) => {}
            Standing::Edited => plan_edited(&mut plan, new, list, entry, options),
            Standing::NotPlaced => plan_not_placed(&mut plan, old, new, entry.path, entry.kind)?,
            Standing::Special => plan
                .items
                .push(item(entry.path, entry.kind, Action::SkipSpecial)),
        }
    }
    plan.enabled = enabled_to_write(Some(old), new, options);
    plan.enabled_by_flag = options.enabled.is_some();
    Ok(plan)
}

fn item(raw: Vec<u8>, kind: EntryKind, action: Action) -> Item {
    let slash = if kind == EntryKind::Dir { "/" } else { "" };
    Item {
        path: format!("{}{slash}", filelist::shown(&raw)),
        raw,
        action,
    }
}

fn plan_edited(
    plan: &mut Plan,
    new: &Path,
    list: Option<&FileList>,
    entry: Classified,
    options: Options,
) {
    let new_is_dir = fs::symlink_metadata(join(new, &entry.path)).is_ok_and(|m| m.is_dir());
    let can_keep =
        entry.kind != EntryKind::Dir && !new_is_dir && free_to_write(new, &entry.path, true);
    let action = if can_keep && options.keep_local {
        Action::KeepLocal
    } else if can_keep && options.keep_unchanged_edits && unchanged_upstream(new, list, &entry.path)
    {
        Action::KeepEdited
    } else {
        Action::SaveEdited
    };
    plan.items.push(item(entry.path, entry.kind, action));
}

/// Whether the new version's file at `path` is byte for byte the one the install placed
/// there (its SHA-256 in the installed copy's list): the new version did not change it.
fn unchanged_upstream(new: &Path, list: Option<&FileList>, path: &[u8]) -> bool {
    let Some(placed) = list
        .and_then(|l| l.entries().iter().find(|e| e.path == path))
        .and_then(|e| e.sha256.as_deref())
    else {
        return false;
    };
    let file = join(new, path);
    fs::symlink_metadata(&file).is_ok_and(|m| m.is_file())
        && filelist::hash_file(&file).is_ok_and(|(hash, _)| hash == placed)
}

/// An entry the install did not place: carried when the new tree has nothing there (and
/// its parent is a real folder or can be made), merged when both are folders, else saved.
fn plan_not_placed(
    plan: &mut Plan,
    old: &Path,
    new: &Path,
    path: Vec<u8>,
    kind: EntryKind,
) -> Result<()> {
    let old_meta = fs::symlink_metadata(join(old, &path))?;
    let t = old_meta.file_type();
    if !(t.is_file() || t.is_dir() || t.is_symlink()) {
        plan.items.push(item(path, kind, Action::SkipSpecial));
        return Ok(());
    }
    let there = fs::symlink_metadata(join(new, &path)).ok();
    match there {
        None if free_to_write(new, &path, false) => {
            plan.items.push(item(path, kind, Action::Carry));
        }
        Some(meta) if meta.is_dir() && t.is_dir() && free_to_write(new, &path, true) => {
            for child in fs::read_dir(join(old, &path))? {
                let child = child?;
                let mut sub = path.clone();
                sub.push(b'/');
                sub.extend_from_slice(child.file_name().as_bytes());
                let meta = fs::symlink_metadata(child.path())?;
                // A special file (skipped below) is a `File`, as `classify` has it.
                let kind = filelist::kind_of(&meta, old, &sub).unwrap_or(EntryKind::File);
                plan_not_placed(plan, old, new, sub, kind)?;
            }
        }
        _ => plan.items.push(item(path, kind, Action::SaveReplaced)),
    }
    Ok(())
}

/// Whether every folder above `path` in `new` is a real folder or missing (to be made),
/// so writing there never goes through a link or a file; with `exists_ok`, `path` itself
/// may be there.
fn free_to_write(new: &Path, path: &[u8], exists_ok: bool) -> bool {
    let parts: Vec<&[u8]> = path.split(|b| *b == b'/').collect();
    let mut at = Vec::new();
    for (i, part) in parts.iter().enumerate() {
        if !at.is_empty() {
            at.push(b'/');
        }
        at.extend_from_slice(part);
        let last = i + 1 == parts.len();
        match fs::symlink_metadata(join(new, &at)) {
            Err(_) => return true,
            Ok(_) if last => return exists_ok,
            Ok(meta) if !meta.is_dir() => return false,
            Ok(_) => {}
        }
    }
    true
}

/// An edited `extension.json` whose only change is `enabled` (by `zot ext enable` or
/// `disable`): not a local edit, since `enabled` is carried on its own.
pub(crate) fn manifest_toggled_only(
    old: &Path,
    list: Option<&FileList>,
    entry: &Classified,
) -> bool {
    let (Some(list), true) = (list, entry.path == manifest::FILE.as_bytes()) else {
        return false;
    };
    let Some(listed) = list.get(&entry.path).and_then(|e| e.sha256.clone()) else {
        return false;
    };
    differs_only_in_enabled(old, &listed)
}

/// Whether the new tree `new` (listed as `files`, `enabled` already written) is what the
/// install placed (`placed`), leaving aside the manifest's `enabled`: that value is carried
/// on its own, so an install toggled by `enable`/`disable`, or placed by an update that kept
/// it, is still up to date with the same version.
pub(crate) fn same_as_placed(placed: &FileList, files: &FileList, new: &Path) -> bool {
    if placed.tree_hash() == files.tree_hash() {
        return true;
    }
    let is_manifest = |e: &&crate::store::filelist::Entry| e.path == manifest::FILE.as_bytes();
    // What preparing made is not compared: the new version is not prepared yet.
    let others = |l: &FileList| -> Vec<crate::store::filelist::Entry> {
        l.entries()
            .iter()
            .filter(|e| !is_manifest(e) && !l.is_prepared(&e.path))
            .cloned()
            .collect()
    };
    let (Some(was), Some(now)) = (
        placed.entries().iter().find(is_manifest),
        files.entries().iter().find(is_manifest),
    ) else {
        return false;
    };
    if was.mode != now.mode || others(placed) != others(files) {
        return false;
    }
    let Some(listed) = was.sha256.as_deref() else {
        return false;
    };
    differs_only_in_enabled(new, listed)
}

/// Whether the manifest in `dir`, with `enabled` set either way or left out, hashes to
/// `listed`: it differs from the listed one at most in `enabled`.
fn differs_only_in_enabled(dir: &Path, listed: &str) -> bool {
    let Ok(text) = manifest::load(&dir.join(manifest::FILE)) else {
        return false;
    };
    let candidates = [
        manifest::with_enabled(&text, true),
        manifest::with_enabled(&text, false),
        without_enabled(&text),
    ];
    candidates
        .into_iter()
        .flatten()
        .any(|t| filelist::hex(&Sha256::digest(t.as_bytes())) == listed)
}

/// `text` without its top-level `enabled` members (as placed before `disable` added one).
fn without_enabled(text: &str) -> Option<String> {
    use jsonc_parser::cst::CstRootNode;
    let root = CstRootNode::parse(text, &jsonc_parser::ParseOptions::default()).ok()?;
    let object = root.object_value()?;
    let mut found = false;
    for prop in object.properties() {
        if prop.name().and_then(|n| n.decoded_value().ok()).as_deref() == Some("enabled") {
            prop.remove();
            found = true;
        }
    }
    found.then(|| root.to_string())
}

/// The `enabled` the new manifest must get: `--enable`/`--disable`, else the installed
/// copy's; `None` when the new manifest already says it.
fn enabled_to_write(old: Option<&Path>, new: &Path, options: Options) -> Option<bool> {
    let want = match (options.enabled, old) {
        (Some(want), _) => want,
        (None, Some(old)) => manifest::read(old).ok()?.enabled,
        (None, None) => return None,
    };
    let has = manifest::read(new).ok()?.enabled;
    (want != has).then_some(want)
}

/// Writes the plan's `enabled` into the staged manifest (the same format-preserving edit
/// as `zot ext enable`/`disable`); says whether it wrote. The caller relists the manifest,
/// so the file list holds it as placed.
pub(crate) fn write_enabled(plan: &Plan, new: &Path) -> Result<bool> {
    let Some(enabled) = plan.enabled else {
        return Ok(false);
    };
    let path = new.join(manifest::FILE);
    let shown = printable(&path.display().to_string());
    let text = manifest::load(&path).map_err(|e| anyhow!("{e}"))?;
    let edited = manifest::with_enabled(&text, enabled)
        .ok_or_else(|| anyhow!("{shown}: cannot edit \"enabled\""))?;
    let mode = fs::symlink_metadata(&path)?.permissions().mode();
    fs::remove_file(&path).with_context(|| format!("cannot rewrite {shown}"))?;
    Folder::open_path(new)
        .and_then(|folder| folder.write_new(manifest::FILE, edited.as_bytes(), mode))
        .with_context(|| format!("cannot rewrite {shown}"))?;
    Ok(true)
}

/// Carries the plan out: saved entries are copied under `saved` (a new folder beside the
/// new tree, on the same file system), carried and kept ones into `new`. The installed copy
/// at `old` is only read.
pub(crate) fn apply(plan: &Plan, old: &Path, new: &Path, saved: &Path) -> Result<()> {
    if plan.saves() {
        fs::create_dir(saved).with_context(|| format!("cannot create {}", saved.display()))?;
    }
    if plan.whole_copy_saved {
        copy_into(old, &[], saved, true)?;
    }
    let mut restore = Vec::new();
    for item in &plan.items {
        match item.action {
            Action::Carry => place(old, &item.raw, new, &mut restore)?,
            Action::KeepLocal | Action::KeepEdited => {
                let to = join(new, &item.raw);
                if fs::symlink_metadata(&to).is_ok() {
                    open_parent(&to, &mut restore)?;
                    fs::remove_file(&to)
                        .with_context(|| format!("cannot replace {}", to.display()))?;
                }
                place(old, &item.raw, new, &mut restore)?;
            }
            Action::SaveReplaced | Action::SaveEdited if !plan.whole_copy_saved => {
                copy_into(old, &item.raw, saved, true)?;
            }
            _ => {}
        }
    }
    for (dir, mode) in restore.into_iter().rev() {
        let _ = fs::set_permissions(&dir, fs::Permissions::from_mode(mode));
    }
    Ok(())
}

/// Puts `old/<path>` at `new/<path>`, making missing folders above it like the old ones.
fn place(old: &Path, path: &[u8], new: &Path, restore: &mut Vec<(PathBuf, u32)>) -> Result<()> {
    make_parents(old, path, new, restore)?;
    open_parent(&join(new, path), restore)?;
    copy_into(old, path, new, false)
}

/// Makes the folders above `path` in `new` that are missing, with the old ones' modes.
fn make_parents(
    old: &Path,
    path: &[u8],
    new: &Path,
    restore: &mut Vec<(PathBuf, u32)>,
) -> Result<()> {
    let parts: Vec<&[u8]> = path.split(|b| *b == b'/').collect();
    let mut at = Vec::new();
    for part in &parts[..parts.len() - 1] {
        if !at.is_empty() {
            at.push(b'/');
        }
        at.extend_from_slice(part);
        let to = join(new, &at);
        if fs::symlink_metadata(&to).is_err() {
            open_parent(&to, restore)?;
            fs::create_dir(&to).with_context(|| format!("cannot create {}", to.display()))?;
            if let Ok(meta) = fs::symlink_metadata(join(old, &at)) {
                restore.push((to, meta.permissions().mode()));
            }
        }
    }
    Ok(())
}

/// Makes the folder holding `path` writable for the owner while the carry runs (a staged
/// copy keeps read-only folders read-only); its mode is restored afterwards.
fn open_parent(path: &Path, restore: &mut Vec<(PathBuf, u32)>) -> Result<()> {
    let Some(parent) = path.parent() else {
        return Ok(());
    };
    let meta = fs::symlink_metadata(parent)?;
    let mode = meta.permissions().mode();
    if meta.is_dir() && mode & 0o200 == 0 {
        fs::set_permissions(parent, fs::Permissions::from_mode(mode | 0o700))?;
        restore.push((parent.to_path_buf(), mode));
    }
    Ok(())
}

/// Copies `from_root/<path>` (a file, link or whole folder; `path` empty: the root's
/// contents) to `to_root/<path>`, making missing folders above it. With `copy`, files are
/// always copied (saved copies must not share the installed copy's files); otherwise they
/// are hard-linked when possible. Links are recreated as links; nothing is followed;
/// special files are left out.
pub(crate) fn copy_into(from_root: &Path, path: &[u8], to_root: &Path, copy: bool) -> Result<()> {
    if !path.is_empty() {
        let to = join(to_root, path);
        if let Some(parent) = to.parent() {
            fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
    }
    copy_entry(
        &join(from_root, path),
        &join(to_root, path),
        copy,
        path.is_empty(),
    )
}

fn copy_entry(from: &Path, to: &Path, copy: bool, root: bool) -> Result<()> {
    let meta = fs::symlink_metadata(from)
        .with_context(|| format!("cannot read {}", printable(&from.display().to_string())))?;
    let t = meta.file_type();
    if t.is_symlink() {
        let target = fs::read_link(from)?;
        std::os::unix::fs::symlink(&target, to)
            .with_context(|| format!("cannot create the link {}", to.display()))?;
        set_link_times(to, &meta);
    } else if t.is_dir() {
        if !root {
            fs::create_dir(to).with_context(|| format!("cannot create {}", to.display()))?;
        }
        for child in fs::read_dir(from)? {
            let child = child?;
            copy_entry(&child.path(), &to.join(child.file_name()), copy, false)?;
        }
        if !root {
            fs::set_permissions(to, meta.permissions())?;
            if let Ok(modified) = meta.modified() {
                let _ = fs::File::open(to).and_then(|f| f.set_modified(modified));
            }
        }
    } else if t.is_file() && (copy || fs::hard_link(from, to).is_err()) {
        copy_file(from, to)?;
    }
    Ok(())
}

/// Gives the new link at `to` the access and modification times of the old one (`meta`),
/// on the link itself, never its target. Best effort, as for files and folders.
fn set_link_times(to: &Path, meta: &fs::Metadata) {
    use rustix::fs::{AtFlags, CWD, Timespec, Timestamps, utimensat};
    use std::os::unix::fs::MetadataExt;
    let times = Timestamps {
        last_access: Timespec {
            tv_sec: meta.atime(),
            tv_nsec: meta.atime_nsec() as _,
        },
        last_modification: Timespec {
            tv_sec: meta.mtime(),
            tv_nsec: meta.mtime_nsec() as _,
        },
    };
    let _ = utimensat(CWD, to, &times, AtFlags::SYMLINK_NOFOLLOW);
}

/// A new file at `to` with the content, mode and modification time of the regular file
/// `from`, opened without following a link or blocking.
pub(crate) fn copy_file(from: &Path, to: &Path) -> Result<()> {
    let shown = || printable(&from.display().to_string());
    let flags = OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY;
    let mut source = fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags.bits().cast_signed())
        .open(from)
        .with_context(|| format!("cannot read {}", shown()))?;
    let meta = source.metadata()?;
    if !meta.is_file() {
        return Err(anyhow!(
            "{} changed while it was copied; try again",
            shown()
        ));
    }
    let mut copy = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(to)
        .with_context(|| format!("cannot create {}", to.display()))?;
    io::copy(&mut source, &mut copy).with_context(|| format!("cannot copy {}", shown()))?;
    copy.set_permissions(fs::Permissions::from_mode(
        meta.permissions().mode() & 0o7777,
    ))?;
    if let Ok(modified) = meta.modified() {
        let _ = copy.set_modified(modified);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn write(root: &Path, rel: &str, text: &str) {
        let path = root.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }

    fn setup() -> (tempfile::TempDir, PathBuf, PathBuf, FileList) {
        let t = tempfile::tempdir().unwrap();
        let old = t.path().join("old");
        let new = t.path().join("new");
        for root in [&old, &new] {
            write(root, "extension.json", r#"{"name": "x", "exec": "./run"}"#);
            write(root, "run", "v1");
            write(root, "lib/a.js", "a");
        }
        let list = FileList::scan(&old).unwrap();
        write(&new, "run", "v2");
        (t, old, new, list)
    }

    fn actions(plan: &Plan) -> Vec<(String, Action)> {
        plan.items
            .iter()
            .map(|i| (i.path.clone(), i.action))
            .collect()
    }

    #[test]
    fn what_preparing_made_is_never_carried() {
        let (_t, old, new, list) = setup();
        write(&old, "node_modules/x/index.js", "old");
        write(&old, "node_modules/x/stale.js", "old");
        write(&old, "node_modules_data/keep", "mine");
        write(&old, "state.json", "{}");
        write(&new, "node_modules/x/index.js", "new");
        let outputs = ["node_modules".to_string()];
        let plan = plan(&old, Some(&list), &new, Options::default(), &outputs).unwrap();
        assert_eq!(
            actions(&plan),
            [
                ("node_modules_data/".to_string(), Action::Carry),
                ("state.json".to_string(), Action::Carry),
            ]
        );
    }

    #[test]
    fn data_is_carried_clashes_and_edits_are_saved() {
        let (t, old, new, list) = setup();
        write(&old, "state.json", "{\"n\":1}");
        write(&old, "cache/x/y", "c");
        symlink("/etc/passwd", old.join("outside")).unwrap();
        write(&old, "lib/a.js", "edited");
        write(&old, "lib/b.js", "mine");
        write(&new, "lib/b.js", "theirs");
        let plan = plan(&old, Some(&list), &new, Options::default(), &[]).unwrap();
        assert_eq!(
            actions(&plan),
            [
                ("cache/".to_string(), Action::Carry),
                ("lib/a.js".to_string(), Action::SaveEdited),
                ("lib/b.js".to_string(), Action::SaveReplaced),
                ("outside".to_string(), Action::Carry),
                ("state.json".to_string(), Action::Carry),
            ]
        );
        let saved = t.path().join("saved");
        apply(&plan, &old, &new, &saved).unwrap();
        assert_eq!(
            fs::read_to_string(new.join("state.json")).unwrap(),
            "{\"n\":1}"
        );
        assert_eq!(fs::read_to_string(new.join("cache/x/y")).unwrap(), "c");
        assert_eq!(
            fs::read_link(new.join("outside")).unwrap(),
            Path::new("/etc/passwd")
        );
        assert_eq!(fs::read_to_string(new.join("lib/a.js")).unwrap(), "a");
        assert_eq!(fs::read_to_string(new.join("lib/b.js")).unwrap(), "theirs");
        assert_eq!(
            fs::read_to_string(saved.join("lib/a.js")).unwrap(),
            "edited"
        );
        assert_eq!(fs::read_to_string(saved.join("lib/b.js")).unwrap(), "mine");
        // The old copy is untouched.
        assert_eq!(fs::read_to_string(old.join("lib/a.js")).unwrap(), "edited");
    }

    #[test]
    fn a_socket_in_the_installed_copy_is_skipped_not_fatal() {
        let (t, old, new, list) = setup();
        let _socket = std::os::unix::net::UnixListener::bind(old.join("ipc.sock")).unwrap();
        write(&old, "state.json", "s");
        let plan = plan(&old, Some(&list), &new, Options::default(), &[]).unwrap();
        assert_eq!(
            actions(&plan),
            [
                ("ipc.sock".to_string(), Action::SkipSpecial),
                ("state.json".to_string(), Action::Carry),
            ]
        );
        apply(&plan, &old, &new, &t.path().join("saved")).unwrap();
        assert!(fs::symlink_metadata(new.join("ipc.sock")).is_err());
        assert!(
            plan.lines(true)
                .iter()
                .any(|l| l == "not carried (special files): ipc.sock")
        );
    }

    #[test]
    fn keep_local_keeps_edits() {
        let (t, old, new, list) = setup();
        write(&old, "lib/a.js", "edited");
        let options = Options {
            keep_local: true,
            ..Options::default()
        };
        let plan = plan(&old, Some(&list), &new, options, &[]).unwrap();
        assert_eq!(
            actions(&plan),
            [("lib/a.js".to_string(), Action::KeepLocal)]
        );
        apply(&plan, &old, &new, &t.path().join("saved")).unwrap();
        assert_eq!(fs::read_to_string(new.join("lib/a.js")).unwrap(), "edited");
        assert!(!t.path().join("saved").exists());
    }

    #[test]
    fn nothing_is_written_through_a_link_of_the_new_tree() {
        let (t, old, new, list) = setup();
        let outside = t.path().join("outside");
        fs::create_dir(&outside).unwrap();
        write(&old, "data/state", "s");
        symlink(&outside, new.join("data")).unwrap();
        let plan = plan(&old, Some(&list), &new, Options::default(), &[]).unwrap();
        assert_eq!(
            actions(&plan),
            [("data/".to_string(), Action::SaveReplaced)]
        );
        apply(&plan, &old, &new, &t.path().join("saved")).unwrap();
        assert!(fs::read_dir(&outside).unwrap().next().is_none());
        assert_eq!(
            fs::read_to_string(t.path().join("saved/data/state")).unwrap(),
            "s"
        );
    }

    #[test]
    fn without_a_list_the_whole_copy_is_saved_and_what_is_not_shipped_carried() {
        let (t, old, new, _) = setup();
        write(&old, "state.json", "s");
        let plan = plan(&old, None, &new, Options::default(), &[]).unwrap();
        assert!(plan.whole_copy_saved);
        let saved = t.path().join("saved");
        apply(&plan, &old, &new, &saved).unwrap();
        assert_eq!(fs::read_to_string(saved.join("run")).unwrap(), "v1");
        assert_eq!(fs::read_to_string(new.join("state.json")).unwrap(), "s");
        assert_eq!(fs::read_to_string(new.join("run")).unwrap(), "v2");
    }

    #[test]
    fn enabled_is_kept_and_a_toggled_manifest_is_no_edit() {
        let (_t, old, new, list) = setup();
        let text = fs::read_to_string(old.join("extension.json")).unwrap();
        fs::write(
            old.join("extension.json"),
            manifest::with_enabled(&text, false).unwrap(),
        )
        .unwrap();
        let p = plan(&old, Some(&list), &new, Options::default(), &[]).unwrap();
        assert!(p.items.is_empty(), "{:?}", actions(&p));
        assert_eq!(p.enabled, Some(false));
        write_enabled(&p, &new).unwrap();
        assert!(!manifest::read(&new).unwrap().enabled);
        let on = Options {
            enabled: Some(true),
            ..Options::default()
        };
        assert_eq!(
            plan(&old, Some(&list), &new, on, &[]).unwrap().enabled,
            Some(true)
        );
    }

    #[test]
    fn a_carried_link_keeps_its_own_times() {
        use std::os::unix::fs::MetadataExt;
        let t = tempfile::tempdir().unwrap();
        let (from, to) = (t.path().join("from"), t.path().join("to"));
        symlink("nowhere", &from).unwrap();
        let old = rustix::fs::Timespec {
            tv_sec: 1_500_000_000,
            tv_nsec: 0,
        };
        let times = rustix::fs::Timestamps {
            last_access: old,
            last_modification: old,
        };
        rustix::fs::utimensat(
            rustix::fs::CWD,
            &from,
            &times,
            rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
        )
        .unwrap();
        copy_entry(&from, &to, false, false).unwrap();
        let meta = fs::symlink_metadata(&to).unwrap();
        assert!(meta.file_type().is_symlink());
        assert_eq!(meta.mtime(), 1_500_000_000);
    }
}
