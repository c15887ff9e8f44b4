//! An extension packed as an OCI artifact for `publish`: its files (a staged tree and its
//! file list, so exactly what an install places) as one gzip-compressed tar, entries in the
//! list's order (sorted by path), owners 0, times 0 and the list's modes, links as links;
//! `extension.json` as the config blob; and the manifest with this project's media types and
//! the standard annotations given. Nothing depends on the clock or the machine, so the same
//! files give the same digest.

use std::ffi::OsStr;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::artifact::{
    ARTIFACT_TYPE, CONFIG_TYPE, Descriptor, INDEX_TYPE, LAYER_TYPE, MANIFEST_TYPE, digest_from,
    digest_of,
};
use super::platform::Platform;
use crate::catalog::manifest;
use crate::store::filelist::{EntryKind, FileList};

/// A blob written to a file, with its digest.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Blob {
    pub path: PathBuf,
    pub digest: String,
    pub size: u64,
}

/// What `publish` pushes: the two blobs and the manifest naming them.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Packed {
    pub config: Blob,
    pub layer: Blob,
    pub manifest: String,
    /// The manifest's digest.
    pub digest: String,
}

/// Packs the tree at `tree`, listed by `files`, into `dir` (a new folder), with the manifest
/// annotations `annotations` (`org.opencontainers.image.*` keys and their values).
pub(crate) fn pack(
    tree: &Path,
    files: &FileList,
    dir: &Path,
    annotations: &[(&str, String)],
) -> Result<Packed> {
    std::fs::create_dir(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let layer = write_layer(tree, files, &dir.join("layer.tar.gz"))?;
    let config_bytes = std::fs::read(tree.join(manifest::FILE))
        .with_context(|| format!("cannot read {}", tree.join(manifest::FILE).display()))?;
    let config_path = dir.join("config.json");
    std::fs::write(&config_path, &config_bytes)?;
    let config = Blob {
        path: config_path,
        digest: digest_of(&config_bytes),
        size: config_bytes.len() as u64,
    };
    let manifest = manifest_text(&config, &layer, annotations);
    let digest = digest_of(manifest.as_bytes());
    Ok(Packed {
        config,
        layer,
        manifest,
        digest,
    })
}

impl Packed {
    /// How an index names this manifest, built for `platform` (none: the source).
    pub(crate) fn descriptor(&self, platform: Option<Platform>) -> Descriptor {
        Descriptor {
            media_type: MANIFEST_TYPE.to_string(),
            digest: self.digest.clone(),
            size: self.manifest.len() as u64,
            artifact_type: Some(ARTIFACT_TYPE.to_string()),
            platform,
        }
    }
}

/// An image index of `manifests` (the source's first), with the annotations of the source
/// manifest `source` (its text).
pub(crate) fn index(manifests: &[Descriptor], source: &str) -> String {
    let mut index = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": INDEX_TYPE,
        "artifactType": ARTIFACT_TYPE,
        "manifests": manifests,
    });
    let annotations = serde_json::from_str::<serde_json::Value>(source)
        .ok()
        .and_then(|m| m.get("annotations").cloned());
    if let Some(annotations) = annotations {
        index["annotations"] = annotations;
    }
    index.to_string()
}

fn manifest_text(config: &Blob, layer: &Blob, annotations: &[(&str, String)]) -> String {
    let descriptor = |media_type: &str, blob: &Blob| serde_json::json!({"mediaType": media_type, "digest": blob.digest, "size": blob.size});
    let mut manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": MANIFEST_TYPE,
        "artifactType": ARTIFACT_TYPE,
        "config": descriptor(CONFIG_TYPE, config),
        "layers": [descriptor(LAYER_TYPE, layer)],
    });
    if !annotations.is_empty() {
        let map: serde_json::Map<String, serde_json::Value> = annotations
            .iter()
            .map(|(k, v)| ((*k).to_string(), serde_json::Value::from(v.as_str())))
            .collect();
        manifest["annotations"] = serde_json::Value::Object(map);
    }
    manifest.to_string()
}

