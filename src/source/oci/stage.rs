//! The zot side of the OCI kind: a manifest digest the fetch cache holds for this repository
//! is unpacked from the layer kept there (no network); otherwise the helper pulls into
//! staging, keeping the compressed layer beside, and that is cached under the digest (for a
//! manifest built for a platform, with its platform and annotation). Then the tree is judged
//! as every staged tree is, and the record pins the manifest digest and keeps the tag.

use std::path::Path;

use anyhow::{Result, anyhow, bail};

use serde::{Deserialize, Serialize};

use super::artifact;
use super::asked;
use super::platform::Platform;
use super::reference::OciRef;
use super::unpack;
use super::verified::Verified;
use crate::catalog::manifest;
use crate::output::Output;
use crate::output::printable;
use crate::source::copy::{self, Leads, LooseLink};
use crate::source::git::cache::Cache;
use crate::source::helper;
use crate::source::staged::{Built, real_subdir, short, validate, while_flushing};
use crate::store::Staging;
use crate::store::filelist::FileList;
use crate::store::record::{Kind, Record};

/// Fetches the extension `reference` names (at `tag` when given) into `staging` through the
/// helper, and judges the tree as every staged tree is judged.
pub(crate) fn stage(
    staging: &Staging,
    reference: &OciRef,
    tag: Option<&str>,
    cache: Option<&Cache>,
    subdir: Option<&Path>,
    out: &Output,
) -> Result<Built> {
    let asked = asked(reference, tag);
    let unpacked = match subdir {
        Some(_) => staging.scratch("unpacked"),
        None => staging.tree(),
    };
    let source = recorded(reference);
    let shown = printable(&asked.to_string());
    let cached = match (cache, asked.digest.as_deref()) {
        (Some(cache), Some(digest)) => from_cache(
            staging,
            cache,
            cache_key(digest),
            &source,
            &shown,
            &unpacked,
        )?,
        _ => None,
    };
    let keep = staging.scratch("layer");
    let pulled = if cached.is_some() {
        None
    } else {
        Some(helper::pull(
            &asked,
            &unpacked,
            cache.map(|_| keep.as_path()),
            out,
        )?)
    };
    let digest = match &pulled {
        Some(pulled) => pulled.digest.clone(),
        None => asked.digest.clone().unwrap_or_default(),
    };
    let built = match (&pulled, cached) {
        (Some(p), _) => p.platform.clone().map(|platform| BuiltFor {
            platform,
            prepared: p.prepared.clone(),
        }),
        (None, cached) => cached.and_then(|hit| hit.built),
    };
    let label = format!("{} ({})", asked.unpinned(), short(&digest));
    let prefix = format!("{label}: ");
    // The unpacked files go to the disk while they are listed and judged, so the flush
    // before the install is placed has little left to write.
    let (files, links) = while_flushing(&unpacked, || -> Result<_> {
        let files = FileList::scan(&unpacked)?;
        let links = copy::links_listed(&unpacked, &files)
            .map_err(|e| copy::shown_after(&unpacked, &prefix, &e))?;
        Ok((files, links))
    })?;
    refuse_links_out(&label, &links)?;
    // Cached once judged: a layer refused here is not kept for the next install.
    if let (Some(cache), Some(pulled)) = (cache, &pulled) {
        keep_layer(cache, &digest, &source, &keep, pulled, built.as_ref(), out)?;
    }
    let (files, outside_links) = match subdir {
        None => (files, links),
        Some(sub) => {
            let folder = real_subdir(&unpacked, sub, &label)?;
            std::fs::rename(&folder, staging.tree())
                .map_err(|e| anyhow!("cannot move {} into staging: {e}", folder.display()))?;
            let tree = staging.tree();
            let files = FileList::scan(&tree)?;
            let links = copy::links_listed(&tree, &files)
                .map_err(|e| copy::shown_after(&tree, &prefix, &e))?;
            (files, links)
        }
    };
    let mut files = files;
    if let Some(BuiltFor {
        prepared: Some(built),
        ..
    }) = &built
    {
        files
            .mark_prepared(&built.roots)
            .map_err(|e| anyhow!("{label}: {e:#}"))?;
    }
    let manifest = validate(staging, Path::new(&format!("{label}: {}", manifest::FILE)))?;
    let record = Record {
        // What `update` follows: the tag (`latest` when none was given), unless a digest
        // pinned the install.
        git_ref: match asked.digest {
            Some(_) => None,
            None => Some(asked.reference().to_string()),
        },
        digest: Some(digest),
        platform: built.as_ref().map(|b| b.platform.to_string()),
        prepared: built.and_then(|b| b.prepared).map(|b| b.prepared),
        ..Record::new(&manifest.name, source, Kind::Oci)
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

/// Refuses a tree with a link that leads out of it: a stranger's archive may not (a folder's
/// such links are only listed). Judged on the tree as unpacked, links followed inside it,
/// not on names alone.
fn refuse_links_out(label: &str, links: &[LooseLink]) -> Result<()> {
    let out: Vec<LooseLink> = links
        .iter()
        .filter(|l| l.leads == Leads::Outside)
        .cloned()
        .collect();
    if out.is_empty() {
        return Ok(());
    }
    bail!(
        "{label}: the layer holds {}: {}; nothing was installed",
        copy::loose_summary(&out),
        copy::list_links(&out)
    )
}

/// Keeps the layer `pulled` left at `keep` in `cache` under `digest` for `source`; a manifest
/// built for a platform keeps beside it what its manifest said it is (`built`). A layer
/// that cannot be kept is only a note.
fn keep_layer(
    cache: &Cache,
    digest: &str,
    source: &str,
    keep: &Path,
    pulled: &super::Pulled,
    built: Option<&BuiltFor>,
    out: &Output,
) -> Result<()> {
    let Some(layer) = pulled.layer.as_deref() else {
        return Ok(());
    };
    let about = built.map(serde_json::to_string).transpose()?;
    if let Err(e) = cache.put_layer(cache_key(digest), source, keep, layer, about.as_deref()) {
        out.note(&format!(
            "note: {source} ({}) was not cached: {e:#}",
            short(digest)
        ));
    }
    Ok(())
}

/// A layer the fetch cache served: for a manifest built for a platform, what it is.
struct Hit {
    built: Option<BuiltFor>,
}

/// A manifest built for a platform: the platform, and what its annotation says preparing
/// ran and made. Kept beside its layer in the fetch cache.
#[derive(Serialize, Deserialize)]
struct BuiltFor {
    platform: Platform,
    #[serde(default)]
    prepared: Option<artifact::Built>,
}

impl BuiltFor {
    /// What the cache kept beside a layer, when it reads as a manifest built for this
    /// machine says; `Err` when it does not read (the entry is fetched again).
    fn kept(about: &str) -> Result<Option<BuiltFor>, ()> {
        let kept: BuiltFor = serde_json::from_str(about).map_err(drop)?;
        if !kept.platform.well_formed() {
            return Err(());
        }
        if !kept.platform.runs_on(&Platform::running()) {
            return Ok(None);
        }
        let prepared = kept.prepared.map(artifact::Built::checked).transpose();
        Ok(Some(BuiltFor {
            platform: kept.platform,
            prepared: prepared.map_err(drop)?,
        }))
    }
}

/// Unpacks the layer the cache keeps for `key` fetched from `source` into `into`, checked
/// against its digest as it is read (through a scratch folder, so a layer that fails leaves
/// nothing there; its entry is then deleted). `None` when it did not; else, for a manifest
/// built for a platform (this machine's), what it is.
fn from_cache(
    staging: &Staging,
    cache: &Cache,
    key: &str,
    source: &str,
    shown: &str,
    into: &Path,
) -> Result<Option<Hit>> {
    let Some(kept) = cache.layer(key, source)? else {
        return Ok(None);
    };
    let built = match kept.about.as_deref().map(BuiltFor::kept) {
        None => None,
        Some(Ok(Some(built))) => Some(built),
        // Built for another platform (a home shared by machines): asked of the registry.
        Some(Ok(None)) => return Ok(None),
        Some(Err(())) => {
            cache.forget(key);
            return Ok(None);
        }
    };
    let mut layer = Verified::new(
        Box::new(kept.file),
        &kept.digest,
        kept.size,
        shown.to_string(),
    );
    let scratch = staging.scratch("cached");
    let unpacked = std::fs::create_dir(&scratch)
        .map_err(anyhow::Error::from)
        .and_then(|()| unpack::unpack(&mut layer, &scratch, shown))
        .and_then(|()| Ok(layer.finish()?));
    if unpacked.is_err() {
        // Whatever is wrong with the entry, it is fetched again.
        cache.forget(key);
        return Ok(None);
    }
    std::fs::rename(&scratch, into)
        .map_err(|e| anyhow!("cannot move {} into staging: {e}", scratch.display()))?;
    Ok(Some(Hit { built }))
}

/// What the fetch cache keys a manifest by: its digest's 64 hexadecimal digits (the cache
/// keys commits by theirs; an entry answers only for the source that fetched it).
fn cache_key(digest: &str) -> &str {
    digest.strip_prefix("sha256:").unwrap_or(digest)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn about(platform: &Platform, roots: &str) -> String {
        let platform = serde_json::to_string(platform).unwrap();
        format!(
            r#"{{"platform":{platform},"prepared":{{"step":"go build","tool":"go","outputs":["hello"],"roots":{roots}}}}}"#
        )
    }

    /// What the cache keeps beside a layer is judged as the registry's annotation is.
    #[test]
    fn what_the_cache_kept_about_a_layer_is_judged_again() {
        let here = Platform::running();
        let kept = BuiltFor::kept(&about(&here, r#"["hello"]"#))
            .unwrap()
            .unwrap();
        assert_eq!(kept.platform, here);
        assert_eq!(kept.prepared.unwrap().roots, ["hello"]);
        for roots in [r#"["../../etc"]"#, r#"["/etc"]"#] {
            assert!(BuiltFor::kept(&about(&here, roots)).is_err(), "{roots}");
        }
        assert!(BuiltFor::kept("{not json").is_err());
        let elsewhere = Platform::parse("zotos/zotarch").unwrap();
        assert!(BuiltFor::kept(&about(&elsewhere, "[]")).unwrap().is_none());
    }
}
