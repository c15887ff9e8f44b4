//! Asking git's credential helpers for a user name and password the way git asks them
//! (`git help credential`, `gitcredentials(7)`), for http and https: the request is
//! `protocol`, `host` (with the port the URL gives), `path` only with
//! `credential.useHttpPath`, and `username` when the URL or `credential.username` has one.
//! `credential.<url>.*` entries apply when their URL matches (scheme, user, host with `*`
//! wildcards, port, path prefix), in the order of the configuration, as
//! `credential.helper` entries do; an empty `helper =` empties the list. Helpers run
//! through `sh` as git runs them: `git credential-<name> get` for a bare name, the
//! command itself for an absolute path or a `!` snippet. No value holding a newline, a
//! carriage return or a NUL is ever written to a helper. A helper that does not answer
//! within the low-speed time ([`super::meter`]) is killed with its process group.

use std::fmt::Write as _;
use std::io::{Read as _, Write as _};
use std::os::unix::process::CommandExt as _;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use anyhow::{Result, anyhow, bail};

use crate::output::printable;
use crate::output::redact::{percent_decoded, scheme_end};

/// The most a helper may answer.
const MAX_ANSWER: u64 = 64 << 10;

/// What is asked of the helpers: the fields of git's credential protocol.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(super) struct Asked {
    pub protocol: String,
    pub host: String,
    pub path: Option<String>,
    pub username: Option<String>,
}

/// A user name and password a helper answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Answer {
    pub username: String,
    pub password: String,
}

/// The parts of a URL git's credential code reads (`credential_from_url`): protocol, user
/// name, host with port, path without its leading and trailing `/`; percent-decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Parsed {
    protocol: String,
    username: Option<String>,
    host: String,
    path: String,
}

fn parse(url: &str) -> Option<Parsed> {
    let end = scheme_end(url)?;
    let rest = &url[end + 3..];
    let slash = rest.find('/').unwrap_or(rest.len());
    let (authority, path) = (&rest[..slash], &rest[slash..]);
    let (userinfo, host) = match authority.rfind('@') {
        Some(at) => (Some(&authority[..at]), &authority[at + 1..]),
        None => (None, authority),
    };
    let username = userinfo.map(|u| percent_decoded(u.split(':').next().unwrap_or(u)));
    Some(Parsed {
        protocol: url[..end].to_ascii_lowercase(),
        username,
        host: percent_decoded(host),
        path: percent_decoded(path.trim_start_matches('/').trim_end_matches('/')),
    })
}

/// The configuration that applies to one URL.
#[derive(Debug, Default, PartialEq, Eq)]
struct Applied {
    helpers: Vec<String>,
    username: Option<String>,
    use_http_path: bool,
}

/// Applies the `credential.*` entries (name without `credential.`, value), in order, that
/// match `url`.
fn apply<'a>(url: &Parsed, entries: impl Iterator<Item = (&'a str, &'a str)>) -> Applied {
    let mut applied = Applied::default();
    for (name, value) in entries {
        let (pattern, key) = match name.rsplit_once('.') {
            Some((pattern, key)) => (Some(pattern), key),
            None => (None, name),
        };
        if pattern.is_some_and(|p| !matches(p, url)) {
            continue;
        }
        match key.to_ascii_lowercase().as_str() {
            "helper" if value.is_empty() => applied.helpers.clear(),
            "helper" => applied.helpers.push(value.to_string()),
            "username" => applied.username = Some(value.to_string()),
            "usehttppath" => applied.use_http_path = config_bool(value),
            _ => {}
        }
    }
    applied
}

/// git's boolean values.
fn config_bool(value: &str) -> bool {
    matches!(
        value.to_ascii_lowercase().as_str(),
        "" | "true" | "yes" | "on" | "1"
    )
}

