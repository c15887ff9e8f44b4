//! Swapping an installed copy for a new tree of itself, shared by `update`
//! ([`super::replace`]) and `prepare` ([`super::again`]).

use anyhow::Result;

use super::fetch::Staged;
use crate::store::carry::{self, Plan};
use crate::store::filelist::FileList;
use crate::store::{Published, Store};

/// Carries `plan` out in `staged`'s tree (the replaced copy's runtime files over, its edits
/// kept or saved) and publishes the tree over the installed copy in `folder` with its
/// record and `files` through the journal, then deletes the oldest saved copies: the one
/// way an installed copy is swapped for a new tree of itself (`update`, `prepare`). What
/// carrying over did, and the publication.
pub(crate) fn swap_in(
    store: &Store,
    staged: &Staged,
    folder: &str,
    plan: Plan,
    files: FileList,
) -> Result<(Plan, Published)> {
    let carried = carry::carry_out(store, &store.dirs, &staged.staging, folder, plan, files)?;
    let published = store.publish_listed(
        &staged.staging,
        folder,
        true,
        &staged.record,
        Some(&carried.files),
    )?;
    let _ = store.rotate_backups(folder);
    Ok((carried.plan, published))
}
