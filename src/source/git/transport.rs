//! Talking to a git remote with libgit2: timeouts, listing the refs it advertises,
//! downloading (shallow where the transport allows it), fetching a commit by id,
//! credentials from the ssh agent, key files and git's credential helpers (asked as git
//! asks them, [`super::credential`]), the bytes received ([`super::meter`]), the ssh host key
//! check and the errors that say what was tried; and the checkout of a commit without
//! `.git`. Used by the top repository's fetch and by each submodule's.

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use anyhow::{Result, anyhow};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use git2::build::CheckoutBuilder;
use git2::{
    AutotagOption, Cred, CredentialType, Direction, FetchOptions, Oid, Remote, RemoteCallbacks,
    RemoteConnection, Repository, RepositoryInitOptions,
};

use super::credential;
use super::progress::{Progress, RemoteText, Step, Transfer};
use crate::output::redact::{is_scp_like, redact};
use crate::source::git::url::{GitUrl, scrub};
use crate::source::meter::{self, LowSpeed};

/// How long connecting to a server may take.
const CONNECT_TIMEOUT_MS: i32 = 30_000;
/// How long a connected server may stay silent (upload-pack sends keep-alives meanwhile).
const STALL_TIMEOUT_MS: i32 = 60_000;

/// Sets libgit2's globals once. libgit2 waits forever by default, so a server that accepts
/// the connection and then stalls would hang the install: the connect and every read and
/// write of libgit2's own sockets (http, https, git://, ssh) are bounded. And objects are
/// not hashed again each time they are read: every object zot reads was fetched into a
/// scratch store of its own, where the pack indexer named it by the hash of its content
/// (reading them again hashed each file twice more, with git's collision-detecting SHA-1,
/// as much work as indexing the whole pack). Called by the `zot-ext-git` helper before its
/// fetch or probe, which is the only libgit2 work of its process.
pub(crate) fn set_globals() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: these set libgit2 globals before the helper's one fetch or probe uses
        // libgit2, on the only thread that uses it.
        unsafe {
            let _ = git2::opts::set_server_connect_timeout_in_milliseconds(CONNECT_TIMEOUT_MS);
            let _ = git2::opts::set_server_timeout_in_milliseconds(STALL_TIMEOUT_MS);
        }
        git2::opts::strict_hash_verification(false);
    });
}

/// Shallow (depth 1) where the transport allows it: libgit2 cannot fetch local repositories
/// shallowly, so those are fetched in full.
pub(super) fn depth_for(url: &GitUrl) -> i32 {
    i32::from(!url.local)
}

/// A bare scratch repository at `dir`, without git's templates (hook samples, `info/exclude`):
/// nothing in it runs or is checked out, so copying them is wasted work.
pub(super) fn scratch_repository(dir: &Path) -> Result<Repository, git2::Error> {
    Repository::init_opts(
        dir,
        RepositoryInitOptions::new()
            .bare(true)
            .external_template(false),
    )
}

/// Writes `commit`'s tree into `dir` (created if missing) without a `.git`: the scratch
/// repository is given `dir` as its work tree for the checkout only, with no gitlink file.
/// (A bare repository checking out into a target folder cannot handle gitlinks: libgit2 asks
/// for the submodules, which need a work tree.) Gitlinks become empty folders. The index is
/// left alone: the scratch repository is deleted, so writing one (a stat of every file) is
/// wasted work. Nothing is received meanwhile: the time does not count against the
/// low-speed limit.
pub(super) fn check_out(repo: &Repository, commit: &git2::Commit, dir: &Path) -> Result<()> {
    let _paused = meter::pause();
    std::fs::create_dir_all(dir)?;
    repo.set_workdir(dir, false)?;
    let checked_out = repo.index().and_then(|mut index| {
        index.read_tree(&commit.tree()?)?;
        repo.checkout_tree(
            commit.as_object(),
            Some(CheckoutBuilder::new().force().update_index(false)),
        )
    });
    // A name libgit2 refuses (`.git` in any case and its NTFS and HFS+ aliases, `..`) is
    // an index or checkout error, before anything of the tree is written.
    checked_out.map_err(|e| match e.class() {
        git2::ErrorClass::Index | git2::ErrorClass::Checkout => {
            anyhow::anyhow!("the tree is not safe to check out: {}", e.message())
        }
        _ => e.into(),
    })
}

