//! Submodules of a fetched repository: which gitlinks a checkout needs, where `.gitmodules`
//! says each one lives (relative URLs resolved against the superproject's URL as git does),
//! fetching each at the commit the superproject records — shallow where the transport
//! allows — and checking it out in place, recursively, without `.git`. Also refuses a
//! manifest that is a gitlink or a symbolic link in the repository.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use anyhow::{Result, anyhow, bail};
use git2::{Commit, ObjectType, Oid, Repository, Tree};

use super::progress::Progress;
use super::transport::{
    Auth, check_out, fetch_commit, fetch_error, list_remote, scratch_repository,
};
use crate::catalog::manifest;
use crate::output::printable;
use crate::output::redact::{is_scp_like, redact};
use crate::source::controls;
use crate::source::git::url::GitUrl;
use crate::source::staged::real_subdir;

/// Submodules nested deeper than this are refused (a chain that long is a mistake or a trap).
const MAX_LEVEL: usize = 8;
/// `.gitmodules` larger than this is refused unread.
const MAX_GITMODULES: usize = 1 << 20;
/// Git's mode for a gitlink (a submodule's commit) and a symbolic link in a tree, written
/// as git prints them.
#[allow(clippy::unreadable_literal)]
const GITLINK: i32 = 0o160000;
#[allow(clippy::unreadable_literal)]
const SYMLINK: i32 = 0o120000;

/// State shared by every level of one fetch.
pub(super) struct Run<'p, 'q> {
    /// Where each submodule's scratch object store is made (`<scratch>/<n>`).
    pub scratch: PathBuf,
    /// The top repository and commit, `<url> (<short commit>)`, for messages.
    pub label: String,
    /// The folder of the top repository that holds the manifest (`None`: the top).
    pub manifest: Option<&'q Path>,
    pub fetched: usize,
    pub progress: Progress<'p>,
}

/// A repository whose commit has been checked out into `dir`.
pub(super) struct Superproject<'r> {
    pub repo: &'r Repository,
    pub commit: &'r Commit<'r>,
    pub url: &'r GitUrl,
    pub dir: &'r Path,
    /// Where this repository sits in the top one (empty for the top).
    pub path: PathBuf,
    /// The folder of this repository that is wanted (`None`: all of it).
    pub only: Option<PathBuf>,
    pub level: usize,
}

/// A submodule entry of a tree: its path and the commit recorded for it.
struct Gitlink {
    path: PathBuf,
    commit: Oid,
}

/// Fetches and checks out every submodule `sup` needs, then theirs.
pub(super) fn fetch_all(run: &mut Run, sup: &Superproject) -> Result<()> {
    let tree = sup.commit.tree()?;
    let links = gitlinks(sup.repo, &tree, sup.only.as_deref())?;
    if links.is_empty() {
        return Ok(());
    }
    if sup.level >= MAX_LEVEL {
        bail!(
            "{}: submodule {} is nested more than {MAX_LEVEL} levels deep; zot does not fetch submodules that deep",
            run.label,
            shown(&sup.path.join(&links[0].path))
        );
    }
    let modules = read_gitmodules(sup.repo, &tree, &run.label, &sup.path)?;
    for link in &links {
        fetch_one(run, sup, &modules, link)?;
    }
    Ok(())
}

