//! `zot ext install <git-url>` against real git servers on 127.0.0.1: `git daemon`
//! (git://), smart HTTP through `git http-backend` (with and without basic auth), https in
//! front of it, `file://` URLs and local `*.git` paths.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;
use tempfile::TempDir;

use crate::support::git_servers::{self, GitDaemon, HttpGit, Https, Repo, tls_dir};
use crate::support::{Done, Env, Run, command_line, manifest};

/// No install may take longer than this; a hang fails the test instead of blocking the run.
const RUN_LIMIT: Duration = Duration::from_secs(90);

// ---------------------------------------------------------------------------------------------
// Helpers

/// Runs `zot` with stdin on /dev/null (no terminal), killing it after [`RUN_LIMIT`].
pub(crate) fn zot(env: &Env, args: &[&str]) -> Done {
    bounded(env.zot(args), args)
}

/// Runs a prepared `zot` command like [`zot`] (stdin on /dev/null, killed after [`RUN_LIMIT`]).
pub(crate) fn bounded(mut run: Run, args: &[&str]) -> Done {
    run.cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = run.cmd.spawn().expect("spawn zot");
    let stdout = drain(&mut child, true);
    let stderr = drain(&mut child, false);
    let deadline = Instant::now() + RUN_LIMIT;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("zot {args:?} did not finish within {RUN_LIMIT:?}");
        }
        thread::sleep(Duration::from_millis(10));
    };
    Done {
        command: command_line(&run.cmd),
        code: status.code().unwrap_or(-1),
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}

fn drain(child: &mut Child, stdout: bool) -> thread::JoinHandle<String> {
    let mut pipe: Box<dyn Read + Send> = if stdout {
        Box::new(child.stdout.take().unwrap())
    } else {
        Box::new(child.stderr.take().unwrap())
    };
    thread::spawn(move || {
        let mut out = Vec::new();
        let _ = pipe.read_to_end(&mut out);
        String::from_utf8_lossy(&out).into_owned()
    })
}

pub(crate) fn zot_ok(env: &Env, args: &[&str]) -> Done {
    let done = zot(env, args);
    done.success();
    done
}

/// Runs `zot ext install <source>` like [`zot`] and asserts it succeeded.
pub(crate) fn install_git(env: &Env, source: &str) -> Done {
    install_git_with(env, source, &[])
}

/// Runs `zot ext install <source> <flags>` like [`zot`] and asserts it succeeded.
pub(crate) fn install_git_with(env: &Env, source: &str, flags: &[&str]) -> Done {
    let mut args = vec!["ext", "install", source];
    args.extend_from_slice(flags);
    zot_ok(env, &args)
}

pub(crate) fn zot_fails(env: &Env, args: &[&str]) -> Done {
    let done = zot(env, args);
    done.failure(1);
    done
}

/// A served root: the folder the servers export, holding `<name>.git` bare repositories.
pub(crate) fn served() -> (TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = fs::canonicalize(tmp.path()).unwrap().join("srv");
    fs::create_dir(&root).unwrap();
    (tmp, root)
}

/// A bare repository `<root>/<name>.git` whose first commit is a valid extension `name`
/// (manifest, executable `run.sh`, `rev.txt` = "one", `lib/util.txt`).
pub(crate) fn extension_repo(env: &Env, root: &Path, name: &str) -> Repo {
    let src = env.source(&format!("src-{name}"), name);
    fs::write(src.join("rev.txt"), "one\n").unwrap();
    fs::create_dir_all(src.join("lib")).unwrap();
    fs::write(src.join("lib/util.txt"), "util\n").unwrap();
    Repo::from_dir(root, name, &src)
}

/// The revisions of [`revisions_repo`]: which ref to ask for, what `rev.txt` then holds.
struct Revisions {
    repo: Repo,
    c1: String,
    c2: String,
    c3: String,
    c4: String,
}

/// `main`: c1 ("one", lightweight tag v1) -> c2 ("two", annotated tag v2) -> c4 ("four");
/// branch `feature` forks at c2 and adds c3 ("three").
fn revisions_repo(env: &Env, root: &Path, name: &str) -> Revisions {
    let repo = extension_repo(env, root, name);
    let c1 = repo.head_commit();
    repo.tag("v1");
    let c2 = repo.commit(&[("rev.txt", "two\n")]);
    repo.annotated_tag("v2", "release two");
    repo.branch("feature");
    let c3 = repo.commit(&[("rev.txt", "three\n")]);
    repo.switch("main");
    let c4 = repo.commit(&[("rev.txt", "four\n")]);
    Revisions {
        repo,
        c1,
        c2,
        c3,
        c4,
    }
}

fn installed_dir(env: &Env, name: &str) -> PathBuf {
    env.global_root().join(name)
}

fn rev_txt(env: &Env, name: &str) -> String {
    fs::read_to_string(installed_dir(env, name).join("rev.txt")).unwrap()
}