/// The refs a remote advertises.
pub(super) struct RemoteRefs {
    /// Every advertised ref with the object it points at (`<tag>^{}` for peeled tags).
    pub(super) oids: Vec<(String, Oid)>,
    /// The branch `HEAD` points at, if the remote says.
    pub(super) head: Option<String>,
}

impl RemoteRefs {
    /// The commit `name` points at: the peeled entry for annotated tags.
    pub(super) fn peeled(&self, name: &str) -> Option<String> {
        let find = |wanted: &str| {
            self.oids
                .iter()
                .find(|(n, _)| n == wanted)
                .map(|(_, oid)| oid.to_string())
        };
        find(&format!("{name}^{{}}")).or_else(|| find(name))
    }

    /// A branch or tag that points at `commit` (tags peeled), to fetch it by name: libgit2
    /// fetches an id only from servers that allow any id (`allow-*-sha1-in-want`).
    fn naming(&self, commit: Oid) -> Option<String> {
        self.oids.iter().find_map(|(name, oid)| {
            let name = name.strip_suffix("^{}").unwrap_or(name);
            let named = name.starts_with("refs/heads/") || name.starts_with("refs/tags/");
            (named && *oid == commit && self.peeled(name) == Some(commit.to_string()))
                .then(|| name.to_string())
        })
    }
}

/// The refs the remote at `url` advertises, on a connection closed afterwards.
pub(super) fn list_remote(
    repo: &Repository,
    url: &GitUrl,
    auth: &Auth,
) -> Result<RemoteRefs, git2::Error> {
    let mut remote = repo.remote_anonymous(&url.url)?;
    advertised(&connect(&mut remote, auth)?)
}

/// Connects `remote` for fetching; the refs it advertises are then [`advertised`], and
/// [`download_on`] its `remote()` fetches on the same connection (git:// and ssh negotiate
/// on it rather than connecting again).
pub(super) fn connect<'repo, 'c, 'cb>(
    remote: &'c mut Remote<'repo>,
    auth: &'cb Auth,
) -> Result<RemoteConnection<'repo, 'c, 'cb>, git2::Error> {
    meter::fetching(&redact(&String::from_utf8_lossy(remote.url_bytes())));
    remote.connect_auth(Direction::Fetch, Some(auth.callbacks(None)), None)
}

/// The refs a connected remote advertised.
pub(super) fn advertised(
    connection: &RemoteConnection<'_, '_, '_>,
) -> Result<RemoteRefs, git2::Error> {
    let oids: Vec<(String, Oid)> = connection
        .list()?
        .iter()
        .map(|h| (h.name().to_string(), h.oid()))
        .collect();
    let head = connection
        .default_branch()
        .ok()
        .and_then(|b| b.as_str().ok().map(str::to_string));
    Ok(RemoteRefs { oids, head })
}

