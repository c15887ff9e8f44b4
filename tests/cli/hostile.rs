//! The hostile-input table: bad sources and manifests (from `bad_input`), attacks on the
//! state folders, hostile names on the command line, URLs with credentials and odd
//! transports, and special files as logs. One test runs every case under a timeout and
//! prints how many there were; each case asserts the exit code, a one-line message naming
//! the problem, and that neither the store nor the victim folder beside it changed.

use std::ffi::OsString;
use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};

use crate::bad_input;
use crate::support::git_servers::Repo;
use crate::support::hostile::{
    Case, Prepared, World, ext, mkfifo, remove_any, replace_with_fifo, replace_with_link, run_table,
};
use crate::support::{manifest, registry};

#[test]
fn hostile_inputs() {
    let mut cases = bad_input::cases();
    cases.extend(state_folder_cases());
    cases.extend(command_line_cases());
    cases.extend(url_cases());
    cases.extend(log_cases());
    cases.extend(registry_cases());
    run_table("hostile inputs", &cases, 3);
}

fn install_source(w: &World, name: &str) -> OsString {
    w.env
        .source(&format!("src-new-{name}"), name)
        .into_os_string()
}

/// `zot ext install <a valid source named x>` plus `extra` arguments.
fn install_x(w: &World, extra: &[&str]) -> Prepared {
    let mut args = vec![OsString::from("install"), install_source(w, "x")];
    args.extend(extra.iter().map(OsString::from));
    ext(args)
}

fn existing_manifest(w: &World) -> PathBuf {
    w.env.global_root().join("existing/extension.json")
}

fn record(w: &World, name: &str) -> PathBuf {
    w.global_state()
        .join("sources")
        .join(format!("{name}.json"))
}

/// Replaces the record of `existing` with a git record for `url`.
fn write_git_record(w: &World, url: &str) {
    let text = serde_json::json!({
        "name": "existing", "source": url, "kind": "git", "ref": null, "ref_kind": null,
        "branch": "main", "commit": "0000000000000000000000000000000000000000",
        "subdir": null, "installed_at": "2026-01-01T00:00:00Z"
    });
    fs::write(record(w, "existing"), text.to_string()).unwrap();
}

/// Writes a sparse file of `len` bytes of zeros (huge without using the disk).
/// A project file naming `tool` from a folder and a lock for it with `commit` (JSON text)
/// and `tree`.
fn write_project_and_lock(w: &World, commit: &str, tree: &str) {
    let zot = w.env.project.join(".zot");
    let source = w.env.source("src-tool", "tool");
    let file = serde_json::json!({"extensions": {"tool": {"source": source}}});
    fs::write(zot.join("extensions.json"), file.to_string()).unwrap();
    let tree = serde_json::Value::String(tree.into());
    let source = serde_json::Value::String(source.display().to_string());
    fs::write(
        zot.join("extensions.lock"),
        format!(
            "{{\n  \"version\": 1,\n  \"extensions\": {{\n    \"tool\": {{\n      \"source\": {source},\n      \"ref\": null,\n      \"subdir\": null,\n      \"commit\": {commit},\n      \"tree\": {tree}\n    }}\n  }}\n}}\n"
        ),
    )
    .unwrap();
}

fn sparse(path: &Path, len: u64) {
    remove_any(path);
    fs::File::create(path).unwrap().set_len(len).unwrap();
}

fn ext_owned(args: Vec<String>) -> Prepared {
    ext(args)
}

/// What a removal of `existing` may change: its folder, its record and its file list.
const EXISTING_GONE: &[&str] = &[
    "zot-home/extensions/existing",
    "zot-home/.ext-store/sources/existing.json",
    "zot-home/.ext-store/files/existing.json",
];
const STAGING_AND_TRASH: &[&str] = &["zot-home/.ext-store/staging/", "zot-home/.ext-store/trash/"];