fn record(env: &Env, name: &str) -> Value {
    let path = env
        .home
        .join(".ext-store/sources")
        .join(format!("{name}.json"));
    let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

/// Checks the installed copy of `name`: the files of the repository, `run.sh` still
/// executable, no `.git`.
pub(crate) fn assert_installed_tree(env: &Env, name: &str) {
    let dir = installed_dir(env, name);
    assert!(dir.join("extension.json").is_file(), "{}", dir.display());
    assert_eq!(
        fs::read_to_string(dir.join("lib/util.txt")).unwrap(),
        "util\n"
    );
    assert!(!dir.join(".git").exists(), "a .git folder was installed");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(dir.join("run.sh"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(
            mode & 0o111,
            0o111,
            "run.sh lost its executable bits: {mode:o}"
        );
    }
    let manifest: Value =
        serde_json::from_str(&fs::read_to_string(dir.join("extension.json")).unwrap()).unwrap();
    assert_eq!(manifest["name"], name);
}

pub(crate) fn assert_git_record(
    env: &Env,
    name: &str,
    source: &str,
    git_ref: Option<&str>,
    commit: &str,
) {
    let rec = record(env, name);
    assert_eq!(rec["name"], name, "{rec:#}");
    assert_eq!(rec["kind"], "git", "{rec:#}");
    assert_eq!(rec["source"], source, "{rec:#}");
    assert_eq!(rec["commit"], commit, "{rec:#}");
    match git_ref {
        Some(r) => assert_eq!(rec["ref"], r, "{rec:#}"),
        None => assert!(rec["ref"].is_null(), "{rec:#}"),
    }
}

/// After a failed install: everything that was there is unchanged, the only new entries are
/// the store's own (empty) state folders and its `.gitignore`, no staging leftovers, and no
/// extension appeared.
pub(crate) fn assert_nothing_installed(env: &Env, before: &[(String, String)]) {
    let after = env.snapshot();
    for entry in before {
        assert!(
            after.contains(entry),
            "{entry:?} changed or vanished; now:\n{after:#?}"
        );
    }
    for (path, content) in &after {
        if before.iter().any(|(p, _)| p == path) {
            continue;
        }
        let own =
            content == "<dir>" || (path.ends_with(".ext-store/.gitignore") && content == "*\n");
        assert!(
            own && path.contains(".ext-store"),
            "unexpected new entry {path} ({content})"
        );
    }
    assert!(
        env.installed_names().is_empty(),
        "{:?}",
        env.installed_names()
    );
    let staging = env.home.join(".ext-store/staging");
    if let Ok(entries) = fs::read_dir(&staging) {
        let left: Vec<_> = entries.flatten().map(|e| e.path()).collect();
        assert!(left.is_empty(), "staging leftovers: {left:?}");
    }
}

/// Runs a failing install and checks its message and that nothing was installed.
pub(crate) fn install_fails(env: &Env, args: &[&str], expected: &[&str]) -> Done {
    let before = env.snapshot();
    let done = zot_fails(env, args);
    for text in expected {
        done.stderr_has(text);
    }
    done.stdout_is("");
    assert_nothing_installed(env, &before);
    done
}

// ---------------------------------------------------------------------------------------------
// Successful installs

/// The refs are listed and the branch fetched on one connection, as `git clone` does.
#[test]
fn a_branch_is_listed_and_fetched_on_one_connection() {
    let env = Env::new();
    let (tmp, root) = served();
    extension_repo(&env, &root, "hello");
    let log = tmp.path().join("connections.log");
    let daemon = GitDaemon::start_logging(&root, &log);
    install_git(&env, &daemon.url("hello"));
    assert_installed_tree(&env, "hello");
    let connections = fs::read_to_string(&log).unwrap();
    assert_eq!(connections.lines().count(), 1, "{connections}");
}

#[test]
fn installs_the_default_branch_from_git_daemon() {
    let env = Env::new();
    let (_tmp, root) = served();
    let repo = extension_repo(&env, &root, "hello");
    repo.commit(&[("rev.txt", "two\n")]);
    // A newer commit on another branch must not be what the default install picks.
    repo.branch("other");
    repo.commit(&[("rev.txt", "other\n")]);
    repo.switch("main");
    let head = repo.rev_parse("main");
    let daemon = GitDaemon::start(&root);
    let url = daemon.url("hello");

    let done = install_git(&env, &url);

    let dir = installed_dir(&env, "hello");
    done.stdout_has(&format!(
        "installed hello 1.0.0 (global) in {}",
        dir.display()
    ));
    assert_installed_tree(&env, "hello");
    assert_eq!(rev_txt(&env, "hello"), "two\n");
    assert_git_record(&env, "hello", &url, None, &head);
    // The install record lives in the store's state folder, not in the extensions root.
    assert_eq!(env.installed_names(), ["hello"]);
    zot_ok(&env, &["ext", "list", "--json"]).stdout_has("hello");
}

#[test]
fn the_default_branch_is_the_remote_head_even_when_not_main() {
    let env = Env::new();
    let (_tmp, root) = served();
    let repo = extension_repo(&env, &root, "trunky");
    repo.branch("trunk");
    let trunk = repo.commit(&[("rev.txt", "trunk\n")]);
    repo.switch("main");
    repo.commit(&[("rev.txt", "main\n")]);
    git_servers::git(&repo.bare, &["symbolic-ref", "HEAD", "refs/heads/trunk"]);
    let daemon = GitDaemon::start(&root);
    let http = HttpGit::start(&root);

    for url in [daemon.url("trunky"), http.url("trunky")] {
        let env = Env::new();
        install_git(&env, &url);
        assert_eq!(rev_txt(&env, "trunky"), "trunk\n", "{url}");
        assert_git_record(&env, "trunky", &url, None, &trunk);
    }
}

#[test]
fn installs_over_https_from_a_server_the_certificate_bundle_trusts_and_refuses_others() {
    let (_tmp, root) = served();
    extension_repo(&Env::new(), &root, "secure");
    let https = Https::start(&root);
    let url = https.url("secure");

    // The bundle OpenSSL is given trusts the server.
    let env = Env::new();
    let run = env
        .zot(["ext", "install", &url])
        .env("SSL_CERT_FILE", tls_dir().join("ca.pem"));
    bounded(run, &["ext", "install", &url]).success();
    assert_eq!(rev_txt(&env, "secure"), "one\n");
    assert!(!https.http.requests().is_empty());

    // The system's bundle does not.
    let other = Env::new();
    let mut run = other.zot(["ext", "install", &url]);
    run.cmd
        .env_remove("SSL_CERT_FILE")
        .env_remove("SSL_CERT_DIR");
    let refused = bounded(run, &["ext", "install", &url]);
    refused.failure(1);
    assert!(refused.stderr.contains("certificate"), "{}", refused.stderr);
    assert!(!installed_dir(&other, "secure").exists());
}

#[test]
fn installs_over_smart_http_with_a_shallow_fetch() {
    let env = Env::new();
    let (_tmp, root) = served();
    let repo = extension_repo(&env, &root, "webby");
    repo.commit(&[("rev.txt", "two\n")]);
    let head = repo.commit(&[("rev.txt", "three\n")]);
    let http = HttpGit::start(&root);
    let url = http.url("webby");

    install_git(&env, &url);

    assert_installed_tree(&env, "webby");
    assert_eq!(rev_txt(&env, "webby"), "three\n");
    assert_git_record(&env, "webby", &url, None, &head);
    let requests = http.requests();
    assert!(
        requests.iter().any(|r| r.method == "GET"
            && r.path == "/webby.git/info/refs"
            && r.query == "service=git-upload-pack"),
        "no ref advertisement request: {requests:#?}"
    );
    let uploads: Vec<_> = requests
        .iter()
        .filter(|r| r.method == "POST" && r.path == "/webby.git/git-upload-pack")
        .collect();
    assert!(!uploads.is_empty(), "no upload-pack request: {requests:#?}");
    assert!(
        uploads.iter().any(|r| r.body_text().contains("deepen 1")),
        "the fetch was not shallow: {:#?}",
        uploads.iter().map(|r| r.body_text()).collect::<Vec<_>>()
    );
    assert!(requests.iter().all(|r| r.status == 200), "{requests:#?}");
}

#[test]
fn a_commit_id_at_a_branch_or_tag_tip_is_fetched_shallowly() {
    let (_tmp, root) = served();
    let seed = Env::new();
    let revs = revisions_repo(&seed, &root, "tips");
    let http = HttpGit::start(&root);
    let url = http.url("tips");
    // c3 is the tip of `feature`, c2 the commit of the annotated tag v2: libgit2 fetches an
    // id only from servers that allow any, so these are fetched through the ref naming them.
    for commit in [&revs.c3, &revs.c2] {
        let env = Env::new();
        let before = http.requests().len();
        install_git_with(&env, &url, &["--ref", commit]);
        assert_git_record(&env, "tips", &url, Some(commit), commit);
        let bodies: Vec<String> = http.requests()[before..]
            .iter()
            .filter(|r| r.method == "POST")
            .map(super::support::git_servers::Request::body_text)
            .collect();
        assert!(
            !bodies.is_empty() && bodies.iter().all(|b| b.contains("deepen 1")),
            "--ref {commit} was not fetched shallowly: {bodies:#?}"
        );
    }
}

#[test]
fn installs_from_a_file_url_and_a_local_bare_path() {
    let (_tmp, root) = served();
    let seed = Env::new();
    let repo = extension_repo(&seed, &root, "local");
    let head = repo.commit(&[("rev.txt", "two\n")]);
    let file_url = format!("file://{}", repo.bare.display());
    let path = repo.bare.display().to_string();

    for source in [file_url.as_str(), path.as_str()] {
        let env = Env::new();
        install_git(&env, source);
        assert_installed_tree(&env, "local");
        assert_eq!(rev_txt(&env, "local"), "two\n", "{source}");
        assert_git_record(&env, "local", source, None, &head);
    }

    // A relative `*.git` path resolves against the working directory.
    let env = Env::new();
    zot(&env, &["ext", "install", "../relative.git"])
        .failure(1)
        .stderr_has("../relative.git does not exist");
    let copy = env.project.parent().unwrap().join("relative.git");
    git_servers::git(
        &root,
        &[
            "clone",
            "--quiet",
            "--bare",
            path.as_str(),
            copy.to_str().unwrap(),
        ],
    );
    install_git(&env, "../relative.git");
    assert_eq!(rev_txt(&env, "local"), "two\n");
    assert_eq!(record(&env, "local")["commit"], head);
}

/// Installs every kind of `--ref` from `url_of(name)` into fresh environments.
fn check_refs(url_of: &dyn Fn(&str) -> String, root: &Path) {
    let seed = Env::new();
    let revs = revisions_repo(&seed, root, "revs");
    let url = url_of("revs");
    let short = &revs.c2[..7];
    let cases: [(&str, &str, &str); 9] = [
        ("main", "four\n", &revs.c4),
        ("feature", "three\n", &revs.c3),
        ("refs/heads/feature", "three\n", &revs.c3),
        ("v1", "one\n", &revs.c1),
        ("v2", "two\n", &revs.c2),
        ("refs/tags/v2", "two\n", &revs.c2),
        (&revs.c1, "one\n", &revs.c1),
        (&revs.c3, "three\n", &revs.c3),
        (short, "two\n", &revs.c2),
    ];
    for (git_ref, text, commit) in cases {
        let env = Env::new();
        install_git_with(&env, &url, &["--ref", git_ref]);
        assert_eq!(rev_txt(&env, "revs"), text, "--ref {git_ref} from {url}");
        assert_git_record(&env, "revs", &url, Some(git_ref), commit);
        assert_installed_tree(&env, "revs");
    }
    // The commit ids themselves, as the repository sees them.
    assert_eq!(revs.repo.rev_parse("v2"), revs.c2);
}

#[test]
fn refs_branch_tags_and_commits_over_git_daemon() {
    let (_tmp, root) = served();
    let daemon = GitDaemon::start(&root);
    check_refs(&|name| daemon.url(name), &root);
}

#[test]
fn refs_branch_tags_and_commits_over_http() {
    let (_tmp, root) = served();
    let http = HttpGit::start(&root);
    check_refs(&|name| http.url(name), &root);
}

#[test]
fn refs_branch_tags_and_commits_over_file_urls() {
    let (_tmp, root) = served();
    let base = root.clone();
    check_refs(
        &|name| format!("file://{}/{name}.git", base.display()),
        &root,
    );
}

#[test]
fn json_output_of_a_git_install() {
    let env = Env::new();
    let (_tmp, root) = served();
    let revs = revisions_repo(&env, &root, "jsony");
    let daemon = GitDaemon::start(&root);
    let url = daemon.url("jsony");

    let out = install_git_with(&env, &url, &["--ref", "v2", "--json"]).schema_first();

    let keys: Vec<&str> = out
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let mut sorted = keys.clone();
    sorted.sort_unstable();
    assert_eq!(
        sorted,
        [
            "branch",
            "commit",
            "dir",
            "installed_at",
            "kind",
            "name",
            "outside_links",
            "ref",
            "ref_kind",
            "replaced",
            "schema_version",
            "scope",
            "source",
            "subdir",
            "version",
            "warnings"
        ],
        "{out:#}"
    );
    assert_eq!(out["name"], "jsony");
    assert_eq!(out["version"], "1.0.0");
    assert_eq!(out["scope"], "global");
    assert_eq!(
        out["dir"],
        installed_dir(&env, "jsony").display().to_string()
    );
    assert_eq!(out["replaced"], false);
    assert_eq!(out["source"], url);
    assert_eq!(out["kind"], "git");
    assert_eq!(out["ref"], "v2");
    assert_eq!(out["ref_kind"], "tag");
    assert_eq!(out["branch"], serde_json::Value::Null);
    assert_eq!(out["subdir"], serde_json::Value::Null);
    assert_eq!(out["commit"], revs.c2);
    let at = out["installed_at"].as_str().unwrap();
    assert!(
        at.len() == 20 && at.ends_with('Z') && at.as_bytes()[10] == b'T',
        "{at}"
    );
    // The record holds the same provenance.
    let rec = record(&env, "jsony");
    for key in ["name", "source", "kind", "ref", "commit", "installed_at"] {
        assert_eq!(rec[key], out[key], "{key}");
    }
}

#[test]
fn force_reinstall_from_a_newer_commit_replaces_the_old_copy() {
    let env = Env::new();
    let (_tmp, root) = served();
    let repo = extension_repo(&env, &root, "again");
    let first = repo.head_commit();
    let http = HttpGit::start(&root);
    let url = http.url("again");
    install_git(&env, &url);
    assert_git_record(&env, "again", &url, None, &first);

    let second = repo.commit_with("newer", |work| {
        fs::write(work.join("rev.txt"), "two\n").unwrap();
        fs::remove_file(work.join("lib/util.txt")).unwrap();
        fs::write(work.join("new.txt"), "new\n").unwrap();
    });

    let before = env.snapshot();
    zot_fails(&env, &["ext", "install", &url])
        .stderr_has("already installed")
        .stderr_has("--force");
    assert_eq!(
        env.snapshot(),
        before,
        "a refused reinstall changed the store"
    );

    let out = install_git_with(&env, &url, &["--force", "--json"]).json();
    assert_eq!(out["replaced"], true);
    assert_eq!(out["commit"], second);
    let dir = installed_dir(&env, "again");
    assert_eq!(rev_txt(&env, "again"), "two\n");
    assert_eq!(fs::read_to_string(dir.join("new.txt")).unwrap(), "new\n");
    assert!(
        !dir.join("lib/util.txt").exists(),
        "a file of the old copy survived"
    );
    assert_git_record(&env, "again", &url, None, &second);
    assert_eq!(env.installed_names(), ["again"]);
    let staging = env.home.join(".ext-store/staging");
    assert_eq!(fs::read_dir(staging).unwrap().count(), 0);

    install_git_with(&env, &url, &["--force"]).stdout_has("replaced again 1.0.0 (global)");
}

#[test]
fn project_scope_git_install() {
    let env = Env::new();
    let (_tmp, root) = served();
    let repo = extension_repo(&env, &root, "proj");
    let daemon = GitDaemon::start(&root);
    let url = daemon.url("proj");

    install_git_with(&env, &url, &["--project"]);

    let dir = env.project_root().join("proj");
    assert!(dir.join("extension.json").is_file());
    assert!(!dir.join(".git").exists());
    let rec = env.project.join(".zot/.ext-store/sources/proj.json");
    let rec: Value = serde_json::from_str(&fs::read_to_string(rec).unwrap()).unwrap();
    assert_eq!(rec["commit"], repo.head_commit());
    assert_eq!(rec["kind"], "git");
    assert!(
        !env.global_root().exists(),
        "a project install touched the global root"
    );
}

// ---------------------------------------------------------------------------------------------
// Failures: the message says what is wrong, and nothing is installed

#[test]
fn unknown_ref_is_refused() {
    let env = Env::new();
    let (_tmp, root) = served();
    let revs = revisions_repo(&env, &root, "refless");
    let daemon = GitDaemon::start(&root);
    let http = HttpGit::start(&root);
    for url in [daemon.url("refless"), http.url("refless")] {
        install_fails(
            &env,
            &["ext", "install", &url, "--ref", "no-such-branch"],
            &[
                &url,
                "has no branch, tag or commit named \"no-such-branch\"",
                "git ls-remote",
            ],
        );
        // Hex that names no commit: looked up as a commit, then refused.
        install_fails(
            &env,
            &["ext", "install", &url, "--ref", "deadbeef"],
            &[&url, "has no commit \"deadbeef\""],
        );
        let missing = "0123456789abcdef0123456789abcdef01234567";
        assert!(
            ![&revs.c1, &revs.c2, &revs.c3, &revs.c4]
                .iter()
                .any(|c| c.as_str() == missing)
        );
        install_fails(
            &env,
            &["ext", "install", &url, "--ref", missing],
            &[&url, &format!("has no commit \"{missing}\"")],
        );
    }
}

#[test]
fn missing_remote_repositories_are_reported() {
    let env = Env::new();
    let (_tmp, root) = served();
    extension_repo(&env, &root, "present");
    let http = HttpGit::start(&root);
    let daemon = GitDaemon::start(&root);

    let url = http.url("missing");
    install_fails(
        &env,
        &["ext", "install", &url],
        &[&format!("cannot fetch {url}"), "404"],
    );

    let url = daemon.url("missing");
    install_fails(
        &env,
        &["ext", "install", &url],
        &[&format!("cannot fetch {url}")],
    );

    let url = format!("file://{}/missing.git", root.display());
    install_fails(
        &env,
        &["ext", "install", &url],
        &[&format!("cannot fetch {url}")],
    );
}

#[test]
fn unreachable_hosts_fail_quickly() {
    let env = Env::new();
    let port = git_servers::free_port();
    for url in [
        format!("http://127.0.0.1:{port}/x.git"),
        format!("git://127.0.0.1:{port}/x.git"),
    ] {
        let started = Instant::now();
        let done = install_fails(
            &env,
            &["ext", "install", &url],
            &[&format!("cannot fetch {url}")],
        );
        let lower = done.stderr.to_lowercase();
        assert!(
            lower.contains("connect") || lower.contains("refused"),
            "{}",
            done.stderr
        );
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "took {:?}",
            started.elapsed()
        );
    }
}

#[test]
fn empty_repository_is_refused() {
    let env = Env::new();
    let (_tmp, root) = served();
    Repo::empty(&root, "hollow");
    let daemon = GitDaemon::start(&root);
    let http = HttpGit::start(&root);
    for url in [daemon.url("hollow"), http.url("hollow")] {
        install_fails(&env, &["ext", "install", &url], &[&url, "empty repository"]);
    }
}

#[test]
fn repository_without_a_manifest_is_refused() {
    let env = Env::new();
    let (_tmp, root) = served();
    let repo = Repo::with_files(&root, "bare-bones", &[("README.md", "# nothing here\n")]);
    let daemon = GitDaemon::start(&root);
    let url = daemon.url("bare-bones");
    let short = &repo.head_commit()[..12];
    install_fails(
        &env,
        &["ext", "install", &url],
        &[
            &format!("{url} ({short}): extension.json: not found"),
            "nothing was changed",
        ],
    )
    .stderr_lacks("install that folder")
    .stderr_lacks(".ext-store");
}

#[test]
fn repository_with_an_invalid_manifest_is_refused() {
    let env = Env::new();
    let (_tmp, root) = served();
    let broken = Repo::with_files(
        &root,
        "broken",
        &[("extension.json", "{\n  \"name\": \"broken\",\n")],
    );
    let nameless = Repo::with_files(
        &root,
        "nameless",
        &[(
            "extension.json",
            "{\n  \"version\": \"1.0.0\",\n  \"exec\": \"./run.sh\"\n}\n",
        )],
    );
    let http = HttpGit::start(&root);

    let url = http.url("broken");
    let short = broken.head_commit()[..12].to_string();
    install_fails(
        &env,
        &["ext", "install", &url],
        &[
            &format!("{url} ({short}): extension.json"),
            "invalid JSON",
            "nothing was changed",
        ],
    );

    let url = http.url("nameless");
    let short = nameless.head_commit()[..12].to_string();
    install_fails(
        &env,
        &["ext", "install", &url],
        &[
            &format!("{url} ({short}): extension.json"),
            "\"name\"",
            "nothing was changed",
        ],
    );
}

#[test]
fn manifest_only_in_a_subfolder_is_refused_with_a_hint() {
    let env = Env::new();
    let (_tmp, root) = served();
    Repo::with_files(
        &root,
        "monorepo",
        &[
            ("README.md", "# several\n"),
            ("ext/extension.json", &manifest("nested")),
            ("ext/run.sh", "#!/bin/sh\n"),
        ],
    );
    let daemon = GitDaemon::start(&root);
    let url = daemon.url("monorepo");
    install_fails(
        &env,
        &["ext", "install", &url],
        &[
            "extension.json: not found",
            "there is one in ext/",
            "install that folder instead",
        ],
    );
}

#[test]
fn repository_links_pointing_outside_are_kept_and_listed() {
    let env = Env::new();
    let (_tmp, root) = served();
    let src = env.source("src-linky", "linky");
    std::os::unix::fs::symlink("/etc/passwd", src.join("passwd")).unwrap();
    // A relative link climbing out of the tree is kept the same way.
    std::os::unix::fs::symlink("../../../../../../../../etc/passwd", src.join("up")).unwrap();
    // A link that stays inside is not listed.
    std::os::unix::fs::symlink("run.sh", src.join("start")).unwrap();
    Repo::from_dir(&root, "linky", &src);
    let http = HttpGit::start(&root);
    install_git(&env, &http.url("linky")).stderr_has("note: kept 2 links that point outside the extension: passwd -> /etc/passwd, up -> ../../../../../../../../etc/passwd");
    let dir = installed_dir(&env, "linky");
    assert_eq!(
        fs::read_link(dir.join("passwd")).unwrap(),
        Path::new("/etc/passwd")
    );
    assert_eq!(
        fs::read_link(dir.join("start")).unwrap(),
        Path::new("run.sh")
    );
}

// ---------------------------------------------------------------------------------------------
// Private repositories over HTTP

const USER: &str = "alice";
const PASSWORD: &str = "pw-5ecret-XyZ";

#[test]
fn basic_auth_with_credentials_in_the_url() {
    let env = Env::new();
    let (_tmp, root) = served();
    let repo = extension_repo(&env, &root, "private");
    let http = HttpGit::with_auth(&root, USER, PASSWORD);
    let url = http.url_with_credentials("private", USER, PASSWORD);
    let shown = format!("http://***@127.0.0.1:{}/private.git", http.port());

    let done = install_git(&env, &url);
    assert_installed_tree(&env, "private");
    assert_git_record(&env, "private", &shown, None, &repo.head_commit());
    done.stdout_lacks(PASSWORD).stderr_lacks(PASSWORD);
    for (path, content) in env.snapshot() {
        assert!(!content.contains(PASSWORD), "{path} holds the password");
        assert!(!content.contains(USER), "{path} holds the user name");
    }
    let requests = http.requests();
    assert!(
        requests
            .iter()
            .any(|r| r.status == 200 && r.authorization.is_some()),
        "{requests:#?}"
    );

    // --json shows the redacted source too.
    let out = install_git_with(&env, &url, &["--force", "--json"]);
    out.stdout_lacks(PASSWORD);
    assert_eq!(out.json()["source"], shown);
}

#[test]
fn basic_auth_without_or_with_wrong_credentials_fails_without_hanging() {
    let env = Env::new();
    let (_tmp, root) = served();
    extension_repo(&env, &root, "private");
    let http = HttpGit::with_auth(&root, USER, PASSWORD);

    let url = http.url("private");
    let started = Instant::now();
    install_fails(
        &env,
        &["ext", "install", &url],
        &[&format!("cannot authenticate to {url}")],
    )
    .stderr_has("credential helper");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "took {:?}",
        started.elapsed()
    );

    let wrong = http.url_with_credentials("private", USER, "not-the-password");
    let shown = format!("http://***@127.0.0.1:{}/private.git", http.port());
    install_fails(
        &env,
        &["ext", "install", &wrong],
        &[
            &format!("cannot authenticate to {shown}"),
            "tried: the credentials in the URL",
        ],
    )
    .stderr_lacks("not-the-password");
    // The server never answered anything but 401.
    assert!(
        http.requests().iter().all(|r| r.status == 401),
        "{:#?}",
        http.requests()
    );
}

