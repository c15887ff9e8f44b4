//! Carry-over in `update` and `install --force`: what the install did not place
//! survives byte for byte, what the new version overwrites is saved in
//! `.ext-store/backup/<name>/<time>/` (three kept) and reported, `--keep-local` keeps edits,
//! `enabled` is kept unless `--enable`/`--disable`, `--dry-run` changes nothing, kill -9 at
//! any moment leaves old+state or new+state, and the bundled hello-py keeps its count.

use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

use zot_ext::testing::{FileList, Standing};

use crate::support::git_servers::{GitDaemon, Repo};
use crate::support::invariants::{Checker, Expect, RecordId, Scope, Torture, Version, capture};
use crate::support::{Env, REPLACE_POINTS, manifest, write_executable};

/// Manifest of `name` at `version`.
fn versioned(name: &str, version: &str) -> String {
    manifest(name).replace("\"1.0.0\"", &format!("\"{version}\""))
}

/// A folder source `work/<dir>` of extension `name` at `version` with `lib/code.txt`.
fn folder_source(env: &Env, dir: &str, name: &str, version: &str) -> PathBuf {
    let src = env.source_with_manifest(dir, &versioned(name, version));
    fs::create_dir_all(src.join("lib")).unwrap();
    fs::write(src.join("lib/code.txt"), format!("code {version}\n")).unwrap();
    src
}

/// Installs `name` from a folder source at 1.0.0; returns the source and the installed copy.
fn installed_from_folder(env: &Env, name: &str) -> (PathBuf, PathBuf) {
    let src = folder_source(env, &format!("src-{name}"), name, "1.0.0");
    env.install(&src);
    (src, env.global_root().join(name))
}

/// The state an extension writes after install: a binary file with mode 600, a folder with
/// a nested file, and links (one out of the tree), each with a set modification time.
fn write_state(dir: &Path) {
    let state = dir.join("state.json");
    fs::write(&state, b"{\"tasks\":[\"Write README updates\"]}\x00\xff").unwrap();
    fs::set_permissions(&state, fs::Permissions::from_mode(0o600)).unwrap();
    fs::create_dir_all(dir.join("cache/deep")).unwrap();
    fs::write(dir.join("cache/deep/blob"), vec![7u8; 10_000]).unwrap();
    symlink("/etc/hostname", dir.join("outside-link")).unwrap();
    symlink("state.json", dir.join("cache/state-link")).unwrap();
    let old = std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(1_600_000_000);
    fs::File::options()
        .write(true)
        .open(&state)
        .unwrap()
        .set_modified(old)
        .unwrap();
}

/// The state's paths and nodes (byte for byte, modes, link targets).
fn state_of(dir: &Path) -> Vec<(PathBuf, String)> {
    let tree = capture(dir);
    let mut out: Vec<_> = tree
        .iter()
        .filter(|(p, _)| {
            let p = p.to_string_lossy();
            p == "state.json" || p.starts_with("cache") || p == "outside-link"
        })
        .map(|(p, n)| (p.clone(), format!("{n:?}")))
        .collect();
    let mtime = fs::symlink_metadata(dir.join("state.json"))
        .unwrap()
        .modified()
        .unwrap();
    out.push(("state.json mtime".into(), format!("{mtime:?}")));
    out
}

