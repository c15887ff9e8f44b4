//! Building a validated extension tree in staging from a source, shared by `install` and
//! `update`: copy a folder or clone a repository, pick a subfolder, check links and the
//! manifest, and describe the result as an install record.

use std::fs;
use std::path::{Component, Path, PathBuf};

use anyhow::{Context as _, Result, anyhow, bail};

use crate::catalog::manifest::{self, Manifest, ManifestError};
use crate::catalog::paths::ScopeDirs;
use crate::error::usage;
use crate::fsx::{DIR_FLAGS, bounded};
use crate::install::cache::{Cache, is_commit_id};
use crate::output::Output;
use crate::prepare::Origin;
use crate::source::copy::{self, LooseLink};
use crate::source::copy_tree;
use crate::source::git::Checkout;
use crate::source::helper;
use crate::source::{GitUrl, Source};
use crate::store::filelist::FileList;
use crate::store::record::{Kind, Record, RefKind};
use crate::store::{Staging, Store};

/// What to stage.
pub(crate) struct Request<'a> {
    pub source: &'a Source,
    /// The source as the user gave it, for messages about local folders.
    pub shown: &'a str,
    pub git_ref: Option<&'a str>,
    /// A folder inside the source that holds the extension.
    pub subdir: Option<&'a str>,
    /// The fetch cache: a git source pinned to a full commit id is taken from it when
    /// there, and every fetched commit is put in it.
    pub cache: Option<&'a Cache>,
}

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

/// What staging built, before the record gets its subfolder.
struct Built {
    manifest: Manifest,
    record: Record,
    origin: Option<Origin>,
    outside_links: Vec<LooseLink>,
    /// The staged tree's list when the step that built the tree listed it on the way;
    /// `None`: [`stage`] lists the tree.
    files: Option<FileList>,
}

/// Copies or clones the requested source into a fresh staging folder of `store` and
/// validates it. Nothing in the extensions root changes.
pub(crate) fn stage(store: &Store, request: &Request, out: &Output) -> Result<Staged> {
    let subdir = request.subdir.map(check_subdir).transpose()?;
    let staging = store.stage()?;
    let (built, left_out_project_state) = match request.source {
        Source::Path(path) => {
            let source = check_local_source(path, &store.dirs)?;
            copy_into(&staging, &source, subdir.as_deref(), request.shown, out)?
        }
        Source::Git(url) => (
            clone_into(&staging, url, request, subdir.as_deref(), out)?,
            false,
        ),
    };
    let mut files = match built.files {
        Some(files) => files,
        None => FileList::scan(&staging.tree())?,
    };
    // Whoever owned the source, the copy is the user's: no set-user-ID, set-group-ID or
    // sticky bit, nothing writable by the group or others.
    files.drop_unsafe_modes(&staging.tree())?;
    crate::fsx::crashpoint::hit("stage.done");
    Ok(Staged {
        staging,
        manifest: built.manifest,
        record: Record {
            subdir: request.subdir.map(str::to_string),
            ..built.record
        },
        outside_links: built.outside_links,
        left_out_project_state,
        files,
        origin: built.origin,
    })
}

/// A subfolder must be a plain relative path inside the source.
fn check_subdir(subdir: &str) -> Result<PathBuf> {
    check_subdir_as(subdir, &format!("--subdir \"{subdir}\""))
}

/// [`check_subdir`], the error naming the subfolder as `form` says (the way the user wrote
/// it: `--subdir "x"`, or the `#x` part of a source).
pub(crate) fn check_subdir_as(subdir: &str, form: &str) -> Result<PathBuf> {
    let path = Path::new(subdir.trim_end_matches('/'));
    let plain = path.components().all(|c| matches!(c, Component::Normal(_)));
    if subdir.is_empty() || !plain {
        return Err(usage(format!(
            "{form} must be a relative folder inside the source, without \"..\""
        )));
    }
    Ok(path.to_path_buf())
}

fn copy_into(
    staging: &Staging,
    source: &Path,
    subdir: Option<&Path>,
    shown: &str,
    out: &Output,
) -> Result<(Built, bool)> {
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
    let built = Built {
        manifest,
        record,
        origin: Some(Origin::local(&from)),
        outside_links,
        files: Some(files),
    };
    Ok((built, left_out))
}