/// Fetches one submodule, checks it out in its folder and recurses into it.
fn fetch_one(run: &mut Run, sup: &Superproject, modules: &[Module], link: &Gitlink) -> Result<()> {
    let full = sup.path.join(&link.path);
    let module = modules
        .iter()
        .rev()
        .find(|m| m.path.as_deref().map(Path::new) == Some(link.path.as_path()));
    let Some(module) = module.filter(|m| m.url.is_some()) else {
        bail!(
            "{}: submodule {} has no url in .gitmodules; the repository must say where to fetch it from",
            run.label,
            shown(&full)
        );
    };
    if module.update.as_deref() == Some("none") {
        return Ok(());
    }
    let raw = module.url.as_deref().unwrap_or_default();
    let url = submodule_url(sup.url, raw, file_protocol_allowed()).map_err(|why| {
        anyhow!(
            "{}: submodule {} has the URL {}, which {why}",
            run.label,
            shown(&full),
            printable(&redact(raw))
        )
    })?;
    // Every fetch error names the (redacted) URL.
    let failed = |e: anyhow::Error| {
        let hint = if e
            .downcast_ref::<super::transport::MissingCommit>()
            .is_some()
        {
            "; the superproject records a commit its submodule repository does not have (was it pushed?)"
        } else {
            ""
        };
        anyhow!(
            "{}: submodule {}: {}{hint}",
            run.label,
            shown(&full),
            printable(&e.to_string())
        )
    };
    run.fetched += 1;
    let repo = scratch_repository(&run.scratch.join(run.fetched.to_string()))?;
    let auth = Auth::default();
    let id = link.commit.to_string();
    let advertised = list_remote(&repo, &url, &auth)
        .map_err(|e| fetch_error(&e, &url, &auth))
        .map_err(failed)?;
    let progress = &mut *run.progress;
    let oid = fetch_commit(&repo, &url, &auth, &advertised, &id, progress).map_err(failed)?;
    let commit = repo.find_commit(oid)?;
    let only = inner(sup.only.as_deref(), &link.path);
    if let Some(top) = run.manifest {
        check_manifest_entry(&commit.tree()?, only.as_deref(), Some(top), &run.label)?;
    }
    // Every step a real folder (checkout made them; nothing may lead outside).
    let dir = real_subdir(sup.dir, &link.path, "").map_err(|_| {
        anyhow!(
            "{}: submodule {} is not a folder in the checkout",
            run.label,
            shown(&full)
        )
    })?;
    check_out(&repo, &commit, &dir)?;
    fetch_all(
        run,
        &Superproject {
            repo: &repo,
            commit: &commit,
            url: &url,
            dir: &dir,
            path: full,
            only,
            level: sup.level + 1,
        },
    )
}

/// The part of `only` inside the submodule at `link` (`None`: all of it).
fn inner(only: Option<&Path>, link: &Path) -> Option<PathBuf> {
    let rest = only?.strip_prefix(link).ok()?;
    (!rest.as_os_str().is_empty()).then(|| rest.to_path_buf())
}

/// The gitlinks of `tree` a checkout of `only` needs: those at or under it, and the one it
/// lies in. Walked with a stack of subtrees (no recursion, any name bytes), entering only
/// folders on the way to or inside `only`.
fn gitlinks(repo: &Repository, tree: &Tree, only: Option<&Path>) -> Result<Vec<Gitlink>> {
    let related = |path: &Path| only.is_none_or(|o| path.starts_with(o) || o.starts_with(path));
    let mut links = Vec::new();
    let mut pending = vec![(PathBuf::new(), tree.id())];
    while let Some((dir, id)) = pending.pop() {
        for entry in &repo.find_tree(id)? {
            let path = dir.join(OsStr::from_bytes(entry.name_bytes()));
            if !related(&path) {
                continue;
            }
            if entry.filemode() == GITLINK {
                links.push(Gitlink {
                    path,
                    commit: entry.id(),
                });
            } else if entry.kind() == Some(ObjectType::Tree) {
                pending.push((path, entry.id()));
            }
        }
    }
    links.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(links)
}

/// Refuses a manifest (`only/extension.json` of this repository's tree) that is a symbolic
/// link or a gitlink. `top` names the folder in the top repository for the message. A
/// manifest inside a submodule is checked when that submodule is fetched.
pub(super) fn check_manifest_entry(
    tree: &Tree,
    only: Option<&Path>,
    top: Option<&Path>,
    label: &str,
) -> Result<()> {
    let path = only.unwrap_or(Path::new("")).join(manifest::FILE);
    let Ok(entry) = tree.get_path(&path) else {
        return Ok(());
    };
    let shown = shown(&top.unwrap_or(Path::new("")).join(manifest::FILE));
    match entry.filemode() {
        SYMLINK => bail!(
            "{label}: {shown} is a symbolic link in the repository; zot reads only a manifest committed as a regular file: replace the link with the file itself"
        ),
        GITLINK => bail!(
            "{label}: {shown} is a submodule (gitlink) in the repository, not a file; commit the manifest itself as a regular file"
        ),
        _ if entry.kind() != Some(ObjectType::Blob) => {
            bail!("{label}: {shown} is a folder in the repository, not a file")
        }
        _ => Ok(()),
    }
}

fn shown(path: &Path) -> String {
    printable(&path.display().to_string())
}

// ---------------------------------------------------------------------------------------------
// .gitmodules

/// One `[submodule "<name>"]` section.
#[derive(Debug, Default, PartialEq)]
struct Module {
    name: String,
    path: Option<String>,
    url: Option<String>,
    update: Option<String>,
}

