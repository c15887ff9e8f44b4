//! `zot ext sync` and `zot ext add`: a project file of extensions from a git daemon, smart
//! HTTP and local folders, made to match, kept offline when nothing changed, `--frozen`
//! against the lock, `--prune`, `--dry-run`, failures that leave the others in place, and
//! `remove` of an extension the project file names.

use std::fs;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};

use serde_json::Value;
use tempfile::TempDir;

use crate::git_install::{served, zot};
use crate::support::git_servers::{GitDaemon, HttpGit, Repo};
use crate::support::invariants::{Checker, Expect, Scope, Version, capture, read_record};
use crate::support::{Env, REPLACE_POINTS, manifest};

/// A served root with the five repositories the project file of [`project_file`] names
/// (`clock` tagged `v1` then moved on, `radio`, `mono` holding `ext/weather`, `news`), and
/// the servers in front of it.
struct World {
    _tmp: TempDir,
    clock: Repo,
    radio: Repo,
    daemon: Option<GitDaemon>,
    http: Option<HttpGit>,
    clock_v1: String,
    radio_head: String,
}

fn extension_files(name: &str) -> Vec<(String, String)> {
    vec![
        ("extension.json".into(), manifest(name)),
        ("run.sh".into(), "#!/bin/sh\nexit 0\n".into()),
        ("rev.txt".into(), "one\n".into()),
    ]
}

fn repo(root: &Path, name: &str, files: &[(String, String)]) -> Repo {
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    Repo::with_files(root, name, &files)
}

fn world() -> World {
    let (tmp, root) = served();
    let clock = repo(&root, "clock", &extension_files("clock"));
    let clock_v1 = clock.head_commit();
    clock.tag("v1");
    clock.commit(&[("rev.txt", "two\n")]);
    let radio = repo(&root, "radio", &extension_files("radio"));
    let radio_head = radio.head_commit();
    let weather: Vec<(String, String)> = extension_files("weather")
        .into_iter()
        .map(|(p, t)| (format!("ext/weather/{p}"), t))
        .chain([("README".to_string(), "mono\n".to_string())])
        .collect();
    repo(&root, "mono", &weather);
    repo(&root, "news", &extension_files("news"));
    let daemon = GitDaemon::start(&root);
    let http = HttpGit::start(&root);
    World {
        _tmp: tmp,
        clock,
        radio,
        daemon: Some(daemon),
        http: Some(http),
        clock_v1,
        radio_head,
    }
}

impl World {
    fn daemon_url(&self, name: &str) -> String {
        self.daemon.as_ref().unwrap().url(name)
    }

    fn http_url(&self, name: &str) -> String {
        self.http.as_ref().unwrap().url(name)
    }

    /// Stops both servers: from now on nothing can be fetched.
    fn stop(&mut self) {
        self.daemon = None;
        self.http = None;
    }
}

/// Six extensions: two over the git daemon (one pinned to a tag), two over smart HTTP (one
/// in a subfolder), two local folders (one relative and disabled).
fn project_file(env: &Env, world: &World) -> String {
    let hello = env.project.join("tools/hello-py");
    fs::create_dir_all(&hello).unwrap();
    fs::write(hello.join("extension.json"), manifest("hello-py")).unwrap();
    let notes = env.source("notes-src", "notes");
    serde_json::to_string_pretty(&serde_json::json!({
        "$schema": "https://example.com/extensions.schema.json",
        "extensions": {
            "clock": { "source": world.daemon_url("clock"), "ref": "v1" },
            "radio": { "source": world.daemon_url("radio") },
            "weather": { "source": world.http_url("mono"), "subdir": "ext/weather" },
            "news": { "source": world.http_url("news") },
            "hello-py": { "source": "./tools/hello-py", "enabled": false },
            "notes": { "source": notes.display().to_string() },
        }
    }))
    .unwrap()
}

fn write_project_file(env: &Env, text: &str) -> PathBuf {
    let path = env.project.join(".zot/extensions.json");
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(&path, text).unwrap();
    path
}

fn lock(env: &Env) -> Value {
    let text = fs::read_to_string(env.project.join(".zot/extensions.lock")).unwrap();
    assert!(text.ends_with("}\n"), "{text}");
    serde_json::from_str(&text).unwrap()
}

fn rev(env: &Env, name: &str) -> String {
    fs::read_to_string(env.project_root().join(name).join("rev.txt")).unwrap()
}

fn enabled(env: &Env, name: &str) -> bool {
    let text = fs::read_to_string(env.project_root().join(name).join("extension.json")).unwrap();
    serde_json::from_str::<Value>(&text).unwrap()["enabled"] == true
}

const SIX: [&str; 6] = ["clock", "hello-py", "news", "notes", "radio", "weather"];

