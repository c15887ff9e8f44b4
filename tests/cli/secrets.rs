//! No credential ever reaches the terminal, `--json`, an error or a file under `ZOT_HOME`,
//! whatever form it takes in a source (user-info with odd characters, a query token, an
//! scp-like password); and one error is one line, whatever a file or folder is named.

use std::fs;

use serde_json::Value;

use crate::git_install::{extension_repo, install_git, install_git_with, served, zot};
use crate::support::extensions::sh_extension;
use crate::support::git_servers::{GitDaemon, HttpGit, Repo, free_port};
use crate::support::{Done, Env, manifest};

// ---------------------------------------------------------------------------------------------
// Helpers

/// `secret` is in no file under `ZOT_HOME` or the project's `.zot` (byte comparison, so
/// binary files count too).
fn assert_not_stored(env: &Env, secret: &str) {
    for base in [env.home.clone(), env.project.join(".zot")] {
        for entry in walkdir::WalkDir::new(&base).into_iter().flatten() {
            if !entry.file_type().is_file() {
                continue;
            }
            let bytes = fs::read(entry.path()).unwrap_or_default();
            assert!(
                !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
                "{} holds {secret:?}",
                entry.path().display()
            );
        }
    }
}

/// stderr is exactly one line (ending in a newline).
fn assert_one_line(done: &Done) {
    assert!(
        done.stderr.ends_with('\n') && done.stderr.matches('\n').count() == 1,
        "not one line:\n{:?}",
        done.stderr
    );
}

fn record_source(env: &Env, name: &str) -> Value {
    let path = env
        .home
        .join(".ext-store/sources")
        .join(format!("{name}.json"));
    let record: Value = serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap();
    record["source"].clone()
}

// ---------------------------------------------------------------------------------------------
// Errors: an unreachable loopback port

#[test]
fn install_errors_never_show_a_credential() {
    let env = Env::new();
    let port = free_port();
    let cases = [
        // The `#` used to start the subfolder, cutting the URL inside the password.
        (
            format!("http://user:hunter2#rest@127.0.0.1:{port}/x.git"),
            "hunter2",
            format!("cannot fetch http://***@127.0.0.1:{port}/x.git: "),
        ),
        (
            format!("https://user:hunter2#rest@127.0.0.1:{port}/x.git#sub/dir"),
            "hunter2",
            format!("cannot fetch https://***@127.0.0.1:{port}/x.git: "),
        ),
        (
            format!("http://alice:pa?ss@w:rd-5ecret@127.0.0.1:{port}/x.git"),
            "rd-5ecret",
            format!("http://***@127.0.0.1:{port}/x.git"),
        ),
        (
            format!("http://ghp_t0ken5ecret@127.0.0.1:{port}/x.git"),
            "t0ken5ecret",
            format!("cannot fetch http://***@127.0.0.1:{port}/x.git: "),
        ),
        (
            format!("http://127.0.0.1:{port}/x.git?access_token=tok-5ecret&ref=main"),
            "tok-5ecret",
            format!("cannot fetch http://127.0.0.1:{port}/x.git?access_token=***&ref=main: "),
        ),
        (
            format!("http://127.0.0.1:{port}/x.git?X-Amz-Signature=abc5ecret"),
            "abc5ecret",
            format!("cannot fetch http://127.0.0.1:{port}/x.git?X-Amz-Signature=***: "),
        ),
        // `;` separates parameters too, and a parameter's name may be percent-encoded.
        (
            format!("http://127.0.0.1:{port}/x.git?a=1;token=semi-5ecret"),
            "semi-5ecret",
            format!("cannot fetch http://127.0.0.1:{port}/x.git?a=1;token=***: "),
        ),
        (
            format!("http://127.0.0.1:{port}/x.git?%74oken=esc-5ecret"),
            "esc-5ecret",
            format!("cannot fetch http://127.0.0.1:{port}/x.git?%74oken=***: "),
        ),
        (
            format!("git://user:git-5ecret@127.0.0.1:{port}/x.git"),
            "git-5ecret",
            format!("git://***@127.0.0.1:{port}/x.git"),
        ),
        (
            format!("ssh://git:ssh-5ecret@127.0.0.1:{port}/x.git"),
            "ssh-5ecret",
            format!("ssh://git:***@127.0.0.1:{port}/x.git"),
        ),
    ];
    for (url, secret, shown) in &cases {
        for json in [false, true] {
            let mut args = vec!["ext", "install", url.as_str()];
            if json {
                args.push("--json");
            }
            let done = zot(&env, &args);
            done.failure(1).stdout_lacks(secret).stderr_lacks(secret);
            assert_one_line(&done);
            done.stderr_has(shown.as_str());
        }
    }
    assert_not_stored(&env, "5ecret");
    assert_not_stored(&env, "hunter2");
    assert!(env.installed_names().is_empty());
}