#[test]
fn base64_of_basic_credentials() {
    assert_eq!(git_servers::base64(b""), "");
    assert_eq!(git_servers::base64(b"f"), "Zg==");
    assert_eq!(git_servers::base64(b"fo"), "Zm8=");
    assert_eq!(git_servers::base64(b"foo"), "Zm9v");
    assert_eq!(git_servers::base64(b"user:pass"), "dXNlcjpwYXNz");
}

#[test]
fn servers_stop_on_drop() {
    let (_tmp, root) = served();
    let env = Env::new();
    extension_repo(&env, &root, "gone");
    let http = HttpGit::start(&root);
    let daemon = GitDaemon::start(&root);
    let (http_port, daemon_port) = (http.port(), daemon.port);
    drop(http);
    drop(daemon);
    // A connection git daemon handed to a child just before the kill can keep the socket a
    // moment longer: allow a few seconds.
    for (what, port) in [("http", http_port), ("git daemon", daemon_port)] {
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
        let deadline = Instant::now() + Duration::from_secs(5);
        while std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(1)).is_ok() {
            assert!(
                Instant::now() < deadline,
                "{what} port {port} still accepts connections"
            );
            thread::sleep(Duration::from_millis(50));
        }
    }
}

#[test]
fn basic_auth_with_credentials_from_a_git_credential_helper() {
    let env = Env::new();
    let (_tmp, root) = served();
    let repo = extension_repo(&env, &root, "helped");
    let http = HttpGit::with_auth(&root, USER, PASSWORD);
    fs::write(
        env.user_home.join(".gitconfig"),
        "[credential]\n\thelper = store\n",
    )
    .unwrap();
    fs::write(
        env.user_home.join(".git-credentials"),
        format!("http://{USER}:{PASSWORD}@127.0.0.1:{}\n", http.port()),
    )
    .unwrap();
    let url = http.url("helped");

    let done = install_git(&env, &url);

    done.stdout_lacks(PASSWORD).stderr_lacks(PASSWORD);
    assert_installed_tree(&env, "helped");
    assert_git_record(&env, "helped", &url, None, &repo.head_commit());
    // The listing and the fetch are separate connections: both were given the credentials.
    let requests = http.requests();
    assert!(
        requests
            .iter()
            .any(|r| r.method == "POST" && r.status == 200),
        "{requests:#?}"
    );
}