#[test]
fn first_sync_installs_six_and_a_second_one_is_offline_and_up_to_date() {
    let mut world = world();
    let env = Env::new();
    write_project_file(&env, &project_file(&env, &world));

    let done = zot(&env, &["ext", "sync", "--jobs", "3"]);
    done.success()
        .stdout_has("+ clock 1.0.0 (")
        .stdout_has("+ weather 1.0.0 (")
        .stdout_has("+ hello-py 1.0.0\n")
        .stdout_has("6 installed\n");
    let mut names: Vec<String> = fs::read_dir(env.project_root())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, SIX);
    assert_eq!(rev(&env, "clock"), "one\n", "the tag, not the moved branch");
    assert!(!enabled(&env, "hello-py"));
    assert!(enabled(&env, "notes"));
    assert!(!env.project_root().join("weather/README").exists());

    let lock = lock(&env);
    assert_eq!(lock["version"], 1);
    let entries = lock["extensions"].as_object().unwrap();
    assert_eq!(entries.keys().collect::<Vec<_>>(), SIX);
    assert_eq!(entries["clock"]["commit"], world.clock_v1.as_str());
    assert_eq!(entries["clock"]["ref"], "v1");
    assert_eq!(entries["weather"]["subdir"], "ext/weather");
    assert_eq!(entries["hello-py"]["commit"], Value::Null);
    assert_eq!(entries["hello-py"]["source"], "./tools/hello-py");
    // The tree hash is the one info shows.
    let info = zot(&env, &["ext", "info", "radio", "--json"]);
    let shown = info.success().json().to_string();
    let tree = entries["radio"]["tree"].as_str().unwrap();
    assert!(
        tree.starts_with("sha256:") && shown.contains(tree),
        "{shown}"
    );

    world.stop();
    let before = env.snapshot();
    let again = zot(&env, &["ext", "sync"]);
    again
        .success()
        .stdout_has("= clock up to date\n")
        .stdout_has("= weather up to date\n")
        .stdout_has("= hello-py up to date\n");
    assert!(again.stdout.ends_with("\nup to date\n"), "{again:?}");
    zot(&env, &["ext", "sync", "--frozen"])
        .success()
        .stdout_has("up to date");
    assert_eq!(env.snapshot(), before);
}

#[test]
fn frozen_installs_the_locked_commits_after_upstream_moved() {
    let world = world();
    let first = Env::new();
    let file = project_file(&first, &world);
    write_project_file(&first, &file);
    zot(&first, &["ext", "sync"]).success();
    world.radio.commit(&[("rev.txt", "moved\n")]);

    // A checkout elsewhere: the same two files.
    let other = Env::new();
    let file = project_file(&other, &world);
    write_project_file(&other, &file);
    let lock_text = fs::read_to_string(first.project.join(".zot/extensions.lock")).unwrap();
    // The local folders live in each checkout's own tree: only the git entries are copied.
    fs::write(other.project.join(".zot/extensions.lock"), &lock_text).unwrap();
    let mut file_json: Value = serde_json::from_str(&file).unwrap();
    file_json["extensions"]["notes"]["source"] =
        Value::String(first.work.join("notes-src").display().to_string());
    write_project_file(&other, &file_json.to_string());

    zot(&other, &["ext", "sync", "--frozen"])
        .success()
        .stdout_has("+ radio 1.0.0 (")
        .stdout_has("6 installed");
    assert_eq!(rev(&other, "radio"), "one\n");
    assert_eq!(
        lock(&other)["extensions"]["radio"]["commit"],
        world.radio_head.as_str()
    );
    assert_eq!(
        fs::read_to_string(other.project.join(".zot/extensions.lock")).unwrap(),
        lock_text,
        "--frozen leaves the lock as it is"
    );
}

#[test]
fn frozen_refuses_a_tree_that_does_not_hash_to_the_lock_and_changes_nothing() {
    let world = world();
    let env = Env::new();
    write_project_file(&env, &project_file(&env, &world));
    zot(&env, &["ext", "sync"]).success();
    zot(&env, &["ext", "remove", "radio", "--yes", "--keep-in-file"])
        .success()
        .stdout_has("kept it in");
    zot(&env, &["ext", "remove", "notes", "--yes", "--keep-in-file"]).success();
    let path = env.project.join(".zot/extensions.lock");
    let mut locked: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
    locked["extensions"]["radio"]["tree"] = Value::String(format!("sha256:{}", "0".repeat(64)));
    fs::write(&path, serde_json::to_string_pretty(&locked).unwrap() + "\n").unwrap();
    let before = env.snapshot();

    zot(&env, &["ext", "sync", "--frozen"])
        .failure(1)
        .stderr_has("radio: the fetched tree hashes to sha256:")
        .stderr_has("nothing was changed");
    assert_eq!(env.snapshot(), before, "notes was not installed either");
}

#[test]
fn frozen_refuses_a_file_and_lock_that_disagree() {
    let world = world();
    let env = Env::new();
    let file = project_file(&env, &world);
    write_project_file(&env, &file);
    zot(&env, &["ext", "sync"]).success();
    let mut changed: Value = serde_json::from_str(&file).unwrap();
    changed["extensions"]["clock"]["ref"] = Value::String("main".into());
    changed["extensions"]
        .as_object_mut()
        .unwrap()
        .remove("news");
    write_project_file(&env, &changed.to_string());
    let before = env.snapshot();
    zot(&env, &["ext", "sync", "--frozen"])
        .failure(1)
        .stderr_has("clock: ref differs: the file says \"main\", the lock \"v1\"")
        .stderr_has("news: in the lock but not in the project file");
    assert_eq!(env.snapshot(), before);
}