#[test]
fn an_scp_like_password_is_refused_without_showing_it() {
    let env = Env::new();
    // libgit2 would read `git` as the host and try to reach it: refused before any connection.
    let done = zot(
        &env,
        &["ext", "install", "git:scp-5ecret@127.0.0.1:owner/x.git"],
    );
    done.failure(2)
        .stdout_lacks("scp-5ecret")
        .stderr_lacks("scp-5ecret");
    assert_one_line(&done);
    done.stderr_has(
        "git:***@127.0.0.1:owner/x.git: the user@host:path form cannot carry a password",
    );
    assert_not_stored(&env, "scp-5ecret");
}

// ---------------------------------------------------------------------------------------------
// Success: the loopback smart-HTTP server

/// The password the server expects: `#`, `?` raw in the URL, `@` and `:` percent-encoded.
const PASSWORD: &str = "p#ss?w@rd:5ecret";
const PASSWORD_IN_URL: &str = "p#ss?w%40rd%3A5ecret";

#[test]
fn a_password_with_odd_characters_is_used_but_never_shown_or_stored() {
    let env = Env::new();
    let (_tmp, root) = served();
    extension_repo(&env, &root, "private");
    let http = HttpGit::with_auth(&root, "alice", PASSWORD);
    let url = format!(
        "http://alice:{PASSWORD_IN_URL}@127.0.0.1:{}/private.git",
        http.port()
    );
    let shown = format!("http://***@127.0.0.1:{}/private.git", http.port());

    let done = install_git(&env, &url);
    assert!(done.stdout.starts_with("installed private"), "{done:#?}");
    assert_eq!(record_source(&env, "private"), shown.as_str());
    let done_json = install_git_with(&env, &url, &["--force", "--json"]);
    assert_eq!(done_json.json()["source"], shown.as_str());

    // `#` starts the subfolder only after the host.
    Repo::with_files(
        &root,
        "mono",
        &[
            ("ext/inner/extension.json", &manifest("inner")),
            ("ext/inner/run.sh", "#!/bin/sh\n"),
        ],
    );
    let mono = format!(
        "http://alice:{PASSWORD_IN_URL}@127.0.0.1:{}/mono.git#ext/inner",
        http.port()
    );
    let done_subdir = install_git(&env, &mono);
    assert_eq!(
        record_source(&env, "inner"),
        format!("http://***@127.0.0.1:{}/mono.git", http.port()).as_str()
    );
    assert!(env.global_root().join("inner/extension.json").is_file());

    let mut runs = vec![done, done_json, done_subdir];
    for args in [
        &["ext", "list"][..],
        &["ext", "list", "--json"],
        &["ext", "info", "private"],
        &["ext", "info", "private", "--json"],
    ] {
        let done = zot(&env, args);
        done.success();
        runs.push(done);
    }
    let info = zot(&env, &["ext", "info", "private", "--json"]).json();
    assert_eq!(info["copies"][0]["record"]["source"], shown.as_str());
    // The record keeps no credential, so update has none to send: it fails, naming the
    // redacted URL.
    for args in [
        &["ext", "update", "private"][..],
        &["ext", "update", "private", "--json"],
    ] {
        let done = zot(&env, args);
        done.failure(1);
        runs.push(done);
    }
    for done in &runs {
        for secret in ["5ecret", "p#ss", "alice"] {
            done.stdout_lacks(secret).stderr_lacks(secret);
        }
    }
    for secret in ["5ecret", "p#ss", "alice"] {
        assert_not_stored(&env, secret);
    }
}

