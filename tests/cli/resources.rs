//! Resource failures: a full disk (a small tmpfs mounted as `ZOT_HOME`; skipped with a note
//! when the tests cannot mount), read-only roots and extension folders, unreadable sources
//! and permission-denied logs (run as `nobody` through setpriv when the tests run as
//! root). Each asserts one clear error line naming the path, an unchanged store and an
//! empty staging folder.

use std::ffi::OsString;
use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::support::Done;
use crate::support::git_servers::Repo;
use crate::support::hostile::{Prepared, Snapshot, Tmpfs, World, entries, ext, incompressible};
use crate::support::manifest;

/// Runs `prepared` and checks the refusal: exit 1, one `error:` line, every one of `says`
/// in the output, nothing changed on disk, staging and trash empty in both scopes.
fn refused(w: &World, prepared: &Prepared, says: &[&str]) -> Done {
    let before = w.snapshot();
    let done = w.run(prepared);
    let after = w.snapshot();
    done.failure(1);
    done.stderr_one_line();
    assert!(done.stderr.starts_with("error: "), "{done:#?}");
    for word in says {
        // `update` reports each extension's failure on stdout and sums up on stderr.
        let said = done.stderr.contains(word) || done.stdout.contains(word);
        assert!(said, "expected {word:?} in {done:#?}");
    }
    let diff = before.diff(&after);
    assert!(diff.is_empty(), "changed on disk:\n{}", diff.join("\n"));
    assert_emptied(w);
    done
}

/// The failure says the disk is full (ENOSPC), wherever `update` put it.
fn assert_no_space(done: &Done) {
    let output = format!("{}{}", done.stdout, done.stderr).to_lowercase();
    assert!(output.contains("no space left"), "{done:#?}");
}

fn assert_emptied(w: &World) {
    for state in [w.global_state(), w.project_state()] {
        for sub in ["staging", "trash"] {
            let left = entries(&state.join(sub));
            assert!(
                left.is_empty(),
                "{sub} of {} holds {left:?}",
                state.display()
            );
        }
    }
}

fn chmod(path: &Path, mode: u32) {
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
}

/// A world whose `ZOT_HOME` is a tmpfs of `size`, populated; None when mounting is not possible.
fn on_small_disk(size: &str) -> Option<(Tmpfs, World)> {
    let world = World::empty();
    let disk = Tmpfs::mount(&world.env.home, size)?;
    world.populate();
    Some((disk, world))
}

/// A source `work/<dir>` named `name` holding `big.bin` of `len` incompressible bytes.
fn big_source(w: &World, dir: &str, name: &str, len: usize) -> std::path::PathBuf {
    let src = w.env.source(dir, name);
    fs::write(src.join("big.bin"), incompressible(len)).unwrap();
    src
}

/// Fills the tmpfs with `filler` until a write fails with "no space left".
fn fill(disk: &Tmpfs, filler: &Path) {
    let mut file = fs::File::create(filler).unwrap();
    let chunk = incompressible(64 << 10);
    while file.write_all(&chunk).is_ok() {}
    let _ = file.sync_all();
    let _ = disk.free();
}

// ---- disk full ---------------------------------------------------------------------------

#[test]
fn install_larger_than_the_free_space() {
    let Some((disk, w)) = on_small_disk("3m") else {
        return;
    };
    let src = big_source(&w, "big", "big", disk.free() as usize + (1 << 20));
    let done = refused(&w, &install(&src), &["big.bin"]);
    assert_no_space(&done);
}

#[test]
fn install_force_on_a_full_disk_keeps_the_old_copy() {
    let Some((disk, w)) = on_small_disk("3m") else {
        return;
    };
    let src = big_source(&w, "big", "existing", disk.free() as usize + (1 << 20));
    let done = refused(&w, &install(&src).with_arg("--force"), &["big.bin"]);
    assert_no_space(&done);
    assert!(
        w.env
            .global_root()
            .join("existing/extension.json")
            .is_file()
    );
}

#[test]
fn update_when_full() {
    let Some((disk, w)) = on_small_disk("3m") else {
        return;
    };
    let repos = w.env.work.join("repos");
    fs::create_dir_all(&repos).unwrap();
    let repo = Repo::with_files(
        &repos,
        "grow",
        &[
            ("extension.json", &manifest("grow")),
            ("run.sh", "#!/bin/sh\n"),
        ],
    );
    let url = format!("file://{}/grow.git", repos.display());
    w.zot(&["install", &url]).success();
    let big = incompressible(disk.free() as usize + (1 << 20));
    repo.commit_with("grow", |dir| fs::write(dir.join("big.bin"), &big).unwrap());
    let done = refused(&w, &ext(["update", "grow"]), &["grow"]);
    assert_no_space(&done);
}

#[test]
fn disable_on_a_full_disk() {
    let Some((disk, w)) = on_small_disk("2m") else {
        return;
    };
    fill(&disk, &w.env.home.join("filler"));
    let done = refused(&w, &ext(["disable", "existing"]), &["existing"]);
    assert_no_space(&done);
}

