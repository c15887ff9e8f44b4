//! The zot side of the OCI kind: the helper pulls into staging, then the tree is judged as
//! every staged tree is, and the record pins the manifest digest and keeps the tag.

use std::path::Path;

use anyhow::{Result, anyhow};

use super::reference::OciRef;
use super::{asked, short};
use crate::catalog::manifest;
use crate::output::Output;
use crate::source::copy;
use crate::source::helper;
use crate::source::staged::{Built, real_subdir, validate};
use crate::store::Staging;
use crate::store::filelist::FileList;
use crate::store::record::{Kind, Record};

/// Fetches the extension `reference` names (at `tag` when given) into `staging` through the
/// helper, and judges the tree as every staged tree is judged.
pub(crate) fn stage(
    staging: &Staging,
    reference: &OciRef,
    tag: Option<&str>,
    subdir: Option<&Path>,
    out: &Output,
) -> Result<Built> {
    let asked = asked(reference, tag);
    let unpacked = match subdir {
        Some(_) => staging.scratch("unpacked"),
        None => staging.tree(),
    };
    let digest = helper::pull(&asked, &unpacked, out)?;
    let label = format!("{} ({})", asked.unpinned(), short(&digest));
    if let Some(sub) = subdir {
        let folder = real_subdir(&unpacked, sub, &label)?;
        std::fs::rename(&folder, staging.tree())
            .map_err(|e| anyhow!("cannot move {} into staging: {e}", folder.display()))?;
    }
    let tree = staging.tree();
    let files = FileList::scan(&tree)?;
    let prefix = format!("{label}: ");
    let outside_links =
        copy::links_listed(&tree, &files).map_err(|e| copy::shown_after(&tree, &prefix, &e))?;
    let manifest = validate(staging, Path::new(&format!("{label}: {}", manifest::FILE)))?;
    let record = Record {
        // What `update` follows: the tag (`latest` when none was given), unless a digest
        // pinned the install.
        git_ref: match asked.digest {
            Some(_) => None,
            None => Some(asked.reference().to_string()),
        },
        digest: Some(digest),
        ..Record::new(&manifest.name, recorded(reference), Kind::Oci)
    };
    Ok(Built {
        manifest,
        record,
        origin: None,
        outside_links,
        left_out_project_state: false,
        files,
    })
}

/// The source an install record keeps: the repository, without tag or digest (the record
/// holds those apart).
fn recorded(reference: &OciRef) -> String {
    OciRef {
        tag: None,
        digest: None,
        ..reference.clone()
    }
    .to_string()
}