/// Fetches a commit by id: through a branch or tag the remote advertises at it (shallow
/// everywhere), else by id where the server allows that, else every branch and tag in full,
/// then looks the (possibly abbreviated) id up. Each attempt connects anew (libgit2's fetch
/// connects and disconnects) with the one anonymous remote.
pub(super) fn fetch_commit(
    repo: &Repository,
    url: &GitUrl,
    auth: &Auth,
    advertised: &RemoteRefs,
    id: &str,
    progress: Progress,
) -> Result<Oid> {
    let failed = |e: git2::Error| fetch_error(&e, url, auth);
    let mut remote = repo.remote_anonymous(&url.url).map_err(failed)?;
    let depth = depth_for(url);
    if let Ok(oid) = Oid::from_str(id).map_err(drop).and_then(|oid| {
        let name = advertised.naming(oid).ok_or(())?;
        let refspec = format!("+{name}:{name}");
        download_on(&mut remote, auth, &[refspec], depth, &mut *progress).map_err(drop)?;
        repo.find_commit(oid).map(|c| c.id()).map_err(drop)
    }) {
        return Ok(oid);
    }
    if id.len() == 40
        && download_on(&mut remote, auth, &[id.to_string()], depth, &mut *progress).is_ok()
        && let Ok(oid) = Oid::from_str(id)
        && repo.find_commit(oid).is_ok()
    {
        return Ok(oid);
    }
    let everything = [
        "+refs/heads/*:refs/heads/*".to_string(),
        "+refs/tags/*:refs/tags/*".to_string(),
    ];
    download_on(&mut remote, auth, &everything, 0, progress).map_err(failed)?;
    repo.revparse_single(id)
        .and_then(|o| o.peel_to_commit())
        .map(|c| c.id())
        .map_err(|_| {
            MissingCommit {
                repository: url.display.clone(),
                id: id.to_string(),
            }
            .into()
        })
}

/// A commit id a repository does not have (among what its branches and tags reach).
#[derive(Debug)]
pub(super) struct MissingCommit {
    repository: String,
    id: String,
}

impl std::fmt::Display for MissingCommit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} has no commit \"{}\" reachable from its branches or tags",
            self.repository, self.id
        )
    }
}

impl std::error::Error for MissingCommit {}

/// Fetches `refspecs` with `remote`, on its connection if it has one, else on a new one
/// (closed after either way).
pub(super) fn download_on(
    remote: &mut Remote<'_>,
    auth: &Auth,
    refspecs: &[String],
    depth: i32,
    progress: Progress,
) -> Result<(), git2::Error> {
    meter::fetching(&redact(&String::from_utf8_lossy(remote.url_bytes())));
    let mut options = FetchOptions::new();
    options
        .remote_callbacks(auth.callbacks(Some(progress)))
        .download_tags(AutotagOption::None)
        .depth(depth);
    remote.fetch(refspecs, Some(&mut options), None)
}

/// Which credentials were offered, so an auth failure can say what was tried.
#[derive(Default)]
pub(super) struct Auth {
    /// Everything offered on any connection, for the error message.
    tried: RefCell<Vec<String>>,
    /// What was offered on the current connection. libgit2 asks again after each rejection,
    /// so each source is offered once per connection; every connection (listing the refs,
    /// then each fetch) starts afresh, or credentials that worked for the listing would be
    /// withheld from the fetch.
    offered: RefCell<Vec<String>>,
    /// The host key an ssh server presented (`ED25519 key SHA256:...`), for a refusal.
    host_key: RefCell<Option<String>>,
    /// What the credential helpers answered, per URL.
    answers: RefCell<Vec<(String, Option<credential::Answer>)>>,
    /// Set when the credentials callback had nothing left to offer: the failure that
    /// follows is an authentication failure whatever libgit2 calls it.
    exhausted: std::cell::Cell<bool>,
    /// The URLs whose helper answer the server refused (libgit2 asked again on the
    /// connection it was offered on).
    refused: RefCell<Vec<String>>,
}

impl Drop for Auth {
    /// Tells the credential helpers which of their answers the server took and which it
    /// refused, as git does after a request (`git credential approve`/`reject`).
    fn drop(&mut self) {
        let refused = self.refused.borrow();
        for (url, answer) in self.answers.borrow().iter() {
            if let Some(answer) = answer {
                let taken = !refused.contains(url);
                credential::settle(url, answer, taken, LowSpeed::configured().time());
            }
        }
    }
}

