//! What an extension is in a registry: an OCI image manifest whose `artifactType` and media
//! types are this project's own (docs/oci.md), holding the manifest as its config blob and
//! the extension's files as one gzip-compressed tar layer. Published for platforms, the tag
//! names an image index instead: the source manifest (no platform) and one manifest per
//! platform, whose layer is the prepared extension and whose [`PREPARED`] annotation says
//! what preparing ran and made. Only the fields zot reads are kept; a manifest or index is
//! judged here before any blob is asked for.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::platform::Platform;
use super::reference::valid_digest;
use crate::output::printable;
use crate::store::filelist::hex;
use crate::store::record::Prepared;

/// The `artifactType` of an extension's manifest.
pub(crate) const ARTIFACT_TYPE: &str = "application/vnd.zot.extension.v1";
/// The media type of the config blob: the extension's `extension.json`.
pub(crate) const CONFIG_TYPE: &str = "application/vnd.zot.extension.config.v1+json";
/// The media type of the layer: the extension's files as a gzip-compressed tar.
pub(crate) const LAYER_TYPE: &str = "application/vnd.zot.extension.layer.v1.tar+gzip";
/// An OCI image manifest.
pub(crate) const MANIFEST_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";
/// An OCI image index: the source manifest and one per platform.
pub(crate) const INDEX_TYPE: &str = "application/vnd.oci.image.index.v1+json";
/// The annotation of a platform's manifest saying what preparing ran and made (the install
/// record's `prepared`, as JSON): its outputs are listed as prepared when installed.
pub(crate) const PREPARED: &str = "vnd.zot.extension.prepared";
/// Outputs a [`PREPARED`] annotation may name.
const MAX_OUTPUTS: usize = 64;

/// The largest manifest read.
pub(crate) const MAX_MANIFEST: u64 = 4 << 20;
/// The largest layer fetched (compressed); a descriptor that claims more is refused unread.
pub(crate) const MAX_LAYER: u64 = 1 << 30;

/// A digest as the spec writes it: `sha256:` and the hash's hexadecimal digits.
pub(crate) fn digest_from(hash: &[u8]) -> String {
    format!("sha256:{}", hex(hash))
}

/// The digest of `bytes`.
pub(crate) fn digest_of(bytes: &[u8]) -> String {
    digest_from(&Sha256::digest(bytes))
}

/// A content descriptor: what a blob or manifest is, how long and its digest; in an index,
/// the platform it is for (none: the source manifest).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Descriptor {
    pub media_type: String,
    pub digest: String,
    pub size: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<Platform>,
}

/// The fields of an image index zot reads.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Index {
    #[serde(default)]
    artifact_type: Option<String>,
    pub manifests: Vec<Descriptor>,
}

/// What an extension's manifest gives: its layer, and on a platform's manifest what
/// preparing made.
#[derive(Debug)]
pub(crate) struct Extension {
    pub layer: Descriptor,
    pub prepared: Option<Built>,
}

/// A [`PREPARED`] annotation: what preparing ran (the install record's `prepared`, without
/// the time it ran) and the roots of what it made (the file list's prepared roots).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Built {
    #[serde(flatten)]
    pub prepared: Prepared,
    pub roots: Vec<String>,
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
    #[serde(default)]
    annotations: BTreeMap<String, String>,
}

/// `bytes` read as an image index, when they are one (its media type, or `manifests` without
/// one); `Ok(None)` for anything else, which [`extension`] then judges.
pub(crate) fn index(bytes: &[u8], shown: &str) -> Result<Option<Index>, String> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Kind {
        media_type: Option<String>,
        manifests: Option<serde::de::IgnoredAny>,
    }
    let kind: Kind = serde_json::from_slice(bytes)
        .map_err(|e| format!("{shown}: the registry's answer is not an OCI manifest ({e})"))?;
    let is_index = match kind.media_type.as_deref() {
        Some(kind) => kind == INDEX_TYPE,
        None => kind.manifests.is_some(),
    };
    if !is_index {
        return Ok(None);
    }
    let index: Index = serde_json::from_slice(bytes)
        .map_err(|e| format!("{shown}: the image index is not one zot ext reads ({e})"))?;
    if let Some(kind) = index
        .artifact_type
        .as_deref()
        .filter(|k| *k != ARTIFACT_TYPE)
    {
        return Err(format!(
            "{shown} is not a zot extension: its index's artifact type is {}, not {ARTIFACT_TYPE}",
            printable(kind)
        ));
    }
    Ok(Some(index))
}