#[test]
fn drift_is_repaired_and_a_changed_ref_updates() {
    let world = world();
    let env = Env::new();
    let file = project_file(&env, &world);
    write_project_file(&env, &file);
    zot(&env, &["ext", "sync"]).success();
    fs::write(env.project_root().join("radio/rev.txt"), "edited\n").unwrap();
    fs::write(env.project_root().join("radio/data.db"), "mine\n").unwrap();
    let mut changed: Value = serde_json::from_str(&file).unwrap();
    changed["extensions"]["clock"]["ref"] = Value::String("main".into());
    changed["extensions"]["hello-py"]["enabled"] = Value::Bool(true);
    write_project_file(&env, &changed.to_string());

    let synced = zot(&env, &["ext", "sync"]);
    synced
        .success()
        .stdout_has("~ radio updated 1.0.0 (")
        .stdout_has("files changed since it was installed: rev.txt; what it replaced was saved to ")
        .stdout_has("~ clock updated 1.0.0 (")
        .stdout_has("ref differs")
        .stdout_has("= hello-py up to date (enabled)");
    assert_eq!(rev(&env, "radio"), "one\n");
    // The edit is where the line says.
    let line = synced
        .stdout
        .lines()
        .find(|l| l.starts_with("~ radio"))
        .unwrap();
    let saved = line.split("saved to ").nth(1).unwrap();
    assert_eq!(
        fs::read_to_string(Path::new(saved).join("rev.txt")).unwrap(),
        "edited\n"
    );
    assert_eq!(
        fs::read_to_string(env.project_root().join("radio/data.db")).unwrap(),
        "mine\n",
        "the extension's own data is carried over"
    );
    assert_eq!(rev(&env, "clock"), "two\n");
    assert!(enabled(&env, "hello-py"));
    assert_eq!(lock(&env)["extensions"]["clock"]["ref"], "main");
    assert_eq!(
        lock(&env)["extensions"]["clock"]["commit"],
        world.clock.head_commit().as_str()
    );
    zot(&env, &["ext", "sync"])
        .success()
        .stdout_has("\nup to date\n");
}

#[test]
fn prune_removes_what_the_file_does_not_name_in_that_scope_only() {
    let env = Env::new();
    let keep = env.source("keep-src", "keep");
    write_project_file(
        &env,
        &format!(
            r#"{{"extensions": {{"keep": {{"source": "{}"}}}}}}"#,
            keep.display()
        ),
    );
    env.install_project(env.source("extra-src", "extra"));
    env.install(env.source("global-src", "elsewhere"));
    zot(&env, &["ext", "sync"]).success().stdout_lacks("extra");
    assert!(
        env.project_root().join("extra").exists(),
        "kept without --prune"
    );
    zot(&env, &["ext", "sync", "--prune"])
        .success()
        .stdout_has("- extra removed")
        .stdout_has("= keep up to date");
    assert!(!env.project_root().join("extra").exists());
    assert!(env.global_root().join("elsewhere").exists());
}

#[test]
fn one_broken_source_fails_while_the_others_land() {
    let env = Env::new();
    let mut entries = serde_json::Map::new();
    for name in ["a1", "a2", "a3", "a4"] {
        let src = env.source(&format!("{name}-src"), name);
        entries.insert(
            name.into(),
            serde_json::json!({ "source": src.display().to_string() }),
        );
    }
    entries.insert(
        "broken".into(),
        serde_json::json!({ "source": env.work.join("missing").display().to_string() }),
    );
    let wrong = env.source("wrong-src", "other-name");
    entries.insert(
        "wrong".into(),
        serde_json::json!({ "source": wrong.display().to_string() }),
    );
    write_project_file(
        &env,
        &serde_json::json!({ "extensions": entries }).to_string(),
    );
    let done = zot(&env, &["ext", "sync", "--jobs", "4"]);
    done.failure(1)
        .stderr_has("! broken: ")
        .stderr_has("does not exist")
        .stderr_has("! wrong: its extension.json names it \"other-name\", not \"wrong\"")
        .stderr_has("2 of 6 extensions failed")
        .stdout_has("+ a4 1.0.0\n")
        .stdout_has("4 installed, 2 failed");
    for name in ["a1", "a2", "a3", "a4"] {
        assert!(env.project_root().join(name).exists(), "{name}");
    }
    let lock = lock(&env);
    let names: Vec<&String> = lock["extensions"].as_object().unwrap().keys().collect();
    assert_eq!(names, ["a1", "a2", "a3", "a4"]);
}