fn backups(env: &Env, name: &str) -> Vec<PathBuf> {
    let dir = env.home.join(".ext-store/backup").join(name);
    let mut all: Vec<PathBuf> = fs::read_dir(&dir)
        .map(|d| d.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    all.sort();
    all
}

fn enabled(dir: &Path) -> bool {
    let text = fs::read_to_string(dir.join("extension.json")).unwrap();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    value["enabled"].as_bool().unwrap_or(true)
}

/// The installed copy against its file list: everything placed is unchanged, and what was
/// not placed is exactly `extra`.
fn matches_its_file_list(env: &Env, name: &str, extra: &[&str]) {
    let bytes = fs::read(
        env.home
            .join(".ext-store/files")
            .join(format!("{name}.json")),
    )
    .unwrap();
    let list = FileList::from_bytes(&bytes).unwrap();
    let classified = list.classify(&env.global_root().join(name)).unwrap();
    let mut not_placed = Vec::new();
    for c in classified {
        let path = String::from_utf8_lossy(&c.path).into_owned();
        match c.standing {
            Standing::NotPlaced => not_placed.push(path),
            Standing::Unchanged => {}
            other => panic!("{path} is {other:?}"),
        }
    }
    assert_eq!(not_placed, extra);
}

#[test]
fn state_survives_update_and_force_byte_for_byte() {
    let env = Env::new();
    let (src, dir) = installed_from_folder(&env, "st");
    write_state(&dir);
    let before = state_of(&dir);
    fs::write(src.join("lib/code.txt"), "code 2\n").unwrap();
    env.zot(["ext", "update", "st"])
        .ok()
        .stdout_has("carried over: cache/, outside-link, state.json");
    assert_eq!(
        fs::read_to_string(dir.join("lib/code.txt")).unwrap(),
        "code 2\n"
    );
    assert_eq!(state_of(&dir), before);
    matches_its_file_list(&env, "st", &["cache", "outside-link", "state.json"]);
    assert!(backups(&env, "st").is_empty(), "nothing was overwritten");
    fs::write(src.join("lib/code.txt"), "code 3\n").unwrap();
    env.install_with(&src, &["--force"])
        .stdout_has("carried over:");
    assert_eq!(
        fs::read_to_string(dir.join("lib/code.txt")).unwrap(),
        "code 3\n"
    );
    assert_eq!(state_of(&dir), before);
    let json = env.install_with(&src, &["--force", "--json"]).json();
    let carried: Vec<_> = json["carry_over"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["path"].as_str().unwrap().to_string(),
                i["action"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert!(
        carried.contains(&("state.json".into(), "carry".into())),
        "{carried:?}"
    );
    assert_eq!(state_of(&dir), before);
}

#[test]
fn state_survives_a_git_update() {
    let env = Env::new();
    let tmp = tempfile::tempdir().unwrap();
    let root = fs::canonicalize(tmp.path()).unwrap().join("srv");
    let repo = Repo::with_files(
        &root,
        "gs",
        &[
            ("extension.json", &manifest("gs")),
            ("run.sh", "#!/bin/sh\n"),
        ],
    );
    let daemon = GitDaemon::start(&root);
    env.install(daemon.url("gs"));
    let dir = env.global_root().join("gs");
    write_state(&dir);
    let before = state_of(&dir);
    repo.commit(&[("rev.txt", "two\n")]);
    env.zot(["ext", "update", "gs"]).ok();
    assert_eq!(fs::read_to_string(dir.join("rev.txt")).unwrap(), "two\n");
    assert_eq!(state_of(&dir), before);
    matches_its_file_list(&env, "gs", &["cache", "outside-link", "state.json"]);
}

#[test]
fn a_file_the_new_version_also_ships_is_saved_and_reported() {
    let env = Env::new();
    let (src, dir) = installed_from_folder(&env, "clash");
    fs::write(dir.join("notes.txt"), "mine\n").unwrap();
    fs::write(src.join("notes.txt"), "theirs\n").unwrap();
    let done = env.zot(["ext", "update", "clash"]).ok();
    let saved = backups(&env, "clash");
    assert_eq!(saved.len(), 1);
    done.stdout_has("replaced and saved (the new version ships them): notes.txt")
        .stdout_has(&format!("saved to {}", saved[0].display()));
    assert_eq!(
        fs::read_to_string(dir.join("notes.txt")).unwrap(),
        "theirs\n"
    );
    assert_eq!(
        fs::read_to_string(saved[0].join("notes.txt")).unwrap(),
        "mine\n"
    );
    // The backup is outside the scanned folder.
    assert!(!saved[0].starts_with(env.global_root()));
}

#[test]
fn an_edited_file_is_saved_or_kept_with_keep_local() {
    let env = Env::new();
    let (src, dir) = installed_from_folder(&env, "ed");
    fs::write(dir.join("lib/code.txt"), "my fix\n").unwrap();
    fs::write(src.join("lib/code.txt"), "code 2\n").unwrap();
    env.zot(["ext", "update", "ed", "--keep-local"])
        .ok()
        .stdout_has("kept local edits: lib/code.txt");
    assert_eq!(
        fs::read_to_string(dir.join("lib/code.txt")).unwrap(),
        "my fix\n"
    );
    assert!(backups(&env, "ed").is_empty());
    fs::write(src.join("lib/code.txt"), "code 3\n").unwrap();
    env.zot(["ext", "update", "ed"])
        .ok()
        .stdout_has("overwritten and saved (edited since install): lib/code.txt");
    assert_eq!(
        fs::read_to_string(dir.join("lib/code.txt")).unwrap(),
        "code 3\n"
    );
    let saved = backups(&env, "ed");
    assert_eq!(
        fs::read_to_string(saved[0].join("lib/code.txt")).unwrap(),
        "my fix\n"
    );
    matches_its_file_list(&env, "ed", &[]);
}

#[test]
fn disabled_stays_disabled_across_updates_and_enable_turns_it_on() {
    let env = Env::new();
    let (src, dir) = installed_from_folder(&env, "off");
    env.zot(["ext", "disable", "off"]).ok();
    fs::write(src.join("lib/code.txt"), "code 2\n").unwrap();
    let done = env.zot(["ext", "update", "off"]).ok();
    assert!(!enabled(&dir), "{}", done.stdout);
    assert!(
        backups(&env, "off").is_empty(),
        "a toggled manifest is no local edit"
    );
    // The manifest is the source's, with only `enabled` changed.
    let want = fs::read_to_string(src.join("extension.json"))
        .unwrap()
        .replace("\"enabled\": true", "\"enabled\": false");
    assert_eq!(
        fs::read_to_string(dir.join("extension.json")).unwrap(),
        want
    );
    env.install_with(&src, &["--force"]);
    assert!(!enabled(&dir));
    env.zot(["ext", "update", "off", "--enable"]).ok();
    assert!(enabled(&dir));
    env.install_with(&src, &["--force", "--disable"]);
    assert!(!enabled(&dir));
    matches_its_file_list(&env, "off", &[]);

    // A git install.
    let tmp = tempfile::tempdir().unwrap();
    let root = fs::canonicalize(tmp.path()).unwrap().join("srv");
    let repo = Repo::with_files(
        &root,
        "goff",
        &[
            ("extension.json", &manifest("goff")),
            ("run.sh", "#!/bin/sh\n"),
        ],
    );
    let daemon = GitDaemon::start(&root);
    env.install(daemon.url("goff"));
    env.zot(["ext", "disable", "goff"]).ok();
    repo.commit(&[("rev.txt", "two\n")]);
    env.zot(["ext", "update", "goff"]).ok();
    let gdir = env.global_root().join("goff");
    assert!(!enabled(&gdir));
    assert_eq!(fs::read_to_string(gdir.join("rev.txt")).unwrap(), "two\n");
    repo.commit(&[("rev.txt", "three\n")]);
    env.zot(["ext", "update", "goff", "--enable"]).ok();
    assert!(enabled(&gdir));
}

#[test]
fn an_install_without_a_file_list_is_saved_whole() {
    let env = Env::new();
    let (src, dir) = installed_from_folder(&env, "old");
    fs::remove_file(env.home.join(".ext-store/files/old.json")).unwrap();
    fs::write(dir.join("state.json"), "s").unwrap();
    fs::write(dir.join("lib/code.txt"), "edited\n").unwrap();
    fs::write(src.join("lib/code.txt"), "code 2\n").unwrap();
    let done = env.zot(["ext", "update", "old"]).ok();
    let saved = backups(&env, "old");
    assert_eq!(saved.len(), 1);
    done.stdout_has("the whole old copy was saved")
        .stdout_has(&saved[0].display().to_string());
    assert_eq!(
        fs::read_to_string(saved[0].join("lib/code.txt")).unwrap(),
        "edited\n"
    );
    assert_eq!(
        fs::read_to_string(saved[0].join("state.json")).unwrap(),
        "s"
    );
    assert!(saved[0].join("extension.json").exists());
    assert_eq!(
        fs::read_to_string(dir.join("lib/code.txt")).unwrap(),
        "code 2\n"
    );
    assert_eq!(fs::read_to_string(dir.join("state.json")).unwrap(), "s");
    // From now on it has a file list.
    matches_its_file_list(&env, "old", &["state.json"]);
}

#[test]
fn backups_rotate_at_three_and_info_lists_them() {
    let env = Env::new();
    let (src, dir) = installed_from_folder(&env, "rot");
    for i in 0..5 {
        fs::write(dir.join("lib/code.txt"), format!("edit {i}\n")).unwrap();
        fs::write(src.join("lib/code.txt"), format!("code {i}\n")).unwrap();
        env.zot(["ext", "update", "rot"]).ok();
        // Backups are named by the second; never two in one.
        std::thread::sleep(Duration::from_millis(1100));
    }
    let saved = backups(&env, "rot");
    assert_eq!(saved.len(), 3, "{saved:?}");
    let kept: Vec<String> = saved
        .iter()
        .map(|b| fs::read_to_string(b.join("lib/code.txt")).unwrap())
        .collect();
    assert_eq!(kept, ["edit 2\n", "edit 3\n", "edit 4\n"]);
    let info = env.zot(["ext", "info", "rot"]).ok();
    for b in &saved {
        info.stdout_has(&b.display().to_string());
    }
    info.stdout_has("backups:")
        .stdout_has("tree hash:   sha256:");
    let json = env.zot(["ext", "info", "rot", "--json"]).ok().json();
    let listed: Vec<_> = json["copies"][0]["backups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| PathBuf::from(b.as_str().unwrap()))
        .collect();
    assert_eq!(listed, saved);
    assert!(
        json["copies"][0]["tree_hash"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );
}

#[test]
fn dry_run_changes_nothing_and_lists_the_plan() {
    let env = Env::new();
    let (src, dir) = installed_from_folder(&env, "dry");
    write_state(&dir);
    fs::write(dir.join("lib/code.txt"), "edited\n").unwrap();
    fs::write(dir.join("notes.txt"), "mine\n").unwrap();
    fs::write(src.join("notes.txt"), "theirs\n").unwrap();
    fs::write(src.join("lib/code.txt"), "code 2\n").unwrap();
    env.zot(["ext", "disable", "dry"]).ok();
    let before = env.snapshot();
    let plan = env.zot(["ext", "update", "dry", "--dry-run"]).ok();
    for want in [
        "would carry over: cache/, outside-link, state.json",
        "would replace and save (the new version ships them): notes.txt",
        "would overwrite and save (edited since install): lib/code.txt",
        "would keep disabled",
    ] {
        plan.stdout_has(want);
    }
    let json = env
        .zot(["ext", "update", "dry", "--dry-run", "--json"])
        .ok()
        .extensions();
    let plan = &json[0]["carry_over"];
    assert_eq!(plan["enabled"], false);
    let actions: Vec<(String, String)> = plan["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["path"].as_str().unwrap().into(),
                i["action"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(
        actions,
        [
            ("cache/".to_string(), "carry".to_string()),
            ("lib/code.txt".into(), "save-edited".into()),
            ("notes.txt".into(), "save-replaced".into()),
            ("outside-link".into(), "carry".into()),
            ("state.json".into(), "carry".into()),
        ]
    );
    let keep = env
        .zot([
            "ext",
            "update",
            "dry",
            "--dry-run",
            "--keep-local",
            "--json",
        ])
        .ok()
        .extensions();
    assert!(
        keep[0]["carry_over"]["items"]
            .to_string()
            .contains("keep-local")
    );
    assert_eq!(env.snapshot(), before);
}

/// Versions 1 and 2 of a folder source with enough files that an update takes a while.
fn big_source(dir: &Path, version: &str) {
    fs::create_dir_all(dir.join("lib")).unwrap();
    fs::write(dir.join("extension.json"), versioned("kill", version)).unwrap();
    write_executable(&dir.join("run.sh"), "#!/bin/sh\n");
    for i in 0..300 {
        fs::write(
            dir.join(format!("lib/f{i}.txt")),
            format!("{version} {i}\n").repeat(50),
        )
        .unwrap();
    }
}

fn copy_dir(from: &Path, to: &Path) {
    let _ = fs::remove_dir_all(to);
    let ok = std::process::Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .status()
        .unwrap()
        .success();
    assert!(ok);
}

/// Runs `zot ext update kill`, which dies at the crash point `point` or is killed after
/// `wait`, and returns how it ended.
fn update_killed(env: &Env, point: Option<&str>, wait: Option<Duration>) -> ExitStatus {
    let mut cmd = env.zot(["ext", "update", "kill"]).cmd;
    if let Some(point) = point {
        cmd.env("ZOT_EXT_CRASH_AT", point);
    }
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    if let Some(wait) = wait {
        std::thread::sleep(wait);
        let _ = child.kill();
    }
    child.wait().unwrap()
}

/// After a killed update of `kill`: the tree is one `expect` allows at any instant, the next
/// command settles it (record and file list match the tree), and an update then leaves what
/// `settled_new` expects. Returns the label of the version the kill left. `replay` starts
/// every failure message.
fn check_after_kill(env: &Env, expect: &Expect, settled_new: &Expect, replay: &str) -> String {
    let checker = Checker { env, expect };
    let (violations, found) = checker.at_any_instant();
    assert!(violations.is_empty(), "{replay}: {violations:?}");
    let label = found
        .get(&(Scope::Global, "kill".to_string()))
        .cloned()
        .flatten()
        .unwrap_or_default();
    // The next command finishes the journal; the record and file list match the tree.
    env.zot(["ext", "list"]).ok();
    let violations = checker.settled();
    assert!(violations.is_empty(), "{replay}: {violations:?}");
    matches_its_file_list(env, "kill", &["cache", "outside-link", "state.json"]);
    env.zot(["ext", "update", "kill"]).ok();
    let violations = Checker {
        env,
        expect: settled_new,
    }
    .settled();
    assert!(violations.is_empty(), "{replay}: {violations:?}");
    label
}

#[test]
fn kill_9_during_an_update_with_state_leaves_old_or_new_with_the_state() {
    let torture = Torture::from_env();
    let test = "carry_over::kill_9_during_an_update_with_state_leaves_old_or_new_with_the_state";
    let mut rng = torture.rng(test);
    let env = Env::new();
    let (v1, v2, src) = (
        env.work.join("v1"),
        env.work.join("v2"),
        env.work.join("kill"),
    );
    big_source(&v1, "1.0.0");
    big_source(&v2, "2.0.0");
    copy_dir(&v1, &src);
    let dir = env.global_root().join("kill");
    env.install(&src);
    write_state(&dir);
    let record = RecordId {
        source: src.display().to_string(),
        commit: None,
    };
    let old = Version {
        label: "old+state".into(),
        tree: capture(&dir),
        record: Some(record.clone()),
    };
    copy_dir(&v2, &src);
    let started = Instant::now();
    env.zot(["ext", "update", "kill"]).ok();
    let mut span = started.elapsed();
    let new = Version {
        label: "new+state".into(),
        tree: capture(&dir),
        record: Some(record),
    };
    let mut expect = Expect::default();
    expect.allow(Scope::Global, "kill", &old);
    expect.allow(Scope::Global, "kill", &new);
    let mut settled_new = Expect::default();
    settled_new.allow(Scope::Global, "kill", &new);
    let points = REPLACE_POINTS;
    let (mut kills, mut left) = (0, std::collections::BTreeMap::<String, usize>::new());
    // Random kills until this many landed (a kill after the run finished does not count).
    let wanted = if torture.long { 200 } else { 20 };
    let mut round = 0;
    while kills < wanted + points.len() && round < 10 * wanted {
        round += 1;
        let round = round - 1;
        // Back to the old version with its state.
        copy_dir(&v1, &src);
        env.install_with(&src, &["--force", "--enable"]);
        assert_eq!(capture(&dir), old.tree, "round {round}: the reset");
        copy_dir(&v2, &src);
        let wait = (round >= points.len()).then(|| span.mul_f64(rng.fraction() * 0.85));
        let status = update_killed(&env, points.get(round).copied(), wait);
        if status.code().is_none() {
            kills += 1;
        } else if round >= points.len() {
            // The update finished before the kill: a loaded machine made the first measure
            // too long, so aim earlier from now on.
            span = span.mul_f64(0.7);
        }
        let replay = format!("round {round} ({})", torture.replay(test));
        let label = check_after_kill(&env, &expect, &settled_new, &replay);
        *left.entry(label).or_default() += 1;
    }
    eprintln!(
        "{test}: {kills} kills, leaving {left:?} ({})",
        torture.replay(test)
    );
    assert!(kills >= 20 + points.len(), "only {kills} kills landed");
}

#[test]
fn hello_py_keeps_its_count_across_update_and_force() {
    if std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("skipped: no python3");
        return;
    }
    let env = Env::new();
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/extensions/hello-py");
    let src = env.work.join("hello-py");
    copy_dir(&examples, &src);
    env.install(&src);
    let call = || {
        env.zot(["ext", "call", "hello-py", "/hellocount"])
            .ok()
            .stdout
    };
    assert_eq!(call(), "display: greetings so far: 1\n");
    assert!(env.global_root().join("hello-py/state.json").exists());
    let manifest = src.join("extension.json");
    let text = fs::read_to_string(&manifest)
        .unwrap()
        .replace("1.0.0", "1.0.1");
    fs::write(&manifest, text).unwrap();
    env.zot(["ext", "update", "hello-py"])
        .ok()
        .stdout_has("carried over: state.json");
    assert_eq!(call(), "display: greetings so far: 2\n");
    env.install_with(&src, &["--force"]);
    assert_eq!(call(), "display: greetings so far: 3\n");
}
