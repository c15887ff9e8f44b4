//! Fetching an extension from a git repository with libgit2: which branch, tag or commit
//! a ref names on the remote (probed without fetching, or fetched), and a checkout without
//! `.git`, submodules included (see [`submodules`]). Talking to the remote — shallow where
//! the transport allows it, credentials from the ssh agent, key files and git's credential
//! helpers — is [`transport`]'s, shared with the submodules.

pub(crate) mod cache;
pub(crate) mod credential;
pub(crate) mod progress;
pub(crate) mod stage;
mod submodules;
mod transport;
pub(crate) mod url;

use std::path::{Path, PathBuf};

use anyhow::{Result, anyhow, bail};

use crate::source::controls;
use crate::store::record::RefKind;
use progress::{Progress, Step};
use transport::set_globals as start_libgit2;
use transport::{
    Auth, RemoteRefs, advertised, check_out, connect, depth_for, download_on, fetch_commit,
    fetch_error, list_remote, scratch_repository,
};
use url::GitUrl;

/// What was checked out.
#[derive(Debug, Clone)]
pub(crate) struct Checkout {
    /// The full commit id.
    pub commit: String,
    /// What the requested ref named.
    pub ref_kind: RefKind,
    /// The branch checked out, when the ref named one (or was the default branch).
    pub branch: Option<String>,
}

/// What a ref points at on the remote now, found without fetching.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct Probe {
    /// The commit the ref points at; `None` for an abbreviated commit id.
    pub commit: Option<String>,
    pub ref_kind: RefKind,
    pub branch: Option<String>,
}

/// The commit a working copy's `HEAD` names, for `publish`'s annotations.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct Head {
    pub commit: String,
    /// The commit time, in seconds since 1970.
    pub time: i64,
    /// The `origin` remote's URL, as configured (credentials and all: redact it).
    pub remote: Option<String>,
}

/// The `HEAD` commit of the repository `folder` is in (it or a folder above it); `None`
/// when it is in none or `HEAD` names no commit yet. Only read: no hook, filter or helper
/// of the repository runs.
pub(crate) fn head(folder: &Path) -> Option<Head> {
    let repo = git2::Repository::discover(folder).ok()?;
    let commit = repo.head().ok()?.peel_to_commit().ok()?;
    let remote = repo
        .find_remote("origin")
        .ok()
        .and_then(|r| r.url().ok().map(str::to_string));
    Some(Head {
        commit: commit.id().to_string(),
        time: commit.time().seconds(),
        remote,
    })
}

/// How the requested ref resolved against the remote's advertised refs.
enum Want {
    /// A ref name to fetch (branch or tag) into the local ref of the same name.
    Ref { name: String, kind: RefKind },
    /// A commit id not advertised by any ref.
    Commit(String),
}

impl Want {
    fn kind(&self) -> RefKind {
        match self {
            Want::Ref { kind, .. } => *kind,
            Want::Commit(_) => RefKind::Commit,
        }
    }

    fn branch(&self) -> Option<String> {
        match self {
            Want::Ref {
                name,
                kind: RefKind::Branch,
            } => Some(name.strip_prefix("refs/heads/").unwrap_or(name).to_string()),
            _ => None,
        }
    }
}

/// Clones `url` at `git_ref` (default branch when `None`) into `tree` (no `.git`), using
/// `git_dir` as a scratch object store. Submodules are fetched and checked out at the commits
/// the tree records, recursively; with `only` (a folder of the repository), just those at,
/// under or around that folder. A manifest (`only/extension.json`) that is a symbolic link
/// or a submodule in the repository is refused before anything else is fetched.
pub(crate) fn fetch(
    url: &GitUrl,
    git_ref: Option<&str>,
    git_dir: &Path,
    tree: &Path,
    only: Option<&Path>,
    progress: Progress,
) -> Result<Checkout> {
    // zot checks too; a URL with a control character never reaches libgit2.
    controls::check(&url.url).map_err(|why| anyhow!(why))?;
    start_libgit2();
    let repo = scratch_repository(git_dir)?;
    let auth = Auth::default();
    let mut remote = repo.remote_anonymous(&url.url)?;
    let mut connection = connect(&mut remote, &auth).map_err(|e| fetch_error(&e, url, &auth))?;
    let refs = advertised(&connection).map_err(|e| fetch_error(&e, url, &auth))?;
    let want = resolve(&refs, git_ref, url)?;
    let oid = match &want {
        // A ref is fetched on the connection that listed it.
        Want::Ref { name, .. } => {
            download_on(
                connection.remote(),
                &auth,
                &[format!("+{name}:{name}")],
                depth_for(url),
                progress,
            )
            .map_err(|e| fetch_error(&e, url, &auth))?;
            repo.refname_to_id(name)?
        }
        Want::Commit(id) => {
            drop(connection);
            fetch_commit(&repo, url, &auth, &refs, id, progress)?
        }
    };
    let commit = repo.find_object(oid, None)?.peel_to_commit()?;
    let id = commit.id().to_string();
    let label = format!(
        "{} ({})",
        crate::output::printable(&url.display),
        id.get(..12).unwrap_or(&id)
    );
    submodules::check_manifest_entry(&commit.tree()?, only, only, &label)?;
    progress(Step::Checkout);
    check_out(&repo, &commit, tree)?;
    submodules::fetch_all(
        &mut submodules::Run {
            scratch: git_dir.join("modules"),
            label,
            manifest: only,
            fetched: 0,
            progress,
        },
        &submodules::Superproject {
            repo: &repo,
            commit: &commit,
            url,
            dir: tree,
            path: PathBuf::new(),
            only: only.map(Path::to_path_buf),
            level: 0,
        },
    )?;
    Ok(Checkout {
        commit: commit.id().to_string(),
        ref_kind: want.kind(),
        branch: want.branch(),
    })
}

