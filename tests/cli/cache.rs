//! The fetch cache (`$ZOT_HOME/.ext-store/cache/`): a commit installed twice is fetched once
//! (counted on the smart-HTTP server) and installed as it was fetched, an entry whose files
//! no longer hash to its record is not served, and `zot ext cache clean` empties it.

use std::fs;
use std::path::{Path, PathBuf};

use tempfile::TempDir;

use crate::git_install::{extension_repo, served};
use crate::support::git_servers::{HttpGit, Repo};
use crate::support::{Done, Env, manifest};

/// Requests that fetch objects (`POST .../git-upload-pack`) so far.
fn uploads(http: &HttpGit) -> usize {
    http.requests()
        .iter()
        .filter(|r| r.method == "POST" && r.path.ends_with("/git-upload-pack"))
        .count()
}

/// A second project folder beside the env's own.
fn other_project(env: &Env, name: &str) -> PathBuf {
    let dir = env.work.join(name);
    fs::create_dir_all(&dir).unwrap();
    dir
}

/// `zot ext install <url> --ref <commit> --project` run in `project`.
fn install_in(env: &Env, project: &Path, url: &str, commit: &str) -> Done {
    env.zot(["ext", "install", url, "--ref", commit, "--project"])
        .current_dir(project)
        .ok()
}

/// Installs `url` at `commit` into a new project `second` and asserts the fetch cache served
/// it: no request reached `http`. Returns the project.
fn install_from_cache(env: &Env, http: &HttpGit, url: &str, commit: &str) -> PathBuf {
    let requests = http.requests().len();
    let second = other_project(env, "second");
    install_in(env, &second, url, commit);
    assert_eq!(http.requests().len(), requests, "{:#?}", http.requests());
    second
}

/// The stored file list of the project extension `name` installed in `project`.
fn stored_list(project: &Path, name: &str) -> String {
    fs::read_to_string(project.join(format!(".zot/.ext-store/files/{name}.json"))).unwrap()
}

fn cached(env: &Env, commit: &str) -> PathBuf {
    env.home.join(".ext-store/cache").join(commit)
}

/// The extension repository `cached` served over smart HTTP, its head commit installed in
/// the env's project (and so in the fetch cache).
struct Cached {
    env: Env,
    /// The served repositories' folder, deleted when dropped.
    _served: TempDir,
    http: HttpGit,
    url: String,
    commit: String,
}

fn installed_once() -> Cached {
    let env = Env::new();
    let (served, root) = served();
    let repo = extension_repo(&env, &root, "cached");
    let commit = repo.head_commit();
    let http = HttpGit::start(&root);
    let url = http.url("cached");
    install_in(&env, &env.project, &url, &commit);
    Cached {
        env,
        _served: served,
        http,
        url,
        commit,
    }
}

