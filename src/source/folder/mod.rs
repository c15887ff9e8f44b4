//! The folder kind: a directory on this machine, copied as it is now (no ref, no cache). It
//! reads `folder#path` (a subfolder, when nothing exists under the literal name), checks the
//! folder (it exists, it is not inside the store nor holds it), and copies it into staging in
//! one audited walk ([`copy_tree`]) that lists the copy on the way.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, anyhow, bail};

use crate::catalog::manifest;
use crate::catalog::paths::ScopeDirs;
use crate::fsx::bounded;
use crate::output::{Output, sh_quote};
use crate::source::copy;
use crate::source::copy_tree;
use crate::source::staged::{Built, Origin, manifest_error, real_subdir, validate};
use crate::store::Staging;
use crate::store::record::{Kind, Record};

/// A local argument read with the disk at hand: the folder, the subfolder its `#path` names,
/// and a note when the argument could be read two ways.
pub(crate) struct Named {
    pub folder: PathBuf,
    pub subdir: Option<String>,
    pub note: Option<String>,
}

/// Copies the folder `path` (its subfolder `subdir` when given) into `staging`, after
/// checking it against the store of `dirs`; `shown` names it in messages as the user gave it.
pub(crate) fn stage(
    staging: &Staging,
    path: &Path,
    dirs: &ScopeDirs,
    subdir: Option<&Path>,
    shown: &str,
    out: &Output,
) -> Result<Built> {
    let source = check_local_source(path, dirs)?;
    copy_into(staging, &source, subdir, shown, out)
}

/// A folder an install was copied from must still be where its record says: without it
/// there is nothing to update from (`name` is the extension's, for the fix).
pub(crate) fn still_there(path: &Path, name: &str) -> Result<()> {
    match fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => bail!(
            "the source folder {} recorded at install is gone; if it moved, install it from there with zot ext install --force <new place>, else remove it with zot ext remove {}",
            path.display(),
            sh_quote(name)
        ),
        _ => Ok(()),
    }
}

/// A local argument with `#` in it: when nothing exists under the literal name and the part
/// before a `#` is a folder, the part after it is a subfolder (as with `--subdir`); the first
/// `#` whose left part is a folder counts. A literal path that exists always wins.
pub(crate) fn named(arg: &str, literal: PathBuf) -> Named {
    let plain = |folder: PathBuf| Named {
        folder,
        subdir: None,
        note: None,
    };
    let Some((folder, fragment)) = split_at_folder(arg) else {
        return plain(literal);
    };
    let subdir = Some(fragment.to_string()).filter(|f| !f.is_empty());
    if fs::symlink_metadata(&literal).is_err() {
        return Named {
            subdir,
            ..plain(PathBuf::from(folder))
        };
    }
    let both = subdir
        .as_ref()
        .is_some_and(|sub| Path::new(folder).join(sub).exists());
    Named {
        note: both.then(|| {
            format!(
                "note: {arg} exists under that name and is used as it is; for the folder {fragment} inside {folder}, give: zot ext install {} --subdir {}",
                sh_quote(folder),
                sh_quote(fragment)
            )
        }),
        ..plain(literal)
    }
}

/// `folder#path` split at the first `#` whose left part is an existing folder.
pub(crate) fn split_at_folder(arg: &str) -> Option<(&str, &str)> {
    arg.match_indices('#')
        .filter_map(|(i, _)| {
            let (folder, rest) = arg.split_at_checked(i)?;
            Some((folder, rest.strip_prefix('#')?))
        })
        .find(|(folder, _)| !folder.is_empty() && Path::new(folder).is_dir())
}

fn copy_into(
    staging: &Staging,
    source: &Path,
    subdir: Option<&Path>,
    shown: &str,
    out: &Output,
) -> Result<Built> {
    let shown = match subdir {
        Some(sub) => Path::new(shown).join(sub),
        None => PathBuf::from(shown),
    };
    let prefix = format!("{}/", shown.display().to_string().trim_end_matches('/'));
    let from = match subdir {
        Some(sub) => real_subdir(source, sub, &source.display().to_string())?,
        None => source.to_path_buf(),
    };
    check_manifest_first(&from, &shown)?;
    let left_out = copy::has_project_state(&from);
    let copied = copy_tree::copy_source(&from, &staging.tree(), &prefix, &mut |stats| {
        if (stats.files + stats.dirs + stats.links) % 64 == 0 {
            out.progress(&format!(
                "copying: {} files, {:.1} MiB",
                stats.files,
                stats.bytes as f64 / 1_048_576.0
            ));
        }
    });
    out.progress_done();
    // The copy is what gets installed: its links are the ones to report, its list the one
    // to record.
    let (_, outside_links, files) = copied?;
    let manifest = validate(staging, &shown.join(manifest::FILE))?;
    let record = Record::new(&manifest.name, source.display().to_string(), Kind::Path);
    Ok(Built {
        manifest,
        record,
        origin: Some(Origin::local(&from)),
        outside_links,
        left_out_project_state: left_out,
        files,
    })
}

