//! `zot ext install ssh://...` against a real OpenSSH server on 127.0.0.1 (`/usr/sbin/sshd`
//! with its own host key and authorized keys, letting in the user running the tests): keys
//! from `~/.ssh` and from an ssh agent, a rejected key, and host keys that are unknown or
//! changed. sshd must be installed when `CI` or `ZOT_REQUIRE_SHELLS` is set (`.ci/run`
//! installs openssh-server); elsewhere these tests are skipped with a note.

use std::fs;
use std::path::{Path, PathBuf};

use crate::git_install::{
    assert_git_record, assert_installed_tree, assert_nothing_installed, bounded, extension_repo,
    install_fails, install_git, served,
};
use crate::support::Env;
use crate::support::git_servers::{SSHD, SshAgent, Sshd, ssh_key};

fn required() -> bool {
    let set = |key: &str| std::env::var(key).is_ok_and(|v| !v.is_empty() && v != "false");
    set("CI") || set("ZOT_REQUIRE_SHELLS")
}

/// Whether sshd is installed; a missing sshd fails under CI and skips elsewhere.
fn have_sshd() -> bool {
    let found = Path::new(SSHD).is_file();
    if !found {
        assert!(
            !required(),
            "{SSHD} is not installed, and CI must test ssh installs: apt-get install openssh-server"
        );
        eprintln!("note: {SSHD} is not installed; skipping the ssh install test");
    }
    found
}

/// The test user's `~/.ssh`.
fn dot_ssh(env: &Env) -> PathBuf {
    let dir = env.user_home.join(".ssh");
    fs::create_dir_all(&dir).unwrap();
    dir
}

fn write_known_hosts(env: &Env, text: &str) {
    fs::write(dot_ssh(env).join("known_hosts"), text).unwrap();
}

#[test]
fn installs_with_a_key_file_and_a_known_host() {
    if !have_sshd() {
        return;
    }
    let env = Env::new();
    let key = ssh_key(&dot_ssh(&env), "id_ed25519");
    let sshd = Sshd::start(&[&key]);
    write_known_hosts(&env, &format!("{}\n", sshd.known_hosts_line()));
    let (_tmp, root) = served();
    let repo = extension_repo(&env, &root, "sshy");
    let url = sshd.url(&repo.bare);
    install_git(&env, &url);
    assert_installed_tree(&env, "sshy");
    assert_git_record(&env, "sshy", &url, None, &repo.head_commit());
}

/// Hashes the host names of `~/.ssh/known_hosts` (`|1|salt|hash`), as `HashKnownHosts` does.
fn hash_known_hosts(env: &Env) {
    let file = dot_ssh(env).join("known_hosts");
    let output = std::process::Command::new("ssh-keygen")
        .arg("-H")
        .arg("-f")
        .arg(&file)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let text = fs::read_to_string(&file).unwrap();
    assert!(text.starts_with("|1|"), "{text}");
}

#[test]
fn installs_with_a_hashed_known_hosts_entry() {
    if !have_sshd() {
        return;
    }
    let env = Env::new();
    let key = ssh_key(&dot_ssh(&env), "id_ed25519");
    let sshd = Sshd::start(&[&key]);
    write_known_hosts(&env, &format!("{}\n", sshd.known_hosts_line()));
    hash_known_hosts(&env);
    let (_tmp, root) = served();
    let repo = extension_repo(&env, &root, "hashy");
    let url = sshd.url(&repo.bare);
    install_git(&env, &url);
    assert_git_record(&env, "hashy", &url, None, &repo.head_commit());
}

#[test]
fn installs_with_a_key_only_in_the_ssh_agent() {
    if !have_sshd() {
        return;
    }
    let env = Env::new();
    // The key lives outside ~/.ssh: only the agent can offer it.
    let key = ssh_key(&env.work.join("keys"), "agent_key");
    let agent = SshAgent::with_key(&key);
    let sshd = Sshd::start(&[&key]);
    write_known_hosts(&env, &format!("{}\n", sshd.known_hosts_line()));
    let (_tmp, root) = served();
    let repo = extension_repo(&env, &root, "agenty");
    let url = sshd.url(&repo.bare);
    let args = ["ext", "install", url.as_str()];
    bounded(env.zot(args).env("SSH_AUTH_SOCK", &agent.socket), &args).success();
    assert_installed_tree(&env, "agenty");
    assert_git_record(&env, "agenty", &url, None, &repo.head_commit());
}

