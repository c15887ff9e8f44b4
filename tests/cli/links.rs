//! Symbolic links in extension trees: kept as links whatever they point to (outside, nowhere,
//! in circles), never followed, listed after install and update and by `info`; special files
//! still refused. Ends with the venv-based Python example, installed and run.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::git_install::bounded;
use crate::support::extensions::examples;
use crate::support::git_servers::Repo;
use crate::support::{Done, Env};

/// Runs `zot` with a time limit: a command that blocks on a pipe or device fails the test.
fn zot(env: &Env, args: &[&str]) -> Done {
    bounded(env.zot(args), args)
}

fn zot_ok(env: &Env, args: &[&str]) -> Done {
    let done = zot(env, args);
    assert_eq!(done.code, 0, "expected success of {args:?}:\n{done:#?}");
    done
}

/// A source `work/<name>` with a valid manifest and the links `(path, target)`.
fn source_with_links(env: &Env, name: &str, links: &[(&str, &str)]) -> PathBuf {
    let src = env.source(name, name);
    for (path, target) in links {
        let path = src.join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        symlink(target, path).unwrap();
    }
    src
}

fn installed(env: &Env, name: &str) -> PathBuf {
    env.global_root().join(name)
}

fn link_of(path: &Path) -> String {
    fs::read_link(path).unwrap().display().to_string()
}

/// `(path, target, leads)` of each element of an `outside_links` JSON array.
fn listed(links: &Value) -> Vec<(String, String, String)> {
    links
        .as_array()
        .unwrap_or_else(|| panic!("not a list: {links}"))
        .iter()
        .map(|l| {
            let text = |k: &str| l[k].as_str().unwrap().to_string();
            (text("path"), text("target"), text("leads"))
        })
        .collect()
}

fn triple(path: &str, target: &str, leads: &str) -> (String, String, String) {
    (path.into(), target.into(), leads.into())
}

fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(status.success());
}

/// Installs a source holding one link and checks it is copied as it is and reported.
fn kept(target: &str, leads: &str) {
    let env = Env::new();
    let src = source_with_links(&env, "ext", &[("lib/l", target)]);
    let out = zot_ok(&env, &["ext", "install", "--json", src.to_str().unwrap()]).json();
    assert_eq!(link_of(&installed(&env, "ext").join("lib/l")), target);
    assert_eq!(
        listed(&out["outside_links"]),
        [triple("lib/l", target, leads)]
    );
}

#[test]
fn an_absolute_link_outside_is_kept() {
    kept("/etc/passwd", "outside");
}

#[test]
fn a_relative_link_climbing_out_is_kept() {
    kept("../../x", "outside");
}

#[test]
fn a_dangling_link_is_kept() {
    kept("missing", "nowhere");
}

#[test]
fn a_link_loop_is_kept() {
    let env = Env::new();
    let src = source_with_links(&env, "ext", &[("a", "b"), ("b", "a")]);
    let out = zot_ok(&env, &["ext", "install", "--json", src.to_str().unwrap()]).json();
    let dest = installed(&env, "ext");
    assert_eq!(
        (link_of(&dest.join("a")), link_of(&dest.join("b"))),
        ("b".into(), "a".into())
    );
    assert_eq!(
        listed(&out["outside_links"]),
        [triple("a", "b", "loop"), triple("b", "a", "loop")]
    );
}

#[test]
fn links_inside_are_not_listed() {
    let env = Env::new();
    let src = source_with_links(&env, "ext", &[("start", "run.sh"), ("bin/up", "..")]);
    let done = zot_ok(&env, &["ext", "install", src.to_str().unwrap()]);
    assert!(!done.stderr.contains("kept"), "{}", done.stderr);
    let out = zot_ok(
        &env,
        &["ext", "install", "--json", "--force", src.to_str().unwrap()],
    );
    assert_eq!(out.json()["outside_links"], serde_json::json!([]));
}

