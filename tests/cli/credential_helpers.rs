//! git's credential helpers, asked as git asks them: what a helper is told is compared with
//! what `git credential fill` tells it for the same URL and configuration, and a loopback
//! HTTP server records the `Authorization` headers zot sent.

use std::fs;
use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::git_install::{bounded, extension_repo, served, zot};
use crate::support::git_servers::{HttpGit, base64};
use crate::support::{Env, path_without_agent, write_executable};

/// The `Authorization` headers the server received.
fn authorizations(http: &HttpGit) -> Vec<String> {
    http.requests()
        .into_iter()
        .filter_map(|r| r.authorization)
        .collect()
}

fn basic(user: &str, password: &str) -> String {
    format!("Basic {}", base64(format!("{user}:{password}").as_bytes()))
}

/// Two stored credentials for two hosts: the one for the server's host and port is sent,
/// the other never; a URL with an IP address gets neither (git asks with
/// `host=127.0.0.1:PORT`, which matches no stored entry).
#[test]
fn only_the_credential_stored_for_the_host_is_sent() {
    let env = Env::new();
    let (_tmp, root) = served();
    extension_repo(&env, &root, "private");
    let http = HttpGit::with_auth(&root, "bob", "right-pw");
    let store = env.work.join("store");
    fs::write(
        &store,
        format!(
            "http://alice:intranet-pw@intranet.example.com\nhttp://bob:right-pw@localhost:{}\n",
            http.port()
        ),
    )
    .unwrap();
    fs::write(
        env.user_home.join(".gitconfig"),
        format!(
            "[credential]\n\thelper = store --file {}\n",
            store.display()
        ),
    )
    .unwrap();

    let by_ip = zot(&env, &["ext", "install", &http.url("private")]);
    by_ip.failure(1);
    by_ip.stderr_lacks("intranet-pw").stderr_lacks("right-pw");
    assert_eq!(authorizations(&http), Vec::<String>::new());

    let by_name = format!("http://localhost:{}/private.git", http.port());
    zot(&env, &["ext", "install", &by_name]).success();
    let sent = authorizations(&http);
    assert!(!sent.is_empty());
    assert!(
        sent.iter().all(|a| *a == basic("bob", "right-pw")),
        "{sent:?}"
    );
}

/// A helper that logs its arguments and what it was asked, and answers nothing.
fn logging_helper(dir: &Path, log: &Path) -> std::path::PathBuf {
    let helper = dir.join("git-credential-logme");
    write_executable(
        &helper,
        &format!(
            "#!/bin/sh\necho \"args: $*\" >> '{0}'\ncat >> '{0}'\necho -- >> '{0}'\n",
            log.display()
        ),
    );
    helper
}

/// What `git credential fill` tells the helpers for `url`, with the same HOME and PATH.
fn git_fill(env: &Env, path: &std::ffi::OsStr, url: &str) {
    let mut child = Command::new("git")
        .args(["credential", "fill"])
        .env_clear()
        .env("PATH", path)
        .env("HOME", &env.user_home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "url={url}\n").unwrap();
    drop(stdin);
    // It fails: no helper answers and it may not prompt.
    let _ = child.wait().unwrap();
}

/// A bare helper name, an absolute path and a `!` snippet; a URL with a user name, one
/// whose `credential.<url>.*` entries add a path and a user name, and one they do not
/// match: each helper is told exactly what `git credential fill` tells it.
#[test]
fn helpers_are_asked_what_git_credential_fill_asks() {
    let env = Env::new();
    let (_tmp, root) = served();
    extension_repo(&env, &root, "r");
    let http = HttpGit::with_auth(&root, "bob", "right-pw");
    let bin = env.work.join("bin");
    fs::create_dir_all(&bin).unwrap();
    let log = env.work.join("asked.log");
    let helper = logging_helper(&bin, &log);
    let port = http.port();
    fs::write(
        env.user_home.join(".gitconfig"),
        format!(
            "[credential]\n\thelper = logme\n\thelper = {}\n\thelper = \"!f() {{ echo snippet \\\"$@\\\" >> '{}'; }}; f\"\n\
             [credential \"http://127.0.0.1:{port}/team\"]\n\tuseHttpPath = true\n\tusername = carol\n\
             [credential \"http://localhost\"]\n\thelper =\n\thelper = logme\n",
            helper.display(),
            log.display()
        ),
    )
    .unwrap();
    let path = env.path_with(&bin);
    for url in [
        format!("http://127.0.0.1:{port}/r.git"),
        format!("http://dave@127.0.0.1:{port}/r.git"),
        format!("http://127.0.0.1:{port}/team/r.git"),
        format!("http://localhost:{port}/r.git"),
    ] {
        let _ = fs::remove_file(&log);
        let done = bounded(env.zot(["ext", "install", &url]).env("PATH", &path), &[]);
        done.failure(1);
        let by_zot = fs::read_to_string(&log).unwrap_or_default();
        let _ = fs::remove_file(&log);
        git_fill(&env, &path, &url);
        let by_git = fs::read_to_string(&log).unwrap_or_default();
        assert!(by_git.contains("args: get"), "{url}: {by_git}");
        assert_eq!(by_zot, by_git, "{url}");
    }
}