// A table of cases, one per entry.
#[allow(clippy::too_many_lines)]
fn state_folder_cases() -> Vec<Case> {
    vec![
        // staging and trash as links: cleaning must not empty the folder they point to
        Case::either("trash_link_then_list", "trash", |w| {
            replace_with_link(&w.global_state().join("trash"), &w.victim);
            ext(["list"])
        }),
        Case::fails("trash_link_then_remove", 1, "trash", |w| {
            replace_with_link(&w.global_state().join("trash"), &w.victim);
            ext(["remove", "existing", "--yes"])
        }),
        Case::fails("staging_link_then_install", 1, "staging", |w| {
            replace_with_link(&w.global_state().join("staging"), &w.victim);
            install_x(w, &[])
        }),
        Case::fails("staging_link_then_disable", 1, "staging", |w| {
            replace_with_link(&w.global_state().join("staging"), &w.victim);
            ext(["disable", "existing"])
        }),
        Case::fails("staging_link_then_enable", 1, "staging", |w| {
            replace_with_link(&w.global_state().join("staging"), &w.victim);
            ext(["enable", "existing"])
        }),
        Case::either("cloned_project_trash_link_then_list", "trash", |w| {
            remove_any(&w.project_state().join("trash"));
            symlink("../../../victim", w.project_state().join("trash")).unwrap();
            ext(["list"])
        }),
        Case::fails(
            "cloned_project_staging_link_then_install",
            1,
            "staging",
            |w| {
                remove_any(&w.project_state().join("staging"));
                symlink("../../../victim", w.project_state().join("staging")).unwrap();
                install_x(w, &["--project"])
            },
        ),
        // the fetch cache is state too: cleaning must not empty the folder a link points to
        Case::fails("cache_link_then_cache_clean", 1, "cache", |w| {
            replace_with_link(&w.global_state().join("cache"), &w.victim);
            ext(["cache", "clean"])
        }),
        Case::fails("cache_link_then_git_install", 1, "cache", |w| {
            replace_with_link(&w.global_state().join("cache"), &w.victim);
            install_url(local_repo(w))
        }),
        Case::fails("sources_folder_is_a_link", 1, "sources", |w| {
            replace_with_link(&w.global_state().join("sources"), &w.victim);
            install_x(w, &[])
        }),
        Case::fails("state_folder_is_a_link", 1, ".ext-store", |w| {
            let state = w.global_state();
            let copy = w.victim.join("state");
            fs::rename(&state, &copy).unwrap();
            symlink(&copy, &state).unwrap();
            install_x(w, &[])
        }),
        Case::fails("state_folder_is_a_file", 1, "remove it", |w| {
            let state = w.global_state();
            remove_any(&state);
            fs::write(&state, "not a folder").unwrap();
            install_x(w, &[])
        }),
        Case::fails("staging_is_a_file", 1, "remove it", |w| {
            let staging = w.global_state().join("staging");
            remove_any(&staging);
            fs::write(&staging, "x").unwrap();
            install_x(w, &[])
        }),
        Case::fails("lock_is_a_directory", 1, "remove it", |w| {
            remove_any(&w.global_state().join("lock"));
            fs::create_dir(w.global_state().join("lock")).unwrap();
            install_x(w, &[])
        }),
        Case::fails("lock_is_a_named_pipe", 1, "lock", |w| {
            replace_with_fifo(&w.global_state().join("lock"));
            ext(["disable", "existing"])
        }),
        Case::fails("lock_is_a_link_outside", 1, "lock", |w| {
            replace_with_link(
                &w.global_state().join("lock"),
                &w.victim.join("created-by-lock"),
            );
            ext(["disable", "existing"])
        }),
        Case::fails("extensions_root_is_a_file", 1, "extensions", |w| {
            let root = w.env.global_root();
            remove_any(&root);
            fs::write(&root, "x").unwrap();
            install_x(w, &[])
        }),
        Case::fails("project_zot_folder_is_a_file", 1, ".zot", |w| {
            let zot = w.env.project.join(".zot");
            remove_any(&zot);
            fs::write(&zot, "x").unwrap();
            install_x(w, &["--project"])
        }),
        Case::fails(
            "project_root_links_to_the_victim_then_remove",
            1,
            "extensions",
            |w| {
                let root = w.env.project_root();
                remove_any(&root);
                let tool = w.victim.join("tool");
                fs::create_dir_all(&tool).unwrap();
                fs::write(tool.join("extension.json"), manifest("tool")).unwrap();
                symlink("../../victim", &root).unwrap();
                ext(["remove", "tool", "--project", "--yes"])
            },
        ),
        // a cloned project's lock with values that are not ids
        Case::fails(
            "project_lock_commit_not_hex_then_sync_dry_run",
            1,
            "extensions.lock:8:17: \"commit\" of \"tool\" must be a full commit id",
            |w| {
                write_project_and_lock(w, "\"ééééé\"", &format!("sha256:{}", "0".repeat(64)));
                ext(["sync", "--dry-run"])
            },
        ),
        Case::fails(
            "project_lock_tree_not_a_hash_then_sync_frozen",
            1,
            "\"tree\" of \"tool\" must be \"sha256:\" and 64 hex digits",
            |w| {
                write_project_and_lock(w, "null", "sha256:\u{1b}[31mé");
                ext(["sync", "--frozen"])
            },
        ),
        // leftovers of killed runs that are links: only the links go
        Case::either("staging_leftover_links_to_the_victim", "existing", |w| {
            symlink(&w.victim, w.global_state().join("staging/.tmpleft")).unwrap();
            ext(["list"])
        })
        .changing(STAGING_AND_TRASH),
        Case::succeeds(
            "trash_leftover_holds_a_link_to_the_victim",
            "disabled",
            |w| {
                let old = w.global_state().join("trash/old");
                fs::create_dir_all(&old).unwrap();
                symlink(&w.victim, old.join("v")).unwrap();
                symlink(w.victim.join("precious.txt"), old.join("f")).unwrap();
                ext(["disable", "existing"])
            },
        )
        .changing(&[
            "zot-home/.ext-store/trash/",
            "zot-home/extensions/existing/extension.json",
        ]),
        // install records
        Case::either("record_is_a_named_pipe_then_info", "existing", |w| {
            replace_with_fifo(&record(w, "existing"));
            ext(["info", "existing"])
        }),
        Case::either("record_is_dev_zero_then_info", "existing", |w| {
            replace_with_link(&record(w, "existing"), Path::new("/dev/zero"));
            ext(["info", "existing"])
        }),
        Case::either("record_is_huge_then_info", "existing", |w| {
            sparse(&record(w, "existing"), 64 << 20);
            ext(["info", "existing"])
        }),
        Case::either("record_is_garbage_then_info", "existing", |w| {
            fs::write(record(w, "existing"), "\u{1b}[2J{{{ not json").unwrap();
            ext(["info", "existing"])
        }),
        Case::either("record_is_a_named_pipe_then_update", "existing", |w| {
            replace_with_fifo(&record(w, "existing"));
            ext(["update", "existing"])
        }),
        Case::succeeds("record_links_to_the_victim_then_remove", "existing", |w| {
            replace_with_link(&record(w, "existing"), &w.victim.join("precious.txt"));
            ext(["remove", "existing", "--yes"])
        })
        .changing(EXISTING_GONE),
        Case::succeeds("record_source_has_credentials_then_info", "existing", |w| {
            write_git_record(
                w,
                "https://user:hunter2@127.0.0.1:1/x.git?access_token=hunter2",
            );
            ext(["info", "existing"])
        })
        .forbid("hunter2"),
        Case::succeeds(
            "record_source_has_credentials_then_info_json",
            "existing",
            |w| {
                write_git_record(w, "https://user:hunter2@127.0.0.1:1/x.git");
                ext(["info", "existing", "--json"])
            },
        )
        .forbid("hunter2"),
        Case::fails(
            "record_source_has_credentials_then_update",
            1,
            "failed to update",
            |w| {
                write_git_record(w, "http://user:hunter2@127.0.0.1:1/x.git");
                ext(["update", "existing"])
            },
        )
        .forbid("hunter2"),
        Case::fails(
            "project_zot_folder_links_to_the_victim_then_install",
            1,
            ".zot",
            |w| {
                let zot = w.env.project.join(".zot");
                remove_any(&zot);
                symlink("../victim", &zot).unwrap();
                install_x(w, &["--project"])
            },
        ),
        // installed manifests that are special files or links
        Case::fails(
            "installed_manifest_links_outside_then_disable",
            1,
            "extension.json",
            |w| {
                replace_with_link(&existing_manifest(w), &w.victim.join("sub/keep.json"));
                ext(["disable", "existing"])
            },
        ),
        Case::fails(
            "installed_manifest_links_outside_then_enable",
            1,
            "extension.json",
            |w| {
                let off = r#"{"name": "existing", "exec": "./run.sh", "enabled": false}"#;
                fs::write(w.victim.join("off.json"), off).unwrap();
                replace_with_link(&existing_manifest(w), &w.victim.join("off.json"));
                ext(["enable", "existing"])
            },
        ),
        Case::fails(
            "installed_manifest_links_inside_then_disable",
            1,
            "extension.json",
            |w| {
                let dir = w.env.global_root().join("existing");
                fs::rename(dir.join("extension.json"), dir.join("real.json")).unwrap();
                symlink("real.json", dir.join("extension.json")).unwrap();
                ext(["disable", "existing"])
            },
        ),
        Case::either(
            "installed_manifest_is_a_named_pipe_then_list",
            "named pipe",
            |w| {
                replace_with_fifo(&existing_manifest(w));
                ext(["list"])
            },
        ),
        Case::either(
            "installed_manifest_is_a_named_pipe_then_info",
            "named pipe",
            |w| {
                replace_with_fifo(&existing_manifest(w));
                ext(["info", "existing"])
            },
        ),
        Case::fails(
            "installed_manifest_is_a_named_pipe_then_disable",
            1,
            "named pipe",
            |w| {
                replace_with_fifo(&existing_manifest(w));
                ext(["disable", "existing"])
            },
        ),
        Case::succeeds(
            "installed_manifest_is_a_named_pipe_then_remove",
            "existing",
            |w| {
                replace_with_fifo(&existing_manifest(w));
                ext(["remove", "existing", "--yes"])
            },
        )
        .changing(EXISTING_GONE),
        Case::either(
            "installed_manifest_is_dev_zero_then_list",
            "existing",
            |w| {
                replace_with_link(&existing_manifest(w), Path::new("/dev/zero"));
                ext(["list"])
            },
        ),
        Case::either("installed_manifest_is_huge_then_list", "existing", |w| {
            let text = format!(
                "{{\"name\": \"existing\", \"exec\": \"./run.sh\", \"description\": \"{}\"}}",
                "d".repeat(3 << 20)
            );
            fs::write(existing_manifest(w), text).unwrap();
            ext(["list"])
        }),
        Case::either("installed_manifest_is_garbage_then_list", "existing", |w| {
            fs::write(existing_manifest(w), "\u{1b}]0;pwned\u{7}\n{").unwrap();
            ext(["list"])
        }),
        Case::fails(
            "installed_manifest_is_garbage_then_enable",
            1,
            "extension.json",
            |w| {
                fs::write(existing_manifest(w), "{\"name\": ").unwrap();
                ext(["enable", "existing"])
            },
        ),
        // the last of duplicate keys counts; enable rewrites every one of them
        Case::succeeds(
            "duplicate_enabled_keys_then_enable",
            "enabled existing",
            |w| {
                fs::write(
                existing_manifest(w),
                r#"{"name": "existing", "exec": "./run.sh", "enabled": true, "enabled": false}"#,
            )
            .unwrap();
                ext(["enable", "existing"])
            },
        )
        .changing(&["zot-home/extensions/existing/extension.json"]),
        // extension folders that are links or hold links out
        Case::succeeds(
            "extension_folder_links_to_the_victim_then_remove",
            "existing",
            |w| {
                let dir = w.env.global_root().join("existing");
                let tool = w.victim.join("tool");
                fs::create_dir_all(&tool).unwrap();
                fs::write(tool.join("extension.json"), manifest("existing")).unwrap();
                remove_any(&dir);
                symlink(&tool, &dir).unwrap();
                ext(["remove", "existing", "--yes"])
            },
        )
        .changing(EXISTING_GONE),
        Case::succeeds("install_force_over_a_linked_extension", "replaced existing", |w| {
            let dir = w.env.global_root().join("existing");
            let tool = w.victim.join("tool");
            fs::create_dir_all(&tool).unwrap();
            fs::write(tool.join("extension.json"), manifest("existing")).unwrap();
            remove_any(&dir);
            symlink(&tool, &dir).unwrap();
            ext([
                OsString::from("install"),
                install_source(w, "existing"),
                OsString::from("--force"),
            ])
        })
        .changing(EXISTING_GONE),
        Case::succeeds(
            "extension_holds_links_to_the_victim_then_remove",
            "existing",
            |w| {
                let dir = w.env.global_root().join("existing");
                symlink(&w.victim, dir.join("all")).unwrap();
                symlink(w.victim.join("precious.txt"), dir.join("one")).unwrap();
                ext(["remove", "existing", "--yes"])
            },
        )
        .changing(EXISTING_GONE),
        Case::succeeds(
            "extension_holds_a_named_pipe_then_remove",
            "existing",
            |w| {
                mkfifo(&w.env.global_root().join("existing/pipe"));
                ext(["remove", "existing", "--yes"])
            },
        )
        .changing(EXISTING_GONE),
        Case::succeeds(
            "extension_holds_a_read_only_folder_then_remove",
            "existing",
            |w| {
                let ro = w.env.global_root().join("existing/ro");
                fs::create_dir_all(ro.join("deep")).unwrap();
                fs::write(ro.join("deep/f"), "f").unwrap();
                fs::set_permissions(&ro, fs::Permissions::from_mode(0o555)).unwrap();
                ext(["remove", "existing", "--yes"])
            },
        )
        .changing(EXISTING_GONE),
        Case::either(
            "extensions_root_holds_a_named_pipe_then_list",
            "existing",
            |w| {
                mkfifo(&w.env.global_root().join("pipe"));
                ext(["list"])
            },
        ),
        Case::either(
            "extensions_root_holds_a_stray_file_then_list",
            "existing",
            |w| {
                fs::write(w.env.global_root().join("notes\nerror: forged"), "x").unwrap();
                ext(["list"])
            },
        ),
        Case::succeeds("folder_name_forges_a_list_line", "existing", |w| {
            let dir = w.env.global_root().join("evil\nerror: forged");
            fs::create_dir_all(&dir).unwrap();
            fs::write(dir.join("extension.json"), manifest("evil")).unwrap();
            ext(["list"])
        })
        .forbid("\nerror: forged")
        ,
        Case::succeeds("manifest_description_forges_a_list_line", "existing", |w| {
            let text = r#"{"name": "existing", "exec": "./run.sh", "description": "a\nerror: forged\u001b[2J"}"#;
            fs::write(existing_manifest(w), text).unwrap();
            ext(["list"])
        })
        .forbid("\nerror: forged"),
        Case::succeeds("manifest_description_forges_an_info_line", "existing", |w| {
            let text = r#"{"name": "existing", "exec": "./run.sh", "description": "a\nerror: forged"}"#;
            fs::write(existing_manifest(w), text).unwrap();
            ext(["info", "existing"])
        })
        .forbid("\nerror: forged"),
        Case::fails("zot_home_is_a_file", 1, "zot-home", |w| {
            let file = w.env.work.join("zot-home");
            fs::write(&file, "x").unwrap();
            install_x(w, &[]).with_env("ZOT_HOME", file)
        }),
    ]
}

