//! One flag grammar: `-p`, `-g` and `--scope project|global` on every command with a scope,
//! each acting on the right copy and exclusive of the others; hints that work for a scope
//! flag where there is no scope; `-n` only as `logs`' line count; `-V` everywhere; and
//! "did you mean" for extension and subcommand names, in text and in `--json` errors.

use std::fs;
use std::path::PathBuf;

use serde_json::Value;

use crate::support::{Env, write_executable};

/// The four ways to pick a scope, with the scope each picks.
const FORMS: [(&[&str], &str); 4] = [
    (&["-p"], "project"),
    (&["-g"], "global"),
    (&["--scope", "project"], "project"),
    (&["--scope", "global"], "global"),
];

/// Every command that takes a scope, as a command line to which scope flags are added.
const SCOPED: [&[&str]; 10] = [
    &["ext", "list"],
    &["ext", "install", "SRC"],
    &["ext", "remove", "clock", "--yes"],
    &["ext", "enable", "clock"],
    &["ext", "disable", "clock"],
    &["ext", "update", "clock", "--dry-run"],
    &["ext", "new", "fresh"],
    &["ext", "link", "SRC"],
    &["ext", "info", "clock"],
    &["ext", "doctor", "clock", "--timeout", "5"],
];

/// `clock` installed in both scopes.
fn both_scopes() -> Env {
    let env = Env::new();
    env.installed("clock", true);
    env.installed("clock", false);
    env
}

fn root(env: &Env, scope: &str) -> PathBuf {
    match scope {
        "project" => env.project_root(),
        _ => env.global_root(),
    }
}