fn clone_into(
    staging: &Staging,
    url: &GitUrl,
    request: &Request,
    subdir: Option<&Path>,
    out: &Output,
) -> Result<Built> {
    let git_ref = request.git_ref;
    check_local_repository(url)?;
    check_scp_password(url)?;
    let checkout_dir = match subdir {
        Some(_) => staging.scratch("checkout"),
        None => staging.tree(),
    };
    let cached = from_cache(staging, request.cache, url, git_ref, &checkout_dir)?;
    let (checkout, listed) = match cached {
        Some((checkout, files)) => (checkout, Some(files)),
        None => fetch_and_cache(staging, url, request, subdir, &checkout_dir, out)?,
    };
    let label = format!("{} ({})", url.display, short(&checkout.commit));
    let inside = match subdir {
        Some(sub) => {
            take_subdir(&checkout_dir, sub, &staging.tree(), &label)?;
            format!("{}/", sub.display())
        }
        None => String::new(),
    };
    let prefix = format!("{label}: {inside}");
    // Copied out of the cache or into it (an exact copy, listed on the way): without a
    // subfolder, that list is the staged tree's.
    let outside_links = copy::audit(&staging.tree(), &prefix)?;
    let files = listed.filter(|_| subdir.is_none());
    let manifest = validate(
        staging,
        Path::new(&format!("{label}: {inside}{}", manifest::FILE)),
    )?;
    let record = Record {
        git_ref: git_ref.map(str::to_string),
        ref_kind: Some(checkout.ref_kind),
        branch: checkout.branch,
        commit: Some(checkout.commit),
        ..Record::new(&manifest.name, recorded_url(url), Kind::Git)
    };
    let origin = subdir.map(|sub| Origin {
        folder: checkout_dir.join(sub),
        top: checkout_dir.clone(),
        users: false,
    });
    Ok(Built {
        manifest,
        record,
        origin,
        outside_links,
        files,
    })
}

/// The checkout of a pinned full commit id from the cache, copied to `dir` (through a
/// scratch folder of `staging`, so a failed copy leaves `dir` free), with the copy's file
/// list; `None` when the ref is not a full commit id, no cache is given, or the cache does
/// not hold it as fetched from `url` (or holds something else: see [`Cache::get`]).
fn from_cache(
    staging: &Staging,
    cache: Option<&Cache>,
    url: &GitUrl,
    git_ref: Option<&str>,
    dir: &Path,
) -> Result<Option<(Checkout, FileList)>> {
    let (Some(cache), Some(commit)) = (cache, git_ref.map(str::to_ascii_lowercase)) else {
        return Ok(None);
    };
    if !is_commit_id(&commit) {
        return Ok(None);
    }
    // An entry deleted meanwhile (`cache clean` in another shell) or edited is fetched after
    // all; the half copy goes with the staging folder.
    let copied = staging.scratch("cached");
    let Some(files) = cache.get(&commit, &url.cache_key(), &copied)? else {
        return Ok(None);
    };
    fs::rename(&copied, dir)
        .with_context(|| format!("cannot move {} into staging", copied.display()))?;
    let checkout = Checkout {
        commit,
        ref_kind: RefKind::Commit,
        branch: None,
    };
    Ok(Some((checkout, files)))
}

/// Fetches with git into `dir`, then puts the checkout in the cache when its manifest reads:
/// the checkout's file list when the cache copied it (the list of its exact copy). A checkout
/// limited to a subfolder whose repository has submodules is not the whole tree and is not
/// cached; a cache that cannot take it is only a note.
fn fetch_and_cache(
    staging: &Staging,
    url: &GitUrl,
    request: &Request,
    subdir: Option<&Path>,
    dir: &Path,
    out: &Output,
) -> Result<(Checkout, Option<FileList>)> {
    // Its progress line, drawn on a terminal, is erased when it returns.
    let checkout = helper::fetch(
        url,
        request.git_ref,
        &staging.scratch(GIT_SCRATCH),
        dir,
        subdir,
        out,
    )?;
    // The repository is closed. Its pack, deleted before the install flushes the file
    // system, never has to be written to disk.
    staging.remove_scratch(GIT_SCRATCH);
    // Only a tree that can install (its manifest reads) is cached.
    let whole = subdir.is_none() || fs::symlink_metadata(dir.join(".gitmodules")).is_err();
    let installs = match subdir {
        Some(sub) => real_subdir(dir, sub, "").is_ok_and(|p| manifest::read(&p).is_ok()),
        None => manifest::read(dir).is_ok(),
    };
    let mut listed = None;
    if let (Some(cache), true, true) = (request.cache, whole, installs) {
        // Copied into the cache, listed on the way, while the checkout's files are already
        // on their way to the disk.
        let source = url.cache_key();
        let cached = while_flushing(dir, || {
            cache
                .put(&checkout.commit, &source, dir)
                .map(|files| listed = files)
        });
        if let Err(e) = cached {
            out.note(&format!("note: {e:#}; the next install fetches it again"));
        }
    }
    Ok((checkout, listed))
}

/// Runs `work` while the file system of `dir` is flushed on a second thread (joined
/// before this returns): the files just written go to the disk meanwhile, so the flush
/// that comes before the install is placed has little left to write.
fn while_flushing<T>(dir: &Path, work: impl FnOnce() -> T) -> T {
    let top = rustix::fs::openat(rustix::fs::CWD, dir, DIR_FLAGS, rustix::fs::Mode::empty());
    std::thread::scope(|s| {
        if let Ok(top) = &top {
            let flush = move || rustix::fs::syncfs(top);
            // A thread that cannot be started only leaves the flush to the install.
            let _ = std::thread::Builder::new().spawn_scoped(s, flush);
        }
        work()
    })
}