/// The `.gitmodules` of `tree` (none: no sections), read from the object store.
fn read_gitmodules(repo: &Repository, tree: &Tree, label: &str, at: &Path) -> Result<Vec<Module>> {
    let Ok(entry) = tree.get_path(Path::new(".gitmodules")) else {
        return Ok(Vec::new());
    };
    let shown = shown(&at.join(".gitmodules"));
    let Ok(blob) = repo.find_blob(entry.id()) else {
        bail!("{label}: {shown} is not a file");
    };
    if blob.size() > MAX_GITMODULES {
        bail!(
            "{label}: {shown} is {} bytes; zot reads at most {MAX_GITMODULES}",
            blob.size()
        );
    }
    Ok(parse_gitmodules(&String::from_utf8_lossy(blob.content())))
}

/// Parses git's config syntax far enough for `.gitmodules`: sections (`[submodule "x"]`,
/// and the old `[submodule.x]`), `key = value` with quotes, escapes, comments and line
/// continuations. Includes are not followed (git ignores them in `.gitmodules` too).
fn parse_gitmodules(text: &str) -> Vec<Module> {
    let mut modules: Vec<Module> = Vec::new();
    let mut in_submodule = false;
    let mut chars = text.chars().peekable();
    while let Some(&c) = chars.peek() {
        match c {
            c if c.is_whitespace() => {
                chars.next();
            }
            '#' | ';' => skip_line(&mut chars),
            '[' => {
                chars.next();
                let (section, name) = section_header(&mut chars);
                in_submodule = section == "submodule" && name.is_some();
                if in_submodule {
                    modules.push(Module {
                        name: name.unwrap_or_default(),
                        ..Module::default()
                    });
                }
            }
            _ => {
                let (key, value) = key_value(&mut chars);
                let Some(module) = modules.last_mut().filter(|_| in_submodule) else {
                    continue;
                };
                match key.as_str() {
                    "path" => module.path = Some(value),
                    "url" => module.url = Some(value),
                    "update" => module.update = Some(value),
                    _ => {}
                }
            }
        }
    }
    modules
}

type Chars<'a> = std::iter::Peekable<std::str::Chars<'a>>;

fn skip_line(chars: &mut Chars) {
    for c in chars.by_ref() {
        if c == '\n' {
            return;
        }
    }
}

/// After `[`: the lowercased section name and the subsection, up to and including `]`.
fn section_header(chars: &mut Chars) -> (String, Option<String>) {
    let mut section = String::new();
    let mut sub = None;
    while let Some(c) = chars.next() {
        match c {
            ']' | '\n' => break,
            '"' => {
                let mut name = String::new();
                while let Some(c) = chars.next() {
                    match c {
                        '"' | '\n' => break,
                        '\\' => name.extend(chars.next()),
                        c => name.push(c),
                    }
                }
                sub = Some(name);
            }
            c => section.push(c),
        }
    }
    let section = section.trim().to_ascii_lowercase();
    if sub.is_none()
        && let Some((name, legacy)) = section.split_once('.')
    {
        return (name.to_string(), Some(legacy.to_string()));
    }
    (section, sub)
}

/// A `key = value` line (a bare `key` has the value `true`), the key lowercased.
fn key_value(chars: &mut Chars) -> (String, String) {
    let mut key = String::new();
    while let Some(&c) = chars.peek() {
        if c.is_ascii_alphanumeric() || c == '-' {
            key.push(c.to_ascii_lowercase());
            chars.next();
        } else {
            break;
        }
    }
    while chars.next_if(|c| *c == ' ' || *c == '\t').is_some() {}
    if chars.next_if_eq(&'=').is_none() {
        skip_line(chars);
        return (key, "true".to_string());
    }
    (key, value(chars))
}

/// A value up to the end of its line: quotes kept together, escapes decoded, a trailing
/// comment dropped, surrounding unquoted whitespace trimmed.
fn value(chars: &mut Chars) -> String {
    let mut out = String::new();
    let mut quoted = false;
    // How long `out` is without its trailing unquoted whitespace.
    let mut kept = 0;
    while let Some(c) = chars.next() {
        match c {
            '\n' => break,
            '\\' => match chars.next() {
                Some('\n') => continue,
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some('b') => {
                    out.pop();
                }
                Some(other) => out.push(other),
                None => break,
            },
            '"' => {
                quoted = !quoted;
                kept = out.len();
                continue;
            }
            '#' | ';' if !quoted => {
                skip_line(chars);
                break;
            }
            c if c.is_whitespace() && !quoted => {
                if !out.is_empty() {
                    out.push(c);
                }
                continue;
            }
            c => out.push(c),
        }
        kept = out.len();
    }
    out.truncate(kept);
    out
}

// ---------------------------------------------------------------------------------------------
// Submodule URLs