fn command_line_cases() -> Vec<Case> {
    vec![
        Case::fails("disable_parent_path", 1, "../x", |_| {
            ext(["disable", "../x"])
        }),
        Case::fails("disable_into_the_victim", 1, "../../victim", |_| {
            ext(["disable", "../../victim/sub"])
        }),
        Case::fails("enable_dot_dot", 1, "..", |_| ext(["enable", ".."])),
        Case::fails("remove_dot", 1, "\".\"", |_| ext(["remove", ".", "--yes"])),
        Case::fails("remove_dot_dot", 1, "\"..\"", |_| {
            ext(["remove", "..", "--yes"])
        }),
        Case::fails("remove_through_a_parent_path", 1, "existing", |_| {
            ext(["remove", "../extensions/existing", "--yes"])
        }),
        Case::fails("remove_absolute_path", 1, "victim", |w| {
            ext_owned(vec![
                "remove".into(),
                w.victim.display().to_string(),
                "--yes".into(),
            ])
        }),
        Case::fails("remove_the_state_folder", 1, ".ext-store", |_| {
            ext(["remove", ".ext-store", "--yes"])
        }),
        Case::fails("remove_empty_name", 1, "error: ", |_| {
            ext(["remove", "", "--yes"])
        }),
        Case::fails("remove_glob", 1, "*", |_| ext(["remove", "*", "--yes"])),
        Case::fails("info_empty_name", 1, "error: ", |_| ext(["info", ""])),
        Case::fails("disable_dash_name", 2, "-x", |_| ext(["disable", "-x"])),
        Case::fails("disable_dash_name_after_separator", 1, "-x", |_| {
            ext(["disable", "--", "-x"])
        }),
        Case::fails("enable_very_long_name", 1, "error: ", |_| {
            ext_owned(vec!["enable".into(), "n".repeat(5000)])
        }),
        Case::fails("info_control_characters", 1, "\\n", |_| {
            ext(["info", "a\nerror: everything is fine"])
        }),
        Case::fails("disable_escape_sequence", 1, "\\u{1b}", |_| {
            ext(["disable", "a\u{1b}]0;title\u{7}"])
        }),
        Case::fails("update_parent_path", 1, "../existing", |_| {
            ext(["update", "../existing"])
        }),
        Case::fails("logs_into_the_victim", 2, "path separator", |_| {
            ext(["logs", "../../victim/precious"])
        })
        .forbid("do not touch"),
        Case::fails("call_parent_path", 1, "../x", |_| {
            ext(["call", "../x", "hello"])
        }),
        Case::fails("install_unknown_flag", 2, "-x", |w| install_x(w, &["-x"])),
        Case::fails("new_name_with_separator", 2, "contains '/'", |w| {
            ext_owned(vec![
                "new".into(),
                "../../victim/new".into(),
                "--lang".into(),
                "shell".into(),
            ])
            .in_dir(w.env.work.clone())
        }),
        Case::fails("link_a_named_pipe", 1, "named pipe", |w| {
            let fifo = w.env.work.join("lpipe");
            mkfifo(&fifo);
            ext([OsString::from("link"), fifo.into_os_string()])
        }),
    ]
}