/// Whether the URL pattern of a `credential.<pattern>.*` entry matches `url`, as git's
/// `urlmatch` decides: the same scheme, the pattern's user if it names one, the host (a
/// `*` stands for one label), the port (defaults filled in), and the pattern's path a
/// prefix of the URL's at a `/`. A pattern without a scheme (`example.com`) names a host
/// (and path) for any protocol.
fn matches(pattern: &str, url: &Parsed) -> bool {
    let Some(p) = parse(pattern).or_else(|| parse(&format!("{}://{pattern}", url.protocol))) else {
        return false;
    };
    let (host, port) = host_port(&p.host, &p.protocol);
    let (url_host, url_port) = host_port(&url.host, &url.protocol);
    p.protocol == url.protocol
        && p.username
            .as_ref()
            .is_none_or(|u| Some(u) == url.username.as_ref())
        && host_matches(&host, &url_host)
        && port == url_port
        && (p.path.is_empty()
            || url.path == p.path
            || url
                .path
                .strip_prefix(&p.path)
                .is_some_and(|rest| rest.starts_with('/')))
}

/// A host and its port, the scheme's default when none is given; the host lowercased.
fn host_port(host: &str, protocol: &str) -> (String, Option<u16>) {
    let default = match protocol {
        "http" => Some(80),
        "https" => Some(443),
        _ => None,
    };
    let (name, port) = match host.strip_prefix('[').and_then(|h| h.split_once(']')) {
        Some((inner, after)) => (&host[..inner.len() + 2], after.strip_prefix(':')),
        None => match host.rsplit_once(':') {
            Some((name, port)) => (name, Some(port)),
            None => (host, None),
        },
    };
    let port = port.and_then(|p| p.parse().ok()).or(default);
    (name.to_ascii_lowercase(), port)
}

/// `pattern` against `host`, label by label; a label `*` matches any one label (git's
/// `match_host`).
fn host_matches(pattern: &str, host: &str) -> bool {
    let (p, h): (Vec<&str>, Vec<&str>) = (pattern.split('.').collect(), host.split('.').collect());
    p.len() == h.len() && p.iter().zip(&h).all(|(p, h)| *p == "*" || p == h)
}

/// What git would ask for `url` with these `credential.*` entries; `None` for a URL that
/// is not http(s) (git asks helpers for those only). `user` is the user name libgit2
/// read from the URL.
fn asked<'a>(
    url: &str,
    user: Option<&str>,
    entries: impl Iterator<Item = (&'a str, &'a str)>,
) -> Option<(Asked, Vec<String>)> {
    let mut parsed = parse(url)?;
    if !matches!(parsed.protocol.as_str(), "http" | "https") {
        return None;
    }
    if parsed.username.is_none() {
        parsed.username = user.map(str::to_string);
    }
    let applied = apply(&parsed, entries);
    let asked = Asked {
        path: applied
            .use_http_path
            .then(|| parsed.path.clone())
            .filter(|p| !p.is_empty()),
        username: parsed.username.clone().or(applied.username),
        protocol: parsed.protocol,
        host: parsed.host,
    };
    Some((asked, applied.helpers))
}

/// The `credential.*` entries of the user's git configuration, in order.
fn config_entries() -> Vec<(String, String)> {
    let Ok(config) = git2::Config::open_default() else {
        return Vec::new();
    };
    let Ok(mut entries) = config.entries(Some("^credential\\.")) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    while let Some(Ok(entry)) = entries.next() {
        if let (Ok(name), Ok(value)) = (entry.name(), entry.value()) {
            let name = name.strip_prefix("credential.").unwrap_or(name);
            out.push((name.to_string(), value.to_string()));
        }
    }
    out
}

/// Whether any credential helper is configured for any URL.
pub(super) fn any_configured() -> bool {
    config_entries()
        .iter()
        .any(|(name, value)| name.to_ascii_lowercase().ends_with("helper") && !value.is_empty())
}