/// The URL to fetch a submodule from: `raw` from `.gitmodules`, resolved against the
/// superproject's URL when relative (`./`, `../`). Local URLs (`file://`, absolute paths,
/// and relative ones in a local superproject) follow git's rule (2.38.1+): refused unless
/// the user's git configuration allows the file protocol everywhere (`file_allowed`, see
/// [`file_protocol_allowed`]); `Err` says why the URL is refused.
fn submodule_url(sup: &GitUrl, raw: &str, file_allowed: bool) -> Result<GitUrl, String> {
    if let Some(why) = controls::control_in(raw) {
        return Err(format!(
            "holds {why} (percent-decoded); git refuses such URLs too"
        ));
    }
    let url = if raw.starts_with("./") || raw.starts_with("../") {
        relative_url(&base_url(sup), raw)?
    } else {
        raw.to_string()
    };
    let local = match classify(&url) {
        UrlKind::Remote => false,
        UrlKind::Local if file_allowed => true,
        UrlKind::Local => {
            return Err(
                "is on the local disk; git refuses local submodules unless protocol.file.allow=always, and so does zot: if you trust this repository's submodules, run `git config --global protocol.file.allow always` (or set GIT_ALLOW_PROTOCOL to a list holding file)"
                    .to_string(),
            );
        }
        UrlKind::Unsupported => {
            return Err(
                "is not a URL zot can fetch (https, http, ssh, git, user@host:path, or file and absolute paths where protocol.file.allow=always)"
                    .to_string(),
            );
        }
    };
    Ok(GitUrl {
        display: redact(&url),
        url,
        local,
        subdir: None,
    })
}

/// Whether the user's git configuration lets submodules use the file protocol, as git
/// decides it for a submodule: `GIT_ALLOW_PROTOCOL`, when set, is the colon-separated list
/// of protocols allowed; else `protocol.file.allow`, else `protocol.allow`, must be
/// `always` (`user` does not count: git sets `GIT_PROTOCOL_FROM_USER=0` for submodules).
fn file_protocol_allowed() -> bool {
    if let Some(list) = std::env::var_os("GIT_ALLOW_PROTOCOL") {
        return list.to_string_lossy().split(':').any(|p| p == "file");
    }
    let Ok(config) = git2::Config::open_default() else {
        return false;
    };
    let policy = config
        .get_string("protocol.file.allow")
        .or_else(|_| config.get_string("protocol.allow"));
    policy.is_ok_and(|p| p == "always")
}

/// What relative submodule URLs resolve against: the URL as given, local paths made absolute.
fn base_url(sup: &GitUrl) -> String {
    let is_path = sup.is_local_path();
    match is_path.then(|| std::fs::canonicalize(&sup.url)) {
        Some(Ok(path)) => path.display().to_string(),
        _ => sup.url.clone(),
    }
}

/// Git's rule: each leading `../` drops the last component of `base` (at a `/`, or at the
/// `:` of a scp-like URL), `./` is skipped, the rest is appended. Unlike git, climbing above
/// the host of `scheme://host/...` (which would change the host) is refused.
fn relative_url(base: &str, raw: &str) -> Result<String, String> {
    let mut base = base.trim_end_matches('/').to_string();
    // Chopping may not reach into `scheme://host`.
    let floor = base.find("://").map_or(0, |i| {
        let host = i + "://".len();
        let after = base.get(host..).unwrap_or_default();
        host + after.find('/').unwrap_or(after.len())
    });
    let mut rest = raw;
    let mut colon = false;
    loop {
        if let Some(r) = rest.strip_prefix("../") {
            rest = r;
            let cut = match base.rfind('/') {
                Some(i) => Some(i),
                None => base.rfind(':').inspect(|_| colon = true),
            };
            match cut {
                Some(i) if i >= floor && (i > 0 || base.starts_with('/')) => base.truncate(i),
                _ => {
                    return Err(format!(
                        "climbs above the superproject's URL {}",
                        redact(&base)
                    ));
                }
            }
        } else if let Some(r) = rest.strip_prefix("./") {
            rest = r;
        } else {
            break;
        }
    }
    let joined = format!("{base}{}{rest}", if colon { ":" } else { "/" });
    Ok(joined.trim_end_matches('/').to_string())
}

enum UrlKind {
    Remote,
    Local,
    Unsupported,
}

