//! The OCI registry kind: `oci://<registry>/<repository>:<tag>` or `…@sha256:<digest>`, an
//! extension published as an OCI artifact (media types in [`artifact`], docs/oci.md). The
//! helper fetches the manifest, checks it is an extension's, fetches its one layer checking
//! its size and digest, and unpacks it ([`unpack`]) into staging; zot then judges the tree as
//! it judges a copy from disk. The record pins the manifest's digest and keeps the tag, which
//! `update` follows.

pub(crate) mod artifact;
pub(crate) mod credentials;
pub(crate) mod pack;
pub(crate) mod reference;
pub(crate) mod registry;
pub(crate) mod stage;
pub(crate) mod unpack;

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

/// The helper's pull: the manifest, then its layer unpacked into `tree` as it arrives, the
/// layer's length and digest checked at its end (a layer that fails them leaves `tree` to
/// the staging folder, which is deleted: nothing is placed); the manifest's digest.
pub(crate) fn pull(reference: &OciRef, tree: &Path) -> Result<String> {
    let shown = crate::output::printable(&reference.to_string());
    let mut registry = Registry::new(reference);
    let (manifest, digest) = registry.manifest()?;
    let layer = artifact::extension_layer(&manifest, &shown).map_err(|e| anyhow!(e))?;
    let mut stream = registry.blob(&layer)?;
    std::fs::create_dir(tree).map_err(|e| anyhow!("cannot create {}: {e}", tree.display()))?;
    unpack::unpack(&mut stream, tree, &shown)?;
    stream.finish()?;
    Ok(digest)
}

/// The helper's push of `packed` to the tag `reference` names: its blobs (those the
/// repository lacks), then its manifest; the manifest's digest.
pub(crate) fn push(reference: &OciRef, packed: &pack::Packed) -> Result<String> {
    // Sending receives nothing: the low-speed clock stops (each call is bounded on its own).
    let _paused = crate::source::git::meter::pause();
    let mut registry = Registry::new(reference);
    registry.push_blob(&packed.config.path, &packed.config.digest)?;
    registry.push_blob(&packed.layer.path, &packed.layer.digest)?;
    registry.push_manifest(packed.manifest.as_bytes())?;
    Ok(packed.digest.clone())
}

/// The helper's probe: the digest of the manifest `reference` names now.
pub(crate) fn probe(reference: &OciRef) -> Result<String> {
    Registry::new(reference)
        .manifest()
        .map(|(_, digest)| digest)
}