#[test]
fn a_key_the_server_rejects_fails_with_what_was_tried() {
    if !have_sshd() {
        return;
    }
    let env = Env::new();
    let accepted = ssh_key(&env.work.join("keys"), "accepted");
    let sshd = Sshd::start(&[&accepted]);
    let rejected = ssh_key(&dot_ssh(&env), "id_ed25519");
    let agent = SshAgent::with_key(&ssh_key(&env.work.join("keys"), "agent_key"));
    write_known_hosts(&env, &format!("{}\n", sshd.known_hosts_line()));
    let (_tmp, root) = served();
    let repo = extension_repo(&env, &root, "locked");
    let url = sshd.url(&repo.bare);
    let args = ["ext", "install", url.as_str()];
    let before = env.snapshot();
    let done = bounded(env.zot(args).env("SSH_AUTH_SOCK", &agent.socket), &args);
    done.failure(1);
    for text in [
        format!("error: cannot authenticate to {url}"),
        format!("tried: the ssh agent, {}", rejected.display()),
        "Fix: register your public key (such as ~/.ssh/id_ed25519.pub) with the server".to_string(),
        "ssh-add".to_string(),
    ] {
        done.stderr_has(&text);
    }
    done.stderr_lacks("host key").stdout_is("");
    assert_nothing_installed(&env, &before);
}

#[test]
fn an_unknown_host_key_is_refused_with_the_command_to_add_it() {
    if !have_sshd() {
        return;
    }
    let env = Env::new();
    let key = ssh_key(&dot_ssh(&env), "id_ed25519");
    let sshd = Sshd::start(&[&key]);
    let (_tmp, root) = served();
    let repo = extension_repo(&env, &root, "stranger");
    let url = sshd.url(&repo.bare);
    let port = sshd.port;
    let expected = [
        format!("error: the host key of 127.0.0.1:{port} is not in ~/.ssh/known_hosts"),
        format!("the server offered the ED25519 key {}", sshd.fingerprint()),
        format!("add it with: ssh-keyscan -p {port} 127.0.0.1 >> ~/.ssh/known_hosts"),
    ];
    let expected: Vec<&str> = expected.iter().map(String::as_str).collect();
    // No known_hosts at all, then one that knows only other servers.
    install_fails(&env, &["ext", "install", &url], &expected).stderr_lacks("authenticate");
    let other = ssh_key(&env.work.join("keys"), "other_host");
    let other = fs::read_to_string(other.with_extension("pub")).unwrap();
    let other: Vec<&str> = other.split_whitespace().take(2).collect();
    write_known_hosts(
        &env,
        &format!(
            "127.0.0.1 {0} {1}\n[127.0.0.1]:{2} {0} {1}\n",
            other[0],
            other[1],
            port + 1
        ),
    );
    install_fails(&env, &["ext", "install", &url], &expected);
    // The right key makes it work.
    write_known_hosts(&env, &format!("{}\n", sshd.known_hosts_line()));
    install_git(&env, &url);
}

#[test]
fn a_changed_host_key_is_refused() {
    if !have_sshd() {
        return;
    }
    let env = Env::new();
    let key = ssh_key(&dot_ssh(&env), "id_ed25519");
    let sshd = Sshd::start(&[&key]);
    let (_tmp, root) = served();
    let repo = extension_repo(&env, &root, "changed");
    let url = sshd.url(&repo.bare);
    let port = sshd.port;
    let old = ssh_key(&env.work.join("keys"), "old_host_key");
    let old = fs::read_to_string(old.with_extension("pub")).unwrap();
    let old: Vec<&str> = old.split_whitespace().take(2).collect();
    let expected = [
        format!("error: the host key of 127.0.0.1:{port} has CHANGED"),
        format!("the server offered the ED25519 key {}", sshd.fingerprint()),
        "refusing to connect".to_string(),
        format!("ssh-keygen -R '[127.0.0.1]:{port}'"),
        format!("ssh-keyscan -p {port} 127.0.0.1 >> ~/.ssh/known_hosts"),
    ];
    let expected: Vec<&str> = expected.iter().map(String::as_str).collect();
    for hashed in [false, true] {
        write_known_hosts(&env, &format!("[127.0.0.1]:{port} {} {}\n", old[0], old[1]));
        if hashed {
            hash_known_hosts(&env);
        }
        install_fails(&env, &["ext", "install", &url], &expected).stderr_lacks("authenticate");
    }
}
