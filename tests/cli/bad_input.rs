//! Hostile install sources and manifests: the part of the hostile-input table
//! (`hostile::hostile_inputs` runs it) where `zot ext install` is given a bad folder or
//! `extension.json`. Each case checks exit code, the one-line message and that nothing
//! changed on disk (git-specific cases live in `git_install` and `hostile`).

use std::ffi::OsString;
use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};

use crate::support::hostile::{Case, Prepared, World, ext, mkfifo};
use crate::support::manifest;

fn install(path: impl Into<OsString>) -> Prepared {
    ext([OsString::from("install"), path.into()])
}

/// A source folder `work/bad` with this manifest text (and a `run.sh`).
fn with_manifest(w: &World, text: &str) -> Prepared {
    install(w.env.source_with_manifest("bad", text))
}

fn with_manifest_bytes(w: &World, bytes: &[u8]) -> Prepared {
    let dir = w.env.source("bad", "x");
    fs::write(dir.join("extension.json"), bytes).unwrap();
    install(dir)
}

fn named(name: &str) -> String {
    serde_json::json!({"name": name, "exec": "./run.sh"}).to_string()
}

/// A valid source `work/bad` named `x`, changed by `change`.
fn source_with(w: &World, change: impl FnOnce(&Path)) -> Prepared {
    let dir = w.env.source("bad", "x");
    change(&dir);
    install(dir)
}

/// A valid source `work/bad` that the unprivileged user may read, except what `change` does.
fn unprivileged_source(w: &World, change: impl FnOnce(&Path)) -> Prepared {
    let dir = w.env.source("bad", "x");
    w.env.open_to_everyone();
    change(&dir);
    install(dir).unprivileged()
}

fn chmod(path: &Path, mode: u32) {
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
}

/// Nesting deep enough to overflow a recursive parser's stack.
fn deeply_nested() -> String {
    let depth = 200_000;
    format!(
        "{{\"name\": \"x\", \"exec\": \"./run.sh\", \"x\": {}{}}}",
        "[".repeat(depth),
        "]".repeat(depth)
    )
}

/// A valid manifest padded past the 1 MiB read cap.
fn huge_manifest() -> String {
    let pad = "a".repeat(2 << 20);
    format!("{{\"name\": \"x\", \"exec\": \"./run.sh\", \"description\": \"{pad}\"}}")
}

/// Where a folder whose name forges a second error line would go.
fn forged_dir(w: &World) -> PathBuf {
    w.env.work.join("x\nerror: everything is fine")
}

/// What installing the extension named "my ext" adds.
const NEW_MY_EXT: &[&str] = &[
    "zot-home/extensions/my ext",
    "zot-home/.ext-store/sources/my ext.json",
    "zot-home/.ext-store/files/my ext.json",
];

/// What installing the extension named "*" adds.
const NEW_GLOB: &[&str] = &[
    "zot-home/extensions/*",
    "zot-home/.ext-store/sources/*.json",
    "zot-home/.ext-store/files/*.json",
];

/// Links that point outside the source are kept as links; the install
/// changes the global root, its record and its file list only.
const NEW_X: &[&str] = &[
    "zot-home/extensions/x",
    "zot-home/.ext-store/sources/x.json",
    "zot-home/.ext-store/files/x.json",
];

