//! The checkout of a fetched commit: the tree zot writes is the one `git clone` checks out
//! (content, executables, links, line endings where attributes ask for them), its file list
//! is what a fresh scan of it says, and a crafted tree can neither write outside the
//! extension nor plant names git refuses.

use std::fs;
use std::io::Write as _;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use zot_ext::testing::FileList;

use crate::git_install::{install_git, install_git_with, served, zot, zot_fails};
use crate::support::git_servers::{GitDaemon, Repo, git};
use crate::support::{Env, manifest};

/// The file list zot stored for `name` (global scope).
fn stored_list(env: &Env, name: &str) -> FileList {
    let path = env
        .home
        .join(".ext-store/files")
        .join(format!("{name}.json"));
    FileList::from_bytes(&fs::read(path).unwrap()).unwrap()
}

/// `git clone --depth 1 <url>` into `<dir>/clone`, without its `.git`.
fn git_clone(url: &str, dir: &Path) -> PathBuf {
    let clone = dir.join("clone");
    git(
        dir,
        &[
            "clone",
            "--quiet",
            "--depth",
            "1",
            url,
            clone.to_str().unwrap(),
        ],
    );
    fs::remove_dir_all(clone.join(".git")).unwrap();
    clone
}

/// Runs git in `dir` with `input` on stdin; returns trimmed stdout.
fn git_with_input(dir: &Path, args: &[&str], input: &[u8]) -> String {
    let mut child = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "git {args:?} failed");
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

/// A blob of `content` in the bare repository `bare`.
fn blob(bare: &Path, content: &[u8]) -> String {
    git_with_input(bare, &["hash-object", "-w", "--stdin"], content)
}

/// A tree of `entries` (`<mode> <type> <id>\t<name>` lines) in `bare`, as given: `git mktree`
/// neither sorts out nor refuses names a commit would never hold.
fn tree(bare: &Path, entries: &[String]) -> String {
    let mut input = entries.join("\n");
    input.push('\n');
    git_with_input(bare, &["mktree", "--missing"], input.as_bytes())
}

/// Makes `tree` the only commit of branch `main` of `bare`.
fn commit_tree(bare: &Path, tree: &str) {
    let commit = git(bare, &["commit-tree", tree, "-m", "crafted"]);
    git(bare, &["update-ref", "refs/heads/main", &commit]);
    git(bare, &["symbolic-ref", "HEAD", "refs/heads/main"]);
}

/// A bare repository `<root>/<name>.git` whose commit is the tree `entries` plus a manifest.
fn crafted_repo(root: &Path, name: &str, entries: impl FnOnce(&Path) -> Vec<String>) {
    let bare = root.join(format!("{name}.git"));
    git(root, &["init", "--quiet", "--bare", bare.to_str().unwrap()]);
    let mut all = vec![format!(
        "100644 blob {}\textension.json",
        blob(&bare, manifest(name).as_bytes())
    )];
    all.extend(entries(&bare));
    let top = tree(&bare, &all);
    commit_tree(&bare, &top);
}