/// A local bare repository `work/repos/repo.git` with a valid extension `x`.
fn local_repo(w: &World) -> String {
    let root = w.env.work.join("repos");
    fs::create_dir_all(&root).unwrap();
    Repo::with_files(
        &root,
        "repo",
        &[
            ("extension.json", &manifest("x")),
            ("run.sh", "#!/bin/sh\n"),
        ],
    );
    format!("file://{}/repo.git", root.display())
}

fn install_url(url: impl Into<OsString>) -> Prepared {
    ext([OsString::from("install"), url.into()])
}

// A table of cases, one per entry.
#[allow(clippy::too_many_lines)]
fn url_cases() -> Vec<Case> {
    vec![
        Case::fails("userinfo_password", 1, "127.0.0.1", |_| {
            install_url("http://user:hunter2@127.0.0.1:1/x.git")
        })
        .forbid("hunter2"),
        Case::fails("userinfo_https", 1, "127.0.0.1", |_| {
            install_url("https://user:hunter2@127.0.0.1:1/x.git")
        })
        .forbid("hunter2"),
        Case::fails("userinfo_token_only", 1, "127.0.0.1", |_| {
            install_url("https://hunter2@127.0.0.1:1/x.git")
        })
        .forbid("hunter2"),
        Case::fails("userinfo_password_with_hash", 1, "cannot fetch", |_| {
            install_url("http://user:hunter2#rest@127.0.0.1:1/x.git")
        })
        .forbid("hunter2"),
        Case::fails(
            "userinfo_password_with_question_mark",
            1,
            "cannot fetch",
            |_| install_url("http://user:hunter2?q@127.0.0.1:1/x.git"),
        )
        .forbid("hunter2"),
        Case::fails("userinfo_password_with_at", 1, "127.0.0.1", |_| {
            install_url("http://user:hunter2@x@127.0.0.1:1/x.git")
        })
        .forbid("hunter2"),
        Case::fails("userinfo_percent_encoded", 1, "127.0.0.1", |_| {
            install_url("http://user:hun%74er2@127.0.0.1:1/x.git")
        })
        .forbid("hun%74er2"),
        Case::fails("ssh_password", 1, "127.0.0.1", |_| {
            install_url("ssh://git:hunter2@127.0.0.1:1/x.git")
        })
        .forbid("hunter2"),
        Case::fails("git_protocol_userinfo", 1, "127.0.0.1", |_| {
            install_url("git://user:hunter2@127.0.0.1:1/x.git")
        })
        .forbid("hunter2"),
        Case::fails("query_access_token", 1, "127.0.0.1", |_| {
            install_url("http://127.0.0.1:1/x.git?access_token=hunter2")
        })
        .forbid("hunter2"),
        Case::fails("query_private_token", 1, "127.0.0.1", |_| {
            install_url("https://127.0.0.1:1/x.git?foo=1&private_token=hunter2")
        })
        .forbid("hunter2"),
        Case::fails("query_signature", 1, "127.0.0.1", |_| {
            install_url("http://127.0.0.1:1/x.git?sig=hunter2")
        })
        .forbid("hunter2"),
        // git would read the user name as the host: refused before any connection.
        Case::fails("scp_like_password", 2, "cannot carry a password", |_| {
            install_url("user:hunter2@127.0.0.1:x.git")
        })
        .forbid("hunter2"),
        Case::fails("unreachable_http", 1, "127.0.0.1:1", |_| {
            install_url("http://127.0.0.1:1/x.git")
        }),
        Case::fails("unreachable_https", 1, "127.0.0.1:1", |_| {
            install_url("https://127.0.0.1:1/x.git")
        }),
        Case::fails("unreachable_git", 1, "127.0.0.1:1", |_| {
            install_url("git://127.0.0.1:1/x.git")
        }),
        Case::fails("unreachable_ssh", 1, "127.0.0.1:1", |_| {
            install_url("ssh://git@127.0.0.1:1/x.git")
        }),
        Case::fails("url_with_newline", 2, "everything is fine", |_| {
            install_url("http://127.0.0.1:1/x\nerror: everything is fine.git")
        }),
        // A decoded newline in the user name would be a line of its own to a credential
        // helper (`host=github.com`): refused before anything connects, as git does.
        Case::fails(
            "url_user_with_encoded_newline",
            2,
            "U+000A) in its user name",
            |_| {
                install_url(
                    "http://victim%0Ahost%3Dgithub.com%0Aprotocol%3Dhttps@127.0.0.1:1/r.git",
                )
            },
        ),
        Case::fails(
            "url_password_with_encoded_cr",
            2,
            "U+000D) in its password",
            |_| install_url("http://u:hunter2%0D@127.0.0.1:1/r.git"),
        )
        .forbid("hunter2"),
        Case::fails(
            "url_host_with_encoded_nul",
            2,
            "U+0000) in its host",
            |_| install_url("https://127.0.0.1%00.example:1/r.git"),
        ),
        Case::fails(
            "url_path_with_encoded_escape",
            2,
            "U+001B) in its path",
            |_| install_url("git://127.0.0.1:1/r%1B]0;pwned%07.git"),
        ),
        Case::fails("url_path_with_encoded_c1", 2, "U+009B) in its path", |_| {
            install_url("http://127.0.0.1:1/r%C2%9B2J.git")
        }),
        Case::fails(
            "scp_user_with_encoded_newline",
            2,
            "U+000A) in its user name",
            |_| install_url("git%0Ahost=x@127.0.0.1:r.git"),
        ),
        Case::fails(
            "add_url_with_encoded_newline",
            2,
            "U+000A) in its path",
            |_| ext(["add", "http://127.0.0.1:1/r%0Ahost=x.git"]),
        ),
        Case::fails(
            "sync_url_with_encoded_newline",
            1,
            "extensions.json:3:21: \"source\" of \"r\"",
            |w| {
                let dir = w.env.project.join(".zot");
                fs::create_dir_all(&dir).unwrap();
                fs::write(
                dir.join("extensions.json"),
                "{\n  \"extensions\": {\n    \"r\": {\"source\": \"http://x%0Ahost%3Dgithub.com@127.0.0.1:1/r.git\"}\n  }\n}\n",
            )
            .unwrap();
                ext(["sync"])
            },
        ),
        Case::fails(
            "update_record_url_with_encoded_newline",
            1,
            "U+000A) in its user name",
            |w| {
                write_git_record(w, "http://x%0Ahost%3Dgithub.com@127.0.0.1:1/r.git");
                ext(["update", "existing"])
            },
        ),
        Case::fails("ext_transport", 1, "ext::", |w| {
            install_url(format!(
                "ext::sh -c touch% {}/pwned.git",
                w.victim.display()
            ))
        }),
        Case::fails("fd_transport", 1, "fd::", |_| install_url("fd::0.git")),
        Case::fails("file_url_to_nowhere", 1, "nowhere", |w| {
            install_url(format!("file://{}/nowhere.git", w.env.work.display()))
        }),
        Case::fails("ref_with_parent_paths", 1, "../../x", |w| {
            let url = local_repo(w);
            ext_owned(vec![
                "install".into(),
                url,
                "--ref".into(),
                "../../x".into(),
            ])
        }),
        Case::fails("ref_that_is_an_option", 1, "-", |w| {
            let url = local_repo(w);
            ext_owned(vec![
                "install".into(),
                url,
                "--ref=--upload-pack=touch".into(),
            ])
        }),
        Case::fails("ref_for_a_folder", 2, "--ref", |w| {
            install_x(w, &["--ref", "main"])
        }),
        Case::fails("subdir_with_parent_paths", 2, "../..", |w| {
            let url = local_repo(w);
            ext_owned(vec![
                "install".into(),
                url,
                "--subdir".into(),
                "../..".into(),
            ])
        }),
        Case::fails("subdir_absolute", 2, "/etc", |w| {
            let url = local_repo(w);
            ext_owned(vec![
                "install".into(),
                url,
                "--subdir".into(),
                "/etc".into(),
            ])
        }),
        Case::fails("subdir_in_the_fragment", 2, "..", |w| {
            install_url(format!("{}#../..", local_repo(w)))
        }),
        Case::fails(
            "repository_manifest_is_a_symlink",
            1,
            "extension.json",
            |w| {
                let root = w.env.work.join("repos");
                fs::create_dir_all(&root).unwrap();
                let repo = Repo::with_files(
                    &root,
                    "repo",
                    &[("real.json", &manifest("x")), ("run.sh", "")],
                );
                repo.commit_with("link", |dir| {
                    symlink("real.json", dir.join("extension.json")).unwrap();
                });
                install_url(format!("file://{}/repo.git", root.display()))
            },
        ),
        Case::fails(
            "repository_manifest_links_outside",
            1,
            "extension.json",
            |w| {
                let root = w.env.work.join("repos");
                fs::create_dir_all(&root).unwrap();
                let repo = Repo::with_files(&root, "repo", &[("run.sh", "")]);
                repo.commit_with("link", |dir| {
                    symlink("/etc/hostname", dir.join("extension.json")).unwrap();
                });
                install_url(format!("file://{}/repo.git", root.display()))
            },
        ),
    ]
}

