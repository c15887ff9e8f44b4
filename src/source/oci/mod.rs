//! The OCI registry kind: `oci://<registry>/<repository>:<tag>` or `…@sha256:<digest>`, an
//! extension published as an OCI artifact (media types in [`artifact`], docs/oci.md). The
//! helper fetches the manifest, checks it is an extension's, fetches its one layer checking
//! its size and digest, and unpacks it ([`unpack`]) into staging; zot then judges the tree as
//! it judges a copy from disk. The record pins the manifest's digest and keeps the tag, which
//! `update` follows.

pub(crate) mod artifact;
pub(crate) mod credentials;
pub(crate) mod pack;
pub(crate) mod platform;
pub(crate) mod reference;
pub(crate) mod registry;
pub(crate) mod stage;
pub(crate) mod unpack;
pub(crate) mod verified;

use std::path::Path;

use anyhow::{Result, anyhow};
use serde::{Deserialize, Serialize};

use artifact::Descriptor;
use platform::Platform;
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

/// What a pull fetched: the digest the reference names (a manifest, or an index), and when
/// the index held a manifest built for this machine, its platform and what preparing made.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Pulled {
    pub digest: String,
    #[serde(default)]
    pub platform: Option<Platform>,
    #[serde(default)]
    pub prepared: Option<artifact::Built>,
    /// The layer's digest (a pull).
    #[serde(default)]
    pub layer: Option<String>,
}

/// The helper's pull: the manifest (from an index, the one built for this machine, else the
/// source), then its layer unpacked into `tree` as it arrives, the layer's length and digest
/// checked at its end (a layer that fails them leaves `tree` to the staging folder, which is
/// deleted: nothing is placed); the compressed layer is written to `keep` (a new file) on
/// the way, when given, for the fetch cache.
pub(crate) fn pull(reference: &OciRef, tree: &Path, keep: Option<&Path>) -> Result<Pulled> {
    let shown = crate::output::printable(&reference.to_string());
    let mut registry = Registry::new(reference);
    let (top, digest) = registry.manifest()?;
    let (manifest, platform) = match artifact::index(&top, &shown).map_err(|e| anyhow!(e))? {
        None => (top, None),
        Some(index) => {
            let entry = index
                .pick(&Platform::running(), &shown)
                .map_err(|e| anyhow!(e))?;
            (registry.manifest_at(entry)?, entry.platform.clone())
        }
    };
    let extension =
        artifact::extension(&manifest, &shown, platform.is_some()).map_err(|e| anyhow!(e))?;
    let stream = registry.blob(&extension.layer)?;
    std::fs::create_dir(tree).map_err(|e| anyhow!("cannot create {}: {e}", tree.display()))?;
    let kept = keep
        .map(|path| {
            std::fs::File::create_new(path)
                .map_err(|e| anyhow!("cannot create {}: {e}", path.display()))
        })
        .transpose()?;
    let mut stream = Kept { stream, kept };
    unpack::unpack(&mut stream, tree, &shown)?;
    // To its end: what is kept is the whole layer, and its length and digest are checked.
    std::io::copy(&mut stream, &mut std::io::sink())?;
    Ok(Pulled {
        digest,
        platform,
        prepared: extension.prepared,
        layer: Some(extension.layer.digest),
    })
}

/// A layer as it is read, written to a file too when one is given.
struct Kept {
    stream: verified::Verified,
    kept: Option<std::fs::File>,
}

impl std::io::Read for Kept {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.stream.read(buf)?;
        if let Some(file) = &mut self.kept {
            std::io::Write::write_all(file, &buf[..n])?;
        }
        Ok(n)
    }
}

/// One platform's prepared extension, packed for `publish --platform`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ForPlatform {
    pub platform: Platform,
    pub packed: pack::Packed,
}

/// What a push put under the tag: its digest (the manifest's, or the index's), and the
/// platforms the index there before kept (published from elsewhere for the same source).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Pushed {
    pub digest: String,
    #[serde(default)]
    pub kept: Vec<Platform>,
}

/// The helper's push of `packed` to the tag `reference` names: its blobs (those the
/// repository lacks), then its manifest. With `platforms`, each one's blobs and manifest
/// too, and the tag names an image index of them all: the source manifest first, then one
/// per platform, those of the index the tag named before kept when it indexed the same
/// source manifest (so machines of each platform can publish theirs in turn).
pub(crate) fn push(
    reference: &OciRef,
    packed: &pack::Packed,
    platforms: &[ForPlatform],
) -> Result<Pushed> {
    // Sending receives nothing: the low-speed clock stops (each call is bounded on its own).
    let _paused = crate::source::meter::pause();
    let mut registry = Registry::new(reference);
    let tag = reference.reference().to_string();
    if platforms.is_empty() {
        push_manifest(&mut registry, packed, &tag)?;
        return Ok(Pushed {
            digest: packed.digest.clone(),
            kept: Vec::new(),
        });
    }
    let before = registry.tagged()?;
    push_manifest(&mut registry, packed, &packed.digest)?;
    for built in platforms {
        push_manifest(&mut registry, &built.packed, &built.packed.digest)?;
    }
    let ours: Vec<Platform> = platforms.iter().map(|p| p.platform.clone()).collect();
    let kept = before
        .map(|bytes| kept_from(&bytes, packed, &ours))
        .unwrap_or_default();
    let mut manifests: Vec<_> = platforms
        .iter()
        .map(|p| p.packed.descriptor(Some(p.platform.clone())))
        .chain(kept.iter().cloned())
        .collect();
    manifests.sort_by(|a, b| a.platform.cmp(&b.platform));
    manifests.insert(0, packed.descriptor(None));
    let index = pack::index(&manifests, &packed.manifest);
    registry.push_manifest(index.as_bytes(), artifact::INDEX_TYPE, &tag)?;
    Ok(Pushed {
        digest: artifact::digest_of(index.as_bytes()),
        kept: kept.into_iter().filter_map(|d| d.platform).collect(),
    })
}

/// A manifest's blobs (those the repository lacks), then the manifest, under `name`.
fn push_manifest(registry: &mut Registry, packed: &pack::Packed, name: &str) -> Result<()> {
    registry.push_blob(&packed.config.path, &packed.config.digest)?;
    registry.push_blob(&packed.layer.path, &packed.layer.digest)?;
    registry.push_manifest(packed.manifest.as_bytes(), artifact::MANIFEST_TYPE, name)
}

/// The platform manifests of the index `before` (what the tag named) worth keeping: those
/// for platforms not published now, when it indexes the same source manifest as `packed`.
fn kept_from(before: &[u8], packed: &pack::Packed, ours: &[Platform]) -> Vec<Descriptor> {
    let Ok(Some(index)) = artifact::index(before, "") else {
        return Vec::new();
    };
    let same_source = index
        .manifests
        .iter()
        .any(|m| m.platform.is_none() && m.digest == packed.digest);
    if !same_source {
        return Vec::new();
    }
    index
        .manifests
        .into_iter()
        .filter(|m| m.media_type == artifact::MANIFEST_TYPE)
        .filter(|m| {
            let platform = m.platform.as_ref();
            platform.is_some_and(|p| p.well_formed() && !ours.contains(p))
        })
        .collect()
}

/// The helper's probe: the digest of the manifest `reference` names now.
pub(crate) fn probe(reference: &OciRef) -> Result<String> {
    Registry::new(reference)
        .manifest()
        .map(|(_, digest)| digest)
}
