//! What an install argument names (a local directory or a git repository, and the
//! subfolder after `#`). Credentials in it are hidden by [`crate::output::redact`] wherever
//! it is shown.

pub(crate) mod controls;
pub(crate) mod copy;
pub(crate) mod copy_tree;
pub(crate) mod git;
pub(crate) mod helper;

use std::path::{Path, PathBuf};

use crate::output::redact::{self, is_scp_like, redact, scp_at, userinfo_at};
use crate::output::sh_quote;

/// A parsed install source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Source {
    /// A directory on this machine, copied recursively.
    Path(PathBuf),
    /// A git repository, cloned.
    Git(GitUrl),
}

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

/// What commands ask of a source instead of matching its kind.
impl Source {
    /// Whether it is fetched at a ref (`--ref`, a project entry's `ref`, a locked commit):
    /// a repository; a folder is copied as it is now.
    pub(crate) fn takes_ref(&self) -> bool {
        matches!(self, Source::Git(_))
    }

    /// Whether the fetch cache serves it (what it keys is a commit of a repository).
    pub(crate) fn cached(&self) -> bool {
        matches!(self, Source::Git(_))
    }

    /// Whether it names something on this machine by a path (a folder, or a repository by
    /// its path): relative to a folder, so a project file keeps it relative to its root.
    pub(crate) fn is_local_path(&self) -> bool {
        match self {
            Source::Path(_) => true,
            Source::Git(url) => url.is_local_path(),
        }
    }

    /// How it is named in messages, `typed` as the user gave it: a folder by its path
    /// (without a `#path` fragment, which is the subfolder), a repository as typed.
    pub(crate) fn shown(&self, typed: &str) -> String {
        match self {
            Source::Path(path) => path.display().to_string(),
            Source::Git(_) => typed.to_string(),
        }
    }

    pub(crate) fn parse(arg: &str) -> Source {
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
        let (without_fragment, _) = split_fragment(arg);
        // Case-sensitive, as zot's own `zot ext install` matches `.git` (extcmd.go).
        #[allow(clippy::case_sensitive_file_extension_comparisons)]
        if without_fragment.trim_end_matches('/').ends_with(".git") {
            return Source::git(arg, true);
        }
        Source::Path(PathBuf::from(arg))
    }

    /// Like [`Source::parse`], but looking at the disk: a local path ending in `.git` that is
    /// an extension folder (it has `extension.json` at the top) is copied as a folder rather
    /// than cloned, and `folder#path` names the subfolder `path` of a local folder, as
    /// `URL#path` does for a repository (see [`folder_fragment`]).
    pub(crate) fn parse_on_disk(arg: &str) -> OnDisk {
        match Source::parse(arg) {
            Source::Git(url)
                if url.is_local_path()
                    && url.subdir.is_none()
                    && Path::new(&url.url).join("extension.json").is_file() =>
            {
                OnDisk::plain(Source::Path(PathBuf::from(arg)))
            }
            Source::Git(url) => OnDisk {
                subdir: url.subdir.clone(),
                ..OnDisk::plain(Source::Git(url))
            },
            Source::Path(path) => folder_fragment(arg, path),
        }
    }

    fn git(arg: &str, local: bool) -> Source {
        let (url, fragment) = split_fragment(arg);
        Source::Git(GitUrl {
            url: url.to_string(),
            display: redact(url),
            local,
            subdir: fragment.filter(|f| !f.is_empty()).map(str::to_string),
        })
    }
}

/// An install argument read with the disk at hand: the source, the subfolder its `#path`
/// names, and a note to show when the argument could be read two ways.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OnDisk {
    pub source: Source,
    /// The folder after `#`: a git URL's fragment, or the `path` of a local `folder#path`.
    pub subdir: Option<String>,
    /// Set when a local `folder#path` exists under that very name and `folder` has the
    /// subfolder `path` too: the literal folder is used, and the note says how to get the other.
    pub note: Option<String>,
}

impl OnDisk {
    fn plain(source: Source) -> OnDisk {
        OnDisk {
            source,
            subdir: None,
            note: None,
        }
    }
}

