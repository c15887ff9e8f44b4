//! Staging a git source: a clone through the `zot-ext-git` helper (or a pinned commit from
//! the fetch [`cache`](super::cache), which every fetched commit is put in), the subfolder
//! taken out of the checkout, links audited, the manifest read, and the record pinning the
//! ref, its kind, the branch and the commit.

use std::fs;
use std::path::Path;

use anyhow::{Context as _, Result, bail};

use crate::catalog::manifest;
use crate::error::usage;
use crate::output::Output;
use crate::source::copy;
use crate::source::git::Checkout;
use crate::source::git::cache::{Cache, is_commit_id};
use crate::source::git::url::GitUrl;
use crate::source::helper;
use crate::source::staged::{Built, Origin, real_subdir, short, validate, while_flushing};
use crate::store::Staging;
use crate::store::filelist::FileList;
use crate::store::record::{Kind, Record, RefKind};

/// Clones `url` at `git_ref` (the default branch without one) into `staging`, only its
/// folder `subdir` when given; a full commit id the `cache` holds as fetched from `url` is
/// copied from there instead.
pub(crate) fn stage(
    staging: &Staging,
    url: &GitUrl,
    git_ref: Option<&str>,
    cache: Option<&Cache>,
    subdir: Option<&Path>,
    out: &Output,
) -> Result<Built> {
    check_local_repository(url)?;
    check_scp_password(url)?;
    let checkout_dir = match subdir {
        Some(_) => staging.scratch("checkout"),
        None => staging.tree(),
    };
    let cached = from_cache(staging, cache, url, git_ref, &checkout_dir)?;
    let (checkout, listed) = match cached {
        Some((checkout, files)) => (checkout, Some(files)),
        None => fetch_and_cache(staging, url, git_ref, cache, subdir, &checkout_dir, out)?,
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
    // subfolder, that list is the staged tree's; otherwise the tree is listed now. Its links
    // are judged from the list (a checkout holds no special file: git has none).
    let tree = staging.tree();
    let files = match listed.filter(|_| subdir.is_none()) {
        Some(files) => files,
        None => FileList::scan(&tree)?,
    };
    let outside_links =
        copy::links_listed(&tree, &files).map_err(|e| copy::shown_after(&tree, &prefix, &e))?;
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
        left_out_project_state: false,
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
    let Some(files) = cache.copy_out(staging, &commit, &url.cache_key(), dir)? else {
        return Ok(None);
    };
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
    git_ref: Option<&str>,
    cache: Option<&Cache>,
    subdir: Option<&Path>,
    dir: &Path,
    out: &Output,
) -> Result<(Checkout, Option<FileList>)> {
    // Its progress line, drawn on a terminal, is erased when it returns.
    let checkout = helper::fetch(
        url,
        git_ref,
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
    if let (Some(cache), true, true) = (cache, whole, installs) {
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