impl Index {
    /// The manifest to install where `running` runs: the first one built for it, else the
    /// source manifest (no platform). Only image manifests with a well-formed digest count.
    pub(crate) fn pick(&self, running: &Platform, shown: &str) -> Result<&Descriptor, String> {
        let manifests = || {
            self.manifests
                .iter()
                .filter(|m| m.media_type == MANIFEST_TYPE && valid_digest(&m.digest))
                .filter(|m| m.size <= MAX_MANIFEST)
                .filter(|m| m.platform.as_ref().is_none_or(Platform::well_formed))
        };
        let built = manifests().find(|m| m.platform.as_ref().is_some_and(|p| p.runs_on(running)));
        if let Some(found) = built.or_else(|| manifests().find(|m| m.platform.is_none())) {
            return Ok(found);
        }
        let listed: Vec<String> = manifests()
            .filter_map(|m| m.platform.as_ref().map(Platform::to_string))
            .collect();
        Err(format!(
            "{shown}: the index has no manifest for {running} and no source manifest to prepare here (it has {}); publish one with zot ext publish --platform {running}",
            if listed.is_empty() {
                "none".to_string()
            } else {
                printable(&listed.join(", "))
            }
        ))
    }
}

/// The extension the manifest `bytes` holds, once it is judged to be one (see
/// [`layer_of`]), with its [`PREPARED`] annotation read when `built` (a platform's manifest
/// picked from an index).
pub(crate) fn extension(bytes: &[u8], shown: &str, built: bool) -> Result<Extension, String> {
    let manifest: Manifest = serde_json::from_slice(bytes)
        .map_err(|e| format!("{shown}: the manifest is not an OCI image manifest ({e})"))?;
    let layer = layer_of(&manifest, shown)?;
    let annotation = built.then(|| manifest.annotations.get(PREPARED)).flatten();
    let prepared = annotation
        .map(|text| read_prepared(text, shown))
        .transpose()?;
    Ok(Extension { layer, prepared })
}

/// A [`PREPARED`] annotation, its outputs and roots each a relative path inside the
/// extension.
fn read_prepared(text: &str, shown: &str) -> Result<Built, String> {
    let bad = |why: String| format!("{shown}: the manifest's {PREPARED} annotation {why}");
    let built: Built = serde_json::from_str(text)
        .map_err(|e| bad(format!("is not what zot ext publish writes ({e})")))?;
    built.checked().map_err(bad)
}

impl Built {
    /// This annotation when its outputs and roots are at most [`MAX_OUTPUTS`] paths, each
    /// inside the extension; without the publisher's clock.
    pub(crate) fn checked(mut self) -> Result<Built, String> {
        self.check_paths()?;
        self.prepared.ran_at = None;
        Ok(self)
    }

    fn check_paths(&self) -> Result<(), String> {
        let paths = || self.prepared.outputs.iter().chain(&self.roots);
        if paths().count() > MAX_OUTPUTS {
            return Err(format!("names more than {MAX_OUTPUTS} paths"));
        }
        if let Some(outside) = paths().find(|p| !inside(p)) {
            return Err(format!(
                "names {}, not a path inside the extension",
                printable(outside)
            ));
        }
        Ok(())
    }
}

/// Whether `path` is a relative path of names (`a/b`, `./a`; no `..`, not absolute).
fn inside(path: &str) -> bool {
    !path.starts_with('/')
        && !path.contains('\0')
        && path.split('/').any(|part| !part.is_empty() && part != ".")
        && path.split('/').all(|part| part != "..")
}