fn log_cases() -> Vec<Case> {
    vec![
        Case::fails("log_is_a_named_pipe", 1, "named pipe", |w| {
            fs::create_dir_all(w.env.home.join("logs")).unwrap();
            mkfifo(&w.log("existing"));
            ext(["logs", "existing"])
        }),
        Case::fails("log_is_a_named_pipe_with_lines", 1, "named pipe", |w| {
            fs::create_dir_all(w.env.home.join("logs")).unwrap();
            mkfifo(&w.log("existing"));
            ext(["logs", "existing", "-n", "5"])
        }),
        Case::fails("log_links_to_dev_zero", 1, "ext-existing.log", |w| {
            fs::create_dir_all(w.env.home.join("logs")).unwrap();
            symlink("/dev/zero", w.log("existing")).unwrap();
            ext(["logs", "existing"])
        }),
        Case::fails(
            "log_links_to_dev_zero_with_lines",
            1,
            "ext-existing.log",
            |w| {
                fs::create_dir_all(w.env.home.join("logs")).unwrap();
                symlink("/dev/zero", w.log("existing")).unwrap();
                ext(["logs", "existing", "-n", "1"])
            },
        ),
        Case::fails("log_is_a_directory", 1, "ext-existing.log", |w| {
            fs::create_dir_all(w.log("existing")).unwrap();
            ext(["logs", "existing"])
        }),
        Case::fails("logs_folder_is_a_file", 1, "logs", |w| {
            fs::write(w.env.home.join("logs"), "x").unwrap();
            ext(["logs", "existing"])
        }),
        Case::fails("log_is_unreadable", 1, "ext-existing.log", |w| {
            fs::create_dir_all(w.env.home.join("logs")).unwrap();
            fs::write(w.log("existing"), "line\n").unwrap();
            w.env.open_to_everyone();
            fs::set_permissions(w.log("existing"), fs::Permissions::from_mode(0o000)).unwrap();
            ext(["logs", "existing"]).unprivileged()
        }),
        Case::succeeds("huge_sparse_log_tail", "last line", |w| {
            fs::create_dir_all(w.env.home.join("logs")).unwrap();
            sparse(&w.log("existing"), 4 << 30);
            let mut log = fs::OpenOptions::new()
                .append(true)
                .open(w.log("existing"))
                .unwrap();
            std::io::Write::write_all(&mut log, b"\nlast line\n").unwrap();
            ext(["logs", "existing", "-n", "1"])
        }),
        Case::succeeds("log_with_a_forged_name_line", "hello", |w| {
            fs::create_dir_all(w.env.home.join("logs")).unwrap();
            fs::write(w.log("existing"), "hello\n").unwrap();
            ext(["logs", "existing", "-n", "1"])
        }),
    ]
}

