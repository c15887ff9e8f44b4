//! `zot ext new`: every template passes `doctor` and `call` (where its toolchain exists),
//! and nothing is ever overwritten.

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::support::Env;
use crate::support::extensions::{assert_gone, on_path};

/// Runs doctor and call against the new extension `target` (a name or a folder).
fn passes_doctor_and_call(env: &Env, target: &str, name: &str) {
    let doctor = env
        .zot(["ext", "doctor", target, "--json", "--strict"])
        .output();
    doctor.success();
    let report = &doctor.json()["extensions"][0];
    assert_eq!(report["status"], "ok", "{report:#}");
    assert_gone(report["pid"].as_i64().unwrap() as i32);
    let command = format!("/{name}");
    let called = env
        .zot(["ext", "call", target, &command, "hi", "there"])
        .ok();
    let tool = name.replace(['-', '.'], "_");
    let tooled = env
        .zot([
            "ext",
            "call",
            target,
            "--tool",
            &tool,
            r#"{"text":"echo me"}"#,
        ])
        .output();
    tooled.success();
    assert!(
        called
            .stdout
            .starts_with(&format!("display: hello from {name}")),
        "{}",
        called.stdout
    );
    assert!(
        tooled.stdout.contains("hello from") || tooled.stdout == "echo me\n",
        "{}",
        tooled.stdout
    );
}

fn create(env: &Env, name: &str, lang: &str) -> std::path::PathBuf {
    let done = env.zot(["ext", "new", name, "--lang", lang]).ok();
    assert!(
        done.stdout.starts_with(&format!("created {name} (")),
        "{}",
        done.stdout
    );
    env.global_root().join(name)
}

#[test]
fn python_template() {
    let env = Env::new();
    let dir = create(&env, "py-demo", "python");
    assert!(dir.join("main.py").is_file() && dir.join("README.md").is_file());
    passes_doctor_and_call(&env, "py-demo", "py-demo");
    // Arguments reach the program; a missing tool argument is reported as a tool error.
    env.zot(["ext", "call", "py-demo", "/py-demo", "hi", "there"])
        .ok()
        .stdout_is("display: hello from py-demo, you said: hi there\n");
    env.zot(["ext", "call", "py-demo", "--tool", "py_demo"])
        .fails(1)
        .stdout_has("\"text\" must be a string");
}

#[test]
fn node_template() {
    if !on_path("node") {
        eprintln!("skipping the node template: node is not on PATH");
        return;
    }
    let env = Env::new();
    create(&env, "node-demo", "node");
    passes_doctor_and_call(&env, "node-demo", "node-demo");
    env.zot([
        "ext",
        "call",
        "node-demo",
        "--tool",
        "node_demo",
        r#"{"text":"echo me"}"#,
    ])
    .ok()
    .stdout_is("echo me\n");
}

#[test]
fn shell_template() {
    let env = Env::new();
    let dir = create(&env, "sh-demo", "shell");
    let script = fs::read_to_string(dir.join("main.sh")).unwrap();
    assert!(
        script.starts_with("#!/bin/sh\n") && script.contains("Limitation"),
        "{script}"
    );
    passes_doctor_and_call(&env, "sh-demo", "sh-demo");
}

#[test]
fn go_template() {
    let env = Env::new();
    // Without Go on PATH the files are written unbuilt, and the fix is the install's step.
    let empty = env.work.join("empty-bin");
    std::fs::create_dir_all(&empty).unwrap();
    env.zot(["ext", "new", "go-bare", "--lang", "go"])
        .env("PATH", &empty)
        .ok()
        .stderr_has("note: go-bare was not built: go not found on PATH: install Go 1.19 or later")
        .stderr_has("once that is fixed: zot ext prepare go-bare\n");
    let bare = env.global_root().join("go-bare");
    assert!(bare.join("main.go").is_file() && bare.join("go.mod").is_file());
    let readme = std::fs::read_to_string(bare.join("README.md")).unwrap();
    assert!(
        readme.contains("Rebuild it after every edit") && !readme.contains("Build it first"),
        "{readme}"
    );
    env.zot(["ext", "doctor", "go-bare"]).fails(1).stdout_has(
        "fix: the program ./go-bare is not built (the folder has a go.mod): its build has not run; run it: zot ext prepare go-bare\n",
    );
    if !on_path("go") {
        eprintln!(
            "skipping the live test of the go template: go is not on PATH (the files were written and checked, not built or run)"
        );
        return;
    }
    // With Go, new builds it in staging as install does: it runs at once.
    let dir = create(&env, "go-demo", "go");
    assert!(dir.join("go-demo").is_file());
    passes_doctor_and_call(&env, "go-demo", "go-demo");
    env.zot(["ext", "verify", "go-demo"]).ok();
    // The built program is listed as the step's output, as an install lists it: a change to
    // it is one verify reports.
    let program = dir.join("go-demo");
    let mut bytes = std::fs::read(&program).unwrap();
    bytes.push(0);
    std::fs::write(&program, bytes).unwrap();
    let verified = env
        .zot(["ext", "verify", "go-demo", "--json"])
        .fails(1)
        .extensions();
    assert_eq!(
        verified[0]["prepared_changed"][0], "go-demo",
        "{verified:?}"
    );
    env.zot(["ext", "prepare", "go-bare"]).ok();
    passes_doctor_and_call(&env, "go-bare", "go-bare");
}

