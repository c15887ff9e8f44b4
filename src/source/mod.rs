//! What an install argument names, and the one interface commands ask about it: a source
//! is one of the kinds, each a module of its own ([`folder`], [`git`]) that parses its
//! arguments, stages a fetch into the store's staging folder, says what the record pins and
//! whether the fetch cache serves it. Commands call the methods here instead of matching
//! kinds. Credentials in a source are hidden by [`crate::output::redact`] wherever it is
//! shown.

pub(crate) mod controls;
pub(crate) mod copy;
pub(crate) mod copy_tree;
pub(crate) mod credential_process;
pub(crate) mod folder;
pub(crate) mod git;
pub(crate) mod helper;
pub(crate) mod meter;
pub(crate) mod oci;
pub(crate) mod staged;

use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::catalog::paths::ScopeDirs;
use crate::output::Output;
use crate::store::Staging;
use crate::store::record::{Kind, Record};
use git::Probe;
use git::cache::Cache;
use git::url::GitUrl;
use oci::reference::OciRef;
use staged::{Built, check_subdir};

/// A parsed install source: one of the kinds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Source {
    /// A directory on this machine, copied recursively ([`folder`]).
    Path(PathBuf),
    /// A git repository, cloned ([`git`]).
    Git(GitUrl),
    /// An extension published in an OCI registry, pulled ([`oci`]).
    Oci(OciRef),
}

/// What to fetch into staging, and how.
pub(crate) struct Fetch<'a> {
    pub source: &'a Source,
    /// The source as the user gave it, for messages about local folders.
    pub shown: &'a str,
    pub git_ref: Option<&'a str>,
    /// A folder inside the source that holds the extension.
    pub subdir: Option<&'a str>,
    /// The fetch cache: a source pinned to what the cache keys (a full commit id) is taken
    /// from it when there, and every fetched tree is put in it.
    pub cache: Option<&'a Cache>,
}

impl Fetch<'_> {
    /// Fetches the source into `staging` (its subfolder when one is asked for) and reads the
    /// manifest there; a local source is checked against the store of `dirs` first.
    pub(crate) fn stage(&self, staging: &Staging, dirs: &ScopeDirs, out: &Output) -> Result<Built> {
        let subdir = self.subdir.map(check_subdir).transpose()?;
        let subdir = subdir.as_deref();
        match self.source {
            Source::Path(path) => folder::stage(staging, path, dirs, subdir, self.shown, out),
            Source::Git(url) => {
                git::stage::stage(staging, url, self.git_ref, self.cache, subdir, out)
            }
            Source::Oci(reference) => {
                oci::stage::stage(staging, reference, self.git_ref, self.cache, subdir, out)
            }
        }
    }
}

/// What commands ask of a source instead of matching its kind.
impl Source {
    /// `arg` read without the disk: an `oci://` reference, a repository in any of git's URL
    /// forms, else a folder.
    pub(crate) fn parse(arg: &str) -> Source {
        if let Some(reference) = OciRef::parse(arg) {
            return Source::Oci(reference);
        }
        GitUrl::parse(arg).map_or_else(|| Source::Path(PathBuf::from(arg)), Source::Git)
    }

