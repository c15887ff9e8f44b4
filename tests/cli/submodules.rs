//! Repositories with submodules, against `git daemon`, smart HTTP, local paths and `file://`
//! URLs on 127.0.0.1: checkouts at the recorded commits (shallow, recursive, relative URLs),
//! subfolders in and around submodules, `update`, and the errors for submodules that cannot
//! be fetched and for manifests that are links or submodules in the repository.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::git_install::{
    assert_git_record, assert_installed_tree, bounded, extension_repo, install_fails, install_git,
    install_git_with, served, zot_ok,
};
use crate::support::git_servers::{self, GitDaemon, HttpGit, Repo};
use crate::support::{Env, manifest};

fn installed(env: &Env, name: &str) -> PathBuf {
    env.global_root().join(name)
}

fn read(dir: &Path, path: &str) -> String {
    fs::read_to_string(dir.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// No `.git` file or folder anywhere in the installed tree.
fn assert_no_git(dir: &Path) {
    for entry in walkdir::WalkDir::new(dir) {
        let entry = entry.unwrap();
        assert_ne!(
            entry.file_name(),
            ".git",
            "{} was installed",
            entry.path().display()
        );
    }
}

fn record(env: &Env, name: &str) -> Value {
    let path = env
        .home
        .join(".ext-store/sources")
        .join(format!("{name}.json"));
    serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap()
}

/// One line of error, nothing else.
fn assert_one_line(stderr: &str) {
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
}

fn lib_repo(root: &Path, name: &str, text: &str) -> Repo {
    Repo::with_files(root, name, &[("lib.txt", text)])
}

// ---------------------------------------------------------------------------------------------
// Installs

#[test]
fn a_submodule_with_a_relative_url_installs_shallow_over_git_daemon_and_http() {
    let seed = Env::new();
    let (_tmp, root) = served();
    let lib = lib_repo(&root, "lib", "lib one\n");
    let sup = extension_repo(&seed, &root, "withsub");
    let head = sup.add_submodule("vendor/lib", &lib, "../lib.git");
    let daemon = GitDaemon::start(&root);
    let http = HttpGit::start(&root);

    for url in [daemon.url("withsub"), http.url("withsub")] {
        let env = Env::new();
        install_git(&env, &url);
        let dir = installed(&env, "withsub");
        assert_installed_tree(&env, "withsub");
        assert_eq!(read(&dir, "vendor/lib/lib.txt"), "lib one\n", "{url}");
        assert_no_git(&dir);
        assert_git_record(&env, "withsub", &url, None, &head);
    }

    // The submodule was fetched at its recorded commit, shallowly.
    let uploads: Vec<String> = http
        .requests()
        .iter()
        .filter(|r| r.method == "POST" && r.path == "/lib.git/git-upload-pack")
        .map(super::support::git_servers::Request::body_text)
        .collect();
    assert!(
        uploads
            .iter()
            .any(|b| b.contains("deepen 1") && b.contains(&format!("want {}", lib.head_commit()))),
        "the submodule fetch was not shallow at its commit: {uploads:#?}"
    );
}

#[test]
fn nested_submodules_are_checked_out_recursively() {
    let env = Env::new();
    let (_tmp, root) = served();
    let daemon = GitDaemon::start(&root);
    let inner = Repo::with_files(&root, "inner", &[("inner.txt", "inner\n")]);
    let lib = lib_repo(&root, "lib", "lib\n");
    lib.add_submodule("deps/inner", &inner, "../inner.git");
    let sup = extension_repo(&env, &root, "nested");
    // An absolute URL this time.
    sup.add_submodule("vendor/lib", &lib, &daemon.url("lib"));
    // `update = none`: skipped (left an empty folder), as git does; its URL is dead.
    let dead = format!("git://127.0.0.1:{}/dead.git", git_servers::free_port());
    sup.add_submodule("vendor/skipped", &inner, &dead);
    git_servers::git(
        &sup.work,
        &[
            "config",
            "--file",
            ".gitmodules",
            "submodule.vendor/skipped.update",
            "none",
        ],
    );
    sup.commit_with("skip it", |_| {});

    install_git(&env, &daemon.url("nested"));

    let dir = installed(&env, "nested");
    assert_eq!(read(&dir, "vendor/lib/lib.txt"), "lib\n");
    assert_eq!(read(&dir, "vendor/lib/deps/inner/inner.txt"), "inner\n");
    assert_eq!(fs::read_dir(dir.join("vendor/skipped")).unwrap().count(), 0);
    assert_no_git(&dir);
}

/// Lets the file protocol through for submodules in the user's git configuration.
fn allow_file_protocol(env: &Env) {
    fs::write(
        env.user_home.join(".gitconfig"),
        "[protocol \"file\"]\n\tallow = always\n",
    )
    .unwrap();
}

#[test]
fn local_repositories_take_path_file_and_relative_submodule_urls_where_git_allows_them() {
    let seed = Env::new();
    let (_tmp, root) = served();
    let inner = Repo::with_files(&root, "inner", &[("inner.txt", "inner\n")]);
    let lib = lib_repo(&root, "lib", "lib\n");
    lib.add_submodule(
        "deps/inner",
        &inner,
        &format!("file://{}", inner.bare.display()),
    );
    let rel = lib_repo(&root, "rel", "rel\n");
    let sup = extension_repo(&seed, &root, "local");
    sup.add_submodule("vendor/lib", &lib, lib.bare.to_str().unwrap());
    let head = sup.add_submodule("vendor/rel", &rel, "../rel.git");

    let file_url = format!("file://{}", sup.bare.display());
    let path = sup.bare.display().to_string();
    for source in [file_url.as_str(), path.as_str()] {
        let env = Env::new();
        allow_file_protocol(&env);
        install_git(&env, source);
        let dir = installed(&env, "local");
        assert_eq!(read(&dir, "vendor/lib/deps/inner/inner.txt"), "inner\n");
        assert_eq!(read(&dir, "vendor/rel/lib.txt"), "rel\n");
        assert_no_git(&dir);
        assert_git_record(&env, "local", source, None, &head);
    }
    // GIT_ALLOW_PROTOCOL holding file allows them too.
    let env = Env::new();
    let done = bounded(
        env.zot(["ext", "install", &path])
            .env("GIT_ALLOW_PROTOCOL", "https:file"),
        &[],
    );
    done.success();
    assert_eq!(
        read(&installed(&env, "local"), "vendor/rel/lib.txt"),
        "rel\n"
    );
}

/// A project ships a bare repository whose submodule points at a repository elsewhere on
/// the disk: without `protocol.file.allow=always` nothing of it is read, as with git.
#[test]
fn local_submodule_urls_are_refused_unless_git_allows_the_file_protocol() {
    let env = Env::new();
    let (_tmp, root) = served();
    let secret = lib_repo(&root, "secret", "TOP SECRET\n");
    let daemon = GitDaemon::start(&root);
    let vendored = extension_repo(&env, &root, "vendored");
    vendored.add_submodule("vendor/lib", &secret, secret.bare.to_str().unwrap());
    let relative = extension_repo(&env, &root, "relative");
    relative.add_submodule("vendor/lib", &secret, "../secret.git");
    let cases = [
        (
            vendored.bare.display().to_string(),
            secret.bare.display().to_string(),
        ),
        (
            format!("file://{}", vendored.bare.display()),
            secret.bare.display().to_string(),
        ),
        (
            relative.bare.display().to_string(),
            "../secret.git".to_string(),
        ),
        (daemon.url("vendored"), secret.bare.display().to_string()),
    ];
    for (source, url) in &cases {
        let done = install_fails(
            &env,
            &["ext", "install", source],
            &[
                &format!("submodule vendor/lib has the URL {url}"),
                "protocol.file.allow=always",
            ],
        );
        assert_one_line(&done.stderr);
    }
    // `user` is not enough (git runs submodules with GIT_PROTOCOL_FROM_USER=0), and
    // GIT_ALLOW_PROTOCOL without file wins over the configuration.
    fs::write(
        env.user_home.join(".gitconfig"),
        "[protocol]\n\tallow = user\n",
    )
    .unwrap();
    install_fails(
        &env,
        &["ext", "install", &cases[0].0],
        &["protocol.file.allow=always"],
    );
    allow_file_protocol(&env);
    let done = bounded(
        env.zot(["ext", "install", &cases[0].0])
            .env("GIT_ALLOW_PROTOCOL", "https:git"),
        &[],
    );
    done.failure(1);
    done.stderr_has("protocol.file.allow=always");
    assert!(!installed(&env, "vendored").exists());
}

/// A submodule URL with a control character (percent-encoded) is refused before anything
/// connects, naming the submodule.
#[test]
fn submodule_urls_with_control_characters_are_refused() {
    let env = Env::new();
    let (_tmp, root) = served();
    let lib = lib_repo(&root, "lib", "lib\n");
    let http = HttpGit::start(&root);
    let sup = extension_repo(&env, &root, "hostile");
    let url = format!(
        "http://x%0Ahost%3Dgithub.com@127.0.0.1:{}/lib.git",
        http.port()
    );
    sup.add_submodule("vendor/lib", &lib, &url);
    let done = install_fails(
        &env,
        &["ext", "install", &http.url("hostile")],
        &["submodule vendor/lib", "U+000A) in its user name"],
    );
    assert_one_line(&done.stderr);
    assert!(
        !http
            .requests()
            .iter()
            .any(|r| r.path.starts_with("/lib.git")),
        "the submodule was fetched"
    );
}

#[test]
fn subfolders_fetch_only_the_submodules_they_need() {
    let env = Env::new();
    let (_tmp, root) = served();
    let daemon = GitDaemon::start(&root);
    // Nothing listens here: fetching this submodule would fail the install.
    let dead = format!("git://127.0.0.1:{}/dead.git", git_servers::free_port());
    let dead_repo = lib_repo(&root, "dead", "dead\n");
    let libext = extension_repo(&env, &root, "libext");
    let lib = lib_repo(&root, "lib", "lib\n");
    let deep = Repo::with_files(
        &root,
        "deep",
        &[
            ("tools/ext/extension.json", &manifest("deepext")),
            ("tools/ext/run.sh", "#!/bin/sh\n"),
        ],
    );
    let mono = Repo::with_files(
        &root,
        "mono",
        &[
            ("README.md", "# several\n"),
            ("ext/extension.json", &manifest("outer")),
            ("ext/run.sh", "#!/bin/sh\n"),
        ],
    );
    mono.add_submodule("other", &dead_repo, &dead);
    mono.add_submodule("exts/libext", &libext, "../libext.git");
    mono.add_submodule("ext/vendor/lib", &lib, "../lib.git");
    mono.add_submodule("vendor/deep", &deep, "../deep.git");
    let url = daemon.url("mono");

    // The subfolder is a submodule.
    install_git(&env, &format!("{url}#exts/libext"));
    assert_installed_tree(&env, "libext");
    // The subfolder holds a submodule.
    install_git_with(&env, &url, &["--subdir", "ext"]);
    assert_eq!(
        read(&installed(&env, "outer"), "vendor/lib/lib.txt"),
        "lib\n"
    );
    // The subfolder lies inside a submodule.
    install_git(&env, &format!("{url}#vendor/deep/tools/ext"));
    assert!(installed(&env, "deepext").join("run.sh").is_file());
    for name in ["libext", "outer", "deepext"] {
        assert_no_git(&installed(&env, name));
    }
    assert_eq!(record(&env, "deepext")["subdir"], "vendor/deep/tools/ext");

    // The whole repository needs the dead one, and says so.
    let env = Env::new();
    let done = install_fails(
        &env,
        &["ext", "install", &url],
        &["submodule other", &format!("cannot fetch {dead}")],
    );
    assert_one_line(&done.stderr);
}

#[test]
fn update_takes_the_submodule_state_of_the_new_commit() {
    let env = Env::new();
    let (_tmp, root) = served();
    let lib = lib_repo(&root, "lib", "lib one\n");
    let sup = extension_repo(&env, &root, "moving");
    sup.add_submodule("vendor/lib", &lib, "../lib.git");
    let daemon = GitDaemon::start(&root);
    let url = daemon.url("moving");
    install_git(&env, &url);
    let dir = installed(&env, "moving");
    assert_eq!(read(&dir, "vendor/lib/lib.txt"), "lib one\n");

    // A newer lib commit alone changes nothing installed: the superproject still records the old.
    let newer = lib.commit(&[("lib.txt", "lib two\n"), ("added.txt", "added\n")]);
    zot_ok(&env, &["ext", "update", "moving"]).stdout_has("up to date");
    assert_eq!(read(&dir, "vendor/lib/lib.txt"), "lib one\n");

    let head = sup.set_gitlink("vendor/lib", &newer);
    zot_ok(&env, &["ext", "update", "moving"]);
    assert_eq!(read(&dir, "vendor/lib/lib.txt"), "lib two\n");
    assert_eq!(read(&dir, "vendor/lib/added.txt"), "added\n");
    assert_eq!(record(&env, "moving")["commit"], head);
    assert_no_git(&dir);
}

// ---------------------------------------------------------------------------------------------
// Submodules that cannot be fetched

#[test]
fn an_unreachable_submodule_names_its_path_and_url() {
    let env = Env::new();
    let (_tmp, root) = served();
    let lib = lib_repo(&root, "lib", "lib\n");
    let port = git_servers::free_port();
    let daemon = GitDaemon::start(&root);

    let dead = format!("git://127.0.0.1:{port}/lib.git");
    let sup = extension_repo(&env, &root, "unreach");
    sup.add_submodule("vendor/lib", &lib, &dead);
    let short = &sup.head_commit()[..12];
    let done = install_fails(
        &env,
        &["ext", "install", &daemon.url("unreach")],
        &[
            &format!("{} ({short}): submodule vendor/lib:", daemon.url("unreach")),
            &format!("cannot fetch {dead}"),
        ],
    );
    assert_one_line(&done.stderr);

    // Credentials in the submodule URL are not shown.
    let secret = format!("http://alice:s3cret-pw@127.0.0.1:{port}/lib.git");
    let sup = extension_repo(&env, &root, "secretive");
    sup.add_submodule("vendor/lib", &lib, &secret);
    let done = install_fails(
        &env,
        &["ext", "install", &daemon.url("secretive")],
        &[
            "submodule vendor/lib",
            &format!("http://***@127.0.0.1:{port}/lib.git"),
        ],
    );
    done.stderr_lacks("s3cret");
    assert_one_line(&done.stderr);
}

#[test]
fn a_submodule_behind_auth_says_what_was_tried() {
    let env = Env::new();
    let (_tmp, root) = served();
    let (_private_tmp, private_root) = served();
    let lib = lib_repo(&private_root, "lib", "lib\n");
    let private = HttpGit::with_auth(&private_root, "alice", "pw-XyZ-secret");
    let sup = extension_repo(&env, &root, "authsub");
    sup.add_submodule("vendor/lib", &lib, &private.url("lib"));
    let daemon = GitDaemon::start(&root);
    let done = install_fails(
        &env,
        &["ext", "install", &daemon.url("authsub")],
        &[
            "submodule vendor/lib",
            &format!("cannot authenticate to {}", private.url("lib")),
            "credential helper",
        ],
    );
    assert_one_line(&done.stderr);

    // With a credential helper that knows the password, the submodule is fetched.
    fs::write(
        env.user_home.join(".gitconfig"),
        "[credential]\n\thelper = store\n",
    )
    .unwrap();
    fs::write(
        env.user_home.join(".git-credentials"),
        format!("http://alice:pw-XyZ-secret@127.0.0.1:{}\n", private.port()),
    )
    .unwrap();
    install_git(&env, &daemon.url("authsub"));
    assert_eq!(
        read(&installed(&env, "authsub"), "vendor/lib/lib.txt"),
        "lib\n"
    );
}

#[test]
fn missing_commits_and_urls_of_submodules_are_reported() {
    let env = Env::new();
    let (_tmp, root) = served();
    let lib = lib_repo(&root, "lib", "lib\n");
    let daemon = GitDaemon::start(&root);

    let sup = extension_repo(&env, &root, "unpushed");
    sup.add_submodule("vendor/lib", &lib, "../lib.git");
    let missing = "0123456789abcdef0123456789abcdef01234567";
    sup.set_gitlink("vendor/lib", missing);
    let done = install_fails(
        &env,
        &["ext", "install", &daemon.url("unpushed")],
        &[
            "submodule vendor/lib",
            &format!("{} has no commit \"{missing}\"", daemon.url("lib")),
            "was it pushed?",
        ],
    );
    assert_one_line(&done.stderr);

    // A gitlink that .gitmodules does not mention.
    let sup = extension_repo(&env, &root, "unlisted");
    sup.set_gitlink("third_party/x", &lib.head_commit());
    install_fails(
        &env,
        &["ext", "install", &daemon.url("unlisted")],
        &["submodule third_party/x has no url in .gitmodules"],
    );
}

// ---------------------------------------------------------------------------------------------
// Manifests that are not files in the repository

#[test]
fn a_manifest_that_is_a_link_or_a_submodule_in_the_repository_is_refused() {
    let env = Env::new();
    let (_tmp, root) = served();
    let http = HttpGit::start(&root);

    let src = env.source("src-linked", "linked");
    fs::rename(src.join("extension.json"), src.join("real.json")).unwrap();
    std::os::unix::fs::symlink("real.json", src.join("extension.json")).unwrap();
    let linked = Repo::from_dir(&root, "linked", &src);
    let url = http.url("linked");
    let done = install_fails(
        &env,
        &["ext", "install", &url],
        &[&format!(
            "{url} ({}): extension.json is a symbolic link in the repository",
            &linked.head_commit()[..12]
        )],
    );
    assert_one_line(&done.stderr);

    let lib = lib_repo(&root, "lib", "{}\n");
    let gitlinked = Repo::with_files(&root, "gitlinked", &[("run.sh", "#!/bin/sh\n")]);
    let head = gitlinked.add_submodule("extension.json", &lib, "../lib.git");
    let url = http.url("gitlinked");
    let done = install_fails(
        &env,
        &["ext", "install", &url],
        &[&format!(
            "{url} ({}): extension.json is a submodule (gitlink) in the repository, not a file",
            &head[..12]
        )],
    );
    assert_one_line(&done.stderr);
    assert!(
        !http
            .requests()
            .iter()
            .any(|r| r.path.starts_with("/lib.git")),
        "the manifest's submodule was fetched"
    );

    // A linked manifest inside a submodule, installed as a subfolder.
    let deep = Repo::with_files(&root, "deep", &[("ext/run.sh", "#!/bin/sh\n")]);
    deep.commit_with("link", |work| {
        fs::write(work.join("ext/real.json"), manifest("deepext")).unwrap();
        std::os::unix::fs::symlink("real.json", work.join("ext/extension.json")).unwrap();
    });
    let outer = Repo::with_files(&root, "outer", &[("README.md", "#\n")]);
    outer.add_submodule("vendor/deep", &deep, "../deep.git");
    install_fails(
        &env,
        &[
            "ext",
            "install",
            &format!("{}#vendor/deep/ext", http.url("outer")),
        ],
        &["vendor/deep/ext/extension.json is a symbolic link in the repository"],
    );
}

// ---------------------------------------------------------------------------------------------
// Credentials

#[test]
fn a_submodule_over_ssh_uses_the_same_keys_and_known_hosts() {
    use crate::support::git_servers::{SSHD, Sshd, ssh_key};
    if !Path::new(SSHD).is_file() {
        eprintln!("note: {SSHD} is not installed; skipping the ssh submodule test");
        return;
    }
    let env = Env::new();
    let dot_ssh = env.user_home.join(".ssh");
    let key = ssh_key(&dot_ssh, "id_ed25519");
    let sshd = Sshd::start(&[&key]);
    let (_tmp, root) = served();
    let lib = lib_repo(&root, "lib", "over ssh\n");
    let lib_url = sshd.url(&lib.bare);
    let sup = extension_repo(&env, &root, "sshsub");
    sup.add_submodule("vendor/lib", &lib, &lib_url);
    let daemon = GitDaemon::start(&root);
    let url = daemon.url("sshsub");

    // The host key is checked for submodules too.
    let done = install_fails(
        &env,
        &["ext", "install", &url],
        &[
            "submodule vendor/lib",
            "is not in ~/.ssh/known_hosts",
            "ssh-keyscan",
        ],
    );
    assert_one_line(&done.stderr);

    fs::write(
        dot_ssh.join("known_hosts"),
        format!("{}\n", sshd.known_hosts_line()),
    )
    .unwrap();
    install_git(&env, &url);
    assert_eq!(
        read(&installed(&env, "sshsub"), "vendor/lib/lib.txt"),
        "over ssh\n"
    );
    assert_no_git(&installed(&env, "sshsub"));
}