#[test]
fn enable_on_a_full_disk() {
    let Some((disk, w)) = on_small_disk("2m") else {
        return;
    };
    assert_eq!(w.zot(&["disable", "existing"]).code, 0);
    fill(&disk, &w.env.home.join("filler"));
    let done = refused(&w, &ext(["enable", "existing"]), &["existing"]);
    assert_no_space(&done);
}

#[test]
fn install_when_full() {
    let Some((disk, w)) = on_small_disk("2m") else {
        return;
    };
    fill(&disk, &w.env.home.join("filler"));
    let src = w.env.source("tiny", "tiny");
    let done = refused(&w, &install(&src), &[]);
    assert_no_space(&done);
}

// ---- another filesystem -----------------------------------------------------------------

/// `$ZOT_HOME/extensions` is a link (the user's own setup, used as it is) to a folder on
/// another filesystem, where nothing can be renamed into place from `.ext-store/staging`:
/// install, install --force and remove say so and what to do, not "cross-device link".
#[test]
fn an_extensions_folder_on_another_filesystem_is_explained() {
    let w = World::empty();
    let elsewhere = w.env.work.join("elsewhere");
    fs::create_dir_all(&elsewhere).unwrap();
    let Some(_disk) = Tmpfs::mount(&elsewhere, "4m") else {
        return;
    };
    std::os::unix::fs::symlink(&elsewhere, w.env.global_root()).unwrap();
    let src = w.env.source("src-x", "x");
    // The first run makes the state folder; the store is unchanged from then on.
    assert_eq!(w.zot(&["install", src.to_str().unwrap()]).code, 1);
    refused(&w, &install(&src), &["another filesystem", "extensions"]).stderr_lacks("os error 18");
    // Something placed there by hand can be neither replaced nor removed.
    fs::create_dir_all(elsewhere.join("x")).unwrap();
    fs::write(elsewhere.join("x/extension.json"), manifest("x")).unwrap();
    refused(
        &w,
        &install(&src).with_arg("--force"),
        &["another filesystem"],
    );
    refused(&w, &ext(["remove", "x", "--yes"]), &["another filesystem"]);
}

// ---- read-only folders (as nobody) ---------------------------------------------------------

/// `zot ext install <path>`.
fn install(path: &Path) -> Prepared {
    ext([OsString::from("install"), path.as_os_str().to_owned()])
}

/// Installs a new source `x` as `nobody`, in a world opened to everyone (lock folders after).
fn install_x(w: &World) -> Prepared {
    let src = w.env.source("src-x", "x");
    w.env.open_to_everyone();
    install(&src).unprivileged()
}

/// A populated world the unprivileged user may write everywhere, then `lock` applied.
fn opened(lock: impl FnOnce(&World)) -> World {
    let w = World::new();
    w.env.open_to_everyone();
    lock(&w);
    w
}

#[test]
fn install_when_the_state_folder_cannot_be_created() {
    let w = World::empty();
    let prepared = install_x(&w);
    chmod(&w.env.home, 0o555);
    refused(&w, &prepared, &["zot-home", "ermission denied"]);
}

#[test]
fn install_into_a_read_only_global_root() {
    let w = World::new();
    let prepared = install_x(&w);
    chmod(&w.env.global_root(), 0o555);
    refused(&w, &prepared, &["extensions", "ermission denied"]);
}

#[test]
fn install_into_a_read_only_project_root() {
    let w = World::new();
    let prepared = install_x(&w).with_arg("--project");
    chmod(&w.env.project_root(), 0o555);
    refused(&w, &prepared, &[".zot/extensions", "ermission denied"]);
}

#[test]
fn remove_from_a_read_only_global_root() {
    let w = opened(|w| chmod(&w.env.global_root(), 0o555));
    refused(
        &w,
        &ext(["remove", "existing", "--yes"]).unprivileged(),
        &["extensions", "ermission denied"],
    );
}

#[test]
fn disable_in_a_read_only_extension_folder() {
    let w = opened(|w| chmod(&w.env.global_root().join("existing"), 0o555));
    refused(
        &w,
        &ext(["disable", "existing"]).unprivileged(),
        &["extensions/existing", "ermission denied"],
    );
}

#[test]
fn enable_in_a_read_only_extension_folder() {
    let w = World::new();
    assert_eq!(w.zot(&["disable", "existing"]).code, 0);
    w.env.open_to_everyone();
    chmod(&w.env.global_root().join("existing"), 0o555);
    refused(
        &w,
        &ext(["enable", "existing"]).unprivileged(),
        &["extensions/existing", "ermission denied"],
    );
}

#[test]
fn install_with_a_read_only_staging_folder() {
    let w = World::new();
    let prepared = install_x(&w);
    chmod(&w.global_state().join("staging"), 0o555);
    refused(&w, &prepared, &["staging", "ermission denied"]);
}

#[test]
fn install_with_a_read_only_records_folder() {
    let w = World::new();
    let prepared = install_x(&w);
    chmod(&w.global_state().join("sources"), 0o555);
    refused(&w, &prepared, &["sources", "ermission denied"]);
}