impl Auth {
    /// Callbacks for one new connection.
    fn callbacks<'a>(&'a self, progress: Option<Progress<'a>>) -> RemoteCallbacks<'a> {
        self.offered.borrow_mut().clear();
        let mut callbacks = RemoteCallbacks::new();
        callbacks.credentials(move |url, user, allowed| self.credentials(url, user, allowed));
        // libgit2 checks ssh host keys against ~/.ssh/known_hosts itself (passthrough keeps
        // its verdict); the key is only noted so a refusal can show its fingerprint.
        callbacks.certificate_check(move |cert, _host| {
            if let Some(key) = cert.as_hostkey() {
                *self.host_key.borrow_mut() = Some(describe_host_key(key));
            }
            Ok(git2::CertificateCheckStatus::CertificatePassthrough)
        });
        // Every byte received counts for the low-speed limit: pack data, and the server's
        // messages while it prepares the pack (asking for them also brings upload-pack's
        // keep-alives). Those messages are passed on too, a whole line at a time.
        let progress = Rc::new(RefCell::new(progress));
        let told = Rc::clone(&progress);
        let mut remote_text = RemoteText::default();
        callbacks.sideband_progress(move |text| {
            meter::received(text.len() as u64);
            if let (Some(line), Some(progress)) = (remote_text.take(text), &mut *told.borrow_mut())
            {
                progress(Step::Remote(line));
            }
            true
        });
        let mut counted = 0;
        callbacks.transfer_progress(move |p| {
            meter::received(p.received_bytes().saturating_sub(counted) as u64);
            counted = p.received_bytes();
            if let Some(progress) = &mut *progress.borrow_mut() {
                progress(Step::Receiving(Transfer {
                    objects: p.received_objects(),
                    total: p.total_objects(),
                    bytes: p.received_bytes() as u64,
                    deltas: p.indexed_deltas(),
                    total_deltas: p.total_deltas(),
                }));
            }
            true
        });
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
        let from_url = user;
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
        if allowed.contains(CredentialType::USER_PASS_PLAINTEXT) {
            if !self.attempted(helpers_label()) {
                match self.helpers_answer(url, from_url) {
                    Ok(Some(answer)) => {
                        return Cred::userpass_plaintext(&answer.username, &answer.password);
                    }
                    Ok(None) => {}
                    Err(e) => return Err(git2::Error::from_str(&format!("{e:#}"))),
                }
            } else if self.answered(url) {
                // Asked again on the connection the helpers' answer was offered on.
                self.refused.borrow_mut().push(url.to_string());
            }
        }
        if allowed.contains(CredentialType::DEFAULT) && !self.attempted("default credentials") {
            return Cred::default();
        }
        self.exhausted.set(true);
        Err(git2::Error::from_str("no more credentials to try"))
    }
}

impl Auth {
    /// What git's credential helpers answer for `url` (the server libgit2 connects to),
    /// asked once per URL for all the connections of a fetch, with the clock of the
    /// low-speed limit stopped: a helper may wait for the user; it is bounded by the
    /// low-speed time on its own.
    fn helpers_answer(
        &self,
        url: &str,
        user: Option<&str>,
    ) -> anyhow::Result<Option<credential::Answer>> {
        if let Some((_, answer)) = self.answers.borrow().iter().find(|(u, _)| u == url) {
            return Ok(answer.clone());
        }
        let _paused = meter::pause();
        let answer = credential::fill(url, user, LowSpeed::configured().time())?;
        self.answers
            .borrow_mut()
            .push((url.to_string(), answer.clone()));
        Ok(answer)
    }

    /// Whether the helpers answered for `url`.
    fn answered(&self, url: &str) -> bool {
        self.answers
            .borrow()
            .iter()
            .any(|(u, answer)| u == url && answer.is_some())
    }
}