/// Asks the helpers configured for `url` (the one libgit2 connects to) for a user name and
/// password. `Ok(None)`: not an http(s) URL, no helper, or none answered both.
pub(super) fn fill(url: &str, user: Option<&str>, timeout: Duration) -> Result<Option<Answer>> {
    let entries = config_entries();
    let Some((mut asked, helpers)) = asked(
        url,
        user,
        entries.iter().map(|(n, v)| (n.as_str(), v.as_str())),
    ) else {
        return Ok(None);
    };
    let mut password = None;
    for helper in &helpers {
        let answered = run_helper(helper, &asked, timeout)?;
        if answered.quit {
            bail!(
                "the credential helper {} said to stop (quit=true)",
                label(helper)
            );
        }
        if let Some(user) = answered.username {
            asked.username = Some(user);
        }
        password = answered.password.or(password);
        if asked.username.is_some() && password.is_some() {
            break;
        }
    }
    Ok(asked
        .username
        .zip(password)
        .map(|(username, password)| Answer { username, password }))
}

/// The request written to a helper's stdin; `Err` for a value git would refuse.
fn request(asked: &Asked) -> Result<String> {
    let mut text = String::new();
    for (key, value) in [
        ("protocol", Some(&asked.protocol)),
        ("host", Some(&asked.host)),
        ("path", asked.path.as_ref()),
        ("username", asked.username.as_ref()),
    ] {
        let Some(value) = value else { continue };
        if value.contains(['\n', '\r', '\0']) {
            bail!(
                "credential value for {key} contains a newline, a carriage return or a NUL; refusing to ask a credential helper"
            );
        }
        let _ = writeln!(text, "{key}={value}");
    }
    // git ends the request by closing the helper's stdin, without a blank line.
    Ok(text)
}

/// What one helper answered.
#[derive(Debug, Default)]
struct Answered {
    username: Option<String>,
    password: Option<String>,
    quit: bool,
}

fn read_answer(text: &str) -> Answered {
    let mut answered = Answered::default();
    for line in text.lines() {
        if line.is_empty() {
            break;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        match key {
            "username" => answered.username = Some(value.to_string()),
            "password" => answered.password = Some(value.to_string()),
            "quit" => answered.quit = config_bool(value),
            _ => {}
        }
    }
    answered
}

/// How a helper is named in a message: its program, never its arguments or a snippet's
/// text (either may hold a secret).
fn label(helper: &str) -> String {
    if helper.starts_with('!') {
        return "(a `!` shell command)".to_string();
    }
    let program = helper.split_whitespace().next().unwrap_or_default();
    format!("\"{}\"", printable(program))
}

/// The shell command git runs for `helper` with the action `get`.
fn command_line(helper: &str) -> String {
    match helper.strip_prefix('!') {
        Some(snippet) => format!("{snippet} get"),
        None if helper.starts_with('/') => format!("{helper} get"),
        None => format!("git credential-{helper} get"),
    }
}

/// Runs one helper with `asked` on its stdin, in a process group of its own that is
/// killed if it has not answered within `timeout`.
fn run_helper(helper: &str, asked: &Asked, timeout: Duration) -> Result<Answered> {
    let input = request(asked)?;
    let line = command_line(helper);
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(&line)
        .arg(&line)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .process_group(0)
        .spawn()
        .map_err(|e| anyhow!("cannot run the credential helper {}: {e}", label(helper)))?;
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let mut stdout = child.stdout.take().expect("stdout is piped");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        // A helper that does not read its stdin gets the request dropped.
        let _ = stdin.write_all(input.as_bytes());
        drop(stdin);
        let mut text = Vec::new();
        let read = (&mut stdout).take(MAX_ANSWER).read_to_end(&mut text);
        let _ = tx.send(read.map(|_| text));
    });
    let answer = rx.recv_timeout(timeout);
    if answer.is_err() {
        kill_group(&child);
    }
    let _ = child.wait();
    match answer {
        Ok(Ok(text)) => Ok(read_answer(&String::from_utf8_lossy(&text))),
        Ok(Err(e)) => bail!(
            "cannot read the answer of the credential helper {}: {e}",
            label(helper)
        ),
        Err(_) => bail!(
            "the credential helper {} did not answer within {} s; it was stopped",
            label(helper),
            timeout.as_secs()
        ),
    }
}