#[test]
fn remove_with_a_read_only_records_folder() {
    let w = opened(|w| chmod(&w.global_state().join("sources"), 0o555));
    assert!(w.global_state().join("sources/existing.json").is_file());
    refused(
        &w,
        &ext(["remove", "existing", "--yes"]).unprivileged(),
        &["sources", "ermission denied"],
    );
}

// ---- unreadable input and logs ----------------------------------------------------------

#[test]
fn update_from_a_source_with_an_unreadable_file() {
    let w = World::new();
    let src = w.env.work.join("src-existing");
    fs::write(src.join("secret.key"), "k").unwrap();
    w.env.open_to_everyone();
    chmod(&src.join("secret.key"), 0o000);
    refused(
        &w,
        &ext(["update", "existing"]).unprivileged(),
        &["secret.key", "ermission denied"],
    );
}

#[test]
fn logs_with_an_unreadable_log() {
    let w = World::new();
    fs::create_dir_all(w.env.home.join("logs")).unwrap();
    fs::write(w.log("existing"), "secret line\n").unwrap();
    w.env.open_to_everyone();
    chmod(&w.log("existing"), 0o000);
    refused(
        &w,
        &ext(["logs", "existing"]).unprivileged(),
        &["ext-existing.log", "ermission denied"],
    )
    .stdout_is("");
}

#[test]
fn logs_with_an_unreadable_logs_folder() {
    let w = World::new();
    fs::create_dir_all(w.env.home.join("logs")).unwrap();
    fs::write(w.log("existing"), "secret line\n").unwrap();
    w.env.open_to_everyone();
    chmod(&w.env.home.join("logs"), 0o000);
    refused(
        &w,
        &ext(["logs", "existing", "-n", "1"]).unprivileged(),
        &["ext-existing.log", "ermission denied"],
    )
    .stdout_is("");
}

/// The snapshot itself must see modes (a chmod is a change).
#[test]
fn the_snapshot_sees_modes_links_and_special_files() {
    let w = World::new();
    let before = w.snapshot();
    chmod(&w.env.global_root().join("existing/run.sh"), 0o644);
    let after = w.snapshot();
    assert_eq!(before.diff(&after).len(), 1, "{:?}", before.diff(&after));
    crate::support::hostile::mkfifo(&w.victim.join("pipe"));
    std::os::unix::fs::symlink("x", w.victim.join("l")).unwrap();
    let later = Snapshot::of(w.base());
    let diff = after.diff(&later);
    assert!(
        diff.iter().any(|d| d.contains("victim/pipe (fifo)")),
        "{diff:?}"
    );
    assert!(
        diff.iter().any(|d| d.contains("victim/l (link)")),
        "{diff:?}"
    );
}

// ---- what still works on a full disk -------------------------------------------------------

#[test]
fn remove_on_a_full_disk() {
    let Some((disk, w)) = on_small_disk("2m") else {
        return;
    };
    fill(&disk, &w.env.home.join("filler"));
    w.run(&ext(["remove", "existing", "--yes"])).success();
    assert!(!w.env.global_root().join("existing").exists());
    assert_emptied(&w);
}

#[test]
fn list_on_a_full_disk() {
    let Some((disk, w)) = on_small_disk("2m") else {
        return;
    };
    fill(&disk, &w.env.home.join("filler"));
    let before = w.snapshot();
    w.run(&ext(["list"])).success().stdout_has("existing");
    assert_eq!(before.diff(&w.snapshot()), Vec::<String>::new());
}

#[test]
fn git_install_larger_than_the_free_space() {
    let Some((disk, w)) = on_small_disk("3m") else {
        return;
    };
    let repos = w.env.work.join("repos");
    fs::create_dir_all(&repos).unwrap();
    let big = incompressible(disk.free() as usize + (1 << 20));
    let repo = Repo::with_files(&repos, "big", &[("extension.json", &manifest("big"))]);
    repo.commit_with("big", |dir| fs::write(dir.join("big.bin"), &big).unwrap());
    let url = format!("file://{}/big.git", repos.display());
    let done = refused(&w, &ext(["install", url.as_str()]), &["big.git"]);
    assert_no_space(&done);
}

#[test]
fn update_into_a_read_only_global_root() {
    let w = World::new();
    let src = w.env.work.join("src-existing");
    fs::write(src.join("new.txt"), "new").unwrap();
    w.env.open_to_everyone();
    chmod(&w.env.global_root(), 0o555);
    refused(
        &w,
        &ext(["update", "existing"]).unprivileged(),
        &["extensions", "ermission denied"],
    );
}

#[test]
fn follow_an_unreadable_log() {
    let w = World::new();
    fs::create_dir_all(w.env.home.join("logs")).unwrap();
    fs::write(w.log("existing"), "secret line\n").unwrap();
    w.env.open_to_everyone();
    chmod(&w.log("existing"), 0o000);
    refused(
        &w,
        &ext(["logs", "existing", "-f"]).unprivileged(),
        &["ext-existing.log", "ermission denied"],
    )
    .stdout_is("");
}
