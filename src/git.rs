//! Fetching an extension from a git repository with libgit2: shallow where the transport
//! allows it, any branch, tag or commit, credentials from the ssh agent, key files and git's
//! credential helpers, and a checkout without `.git`.

use std::cell::RefCell;
use std::path::{Path, PathBuf};

use anyhow::{Result, anyhow, bail};
use git2::build::CheckoutBuilder;
use git2::{
    AutotagOption, Cred, CredentialType, Direction, FetchOptions, Oid, RemoteCallbacks, Repository,
};

use crate::record::RefKind;
use crate::sources::{GitUrl, scrub};

/// What was checked out.
#[derive(Debug, Clone)]
pub struct Checkout {
    /// The full commit id.
    pub commit: String,
    /// Whether the object store holds only the fetched commit's history tip.
    pub shallow: bool,
    /// What the requested ref named.
    pub ref_kind: RefKind,
    /// The branch checked out, when the ref named one (or was the default branch).
    pub branch: Option<String>,
}

/// What a ref points at on the remote now, found without fetching.
#[derive(Debug, Clone)]
pub struct Probe {
    /// The commit the ref points at; `None` for an abbreviated commit id.
    pub commit: Option<String>,
    pub ref_kind: RefKind,
    pub branch: Option<String>,
}

/// Progress of the transfer: objects received of total, bytes.
pub type Progress<'a> = &'a mut dyn FnMut(usize, usize, usize);

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

/// How long connecting to a server may take.
const CONNECT_TIMEOUT_MS: i32 = 30_000;
/// How long a connected server may stay silent (upload-pack sends keep-alives meanwhile).
const STALL_TIMEOUT_MS: i32 = 60_000;

/// libgit2 waits forever by default, so a server that accepts the connection and then
/// stalls would hang the install: bound the connect and every read and write.
fn set_timeouts() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: these set libgit2 globals; zot fetches on its main thread, and no other
        // thread uses libgit2 while they are set.
        unsafe {
            let _ = git2::opts::set_server_connect_timeout_in_milliseconds(CONNECT_TIMEOUT_MS);
            let _ = git2::opts::set_server_timeout_in_milliseconds(STALL_TIMEOUT_MS);
        }
    });
}

/// Clones `url` at `git_ref` (default branch when `None`) into `tree` (no `.git`), using
/// `git_dir` as a scratch object store.
pub fn fetch(
    url: &GitUrl,
    git_ref: Option<&str>,
    git_dir: &Path,
    tree: &Path,
    progress: Progress,
) -> Result<Checkout> {
    set_timeouts();
    let repo = Repository::init_bare(git_dir)?;
    let auth = Auth::default();
    let advertised = list_remote(&repo, url, &auth).map_err(|e| fetch_error(e, url, &auth))?;
    let want = resolve(&advertised, git_ref, url)?;
    let depth = if url.local { 0 } else { 1 };
    let oid = match &want {
        Want::Ref { name, .. } => {
            download(
                &repo,
                url,
                &auth,
                &[format!("+{name}:{name}")],
                depth,
                progress,
            )
            .map_err(|e| fetch_error(e, url, &auth))?;
            repo.refname_to_id(name)?
        }
        Want::Commit(id) => fetch_commit(&repo, url, &auth, id, depth, progress)?,
    };
    let commit = repo.find_object(oid, None)?.peel_to_commit()?;
    std::fs::create_dir_all(tree)?;
    repo.checkout_tree(
        commit.as_object(),
        Some(CheckoutBuilder::new().force().target_dir(tree)),
    )?;
    Ok(Checkout {
        commit: commit.id().to_string(),
        shallow: repo.is_shallow(),
        ref_kind: want.kind(),
        branch: want.branch(),
    })
}