fn args<'a>(base: &[&'a str], form: &[&'a str], json: bool) -> Vec<&'a str> {
    let mut args = base.to_vec();
    args.extend_from_slice(form);
    if json {
        args.push("--json");
    }
    args
}

/// The scope of every copy or extension a `--json` document names.
fn scopes_in(json: &Value) -> Vec<String> {
    let items: Vec<&Value> = match json {
        Value::Array(items) => items.iter().collect(),
        Value::Object(o) if o.contains_key("copies") => {
            o["copies"].as_array().unwrap().iter().collect()
        }
        Value::Object(o) if o.contains_key("extensions") => {
            o["extensions"].as_array().unwrap().iter().collect()
        }
        other => vec![other],
    };
    items
        .iter()
        .map(|i| i["scope"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn every_form_lists_shows_checks_and_changes_the_copy_of_its_scope() {
    for (form, scope) in FORMS {
        let env = both_scopes();
        let read_only: [&[&str]; 6] = [
            &["ext", "list"],
            &["ext", "info", "clock"],
            &["ext", "update", "clock", "--dry-run"],
            &["ext", "doctor", "clock", "--timeout", "5"],
            &["ext", "doctor", "--timeout", "5"],
            &["ext", "update", "--all", "--dry-run"],
        ];
        for base in read_only {
            let done = env.zot(args(base, form, true)).output();
            assert!(done.code == 0 || base[1] == "doctor", "{done:?}");
            assert_eq!(scopes_in(&done.json()), [scope], "{done:?}");
        }
        let disabled = env
            .zot(args(&["ext", "disable", "clock"], form, true))
            .ok()
            .json();
        assert_eq!(disabled["scope"], scope, "{form:?}");
        let manifest =
            |s: &str| fs::read_to_string(root(&env, s).join("clock/extension.json")).unwrap();
        let other = if scope == "project" {
            "global"
        } else {
            "project"
        };
        assert!(manifest(scope).contains("\"enabled\": false"), "{form:?}");
        assert!(manifest(other).contains("\"enabled\": true"), "{form:?}");
        let enabled = env
            .zot(args(&["ext", "enable", "clock"], form, true))
            .ok()
            .json();
        assert_eq!(enabled["scope"], scope, "{form:?}");
        let removed = env
            .zot(args(&["ext", "remove", "clock", "--yes"], form, true))
            .ok()
            .json();
        assert_eq!(removed["scope"], scope, "{form:?}");
        assert!(!root(&env, scope).join("clock").exists(), "{form:?}");
        assert!(root(&env, other).join("clock").exists(), "{form:?}");
    }
}

#[test]
fn every_form_installs_creates_and_links_into_its_scope() {
    for (form, scope) in FORMS {
        let env = Env::new();
        let copied = env.source("copied", "copied");
        let installed = env.zot(args(
            &["ext", "install", copied.to_str().unwrap()],
            form,
            true,
        ));
        assert_eq!(installed.ok().json()["scope"], scope, "{form:?}");
        assert!(root(&env, scope).join("copied/extension.json").is_file());
        let made = env
            .zot(args(&["ext", "new", "fresh"], form, true))
            .ok()
            .json();
        assert_eq!(made["scope"], scope, "{form:?}");
        assert!(root(&env, scope).join("fresh/extension.json").is_file());
        let working = env.source("working", "working");
        let linked = env.zot(args(
            &["ext", "link", working.to_str().unwrap()],
            form,
            true,
        ));
        assert_eq!(linked.ok().json()["scope"], scope, "{form:?}");
        assert!(root(&env, scope).join("working").is_symlink());
        let all = env.zot(["ext", "list", "--json"]).ok().json();
        assert!(scopes_in(&all).iter().all(|s| s == scope), "{all:#}");
    }
}

#[test]
fn two_scope_flags_at_once_are_a_usage_error_on_every_command() {
    let conflicts: [&[&str]; 4] = [
        &["-p", "-g"],
        &["-p", "--scope", "global"],
        &["--scope", "project", "-g"],
        &["--scope", "project", "--scope", "global"],
    ];
    let env = both_scopes();
    let src = env.source("src", "other");
    let before = env.snapshot();
    for base in SCOPED {
        let base: Vec<&str> = base
            .iter()
            .map(|a| {
                if *a == "SRC" {
                    src.to_str().unwrap()
                } else {
                    a
                }
            })
            .collect();
        for pair in conflicts {
            let done = env.zot(args(&base, pair, false)).fails(2);
            done.stderr_has("cannot be used");
        }
    }
    env.zot(["ext", "new", "fresh", "--dir", "elsewhere", "-g"])
        .fails(2)
        .stderr_has("cannot be used");
    assert_eq!(env.snapshot(), before);
    assert!(!env.project.join("elsewhere").exists());
}

#[test]
fn a_scope_flag_where_there_is_no_scope_gets_a_hint_that_works() {
    let env = Env::new();
    env.installed("clock", false);
    fs::create_dir_all(env.home.join("logs")).unwrap();
    fs::write(env.home.join("logs/ext-clock.log"), "one\ntwo\n").unwrap();
    env.zot(["ext", "logs", "clock", "-g"])
        .fails(2)
        .stderr_has("tip: a log belongs to a name, not to a scope")
        .stderr_has("leave out -g");
    env.zot(["ext", "logs", "clock"])
        .ok()
        .stdout_is("one\ntwo\n");
    env.zot(["ext", "call", "--project", "clock", "/x"])
        .fails(2)
        .stderr_has("name its folder: zot ext call ./.zot/extensions/<name> /<command>");
    env.zot(["completions", "bash", "-p"])
        .fails(2)
        .stderr_has("completions has no scope: leave out -p");
    // Before the subcommand: the hint is the command line that works.
    env.zot(["ext", "--global", "list"])
        .fails(2)
        .stderr_has("tip: scope flags go after the subcommand: zot ext list --global");
    env.zot(["ext", "list", "--global"])
        .ok()
        .stdout_has("clock");
    env.zot(["ext", "--scope=global", "ls"])
        .fails(2)
        .stderr_has("tip: scope flags go after the subcommand: zot ext list --scope=global");
    env.zot(["ext", "list", "--scope=global"])
        .ok()
        .stdout_has("clock");
}

#[test]
fn dash_n_is_only_the_line_count_of_logs() {
    let env = Env::new();
    env.installed("clock", false);
    let before = env.snapshot();
    env.zot(["ext", "update", "clock", "-n"])
        .fails(2)
        .stderr_has("tip: use --dry-run to see what update would change");
    assert_eq!(env.snapshot(), before);
    env.zot(["ext", "update", "clock", "--dry-run"]).ok();
}

#[test]
fn a_negative_line_count_says_what_works() {
    let env = Env::new();
    fs::create_dir_all(env.home.join("logs")).unwrap();
    fs::write(env.home.join("logs/ext-x.log"), "a\nb\n").unwrap();
    for args in [
        &["ext", "logs", "x", "-n", "-1"][..],
        &["ext", "logs", "x", "--lines", "-1"],
        &["ext", "logs", "x", "-f", "-n", "-1"],
        &["ext", "logs", "x", "-n=-1"],
    ] {
        env.zot(args)
            .fails(2)
            .stderr_has(
                "a count of lines is 0 or more: use -n 1 for the last line, or leave -n out",
            )
            .stderr_lacks("-- -1");
    }
    env.zot(["ext", "logs", "x", "-n", "-5"])
        .fails(2)
        .stderr_has("use -n 5 for the last 5 lines, or leave -n out");
    env.zot(["ext", "logs", "x", "-n", "1"])
        .ok()
        .stdout_is("b\n");
    env.zot(["ext", "logs", "x"]).ok().stdout_is("a\nb\n");
    env.zot(["ext", "logs", "x", "-n", "many"])
        .fails(2)
        .stderr_has("\"many\" is not a count of lines");
}

#[test]
fn a_negative_timeout_says_what_works() {
    let env = Env::new();
    for args in [
        &["ext", "doctor", "--timeout", "-1"][..],
        &["ext", "call", "--timeout", "-1", "x", "/x"],
    ] {
        env.zot(args)
            .fails(2)
            .stderr_has("must be more than 0 and at most 86400 seconds")
            .stderr_lacks("-- -1");
    }
}

#[test]
fn dash_v_prints_zot_ext_and_the_version_on_every_command() {
    let env = Env::new();
    // zot-ext, not zot: the zot agent's `zot --version` says `zot 0.1.62`.
    let expected = format!("zot-ext {}\n", env!("CARGO_PKG_VERSION"));
    for args in [
        &["--version"][..],
        &["ext", "-V"],
        &["ext", "list", "-V"],
        &["ext", "install", "--version"],
        &["ext", "logs", "-V"],
        &["completions", "-V"],
    ] {
        env.zot(args).ok().stdout_is(&expected);
    }
}

#[test]
fn zot_ext_version_points_at_the_flag() {
    let env = Env::new();
    env.zot(["ext", "version"])
        .fails(2)
        .stderr_has("tip: zot ext --version prints zot ext's version")
        .stderr_lacks("verify");
}

#[test]
fn an_unknown_subcommand_suggests_the_closest_first() {
    let env = Env::new();
    env.zot(["ext", "instal"])
        .fails(2)
        .stderr_has("tip: a similar subcommand exists: 'install'\n")
        .stderr_lacks("'list'");
    env.zot(["ext", "dissable"])
        .fails(2)
        .stderr_has("tip: a similar subcommand exists: 'disable'\n");
}

/// Words other tools use suggest the subcommand of that meaning, not the closest spelling.
#[test]
fn a_word_other_tools_use_suggests_the_subcommand_that_means_it() {
    let env = Env::new();
    for (word, meant) in [
        ("uninstall", "remove"),
        ("delete", "remove"),
        ("upgrade", "update"),
        ("show", "info"),
        ("create", "new"),
        ("init", "new"),
        ("check", "doctor"),
        ("run", "call"),
    ] {
        let done = env.zot(["ext", word, "clock"]).fails(2);
        done.stderr_has(&format!("tip: a similar subcommand exists: '{meant}'\n"));
    }
    let search = env.zot(["ext", "search", "clock"]).fails(2);
    search
        .stderr_has("zot ext has no index of extensions to search; install one from a folder or a git URL (zot ext install <path|git-url>)")
        .stderr_lacks("'cache'");
}

/// An installed `clock` (global) and a log for it.
fn clock() -> Env {
    let env = Env::new();
    env.installed("clock", false);
    env
}

/// Every command that takes an installed name, with that name.
fn named(name: &str) -> Vec<Vec<String>> {
    let lines: [&[&str]; 9] = [
        &["ext", "remove", name, "--yes"],
        &["ext", "enable", name],
        &["ext", "disable", name],
        &["ext", "info", name],
        &["ext", "update", name],
        &["ext", "doctor", name],
        &["ext", "call", name, "/now"],
        &["ext", "logs", name],
        &["ext", "disable", name, "-g"],
    ];
    lines
        .iter()
        .map(|l| l.iter().map(ToString::to_string).collect())
        .collect()
}

#[test]
fn an_unknown_name_suggests_the_closest_installed_one() {
    let env = clock();
    let before = env.snapshot();
    for name in ["CLOCK", "clok", "Clcok"] {
        for args in named(name) {
            env.zot(&args)
                .fails(1)
                .stderr_one_line()
                .stderr_has(&format!("no extension named \"{name}\" is installed"))
                .stderr_has("; did you mean clock?\n");
        }
    }
    for args in named("weather") {
        env.zot(&args)
            .fails(1)
            .stderr_lacks("did you mean")
            .stderr_has("`zot ext list` shows what is installed\n");
    }
    assert_eq!(env.snapshot(), before);
}

#[test]
fn a_json_error_is_one_line_on_stderr_with_its_suggestions() {
    let env = clock();
    env.installed("clocks", true);
    // Both scopes are looked in (no -g here), so both names are close.
    for args in named("CLOCK")
        .into_iter()
        .filter(|a| !a.contains(&"-g".to_owned()))
    {
        let mut args = args;
        // Before the subcommand: after `call NAME /now` it would be the command's input.
        args.insert(1, "--json".into());
        let done = env.zot(&args).fails(1);
        done.stdout_is("").stderr_one_line();
        let error: Value = serde_json::from_str(&done.stderr).unwrap();
        assert_eq!(
            error["suggestions"],
            serde_json::json!(["clock", "clocks"]),
            "{done:?}"
        );
        let message = error["error"].as_str().unwrap();
        assert!(
            message.ends_with("did you mean clock or clocks?"),
            "{done:?}"
        );
    }
    let done = env.zot(["ext", "enable", "weather", "--json"]).fails(1);
    let error: Value = serde_json::from_str(&done.stderr).unwrap();
    assert_eq!(error["suggestions"], serde_json::json!([]), "{done:?}");
    // An error without names to suggest has the same shape.
    let done = env.zot(["ext", "new", "bad/name", "--json"]).fails(2);
    let error: Value = serde_json::from_str(&done.stderr).unwrap();
    assert!(
        error["error"].is_string() && error["suggestions"] == serde_json::json!([]),
        "{done:?}"
    );
}

#[test]
fn suggestions_come_only_from_the_scope_looked_in() {
    let env = Env::new();
    env.installed("clock", true);
    let src = env.work.join("global-tool");
    fs::create_dir_all(&src).unwrap();
    fs::write(
        src.join("extension.json"),
        crate::support::manifest("clocks"),
    )
    .unwrap();
    write_executable(&src.join("run.sh"), "#!/bin/sh\nexit 0\n");
    env.install(&src);
    env.zot(["ext", "disable", "CLOCK", "-g"])
        .fails(1)
        .stderr_has("did you mean clocks?");
    env.zot(["ext", "disable", "CLOCK", "-p"])
        .fails(1)
        .stderr_has("did you mean clock?");
}

#[test]
fn habits_from_gh_and_npm_get_their_meaning() {
    let env = Env::new();
    env.zot(["ext", "install", "owner/repo"])
        .fails(1)
        .stderr_has("did you mean https://github.com/owner/repo.git?");
    // In a project, install with nothing to install points at sync.
    std::fs::create_dir_all(env.project.join(".zot")).unwrap();
    std::fs::write(
        env.project.join(".zot/extensions.json"),
        "{\"extensions\": {}}\n",
    )
    .unwrap();
    env.zot(["ext", "install"])
        .fails(2)
        .stderr_has("tip: this folder's project file (.zot/extensions.json) lists extensions: zot ext sync installs them");
}

#[test]
fn a_usage_error_of_a_json_command_is_json_on_stderr() {
    let env = Env::new();
    let done = env.zot(["ext", "list", "--json", "--bogus"]).fails(2);
    assert_eq!(done.stdout, "");
    let error: serde_json::Value = serde_json::from_str(done.stderr.trim()).unwrap();
    assert_eq!(error["error"], "unexpected argument '--bogus' found");
    assert_eq!(error["schema_version"], 1);
    let done = env.zot(["ext", "instal", "--json"]).fails(2);
    let error: serde_json::Value = serde_json::from_str(done.stderr.trim()).unwrap();
    assert_eq!(
        error["suggestions"][0],
        "a similar subcommand exists: 'install'"
    );
}