#[test]
fn rust_template() {
    let env = Env::new();
    let dir = create(&env, "rs-demo", "rust");
    assert!(dir.join("src/main.rs").is_file() && dir.join("Cargo.toml").is_file());
    if !on_path("cargo") {
        eprintln!("skipping the live test of the rust template: cargo is not on PATH");
        return;
    }
    // Offline: serde_json is in the local registry cache, since this crate depends on it.
    let built = Command::new("cargo")
        .args(["build", "--release", "--offline", "--quiet"])
        .current_dir(&dir)
        .env("CARGO_TARGET_DIR", dir.join("target"))
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    passes_doctor_and_call(&env, "rs-demo", "rs-demo");
}

#[test]
fn project_and_folder_locations() {
    let env = Env::new();
    env.zot(["ext", "new", "here", "--project", "--lang", "shell"])
        .ok();
    assert!(env.project_root().join("here/main.sh").is_file());
    let json = env.zot(["ext", "doctor", "here", "--json"]).ok().json();
    assert_eq!(json["extensions"][0]["scope"], "project");

    let target = env.work.join("nested/wip");
    let out = env
        .zot([
            "ext",
            "new",
            "wip",
            "--dir",
            target.to_str().unwrap(),
            "--json",
        ])
        .ok()
        .json();
    assert_eq!(out["scope"], serde_json::Value::Null);
    assert_eq!(out["dir"], target.to_str().unwrap());
    assert_eq!(
        out["files"],
        serde_json::json!(["extension.json", "main.py", "README.md"])
    );
    let readme = fs::read_to_string(target.join("README.md")).unwrap();
    assert!(readme.contains("zot ext doctor ."), "{readme}");
    passes_doctor_and_call(&env, target.to_str().unwrap(), "wip");
    // Nothing was left beside it.
    let beside: Vec<_> = fs::read_dir(env.work.join("nested"))
        .unwrap()
        .flatten()
        .collect();
    assert_eq!(beside.len(), 1);

    let empty = env.work.join("empty");
    fs::create_dir(&empty).unwrap();
    env.zot(["ext", "new", "empty", "--dir", empty.to_str().unwrap()])
        .ok();
    assert!(empty.join("extension.json").is_file());
    env.zot(["ext", "new", "x", "--project", "--dir", "y"])
        .fails(2);
}

#[test]
fn never_overwrites_an_installed_extension() {
    let env = Env::new();
    create(&env, "taken", "python");
    let before = env.snapshot();
    env.zot(["ext", "new", "taken", "--lang", "node"])
        .fails(1)
        .stderr_is(&format!(
            "error: an extension named \"taken\" already exists at {}; \
             pick another name (nothing was written)\n",
            env.global_root().join("taken").display()
        ));
    assert_eq!(env.snapshot(), before);
    // The staging folder is empty again.
    let staging = env.home.join(".ext-store/staging");
    assert_eq!(fs::read_dir(staging).unwrap().count(), 0);
}

#[test]
fn never_writes_into_a_folder_that_is_not_empty() {
    let env = Env::new();
    let full = env.work.join("full");
    fs::create_dir(&full).unwrap();
    fs::write(full.join("keep.txt"), "mine").unwrap();
    env.zot(["ext", "new", "full", "--dir", full.to_str().unwrap()])
        .fails(1)
        .stderr_is(&format!(
            "error: {} already exists and is not empty; nothing was written\n",
            full.display()
        ));
    assert_eq!(fs::read_dir(&full).unwrap().count(), 1);
    assert_eq!(fs::read_to_string(full.join("keep.txt")).unwrap(), "mine");
}

#[test]
fn names_are_checked_and_builtins_avoided() {
    let env = Env::new();
    env.zot(["ext", "new", "no/slash"]).fails(2).stderr_is(
        "error: the name \"no/slash\" contains '/'; \
             use only ASCII letters and digits, '.', '_' and '-'\n",
    );
    // A name zot and install accept but new cannot write into a template: new says so.
    env.zot(["ext", "new", "Bad Name!"]).fails(2).stderr_is(
        "error: the name \"Bad Name!\" contains ' '; use only ASCII letters and digits, '.', '_' and '-' \
         (new writes the name unquoted into the template's source and build files; zot and zot \
         ext install accept this name, so to use it, edit \"name\" in extension.json afterwards)\n",
    );
    env.zot(["ext", "new", "ok", "--lang", "cobol"]).fails(2);
    env.zot(["ext", "new", "ok", "--lang", "ts"])
        .fails(2)
        .stderr_has("tip: there is no TypeScript template; --lang node (or js) writes JavaScript");
    let json = env.zot(["ext", "new", "help", "--json"]).ok().json();
    assert_eq!(json["command"], "help-ext");
    env.zot(["ext", "doctor", "help", "--strict"])
        .output()
        .success();
    assert!(
        Path::new(json["dir"].as_str().unwrap())
            .join("main.py")
            .is_file()
    );
    assert_eq!(json["binary"], serde_json::Value::Null);
}