/// How the credential helpers are named in an auth failure: whether any is configured.
fn helpers_label() -> &'static str {
    if credential::any_configured() {
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
pub(super) fn fetch_error(e: &git2::Error, url: &GitUrl, auth: &Auth) -> anyhow::Error {
    let message = scrub(e.message(), url);
    if e.class() == git2::ErrorClass::Ssh && e.code() == git2::ErrorCode::Certificate {
        return host_key_error(url, auth.host_key.borrow().as_deref(), &message);
    }
    let tried = auth.tried.borrow();
    if e.class() == git2::ErrorClass::Ssh
        || e.code() == git2::ErrorCode::Auth
        || auth.exhausted.get()
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
        let ssh = url.url.to_ascii_lowercase().starts_with("ssh://") || is_scp_like(&url.url);
        let fix = if ssh {
            "register your public key (such as ~/.ssh/id_ed25519.pub) with the server, and load its private key into the ssh agent (`ssh-add`) or keep it as ~/.ssh/id_ed25519, id_ecdsa or id_rsa"
        } else {
            "configure a git credential helper (`git config --global credential.helper store`) or put the credentials in the URL"
        };
        return anyhow!(
            "cannot authenticate to {} ({message}); tried: {tried}. Fix: {fix}",
            url.display
        );
    }
    anyhow!("cannot fetch {}: {message}", url.display)
}

/// `ED25519 key SHA256:<base64>`, the way ssh shows a host key fingerprint.
fn describe_host_key(key: &git2::cert::CertHostkey<'_>) -> String {
    let kind = key
        .hostkey_type()
        .map_or_else(|| "key".to_string(), |t| format!("{} key", t.short_name()));
    match key.hash_sha256() {
        Some(hash) => format!("{kind} SHA256:{}", base64_unpadded(hash)),
        None => kind,
    }
}

/// Base64 without the trailing `=`, as ssh prints fingerprints.
fn base64_unpadded(input: &[u8]) -> String {
    STANDARD.encode(input).trim_end_matches('=').to_string()
}

/// The server an `ssh://` or scp-like (`user@host:path`) URL names, and its port.
fn ssh_server(url: &str) -> Option<(String, u16)> {
    let authority = match url.strip_prefix("ssh://") {
        Some(rest) => rest.split('/').next()?,
        None => url.split(':').next()?,
    };
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    if let Some(rest) = host_port.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        let port = after.strip_prefix(':').and_then(|p| p.parse().ok());
        return Some((host.to_string(), port.unwrap_or(22)));
    }
    match host_port.rsplit_once(':') {
        Some((host, port)) => Some((host.to_string(), port.parse().ok()?)),
        None => Some((host_port.to_string(), 22)),
    }
}

/// The name a host has in `known_hosts`: `host` on port 22, `[host]:port` otherwise.
fn known_hosts_name(host: &str, port: u16) -> String {
    if port == 22 {
        host.to_string()
    } else {
        format!("[{host}]:{port}")
    }
}

/// The largest `known_hosts` file read (real ones hold a few hundred lines).
const KNOWN_HOSTS_LIMIT: u64 = 16 << 20;

/// Whether `file` (a `known_hosts` file) holds any key for `name`: plain and `[host]:port`
/// entries are read here, hashed (`|1|salt|hash`) ones are looked up with `ssh-keygen -F`.
fn known_host_has(file: &Path, name: &str) -> bool {
    // Bounded and never blocking: a known_hosts that is a named pipe or huge must not hang
    // or exhaust an install.
    let Ok(bytes) = crate::fsx::bounded::read(file, KNOWN_HOSTS_LIMIT) else {
        return false;
    };
    let text = String::from_utf8_lossy(&bytes);
    let mut hashed = false;
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with('@') {
            continue;
        }
        let Some(hosts) = line.split_whitespace().next() else {
            continue;
        };
        if hosts.starts_with("|1|") {
            hashed = true;
        } else if hosts.split(',').any(|h| h.eq_ignore_ascii_case(name)) {
            return true;
        }
    }
    hashed
        && std::process::Command::new("ssh-keygen")
            .arg("-F")
            .arg(name)
            .arg("-f")
            .arg(file)
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .output()
            .is_ok_and(|o| {
                o.status.success()
                    && String::from_utf8_lossy(&o.stdout)
                        .lines()
                        .any(|l| !l.trim().is_empty() && !l.starts_with('#'))
            })
}