// A table of cases, one per entry.
#[allow(clippy::too_many_lines)]
pub(crate) fn cases() -> Vec<Case> {
    vec![
        // --- manifest syntax and types -----------------------------------------------
        Case::fails(
            "invalid_json",
            1,
            "bad/extension.json:3:3: invalid JSON: expected `,` or `}`",
            |w| with_manifest(w, "{\n  \"name\": \"x\"\n  \"exec\": \"y\"\n}"),
        ),
        Case::fails(
            "trailing_comma",
            1,
            "extension.json:1:27: invalid JSON: trailing comma",
            |w| with_manifest(w, "{\"name\": \"x\", \"exec\": \"y\",}"),
        ),
        Case::fails(
            "empty_manifest",
            1,
            "extension.json:1:1: invalid JSON: EOF while parsing",
            |w| with_manifest(w, ""),
        ),
        Case::fails(
            "whitespace_manifest",
            1,
            "invalid JSON: EOF while parsing",
            |w| with_manifest(w, " \n\t\n"),
        ),
        Case::fails(
            "top_level_array",
            1,
            "extension.json:1:1: expected a JSON object at the top level, found an array",
            |w| with_manifest(w, "[{\"name\": \"x\"}]"),
        ),
        Case::fails(
            "top_level_null",
            1,
            "expected a JSON object at the top level",
            |w| with_manifest(w, "null"),
        ),
        Case::fails(
            "top_level_string",
            1,
            "expected a JSON object at the top level",
            |w| with_manifest(w, "\"x\""),
        ),
        Case::fails("two_objects", 1, "invalid JSON: trailing characters", |w| {
            with_manifest(w, "{\"name\": \"x\", \"exec\": \"y\"} {}")
        }),
        Case::fails("comments", 1, "invalid JSON", |w| {
            with_manifest(w, "// c\n{\"name\": \"x\", \"exec\": \"y\"}")
        }),
        Case::fails("single_quotes", 1, "invalid JSON", |w| {
            with_manifest(w, "{'name': 'x', 'exec': 'y'}")
        }),
        Case::fails(
            "name_is_a_number",
            1,
            "extension.json:1:10: \"name\" must be a string, found the number 5",
            |w| with_manifest(w, "{\"name\": 5, \"exec\": \"y\"}"),
        ),
        // Go's decoder leaves a string field as it was for null: no name, as zot says.
        Case::fails("name_is_null", 1, "missing required field \"name\"", |w| {
            with_manifest(w, "{\"name\": null, \"exec\": \"y\"}")
        }),
        Case::fails(
            "exec_is_an_array",
            1,
            "extension.json:2:10: \"exec\" must be a string, found an array",
            |w| with_manifest(w, "{\"name\": \"x\",\n \"exec\": [\"y\"]}"),
        ),
        Case::fails(
            "args_is_a_string",
            1,
            "\"args\" must be an array of strings, found a string",
            |w| with_manifest(w, "{\"name\": \"x\", \"exec\": \"y\", \"args\": \"-v\"}"),
        ),
        Case::fails(
            "args_element_is_a_number",
            1,
            "\"args\"[1] must be a string, found the number 2",
            |w| {
                with_manifest(
                    w,
                    "{\"name\": \"x\", \"exec\": \"y\", \"args\": [\"a\", 2]}",
                )
            },
        ),
        Case::fails(
            "version_is_a_number",
            1,
            "\"version\" must be a string, found the number 1.0",
            |w| with_manifest(w, "{\"name\": \"x\", \"exec\": \"y\", \"version\": 1.0}"),
        ),
        Case::fails(
            "language_is_an_object",
            1,
            "\"language\" must be a string, found an object",
            |w| with_manifest(w, "{\"name\": \"x\", \"exec\": \"y\", \"language\": {}}"),
        ),
        Case::fails(
            "description_is_true",
            1,
            "\"description\" must be a string, found true",
            |w| {
                with_manifest(
                    w,
                    "{\"name\": \"x\", \"exec\": \"y\", \"description\": true}",
                )
            },
        ),
        Case::fails(
            "enabled_is_a_string",
            1,
            "\"enabled\" must be true or false, found a string",
            |w| {
                with_manifest(
                    w,
                    "{\"name\": \"x\", \"exec\": \"y\", \"enabled\": \"yes\"}",
                )
            },
        ),
        Case::fails(
            "enabled_is_a_number",
            1,
            "\"enabled\" must be true or false",
            |w| with_manifest(w, "{\"name\": \"x\", \"exec\": \"y\", \"enabled\": 1}"),
        ),
        Case::fails("missing_name", 1, "missing required field \"name\"", |w| {
            with_manifest(w, "{\"exec\": \"y\"}")
        }),
        Case::fails("missing_exec", 1, "missing required field \"exec\"", |w| {
            with_manifest(w, "{\"name\": \"x\"}")
        }),
        Case::fails("empty_exec", 1, "\"exec\" must not be empty", |w| {
            with_manifest(w, "{\"name\": \"x\", \"exec\": \"\"}")
        }),
        Case::fails("deeply_nested", 1, "extension.json", |w| {
            with_manifest(w, &deeply_nested())
        }),
        Case::fails("huge_manifest", 1, "extension.json", |w| {
            with_manifest(w, &huge_manifest())
        }),
        Case::fails(
            "nul_byte_in_a_string",
            1,
            "invalid JSON: control character",
            |w| {
                with_manifest_bytes(
                    w,
                    b"{\"name\": \"x\", \"exec\": \"./run.sh\", \"description\": \"a\0b\"}",
                )
            },
        ),
        Case::fails(
            "nul_byte_after_the_object",
            1,
            "invalid JSON: trailing characters",
            |w| with_manifest_bytes(w, b"{\"name\": \"x\", \"exec\": \"./run.sh\"}\0"),
        ),
        // The last of duplicate keys counts, as for the host's JSON reader.
        Case::fails(
            "duplicate_name_key",
            1,
            "extension \"existing\" is already installed",
            |w| {
                with_manifest(
                    w,
                    "{\"name\": \"x\", \"name\": \"existing\", \"exec\": \"./run.sh\"}",
                )
            },
        ),
        Case::fails(
            "manifest_is_not_utf8",
            1,
            "extension.json: is not valid UTF-8",
            |w| with_manifest_bytes(w, b"{\"name\": \"\xff\"}"),
        ),
        Case::fails("manifest_is_utf16", 1, "extension.json", |w| {
            with_manifest_bytes(w, b"\xff\xfe{\0\"\0n\0a\0m\0e\0\"\0:\0 \0\"\0x\0\"\0}\0")
        }),
        Case::fails(
            "manifest_has_a_byte_order_mark",
            1,
            "extension.json: starts with a byte order mark",
            |w| with_manifest_bytes(w, b"\xef\xbb\xbf{\"name\": \"x\", \"exec\": \"y\"}"),
        ),
        // `exec` resolves as zot resolves it (absolute as is): pointing outside is allowed,
        // and installing never runs or opens it.
        Case::succeeds("exec_pointing_outside", "installed x", |w| {
            with_manifest(w, r#"{"name": "x", "exec": "../../victim/precious.txt"}"#)
        })
        .changing(NEW_X),
        Case::succeeds("exec_absolute", "installed x", |w| {
            with_manifest(
                w,
                r#"{"name": "x", "exec": "/bin/sh", "args": ["-c", "exit 0"]}"#,
            )
        })
        .changing(NEW_X),
        // --- names in the manifest ---------------------------------------------------
        Case::fails("empty_name", 1, "\"name\" must not be empty", |w| {
            with_manifest(w, &named(""))
        }),
        Case::fails("name_with_parent_dir", 1, "\"name\" contains '/'", |w| {
            with_manifest(w, &named("../x"))
        }),
        Case::fails("name_with_separator", 1, "\"name\" contains '/'", |w| {
            with_manifest(w, &named("a/b"))
        }),
        Case::fails("name_with_backslash", 1, "\"name\" contains '\\\\'", |w| {
            with_manifest(w, &named("a\\b"))
        }),
        Case::fails(
            "name_dot",
            1,
            "\"name\" \".\" is not a usable directory name",
            |w| with_manifest(w, &named(".")),
        ),
        Case::fails(
            "name_dot_dot",
            1,
            "\"name\" \"..\" is not a usable directory name",
            |w| with_manifest(w, &named("..")),
        ),
        Case::fails("name_with_nul", 1, "\"name\" contains '\\0'", |w| {
            with_manifest(w, &named("a\u{0}b"))
        }),
        Case::fails("name_with_newline", 1, "\"name\" contains '\\n'", |w| {
            with_manifest(w, &named("a\nerror: forged"))
        }),
        Case::fails("name_with_escape", 1, "\"name\" contains '\\u{1b}'", |w| {
            with_manifest(w, &named("a\u{1b}[2Jb"))
        }),
        Case::fails(
            "name_with_right_to_left_override",
            1,
            "\"name\" contains '\\u{202e}'",
            |w| with_manifest(w, &named("a\u{202e}b")),
        ),
        Case::fails("name_too_long", 1, "\"name\" is 300 bytes long", |w| {
            with_manifest(w, &named(&"n".repeat(300)))
        }),
        Case::fails(
            "name_too_long_for_its_log",
            1,
            "\"name\" is 248 bytes long",
            |w| with_manifest(w, &named(&"n".repeat(248))),
        ),
        // zot loads any name that is one folder name: spaces, other letters, globs.
        Case::succeeds("name_with_space", "installed my ext", |w| {
            with_manifest(w, &named("my ext"))
        })
        .changing(NEW_MY_EXT),
        Case::succeeds("name_is_a_glob", "installed *", |w| {
            with_manifest(w, &named("*"))
        })
        .changing(NEW_GLOB),
        Case::fails(
            "name_clashes_with_an_installed_one",
            1,
            "extension \"existing\" is already installed",
            |w| install(w.env.source("again", "existing")),
        ),
        // --- the source folder -------------------------------------------------------
        Case::fails(
            "manifest_is_a_directory",
            1,
            "extension.json: is a directory",
            |w| {
                let dir = w.env.work.join("bad");
                fs::create_dir_all(dir.join("extension.json")).unwrap();
                install(dir)
            },
        ),
        Case::fails(
            "no_manifest",
            1,
            "extension.json: not found; an extension needs extension.json at the top of its folder",
            |w| {
                let dir = w.env.work.join("bad");
                fs::create_dir_all(&dir).unwrap();
                fs::write(dir.join("main.py"), "").unwrap();
                install(dir)
            },
        ),
        Case::fails("only_a_git_folder", 1, "extension.json: not found", |w| {
            let dir = w.env.work.join("bad");
            fs::create_dir_all(&dir).unwrap();
            crate::support::git_servers::git(&dir, &["init", "-q"]);
            install(dir)
        }),
        Case::fails("empty_folder", 1, "extension.json: not found", |w| {
            let dir = w.env.work.join("bad");
            fs::create_dir_all(&dir).unwrap();
            install(dir)
        }),
        Case::fails(
            "manifest_only_in_a_subfolder",
            1,
            "there is one in extensions/inner/: install that folder instead",
            |w| {
                let dir = w.env.work.join("repo");
                fs::create_dir_all(dir.join("extensions/inner")).unwrap();
                fs::write(
                    dir.join("extensions/inner/extension.json"),
                    manifest("inner"),
                )
                .unwrap();
                install(dir)
            },
        ),
        Case::fails(
            "source_is_a_file",
            1,
            "plain.txt is a file, not a folder",
            |w| {
                let file = w.env.work.join("plain.txt");
                fs::write(&file, "x").unwrap();
                install(file)
            },
        ),
        Case::fails(
            "source_is_the_manifest_itself",
            1,
            "install its folder instead: zot ext install",
            |w| install(w.env.source("m", "m").join("extension.json")),
        ),
        Case::fails("source_is_a_named_pipe", 1, "named pipe", |w| {
            let fifo = w.env.work.join("srcpipe");
            mkfifo(&fifo);
            install(fifo)
        }),
        Case::fails("source_is_dev_zero", 1, "device", |_| install("/dev/zero")),
        Case::fails(
            "source_does_not_exist",
            1,
            "missing does not exist; give a folder that holds extension.json or a git URL",
            |w| install(w.env.work.join("missing")),
        ),
        Case::fails("source_is_empty", 2, "the source is empty", |_| install("")),
        Case::fails(
            "source_inside_the_destination",
            1,
            "is inside the extensions folder",
            |w| install(w.env.global_root().join("existing")),
        ),
        Case::fails("source_is_the_state_folder", 1, ".ext-store", |w| {
            install(w.global_state())
        }),
        Case::fails(
            "source_contains_the_store",
            1,
            "contains the extensions folder",
            |w| install(w.base().to_path_buf()),
        ),
        Case::fails(
            "source_is_the_project_root",
            1,
            "is inside the extensions folder",
            |w| install(w.env.project_root().join("local")).with_arg("--project"),
        ),
        Case::fails(
            "source_name_forges_an_error_line",
            1,
            "everything is fine",
            |w| {
                let dir = forged_dir(w);
                fs::create_dir_all(&dir).unwrap();
                install(dir)
            },
        ),
        Case::fails(
            "file_name_forges_an_error_line",
            1,
            "everything is fine",
            |w| source_with(w, |dir| mkfifo(&dir.join("x\nerror: everything is fine"))),
        ),
        // --- special files and links in the source -----------------------------------
        Case::fails(
            "named_pipe",
            1,
            "pipe is a special file (a named pipe)",
            |w| source_with(w, |dir| mkfifo(&dir.join("pipe"))),
        ),
        Case::fails(
            "named_pipe_deep_inside",
            1,
            "a/b/c/pipe is a special file (a named pipe)",
            |w| {
                source_with(w, |dir| {
                    fs::create_dir_all(dir.join("a/b/c")).unwrap();
                    mkfifo(&dir.join("a/b/c/pipe"));
                })
            },
        ),
        // The manifest is checked before the first file is copied: a pipe deep inside a
        // folder without one (or with one that does not read) is never reached.
        Case::fails(
            "no_manifest_and_a_named_pipe_deep_inside",
            1,
            "bad/extension.json: not found",
            |w| {
                source_with(w, |dir| {
                    fs::remove_file(dir.join("extension.json")).unwrap();
                    fs::create_dir_all(dir.join("a/b/c")).unwrap();
                    mkfifo(&dir.join("a/b/c/pipe"));
                })
            },
        ),
        Case::fails(
            "invalid_manifest_and_a_named_pipe_deep_inside",
            1,
            "bad/extension.json:1:2: invalid JSON",
            |w| {
                source_with(w, |dir| {
                    fs::write(dir.join("extension.json"), "{,").unwrap();
                    fs::create_dir_all(dir.join("a/b/c")).unwrap();
                    mkfifo(&dir.join("a/b/c/pipe"));
                })
            },
        ),
        Case::fails(
            "manifest_is_a_named_pipe_beside_a_pipe_deep_inside",
            1,
            "bad/extension.json: is a named pipe, not a file",
            |w| {
                source_with(w, |dir| {
                    fs::remove_file(dir.join("extension.json")).unwrap();
                    mkfifo(&dir.join("extension.json"));
                    fs::create_dir_all(dir.join("a/b/c")).unwrap();
                    mkfifo(&dir.join("a/b/c/pipe"));
                })
            },
        ),
        Case::fails("socket", 1, "sock is a special file (a socket)", |w| {
            source_with(w, |dir| {
                let listener = std::os::unix::net::UnixListener::bind(dir.join("sock")).unwrap();
                drop(listener);
            })
        }),
        Case::fails("manifest_is_a_named_pipe", 1, "named pipe", |w| {
            source_with(w, |dir| {
                fs::remove_file(dir.join("extension.json")).unwrap();
                mkfifo(&dir.join("extension.json"));
            })
        }),
        Case::fails("manifest_is_dev_zero", 1, "extension.json", |w| {
            source_with(w, |dir| {
                fs::remove_file(dir.join("extension.json")).unwrap();
                symlink("/dev/zero", dir.join("extension.json")).unwrap();
            })
        }),
        Case::fails("manifest_is_a_link_outside", 1, "extension.json", |w| {
            fs::write(w.env.work.join("elsewhere.json"), manifest("x")).unwrap();
            source_with(w, |dir| {
                fs::remove_file(dir.join("extension.json")).unwrap();
                symlink("../elsewhere.json", dir.join("extension.json")).unwrap();
            })
        }),
        Case::fails(
            "manifest_is_a_dangling_link",
            1,
            "extension.json -> gone.json is a dangling symbolic link",
            |w| {
                source_with(w, |dir| {
                    fs::remove_file(dir.join("extension.json")).unwrap();
                    symlink("gone.json", dir.join("extension.json")).unwrap();
                })
            },
        ),
        Case::fails(
            "manifest_is_a_link_loop",
            1,
            "extension.json -> extension.json is a symbolic link loop",
            |w| {
                source_with(w, |dir| {
                    fs::remove_file(dir.join("extension.json")).unwrap();
                    symlink("extension.json", dir.join("extension.json")).unwrap();
                })
            },
        ),
        Case::succeeds("dangling_symlink_is_kept", "lib -> nowhere", |w| {
            source_with(w, |dir| symlink("nowhere", dir.join("lib")).unwrap())
        })
        .changing(NEW_X),
        Case::succeeds(
            "absolute_symlink_outside_is_kept",
            "passwd -> /etc/passwd",
            |w| source_with(w, |dir| symlink("/etc/passwd", dir.join("passwd")).unwrap()),
        )
        .changing(NEW_X),
        Case::succeeds("relative_symlink_outside_is_kept", "s -> ../secret", |w| {
            fs::write(w.env.work.join("secret"), "s").unwrap();
            source_with(w, |dir| symlink("../secret", dir.join("s")).unwrap())
        })
        .changing(NEW_X),
        Case::succeeds("symlink_loop_is_kept", "a -> b", |w| {
            source_with(w, |dir| {
                symlink("b", dir.join("a")).unwrap();
                symlink("a", dir.join("b")).unwrap();
            })
        })
        .changing(NEW_X),
        Case::succeeds(
            "link_to_the_victim_folder_is_kept_not_followed",
            "victim",
            |w| {
                let victim = w.victim.clone();
                source_with(w, move |dir| symlink(victim, dir.join("v")).unwrap())
            },
        )
        .changing(NEW_X),
        // --- permissions (run as nobody when the tests run as root) -------------------
        Case::fails("unreadable_file", 1, "secret.key: permission denied", |w| {
            unprivileged_source(w, |dir| {
                fs::write(dir.join("secret.key"), "k").unwrap();
                chmod(&dir.join("secret.key"), 0o000);
            })
        }),
        Case::fails("unreadable_folder", 1, "private", |w| {
            unprivileged_source(w, |dir| {
                fs::create_dir_all(dir.join("private")).unwrap();
                chmod(&dir.join("private"), 0o000);
            })
        }),
        Case::fails("unreadable_manifest", 1, "extension.json", |w| {
            unprivileged_source(w, |dir| chmod(&dir.join("extension.json"), 0o000))
        }),
        Case::fails("unsearchable_source", 1, "bad", |w| {
            unprivileged_source(w, |dir| chmod(dir, 0o600))
        }),
    ]
}