/// Finds what `git_ref` (the default branch when `None`) points at on the remote, without
/// fetching any objects. `scratch` is an empty folder for a temporary repository.
pub fn probe(url: &GitUrl, git_ref: Option<&str>, scratch: &Path) -> Result<Probe> {
    set_timeouts();
    let repo = Repository::init_bare(scratch)?;
    let auth = Auth::default();
    let advertised = list_remote(&repo, url, &auth).map_err(|e| fetch_error(e, url, &auth))?;
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

/// The refs a remote advertises.
struct RemoteRefs {
    names: Vec<String>,
    /// Every advertised ref with the object it points at (`<tag>^{}` for peeled tags).
    oids: Vec<(String, Oid)>,
    /// The branch `HEAD` points at, if the remote says.
    head: Option<String>,
}

impl RemoteRefs {
    /// The commit `name` points at: the peeled entry for annotated tags.
    fn peeled(&self, name: &str) -> Option<String> {
        let find = |wanted: &str| {
            self.oids
                .iter()
                .find(|(n, _)| n == wanted)
                .map(|(_, oid)| oid.to_string())
        };
        find(&format!("{name}^{{}}")).or_else(|| find(name))
    }
}

fn list_remote(repo: &Repository, url: &GitUrl, auth: &Auth) -> Result<RemoteRefs, git2::Error> {
    let mut remote = repo.remote_anonymous(&url.url)?;
    let connection = remote.connect_auth(Direction::Fetch, Some(auth.callbacks(None)), None)?;
    let oids: Vec<(String, Oid)> = connection
        .list()?
        .iter()
        .map(|h| (h.name().to_string(), h.oid()))
        .collect();
    let names = oids.iter().map(|(n, _)| n.clone()).collect();
    let head = connection
        .default_branch()
        .ok()
        .and_then(|b| b.as_str().ok().map(str::to_string));
    Ok(RemoteRefs { names, oids, head })
}

fn resolve(refs: &RemoteRefs, git_ref: Option<&str>, url: &GitUrl) -> Result<Want> {
    let has = |name: &str| refs.names.iter().any(|n| n == name);
    let Some(wanted) = git_ref else {
        if let Some(head) = &refs.head {
            return Ok(Want::Ref {
                name: head.clone(),
                kind: RefKind::Branch,
            });
        }
        if refs.names.is_empty() {
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

/// Fetches a commit by id: directly where the server allows it, otherwise every branch and
/// tag, then looks the (possibly abbreviated) id up.
fn fetch_commit(
    repo: &Repository,
    url: &GitUrl,
    auth: &Auth,
    id: &str,
    depth: i32,
    progress: Progress,
) -> Result<Oid> {
    if id.len() == 40
        && download(repo, url, auth, &[id.to_string()], depth, progress).is_ok()
        && let Ok(oid) = Oid::from_str(id)
        && repo.find_commit(oid).is_ok()
    {
        return Ok(oid);
    }
    let everything = [
        "+refs/heads/*:refs/heads/*".to_string(),
        "+refs/tags/*:refs/tags/*".to_string(),
    ];
    download(repo, url, auth, &everything, 0, progress).map_err(|e| fetch_error(e, url, auth))?;
    repo.revparse_single(id)
        .and_then(|o| o.peel_to_commit())
        .map(|c| c.id())
        .map_err(|_| {
            anyhow!(
                "{} has no commit \"{id}\" reachable from its branches or tags",
                url.display
            )
        })
}

fn download(
    repo: &Repository,
    url: &GitUrl,
    auth: &Auth,
    refspecs: &[String],
    depth: i32,
    progress: Progress,
) -> Result<(), git2::Error> {
    let mut remote = repo.remote_anonymous(&url.url)?;
    let mut options = FetchOptions::new();
    options
        .remote_callbacks(auth.callbacks(Some(progress)))
        .download_tags(AutotagOption::None)
        .depth(depth);
    remote.fetch(refspecs, Some(&mut options), None)
}

/// Which credentials were offered, so an auth failure can say what was tried.
#[derive(Default)]
struct Auth {
    /// Everything offered on any connection, for the error message.
    tried: RefCell<Vec<String>>,
    /// What was offered on the current connection. libgit2 asks again after each rejection,
    /// so each source is offered once per connection; every connection (listing the refs,
    /// then each fetch) starts afresh, or credentials that worked for the listing would be
    /// withheld from the fetch.
    offered: RefCell<Vec<String>>,
}

impl Auth {
    /// Callbacks for one new connection.
    fn callbacks<'a>(&'a self, progress: Option<Progress<'a>>) -> RemoteCallbacks<'a> {
        self.offered.borrow_mut().clear();
        let mut callbacks = RemoteCallbacks::new();
        callbacks.credentials(move |url, user, allowed| self.credentials(url, user, allowed));
        if let Some(progress) = progress {
            callbacks.transfer_progress(move |p| {
                progress(p.received_objects(), p.total_objects(), p.received_bytes());
                true
            });
        }
        callbacks
    }

    fn attempted(&self, what: &str) -> bool {
        let mut offered = self.offered.borrow_mut();
        if offered.iter().any(|t| t == what) {
            return true;
        }
        offered.push(what.to_string());
        let mut tried = self.tried.borrow_mut();
        if !tried.iter().any(|t| t == what) {
            tried.push(what.to_string());
        }
        false
    }

    fn credentials(
        &self,
        url: &str,
        user: Option<&str>,
        allowed: CredentialType,
    ) -> Result<Cred, git2::Error> {
        let user = user.unwrap_or("git");
        if allowed.contains(CredentialType::USERNAME) {
            return Cred::username(user);
        }
        if allowed.contains(CredentialType::SSH_KEY) {
            if !self.attempted("the ssh agent") {
                return Cred::ssh_key_from_agent(user);
            }
            for key in ssh_key_files() {
                if !self.attempted(&key.display().to_string()) {
                    return Cred::ssh_key(user, None, &key, None);
                }
            }
        }
        if allowed.contains(CredentialType::USER_PASS_PLAINTEXT)
            && !self.attempted(helpers_label())
            && let Ok(config) = git2::Config::open_default()
            && let Ok(cred) =
                Cred::credential_helper(&config, url, Some(user).filter(|u| *u != "git"))
        {
            return Ok(cred);
        }
        if allowed.contains(CredentialType::DEFAULT) && !self.attempted("default credentials") {
            return Cred::default();
        }
        Err(git2::Error::from_str("no more credentials to try"))
    }
}

/// How the credential helpers are named in an auth failure: whether any is configured.
fn helpers_label() -> &'static str {
    let configured = git2::Config::open_default()
        .and_then(|c| {
            let mut entries = c.entries(Some("credential\\..*helper"))?;
            Ok(entries.next().is_some())
        })
        .unwrap_or(false);
    if configured {
        "git credential helpers"
    } else {
        "git credential helpers (none configured)"
    }
}

fn ssh_key_files() -> Vec<PathBuf> {
    let Some(home) = directories::BaseDirs::new().map(|d| d.home_dir().join(".ssh")) else {
        return Vec::new();
    };
    ["id_ed25519", "id_ecdsa", "id_rsa"]
        .iter()
        .map(|k| home.join(k))
        .filter(|p| p.is_file())
        .collect()
}

/// Turns a libgit2 error into a message that names the (redacted) URL and, for auth
/// failures, what was tried and how to fix it.
fn fetch_error(e: git2::Error, url: &GitUrl, auth: &Auth) -> anyhow::Error {
    let message = scrub(e.message(), url);
    let tried = auth.tried.borrow();
    if e.class() == git2::ErrorClass::Ssh
        || e.code() == git2::ErrorCode::Auth
        || !tried.is_empty() && message.contains("credentials")
    {
        let mut tried = tried.clone();
        if url.url != url.display {
            // libgit2 offers the user name and password of the URL before asking the callback.
            tried.insert(0, "the credentials in the URL".to_string());
        }
        let tried = if tried.is_empty() {
            "nothing".to_string()
        } else {
            tried.join(", ")
        };
        return anyhow!(
            "cannot authenticate to {} ({message}); tried: {tried}. For ssh, add your key to the agent (`ssh-add`); for https, configure a git credential helper (`git config --global credential.helper store`)",
            url.display
        );
    }
    anyhow!("cannot fetch {}: {message}", url.display)
}
