//! The git kind's sources: a URL as typed (`https://`, `ssh://`, `git://`, `file://`, the
//! scp-like `user@host:path`, a local path ending in `.git`) with its `#path` subfolder, its
//! credential-free form, and the repository it names for the fetch cache.

use crate::output::redact::{self, is_scp_like, redact, scp_at, userinfo_at};

/// A git URL as typed (used to fetch) and its credential-free form (shown and stored).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct GitUrl {
    pub url: String,
    pub display: String,
    /// `file://` URLs and local paths: libgit2 cannot fetch these shallowly.
    pub local: bool,
    /// The folder named after `#` in `URL#path`: install only that part of the repository.
    pub subdir: Option<String>,
}

const REMOTE_SCHEMES: [&str; 4] = ["https://", "http://", "ssh://", "git://"];

impl GitUrl {
    /// `arg` read as a repository, or `None` when it names a folder.
    pub(crate) fn parse(arg: &str) -> Option<GitUrl> {
        let lower = arg.to_ascii_lowercase();
        if REMOTE_SCHEMES.iter().any(|s| lower.starts_with(s)) {
            return Some(GitUrl::new(arg, false));
        }
        if lower.starts_with("file://") {
            return Some(GitUrl::new(arg, true));
        }
        if is_scp_like(arg) {
            return Some(GitUrl::new(arg, false));
        }
        let (without_fragment, _) = split_fragment(arg);
        // Case-sensitive, as zot's own `zot ext install` matches `.git` (extcmd.go).
        #[allow(clippy::case_sensitive_file_extension_comparisons)]
        let named = without_fragment.trim_end_matches('/').ends_with(".git");
        named.then(|| GitUrl::new(arg, true))
    }

    /// The URL an install record keeps (credentials left out, a local repository's path made
    /// absolute), read back as a repository whatever its form.
    pub(crate) fn recorded(source: &str) -> GitUrl {
        GitUrl::parse(source).unwrap_or_else(|| GitUrl::new(source, true))
    }

    fn new(arg: &str, local: bool) -> GitUrl {
        let (url, fragment) = split_fragment(arg);
        GitUrl {
            url: url.to_string(),
            display: redact(url),
            local,
            subdir: fragment.filter(|f| !f.is_empty()).map(str::to_string),
        }
    }

    /// A repository named by a local path (`../repo.git`, `/srv/r.git`), not a URL: it is
    /// relative to a folder, and may be an extension folder to copy instead.
    pub(crate) fn is_local_path(&self) -> bool {
        self.local && !self.url.to_ascii_lowercase().starts_with("file://")
    }

    /// The repository this URL names, as the fetch cache tells sources apart: without user
    /// name and password, scheme and host in lowercase, the path without a trailing `/` or
    /// `.git`; a local path made absolute (relative ones name different repositories from
    /// different folders).
    pub(crate) fn cache_key(&self) -> String {
        let url = self.url.as_str();
        if redact::scheme_end(url).is_some()
            && let Some((scheme, rest)) = url.split_once("://")
        {
            let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
            let host = authority
                .rsplit_once('@')
                .map_or(authority, |(_, host)| host);
            return format!(
                "{}://{}/{}",
                scheme.to_ascii_lowercase(),
                host.to_ascii_lowercase(),
                repository_path(path)
            );
        }
        if let Some(at) = redact::scp_at(url) {
            let (_, address) = url.split_at(at + 1);
            let (host, path) = address.split_once(':').unwrap_or((address, ""));
            return format!("{}:{}", host.to_ascii_lowercase(), repository_path(path));
        }
        let absolute = std::fs::canonicalize(url)
            .or_else(|_| std::path::absolute(url))
            .map_or_else(|_| url.to_string(), |p| p.display().to_string());
        repository_path(&absolute).to_string()
    }

    /// An scp-like address with a password (`user:password@host:path`): libgit2 reads
    /// `user` as the host of such an address, so it can never be fetched.
    pub(crate) fn scp_password(&self) -> bool {
        scp_at(&self.url)
            .and_then(|at| self.url.get(..at))
            .is_some_and(|user| user.contains(':'))
    }
}

/// A repository's path without a trailing `/` or `.git` (`r`, `r/`, `r.git` and `r.git/`
/// are one repository to git).
fn repository_path(path: &str) -> &str {
    let path = path.trim_end_matches('/');
    path.strip_suffix(".git")
        .unwrap_or(path)
        .trim_end_matches('/')
}

/// `URL#path` split at the `#` that starts the fragment: the first one after the user-info
/// part, so a password holding `#` stays in the URL.
fn split_fragment(arg: &str) -> (&str, Option<&str>) {
    let from = userinfo_at(arg).map_or(0, |at| at + 1);
    let Some((head, tail)) = arg.split_at_checked(from) else {
        return (arg, None);
    };
    match tail.split_once('#') {
        Some((before, after)) => (
            arg.get(..head.len() + before.len()).unwrap_or(arg),
            Some(after),
        ),
        None => (arg, None),
    }
}

/// Replaces every occurrence of the raw URL and its secrets in `message` (also their
/// percent-decoded forms, as libgit2 shows them) with the redacted URL or `***`, then
/// redacts whatever else looks like a URL.
pub(crate) fn scrub(message: &str, url: &GitUrl) -> String {
    redact::scrub(message, &url.url, &url.display)
}