fn classify(url: &str) -> UrlKind {
    const REMOTE: [&str; 6] = [
        "https://",
        "http://",
        "ssh://",
        "git://",
        "git+ssh://",
        "ssh+git://",
    ];
    let lower = url.to_ascii_lowercase();
    if REMOTE.iter().any(|s| lower.starts_with(s)) || (is_scp_like(url) && !url.contains("::")) {
        UrlKind::Remote
    } else if lower.starts_with("file://") || url.starts_with('/') {
        UrlKind::Local
    } else {
        UrlKind::Unsupported
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gitmodules_sections_quotes_and_comments() {
        let text = "# top\n[submodule \"lib\"]\n\tpath = vendor/lib\n\turl = ../lib.git ; comment\n\
                    [core]\n\turl = ignored\n[submodule \"q\\\"x\"]\n  PATH = \"with space \" \n  url=a\\\n.git\n\
                    [submodule.old]\n path=old\n update = none\n[submodule \"dup\"]\npath=d\nurl=first\nurl=second\n";
        let modules = parse_gitmodules(text);
        let find = |name: &str| modules.iter().find(|m| m.name == name).unwrap();
        assert_eq!(find("lib").path.as_deref(), Some("vendor/lib"));
        assert_eq!(find("lib").url.as_deref(), Some("../lib.git"));
        assert_eq!(find("q\"x").path.as_deref(), Some("with space "));
        assert_eq!(find("q\"x").url.as_deref(), Some("a.git"));
        assert_eq!(find("old").update.as_deref(), Some("none"));
        assert_eq!(find("dup").url.as_deref(), Some("second"));
        assert_eq!(modules.len(), 4, "{modules:#?}");
    }

    #[test]
    fn relative_urls_resolve_like_git() {
        let cases = [
            ("git://h/a/super.git", "../lib.git", "git://h/a/lib.git"),
            ("git://h/a/super.git/", "./sub", "git://h/a/super.git/sub"),
            ("git://h/a/super", "../../b/lib", "git://h/b/lib"),
            ("https://u:p@h/o/super", "../lib", "https://u:p@h/o/lib"),
            ("git@h:o/super.git", "../lib.git", "git@h:o/lib.git"),
            ("git@h:super.git", "../lib.git", "git@h:lib.git"),
            ("/srv/super.git", "../lib.git", "/srv/lib.git"),
            (
                "file:///srv/super.git",
                "../x/lib.git",
                "file:///srv/x/lib.git",
            ),
        ];
        for (base, raw, want) in cases {
            assert_eq!(
                relative_url(base, raw).as_deref(),
                Ok(want),
                "{base} + {raw}"
            );
        }
        assert!(relative_url("git://h/super", "../../x").is_err());
        assert!(relative_url("super", "../../x").is_err());
    }

    fn git_url(url: &str, local: bool) -> GitUrl {
        GitUrl {
            url: url.to_string(),
            display: redact(url),
            local,
            subdir: None,
        }
    }

    #[test]
    fn local_submodules_only_where_the_file_protocol_is_allowed() {
        let remote = git_url("git://h/super.git", false);
        let local = git_url("file:///srv/super.git", true);
        for sup in [&remote, &local] {
            for raw in ["file:///srv/lib.git", "/srv/lib.git"] {
                let err = submodule_url(sup, raw, false).unwrap_err();
                assert!(err.contains("protocol.file.allow=always"), "{err}");
                assert!(submodule_url(sup, raw, true).unwrap().local, "{raw}");
            }
        }
        assert!(submodule_url(&local, "../lib.git", false).is_err());
        assert!(submodule_url(&local, "../lib.git", true).unwrap().local);
        assert!(!submodule_url(&local, "https://h/x", false).unwrap().local);
        for raw in ["ext::sh -c touch% /tmp/pwned", "lib.git", "foo://h/x"] {
            let err = submodule_url(&remote, raw, true).unwrap_err();
            assert!(err.contains("not a URL zot can fetch"), "{raw}: {err}");
        }
        let err = submodule_url(&remote, "https://x%0Ahost=h@h/r", true).unwrap_err();
        assert!(err.contains("U+000A) in its user name"), "{err}");
        let resolved = submodule_url(&git_url("https://u:pw@h/o/s", false), "../l", false).unwrap();
        assert_eq!(resolved.url, "https://u:pw@h/o/l");
        assert!(!resolved.display.contains("pw"), "{}", resolved.display);
    }

    #[test]
    fn only_the_needed_submodules() {
        assert_eq!(
            inner(Some(Path::new("a/b/c")), Path::new("a/b")),
            Some("c".into())
        );
        assert_eq!(inner(Some(Path::new("a/b")), Path::new("a/b")), None);
        assert_eq!(inner(Some(Path::new("a")), Path::new("a/b")), None);
        assert_eq!(inner(None, Path::new("a/b")), None);
    }
}
