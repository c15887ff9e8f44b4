//! A source staged for an install, shared by `install`, `add`, `sync` and `update`: the
//! source's kind fetches it into a fresh staging folder of the store
//! ([`crate::source::Fetch::stage`]); the tree is listed (unless the fetch listed it on the
//! way) and its unsafe mode bits are dropped.

use anyhow::Result;

use crate::catalog::manifest::Manifest;
use crate::output::Output;
use crate::source::Fetch;
use crate::source::copy::LooseLink;
use crate::source::staged::Origin;
use crate::store::filelist::FileList;
use crate::store::record::Record;
use crate::store::{Staging, Store};

/// A validated tree in staging, ready to be placed.
pub(crate) struct Staged {
    pub staging: Staging,
    pub manifest: Manifest,
    pub record: Record,
    /// Symbolic links in the tree that point outside it or nowhere: kept, and reported.
    pub outside_links: Vec<LooseLink>,
    /// Whether the local source's own `.zot/` folder was left out of the copy.
    pub left_out_project_state: bool,
    /// The staged tree's file list (what the install places), hashed once while staging.
    pub files: FileList,
    /// Where the tree came from, for a build that needs more of it (a Go module above).
    pub origin: Option<Origin>,
}

/// Fetches `fetch`'s source into a fresh staging folder of `store` and validates it.
/// Nothing in the extensions root changes.
pub(crate) fn stage(store: &Store, fetch: &Fetch, out: &Output) -> Result<Staged> {
    let staging = store.stage()?;
    let built = fetch.stage(&staging, &store.dirs, out)?;
    let mut files = built.files;
    // Whoever owned the source, the copy is the user's: no set-user-ID, set-group-ID or
    // sticky bit, nothing writable by the group or others.
    files.drop_unsafe_modes(&staging.tree())?;
    crate::fsx::crashpoint::hit("stage.done");
    Ok(Staged {
        staging,
        manifest: built.manifest,
        record: Record {
            subdir: fetch.subdir.map(str::to_string),
            ..built.record
        },
        outside_links: built.outside_links,
        left_out_project_state: built.left_out_project_state,
        files,
        origin: built.origin,
    })
}