#[test]
fn add_installs_and_creates_the_project_file_and_lock() {
    let world = world();
    let env = Env::new();
    let tools = env.project.join("tools/hello");
    fs::create_dir_all(&tools).unwrap();
    fs::write(tools.join("extension.json"), manifest("hello")).unwrap();

    zot(&env, &["ext", "add", "./tools/hello"])
        .success()
        .stdout_has("added hello 1.0.0 (project) to ");
    zot(
        &env,
        &[
            "ext",
            "add",
            &world.daemon_url("clock"),
            "--ref",
            "v1",
            "--disabled",
        ],
    )
    .success()
    .stdout_has(&format!(
        "added clock 1.0.0 ({}) (project, disabled)",
        &world.clock_v1[..12]
    ));
    zot(
        &env,
        &[
            "ext",
            "add",
            &format!("{}#ext/weather", world.http_url("mono")),
        ],
    )
    .success();

    let file: Value = serde_json::from_str(
        &fs::read_to_string(env.project.join(".zot/extensions.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        file,
        serde_json::json!({"extensions": {
            "clock": {"source": world.daemon_url("clock"), "ref": "v1", "enabled": false},
            "hello": {"source": "./tools/hello"},
            "weather": {"source": world.http_url("mono"), "subdir": "ext/weather"},
        }})
    );
    let lock = lock(&env);
    assert_eq!(
        lock["extensions"]["clock"]["commit"],
        world.clock_v1.as_str()
    );
    assert!(!enabled(&env, "clock"));
    // What add wrote is what sync wants: nothing to do.
    zot(&env, &["ext", "sync"])
        .success()
        .stdout_has("\nup to date\n");
    // Adding it again is what a setup script does: nothing to do.
    zot(&env, &["ext", "add", "./tools/hello"])
        .success()
        .stdout_has("(same source, same version); nothing to do");
}

/// `add` suggests `--force` for an installed name, and has it: the copy is replaced as by
/// `install --force` (data the extension wrote carried over) and the entry recorded again.
#[test]
fn add_force_replaces_an_installed_copy_carrying_its_data() {
    let env = Env::new();
    let tools = env.project.join("tools/hello");
    fs::create_dir_all(&tools).unwrap();
    fs::write(tools.join("extension.json"), manifest("hello")).unwrap();
    zot(&env, &["ext", "add", "./tools/hello"]).success();
    let installed = env.project_root().join("hello");
    fs::write(installed.join("state.db"), "data").unwrap();
    fs::write(tools.join("new.txt"), "new").unwrap();

    zot(&env, &["ext", "add", "./tools/hello", "--force"])
        .success()
        .stdout_has("added hello 1.0.0 (project) to ");
    assert_eq!(
        fs::read_to_string(installed.join("state.db")).unwrap(),
        "data"
    );
    assert!(installed.join("new.txt").is_file());
    zot(&env, &["ext", "sync"])
        .success()
        .stdout_has("\nup to date\n");
}

#[test]
fn dry_run_prints_the_plan_and_changes_nothing() {
    let env = Env::new();
    let src = env.source("one-src", "one");
    write_project_file(
        &env,
        &format!(
            r#"{{"extensions": {{"one": {{"source": "{}"}}}}}}"#,
            src.display()
        ),
    );
    let before = env.snapshot();
    zot(&env, &["ext", "sync", "--dry-run"])
        .success()
        .stdout_has("+ one would be installed\n")
        .stdout_has("1 to install (dry run: nothing was changed)");
    let json = zot(&env, &["ext", "sync", "--dry-run", "--json"]);
    let doc = json.success().schema_first();
    assert_eq!(doc["extensions"][0]["status"], "would-install");
    assert_eq!(doc["summary"]["installed"], 1);
    assert_eq!(env.snapshot(), before);
    assert!(!env.project.join(".zot/extensions.lock").exists());
    assert!(!env.project.join(".zot/.ext-store").exists());
}

#[test]
fn unknown_fields_are_named_with_file_line_and_column() {
    let env = Env::new();
    let path = write_project_file(
        &env,
        "{\n  \"extensions\": {\n    \"one\": { \"source\": \"./one\", \"sorce\": \"x\" }\n  }\n}\n",
    );
    zot(&env, &["ext", "sync"])
        .failure(1)
        .stderr_one_line()
        .stderr_has(&format!(
            "{}:3:33: unknown field \"sorce\" in the entry \"one\"",
            path.display()
        ));
    zot(&env, &["ext", "add", "./x"])
        .failure(1)
        .stderr_has(":3:33: unknown field");
}

#[test]
fn remove_drops_the_entry_without_a_terminal_and_keeps_it_when_asked() {
    let env = Env::new();
    let a = env.source("a-src", "a");
    let b = env.source("b-src", "b");
    zot(&env, &["ext", "add", a.to_str().unwrap()]).success();
    zot(&env, &["ext", "add", b.to_str().unwrap()]).success();
    zot(&env, &["ext", "remove", "a", "--yes"])
        .success()
        .stdout_has("dropped it from");
    zot(&env, &["ext", "remove", "b", "--yes", "--keep-in-file"])
        .success()
        .stdout_has("kept it in");
    let file = fs::read_to_string(env.project.join(".zot/extensions.json")).unwrap();
    assert!(!file.contains("\"a\"") && file.contains("\"b\""), "{file}");
    let names: Vec<String> = lock(&env)["extensions"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(names, ["b"]);
    zot(&env, &["ext", "sync"])
        .success()
        .stdout_has("+ b 1.0.0");
}

#[test]
fn global_scope_uses_the_file_in_zot_home() {
    let env = Env::new();
    let src = env.source("g-src", "g");
    zot(&env, &["ext", "add", "-g", src.to_str().unwrap()]).success();
    assert!(env.home.join("extensions.json").exists());
    assert!(env.home.join("extensions.lock").exists());
    assert!(env.global_root().join("g").exists());
    zot(&env, &["ext", "sync", "--global"])
        .success()
        .stdout_has("= g up to date");
    zot(&env, &["ext", "sync"])
        .failure(1)
        .stderr_has("there is no project file");
}

/// One of two project files the kill test alternates between.
fn variant(env: &Env, world: &World, second: bool) -> Value {
    let notes = env.source("notes-src", "notes");
    let hello = env.source("hello-src", "hello");
    let mut extensions = serde_json::json!({
        "clock": { "source": world.daemon_url("clock"), "ref": if second { "main" } else { "v1" } },
        "radio": { "source": world.http_url("radio") },
        "hello": { "source": hello.display().to_string(), "enabled": !second },
    });
    if !second {
        extensions["notes"] = serde_json::json!({ "source": notes.display().to_string() });
    }
    serde_json::json!({ "extensions": extensions })
}

/// After a sync that ran to the end: the installed set, the enabled states and the lock are
/// what the file says, and a second sync has nothing to do.
#[track_caller]
fn assert_converged(env: &Env, file: &Value, second: bool, attempt: &str) {
    let again = zot(env, &["ext", "sync", "--prune"]);
    assert!(
        again.code == 0 && again.stdout.ends_with("\nup to date\n"),
        "{attempt}: not converged:\n{again:?}"
    );
    let mut wanted: Vec<&String> = file["extensions"].as_object().unwrap().keys().collect();
    wanted.sort();
    let mut installed: Vec<String> = fs::read_dir(env.project_root())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    installed.sort();
    assert_eq!(installed.iter().collect::<Vec<_>>(), wanted, "{attempt}");
    let lock = lock(env);
    assert_eq!(
        lock["extensions"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        wanted,
        "{attempt}"
    );
    assert_eq!(
        rev(env, "clock"),
        if second { "two\n" } else { "one\n" },
        "{attempt}"
    );
    assert_eq!(enabled(env, "hello"), !second, "{attempt}");
    let stray: Vec<String> = fs::read_dir(env.project.join(".zot"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".extensions."))
        .collect();
    assert!(
        stray.is_empty(),
        "{attempt}: temporary files left: {stray:?}"
    );
}

#[test]
fn sync_killed_at_random_moments_converges_on_the_next_run() {
    use std::process::Stdio;
    use std::time::{Duration, Instant};
    let world = world();
    let env = Env::new();
    // How long a sync that switches variants takes, undisturbed.
    let mut longest = Duration::ZERO;
    for second in [false, true, false] {
        let file = variant(&env, &world, second);
        write_project_file(&env, &file.to_string());
        let started = Instant::now();
        zot(&env, &["ext", "sync", "--prune"]).success();
        longest = longest.max(started.elapsed());
        assert_converged(&env, &file, second, "calibration");
    }
    // A fixed linear congruential sequence: the same kill moments on every run.
    let mut seed: u64 = 0x5eed_1234;
    let mut killed = 0;
    let mut attempt = 0;
    // At least 20 kills that land while sync runs (a kill after it ended does not count).
    while killed < 20 && attempt < 80 {
        attempt += 1;
        let second = attempt % 2 == 0;
        let file = variant(&env, &world, second);
        write_project_file(&env, &file.to_string());
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let fraction = (seed >> 33) % 1000;
        let delay = longest.mul_f64(fraction as f64 / 1100.0);
        let mut cmd = env.zot(["ext", "sync", "--prune"]).cmd;
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let mut child = cmd.spawn().unwrap();
        std::thread::sleep(delay);
        let _ = child.kill();
        let status = child.wait().unwrap();
        if status.code().is_none() {
            killed += 1;
        }
        let name = format!("attempt {attempt} (kill after {delay:?})");
        zot(&env, &["ext", "sync", "--prune"]).success();
        assert_converged(&env, &file, second, &name);
    }
    assert!(
        killed >= 20,
        "only {killed} of {attempt} kills landed before the sync ended"
    );
}

#[test]
fn remove_at_a_terminal_asks_whether_to_drop_the_entry() {
    let env = Env::new();
    let a = env.source("a-src", "a");
    let b = env.source("b-src", "b");
    zot(&env, &["ext", "add", a.to_str().unwrap()]).success();
    zot(&env, &["ext", "add", b.to_str().unwrap()]).success();
    let kept = env.zot_in_terminal(&["ext", "remove", "a"], "y\nn\n");
    assert!(
        kept.stdout.contains("also drop a from") && kept.stdout.contains("kept it in"),
        "{kept:?}"
    );
    let dropped = env.zot_in_terminal(&["ext", "remove", "b"], "y\ny\n");
    assert!(dropped.stdout.contains("dropped it from"), "{dropped:?}");
    let file = fs::read_to_string(env.project.join(".zot/extensions.json")).unwrap();
    assert!(file.contains("\"a\"") && !file.contains("\"b\""), "{file}");
}

#[test]
fn add_never_writes_credentials_into_the_project_file() {
    let env = Env::new();
    zot(
        &env,
        &[
            "ext",
            "add",
            "https://alice:s3cr3t-pw@127.0.0.1:9/clock.git",
        ],
    )
    .failure(2)
    .stderr_has("https://***@127.0.0.1:9/clock.git holds credentials")
    .stderr_lacks("s3cr3t-pw");
    assert!(!env.project.join(".zot/extensions.json").exists());
}

/// The fetch cache is shared: a second checkout of the project (another folder, the same
/// project file and lock) installs its git extensions with the servers stopped.
#[test]
fn a_second_project_syncs_the_locked_commits_from_the_cache() {
    let mut world = world();
    let env = Env::new();
    let text = serde_json::to_string_pretty(&serde_json::json!({
        "extensions": {
            "clock": { "source": world.daemon_url("clock"), "ref": "v1" },
            "weather": { "source": world.http_url("mono"), "subdir": "ext/weather" },
        }
    }))
    .unwrap();
    write_project_file(&env, &text);
    zot(&env, &["ext", "sync"])
        .success()
        .stdout_has("2 installed\n");
    let locked = fs::read_to_string(env.project.join(".zot/extensions.lock")).unwrap();

    world.stop();
    let second = env.project.parent().unwrap().join("second");
    fs::create_dir_all(second.join(".zot")).unwrap();
    fs::write(second.join(".zot/extensions.json"), &text).unwrap();
    fs::write(second.join(".zot/extensions.lock"), &locked).unwrap();
    env.zot(["ext", "sync", "--frozen"])
        .current_dir(&second)
        .ok()
        .stdout_has("2 installed\n");
    assert_eq!(
        fs::read_to_string(second.join(".zot/extensions/clock/rev.txt")).unwrap(),
        "one\n"
    );
    assert!(
        second
            .join(".zot/extensions/weather/extension.json")
            .is_file()
    );
}

/// Sources `work/<name>-v1` and `work/<name>-v2` of `a`, `b` and `c`: versions 1.0.0 and
/// 2.0.0, with a file that differs.
fn two_versions_of_three(env: &Env) {
    for name in ["a", "b", "c"] {
        for v in ["1", "2"] {
            let text = manifest(name).replace("1.0.0", &format!("{v}.0.0"));
            let dir = env.source_with_manifest(&format!("{name}-v{v}"), &text);
            fs::write(dir.join("marker"), v).unwrap();
        }
    }
}

/// A project file naming each of `names` from its source of version `v`.
fn at_version(env: &Env, names: &[&str], v: &str) -> String {
    let extensions: serde_json::Map<String, Value> = names
        .iter()
        .map(|name| {
            let dir = env.work.join(format!("{name}-v{v}"));
            let entry = serde_json::json!({ "source": dir.display().to_string() });
            ((*name).to_string(), entry)
        })
        .collect();
    serde_json::json!({ "extensions": extensions }).to_string()
}

/// What `name` is in the project scope now: its tree and its record, labelled `label`.
fn version_now(env: &Env, name: &str, label: &str) -> Version {
    let record = Scope::Project
        .state(env)
        .join("sources")
        .join(format!("{name}.json"));
    Version {
        label: label.into(),
        tree: capture(&env.project_root().join(name)),
        record: Some(read_record(&record).expect("a record")),
    }
}

/// A sync that updates `a` and `b` and installs `c` places all three as one batch; killed at
/// each named point, every extension is its old or its new version (`c` new or absent), the
/// next command settles records and file lists to match, and the next sync finishes it. A
/// kill after the first tree is placed leaves the others old; one after the last leaves
/// all new.
#[test]
fn a_kill_at_each_point_of_a_batched_sync_leaves_each_extension_old_or_new() {
    for point in REPLACE_POINTS {
        let env = Env::new();
        two_versions_of_three(&env);
        let new_file = at_version(&env, &["a", "b", "c"], "2");
        let old_file = at_version(&env, &["a", "b"], "1");
        write_project_file(&env, &new_file);
        zot(&env, &["ext", "sync"]).success();
        let new: Vec<Version> = ["a", "b", "c"]
            .iter()
            .map(|n| version_now(&env, n, "new"))
            .collect();
        write_project_file(&env, &old_file);
        zot(&env, &["ext", "sync", "--prune"]).success();
        let old: Vec<Version> = ["a", "b"]
            .iter()
            .map(|n| version_now(&env, n, "old"))
            .collect();

        write_project_file(&env, &new_file);
        let killed = env
            .zot(["ext", "sync"])
            .env("ZOT_EXT_CRASH_AT", point)
            .cmd
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert_eq!(killed.status.signal(), Some(9), "{point}: {killed:?}");
        let mut expect = Expect::default();
        for (i, name) in ["a", "b"].iter().enumerate() {
            expect.allow(Scope::Project, name, &old[i]);
        }
        for (i, name) in ["a", "b", "c"].iter().enumerate() {
            expect.allow(Scope::Project, name, &new[i]);
        }
        expect.allow_absent(Scope::Project, "c");
        let checker = Checker {
            env: &env,
            expect: &expect,
        };
        let (violations, found) = checker.at_any_instant();
        assert!(violations.is_empty(), "{point}: {violations:?}");
        let label = |name: &str| {
            found
                .get(&(Scope::Project, name.to_string()))
                .cloned()
                .flatten()
                .unwrap_or_else(|| "absent".into())
        };
        let left: Vec<String> = ["a", "b", "c"].iter().map(|n| label(n)).collect();
        let wanted = match point {
            "place.after" => ["new", "old", "absent"],
            "place.all" | "record.after" => ["new", "new", "new"],
            _ => ["old", "old", "absent"],
        };
        assert_eq!(left, wanted, "{point}");

        env.zot(["ext", "list"]).ok();
        let violations = checker.settled();
        assert!(violations.is_empty(), "{point}: {violations:?}");
        zot(&env, &["ext", "sync"]).success();
        let mut finished = Expect::default();
        for (i, name) in ["a", "b", "c"].iter().enumerate() {
            finished.allow(Scope::Project, name, &new[i]);
        }
        let finished = Checker {
            env: &env,
            expect: &finished,
        };
        let violations = finished.settled();
        assert!(violations.is_empty(), "{point}: {violations:?}");
        zot(&env, &["ext", "sync"])
            .success()
            .stdout_has("\nup to date\n");
    }
}

/// The lock is written only when its text changes: a sync with nothing to do leaves the
/// file itself alone (same inode), while a lock with the same entries in another layout is
/// rewritten in the stable one.
#[test]
fn the_lock_is_rewritten_only_when_its_text_changes() {
    use std::os::unix::fs::MetadataExt;
    let env = Env::new();
    two_versions_of_three(&env);
    write_project_file(&env, &at_version(&env, &["a", "b"], "1"));
    zot(&env, &["ext", "sync"]).success();
    let path = env.project.join(".zot/extensions.lock");
    let stable = fs::read_to_string(&path).unwrap();
    let inode = fs::metadata(&path).unwrap().ino();
    zot(&env, &["ext", "sync"])
        .success()
        .stdout_has("\nup to date\n");
    assert_eq!(fs::metadata(&path).unwrap().ino(), inode);

    let compact = serde_json::to_string(&lock(&env)).unwrap();
    assert_ne!(compact, stable);
    fs::write(&path, &compact).unwrap();
    zot(&env, &["ext", "sync"])
        .success()
        .stdout_has("\nup to date\n");
    assert_eq!(fs::read_to_string(&path).unwrap(), stable);
}

/// A placed `extension.json` changed to run something else (a cloned `.zot/` or a CI cache):
/// drift that `sync` installs again and `--frozen` refuses, naming the file; a manifest
/// changed only in `enabled` (by `disable`) is not drift.
#[test]
fn a_changed_manifest_is_drift_refused_by_frozen_and_reinstalled_by_sync() {
    let env = Env::new();
    let src = env.source("one-src", "one");
    write_project_file(
        &env,
        &serde_json::json!({"extensions": {"one": {"source": src}}}).to_string(),
    );
    zot(&env, &["ext", "sync"]).success();
    let placed = env.project_root().join("one/extension.json");
    let original = fs::read_to_string(&placed).unwrap();

    zot(&env, &["ext", "disable", "one", "--project"]).success();
    zot(&env, &["ext", "sync", "--frozen"])
        .success()
        .stdout_has("= one up to date (enabled)");

    let hostile = serde_json::json!({
        "name": "one", "version": "1.0.0", "exec": "/bin/sh", "args": ["-c", "id > pwned"]
    });
    fs::write(&placed, hostile.to_string()).unwrap();
    let before = env.snapshot();
    zot(&env, &["ext", "sync", "--frozen"])
        .failure(1)
        .stderr_one_line()
        .stderr_has("one: extension.json changed since it was installed")
        .stderr_has("nothing was changed");
    zot(&env, &["ext", "sync", "--frozen", "--dry-run"])
        .failure(1)
        .stderr_has("one: extension.json changed since it was installed");
    assert_eq!(env.snapshot(), before);

    zot(&env, &["ext", "sync"])
        .success()
        .stdout_has("~ one updated")
        .stdout_has("files changed since it was installed: extension.json");
    assert_eq!(fs::read_to_string(&placed).unwrap(), original);
    zot(&env, &["ext", "sync", "--frozen"])
        .success()
        .stdout_has("up to date");
}

/// The project's state folder and the installed copies the project file names keep out of
/// git, and the first `add` says which two files to commit (only the first).
#[test]
fn the_state_folder_ignores_itself_and_add_names_the_files_to_commit() {
    let env = Env::new();
    for name in ["hello", "other"] {
        let tools = env.project.join("tools").join(name);
        fs::create_dir_all(&tools).unwrap();
        fs::write(tools.join("extension.json"), manifest(name)).unwrap();
    }
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(&env.project)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", &env.home)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    git(&["init", "-q"]);
    zot(&env, &["ext", "add", "./tools/hello"])
        .success()
        .stderr_has(
        "note: commit .zot/extensions.json and .zot/extensions.lock (zot ext sync installs from them)",
    );
    assert_eq!(
        fs::read_to_string(env.project.join(".zot/.ext-store/.gitignore")).unwrap(),
        "*\n"
    );
    zot(&env, &["ext", "add", "./tools/other"])
        .success()
        .stderr_lacks("commit .zot/extensions.json");
    let status = git(&["status", "--porcelain", "--untracked-files=all"]);
    assert!(!status.contains(".ext-store"), "{status}");
    // The installed copies stay out too: only the two files to commit are left.
    assert_eq!(
        status,
        "?? .zot/extensions.json\n?? .zot/extensions.lock\n?? tools/hello/extension.json\n?? tools/other/extension.json\n",
        "{status}"
    );
    // A folder the project file does not name (installed by hand) is git's to see.
    zot(&env, &["ext", "install", "-p", "./tools/other", "--force"]).success();
    fs::create_dir_all(env.project_root().join("mine")).unwrap();
    fs::write(
        env.project_root().join("mine/extension.json"),
        manifest("mine"),
    )
    .unwrap();
    let status = git(&["status", "--porcelain", "--untracked-files=all"]);
    assert!(
        status.contains(".zot/extensions/mine/extension.json"),
        "{status}"
    );
    // Removing an entry from the file lets git see its folder again, if kept.
    zot(&env, &["ext", "remove", "-p", "-y", "hello"]).success();
    let ignore = fs::read_to_string(env.project.join(".zot/.gitignore")).unwrap();
    assert!(
        !ignore.contains("/extensions/hello/") && ignore.contains("/extensions/other/"),
        "{ignore}"
    );
}

/// From a subfolder of a project, `list` and `doctor -p` name the project file above and
/// the folder to run from (zot loads project extensions from the current folder only),
/// while `add` and `sync` work on the project above (as npm and cargo find their root)
/// instead of starting a second one.
#[test]
fn a_subfolder_of_a_project_names_the_project_file_above() {
    let env = Env::new();
    for name in ["hello", "other"] {
        let tools = env.project.join("tools").join(name);
        fs::create_dir_all(&tools).unwrap();
        fs::write(tools.join("extension.json"), manifest(name)).unwrap();
    }
    zot(&env, &["ext", "add", "./tools/hello"]).success();
    let sub = env.project.join("tools");
    let expected = format!(
        "the project file is ../.zot/extensions.json, in {}: run zot ext from there (cd {}), since zot loads project extensions from the current folder only",
        env.project.display(),
        env.project.display()
    );
    env.zot(["ext", "list"])
        .current_dir(&sub)
        .ok()
        .stderr_has(&format!("note: no project here; {expected}"));
    env.zot(["ext", "doctor", "-p"])
        .current_dir(&sub)
        .ok()
        .stderr_has(&format!("note: no project here; {expected}"))
        .stderr_lacks("no extensions installed");
    let added = env.zot(["ext", "add", "other"]).current_dir(&sub).ok();
    added.stderr_has(&format!(
        "note: adding to the project in {} (.zot/extensions.json there)",
        env.project.display()
    ));
    assert!(!sub.join(".zot").exists(), "no second project is started");
    let file = fs::read_to_string(env.project.join(".zot/extensions.json")).unwrap();
    assert!(file.contains(r#""source": "./tools/other""#), "{file}");
    assert!(env.project_root().join("other/extension.json").is_file());
    let deeper = sub.join("hello");
    env.zot(["ext", "sync"])
        .current_dir(&deeper)
        .ok()
        .stderr_has("note: syncing the project in");
    // In the project itself, nothing is said.
    env.zot(["ext", "list"])
        .ok()
        .stderr_lacks("no project here");
}

/// From a subfolder, a name the project above has is not quietly taken for the global
/// copy by a command that changes it: `--global` says that copy is meant.
#[test]
fn a_subfolder_needs_global_to_change_a_global_copy_the_project_has_too() {
    let env = Env::new();
    let tools = env.project.join("tools/hello");
    fs::create_dir_all(&tools).unwrap();
    fs::write(tools.join("extension.json"), manifest("hello")).unwrap();
    zot(&env, &["ext", "add", "./tools/hello"]).success();
    zot(&env, &["ext", "install", "-g", "./tools/hello"]).success();
    let sub = env.project.join("tools");
    let global = env.home.join("extensions/hello");
    for args in [
        &["ext", "disable", "hello"][..],
        &["ext", "remove", "-y", "hello"],
        &["ext", "update", "hello"],
        &["ext", "prepare", "hello"],
    ] {
        let verb = args[1];
        env.zot(args)
            .current_dir(&sub)
            .fails(2)
            .stderr_has(&format!(
                "hello here is the global copy, but the project in {} has its own hello",
                env.project.display()
            ))
            .stderr_has(&format!("pass --global to {verb} the global copy"));
    }
    assert!(global.join("extension.json").is_file());
    env.zot(["ext", "info", "hello"])
        .current_dir(&sub)
        .ok()
        .stderr_has("note: this is the global copy; the project in");
    env.zot(["ext", "disable", "-p", "hello"])
        .current_dir(&sub)
        .fails(1)
        .stderr_has("hello is not in this folder's project scope; the project file is ../.zot/extensions.json");
    env.zot(["ext", "disable", "--global", "hello"])
        .current_dir(&sub)
        .ok()
        .stdout_has("disabled hello (global)");
    // A name the project does not have is the global copy's, as before.
    env.zot(["ext", "enable", "hello", "--global"])
        .current_dir(&sub)
        .ok();
}

/// A `.zot/.gitignore` the user wrote is theirs: `add` leaves it as it was.
#[test]
fn a_gitignore_of_the_users_own_is_left_alone() {
    let env = Env::new();
    let tools = env.project.join("tools/hello");
    fs::create_dir_all(&tools).unwrap();
    fs::write(tools.join("extension.json"), manifest("hello")).unwrap();
    fs::create_dir_all(env.project.join(".zot")).unwrap();
    fs::write(env.project.join(".zot/.gitignore"), "/extensions/\n").unwrap();
    zot(&env, &["ext", "add", "./tools/hello"]).success();
    assert_eq!(
        fs::read_to_string(env.project.join(".zot/.gitignore")).unwrap(),
        "/extensions/\n"
    );
}