/// The layer: every entry of `files` from `tree`, as a gzip-compressed tar at `path`.
fn write_layer(tree: &Path, files: &FileList, path: &Path) -> Result<Blob> {
    let file =
        File::create_new(path).with_context(|| format!("cannot create {}", path.display()))?;
    let hashing = Hashing {
        inner: file,
        hasher: Sha256::new(),
        size: 0,
    };
    let gz = flate2::GzBuilder::new()
        .mtime(0)
        .write(hashing, flate2::Compression::default());
    let mut builder = tar::Builder::new(gz);
    builder.follow_symlinks(false);
    for entry in files.entries() {
        let rel = Path::new(OsStr::from_bytes(&entry.path));
        let mut header = tar::Header::new_gnu();
        header.set_mode(entry.mode);
        header.set_uid(0);
        header.set_gid(0);
        header.set_mtime(0);
        let shown = || format!("cannot pack {}", rel.display());
        match entry.kind {
            EntryKind::Dir => {
                header.set_entry_type(tar::EntryType::Directory);
                header.set_size(0);
                builder
                    .append_data(&mut header, rel, io::empty())
                    .with_context(shown)?;
            }
            EntryKind::File => {
                let source = OpenOptions::new()
                    .read(true)
                    .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
                    .open(tree.join(rel))
                    .with_context(shown)?;
                header.set_entry_type(tar::EntryType::Regular);
                header.set_size(entry.size);
                let body = io::Read::take(source, entry.size);
                builder
                    .append_data(&mut header, rel, body)
                    .with_context(shown)?;
            }
            EntryKind::Link => {
                let target = entry.target.as_deref().unwrap_or_default();
                header.set_entry_type(tar::EntryType::Symlink);
                header.set_size(0);
                builder
                    .append_link(&mut header, rel, Path::new(OsStr::from_bytes(target)))
                    .with_context(shown)?;
            }
        }
    }
    let gz = builder.into_inner().context("cannot finish the layer")?;
    let mut hashing = gz.finish().context("cannot finish the layer")?;
    hashing.flush()?;
    Ok(Blob {
        path: path.to_path_buf(),
        digest: digest_from(&hashing.hasher.finalize()),
        size: hashing.size,
    })
}

/// A writer that hashes and counts what passes through it.
struct Hashing {
    inner: File,
    hasher: Sha256,
    size: u64,
}

impl Write for Hashing {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.size += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("t");
        std::fs::create_dir_all(root.join("bin")).unwrap();
        std::fs::write(
            root.join("extension.json"),
            r#"{"name":"x","exec":"bin/x"}"#,
        )
        .unwrap();
        std::fs::write(root.join("bin/x"), "#!/bin/sh\n").unwrap();
        std::os::unix::fs::symlink("bin/x", root.join("again")).unwrap();
        dir
    }

    #[test]
    fn the_same_files_pack_to_the_same_digest_and_unpack_to_the_same_list() {
        let dir = tree();
        let root = dir.path().join("t");
        let files = FileList::scan(&root).unwrap();
        let notes = [("org.opencontainers.image.version", "1.0.0".to_string())];
        let first = pack(&root, &files, &dir.path().join("a"), &notes).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(1100));
        let second = pack(&root, &files, &dir.path().join("b"), &notes).unwrap();
        assert_eq!(first.digest, second.digest);
        assert_eq!(first.layer.digest, second.layer.digest);
        assert!(
            first
                .manifest
                .contains(r#""org.opencontainers.image.version":"1.0.0""#)
        );
        let out = dir.path().join("out");
        std::fs::create_dir(&out).unwrap();
        super::super::unpack::unpack(File::open(&first.layer.path).unwrap(), &out, "x").unwrap();
        assert_eq!(FileList::scan(&out).unwrap().tree_hash(), files.tree_hash());
    }
}