#[test]
fn the_note_lists_the_links_on_one_line() {
    let env = Env::new();
    let src = source_with_links(
        &env,
        "ext",
        &[
            (".venv/bin/python3", "/usr/bin/python3"),
            (".venv/bin/python", "python3"),
            ("up", "../../x"),
            ("gone", "missing"),
        ],
    );
    let done = zot_ok(&env, &["ext", "install", src.to_str().unwrap()]);
    let notes: Vec<&str> = done.stderr.lines().filter(|l| l.contains("kept")).collect();
    assert_eq!(
        notes,
        [
            "note: kept 4 links that point outside the extension or nowhere: \
          .venv/bin/python -> python3, .venv/bin/python3 -> /usr/bin/python3, \
          gone -> missing (dangling), up -> ../../x"
        ],
        "{}",
        done.stderr
    );
    assert!(
        done.stdout.starts_with("installed ext 1.0.0"),
        "{}",
        done.stdout
    );
}

#[test]
fn a_long_note_is_cut_short_and_names_are_escaped() {
    let env = Env::new();
    let mut links: Vec<(String, String)> = (0..9)
        .map(|i| (format!("l{i}"), format!("/nowhere/{i}")))
        .collect();
    links.push(("a\nerror: forged".into(), "/tmp/x\u{1b}[31m".into()));
    let pairs: Vec<(&str, &str)> = links
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let src = source_with_links(&env, "ext", &pairs);
    let done = zot_ok(&env, &["ext", "install", src.to_str().unwrap()]);
    let note = done
        .stderr
        .lines()
        .find(|l| l.starts_with("note: kept"))
        .unwrap_or_else(|| panic!("{}", done.stderr));
    assert!(
        note.starts_with(
            "note: kept 10 links that point outside the extension: \
             a\\nerror: forged -> /tmp/x\\u{1b}[31m, l0 -> /nowhere/0,"
        ),
        "{note}"
    );
    assert!(
        note.ends_with(", and 5 more (zot ext info --json ext lists them all)"),
        "{note}"
    );
    assert!(!done.stderr.contains("\nerror: forged"), "{}", done.stderr);
    let info = zot_ok(&env, &["ext", "info", "ext"]);
    assert!(
        info.stdout
            .contains("links:       10 links that point outside the extension"),
        "{}",
        info.stdout
    );
    assert!(!info.stdout.contains('\u{1b}'), "{}", info.stdout);
    let json = zot_ok(&env, &["ext", "info", "--json", "ext"]).json();
    let all = listed(&json["copies"][0]["outside_links"]);
    assert_eq!(all.len(), 10);
    assert!(all.contains(&triple("a\nerror: forged", "/tmp/x\u{1b}[31m", "outside")));
}

#[test]
fn info_lists_outside_links_in_text_and_json() {
    let env = Env::new();
    let src = source_with_links(
        &env,
        "ext",
        &[("bin/py", "/usr/bin/python3"), ("in", "run.sh")],
    );
    zot_ok(&env, &["ext", "install", src.to_str().unwrap()]);
    let text = zot_ok(&env, &["ext", "info", "ext"]).stdout;
    assert!(
        text.contains(
            "\n  links:       1 link that points outside the extension: bin/py -> /usr/bin/python3\n"
        ),
        "{text}"
    );
    let json = zot_ok(&env, &["ext", "info", "--json", "ext"]).json();
    let copy = &json["copies"][0];
    assert_eq!(
        listed(&copy["outside_links"]),
        [triple("bin/py", "/usr/bin/python3", "outside")]
    );
    assert_eq!(copy["outside_links_complete"], true);
}

#[test]
fn links_to_a_pipe_or_a_device_do_not_block_install_info_or_update() {
    let env = Env::new();
    let pipe = env.work.join("pipe");
    mkfifo(&pipe);
    let src = source_with_links(
        &env,
        "ext",
        &[("pipe", pipe.to_str().unwrap()), ("zero", "/dev/zero")],
    );
    // A link to the pipe as the program: info and doctor look at it without opening it.
    fs::write(
        src.join("extension.json"),
        r#"{"name": "ext", "exec": "./pipe"}"#,
    )
    .unwrap();
    let done = zot_ok(&env, &["ext", "install", src.to_str().unwrap()]);
    assert!(
        done.stderr.contains("note: kept 2 links"),
        "{}",
        done.stderr
    );
    let dest = installed(&env, "ext");
    assert_eq!(link_of(&dest.join("pipe")), pipe.display().to_string());
    assert_eq!(link_of(&dest.join("zero")), "/dev/zero");
    let info = zot_ok(&env, &["ext", "info", "ext"]).stdout;
    assert!(info.contains("zero -> /dev/zero"), "{info}");
    assert!(info.contains("is not a file"), "{info}");
    zot_ok(&env, &["ext", "list"]);
    zot_ok(&env, &["ext", "update", "ext"]);
    assert_eq!(link_of(&dest.join("zero")), "/dev/zero");
}

