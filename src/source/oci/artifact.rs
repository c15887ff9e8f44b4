//! What an extension is in a registry: an OCI image manifest whose `artifactType` and media
//! types are this project's own (docs/oci.md), holding the manifest as its config blob and
//! the extension's files as one gzip-compressed tar layer. Only the fields zot reads are
//! kept; a manifest is judged here before any blob is asked for.

use serde::Deserialize;

use super::reference::valid_digest;

/// The `artifactType` of an extension's manifest.
pub(crate) const ARTIFACT_TYPE: &str = "application/vnd.zot.extension.v1";
/// The media type of the config blob: the extension's `extension.json`.
pub(crate) const CONFIG_TYPE: &str = "application/vnd.zot.extension.config.v1+json";
/// The media type of the layer: the extension's files as a gzip-compressed tar.
pub(crate) const LAYER_TYPE: &str = "application/vnd.zot.extension.layer.v1.tar+gzip";
/// An OCI image manifest.
pub(crate) const MANIFEST_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";

/// The largest manifest read.
pub(crate) const MAX_MANIFEST: u64 = 4 << 20;
/// The largest layer fetched (compressed); a descriptor that claims more is refused unread.
pub(crate) const MAX_LAYER: u64 = 1 << 30;

/// A content descriptor: what a blob is, how long and its digest.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Descriptor {
    pub media_type: String,
    pub digest: String,
    pub size: u64,
}

/// The fields of an image manifest zot reads.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Manifest {
    #[serde(default)]
    media_type: Option<String>,
    #[serde(default)]
    artifact_type: Option<String>,
    config: Descriptor,
    layers: Vec<Descriptor>,
}

/// The one layer of an extension's manifest, once the manifest is judged to be one.
pub(crate) fn extension_layer(bytes: &[u8], shown: &str) -> Result<Descriptor, String> {
    let manifest: Manifest = serde_json::from_slice(bytes)
        .map_err(|e| format!("{shown}: the manifest is not an OCI image manifest ({e})"))?;
    if let Some(kind) = &manifest.media_type
        && kind != MANIFEST_TYPE
    {
        return Err(format!(
            "{shown}: the manifest's media type is {}, not {MANIFEST_TYPE}",
            crate::output::printable(kind)
        ));
    }
    let kind = manifest
        .artifact_type
        .as_deref()
        .unwrap_or(&manifest.config.media_type);
    if kind != ARTIFACT_TYPE && manifest.config.media_type != CONFIG_TYPE {
        return Err(format!(
            "{shown} is not a zot extension: its artifact type is {}, not {ARTIFACT_TYPE} (publish one with zot ext publish)",
            crate::output::printable(kind)
        ));
    }
    let [layer] = manifest.layers.as_slice() else {
        return Err(format!(
            "{shown}: an extension's manifest has exactly one layer, this one has {}",
            manifest.layers.len()
        ));
    };
    if layer.media_type != LAYER_TYPE {
        return Err(format!(
            "{shown}: its layer is of the media type {}, not {LAYER_TYPE}; nothing was installed",
            crate::output::printable(&layer.media_type)
        ));
    }
    if !valid_digest(&layer.digest) {
        return Err(format!(
            "{shown}: its layer's digest {} is not sha256: and 64 lowercase hexadecimal digits",
            crate::output::printable(&layer.digest)
        ));
    }
    if layer.size > MAX_LAYER {
        return Err(format!(
            "{shown}: its layer claims {} bytes, more than the {} zot ext fetches; nothing was fetched",
            layer.size, MAX_LAYER
        ));
    }
    Ok(layer.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(layer_type: &str, size: u64, layers: usize) -> Vec<u8> {
        let layer = format!(
            r#"{{"mediaType":"{layer_type}","digest":"sha256:{}","size":{size}}}"#,
            "a".repeat(64)
        );
        let layers = vec![layer; layers].join(",");
        format!(
            r#"{{"schemaVersion":2,"mediaType":"{MANIFEST_TYPE}","artifactType":"{ARTIFACT_TYPE}",
            "config":{{"mediaType":"{CONFIG_TYPE}","digest":"sha256:{}","size":2}},"layers":[{layers}]}}"#,
            "b".repeat(64)
        )
        .into_bytes()
    }

    #[test]
    fn an_extension_manifest_gives_its_layer() {
        let layer = extension_layer(&manifest(LAYER_TYPE, 10, 1), "x").unwrap();
        assert_eq!(layer.size, 10);
    }

    #[test]
    fn other_manifests_are_refused_before_any_blob() {
        let refused = |bytes: &[u8]| extension_layer(bytes, "x").unwrap_err();
        assert!(
            refused(&manifest("application/vnd.oci.image.layer.v1.tar", 10, 1))
                .contains("media type")
        );
        assert!(refused(&manifest(LAYER_TYPE, 10, 2)).contains("exactly one layer"));
        assert!(refused(&manifest(LAYER_TYPE, 10 << 30, 1)).contains("claims"));
        assert!(refused(b"[]").contains("not an OCI image manifest"));
    }
}
