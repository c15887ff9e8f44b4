//! `zot ext info`: which copy wins, resolved exec, provenance and log.

use std::fs;

use serde_json::Value;

use crate::support::Env;
use crate::support::hostile::mkfifo;

#[test]
fn shows_both_copies_winner_first_with_provenance_and_log() {
    let env = Env::new();
    env.installed("dup", false);
    env.installed("dup", true);
    fs::create_dir_all(env.home.join("logs")).unwrap();
    fs::write(env.home.join("logs/ext-dup.log"), "12345").unwrap();
    let info = env.zot(["ext", "info", "dup", "--json"]).ok().json();
    let copies = info["copies"].as_array().unwrap();
    assert_eq!(copies.len(), 2);
    assert_eq!(
        (copies[0]["scope"].as_str(), copies[0]["wins"].as_bool()),
        (Some("project"), Some(true))
    );
    assert_eq!(
        (copies[1]["scope"].as_str(), copies[1]["shadowed"].as_bool()),
        (Some("global"), Some(true))
    );
    assert_eq!(copies[0]["record"]["kind"], "path");
    assert_eq!(copies[0]["log"]["bytes"], 5);
    let resolved = copies[0]["program"]["resolved"].as_str().unwrap();
    assert!(
        resolved.ends_with(".zot/extensions/dup/run.sh"),
        "{resolved}"
    );
    let text = env.zot(["ext", "info", "dup"]).ok().stdout;
    assert!(text.starts_with("dup 1.0.0 (project copy, wins)"), "{text}");
    assert!(
        text.contains("(global copy, shadowed by the project folder of the same folder name)"),
        "{text}"
    );
    assert!(text.contains("(5 bytes)"), "{text}");
}

#[test]
fn exec_on_path_and_missing_exec() {
    let env = Env::new();
    let bare = env.source_with_manifest("bare", "{\"name\": \"bare\", \"exec\": \"sh\"}");
    env.install(&bare);
    let info = env.zot(["ext", "info", "bare", "--json"]).ok().json();
    let resolved = info["copies"][0]["program"]["resolved"].as_str().unwrap();
    assert!(resolved.ends_with("/sh"), "{resolved}");
    let missing =
        env.source_with_manifest("missing", "{\"name\": \"missing\", \"exec\": \"./nope\"}");
    env.install(&missing);
    let info = env.zot(["ext", "info", "missing", "--json"]).ok().json();
    assert_eq!(info["copies"][0]["program"]["resolved"], Value::Null);
    assert!(
        info["copies"][0]["program"]["error"]
            .as_str()
            .unwrap()
            .contains("does not exist")
    );
    env.zot(["ext", "info", "missing"])
        .ok()
        .stdout_has("./nope -> not found");
}

#[test]
fn hand_copied_extensions_have_no_source() {
    let env = Env::new();
    let dir = env.global_root().join("manual");
    fs::create_dir_all(&dir).unwrap();
    fs::write(
        dir.join("extension.json"),
        crate::support::manifest("manual"),
    )
    .unwrap();
    let info = env.zot(["ext", "info", "manual", "--json"]).ok().json();
    assert_eq!(info["copies"][0]["record"], Value::Null);
    assert_eq!(info["copies"][0]["log"]["bytes"], Value::Null);
    env.zot(["ext", "info", "manual"])
        .ok()
        .stdout_has("source:      unknown");
}

#[test]
fn unknown_name_fails() {
    let env = Env::new();
    env.zot(["ext", "info", "ghost"])
        .fails(1)
        .stderr_is(&env.not_installed_error("ghost"));
}

/// An install record that is there but cannot be used (a named pipe, a folder, a link, text
/// that is not a record) is named with what is wrong, by `info` and `update`: it is not
/// "copied in by hand?".
#[test]
fn an_unusable_install_record_is_named_not_taken_for_a_hand_copy() {
    let env = Env::new();
    env.installed("rec", false);
    let record = env.home.join(".ext-store/sources/rec.json");
    let outside = env.work.join("outside.json");
    fs::write(&outside, "{}").unwrap();
    let cases: [(&str, &dyn Fn()); 4] = [
        ("is a named pipe", &|| mkfifo(&record)),
        ("is a folder", &|| fs::create_dir(&record).unwrap()),
        ("is a symbolic link", &|| {
            std::os::unix::fs::symlink(&outside, &record).unwrap();
        }),
        ("is not a valid install record", &|| {
            fs::write(&record, "{\"name\": \"rec\"}").unwrap();
        }),
    ];
    for (said, make) in cases {
        if record.is_dir() {
            fs::remove_dir(&record).unwrap();
        } else {
            fs::remove_file(&record).unwrap();
        }
        make();
        let text = env.zot(["ext", "info", "rec"]).ok().stdout;
        let source = text.lines().find(|l| l.contains("source:")).unwrap();
        assert!(
            source.contains(&format!("{} {said}", record.display())) && !source.contains("by hand"),
            "{source}"
        );
        let info = env.zot(["ext", "info", "rec", "--json"]).ok().json();
        assert_eq!(info["copies"][0]["record"], Value::Null);
        assert!(
            info["copies"][0]["record_error"]
                .as_str()
                .unwrap()
                .contains(said),
            "{info}"
        );
        // Naming an extension that cannot be updated fails, with the reason on stderr.
        let update = env.zot(["ext", "update", "rec"]).fails(1).stderr;
        assert!(
            update.contains(said) && !update.contains("by hand"),
            "{update}"
        );
    }
    let outside_now = fs::read_to_string(&outside).unwrap();
    assert_eq!(outside_now, "{}");
}

#[test]
fn a_scope_flag_that_misses_names_the_other_copy() {
    let env = Env::new();
    env.installed("clock", false);
    for command in ["info", "enable", "remove"] {
        env.zot(
            ["ext", command, "clock", "-p", "-y"][..if command == "remove" { 5 } else { 4 }]
                .to_vec(),
        )
        .fails(1)
        .stderr_has("; there is a global copy: drop -p or use -g\n");
    }
}