/// `zot ext install` of the hostile layer `row` of [`registry::hostile_layers`], pushed to a
/// registry of its own (kept alive by the prepared command).
fn install_hostile_layer(row: &str) -> Prepared {
    let reg = registry::Registry::start();
    let (repo, _, bytes) = registry::hostile_layers()
        .into_iter()
        .find(|(repo, _, _)| *repo == row)
        .expect("a row of hostile_layers");
    reg.push_extension(repo, "1", registry::EVIL, &bytes, registry::LAYER_TYPE);
    let mut prepared = install_url(reg.oci(&format!("{repo}:1")));
    prepared.keep.push(Box::new(reg));
    prepared
}

/// `zot ext install` from a registry that serves `manifest` for every reference and `blob`
/// for every digest.
fn install_from_liar(manifest: String, blob: &[u8], reference: &str) -> Prepared {
    let port = registry::lying_registry(manifest.into_bytes(), blob.to_vec());
    install_url(format!("oci://127.0.0.1:{port}/{reference}"))
}

fn liar_manifest(layer_size: u64, layer: &[u8]) -> String {
    registry::manifest_json(
        &registry::digest_of(registry::EVIL),
        registry::EVIL.len() as u64,
        registry::LAYER_TYPE,
        &registry::digest_of(layer),
        layer_size,
    )
}