/// The one layer of `manifest`, once it is judged an extension's: its artifact or config
/// type ours, exactly one layer of our media type, a well-formed digest, a size within
/// [`MAX_LAYER`].
fn layer_of(manifest: &Manifest, shown: &str) -> Result<Descriptor, String> {
    if let Some(kind) = &manifest.media_type
        && kind != MANIFEST_TYPE
    {
        return Err(format!(
            "{shown}: the manifest's media type is {}, not {MANIFEST_TYPE}",
            printable(kind)
        ));
    }
    let kind = manifest
        .artifact_type
        .as_deref()
        .unwrap_or(&manifest.config.media_type);
    if kind != ARTIFACT_TYPE && manifest.config.media_type != CONFIG_TYPE {
        return Err(format!(
            "{shown} is not a zot extension: its artifact type is {}, not {ARTIFACT_TYPE} (publish one with zot ext publish)",
            printable(kind)
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
            printable(&layer.media_type)
        ));
    }
    if !valid_digest(&layer.digest) {
        return Err(format!(
            "{shown}: its layer's digest {} is not sha256: and 64 lowercase hexadecimal digits",
            printable(&layer.digest)
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
        let layer = extension(&manifest(LAYER_TYPE, 10, 1), "x", false)
            .unwrap()
            .layer;
        assert_eq!(layer.size, 10);
    }

    fn index_of(entries: &[(Option<&str>, char)]) -> Vec<u8> {
        let manifests: Vec<String> = entries
            .iter()
            .map(|(platform, digit)| {
                let platform = platform.map_or(String::new(), |p| {
                    let (os, arch) = p.split_once('/').unwrap();
                    format!(r#","platform":{{"os":"{os}","architecture":"{arch}"}}"#)
                });
                format!(
                    r#"{{"mediaType":"{MANIFEST_TYPE}","digest":"sha256:{}","size":9{platform}}}"#,
                    digit.to_string().repeat(64)
                )
            })
            .collect();
        format!(
            r#"{{"schemaVersion":2,"mediaType":"{INDEX_TYPE}","manifests":[{}]}}"#,
            manifests.join(",")
        )
        .into_bytes()
    }

    #[test]
    fn an_index_gives_the_machines_manifest_else_the_source() {
        let amd64 = Platform::parse("linux/amd64").unwrap();
        let both = index_of(&[
            (None, 'a'),
            (Some("linux/arm64"), 'b'),
            (Some("linux/amd64"), 'c'),
        ]);
        let index = index(&both, "x").unwrap().unwrap();
        assert!(index.pick(&amd64, "x").unwrap().digest.ends_with('c'));
        let riscv = Platform::parse("linux/riscv64").unwrap();
        assert!(index.pick(&riscv, "x").unwrap().digest.ends_with('a'));
        let no_source = index_of(&[(Some("linux/arm64"), 'b')]);
        let index = super::index(&no_source, "x").unwrap().unwrap();
        let refused = index.pick(&amd64, "x").unwrap_err();
        assert!(refused.contains("no manifest for linux/amd64"), "{refused}");
        assert!(refused.contains("linux/arm64"), "{refused}");
        assert!(
            super::index(&manifest(LAYER_TYPE, 10, 1), "x")
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn a_platform_with_text_outside_the_grammar_is_never_picked() {
        let hex = |d: char| d.to_string().repeat(64);
        let bytes = format!(
            r#"{{"mediaType":"{INDEX_TYPE}","manifests":[
            {{"mediaType":"{MANIFEST_TYPE}","digest":"sha256:{}","size":9}},
            {{"mediaType":"{MANIFEST_TYPE}","digest":"sha256:{}","size":9,
              "platform":{{"os":"linux","architecture":"amd64","variant":"\u001b[2J"}}}}]}}"#,
            hex('a'),
            hex('b')
        );
        let index = index(bytes.as_bytes(), "x").unwrap().unwrap();
        let amd64 = Platform::parse("linux/amd64").unwrap();
        assert!(index.pick(&amd64, "x").unwrap().digest.ends_with('a'));
    }

    #[test]
    fn a_prepared_annotation_names_paths_inside_the_extension_only() {
        let read = |outputs: &str, roots: &str| {
            read_prepared(
                &format!(
                    r#"{{"step":"go build","tool":"go","outputs":{outputs},"roots":{roots},"ran_at":"then"}}"#
                ),
                "x",
            )
        };
        let built = read(r#"["./bin/hello"]"#, r#"["bin"]"#).unwrap();
        assert_eq!(built.roots, ["bin"]);
        assert_eq!(built.prepared.ran_at, None);
        for bad in [
            r#"["../x"]"#,
            r#"["/etc/passwd"]"#,
            r#"["a/../../b"]"#,
            r#"[""]"#,
        ] {
            assert!(read(bad, "[]").is_err(), "{bad}");
            assert!(read("[]", bad).is_err(), "{bad}");
        }
        assert!(read("[]", "{}").is_err());
    }

    #[test]
    fn other_manifests_are_refused_before_any_blob() {
        let refused = |bytes: &[u8]| extension(bytes, "x", false).unwrap_err();
        assert!(
            refused(&manifest("application/vnd.oci.image.layer.v1.tar", 10, 1))
                .contains("media type")
        );
        assert!(refused(&manifest(LAYER_TYPE, 10, 2)).contains("exactly one layer"));
        assert!(refused(&manifest(LAYER_TYPE, 10 << 30, 1)).contains("claims"));
        assert!(refused(b"[]").contains("not an OCI image manifest"));
    }
}