/// Why an ssh server's host key was refused (libgit2 found it unknown or different in
/// `~/.ssh/known_hosts`), and how to check and record it.
fn host_key_error(url: &GitUrl, offered: Option<&str>, message: &str) -> anyhow::Error {
    let Some((host, port)) = ssh_server(&url.url) else {
        return anyhow!(
            "cannot verify the ssh host key of {} ({message}); check it and add it to ~/.ssh/known_hosts with ssh-keyscan",
            url.display
        );
    };
    let name = known_hosts_name(&host, port);
    let scan = if port == 22 {
        format!("ssh-keyscan {host} >> ~/.ssh/known_hosts")
    } else {
        format!("ssh-keyscan -p {port} {host} >> ~/.ssh/known_hosts")
    };
    let offered = offered
        .map(|k| format!(" (the server offered the {k})"))
        .unwrap_or_default();
    let known_hosts = directories::BaseDirs::new()
        .map(|d| d.home_dir().join(".ssh/known_hosts"))
        .filter(|f| known_host_has(f, &name));
    if known_hosts.is_some() {
        return anyhow!(
            "the host key of {host}:{port} has CHANGED: it does not match the key recorded for {name} in ~/.ssh/known_hosts{offered}; refusing to connect, as someone may be intercepting the connection. If the server's key was replaced on purpose, confirm the new key with its administrator, then remove the old one with `ssh-keygen -R '{name}'` and add the new one with: {scan}"
        );
    }
    anyhow!(
        "the host key of {host}:{port} is not in ~/.ssh/known_hosts{offered}; check it and add it with: {scan}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_are_base64_without_padding() {
        assert_eq!(base64_unpadded(b"f"), "Zg");
        assert_eq!(base64_unpadded(b"fo"), "Zm8");
        assert_eq!(base64_unpadded(b"foo"), "Zm9v");
        assert_eq!(base64_unpadded(&[0xfb, 0xff]), "+/8");
    }

    #[test]
    fn ssh_server_of_urls() {
        let server = |u: &str| ssh_server(u).map(|(h, p)| format!("{h} {p}"));
        assert_eq!(server("ssh://git@host:2222/r.git").unwrap(), "host 2222");
        assert_eq!(server("ssh://host/r.git").unwrap(), "host 22");
        assert_eq!(server("ssh://u:pw@[::1]:2200/r").unwrap(), "::1 2200");
        assert_eq!(
            server("git@example.com:me/r.git").unwrap(),
            "example.com 22"
        );
        assert_eq!(known_hosts_name("h", 22), "h");
        assert_eq!(known_hosts_name("h", 2222), "[h]:2222");
    }

    #[test]
    fn known_hosts_entries_plain_and_bracketed() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("known_hosts");
        std::fs::write(
            &file,
            "# comment\n@revoked [a]:1 ssh-ed25519 AAAA\nb,[a]:2 ssh-ed25519 AAAA\nC ssh-rsa AAAA\n",
        )
        .unwrap();
        assert!(known_host_has(&file, "[a]:2"));
        assert!(known_host_has(&file, "b"));
        assert!(known_host_has(&file, "c"));
        assert!(!known_host_has(&file, "[a]:1"));
        assert!(!known_host_has(&file, "a"));
        assert!(!known_host_has(&dir.path().join("missing"), "b"));
    }

    #[test]
    fn a_known_hosts_that_is_a_named_pipe_is_not_waited_on() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("known_hosts");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        // With no writer, opening the pipe for reading would block forever.
        assert!(!known_host_has(&fifo, "b"));
    }
}
