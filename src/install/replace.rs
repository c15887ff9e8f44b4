//! A newly staged version put in place of the installed copy of the same extension
//! (`update`): the install's sequence (prepare, carry over, publish, record, rotate the
//! backups, exec warnings) with one step before it: the staged tree is compared with what
//! the install placed (the extension's own data does not count, nor `enabled` when the
//! installed copy already has the one wanted), and when nothing would change, nothing is
//! written. A dry run stops after the comparison with what carrying over would do.

use std::path::Path;

use anyhow::Result;

use super::fetch::Staged;
use crate::catalog::manifest;
use crate::catalog::paths::ScopeDirs;
use crate::check::Problem;
use crate::output::Output;
use crate::store::Store;
use crate::store::carry::{self, Plan};
use crate::store::filelist::FileList;
use crate::store::record::Record;

/// The installed copy being replaced.
pub(crate) struct Current<'a> {
    pub dirs: &'a ScopeDirs,
    /// Its folder's name in the extensions root, as the store places it.
    pub folder: &'a str,
    /// That name as the catalog lists it (its file list and record are under it).
    pub dir_name: &'a str,
    /// Its folder.
    pub dir: &'a Path,
}

/// How it is replaced.
pub(crate) struct Replacement<'a> {
    pub carry: carry::Options,
    pub prepare: &'a crate::prepare::Options,
    pub dry_run: bool,
    /// Whether the installed copy's `enabled` is already the one `carry` asks for.
    pub enabled_as_wanted: bool,
}

/// What [`replace`] did.
pub(crate) enum Replaced {
    /// Nothing the install placed would change: the tree stays; the staged record.
    Same(Box<Record>),
    /// A dry run: what carrying over would do.
    Would(Plan),
    /// In place: what was carried over, the warnings about the placed copy, and an error
    /// saving the record (the journal saves it next run).
    Placed {
        carried: Plan,
        warnings: Vec<Problem>,
        record_error: Option<anyhow::Error>,
    },
}

/// The tree hashes of what the install placed (none without a file list) and of the new
/// version as it would be placed.
pub(crate) struct Trees {
    pub placed: Option<String>,
    pub staged: String,
}

/// Replaces `current` with `staged` (see the module documentation). The caller holds the
/// store's lock.
pub(crate) fn replace(
    store: &Store,
    current: &Current<'_>,
    mut staged: Staged,
    how: &Replacement<'_>,
    out: &Output,
) -> Result<(Replaced, Trees)> {
    let Current {
        dirs,
        folder,
        dir_name,
        dir,
    } = *current;
    let tree = staged.staging.tree();
    // The plan first, changing nothing: the kept `enabled` is part of the new version as
    // it would be placed, so it takes part in the comparison.
    let plan = carry::plan_for(dirs, &staged.staging, folder, how.carry, &[])?;
    if carry::write_enabled(&plan, &tree)? {
        staged.files.relist(&tree, manifest::FILE.as_bytes())?;
    }
    let placed = FileList::load(dirs, dir_name);
    let trees = Trees {
        placed: placed.as_ref().map(FileList::tree_hash),
        staged: staged.files.tree_hash(),
    };
    let same = match &placed {
        Some(placed) => {
            carry::same_as_placed(placed, &staged.files, &tree) && how.enabled_as_wanted
        }
        // An older install without a list: the whole folder.
        None => same_tree(&tree, dir),
    };
    if same {
        if placed.is_none() && !how.dry_run {
            // The folder is exactly the new tree: from now on it has a list.
            store.save_files(dir_name, Some(&staged.files))?;
        }
        return Ok((Replaced::Same(Box::new(staged.record)), trees));
    }
    if how.dry_run {
        return Ok((Replaced::Would(plan), trees));
    }
    // What the step made is in the new tree now: the plan is worked out again around it.
    let plan = if super::prepare(&mut staged, how.prepare, out)? {
        let prepared = staged.record.prepared.as_ref();
        let outputs = prepared.map(|p| p.outputs.as_slice());
        carry::plan_for(
            dirs,
            &staged.staging,
            folder,
            how.carry,
            outputs.unwrap_or_default(),
        )?
    } else {
        plan
    };
    // The plan and the list worked out above, carried out: nothing is hashed twice.
    let placed = super::Ready::over(staged, folder, plan).place(store)?;
    let replaced = Replaced::Placed {
        carried: placed.carried.unwrap_or_default(),
        warnings: placed.warnings,
        record_error: placed.record_error,
    };
    Ok((replaced, trees))
}