/// Kills the helper's process group (its own: `process_group(0)`; not reaped yet, so its id
/// still names that group).
fn kill_group(child: &std::process::Child) {
    crate::host::Group::of(child).kill();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(url: &str, config: &[(&str, &str)]) -> (Asked, Vec<String>) {
        asked(url, None, config.iter().copied()).unwrap()
    }

    #[test]
    fn git_reads_protocol_host_with_port_and_path() {
        let (asked, _) = ask("http://127.0.0.1:8080/o/r.git/", &[]);
        assert_eq!(asked.protocol, "http");
        assert_eq!(asked.host, "127.0.0.1:8080");
        assert_eq!(asked.path, None);
        assert_eq!(asked.username, None);
        let (asked, _) = ask("HTTPS://al%69ce@h/o/r.git", &[("usehttppath", "true")]);
        assert_eq!(asked.protocol, "https");
        assert_eq!(asked.host, "h");
        assert_eq!(asked.path.as_deref(), Some("o/r.git"));
        assert_eq!(asked.username.as_deref(), Some("alice"));
        assert!(asked_none("ssh://git@h/r") && asked_none("git://h/r"));
    }

    fn asked_none(url: &str) -> bool {
        asked(url, None, std::iter::empty()).is_none()
    }

    #[test]
    fn url_entries_apply_where_they_match_in_order() {
        let config = [
            ("helper", "store"),
            ("https://*.example.com.helper", "wild"),
            ("https://example.com.helper", ""),
            ("https://example.com.helper", "cache"),
            ("https://example.com/team.usehttppath", "yes"),
            ("https://bob@example.com.helper", "bob-only"),
            ("example.com.username", "carol"),
            ("http://example.com:8080.helper", "eight"),
        ];
        let (asked, helpers) = ask("https://example.com/team/r.git", &config);
        assert_eq!(helpers, ["cache"]);
        assert_eq!(asked.path.as_deref(), Some("team/r.git"));
        assert_eq!(asked.username.as_deref(), Some("carol"));
        let (asked, _) = ask("https://example.com/teams/r.git", &config);
        assert_eq!(asked.path, None);
        let (_, helpers) = ask("https://git.example.com/r", &config);
        assert_eq!(helpers, ["store", "wild"]);
        let (_, helpers) = ask("https://a.b.example.com/r", &config);
        assert_eq!(helpers, ["store"]);
        let (_, helpers) = ask("https://example.com:443/r", &config);
        assert_eq!(helpers, ["cache"]);
        let (_, helpers) = ask("http://example.com:8080/r", &config);
        assert_eq!(helpers, ["store", "eight"]);
        let (asked, helpers) = ask("https://bob@example.com/r", &config);
        assert_eq!(helpers, ["cache", "bob-only"]);
        assert_eq!(asked.username.as_deref(), Some("bob"));
    }

    #[test]
    fn helpers_run_as_git_runs_them() {
        assert_eq!(command_line("store"), "git credential-store get");
        assert_eq!(
            command_line("store --file x"),
            "git credential-store --file x get"
        );
        assert_eq!(command_line("/opt/h --x"), "/opt/h --x get");
        assert_eq!(
            command_line("!f() { echo x; }; f"),
            "f() { echo x; }; f get"
        );
    }

    #[test]
    fn helpers_are_named_without_their_arguments() {
        assert_eq!(label("store --file /s"), "\"store\"");
        assert_eq!(label("!echo password=s3cret"), "(a `!` shell command)");
    }

    #[test]
    fn no_value_with_a_newline_is_written() {
        let asked = Asked {
            protocol: "https".into(),
            host: "h".into(),
            path: None,
            username: Some("a\nhost=github.com".into()),
        };
        assert!(request(&asked).is_err());
        let asked = Asked {
            username: Some("a".into()),
            ..asked
        };
        assert_eq!(
            request(&asked).unwrap(),
            "protocol=https\nhost=h\nusername=a\n"
        );
    }

    #[test]
    fn answers_are_read_up_to_a_blank_line() {
        let a = read_answer("username=u\npassword=p=q\n\npassword=later\n");
        assert_eq!(
            (a.username.as_deref(), a.password.as_deref()),
            (Some("u"), Some("p=q"))
        );
        assert!(read_answer("quit=1\n").quit);
    }
}