#[test]
fn names_zot_picks_itself_get_a_suffix() {
    let env = Env::new();
    for name in ["settings", "tg"] {
        let json = env.zot(["ext", "new", name, "--json"]).ok().json();
        assert_eq!(json["command"], format!("{name}-ext"));
        env.zot(["ext", "doctor", name, "--strict"])
            .output()
            .success();
    }
}

#[test]
fn new_writes_an_install_record_and_info_shows_where_it_came_from() {
    let env = Env::new();
    env.zot(["ext", "new", "made", "--lang", "node", "--project"])
        .ok();
    let state = env.project.join(".zot/.ext-store");
    let record: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(state.join("sources/made.json")).unwrap())
            .unwrap();
    assert_eq!(record["kind"], "new");
    assert_eq!(record["template"], "node");
    assert_eq!(record["language"], "javascript");
    // With its file list, like any install.
    assert!(state.join("files/made.json").is_file());
    let info = env.zot(["ext", "info", "made"]).ok();
    info.stdout_has("made by zot ext new from the node template")
        .stdout_lacks("copied in by hand");
    let json = env.zot(["ext", "info", "made", "--json"]).ok().json();
    assert_eq!(json["copies"][0]["record"]["kind"], "new");
    // A folder made with --dir is not installed: no record anywhere.
    let dir = env.work.join("standalone");
    env.zot(["ext", "new", "solo", "--dir", dir.to_str().unwrap()])
        .ok();
    assert!(!env.home.join(".ext-store/sources/solo.json").exists());
}

/// A folder made with `--dir` is not known to zot yet: the next steps end with the `link`
/// command that makes it so (and `install` for a copy), quoted for the shell, and the command
/// works as printed. An installed one needs no such step.
#[test]
fn a_folder_made_with_dir_names_the_link_step() {
    let env = Env::new();
    let dir = env.work.join("my ext");
    let done = env
        .zot(["ext", "new", "wip", "--dir", dir.to_str().unwrap()])
        .ok();
    let shown = format!("'{}'", dir.display());
    let check = format!("check it: zot ext doctor {shown} && zot ext call {shown} /wip hi");
    let link = format!(
        "use it in zot: zot ext link {shown} (zot runs this folder as you edit it; zot ext install {shown} makes a copy instead)"
    );
    assert_eq!(
        done.stderr.lines().collect::<Vec<_>>(),
        [&check, &link],
        "{done:?}"
    );
    let command = link
        .strip_prefix("use it in zot: ")
        .and_then(|l| l.split(" (").next())
        .unwrap();
    let ran = Command::new("sh")
        .args([
            "-c",
            &format!("zot() {{ \"$ZOT_BIN\" \"$@\"; }}; {command}"),
        ])
        .env("ZOT_BIN", env!("CARGO_BIN_EXE_zot"))
        .env("ZOT_HOME", &env.home)
        .current_dir(&env.project)
        .output()
        .unwrap();
    assert!(ran.status.success(), "{ran:?}");
    assert_eq!(fs::read_link(env.global_root().join("wip")).unwrap(), dir);
    env.zot(["ext", "new", "other"])
        .ok()
        .stderr_lacks("zot ext link");
}

/// `--lang` takes the names people use for a language: javascript, js and node write the
/// Node template, python and py the Python one.
#[test]
fn lang_takes_the_common_names_of_each_language() {
    let env = Env::new();
    for (lang, language) in [
        ("javascript", "javascript"),
        ("js", "javascript"),
        ("node", "javascript"),
        ("py", "python"),
        ("python", "python"),
    ] {
        let name = format!("made-{lang}");
        env.zot(["ext", "new", &name, "--lang", lang, "--project"])
            .ok();
        let manifest =
            fs::read_to_string(env.project_root().join(&name).join("extension.json")).unwrap();
        assert!(
            manifest.contains(&format!("\"language\": \"{language}\"")),
            "{lang}: {manifest}"
        );
    }
}

/// Where the zot agent cannot load linked folders (0.1.62 and earlier), `new --dir` does not
/// send the user to `link`.
#[test]
fn a_folder_made_with_dir_names_install_where_the_agent_skips_links() {
    let env = Env::new();
    let agent = env.work.join("zot-agent");
    crate::support::write_executable(&agent, "#!/bin/sh\necho 'zot 0.1.62'\n");
    let dir = env.work.join("wip");
    let done = env
        .zot(["ext", "new", "wip", "--dir", dir.to_str().unwrap()])
        .env("ZOT_AGENT", &agent)
        .ok();
    done.stderr_has(&format!(
        "use it in zot: zot ext install {} (the zot agent here does not load linked folders, so zot ext link would not start it; install again after each edit)",
        dir.display()
    ))
    .stderr_lacks("use it in zot: zot ext link");
}