    /// Like [`Source::parse`], but looking at the disk: a local path ending in `.git` that is
    /// an extension folder (it has `extension.json` at the top) is copied as a folder rather
    /// than cloned, and `folder#path` names the subfolder `path` of a local folder, as
    /// `URL#path` does for a repository (see [`folder::named`]).
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
            oci @ Source::Oci(_) => OnDisk::plain(oci),
            Source::Path(path) => {
                let named = folder::named(arg, path);
                OnDisk {
                    source: Source::Path(named.folder),
                    subdir: named.subdir,
                    note: named.note,
                }
            }
        }
    }

    /// The source an install record names, read as the kind the record says (a folder whose
    /// name ends in `.git` stays a folder); `None` for a link or `new`, which have none.
    pub(crate) fn recorded(record: &Record) -> Option<Source> {
        match record.kind {
            Kind::Path => Some(Source::Path(PathBuf::from(&record.source))),
            Kind::Git => Some(Source::Git(GitUrl::recorded(&record.source))),
            Kind::Oci => OciRef::parse(&record.source).map(Source::Oci),
            Kind::Link | Kind::New => None,
        }
    }

    /// What the source holds now, asked without fetching it (`update`'s first look): what
    /// `git_ref` points at on a repository's remote; a folder tells nothing short of copying
    /// it (`None`), once it is checked to be still there (`name`: the extension, for the fix).
    pub(crate) fn probe(&self, git_ref: Option<&str>, name: &str) -> Result<Option<Probe>> {
        match self {
            Source::Path(path) => folder::still_there(path, name).map(|()| None),
            Source::Git(url) => {
                let scratch = tempfile::tempdir()?;
                helper::probe(url, git_ref, scratch.path()).map(Some)
            }
            Source::Oci(reference) => {
                let digest = helper::probe_oci(&oci::asked(reference, git_ref))?;
                Ok(Some(Probe {
                    commit: Some(digest),
                    ref_kind: crate::store::record::RefKind::Tag,
                    branch: None,
                }))
            }
        }
    }

    /// Whether it is fetched at a ref (`--ref`, a project entry's `ref`, a locked commit):
    /// a repository; a folder is copied as it is now.
    pub(crate) fn takes_ref(&self) -> bool {
        matches!(self, Source::Git(_))
    }

    /// The same source fetched by a manifest digest (a registry's; others stay as they are).
    pub(crate) fn at_digest(self, digest: &str) -> Source {
        match self {
            Source::Oci(reference) => Source::Oci(OciRef {
                digest: Some(digest.to_string()),
                ..reference
            }),
            other => other,
        }
    }

    /// What a lock entry of this source must pin and lacks (`sync --frozen`): a commit for a
    /// repository, a manifest digest for a registry; `None` when it has what it needs.
    pub(crate) fn missing_pin(&self, has_commit: bool, has_digest: bool) -> Option<&'static str> {
        match self {
            Source::Git(_) if !has_commit => Some("commit for a git source"),
            Source::Oci(_) if !has_digest => Some("digest for a registry source"),
            _ => None,
        }
    }

    /// Whether the fetch cache serves it (what it keys: a commit of a repository, a manifest
    /// digest of a registry).
    pub(crate) fn cached(&self) -> bool {
        matches!(self, Source::Git(_) | Source::Oci(_))
    }

    /// Whether it names something on this machine by a path (a folder, or a repository by
    /// its path): relative to a folder, so a project file keeps it relative to its root.
    pub(crate) fn is_local_path(&self) -> bool {
        match self {
            Source::Path(_) => true,
            Source::Git(url) => url.is_local_path(),
            Source::Oci(_) => false,
        }
    }

    /// How it is named in messages, `typed` as the user gave it: a folder by its path
    /// (without a `#path` fragment, which is the subfolder), a repository as typed.
    pub(crate) fn shown(&self, typed: &str) -> String {
        match self {
            Source::Path(path) => path.display().to_string(),
            Source::Git(_) | Source::Oci(_) => typed.to_string(),
        }
    }

    /// The source as a project file keeps it: without the `#path` fragment a URL names its
    /// subfolder with (the entry's `subdir` holds it); a folder as [`Source::shown`].
    pub(crate) fn without_fragment(&self, typed: &str) -> String {
        match self {
            Source::Git(url) if url.subdir.is_some() => url.url.clone(),
            _ => self.shown(typed),
        }
    }

    /// `Err` saying why a git URL with a control character is refused ([`controls`]).
    pub(crate) fn check_controls(&self) -> Result<(), String> {
        match self {
            Source::Git(url) => controls::check(&url.url),
            Source::Oci(reference) => reference.check(),
            Source::Path(_) => Ok(()),
        }
    }

    /// A folder checked as staging checks it (it exists, it is outside the store of `dirs`),
    /// before anything is fetched: its canonical path; `None` for other kinds.
    pub(crate) fn check_local(&self, dirs: &ScopeDirs) -> Result<Option<PathBuf>> {
        match self {
            Source::Path(path) => folder::check_local_source(path, dirs).map(Some),
            Source::Git(_) | Source::Oci(_) => Ok(None),
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::redact::{redact, redact_text};
    use crate::source::git::url::scrub;

    #[test]
    fn cache_keys_leave_out_credentials_case_and_git_suffix() {
        let key = |url: &str| match Source::parse(url) {
            Source::Git(url) => url.cache_key(),
            other => panic!("{url} is {other:?}"),
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
        use crate::source::git::url::scrub;
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