#[test]
fn the_checkout_is_what_git_clone_writes_and_its_list_is_a_scan_of_it() {
    let env = Env::new();
    let (tmp, root) = served();
    let src = env.source("src-varied", "varied");
    fs::create_dir_all(src.join("lib/deep")).unwrap();
    fs::create_dir_all(src.join(".github")).unwrap();
    fs::write(src.join(".github/ci.yml"), "on: push\n").unwrap();
    fs::write(src.join("lib/empty"), "").unwrap();
    fs::write(src.join("lib/deep/data.bin"), [0u8, 159, 146, 150, 13, 10]).unwrap();
    fs::write(src.join(std::ffi::OsStr::from_bytes(b"caf\xe9")), "x\r\n").unwrap();
    symlink("lib/deep/data.bin", src.join("inside")).unwrap();
    symlink("/etc/hostname", src.join("outside")).unwrap();
    symlink("nowhere", src.join("lib/dangling")).unwrap();
    Repo::from_dir(&root, "varied", &src);
    let daemon = GitDaemon::start(&root);
    let url = daemon.url("varied");

    install_git(&env, &url)
        .stderr_has("outside -> /etc/hostname")
        .stderr_has("lib/dangling -> nowhere (dangling)");

    let installed = env.global_root().join("varied");
    let scanned = FileList::scan(&installed).unwrap();
    assert_eq!(stored_list(&env, "varied"), scanned);
    let clone = git_clone(&url, tmp.path());
    assert_eq!(
        FileList::scan(&clone).unwrap().tree_hash(),
        scanned.tree_hash()
    );
    let cached = fs::read_dir(env.home.join(".ext-store/cache"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.is_dir())
        .unwrap();
    assert_eq!(
        FileList::scan(&cached).unwrap().tree_hash(),
        scanned.tree_hash()
    );
}

#[test]
fn line_endings_asked_for_by_attributes_are_applied_as_git_applies_them() {
    let env = Env::new();
    let (tmp, root) = served();
    let src = env.source("src-crlf", "crlf");
    fs::create_dir_all(src.join("docs")).unwrap();
    fs::write(src.join("docs/.gitattributes"), "*.txt text eol=crlf\n").unwrap();
    fs::write(src.join("docs/a.txt"), "one\ntwo\n").unwrap();
    fs::write(src.join("b.txt"), "one\ntwo\n").unwrap();
    Repo::from_dir(&root, "crlf", &src);
    let daemon = GitDaemon::start(&root);
    let url = daemon.url("crlf");

    install_git(&env, &url);

    let installed = env.global_root().join("crlf");
    assert_eq!(
        fs::read_to_string(installed.join("docs/a.txt")).unwrap(),
        "one\r\ntwo\r\n"
    );
    assert_eq!(
        fs::read_to_string(installed.join("b.txt")).unwrap(),
        "one\ntwo\n"
    );
    let scanned = FileList::scan(&installed).unwrap();
    assert_eq!(stored_list(&env, "crlf"), scanned);
    let clone = git_clone(&url, tmp.path());
    assert_eq!(
        FileList::scan(&clone).unwrap().tree_hash(),
        scanned.tree_hash()
    );
}

#[test]
fn a_link_and_a_folder_of_the_same_name_cannot_write_through_the_link() {
    let env = Env::new();
    let (tmp, root) = served();
    let outside = tmp.path().join("outside");
    fs::create_dir(&outside).unwrap();
    for (name, link_first) in [("linkfirst", true), ("treefirst", false)] {
        crafted_repo(&root, name, |bare| {
            let x = blob(bare, b"written through the link\n");
            let inner = tree(bare, &[format!("100644 blob {x}\tx")]);
            let target = blob(bare, outside.as_os_str().as_bytes());
            let link = format!("120000 blob {target}\ta");
            let folder = format!("040000 tree {inner}\ta");
            if link_first {
                vec![link, folder]
            } else {
                vec![folder, link]
            }
        });
    }
    let daemon = GitDaemon::start(&root);
    for name in ["linkfirst", "treefirst"] {
        zot_fails(&env, &["ext", "install", &daemon.url(name)]).stderr_one_line();
        assert!(!outside.join("x").exists(), "{name} wrote through its link");
        assert!(env.installed_names().is_empty());
    }
}

#[test]
fn names_git_refuses_to_check_out_are_refused() {
    let env = Env::new();
    let (_tmp, root) = served();
    let names = [".git", ".GIT", "..", ".git.", "git~1"];
    for (i, bad) in names.iter().enumerate() {
        crafted_repo(&root, &format!("bad{i}"), |bare| {
            let config = blob(bare, b"[core]\n\tfsmonitor = touch /tmp/pwned\n");
            let inner = tree(bare, &[format!("100644 blob {config}\tconfig")]);
            vec![format!("040000 tree {inner}\t{bad}")]
        });
    }
    let daemon = GitDaemon::start(&root);
    for (i, bad) in names.iter().enumerate() {
        zot_fails(&env, &["ext", "install", &daemon.url(&format!("bad{i}"))])
            .stderr_has("not safe to check out")
            .stderr_one_line();
        assert!(env.installed_names().is_empty(), "{bad}");
    }
}

#[test]
fn a_subfolder_install_lists_and_audits_only_that_folder() {
    let env = Env::new();
    let (_tmp, root) = served();
    let src = env.source("src-mono", "mono");
    let ext = src.join("ext");
    fs::create_dir_all(ext.join("lib")).unwrap();
    fs::write(ext.join("extension.json"), manifest("mono-ext")).unwrap();
    fs::write(ext.join("lib/a.js"), "1;\n").unwrap();
    fs::write(src.join("outside.txt"), "top of the repository\n").unwrap();
    symlink("../outside.txt", ext.join("up")).unwrap();
    symlink("lib/a.js", ext.join("in")).unwrap();
    Repo::from_dir(&root, "mono", &src);
    let daemon = GitDaemon::start(&root);

    install_git(&env, &format!("{}#ext", daemon.url("mono")))
        .stderr_has("kept 1 link that points outside the extension: up -> ../outside.txt");

    let installed = env.global_root().join("mono-ext");
    assert_eq!(
        stored_list(&env, "mono-ext"),
        FileList::scan(&installed).unwrap()
    );
    assert!(stored_list(&env, "mono-ext").get(b"lib/a.js").is_some());
    assert!(stored_list(&env, "mono-ext").get(b"outside.txt").is_none());
}

#[test]
fn a_subfolder_written_with_doubled_or_dot_parts_is_listed_whole() {
    let env = Env::new();
    let (_tmp, root) = served();
    let src = env.source("src-nested", "nested");
    let ext = src.join("pkg/ext");
    fs::create_dir_all(ext.join("lib")).unwrap();
    fs::write(ext.join("extension.json"), manifest("nested-ext")).unwrap();
    fs::write(ext.join("lib/a.js"), "1;\n").unwrap();
    Repo::from_dir(&root, "nested", &src);
    let daemon = GitDaemon::start(&root);

    // The same folder named two ways the filesystem reads alike.
    for subdir in ["pkg//ext", "pkg/./ext"] {
        install_git_with(
            &env,
            &daemon.url("nested"),
            &["--subdir", subdir, "--force"],
        );
        let installed = env.global_root().join("nested-ext");
        let listed = stored_list(&env, "nested-ext");
        assert_eq!(listed, FileList::scan(&installed).unwrap(), "{subdir}");
        assert!(listed.get(b"lib/a.js").is_some(), "{subdir}");
        zot(&env, &["ext", "verify", "nested-ext"]).success();
    }
}
