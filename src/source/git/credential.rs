//! Asking git's credential helpers for a user name and password, through git itself: `git
//! credential fill` with the URL libgit2 connects to (http and https only), and once the
//! server has taken or refused the answer, `git credential approve` or `reject`, so that
//! helpers which keep passwords (`store`, `cache`, the system keychains) keep or forget it
//! as they do for git. git reads the `credential.*` configuration, matches the URL patterns
//! and runs the helpers; zot never prompts (`GIT_TERMINAL_PROMPT=0` and an empty
//! `GIT_ASKPASS`, which also stops `core.askPass` and `SSH_ASKPASS`). No value holding a
//! newline, a carriage return or a NUL is ever written to git, which runs from `/` (the
//! user's and the system's configuration only, never a repository's), in a process group of
//! its own that is killed if it has not answered within the low-speed time
//! ([`crate::source::meter`], [`crate::source::credential_process`]). Without `git` on PATH
//! no helper is asked.

use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{Result, bail};

use crate::output::redact::scheme_end;

/// A user name and password a helper answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Answer {
    pub username: String,
    pub password: String,
}

/// Whether any credential helper is configured (for any URL), to say so when
/// authentication fails.
pub(super) fn any_configured() -> bool {
    let Ok(config) = git2::Config::open_default() else {
        return false;
    };
    let Ok(mut entries) = config.entries(Some("^credential\\..*helper$")) else {
        return false;
    };
    let mut any = false;
    while let Some(Ok(entry)) = entries.next() {
        any |= entry.value().is_ok_and(|v| !v.is_empty());
    }
    any
}

/// Asks git's credential helpers for `url` (the one libgit2 connects to), with `user` (the
/// user name libgit2 read from the URL) when there is one. `Ok(None)`: not an http(s) URL,
/// no `git`, or no helper answered both.
pub(super) fn fill(url: &str, user: Option<&str>, timeout: Duration) -> Result<Option<Answer>> {
    if !is_http(url) {
        return Ok(None);
    }
    let request = request(url, user.map(|u| ("username", u)).into_iter())?;
    let Some(text) = run_git("fill", &request, timeout)? else {
        return Ok(None);
    };
    let mut username = None;
    let mut password = None;
    for line in text.lines().take_while(|l| !l.is_empty()) {
        match line.split_once('=') {
            Some(("username", value)) => username = Some(value.to_string()),
            Some(("password", value)) => password = Some(value.to_string()),
            _ => {}
        }
    }
    Ok(username
        .zip(password)
        .map(|(username, password)| Answer { username, password }))
}

/// Tells git's credential helpers that the server took (`approve`) or refused (`reject`)
/// `answer` for `url`. Only a hint to them: a failure changes nothing.
pub(super) fn settle(url: &str, answer: &Answer, taken: bool, timeout: Duration) {
    let fields = [
        ("username", answer.username.as_str()),
        ("password", answer.password.as_str()),
    ];
    if let Ok(request) = request(url, fields.into_iter()) {
        let action = if taken { "approve" } else { "reject" };
        let _ = run_git(action, &request, timeout);
    }
}

fn is_http(url: &str) -> bool {
    scheme_end(url).is_some_and(|end| {
        let scheme = url[..end].to_ascii_lowercase();
        scheme == "http" || scheme == "https"
    })
}

/// What is written to `git credential`: `url=` and `fields`, ended by a blank line; `Err`
/// for a value git would refuse (one holding a line break could add a field).
fn request<'a>(url: &'a str, fields: impl Iterator<Item = (&'a str, &'a str)>) -> Result<String> {
    let mut text = String::new();
    for (key, value) in std::iter::once(("url", url)).chain(fields) {
        if value.contains(['\n', '\r', '\0']) {
            bail!(
                "the credential {key} holds a newline, a carriage return or a NUL; refusing to ask git's credential helpers"
            );
        }
        text.push_str(key);
        text.push('=');
        text.push_str(value);
        text.push('\n');
    }
    text.push('\n');
    Ok(text)
}

/// Runs `git credential <action>` with `input` on its stdin ([`ask`]): its stdout, or `None`
/// when git is not there or says it has nothing (no helper answered).
fn run_git(action: &str, input: &str, timeout: Duration) -> Result<Option<String>> {
    // Run from `/`: only the user's and the system's configuration is read, never that of
    // a repository the command happens to be started in.
    let mut command = Command::new("git");
    command
        .args(["credential", action])
        .current_dir("/")
        .env_remove("GIT_DIR")
        .env_remove("GIT_CONFIG")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_ASKPASS", "")
        .stderr(Stdio::null());
    let what = format!("git credential {action} (git's credential helpers)");
    crate::source::credential_process::ask(command, input, timeout, &what)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_value_with_a_line_break_is_written() {
        assert!(
            request(
                "https://h/r",
                [("username", "a\nhost=github.com")].into_iter()
            )
            .is_err()
        );
        assert!(request("https://h/r\rx", std::iter::empty()).is_err());
        assert_eq!(
            request("https://h/r", [("username", "a")].into_iter()).unwrap(),
            "url=https://h/r\nusername=a\n\n"
        );
    }

    #[test]
    fn only_http_and_https_ask_the_helpers() {
        assert!(is_http("HTTPS://h/r") && is_http("http://h/r"));
        assert!(!is_http("ssh://git@h/r") && !is_http("git://h/r") && !is_http("h:r"));
    }
}
