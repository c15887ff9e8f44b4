//! Discovery follows the host (zot 0.1.62, `internal/agent/extensions/manager.go`): a project
//! folder hides the global folder of the same folder name whatever the manifests say, and two
//! folders whose manifests share a name are both started (whichever says hello last is kept).

use std::fs;

use serde_json::Value;

use crate::support::Env;
use crate::support::extensions::{good_script, sh_extension};

fn report<'a>(json: &'a Value, dir_suffix: &str) -> &'a Value {
    json["extensions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["dir"].as_str().unwrap().ends_with(dir_suffix))
        .unwrap_or_else(|| panic!("no report for {dir_suffix}: {json:#}"))
}

fn messages(report: &Value, kind: &str) -> Vec<String> {
    report[kind]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["message"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_project_folder_hides_the_global_folder_of_the_same_folder_name() {
    let env = Env::new();
    let cmd = r#"{"type":"register_command","name":"same-a","description":"a"}"#;
    sh_extension(
        &env.project_root(),
        "same",
        "alpha",
        &good_script("alpha", &[cmd]),
    );
    let cmd = r#"{"type":"register_command","name":"same-b","description":"b"}"#;
    sh_extension(
        &env.global_root(),
        "same",
        "beta",
        &good_script("beta", &[cmd]),
    );

    let list = env.zot(["ext", "list", "--json"]).ok().extensions();
    assert_eq!(list[0]["name"], "alpha");
    assert_eq!(list[0]["shadowed"], false);
    assert_eq!(list[1]["name"], "beta");
    assert_eq!(list[1]["scope"], "global");
    assert_eq!(list[1]["shadowed"], true);
    let text = env.zot(["ext", "list"]).ok().stdout;
    let beta = text.lines().find(|l| l.contains("beta")).unwrap();
    assert!(beta.contains("global (shadowed)"), "{text}");

    let info = env.zot(["ext", "info", "beta", "--json"]).ok().json();
    assert_eq!(info["copies"][0]["shadowed"], true);
    assert_eq!(info["copies"][0]["wins"], false);
    env.zot(["ext", "info", "beta"])
        .ok()
        .stdout_has("shadowed by the project folder of the same folder name");

    let done = env.zot(["ext", "doctor", "--json"]).output();
    let json = done.json();
    let hidden = json["extensions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "beta")
        .unwrap();
    assert_eq!(hidden["loaded"], false, "{json:#}");
    assert_eq!(json["extensions"][0]["name"], "alpha");
    assert_eq!(json["extensions"][0]["loaded"], true);
    let doctor = env.zot(["ext", "doctor"]).output();
    doctor.stdout_has(&format!(
        "beta (global, shadowed by {}: zot skips it for the project folder of the same folder name)",
        env.project_root().join("same").display()
    ));
    // No twin warning: the hidden folder never runs.
    doctor.stdout_lacks("says hello last");
}

#[test]
fn two_folders_with_one_manifest_name_are_both_loaded_and_doctor_warns() {
    let env = Env::new();
    let script = good_script("twin", &[]);
    sh_extension(&env.project_root(), "other", "twin", &script);
    sh_extension(&env.global_root(), "twin", "twin", &script);

    let list = env.zot(["ext", "list", "--json"]).ok().extensions();
    assert_eq!(list.as_array().unwrap().len(), 2);
    for entry in list.as_array().unwrap() {
        assert_eq!(entry["name"], "twin");
        assert_eq!(entry["shadowed"], false, "{list:#}");
    }
    env.zot(["ext", "list"]).ok().stdout_lacks("shadowed");

    let info = env.zot(["ext", "info", "twin", "--json"]).ok().json();
    let copies = info["copies"].as_array().unwrap();
    assert_eq!(copies.len(), 2);
    // zot starts both; commands act on the first in load order.
    assert_eq!(copies[0]["wins"], true);
    assert_eq!(copies[1]["wins"], false);
    assert!(copies.iter().all(|c| c["shadowed"] == false));
    assert!(
        copies[0]["same_name"][0]
            .as_str()
            .unwrap()
            .ends_with("extensions/twin"),
        "{info:#}"
    );
    env.zot(["ext", "info", "twin"])
        .ok()
        .stdout_has("zot starts both and keeps whichever says hello last")
        .stdout_has("(global copy, started too; zot ext commands act on the copy above)");

    let done = env.zot(["ext", "doctor", "--json"]).output();
    done.success();
    let json = done.json();
    for (mine, other) in [("/other", "/twin"), ("/twin", "/other")] {
        let r = report(&json, mine);
        assert_eq!(r["loaded"], true);
        assert_eq!(r["status"], "warning", "{r:#}");
        let found = messages(r, "warnings");
        assert!(
            found.iter().any(
                |m| m.contains("zot starts both and keeps whichever says hello last")
                    && m.contains(&format!("{other} ("))
            ),
            "{found:?}"
        );
    }

    // Reading the log of the name says nothing of twins: there is one log per name.
    fs::create_dir_all(env.home.join("logs")).unwrap();
    fs::write(env.home.join("logs/ext-twin.log"), "from both\n").unwrap();
    env.zot(["ext", "logs", "twin"])
        .ok()
        .stdout_is("from both\n")
        .stderr_lacks("also has the name");

    // Acting by name takes the first copy in load order (the project one) and says so.
    env.zot(["ext", "disable", "twin"])
        .ok()
        .stderr_has("also has the name \"twin\"")
        .stderr_has("pick the other by its folder name, twin, with --global\n");
    let list = env.zot(["ext", "list", "--json"]).ok().extensions();
    assert_eq!(list[0]["scope"], "project");
    assert_eq!(list[0]["enabled"], false);
    assert_eq!(list[1]["enabled"], true);
    // With one copy disabled, zot starts only the other: no race to warn about.
    let json = env.zot(["ext", "doctor", "--json"]).output().json();
    let found = messages(report(&json, "/twin"), "warnings");
    assert!(
        !found.iter().any(|m| m.contains("says hello last")),
        "{found:?}"
    );
}

#[test]
fn two_global_folders_with_one_name_are_told_apart_by_folder_name() {
    let env = Env::new();
    let script = good_script("dup", &[]);
    sh_extension(&env.global_root(), "dup1", "dup", &script);
    sh_extension(&env.global_root(), "dup2", "dup", &script);
    let info = env.zot(["ext", "info", "dup", "--json"]).ok().json();
    let wins: Vec<_> = info["copies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["wins"].clone())
        .collect();
    assert_eq!(wins, [true, false]);
    env.zot(["ext", "disable", "dup"])
        .ok()
        .stderr_has("pick the other by its folder name, dup2\n")
        .stderr_lacks("--");
}

#[test]
fn installing_beside_a_differently_named_folder_of_the_same_name_warns_of_the_race() {
    let env = Env::new();
    sh_extension(
        &env.global_root(),
        "hand-placed",
        "twin",
        &good_script("twin", &[]),
    );
    let src = env.source("src-twin", "twin");
    env.install_project(&src)
        .stderr_has("zot starts both and keeps whichever says hello last")
        .stderr_lacks("takes precedence");
}

/// A fix doctor prints runs as printed when pasted into sh, whatever the folder is called.
#[test]
fn a_printed_fix_runs_when_pasted_into_sh() {
    let env = Env::new();
    let script = good_script("my ext", &[]);
    sh_extension(&env.project_root(), "my ext", "my ext", &script);
    sh_extension(&env.global_root(), "Bad Name!", "my ext", &script);
    let json = env.zot(["ext", "doctor", "--json"]).output().json();
    let fixes: Vec<String> = json["extensions"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r["warnings"].as_array().unwrap().clone())
        .filter_map(|w| w["fix"].as_str().map(str::to_string))
        .collect();
    let fix = fixes
        .iter()
        .find(|f| f.contains("zot ext disable --global"))
        .unwrap_or_else(|| panic!("{json:#}"));
    let command = &fix[fix.find("zot ext disable").unwrap()..];
    assert_eq!(command, "zot ext disable --global 'Bad Name!'");
    let pasted = command.replacen("zot", env!("CARGO_BIN_EXE_zot"), 1);
    let out = std::process::Command::new("sh")
        .args(["-c", &pasted])
        .current_dir(&env.project)
        .env("ZOT_HOME", &env.home)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let manifest = fs::read_to_string(env.global_root().join("Bad Name!/extension.json")).unwrap();
    assert!(manifest.contains("\"enabled\": false"), "{manifest}");
}