#[test]
fn remove_deletes_the_links_not_what_they_point_to() {
    let env = Env::new();
    let outside = env.work.join("precious");
    fs::create_dir_all(outside.join("sub")).unwrap();
    fs::write(outside.join("sub/data"), "keep me").unwrap();
    fs::write(env.work.join("file"), "keep me too").unwrap();
    let src = source_with_links(
        &env,
        "ext",
        &[
            ("dir", outside.to_str().unwrap()),
            ("deep/file", "../../file"),
        ],
    );
    zot_ok(&env, &["ext", "install", src.to_str().unwrap()]);
    assert_eq!(
        fs::read_to_string(installed(&env, "ext").join("dir/sub/data")).unwrap(),
        "keep me"
    );
    zot_ok(&env, &["ext", "remove", "--yes", "ext"]);
    assert!(!installed(&env, "ext").exists());
    assert_eq!(
        fs::read_to_string(outside.join("sub/data")).unwrap(),
        "keep me"
    );
    assert_eq!(
        fs::read_to_string(env.work.join("file")).unwrap(),
        "keep me too"
    );
}

#[test]
fn update_keeps_the_links_and_reports_them() {
    let env = Env::new();
    let src = source_with_links(&env, "ext", &[("py", "/usr/bin/python3")]);
    zot_ok(&env, &["ext", "install", src.to_str().unwrap()]);
    symlink("gone", src.join("dangling")).unwrap();
    let dry = zot_ok(&env, &["ext", "update", "--dry-run", "ext"]);
    assert!(!dry.stderr.contains("kept"), "{}", dry.stderr);
    let dry = zot_ok(&env, &["ext", "update", "--dry-run", "--json", "ext"]).extensions();
    assert_eq!(dry[0]["status"], "would-update");
    assert_eq!(dry[0]["outside_links"].as_array().unwrap().len(), 2);
    let done = zot_ok(&env, &["ext", "update", "ext"]);
    assert!(
        done.stdout.starts_with("updated ext (global)"),
        "{}",
        done.stdout
    );
    assert!(
        done.stderr.contains(
            "note: ext: kept 2 links that point outside the extension or nowhere: \
             dangling -> gone (dangling), py -> /usr/bin/python3"
        ),
        "{}",
        done.stderr
    );
    let dest = installed(&env, "ext");
    assert_eq!(link_of(&dest.join("py")), "/usr/bin/python3");
    assert_eq!(link_of(&dest.join("dangling")), "gone");
    fs::write(src.join("changed"), "x").unwrap();
    let out = zot_ok(&env, &["ext", "update", "--json", "ext"]).extensions();
    assert_eq!(out[0]["status"], "updated");
    assert_eq!(
        listed(&out[0]["outside_links"]),
        [
            triple("dangling", "gone", "nowhere"),
            triple("py", "/usr/bin/python3", "outside")
        ]
    );
}

#[test]
fn git_checkouts_keep_links_as_stored() {
    let env = Env::new();
    let tmp = tempfile::tempdir().unwrap();
    let root = fs::canonicalize(tmp.path()).unwrap();
    let src = source_with_links(
        &env,
        "linky",
        &[
            ("passwd", "/etc/passwd"),
            ("up", "../../../../../../etc/passwd"),
            ("start", "run.sh"),
        ],
    );
    let repo = Repo::from_dir(&root, "linky", &src);
    let url = repo.bare.display().to_string();
    let done = zot_ok(&env, &["ext", "install", &url]);
    assert!(
        done.stderr.contains(
            "note: kept 2 links that point outside the extension: passwd -> /etc/passwd, up -> ../../../../../../etc/passwd"
        ),
        "{}",
        done.stderr
    );
    let dest = installed(&env, "linky");
    assert_eq!(link_of(&dest.join("passwd")), "/etc/passwd");
    assert_eq!(link_of(&dest.join("start")), "run.sh");
}