#[test]
fn a_query_token_is_never_shown_or_stored() {
    let env = Env::new();
    let (_tmp, root) = served();
    let repo = extension_repo(&env, &root, "tokened");
    let http = HttpGit::start(&root);
    let url = format!("{}?private_token=tok-5ecret&ref=main", http.url("tokened"));
    let shown = format!("{}?private_token=***&ref=main", http.url("tokened"));

    let mut runs = Vec::new();
    let done = install_git_with(&env, &url, &["--json"]);
    assert_eq!(done.json()["source"], shown.as_str());
    assert_eq!(record_source(&env, "tokened"), shown.as_str());
    runs.push(done);
    repo.commit(&[("rev.txt", "two\n")]);
    for args in [
        &["ext", "update", "tokened", "--dry-run"][..],
        &["ext", "update", "tokened", "--json"],
        &["ext", "info", "tokened"],
        &["ext", "info", "tokened", "--json"],
        &["ext", "list", "--json"],
    ] {
        let done = zot(&env, args);
        done.success();
        runs.push(done);
    }
    assert_eq!(record_source(&env, "tokened"), shown.as_str());
    for done in &runs {
        done.stdout_lacks("tok-5ecret").stderr_lacks("tok-5ecret");
    }
    assert_not_stored(&env, "tok-5ecret");
}

/// A git daemon sees the query string as part of the path and quotes it back: a short token
/// there is hidden too.
#[test]
fn a_short_query_token_quoted_back_by_the_server_is_never_shown() {
    let env = Env::new();
    let (_tmp, root) = served();
    extension_repo(&env, &root, "single");
    let daemon = GitDaemon::start(&root);
    let url = format!("{}?token=x~y", daemon.url("single"));
    let done = zot(&env, &["ext", "install", &url]);
    done.failure(1);
    done.stderr_has("?token=***").stderr_lacks("x~y");
    assert_one_line(&done);
}

/// A record written by hand (or by an older zot) that holds credentials: `info` and `update`
/// never show them, in text or JSON, in success or failure.
#[test]
fn credentials_in_an_old_record_are_never_shown() {
    let env = Env::new();
    env.installed("legacy", false);
    let port = free_port();
    let record = env.home.join(".ext-store/sources/legacy.json");
    let mut value: Value = serde_json::from_str(&fs::read_to_string(&record).unwrap()).unwrap();
    value["kind"] = "git".into();
    value["ref_kind"] = "branch".into();
    value["branch"] = "refs/heads/main".into();
    value["source"] = format!(
        "http://alice:old#5ecret@127.0.0.1:{port}/x.git?access_token=older-5ecret&ref=main"
    )
    .into();
    fs::write(&record, serde_json::to_string_pretty(&value).unwrap()).unwrap();
    let shown = format!("http://***@127.0.0.1:{port}/x.git?access_token=***&ref=main");

    let info = zot(&env, &["ext", "info", "legacy"]);
    info.success().stdout_has(&shown);
    let info_json = zot(&env, &["ext", "info", "legacy", "--json"]);
    assert_eq!(
        info_json.json()["copies"][0]["record"]["source"],
        shown.as_str()
    );
    let update = zot(&env, &["ext", "update", "legacy"]);
    update.failure(1).stderr_has(&shown);
    let update_json = zot(&env, &["ext", "update", "legacy", "--json"]);
    update_json.failure(1);
    for done in [&info, &info_json, &update, &update_json] {
        done.stdout_lacks("5ecret")
            .stderr_lacks("5ecret")
            .stdout_lacks("alice")
            .stderr_lacks("alice");
    }
}

// ---------------------------------------------------------------------------------------------
// Escaping: one error is one line

const FORGED: &str = "x\nerror: everything is fine";
const FORGED_SHOWN: &str = "x\\nerror: everything is fine";

