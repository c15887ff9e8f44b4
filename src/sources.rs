//! What an install argument names: a local directory or a git repository, and how to show
//! a git URL without the credentials it may carry.

use std::path::{Path, PathBuf};

/// A parsed install source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A directory on this machine, copied recursively.
    Path(PathBuf),
    /// A git repository, cloned.
    Git(GitUrl),
}

/// A git URL as typed (used to fetch) and its credential-free form (shown and stored).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitUrl {
    pub url: String,
    pub display: String,
    /// `file://` URLs and local paths: libgit2 cannot fetch these shallowly.
    pub local: bool,
    /// The folder named after `#` in `URL#path`: install only that part of the repository.
    pub subdir: Option<String>,
}

const REMOTE_SCHEMES: [&str; 4] = ["https://", "http://", "ssh://", "git://"];

impl Source {
    pub fn parse(arg: &str) -> Source {
        let lower = arg.to_ascii_lowercase();
        if REMOTE_SCHEMES.iter().any(|s| lower.starts_with(s)) {
            return Source::git(arg, false);
        }
        if lower.starts_with("file://") {
            return Source::git(arg, true);
        }
        if is_scp_like(arg) {
            return Source::git(arg, false);
        }
        let without_fragment = arg.split('#').next().unwrap_or(arg);
        if without_fragment.trim_end_matches('/').ends_with(".git") {
            return Source::git(arg, true);
        }
        Source::Path(PathBuf::from(arg))
    }

    /// Like [`Source::parse`], but a local path ending in `.git` that is an extension folder
    /// (it has `extension.json` at the top) is copied as a folder rather than cloned.
    pub fn parse_on_disk(arg: &str) -> Source {
        match Source::parse(arg) {
            Source::Git(url)
                if url.local
                    && url.subdir.is_none()
                    && !url.url.to_ascii_lowercase().starts_with("file://")
                    && Path::new(&url.url).join("extension.json").is_file() =>
            {
                Source::Path(PathBuf::from(arg))
            }
            source => source,
        }
    }

    fn git(arg: &str, local: bool) -> Source {
        let (url, subdir) = match arg.rsplit_once('#') {
            Some((url, path)) if !path.is_empty() => (url, Some(path.to_string())),
            Some((url, _)) => (url, None),
            None => (arg, None),
        };
        Source::Git(GitUrl {
            url: url.to_string(),
            display: redact(url),
            local,
            subdir,
        })
    }
}

/// `user@host:path`, the scp-like syntax for SSH (but not `C:\...` or `./a:b`).
pub(crate) fn is_scp_like(arg: &str) -> bool {
    let Some((user_host, path)) = arg.split_once(':') else {
        return false;
    };
    let Some((user, host)) = user_host.split_once('@') else {
        return false;
    };
    let plain = |s: &str| !s.is_empty() && !s.contains(['/', '\\', ' ']);
    plain(user) && plain(host) && !path.is_empty()
}

/// Removes credentials from a URL: an https/http/git/file user-info part (often a token)
/// becomes `***`; an ssh user name is kept and its password, if any, becomes `***`.
pub fn redact(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else {
        return url.to_string();
    };
    let rest = &url[scheme_end + 3..];
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let Some(at) = rest[..authority_end].rfind('@') else {
        return url.to_string();
    };
    let scheme = &url[..scheme_end];
    let userinfo = &rest[..at];
    let hidden = if scheme.eq_ignore_ascii_case("ssh") {
        match userinfo.split_once(':') {
            Some((user, _)) => format!("{user}:***"),
            None => userinfo.to_string(),
        }
    } else {
        "***".to_string()
    };
    format!("{scheme}://{hidden}@{}", &rest[at + 1..])
}

/// Replaces every occurrence of the raw URL and its secrets in `message` with the redacted URL.
pub fn scrub(message: &str, url: &GitUrl) -> String {
    let mut out = message.replace(&url.url, &url.display);
    if let Some(scheme_end) = url.url.find("://") {
        let rest = &url.url[scheme_end + 3..];
        let authority = &rest[..rest.find('/').unwrap_or(rest.len())];
        if let Some(at) = authority.rfind('@') {
            let userinfo = &authority[..at];
            for secret in userinfo.split(':').filter(|s| s.len() >= 4) {
                out = out.replace(secret, "***");
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_git(arg: &str) -> bool {
        matches!(Source::parse(arg), Source::Git(_))
    }

    #[test]
    fn git_forms_are_recognised() {
        for arg in [
            "https://example.com/a/b",
            "HTTP://example.com/a",
            "ssh://git@example.com/a.git",
            "git://example.com/a",
            "file:///srv/repo",
            "git@github.com:owner/repo",
            "../some/repo.git",
            "/srv/repo.git/",
        ] {
            assert!(is_git(arg), "{arg}");
        }
    }

    #[test]
    fn paths_stay_paths() {
        for arg in [
            "./hello-py",
            "hello",
            "/abs/dir",
            "C:\\ext",
            "./a@b:c/d",
            "dir.gitx",
        ] {
            assert!(!is_git(arg), "{arg}");
        }
    }

    #[test]
    fn local_git_is_flagged() {
        let Source::Git(g) = Source::parse("file:///srv/r") else {
            panic!()
        };
        assert!(g.local);
        let Source::Git(g) = Source::parse("https://h/r") else {
            panic!()
        };
        assert!(!g.local);
    }

    #[test]
    fn fragment_names_a_subfolder() {
        let Source::Git(g) = Source::parse("https://h/zot.git#examples/extensions/clock") else {
            panic!()
        };
        assert_eq!(g.url, "https://h/zot.git");
        assert_eq!(g.subdir.as_deref(), Some("examples/extensions/clock"));
        let Source::Git(g) = Source::parse("../repo.git#ext") else {
            panic!()
        };
        assert_eq!(g.url, "../repo.git");
        assert!(g.local);
        let Source::Git(g) = Source::parse("https://h/r#") else {
            panic!()
        };
        assert_eq!((g.url.as_str(), g.subdir), ("https://h/r", None));
    }

    #[test]
    fn credentials_are_redacted() {
        assert_eq!(
            redact("https://user:pw@host/r.git"),
            "https://***@host/r.git"
        );
        assert_eq!(redact("https://ghp_token@host/r"), "https://***@host/r");
        assert_eq!(redact("ssh://git@host/r"), "ssh://git@host/r");
        assert_eq!(redact("ssh://git:pw@host/r"), "ssh://git:***@host/r");
        assert_eq!(redact("https://host/a@b"), "https://host/a@b");
        assert_eq!(redact("git@host:r"), "git@host:r");
    }

    #[test]
    fn scrub_hides_secrets_in_messages() {
        let Source::Git(g) = Source::parse("https://alice:s3cret@host/r") else {
            panic!()
        };
        let msg = format!("failed {} with s3cret", g.url);
        let out = scrub(&msg, &g);
        assert!(!out.contains("s3cret"), "{out}");
    }
}
