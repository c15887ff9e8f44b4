//! The OCI registry kind: `oci://<registry>/<repository>:<tag>` or `…@sha256:<digest>`, an
//! extension published as an OCI artifact (media types in [`artifact`], docs/oci.md). The
//! helper fetches the manifest, checks it is an extension's, fetches its one layer checking
//! its size and digest, and unpacks it ([`unpack`]) into staging; zot then judges the tree as
//! it judges a copy from disk. The record pins the manifest's digest and keeps the tag, which
//! `update` follows.

pub(crate) mod artifact;
pub(crate) mod reference;
pub(crate) mod registry;
pub(crate) mod stage;
pub(crate) mod unpack;

use std::fs::File;
use std::path::Path;

use anyhow::{Result, anyhow};

use reference::OciRef;
use registry::Registry;

/// `reference` with the tag `tag` when one is given (`update` follows the recorded tag).
pub(crate) fn asked(reference: &OciRef, tag: Option<&str>) -> OciRef {
    match tag {
        Some(tag) => OciRef {
            tag: Some(tag.to_string()),
            ..reference.clone()
        },
        None => reference.clone(),
    }
}

/// The first 12 hexadecimal digits of a digest, for messages.
pub(crate) fn short(digest: &str) -> &str {
    let hex = digest.strip_prefix("sha256:").unwrap_or(digest);
    &hex[..hex.len().min(12)]
}

/// The helper's pull: the manifest, its layer into `layer_file`, unpacked into `tree`; the
/// manifest's digest.
pub(crate) fn pull(reference: &OciRef, tree: &Path, layer_file: &Path) -> Result<String> {
    let shown = crate::output::printable(&reference.to_string());
    let mut registry = Registry::new(reference);
    let (manifest, digest) = registry.manifest()?;
    let layer = artifact::extension_layer(&manifest, &shown).map_err(|e| anyhow!(e))?;
    let mut file = File::create_new(layer_file)
        .map_err(|e| anyhow!("cannot create {}: {e}", layer_file.display()))?;
    registry.blob_to(&layer, &mut file)?;
    drop(file);
    std::fs::create_dir(tree).map_err(|e| anyhow!("cannot create {}: {e}", tree.display()))?;
    // Unpacking receives nothing: the low-speed clock stops meanwhile.
    let _paused = crate::source::git::meter::pause();
    unpack::unpack(unpack::open(layer_file)?, tree, &shown)?;
    Ok(digest)
}

/// The helper's probe: the digest of the manifest `reference` names now.
pub(crate) fn probe(reference: &OciRef) -> Result<String> {
    Registry::new(reference)
        .manifest()
        .map(|(_, digest)| digest)
}