#[test]
fn a_commit_installed_twice_is_fetched_once() {
    let env = Env::new();
    let (_tmp, root) = served();
    let repo = extension_repo(&env, &root, "cached");
    let commit = repo.commit(&[("rev.txt", "two\n")]);
    let http = HttpGit::start(&root);
    let url = http.url("cached");

    install_in(&env, &env.project, &url, &commit);
    let fetched = uploads(&http);
    assert!(fetched > 0, "{:#?}", http.requests());
    assert!(cached(&env, &commit).join("rev.txt").exists());

    let second = install_from_cache(&env, &http, &url, &commit);
    let installed = second.join(".zot/extensions/cached");
    assert_eq!(
        fs::read_to_string(installed.join("rev.txt")).unwrap(),
        "two\n"
    );
    let record: serde_json::Value = serde_json::from_str(
        &fs::read_to_string(second.join(".zot/.ext-store/sources/cached.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(record["commit"], commit.as_str());
    assert_eq!(record["ref"], commit.as_str());
    // The same tree as the fetched one, and it verifies.
    env.zot(["ext", "verify", "-p"])
        .current_dir(&second)
        .ok()
        .stdout_is("cached (project): ok\n");
    let hash = |project: &Path| {
        let list = stored_list(project, "cached");
        serde_json::from_str::<serde_json::Value>(&list).unwrap()["tree_hash"].clone()
    };
    assert_eq!(hash(&env.project), hash(&second));
}

#[test]
fn a_commit_is_installed_from_the_cache_as_it_was_fetched_its_own_zot_folder_included() {
    let env = Env::new();
    let (_tmp, root) = served();
    let repo = extension_repo(&env, &root, "cached");
    let commit = repo.commit(&[(".zot/keep.txt", "kept\n"), ("rev.txt", "two\n")]);
    let http = HttpGit::start(&root);
    let url = http.url("cached");
    install_in(&env, &env.project, &url, &commit);

    let second = install_from_cache(&env, &http, &url, &commit);
    for project in [&env.project, &second] {
        let kept = project.join(".zot/extensions/cached/.zot/keep.txt");
        assert_eq!(fs::read_to_string(kept).unwrap(), "kept\n");
    }
    assert_eq!(
        stored_list(&env.project, "cached"),
        stored_list(&second, "cached")
    );
}

#[test]
fn the_whole_tree_is_cached_so_another_subfolder_needs_no_fetch() {
    let env = Env::new();
    let (_tmp, root) = served();
    let repo = Repo::with_files(
        &root,
        "mono",
        &[
            ("ext/one/extension.json", &manifest("one")),
            ("ext/one/run.sh", "#!/bin/sh\n"),
            ("ext/two/extension.json", &manifest("two")),
            ("ext/two/run.sh", "#!/bin/sh\n"),
        ],
    );
    let commit = repo.head_commit();
    let http = HttpGit::start(&root);
    let url = http.url("mono");
    let install = |subdir: &str| {
        env.zot([
            "ext",
            "install",
            &url,
            "--ref",
            &commit,
            "--subdir",
            subdir,
            "--project",
        ])
        .ok();
    };
    install("ext/one");
    let requests = http.requests().len();
    // The whole checkout is copied in, the folder installed and the rest alike, and the
    // installed files are not the cache's.
    assert_ne!(
        inode(&env.project_root().join("one/run.sh")),
        inode(&cached(&env, &commit).join("ext/one/run.sh"))
    );
    assert!(
        cached(&env, &commit)
            .join("ext/two/extension.json")
            .exists()
    );
    install("ext/two");
    assert_eq!(http.requests().len(), requests, "{:#?}", http.requests());
    assert!(env.project_root().join("two/run.sh").exists());
    assert!(!env.project_root().join("two/ext").exists());
}

#[test]
fn a_corrupted_entry_is_not_served_but_fetched_again() {
    let Cached {
        env,
        _served,
        http,
        url,
        commit,
    } = installed_once();
    let fetched = uploads(&http);

    // Same size, other content: only a fresh hash tells.
    fs::write(cached(&env, &commit).join("rev.txt"), "eno\n").unwrap();
    let second = other_project(&env, "second");
    install_in(&env, &second, &url, &commit);
    assert!(uploads(&http) > fetched, "the corrupted entry was served");
    let installed = second.join(".zot/extensions/cached/rev.txt");
    assert_eq!(fs::read_to_string(installed).unwrap(), "one\n");
    // The entry was replaced by the fresh fetch.
    assert_eq!(
        fs::read_to_string(cached(&env, &commit).join("rev.txt")).unwrap(),
        "one\n"
    );
}

#[test]
fn cache_clean_empties_the_cache_and_says_what_it_freed() {
    let Cached {
        env,
        _served,
        http,
        url,
        commit,
    } = installed_once();

    let done = env.zot(["ext", "cache", "clean", "--json"]).ok();
    let json = done.schema_first();
    assert_eq!(json["entries"], 1, "{done:?}");
    assert!(json["bytes"].as_u64().unwrap() > 0, "{done:?}");
    let cache = env.home.join(".ext-store/cache");
    assert_eq!(fs::read_dir(&cache).unwrap().count(), 0);
    // Installed extensions are not touched.
    assert!(env.project_root().join("cached/rev.txt").exists());

    env.zot(["ext", "cache", "clean"])
        .ok()
        .stdout_has("0 cached commits, 0 bytes freed");
    // The next install of the commit fetches it again.
    let fetched = uploads(&http);
    install_in(&env, &other_project(&env, "again"), &url, &commit);
    assert!(uploads(&http) > fetched);
}

#[test]
fn cache_clean_without_a_cache_changes_nothing() {
    let env = Env::new();
    env.zot(["ext", "cache", "clean"])
        .ok()
        .stdout_has("0 cached commits");
    assert!(!env.home.join(".ext-store").exists());
}

/// The inode of `path` (not followed) and the file system it is on.
fn inode(path: &Path) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    let meta = fs::symlink_metadata(path).unwrap();
    (meta.dev(), meta.ino())
}

#[test]
fn a_fetched_commit_is_cached_as_a_copy_and_served_as_independent_copies() {
    let Cached {
        env,
        _served,
        http,
        url,
        commit,
    } = installed_once();
    let first = env.project_root().join("cached/rev.txt");
    let entry = cached(&env, &commit).join("rev.txt");
    assert_ne!(inode(&first), inode(&entry), "the entry is a copy");

    let requests = http.requests().len();
    let second = other_project(&env, "second");
    install_in(&env, &second, &url, &commit);
    let copy = second.join(".zot/extensions/cached/rev.txt");
    assert_ne!(inode(&copy), inode(&entry), "served as a copy");
    // Editing the served copy in place leaves the entry as it was.
    fs::write(&copy, "eno\n").unwrap();
    install_in(&env, &other_project(&env, "third"), &url, &commit);
    assert_eq!(http.requests().len(), requests, "{:#?}", http.requests());
    let third = env.work.join("third/.zot/extensions/cached/rev.txt");
    assert_eq!(fs::read_to_string(third).unwrap(), "one\n");
}

#[test]
fn an_installed_file_edited_in_place_leaves_the_cache_entry_as_fetched() {
    use std::io::Write;
    let Cached {
        env,
        _served,
        http,
        url,
        commit,
    } = installed_once();
    let fetched = uploads(&http);

    // Opened for writing and truncated, as an editor that saves in place does.
    let installed = env.project_root().join("cached/rev.txt");
    let mut file = fs::File::options()
        .write(true)
        .truncate(true)
        .open(&installed)
        .unwrap();
    file.write_all(b"eno\n").unwrap();
    drop(file);
    let second = other_project(&env, "second");
    install_in(&env, &second, &url, &commit);
    assert_eq!(uploads(&http), fetched, "served from the cache");
    let copy = second.join(".zot/extensions/cached/rev.txt");
    assert_eq!(fs::read_to_string(copy).unwrap(), "one\n");
    assert_eq!(fs::read_to_string(&installed).unwrap(), "eno\n");
    assert_eq!(
        fs::read_to_string(cached(&env, &commit).join("rev.txt")).unwrap(),
        "one\n"
    );
}

#[test]
fn disabling_and_removing_the_extension_keep_its_cache_entry_usable() {
    let Cached {
        env,
        _served,
        http,
        url,
        commit,
    } = installed_once();
    let requests = http.requests().len();

    // The manifest is rewritten by replacing it, never in place.
    env.zot(["ext", "disable", "cached", "--project"]).ok();
    env.zot(["ext", "remove", "cached", "--project", "--yes"])
        .ok();
    assert!(!env.project_root().join("cached").exists());
    let second = other_project(&env, "second");
    install_in(&env, &second, &url, &commit);
    assert_eq!(http.requests().len(), requests, "{:#?}", http.requests());
    let installed = second.join(".zot/extensions/cached");
    assert_eq!(
        fs::read_to_string(installed.join("rev.txt")).unwrap(),
        "one\n"
    );
    let manifest = fs::read_to_string(installed.join("extension.json")).unwrap();
    assert!(manifest.contains("\"enabled\": true"), "{manifest}");
}

#[test]
fn a_cache_on_another_file_system_holds_copies() {
    let shm = tempfile::tempdir_in("/dev/shm").expect("/dev/shm, a file system of its own");
    let env = Env::new();
    assert_ne!(
        inode(shm.path()).0,
        inode(&env.project).0,
        "/dev/shm is not tmpfs"
    );
    let home = shm.path().join("zot-home");
    let (_tmp, root) = served();
    let repo = extension_repo(&env, &root, "cached");
    let commit = repo.head_commit();
    let http = HttpGit::start(&root);
    let url = http.url("cached");
    let install = |project: &Path| {
        env.zot(["ext", "install", &url, "--ref", &commit, "--project"])
            .env("ZOT_HOME", &home)
            .current_dir(project)
            .ok()
    };
    install(&env.project);
    let entry = home.join(".ext-store/cache").join(&commit).join("rev.txt");
    assert_eq!(fs::read_to_string(&entry).unwrap(), "one\n");
    assert_eq!(inode(&entry).0, inode(shm.path()).0);

    let requests = http.requests().len();
    let second = other_project(&env, "second");
    install(&second);
    assert_eq!(http.requests().len(), requests, "{:#?}", http.requests());
    let copy = second.join(".zot/extensions/cached/rev.txt");
    assert_eq!(fs::read_to_string(copy).unwrap(), "one\n");
}

/// A served extension repository `name` with 2,000 files in 40 folders that sort before the
/// manifest, and a link.
fn large_repo(env: &Env, root: &Path, name: &str) -> Repo {
    let src = env.source(&format!("src-{name}"), name);
    for folder in 0..40 {
        let dir = src.join(format!("assets/d{folder:02}"));
        fs::create_dir_all(&dir).unwrap();
        for file in 0..50 {
            fs::write(
                dir.join(format!("f{file:02}.txt")),
                format!("{folder}/{file}\n"),
            )
            .unwrap();
        }
    }
    std::os::unix::fs::symlink("assets/d00/f00.txt", src.join("first")).unwrap();
    Repo::from_dir(root, name, &src)
}

#[test]
fn a_large_fetched_tree_is_cached_whole_and_serves_the_next_install() {
    let env = Env::new();
    let (_tmp, root) = served();
    let commit = large_repo(&env, &root, "large").head_commit();
    let http = HttpGit::start(&root);
    let url = http.url("large");
    install_in(&env, &env.project, &url, &commit);
    let entry = cached(&env, &commit).join("assets/d39/f49.txt");
    let installed = env.project_root().join("large/assets/d39/f49.txt");
    assert_ne!(inode(&entry), inode(&installed), "the entry is a copy");
    assert!(
        fs::read_dir(env.home.join(".ext-store/cache"))
            .unwrap()
            .all(|e| {
                !e.unwrap()
                    .file_name()
                    .to_string_lossy()
                    .starts_with(".put-")
            })
    );

    // Served only when it hashes to its record: the whole tree, as it was fetched.
    let second = install_from_cache(&env, &http, &url, &commit);
    assert_eq!(
        stored_list(&env.project, "large"),
        stored_list(&second, "large")
    );
}

#[test]
fn a_first_install_with_disable_caches_the_manifest_as_fetched() {
    let env = Env::new();
    let (_tmp, root) = served();
    let commit = large_repo(&env, &root, "large").head_commit();
    let http = HttpGit::start(&root);
    let url = http.url("large");
    env.zot([
        "ext",
        "install",
        &url,
        "--ref",
        &commit,
        "--project",
        "--disable",
    ])
    .ok();
    let manifest = fs::read_to_string(env.project_root().join("large/extension.json")).unwrap();
    assert!(manifest.contains("\"enabled\": false"), "{manifest}");

    // The rewritten manifest is not the entry's: the entry still serves the fetched tree.
    let second = install_from_cache(&env, &http, &url, &commit);
    let served = second.join(".zot/extensions/large/extension.json");
    assert!(
        !fs::read_to_string(served)
            .unwrap()
            .contains("\"enabled\": false")
    );
}

/// A project file naming `source` at `commit` for `ext`, and a lock for it with `tree`.
fn pin_in_project(env: &Env, source: &str, commit: &str, tree: &str) {
    let zot = env.project.join(".zot");
    fs::create_dir_all(&zot).unwrap();
    let file = serde_json::json!({"extensions": {"ext": {"source": source, "ref": commit}}});
    fs::write(zot.join("extensions.json"), file.to_string()).unwrap();
    let lock = serde_json::json!({"version": 1, "extensions": {"ext": {
        "source": source, "ref": commit, "subdir": null, "commit": commit, "tree": tree
    }}});
    fs::write(zot.join("extensions.lock"), lock.to_string()).unwrap();
}

/// A commit fetched from one server (an attacker's) is in the cache; a project file naming
/// another server (the trusted one, which does not have that commit, or is down) with that
/// commit as its ref must fetch from that server and fail, never install from the cache.
#[test]
fn a_cached_commit_answers_only_for_the_server_that_served_it() {
    use crate::support::git_servers::GitDaemon;
    let env = Env::new();
    let (_a, root_a) = served();
    let (_b, root_b) = served();
    let attacker = extension_repo(&env, &root_a, "ext");
    let x = attacker.head_commit();
    Repo::with_files(
        &root_b,
        "ext",
        &[("extension.json", &manifest("ext")), ("trusted", "yes\n")],
    );
    let daemon_a = GitDaemon::start(&root_a);
    let daemon_b = GitDaemon::start(&root_b);
    env.zot(["ext", "install", &daemon_a.url("ext"), "--ref", &x])
        .ok();
    assert!(cached(&env, &x).is_dir());
    let list: serde_json::Value = serde_json::from_str(
        &fs::read_to_string(env.home.join(".ext-store/files/ext.json")).unwrap(),
    )
    .unwrap();
    let tree = list["tree_hash"].as_str().unwrap().to_string();

    // The same repository spelled otherwise is the same source: served from the cache
    // with its server down.
    let spelled = daemon_a
        .url("ext")
        .replace("git://", "GIT://")
        .replace("ext.git", "ext/");
    drop(daemon_a);
    let second = other_project(&env, "second");
    install_in(&env, &second, &spelled, &x);

    pin_in_project(&env, &daemon_b.url("ext"), &x, &tree);
    let installed = env.project.join(".zot/extensions/ext");
    env.zot(["ext", "sync"]).fails(1);
    assert!(!installed.exists(), "installed from the cache");
    env.zot(["ext", "sync", "--frozen"]).fails(1);
    assert!(!installed.exists());
    env.zot(["ext", "verify", "-p"]).fails(1);
    drop(daemon_b);
    env.zot(["ext", "sync", "--frozen"]).fails(1);
    env.zot(["ext", "sync"]).fails(1);
    assert!(
        !installed.exists(),
        "installed from the cache with the server down"
    );
    env.zot(["ext", "verify", "-p"]).fails(1);
}