/// A helper that never answers is stopped after the low-speed time, and says so.
#[test]
fn a_helper_that_does_not_answer_is_stopped() {
    let env = Env::new();
    let (_tmp, root) = served();
    extension_repo(&env, &root, "r");
    let http = HttpGit::with_auth(&root, "bob", "right-pw");
    fs::write(
        env.user_home.join(".gitconfig"),
        "[credential]\n\thelper = \"!sleep 600;:\"\n",
    )
    .unwrap();
    let done = bounded(
        env.zot(["ext", "install", &http.url("r")])
            .env("GIT_HTTP_LOW_SPEED_TIME", "2")
            .env("PATH", path_without_agent()),
        &[],
    );
    done.failure(1);
    done.stderr_has("did not answer within 2 s");
}

/// A password a helper answered, rejected by the server, appears in no output, and the
/// helper is named by its program only.
#[test]
fn a_rejected_helper_password_is_never_shown() {
    let env = Env::new();
    let (_tmp, root) = served();
    extension_repo(&env, &root, "r");
    let http = HttpGit::with_auth(&root, "bob", "right-pw");
    fs::write(
        env.user_home.join(".gitconfig"),
        "[credential]\n\thelper = \"!printf 'username=bob\\\\npassword=wr0ng-s3cret\\\\n'; :\"\n",
    )
    .unwrap();
    let done = zot(&env, &["ext", "install", &http.url("r")]);
    done.failure(1);
    done.stderr_has("cannot authenticate")
        .stderr_lacks("wr0ng-s3cret")
        .stdout_lacks("wr0ng-s3cret");
    assert_eq!(authorizations(&http), [basic("bob", "wr0ng-s3cret")]);
}

/// After the attempt, the helpers hear how it went, as from git: `store` when the server
/// took their answer, `erase` when it refused it (so `store` and `cache` keep or forget it).
#[test]
fn helpers_hear_whether_their_answer_was_taken() {
    let env = Env::new();
    let (_tmp, root) = served();
    extension_repo(&env, &root, "private");
    let http = HttpGit::with_auth(&root, "bob", "right-pw");
    let bin = env.work.join("bin");
    fs::create_dir_all(&bin).unwrap();
    let log = env.work.join("actions.log");
    let password = env.work.join("password");
    write_executable(
        &bin.join("git-credential-answer"),
        &format!(
            "#!/bin/sh\ncat > /dev/null\necho \"$1\" >> '{}'\n[ \"$1\" = get ] && printf 'username=bob\\npassword=%s\\n' \"$(cat '{}')\"\nexit 0\n",
            log.display(),
            password.display()
        ),
    );
    fs::write(
        env.user_home.join(".gitconfig"),
        "[credential]\n\thelper = answer\n",
    )
    .unwrap();
    let path = env.path_with(&bin);
    let url = format!("http://localhost:{}/private.git", http.port());

    fs::write(&password, "wrong-pw").unwrap();
    bounded(env.zot(["ext", "install", &url]).env("PATH", &path), &[]).failure(1);
    let actions = fs::read_to_string(&log).unwrap();
    assert!(
        actions.contains("get\n") && actions.contains("erase\n"),
        "{actions}"
    );
    assert!(!actions.contains("store"), "{actions}");

    fs::remove_file(&log).unwrap();
    fs::write(&password, "right-pw").unwrap();
    bounded(env.zot(["ext", "install", &url]).env("PATH", &path), &[]).success();
    let actions = fs::read_to_string(&log).unwrap();
    assert!(
        actions.contains("get\n") && actions.contains("store\n"),
        "{actions}"
    );
    assert!(!actions.contains("erase"), "{actions}");
}

/// A repository the command is started in cannot name a credential helper: its
/// `.git/config` (a clone's, anyone's) is never read for credentials, only the user's.
#[test]
fn the_repository_zot_runs_in_names_no_helper() {
    let env = Env::new();
    let (_tmp, root) = served();
    extension_repo(&env, &root, "private");
    let http = HttpGit::with_auth(&root, "bob", "right-pw");
    let marker = env.work.join("ran");
    let status = Command::new("git")
        .args(["init", "-q"])
        .current_dir(&env.project)
        .status()
        .unwrap();
    assert!(status.success());
    fs::write(
        env.project.join(".git/config"),
        format!(
            "[credential]\n\thelper = \"!f() {{ touch '{}'; }}; f\"\n",
            marker.display()
        ),
    )
    .unwrap();
    let url = format!("http://localhost:{}/private.git", http.port());
    bounded(env.zot(["ext", "install", &url]), &[]).failure(1);
    assert!(!marker.exists(), "the repository's helper ran");
}