/// Before the first file is copied: a folder without a manifest that reads (`/usr`, say)
/// fails at once rather than after copying all of it. A manifest that is a link is left to
/// the copy's audit, which names what is wrong with the link; the staged copy's manifest is
/// read again either way.
fn check_manifest_first(from: &Path, shown: &Path) -> Result<()> {
    let path = from.join(manifest::FILE);
    if fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Ok(());
    }
    manifest::read(from)
        .map(drop)
        .map_err(|e| manifest_error(e, from, &shown.join(manifest::FILE)))
}

/// `owner/repo`, as gh and npm take a GitHub repository, as its URL.
fn github_shorthand(path: &Path) -> Option<String> {
    let text = path.to_str()?;
    let (owner, repo) = text.split_once('/')?;
    let plain = |s: &str| {
        !s.is_empty()
            && !s.starts_with('.')
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    };
    (plain(owner) && plain(repo)).then(|| {
        let repo = repo.strip_suffix(".git").unwrap_or(repo);
        format!("https://github.com/{owner}/{repo}.git")
    })
}

/// Checks a local source and returns its canonical path.
pub(crate) fn check_local_source(path: &Path, dirs: &ScopeDirs) -> Result<PathBuf> {
    let meta = fs::metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => match github_shorthand(path) {
            Some(url) => anyhow!(
                "{} does not exist; did you mean {url}? (gh and npm read owner/repo as a GitHub repository; zot ext takes its URL)",
                path.display()
            ),
            None => anyhow!(
                "{} does not exist; give a folder that holds {} or a git URL",
                path.display(),
                manifest::FILE
            ),
        },
        _ => anyhow!("cannot read {}: {e}", path.display()),
    })?;
    if !meta.is_dir() {
        let hint = match (path.file_name(), path.parent()) {
            (Some(file), Some(parent)) if file == manifest::FILE => {
                format!(
                    "; install its folder instead: zot ext install {}",
                    sh_quote(&parent.display().to_string())
                )
            }
            _ => String::new(),
        };
        let kind = bounded::kind_name(meta.file_type());
        bail!("{} is {kind}, not a folder{hint}", path.display());
    }
    let source =
        fs::canonicalize(path).with_context(|| format!("cannot resolve {}", path.display()))?;
    let root = canonical_or_absolute(&dirs.extensions());
    let state = canonical_or_absolute(&dirs.state());
    if source.starts_with(&root) || source.starts_with(&state) {
        bail!(
            "{} is inside the extensions folder {}; install from a folder outside it",
            path.display(),
            root.display()
        );
    }
    // The copy leaves out the source's own `.zot/`, so a project's store in it is no obstacle.
    let own_state = source.join(copy::PROJECT_STATE);
    let copied = |store: &Path| store.starts_with(&source) && !store.starts_with(&own_state);
    if copied(&root) || copied(&state) {
        bail!(
            "{} contains the extensions folder {}; copying it would copy the store into itself",
            path.display(),
            root.display()
        );
    }
    Ok(source)
}

/// The canonical form of `path`'s longest existing ancestor, joined with the rest.
pub(crate) fn canonical_or_absolute(path: &Path) -> PathBuf {
    let mut existing = path.to_path_buf();
    let mut rest = Vec::new();
    while !existing.exists() {
        match (existing.file_name(), existing.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name.to_os_string());
                existing = parent.to_path_buf();
            }
            _ => return path.to_path_buf(),
        }
    }
    let mut out = fs::canonicalize(&existing).unwrap_or(existing);
    out.extend(rest.iter().rev());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_or_absolute_keeps_missing_tail() {
        let tmp = tempfile::tempdir().unwrap();
        let real = fs::canonicalize(tmp.path()).unwrap();
        assert_eq!(
            canonical_or_absolute(&tmp.path().join("a/b")),
            real.join("a/b")
        );
    }
}