#[test]
fn a_hostile_source_folder_name_is_one_escaped_line() {
    let env = Env::new();
    let src = env.work.join(FORGED);
    fs::create_dir_all(&src).unwrap();
    let done = env.zot(["ext", "install", src.to_str().unwrap()]).fails(1);
    assert_one_line(&done);
    done.stderr_has(&format!("{FORGED_SHOWN}/extension.json: not found"));
}

#[test]
fn a_hostile_file_name_inside_a_source_is_one_escaped_line() {
    let env = Env::new();
    let src = env.source("src", "hostile");
    let fifo = src.join(format!("{FORGED}\u{1b}[31m"));
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
    let done = env.zot(["ext", "install", src.to_str().unwrap()]).fails(1);
    assert_one_line(&done);
    done.stderr_has(&format!("{FORGED_SHOWN}\\u{{1b}}[31m"))
        .stderr_lacks("\u{1b}");
    assert!(env.installed_names().is_empty());
}

/// A folder in the store named with a newline and an escape sequence, holding a broken
/// manifest: every command that names it keeps to one line per error or row.
#[test]
fn a_hostile_store_folder_name_is_escaped_everywhere() {
    let env = Env::new();
    let name = format!("ev\u{1b}[31mil{FORGED}");
    let dir = env.global_root().join(&name);
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join("extension.json"), "{ not json").unwrap();

    let done = env.zot(["ext", "enable", &name]).output();
    assert_ne!(done.code, 0, "{done:#?}");
    assert_one_line(&done);
    done.stderr_has("ev\\u{1b}[31mil");

    let list = env.zot(["ext", "list"]).ok();
    assert_eq!(list.stdout.lines().count(), 2, "{}", list.stdout);
    list.stdout_lacks("\u{1b}");

    let info = env.zot(["ext", "info", &name]).ok();
    info.stdout_lacks("\u{1b}");
    assert!(
        info.stdout
            .lines()
            .all(|l| !l.starts_with("error: everything is fine")),
        "{}",
        info.stdout
    );
}

/// Manifest text shown by `info` (remote data: any repository controls it).
#[test]
fn manifest_text_in_info_stays_on_its_line() {
    let env = Env::new();
    let text = manifest("shady").replace("\"1.0.0\"", "\"1.0.0\\nerror: forged\\u001b[2J\"");
    let src = env.source_with_manifest("shady-src", &text);
    env.install(&src);
    let info = env.zot(["ext", "info", "shady"]).ok();
    info.stdout_lacks("\u{1b}");
    assert!(
        info.stdout.lines().all(|l| !l.starts_with("error: forged")),
        "{}",
        info.stdout
    );
    info.stdout_has("shady 1.0.0\\nerror: forged");
}

/// What an extension writes (its stderr, a command name in its hello) is remote data:
/// `doctor` and `call` show it with control characters escaped.
#[test]
fn extension_output_in_doctor_and_call_is_escaped() {
    let env = Env::new();
    let script = "printf 'red \\033[31mtext\\n' >&2\n\
                  echo '{\"type\":\"hello\",\"name\":\"loud\",\"version\":\"1.0.0\"}'\n\
                  read ack\n\
                  echo '{\"type\":\"register_command\",\"name\":\"x\\u001b[2Jy\",\"description\":\"d\"}'\n\
                  exit 3\n";
    sh_extension(&env.global_root(), "loud", "loud", script);
    env.zot(["ext", "doctor", "loud", "--color", "never"])
        .output()
        .stdout_lacks("\u{1b}")
        .stderr_lacks("\u{1b}")
        .stdout_has("red \\u{1b}[31mtext");
    let call = env
        .zot(["ext", "call", "loud", "/x", "--color", "never"])
        .fails(1);
    call.stdout_lacks("\u{1b}")
        .stderr_lacks("\u{1b}")
        .stderr_has("| red \\u{1b}[31mtext");
    // The error itself is the last line, and one line.
    let last = call.stderr.lines().last().unwrap();
    assert!(
        last.starts_with("error: loud did not start properly"),
        "{call:#?}"
    );
}