/// Finds what `git_ref` (the default branch when `None`) points at on the remote, without
/// fetching any objects. `scratch` is an empty folder for a temporary repository.
pub(crate) fn probe(url: &GitUrl, git_ref: Option<&str>, scratch: &Path) -> Result<Probe> {
    // zot checks too; a URL with a control character never reaches libgit2.
    controls::check(&url.url).map_err(|why| anyhow!(why))?;
    start_libgit2();
    let repo = scratch_repository(scratch)?;
    let auth = Auth::default();
    let advertised = list_remote(&repo, url, &auth).map_err(|e| fetch_error(&e, url, &auth))?;
    let want = resolve(&advertised, git_ref, url)?;
    let commit = match &want {
        Want::Ref { name, .. } => advertised.peeled(name),
        Want::Commit(id) if id.len() == 40 => Some(id.clone()),
        Want::Commit(_) => None,
    };
    Ok(Probe {
        commit,
        ref_kind: want.kind(),
        branch: want.branch(),
    })
}

fn resolve(refs: &RemoteRefs, git_ref: Option<&str>, url: &GitUrl) -> Result<Want> {
    let has = |name: &str| refs.oids.iter().any(|(n, _)| n == name);
    let Some(wanted) = git_ref else {
        if let Some(head) = &refs.head {
            return Ok(Want::Ref {
                name: head.clone(),
                kind: RefKind::Branch,
            });
        }
        if refs.oids.is_empty() {
            bail!(
                "{} is an empty repository: it has no commits to install",
                url.display
            );
        }
        bail!(
            "{} does not say which branch is its default; pass --ref <branch>",
            url.display
        );
    };
    for candidate in [
        format!("refs/heads/{wanted}"),
        format!("refs/tags/{wanted}"),
        wanted.to_string(),
    ] {
        if candidate.starts_with("refs/") && has(&candidate) {
            let kind = if candidate.starts_with("refs/heads/") {
                RefKind::Branch
            } else if candidate.starts_with("refs/tags/") {
                RefKind::Tag
            } else {
                RefKind::Commit
            };
            return Ok(Want::Ref {
                name: candidate,
                kind,
            });
        }
    }
    let is_hex =
        wanted.len() >= 4 && wanted.len() <= 40 && wanted.chars().all(|c| c.is_ascii_hexdigit());
    if is_hex {
        return Ok(Want::Commit(wanted.to_ascii_lowercase()));
    }
    bail!(
        "{} has no branch, tag or commit named \"{wanted}\"; check the name with `git ls-remote {}`",
        url.display,
        url.display
    )
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::process::Command;

    /// Set in the copy of the test binary that [`in_child`] starts: that process starts
    /// libgit2 and exits.
    const IN_CHILD: &str = "ZOT_EXT_TEST_LIBGIT2_START";
    /// What OpenSSL's own exit handler would print, through the handler added to it here.
    const TORN_DOWN: &str = "openssl was torn down at exit";

    unsafe extern "C" {
        /// OpenSSL's list of handlers that its clean-up (`OPENSSL_cleanup`) runs.
        fn OPENSSL_atexit(handler: extern "C" fn()) -> std::ffi::c_int;
    }

    extern "C" fn say_torn_down() {
        let line = format!("{TORN_DOWN}\n");
        // SAFETY: writes a buffer of its own length to standard output.
        unsafe { libc::write(1, line.as_ptr().cast(), line.len()) };
    }

    /// Runs the test `name` of this binary again in a child process (with [`IN_CHILD`] set
    /// and the certificate variables unset, as in a fresh environment); its standard output.
    fn in_child(name: &str) -> String {
        let me = std::env::current_exe().unwrap();
        let full = format!("source::git::tests::{name}");
        let child = Command::new(me)
            .args(["--exact", &full, "--test-threads=1", "--nocapture"])
            .env(IN_CHILD, "1")
            .env_remove("SSL_CERT_FILE")
            .env_remove("SSL_CERT_DIR")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&child.stdout).into_owned();
        assert!(child.status.success(), "{stdout}");
        assert!(stdout.contains("1 passed"), "{stdout}");
        stdout
    }

    /// OpenSSL is started as git2 starts it, without an exit handler of its own: a clean-up
    /// at exit would tear it down under any thread still fetching over https.
    #[test]
    fn starting_libgit2_leaves_openssl_up_at_exit() {
        if std::env::var_os(IN_CHILD).is_some() {
            super::start_libgit2();
            // SAFETY: a handler without arguments, as OpenSSL calls it.
            assert_eq!(unsafe { OPENSSL_atexit(say_torn_down) }, 1);
            return;
        }
        let stdout = in_child("starting_libgit2_leaves_openssl_up_at_exit");
        assert!(!stdout.contains(TORN_DOWN), "{stdout}");
    }

    /// libgit2 starts OpenSSL with the certificate file and folder git2's probe finds
    /// (OpenSSL would otherwise trust the folder it was built with, which need not be the
    /// system's).
    #[test]
    fn libgit2_starts_with_the_certificate_places_git2_finds() {
        if std::env::var_os(IN_CHILD).is_some() {
            // What git2's probe finds in this environment (no variable set; a system
            // without certificates finds nothing, and then nothing is to be set).
            let found = openssl_probe::probe();
            super::start_libgit2();
            let now = |name| std::env::var_os(name).map(PathBuf::from);
            assert_eq!(now("SSL_CERT_DIR"), found.cert_dir);
            assert_eq!(now("SSL_CERT_FILE"), found.cert_file);
            return;
        }
        in_child("libgit2_starts_with_the_certificate_places_git2_finds");
    }
}