#[test]
fn special_files_are_still_refused() {
    let env = Env::new();
    let src = env.source("ext", "ext");
    let _socket = std::os::unix::net::UnixListener::bind(src.join("sock")).unwrap();
    let done = zot(&env, &["ext", "install", src.to_str().unwrap()]);
    assert_eq!(done.code, 1, "{done:#?}");
    assert!(
        done.stderr.contains("sock is a special file (a socket)"),
        "{}",
        done.stderr
    );
    assert_eq!(env.installed_names(), Vec::<String>::new());
    fs::remove_file(src.join("sock")).unwrap();
    mkfifo(&src.join("lib-pipe"));
    let done = zot(&env, &["ext", "install", src.to_str().unwrap()]);
    assert_eq!(done.code, 1, "{done:#?}");
    assert!(
        done.stderr
            .contains("lib-pipe is a special file (a named pipe)")
    );
}

#[test]
fn a_manifest_that_is_a_dangling_link_is_refused() {
    let env = Env::new();
    let src = env.work.join("ext");
    fs::create_dir_all(&src).unwrap();
    symlink("gone.json", src.join("extension.json")).unwrap();
    let done = zot(&env, &["ext", "install", src.to_str().unwrap()]);
    assert_eq!(done.code, 1, "{done:#?}");
    assert_eq!(done.stderr.lines().count(), 1, "{}", done.stderr);
    assert!(done.stderr.contains("extension.json"), "{}", done.stderr);
    assert_eq!(env.installed_names(), Vec::<String>::new());
}

// ---------------------------------------------------------------------------------------------
// The venv-based Python example

/// A copy of examples/extensions/hello-venv with a fresh virtual environment in it, or None
/// (with a message) when this python3 cannot make one.
fn venv_example(env: &Env) -> Option<PathBuf> {
    let src = env.work.join("hello-venv");
    fs::create_dir_all(&src).unwrap();
    for file in ["extension.json", "hello_venv.py", "README.md"] {
        fs::copy(examples().join("hello-venv").join(file), src.join(file)).unwrap();
    }
    let made = Command::new("python3")
        .args(["-m", "venv", "--without-pip", ".venv"])
        .current_dir(&src)
        .output();
    match made {
        Ok(out) if out.status.success() => Some(src),
        other => {
            eprintln!("skipping the venv example: python3 -m venv failed: {other:?}");
            None
        }
    }
}

#[test]
fn the_venv_example_installs_passes_doctor_and_answers() {
    let env = Env::new();
    let Some(src) = venv_example(&env) else {
        return;
    };
    let done = zot_ok(&env, &["ext", "install", src.to_str().unwrap()]);
    assert!(
        done.stderr
            .contains("links that point outside the extension: ")
            && done.stderr.contains(".venv/bin/python3 -> /"),
        "{}",
        done.stderr
    );
    // The installed copy stands alone: the source (and its venv) can go.
    fs::remove_dir_all(&src).unwrap();
    let dest = installed(&env, "hello-venv");
    let venv = dest.join(".venv");

    let doctor = zot_ok(&env, &["ext", "doctor", "--json", "hello-venv"]).json();
    let report = &doctor["extensions"][0];
    assert_eq!(report["status"], "ok", "{doctor:#}");

    let call = zot_ok(&env, &["ext", "call", "hello-venv", "/hellovenv"]);
    assert_eq!(
        call.stdout,
        format!(
            "display: hello from a virtual environment at {}\n",
            venv.display()
        )
    );

    let info = zot_ok(&env, &["ext", "info", "--json", "hello-venv"]).json();
    let links = listed(&info["copies"][0]["outside_links"]);
    assert!(
        links
            .iter()
            .any(|(path, target, leads)| path == ".venv/bin/python3"
                && target.starts_with('/')
                && leads == "outside"),
        "{links:?}"
    );

    // The copied interpreter link works from the new place and finds its own venv.
    let prefix = Command::new(venv.join("bin/python"))
        .args(["-c", "import sys; print(sys.prefix)"])
        .output()
        .unwrap();
    assert!(prefix.status.success(), "{prefix:?}");
    assert_eq!(
        String::from_utf8_lossy(&prefix.stdout).trim(),
        venv.display().to_string()
    );
}