/// The scratch folder of a staging folder that holds the git object store.
const GIT_SCRATCH: &str = "git";

/// A local repository path must exist; libgit2 would only say "unsupported URL protocol"
/// or "could not find repository". (That it is a repository is the git helper's check.)
fn check_local_repository(url: &GitUrl) -> Result<()> {
    if !url.is_local_path() {
        return Ok(());
    }
    let path = Path::new(&url.url);
    if !path.exists() {
        bail!(
            "{} does not exist; give a git repository or a folder that holds extension.json",
            url.display
        );
    }
    Ok(())
}

/// `user:password@host:path` cannot be fetched: libgit2 reads `user` as the host (and
/// would try to reach it). Said before anything connects.
fn check_scp_password(url: &GitUrl) -> Result<()> {
    if url.scp_password() {
        return Err(usage(format!(
            "{}: the user@host:path form cannot carry a password (git reads the user name as the host); use an ssh key, or an ssh:// URL (ssh://user@host/path) with the password after the user name",
            url.display
        )));
    }
    Ok(())
}

/// The URL to record: local repository paths are made absolute, so `update` finds them
/// from any directory.
fn recorded_url(url: &GitUrl) -> String {
    let is_path = url.is_local_path();
    match is_path
        .then(|| fs::canonicalize(&url.url))
        .and_then(Result::ok)
    {
        Some(path) => path.display().to_string(),
        None => url.display.clone(),
    }
}

/// Moves `checkout/sub` to `tree`; the rest of the checkout is dropped with the staging folder.
fn take_subdir(checkout: &Path, sub: &Path, tree: &Path, label: &str) -> Result<()> {
    let from = real_subdir(checkout, sub, label)?;
    fs::rename(&from, tree).with_context(|| format!("cannot move {} into staging", from.display()))
}

/// `base/sub`, checked one component at a time: every step must be a real folder, not a
/// symbolic link, so the path cannot lead outside `base` (and nothing outside is moved or
/// copied). `label` names `base` in messages.
fn real_subdir(base: &Path, sub: &Path, label: &str) -> Result<PathBuf> {
    let mut path = base.to_path_buf();
    let mut walked = PathBuf::new();
    for part in sub.components() {
        path.push(part);
        walked.push(part);
        match fs::symlink_metadata(&path) {
            Ok(meta) if meta.file_type().is_symlink() => bail!(
                "{label}: {} is a symbolic link; the subfolder must be a real folder inside the source",
                walked.display()
            ),
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => bail!("{label}: {} is not a folder", walked.display()),
            Err(_) => bail!(
                "{label} has no folder {}; check the path inside the source",
                sub.display()
            ),
        }
    }
    Ok(path)
}

/// The first 12 characters of a commit id (all of it when shorter).
pub(crate) fn short(commit: &str) -> &str {
    commit
        .char_indices()
        .nth(12)
        .and_then(|(end, _)| commit.get(..end))
        .unwrap_or(commit)
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

/// Reads the staged manifest; errors name `shown` instead of the staging path.
fn validate(staging: &Staging, shown: &Path) -> Result<Manifest> {
    let tree = staging.tree();
    manifest::read(&tree).map_err(|e| manifest_error(e, &tree, shown))
}

/// The error of reading the manifest of `tree`, naming `shown` instead, with a hint at
/// manifests in subfolders when there is none.
fn manifest_error(e: ManifestError, tree: &Path, shown: &Path) -> anyhow::Error {
    let hint = if e.is_missing() {
        nested_manifest_hint(tree)
    } else {
        String::new()
    };
    let relabelled = ManifestError {
        path: shown.to_path_buf(),
        ..e
    };
    anyhow!("{relabelled}{hint} (nothing was changed)")
}

/// How many entries the search for manifests in subfolders looks at (a source folder can
/// be as big as `/usr`).
const HINT_ENTRIES: usize = 10_000;

/// Points at manifests in subfolders when the top level has none.
fn nested_manifest_hint(tree: &Path) -> String {
    let nested: Vec<String> = walkdir::WalkDir::new(tree)
        .min_depth(2)
        .max_depth(4)
        .into_iter()
        .take(HINT_ENTRIES)
        .flatten()
        .filter(|e| e.file_name() == manifest::FILE)
        .filter_map(|e| {
            e.path()
                .parent()?
                .strip_prefix(tree)
                .ok()
                .map(|p| p.display().to_string())
        })
        .take(3)
        .collect();
    if nested.is_empty() {
        String::new()
    } else {
        format!(
            "; there is one in {}/: install that folder instead (a path, or --subdir for a repository)",
            nested.join("/, ")
        )
    }
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
                    crate::output::sh_quote(&parent.display().to_string())
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
    fn subdirs_must_stay_inside() {
        assert!(check_subdir("examples/extensions/clock").is_ok());
        assert!(check_subdir("ext/").is_ok());
        for bad in ["", "../x", "/abs", "a/../../b", "./"] {
            assert!(check_subdir(bad).is_err(), "{bad}");
        }
    }

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