// A table of cases, one per entry: extensions from OCI registries (tests/cli/oci.rs has the
// round trips).
fn registry_cases() -> Vec<Case> {
    vec![
        Case::fails("oci_layer_dotdot", 1, "climbs out", |_| {
            install_hostile_layer("dotdot")
        }),
        Case::fails("oci_layer_absolute", 1, "absolute path", |_| {
            install_hostile_layer("absolute")
        }),
        Case::fails("oci_layer_link_out", 1, "outside the extension", |_| {
            install_hostile_layer("link-out")
        }),
        Case::fails(
            "oci_layer_link_out_through_a_link",
            1,
            "outside the extension",
            |_| install_hostile_layer("link-via-link"),
        ),
        Case::fails("oci_layer_device", 1, "a character device", |_| {
            install_hostile_layer("device")
        }),
        Case::fails("oci_layer_fifo", 1, "a named pipe", |_| {
            install_hostile_layer("fifo")
        }),
        Case::fails("oci_layer_hard_link", 1, "hard link", |_| {
            install_hostile_layer("hardlink")
        }),
        Case::fails("oci_layer_under_a_link", 1, "a link", |_| {
            install_hostile_layer("under-link")
        }),
        Case::fails("oci_wrong_manifest_digest", 1, "has the digest", |_| {
            let layer = registry::layer(|_| {});
            let pinned = format!("x@sha256:{}", "1".repeat(64));
            install_from_liar(liar_manifest(layer.len() as u64, &layer), &layer, &pinned)
        }),
        Case::fails("oci_truncated_blob", 1, "ended after", |_| {
            let layer = registry::layer(|_| {});
            install_from_liar(
                liar_manifest(layer.len() as u64 + 100, &layer),
                &layer,
                "x:1",
            )
        }),
        Case::fails("oci_10_gb_claimed", 1, "claims 10000000000 bytes", |_| {
            let layer = registry::layer(|_| {});
            install_from_liar(liar_manifest(10_000_000_000, &layer), &layer, "x:1")
        }),
    ]
}