/// A server that accepts connections and never answers.
struct Stall {
    port: u16,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<thread::JoinHandle<()>>,
}

impl Stall {
    fn start() -> Stall {
        use std::sync::atomic::{AtomicBool, Ordering};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let flag = std::sync::Arc::clone(&stop);
        let thread = thread::spawn(move || {
            let mut held = Vec::new();
            for stream in listener.incoming() {
                if flag.load(Ordering::SeqCst) {
                    return;
                }
                held.extend(stream.ok());
            }
        });
        Stall {
            port,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Stall {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        let _ = std::net::TcpStream::connect(("127.0.0.1", self.port));
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[test]
#[ignore = "takes a minute: waits for zot's 60 s server timeout"]
fn a_server_that_stalls_times_out_instead_of_hanging() {
    let env = Env::new();
    let stall = Stall::start();
    for url in [
        format!("http://127.0.0.1:{}/x.git", stall.port),
        format!("git://127.0.0.1:{}/x.git", stall.port),
    ] {
        install_fails(
            &env,
            &["ext", "install", &url],
            // libgit2's read timeout or the low-speed limit, both 60 s: whichever is first.
            &[&format!("cannot fetch {url}")],
        );
    }
}

/// Sends one raw HTTP request to the test server and returns the whole answer, its body
/// as sent (chunked). The request must ask for `Connection: close`.
fn raw_http(port: u16, request: &[u8]) -> (String, Vec<u8>) {
    use std::io::Write;
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    stream.write_all(request).unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).unwrap();
    let split = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("no header end");
    let head = String::from_utf8_lossy(&answer[..split]).into_owned();
    (head, answer[split + 4..].to_vec())
}

fn pkt(line: &str) -> String {
    format!("{:04x}{line}", line.len() + 4)
}

#[test]
fn http_test_server_speaks_chunked_bodies_and_basic_auth() {
    let env = Env::new();
    let (_tmp, root) = served();
    let repo = extension_repo(&env, &root, "raw");
    let head = repo.head_commit();
    let body = format!("{}0000{}", pkt(&format!("want {head}\n")), pkt("done\n"));
    let (first, rest) = body.split_at(10);
    let chunked = format!(
        "{:x}\r\n{first}\r\n{:x};ext=1\r\n{rest}\r\n0\r\n\r\n",
        first.len(),
        rest.len()
    );

    let http = HttpGit::start(&root);
    let request = format!(
        "POST /raw.git/git-upload-pack HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/x-git-upload-pack-request\r\nTransfer-Encoding: chunked\r\n\r\n{chunked}"
    );
    let (status, answer) = raw_http(http.port(), request.as_bytes());
    assert!(status.starts_with("HTTP/1.1 200 "), "{status}");
    assert!(
        status.contains("application/x-git-upload-pack-result"),
        "{status}"
    );
    // The answer is streamed from http-backend as it writes it, so its length is not known
    // up front: chunked, ending with the last chunk.
    assert!(status.contains("Transfer-Encoding: chunked"), "{status}");
    let text = String::from_utf8_lossy(&answer);
    assert!(text.contains("0008NAK\n"), "{text:?}");
    assert!(text.ends_with("0\r\n\r\n"), "{text:?}");
    assert_eq!(http.requests()[0].body_text(), body);

    let (status, _) = raw_http(
        http.port(),
        b"GET /nope.git/info/refs?service=git-upload-pack HTTP/1.1\r\nConnection: close\r\n\r\n",
    );
    assert!(status.starts_with("HTTP/1.1 404 "), "{status}");

    let private = HttpGit::with_auth(&root, USER, PASSWORD);
    let get = "GET /raw.git/info/refs?service=git-upload-pack HTTP/1.1\r\nHost: x\r\nConnection: close\r\n";
    let (status, _) = raw_http(private.port(), format!("{get}\r\n").as_bytes());
    assert!(status.starts_with("HTTP/1.1 401 "), "{status}");
    assert!(
        status.contains("WWW-Authenticate: Basic realm=\"git\""),
        "{status}"
    );
    let token = git_servers::base64(format!("{USER}:{PASSWORD}").as_bytes());
    let (status, answer) = raw_http(
        private.port(),
        format!("{get}Authorization: Basic {token}\r\n\r\n").as_bytes(),
    );
    assert!(status.starts_with("HTTP/1.1 200 "), "{status}");
    assert!(
        String::from_utf8_lossy(&answer).contains(&head),
        "the refs do not list {head}"
    );
}

/// Several fetches at once, over https and git://, each trusting the bundle it is given.
#[test]
fn sync_fetches_over_https_and_git_on_several_threads_at_once() {
    let env = Env::new();
    let (_tmp, root) = served();
    let names = ["sa", "sb", "sc", "sd"];
    for name in names {
        extension_repo(&env, &root, name);
    }
    let daemon = GitDaemon::start(&root);
    let https = Https::start(&root);
    let extensions: serde_json::Map<String, Value> = names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let url = if i % 2 == 0 {
                https.url(name)
            } else {
                daemon.url(name)
            };
            (name.to_string(), serde_json::json!({ "source": url }))
        })
        .collect();
    let file = env.project.join(".zot/extensions.json");
    fs::create_dir_all(file.parent().unwrap()).unwrap();
    let text = serde_json::json!({ "extensions": extensions }).to_string();
    fs::write(&file, text).unwrap();
    let args = ["ext", "sync", "--jobs", "4"];
    let run = env.zot(args).env("SSL_CERT_FILE", tls_dir().join("ca.pem"));
    bounded(run, &args).success();
    for name in names {
        let rev = env.project_root().join(name).join("rev.txt");
        assert_eq!(fs::read_to_string(rev).unwrap(), "one\n", "{name}");
    }
}

/// `run` started through `sh` with umask 002 (files made 0664, folders 0775).
fn with_umask_002(mut run: Run) -> Run {
    let mut sh = std::process::Command::new("/bin/sh");
    sh.arg("-c")
        .arg("umask 002 && exec \"$@\"")
        .arg("sh")
        .arg(run.cmd.get_program())
        .args(run.cmd.get_args())
        .env_clear();
    for (key, value) in run.cmd.get_envs() {
        if let Some(value) = value {
            sh.env(key, value);
        }
    }
    if let Some(dir) = run.cmd.get_current_dir() {
        sh.current_dir(dir);
    }
    run.cmd = sh;
    run
}

/// Under a umask that lets the group write (002), a git checkout (fetched, then again from
/// the cache) still installs nothing writable by the group or others: 0644 and 0755.
#[test]
fn git_installs_are_not_group_writable_under_umask_002() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    let (_served, root) = served();
    let repo = extension_repo(&env, &root, "ext");
    let commit = repo.head_commit();
    let daemon = GitDaemon::start(&root);
    let mode = |p: &Path| fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777;
    let url = daemon.url("ext");
    for project in [false, true] {
        let mut args = vec!["ext", "install", &url, "--ref", &commit];
        if project {
            args.push("--project");
        }
        bounded(with_umask_002(env.zot(&args)), &args).success();
        let dest = if project {
            env.project_root().join("ext")
        } else {
            env.global_root().join("ext")
        };
        assert_eq!(mode(&dest) & 0o7022, 0, "project {project}");
        assert_eq!(mode(&dest.join("lib")), 0o755, "project {project}");
        assert_eq!(mode(&dest.join("rev.txt")), 0o644, "project {project}");
        assert_eq!(mode(&dest.join("run.sh")), 0o755, "project {project}");
    }
}

/// `install --dry-run` of a git source clones it into a temporary store to read the
/// manifest, names the commit it would install, and changes nothing (the fetch cache
/// included: there is none afterwards).
#[test]
fn dry_run_of_a_git_source_names_the_commit_and_changes_nothing() {
    let env = Env::new();
    let (_tmp, root) = served();
    let repo = extension_repo(&env, &root, "hello");
    let head = repo.rev_parse("main");
    let daemon = GitDaemon::start(&root);
    let url = daemon.url("hello");
    let before = env.snapshot();
    let done = install_git_with(&env, &url, &["--dry-run"]);
    done.stdout_is(&format!(
        "would install hello 1.0.0 (commit {}) (global) in {}\n",
        &head[..12],
        installed_dir(&env, "hello").display()
    ));
    assert_eq!(env.snapshot(), before);
    assert!(!env.home.join(".ext-store").exists());
}