/// A local argument with `#` in it: when nothing exists under the literal name and the part
/// before a `#` is a folder, the part after it is a subfolder (as with `--subdir`); the first
/// `#` whose left part is a folder counts. A literal path that exists always wins.
fn folder_fragment(arg: &str, literal: PathBuf) -> OnDisk {
    let Some((folder, fragment)) = split_at_folder(arg) else {
        return OnDisk::plain(Source::Path(literal));
    };
    let subdir = Some(fragment.to_string()).filter(|f| !f.is_empty());
    if std::fs::symlink_metadata(&literal).is_err() {
        return OnDisk {
            subdir,
            ..OnDisk::plain(Source::Path(PathBuf::from(folder)))
        };
    }
    let both = subdir
        .as_ref()
        .is_some_and(|sub| Path::new(folder).join(sub).exists());
    OnDisk {
        note: both.then(|| {
            format!(
                "note: {arg} exists under that name and is used as it is; for the folder {fragment} inside {folder}, give: zot ext install {} --subdir {}",
                sh_quote(folder),
                sh_quote(fragment)
            )
        }),
        ..OnDisk::plain(Source::Path(literal))
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

impl Source {
    /// `Err` saying why a git URL with a control character is refused ([`controls`]).
    pub(crate) fn check_controls(&self) -> Result<(), String> {
        match self {
            Source::Git(url) => controls::check(&url.url),
            Source::Path(_) => Ok(()),
        }
    }
}

impl GitUrl {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::redact::{redact, redact_text};

    #[test]
    fn cache_keys_leave_out_credentials_case_and_git_suffix() {
        let key = |url: &str| match Source::parse(url) {
            Source::Git(url) => url.cache_key(),
            Source::Path(_) => panic!("{url} is a path"),
        };
        let plain = "https://example.com/Team/Repo";
        for same in [
            "https://example.com/Team/Repo.git",
            "HTTPS://EXAMPLE.com/Team/Repo/",
            "https://user:secret@example.com/Team/Repo.git/",
        ] {
            assert_eq!(key(same), plain, "{same}");
        }
        assert_ne!(
            key("https://example.com/team/repo"),
            plain,
            "paths keep their case"
        );
        assert_ne!(key("https://example.com:8443/Team/Repo"), plain);
        assert_ne!(key("http://example.com/Team/Repo"), plain);
        assert_eq!(key("git@GitHub.com:me/x.git"), "github.com:me/x");
        assert!(!key("https://u:p%40ss@h.example/r").contains("p%40ss"));
    }

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
        assert_eq!(
            redact("git+ssh://git:pw@host/r"),
            "git+ssh://git:***@host/r"
        );
        assert_eq!(redact("file://u:pw@/srv/r"), "file://***@/srv/r");
        assert_eq!(redact("git://u:pw@host:9418/r"), "git://***@host:9418/r");
        assert_eq!(redact("https://host/a@b"), "https://host/a@b");
        assert_eq!(redact("git@host:r"), "git@host:r");
        assert_eq!(redact("/srv/some dir/r.git"), "/srv/some dir/r.git");
    }

    #[test]
    fn odd_characters_in_a_password_stay_hidden() {
        for (url, shown) in [
            (
                "http://user:hunter2#rest@127.0.0.1:1/x.git",
                "http://***@127.0.0.1:1/x.git",
            ),
            ("https://u:a?b@host/r", "https://***@host/r"),
            ("https://u:a@b:c@host/r", "https://***@host/r"),
            ("https://u:p#w@host", "https://***@host"),
            ("ssh://git:a#b?c@d@host:22/r", "ssh://git:***@host:22/r"),
        ] {
            assert_eq!(redact(url), shown, "{url}");
        }
    }

    #[test]
    fn a_hash_in_the_password_does_not_start_the_subfolder() {
        let Source::Git(g) = Source::parse("http://user:hunter2#rest@127.0.0.1:1/x.git") else {
            panic!()
        };
        assert_eq!(g.url, "http://user:hunter2#rest@127.0.0.1:1/x.git");
        assert_eq!(g.display, "http://***@127.0.0.1:1/x.git");
        assert_eq!(g.subdir, None);
        let Source::Git(g) = Source::parse("https://u:p#w@h/r.git#ext/clock") else {
            panic!()
        };
        assert_eq!(g.url, "https://u:p#w@h/r.git");
        assert_eq!(g.subdir.as_deref(), Some("ext/clock"));
        let Source::Git(g) = Source::parse("git:p#w@host:owner/r.git#ext") else {
            panic!()
        };
        assert_eq!(g.url, "git:p#w@host:owner/r.git");
        assert_eq!(g.display, "git:***@host:owner/r.git");
        assert_eq!(g.subdir.as_deref(), Some("ext"));
    }

    #[test]
    fn query_secrets_are_redacted() {
        assert_eq!(
            redact("https://h/r.git?access_token=abc123&ref=main"),
            "https://h/r.git?access_token=***&ref=main"
        );
        for name in [
            "token",
            "access_token",
            "PRIVATE_TOKEN",
            "key",
            "api_key",
            "password",
            "passwd",
            "secret",
            "sig",
            "signature",
            "auth",
            "X-Amz-Signature",
            "X-Amz-Credential",
            "X-Amz-Security-Token",
        ] {
            let url = format!("https://h/r?{name}=s3cr3t#sub");
            assert_eq!(
                redact(&url),
                format!("https://h/r?{name}=***#sub"),
                "{name}"
            );
        }
        assert_eq!(redact("https://h/r?ref=main"), "https://h/r?ref=main");
        assert_eq!(redact("https://h/r#x?token=y"), "https://h/r#x?token=y");
    }

    #[test]
    fn query_secrets_after_a_semicolon_or_with_an_escaped_name_are_redacted() {
        assert_eq!(
            redact("https://h/r.git?a=1;token=s3cr3t&b=2"),
            "https://h/r.git?a=1;token=***&b=2"
        );
        assert_eq!(
            redact("https://h/r.git?%74oken=s3cr3t"),
            "https://h/r.git?%74oken=***"
        );
        assert_eq!(
            redact("https://h/r.git?access%5Ftoken=s3cr3t;ref=main"),
            "https://h/r.git?access%5Ftoken=***"
        );
        let Source::Git(g) = Source::parse("https://h/r.git?a=1;%74oken=s3cr3t") else {
            panic!()
        };
        assert_eq!(g.display, "https://h/r.git?a=1;%74oken=***");
        let scrubbed = scrub("server said: bad token s3cr3t", &g);
        assert_eq!(scrubbed, "server said: bad token ***");
    }

    #[test]
    fn scp_like_passwords_are_redacted() {
        assert_eq!(
            redact("user:pw@host:owner/r.git"),
            "user:***@host:owner/r.git"
        );
        assert_eq!(redact("user:p@w:x@host:r"), "user:***@host:r");
        assert!(is_git("user:pw@host:owner/r.git"));
        assert!(is_git("git@host:owner/r.git#a@b"));
        let Source::Git(g) = Source::parse("user:pw@host:r") else {
            panic!()
        };
        assert!(g.scp_password());
        let Source::Git(g) = Source::parse("git@host:r") else {
            panic!()
        };
        assert!(!g.scp_password());
    }

    #[test]
    fn the_scanner_redacts_every_url_in_a_message() {
        let message = "cannot fetch http://user:hunter2#rest@127.0.0.1:1/x.git: failed \
             (\"https://h/r?private_token=tok3n\"), see ssh://git:pw@h/r and user:pw2@host:r \
             or git+https://x/?u=https://a:b@c/";
        let out = redact_text(message);
        for secret in ["hunter2", "rest@", "tok3n", ":pw@", "pw2", "a:b"] {
            assert!(!out.contains(secret), "{secret} in {out}");
        }
        assert!(
            out.starts_with("cannot fetch http://***@127.0.0.1:1/x.git: failed"),
            "{out}"
        );
        assert!(
            out.contains("ssh://git:***@h/r and user:***@host:r"),
            "{out}"
        );
        assert!(out.contains("https://***@c/"), "{out}");
        assert_eq!(redact_text(&out), out);
        let plain = "extension \"a@b\" at /x/y: not found; mail me@example.com: ok";
        assert_eq!(redact_text(plain), plain);
    }

    #[test]
    fn query_secrets_in_words_that_are_not_urls_are_redacted() {
        let message = "cannot fetch git://h/single?token=***: remote error: \
             access denied or repository not exported: /single?token=abc";
        assert_eq!(
            redact_text(message),
            "cannot fetch git://h/single?token=***: remote error: \
             access denied or repository not exported: /single?token=***"
        );
        assert_eq!(
            redact_text("(/r?ref=main&Key=k;sig=z#top)"),
            "(/r?ref=main&Key=***#top)"
        );
        assert_eq!(redact_text("/r?a=1?pass=x y"), "/r?a=1?pass=*** y");
        assert_eq!(redact_text("keys: a=b ?ref=main"), "keys: a=b ?ref=main");
        let Source::Git(g) = Source::parse("git://127.0.0.1:1/single?token=abc") else {
            panic!()
        };
        let out = scrub("not exported: /single?token=abc", &g);
        assert_eq!(out, "not exported: /single?token=***");
    }

    #[test]
    fn a_wide_character_before_a_scheme_is_not_cut_in_half() {
        assert_eq!(redact_text("é://x"), "é://x");
        assert_eq!(
            redact_text("cannot fetch ü𞹤https://u:pw@h/r"),
            "cannot fetch ü𞹤https://***@h/r"
        );
    }

    #[test]
    fn scrub_hides_secrets_in_messages() {
        let Source::Git(g) = Source::parse("https://alice:s3cret@host/r") else {
            panic!()
        };
        let msg = format!("failed {} with s3cret", g.url);
        let out = scrub(&msg, &g);
        assert!(!out.contains("s3cret"), "{out}");
        let Source::Git(g) = Source::parse("https://alice:p%23ss%40w0rd@host/r?token=t0k3n") else {
            panic!()
        };
        let out = scrub("rejected p#ss@w0rd and t0k3n for alice", &g);
        assert_eq!(out, "rejected *** and *** for ***");
    }

    mod props {
        use super::super::*;
        use crate::output::redact::{HIDDEN, redact, redact_text};
        use proptest::prelude::*;

        /// Printable characters, also `#?@:` and spaces, but no `/` (a user-info part ends at
        /// the first `/`; a password holding one must be written `%2F`).
        const USERINFO_SECRET: &str = "[!-.0-~ é]{1,24}";
        /// A query value ends at `&` or `#` by definition.
        const QUERY_SECRET: &str = "[!-\"$-%'-~ é]{1,24}";
        const HOST: &str = "host.example:8443";
        const PATH: &str = "/owner/repo.git";

        /// Every form a secret can take in a source string, built around `secret`.
        fn forms(secret: &str, name: &str) -> Vec<String> {
            vec![
                format!("https://{secret}@{HOST}{PATH}"),
                format!("https://alice:{secret}@{HOST}{PATH}"),
                format!("http://alice:{secret}@{HOST}{PATH}"),
                format!("git://alice:{secret}@{HOST}{PATH}"),
                format!("file://alice:{secret}@{HOST}{PATH}"),
                format!("ssh://git:{secret}@{HOST}{PATH}"),
                format!("git:{secret}@host.example:owner/repo.git"),
            ]
            .into_iter()
            .chain(
                (!secret.contains(['&', '#']))
                    .then(|| format!("https://{HOST}{PATH}?ref=main&{name}={secret}")),
            )
            .collect()
        }

        fn secret_name() -> impl Strategy<Value = String> {
            prop::sample::select(vec![
                "token",
                "access_token",
                "private_token",
                "key",
                "api_key",
                "password",
                "passwd",
                "secret",
                "sig",
                "signature",
                "auth",
                "X-Amz-Signature",
            ])
            .prop_flat_map(|n| {
                let name = n.to_string();
                any::<bool>().prop_map(move |upper| {
                    if upper {
                        name.to_ascii_uppercase()
                    } else {
                        name.clone()
                    }
                })
            })
        }

        fn check(secret: &str, name: &str) -> Result<(), TestCaseError> {
            let placeholder = forms("x", name);
            for (url, fixed) in forms(secret, name).iter().zip(&placeholder) {
                let out = redact(url);
                // The output does not depend on the secret at all ...
                prop_assert_eq!(&out, &redact(fixed), "{}", url);
                // ... so it holds the secret only where the secret-free form does.
                if !redact(fixed).contains(secret) {
                    prop_assert!(!out.contains(secret), "{} -> {}", url, out);
                }
                prop_assert_eq!(redact(&out), out.clone(), "not idempotent: {}", url);
                prop_assert!(out.contains("host.example"), "{}", out);
                prop_assert!(out.contains("owner/repo.git"), "{}", out);
                let Source::Git(g) = Source::parse(&format!("{url}#sub/dir")) else {
                    return Err(TestCaseError::fail(format!("{url} is not git")));
                };
                prop_assert_eq!(g.subdir.as_deref(), Some("sub/dir"), "{}", url);
                prop_assert_eq!(&g.url, url);
                prop_assert_eq!(&g.display, &out);
            }
            Ok(())
        }

        proptest! {
            #[test]
            fn userinfo_secrets_never_show(secret in USERINFO_SECRET, name in secret_name()) {
                // `***` and punctuation reads as already redacted.
                prop_assume!(!secret.starts_with(HIDDEN));
                check(&secret, &name)?;
            }

            #[test]
            fn query_secrets_never_show(secret in QUERY_SECRET, name in secret_name()) {
                prop_assume!(!secret.starts_with(HIDDEN));
                let url = format!("https://{HOST}{PATH}?{name}={secret}&ref=main");
                let out = redact(&url);
                prop_assert_eq!(&out, &format!("https://{HOST}{PATH}?{name}=***&ref=main"));
                prop_assert_eq!(redact(&out), out.clone());
            }

            #[test]
            fn messages_never_show_secrets(secret in "[!-.0-~é]{4,24}", name in secret_name()) {
                for url in forms(&secret, &name) {
                    let message = format!("cannot fetch {url}: refused (\"{url}\")\tsee {url}");
                    let out = redact_text(&message);
                    let fixed = redact_text(&message.replace(&secret, "x"));
                    if !fixed.contains(&secret) {
                        prop_assert!(!out.contains(&secret), "{}", out);
                    }
                    prop_assert_eq!(redact_text(&out), out.clone());
                }
            }

            #[test]
            fn messages_never_show_query_secrets(secret in QUERY_SECRET, name in secret_name()) {
                prop_assume!(secret.len() >= 4 && !secret.contains(char::is_whitespace));
                prop_assume!(!secret.starts_with(HIDDEN));
                let url = format!("https://{HOST}{PATH}?{name}={secret}");
                let out = redact_text(&format!("cannot fetch {url}: refused"));
                // The value runs to the end of the word, the `:` included.
                prop_assert_eq!(&out, &format!("cannot fetch https://{HOST}{PATH}?{name}=*** refused"));
                let shown = redact_text(&format!("cannot fetch {}: refused", redact(&url)));
                prop_assert_eq!(&shown, &format!("cannot fetch https://{HOST}{PATH}?{name}=***: refused"));
            }

            #[test]
            fn server_text_never_shows_query_secrets(secret in "[!-\"$-%'-~é]{1,24}", name in secret_name()) {
                prop_assume!(!secret.starts_with(HIDDEN));
                let message = format!("not exported: /owner/repo?ref=main&{name}={secret}");
                let out = redact_text(&message);
                prop_assert_eq!(&out, &format!("not exported: /owner/repo?ref=main&{name}=***"));
                prop_assert_eq!(redact_text(&out), out.clone());
            }

            #[test]
            fn parse_never_panics(arg in "\\PC{0,64}") {
                let _ = Source::parse(&arg);
                let _ = redact(&arg);
                let _ = redact_text(&arg);
            }

            #[test]
            fn parse_never_panics_on_url_like_input(arg in "[a-z:/@#?&=%.]{0,40}") {
                if let Source::Git(g) = Source::parse(&arg) {
                    let _ = g.scp_password();
                    let _ = scrub(&arg, &g);
                }
                let out = redact(&arg);
                prop_assert_eq!(redact(&out), out.clone());
            }
        }
    }
}