/// Whether two trees hold the same entries (for an installed copy without a file list):
/// names, kinds, permissions, file contents and link targets. Links are never followed, only regular files are opened (without blocking);
/// anything unreadable, special or past [`COMPARE_LIMIT`] entries counts as a difference.
fn same_tree(a: &Path, b: &Path) -> bool {
    let walk = |root: &Path| {
        walkdir::WalkDir::new(root)
            .min_depth(1)
            .follow_links(false)
            .sort_by_file_name()
            .into_iter()
    };
    let mut left = walk(a);
    let mut right = walk(b);
    for _ in 0..COMPARE_LIMIT {
        match (left.next(), right.next()) {
            (None, None) => return true,
            (Some(Ok(x)), Some(Ok(y))) => {
                let same = x.depth() == y.depth()
                    && x.file_name() == y.file_name()
                    && same_entry(x.path(), y.path());
                if !same {
                    return false;
                }
            }
            _ => return false,
        }
    }
    false
}

/// The most entries [`same_tree`] compares before calling two trees different.
const COMPARE_LIMIT: usize = 100_000;

fn same_entry(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let (Ok(meta_a), Ok(meta_b)) = (std::fs::symlink_metadata(a), std::fs::symlink_metadata(b))
    else {
        return false;
    };
    if meta_a.file_type() != meta_b.file_type()
        || meta_a.permissions().mode() != meta_b.permissions().mode()
    {
        return false;
    }
    let kind = meta_a.file_type();
    if kind.is_dir() {
        true
    } else if kind.is_symlink() {
        matches!(
            (std::fs::read_link(a), std::fs::read_link(b)),
            (Ok(to_a), Ok(to_b)) if to_a == to_b
        )
    } else if kind.is_file() {
        meta_a.len() == meta_b.len() && same_bytes(a, b).unwrap_or(false)
    } else {
        false
    }
}

/// Whether two regular files hold the same bytes (opened without following a link or
/// waiting on a special file put there meanwhile).
fn same_bytes(a: &Path, b: &Path) -> std::io::Result<bool> {
    use std::io::Read;
    fn read_full(file: &mut std::fs::File, buf: &mut [u8]) -> std::io::Result<usize> {
        let mut filled = 0;
        while filled < buf.len() {
            match file.read(&mut buf[filled..])? {
                0 => break,
                n => filled += n,
            }
        }
        Ok(filled)
    }
    let open = |path: &Path| -> std::io::Result<std::fs::File> {
        use rustix::fs::OFlags;
        use std::os::unix::fs::OpenOptionsExt;
        let flags = OFlags::NONBLOCK | OFlags::NOFOLLOW | OFlags::NOCTTY;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(flags.bits().cast_signed())
            .open(path)?;
        if !file.metadata()?.is_file() {
            return Err(std::io::Error::other("not a regular file"));
        }
        Ok(file)
    };
    let (mut file_a, mut file_b) = (open(a)?, open(b)?);
    let (mut buf_a, mut buf_b) = (vec![0u8; 64 * 1024], vec![0u8; 64 * 1024]);
    loop {
        let len_a = read_full(&mut file_a, &mut buf_a)?;
        let len_b = read_full(&mut file_b, &mut buf_b)?;
        if len_a != len_b || buf_a[..len_a] != buf_b[..len_b] {
            return Ok(false);
        }
        if len_a == 0 {
            return Ok(true);
        }
    }
}
