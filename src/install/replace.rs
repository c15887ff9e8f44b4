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
        // An older install without a list: the whole folder, listed now (anything it cannot
        // list, a special file or more than COMPARE_LIMIT entries, makes it differ).
        None => FileList::scan_at_most(dir, COMPARE_LIMIT)
            .is_ok_and(|installed| installed.tree_hash() == trees.staged),
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

/// The most entries an installed copy without a file list is listed with before it is
/// taken to differ from the new version.
const COMPARE_LIMIT: usize = 100_000;
