//! `zot ext list`: both scopes, precedence, broken manifests, JSON shape.

use std::fs;

use crate::support::Env;

#[test]
fn empty_store_hints_on_stderr_and_exits_zero() {
    let env = Env::new();
    env.zot(["ext", "list"])
        .ok()
        .stdout_is("")
        .stderr_has("no extensions installed");
    env.zot(["ext", "list", "--json"])
        .ok()
        .json_is(&serde_json::json!({"extensions": []}));
}

#[test]
fn project_first_then_global_names_sorted() {
    let env = Env::new();
    env.installed("zeta", false);
    env.installed("alpha", false);
    env.installed("mid", true);
    let list = env.zot(["ext", "list", "--json"]).ok().extensions();
    let order: Vec<(String, String)> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["scope"].as_str().unwrap().into(),
                e["name"].as_str().unwrap().into(),
            )
        })
        .collect();
    let expected = [("project", "mid"), ("global", "alpha"), ("global", "zeta")];
    let expected: Vec<(String, String)> = expected
        .iter()
        .map(|(s, n)| (s.to_string(), n.to_string()))
        .collect();
    assert_eq!(order, expected);
}

#[test]
fn json_shape_is_stable() {
    let env = Env::new();
    env.installed("shape", false);
    let list = env.zot(["ext", "list", "--json"]).ok().extensions();
    let entry = &list[0];
    let keys: Vec<&str> = entry
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "scope",
            "name",
            "version",
            "enabled",
            "language",
            "description",
            "exec",
            "dir",
            "linked",
            "shadowed",
            "error"
        ]
    );
    assert_eq!(
        entry,
        &serde_json::json!({
            "scope": "global",
            "name": "shape",
            "version": "1.0.0",
            "enabled": true,
            "language": "shell",
            "description": "test extension shape",
            "exec": "./run.sh",
            "dir": env.global_root().join("shape"),
            "linked": null,
            "shadowed": false,
            "error": null
        })
    );
}

#[test]
fn global_copy_hidden_by_project_copy_is_marked_shadowed() {
    let env = Env::new();
    env.installed("dup", false);
    env.installed("dup", true);
    let list = env.zot(["ext", "list", "--json"]).ok().extensions();
    assert_eq!(list[0]["scope"], "project");
    assert_eq!(list[0]["shadowed"], false);
    assert_eq!(list[1]["scope"], "global");
    assert_eq!(list[1]["shadowed"], true);
    env.zot(["ext", "list"]).ok().stdout_is(&format!(
        "SCOPE              NAME  VERSION  ENABLED  LANGUAGE  DESCRIPTION         DIR\n\
         project            dup   1.0.0    yes      shell     test extension dup  {}\n\
         global (shadowed)  dup   1.0.0    yes      shell     test extension dup  {}\n",
        env.project_root().join("dup").display(),
        env.global_root().join("dup").display()
    ));
}

#[test]
fn precedence_is_the_same_on_every_run() {
    let env = Env::new();
    env.installed("same", false);
    env.installed("same", true);
    for _ in 0..5 {
        env.zot(["ext", "disable", "same"])
            .ok()
            .stdout_has("(project)");
    }
}

#[test]
fn broken_manifests_are_listed_with_the_reason() {
    let env = Env::new();
    env.installed("good", false);
    let bad = env.global_root().join("bad");
    fs::create_dir_all(&bad).unwrap();
    fs::write(
        bad.join("extension.json"),
        "{\n  \"name\": \"bad\",\n  \"exec\": 7\n}\n",
    )
    .unwrap();
    let empty = env.global_root().join("empty");
    fs::create_dir_all(&empty).unwrap();
    let list = env.zot(["ext", "list", "--json"]).ok().extensions();
    let names: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["bad", "empty", "good"]);
    let error = list[0]["error"].as_str().unwrap();
    assert!(
        error.ends_with("bad/extension.json:3:11: \"exec\" must be a string, found the number 7"),
        "{error}"
    );
    assert!(list[1]["error"].as_str().unwrap().contains("not found"));
    assert_eq!(list[2]["error"], serde_json::Value::Null);
    env.zot(["ext", "list"]).ok().stdout_has("broken");
}

#[test]
fn scope_filter() {
    let env = Env::new();
    env.installed("g", false);
    env.installed("p", true);
    let project = env
        .zot(["ext", "list", "--scope", "project", "--json"])
        .ok()
        .extensions();
    assert_eq!(project.as_array().unwrap().len(), 1);
    assert_eq!(project[0]["name"], "p");
    let global = env
        .zot(["ext", "list", "--scope", "global", "--json"])
        .ok()
        .extensions();
    assert_eq!(global.as_array().unwrap().len(), 1);
    assert_eq!(global[0]["name"], "g");
}

#[test]
fn plain_files_in_the_root_are_not_extensions() {
    let env = Env::new();
    env.installed("real", false);
    fs::write(env.global_root().join("README"), "x").unwrap();
    let list = env.zot(["ext", "list", "--json"]).ok().extensions();
    assert_eq!(list.as_array().unwrap().len(), 1);
}

#[cfg(unix)]
#[test]
fn symlinked_extensions_show_their_target_and_broken_links_their_reason() {
    let env = Env::new();
    let src = env.source("linked-src", "linked");
    fs::create_dir_all(env.global_root()).unwrap();
    std::os::unix::fs::symlink(&src, env.global_root().join("linked")).unwrap();
    std::os::unix::fs::symlink(env.work.join("gone"), env.global_root().join("gone")).unwrap();
    let list = env.zot(["ext", "list", "--json"]).ok().extensions();
    assert_eq!(list[0]["name"], "gone");
    assert!(
        list[0]["error"].as_str().unwrap().contains("broken link"),
        "{}",
        list[0]
    );
    assert_eq!(list[1]["name"], "linked");
    assert_eq!(list[1]["linked"], src.display().to_string());
    assert_eq!(list[1]["error"], serde_json::Value::Null);
}

#[test]
fn table_has_the_documented_columns() {
    let env = Env::new();
    env.installed("cols", false);
    let text = env.zot(["ext", "list"]).ok().stdout;
    let header = text.lines().next().unwrap();
    let columns: Vec<&str> = header.split_whitespace().collect();
    assert_eq!(
        columns,
        [
            "SCOPE",
            "NAME",
            "VERSION",
            "ENABLED",
            "LANGUAGE",
            "DESCRIPTION",
            "DIR"
        ]
    );
    assert!(text.contains("test extension cols"), "{text}");
}

#[test]
fn a_scope_filter_still_marks_shadowed_copies() {
    let env = Env::new();
    env.installed("dup", false);
    env.installed("dup", true);
    let global = env
        .zot(["ext", "list", "--scope", "global", "--json"])
        .ok()
        .extensions();
    assert_eq!(global[0]["shadowed"], true);
    let empty = env.zot(["ext", "list", "--scope", "project", "--json"]);
    let _ = empty;
    let only_global = Env::new();
    only_global.installed("g", false);
    only_global
        .zot(["ext", "list", "--scope", "project"])
        .ok()
        .stderr_has("no extensions installed in the project scope (looked in ")
        .stderr_has(
            "/project/.zot/extensions); \
             add one with `zot ext install --project <path|git-url>`",
        );
}

#[test]
fn control_characters_in_manifests_are_escaped() {
    let env = Env::new();
    let text = serde_json::json!({
        "name": "esc", "exec": "./run.sh",
        "description": "line1\nline2 \u{1b}[31mRED\u{1b}]0;pwned\u{7}"
    })
    .to_string();
    let src = env.source_with_manifest("esc", &text);
    env.install(&src);
    for args in [vec!["ext", "list"], vec!["ext", "info", "esc"]] {
        let out = env.zot(&args).ok().stdout;
        assert!(!out.contains('\u{1b}') && !out.contains('\u{7}'), "{out:?}");
        assert!(out.contains("line1\\nline2"), "{out:?}");
    }
}

#[test]
fn commands_act_on_the_copy_that_wins_by_manifest_name() {
    let env = Env::new();
    env.installed("hello", false);
    let odd = env.project_root().join("folder-name");
    fs::create_dir_all(&odd).unwrap();
    fs::write(
        odd.join("extension.json"),
        crate::support::manifest("hello"),
    )
    .unwrap();
    env.zot(["ext", "disable", "hello"])
        .ok()
        .stdout_has("disabled hello (project)");
}

#[cfg(target_os = "linux")]
#[test]
fn folders_with_non_utf8_names_can_be_removed() {
    use std::os::unix::ffi::OsStrExt;
    let env = Env::new();
    let dir = env
        .global_root()
        .join(std::ffi::OsStr::from_bytes(b"bad\xff"));
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join("extension.json"), crate::support::manifest("bad")).unwrap();
    env.zot(["ext", "remove", "-y", "bad"]).ok();
    assert!(!dir.exists());
}

/// A store with what makes a table too wide: a long description, a description in wide
/// characters and an emoji, a manifest that does not parse (long error), and a project copy.
fn crowded(env: &Env) {
    let write = |root: std::path::PathBuf, dir: &str, manifest: &str| {
        fs::create_dir_all(root.join(dir)).unwrap();
        fs::write(root.join(dir).join("extension.json"), manifest).unwrap();
    };
    let global = env.global_root();
    write(
        global.clone(),
        "forecast",
        r#"{"name": "forecast", "version": "2.1.0", "exec": "./run.sh", "language": "python",
            "description": "天気予報 🌦 weather for the week ahead, hour by hour, for any city"}"#,
    );
    write(
        global.clone(),
        "notes",
        r#"{"name": "notes", "version": "0.3.0", "exec": "./run.sh", "language": "javascript",
            "description": "keeps notes per project and lets the agent search, tag and summarise them"}"#,
    );
    write(
        global,
        "half-done",
        "{\"name\": \"half-done\",\n  \"exec\": 7}\n",
    );
    write(
        env.project_root(),
        "tool",
        r#"{"name": "tool", "version": "1.0.0", "exec": "./run.sh", "language": "shell",
            "description": "a short one", "enabled": false}"#,
    );
}

/// The folder holding `ZOT_HOME` and the project: the user's home in these runs, so folders
/// show from `~` on a terminal.
fn base(env: &Env) -> std::path::PathBuf {
    env.home.parent().unwrap().to_path_buf()
}

/// `zot ext list <args>` on a pseudo-terminal `columns` wide (util-linux `script`, the size
/// set with `stty`), without colour; what the terminal showed, lines ending in `\n`, the
/// temporary folder written `<tmp>`.
fn list_on_terminal(env: &Env, columns: usize, args: &[&str]) -> String {
    list_on_sized_terminal(env, columns, None, args)
}

/// [`list_on_terminal`] on a terminal that reports `columns` (0: no size) with `COLUMNS` set
/// to `columns_env` if given.
fn list_on_sized_terminal(
    env: &Env,
    columns: usize,
    columns_env: Option<&str>,
    args: &[&str],
) -> String {
    let mut line = format!(
        "stty cols {columns} rows 50 && exec '{}' ext list",
        env!("CARGO_BIN_EXE_zot")
    );
    for arg in args {
        line.push_str(" '");
        line.push_str(arg);
        line.push('\'');
    }
    let mut cmd = std::process::Command::new("script");
    cmd.args(["-qec", &line, "/dev/null"])
        .current_dir(&env.project)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", base(env))
        .env("ZOT_HOME", &env.home)
        .env("NO_COLOR", "1")
        .env("LANG", "C.UTF-8")
        .env("TERM", "dumb")
        .stdin(std::process::Stdio::null());
    if let Some(value) = columns_env {
        cmd.env("COLUMNS", value);
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout)
        .unwrap()
        .replace("\r\n", "\n")
        .replace(base(env).to_str().unwrap(), "<tmp>")
}

/// `rows` as lines of output, each ending in `\n`.
fn lines(rows: &[&str]) -> String {
    rows.iter().flat_map(|row| [row, "\n"]).collect()
}

/// Fails unless every line of `table` fits in `columns` display columns.
#[track_caller]
fn fits(table: &str, columns: usize) {
    for line in table.lines() {
        let width = unicode_width::UnicodeWidthStr::width(line);
        assert!(width <= columns, "{width} > {columns}: {line:?}\n{table}");
    }
}

#[test]
fn the_table_fits_a_200_column_terminal_whole() {
    let env = Env::new();
    crowded(&env);
    let table = list_on_terminal(&env, 200, &[]);
    fits(&table, 200);
    assert_eq!(
        table,
        lines(&[
            "SCOPE    NAME       VERSION  ENABLED  LANGUAGE    DESCRIPTION                                                                DIR",
            "project  tool       1.0.0    no       shell       a short one                                                                ~/project/.zot/extensions/tool",
            "global   forecast   2.1.0    yes      python      天気予報 🌦 weather for the week ahead, hour by hour, for any city          ~/zot-home/extensions/forecast",
            "global   half-done  -        broken   -           -                                                                          ~/zot-home/extensions/half-done",
            "    ~/zot-home/extensions/half-done/extension.json:2:11: \"exec\" must be a string, found the number 7",
            "global   notes      0.3.0    yes      javascript  keeps notes per project and lets the agent search, tag and summarise them  ~/zot-home/extensions/notes",
        ])
    );
}

#[test]
fn the_table_fits_a_100_column_terminal() {
    let env = Env::new();
    crowded(&env);
    let table = list_on_terminal(&env, 100, &[]);
    fits(&table, 100);
    // Whole columns go first (the folder, then the language), then the description is cut.
    assert_eq!(
        table,
        lines(&[
            "SCOPE    NAME       VERSION  ENABLED  DESCRIPTION",
            "project  tool       1.0.0    no       a short one",
            "global   forecast   2.1.0    yes      天気予報 🌦 weather for the week ahead, hour by hour, for any …",
            "global   half-done  -        broken   -",
            "    ~/zot-home/extensions/half-done/extension.json:2:11: \"exec\" must be a string, found the number 7",
            "global   notes      0.3.0    yes      keeps notes per project and lets the agent search, tag and su…",
        ])
    );
}

#[test]
fn the_table_fits_an_80_column_terminal() {
    let env = Env::new();
    crowded(&env);
    let table = list_on_terminal(&env, 80, &[]);
    fits(&table, 80);
    assert_eq!(
        table,
        lines(&[
            "SCOPE    NAME       VERSION  ENABLED  DESCRIPTION",
            "project  tool       1.0.0    no       a short one",
            "global   forecast   2.1.0    yes      天気予報 🌦 weather for the week ahead, ho…",
            "global   half-done  -        broken   -",
            "    ~/zot-home/extensions/half-done/extension.json:2:11: \"exec\" must be a",
            "    string, found the number 7",
            "global   notes      0.3.0    yes      keeps notes per project and lets the agen…",
        ])
    );
}

#[test]
fn at_60_columns_whole_columns_go_first_and_no_line_wraps() {
    let env = Env::new();
    crowded(&env);
    let table = list_on_terminal(&env, 60, &[]);
    fits(&table, 60);
    assert_eq!(
        table,
        lines(&[
            "SCOPE    NAME       VERSION  ENABLED  DESCRIPTION",
            "project  tool       1.0.0    no       a short one",
            "global   forecast   2.1.0    yes      天気予報 🌦 weather fo…",
            "global   half-done  -        broken   -",
            "    ~/zot-home/extensions/half-done/extension.json:2:11:",
            "    \"exec\" must be a string, found the number 7",
            "global   notes      0.3.0    yes      keeps notes per proje…",
        ])
    );
    // With one scope, the scope goes too.
    let single = Env::new();
    single.installed("solo", false);
    let table = list_on_terminal(&single, 40, &[]);
    fits(&table, 40);
    assert!(table.starts_with("NAME "), "{table}");
}

#[test]
fn wide_shows_every_cell_whole_on_a_terminal() {
    let env = Env::new();
    crowded(&env);
    let table = list_on_terminal(&env, 60, &["--wide"]);
    assert_eq!(
        table,
        lines(&[
            "SCOPE    NAME       VERSION  ENABLED  LANGUAGE    DESCRIPTION                                                                DIR",
            "project  tool       1.0.0    no       shell       a short one                                                                <tmp>/project/.zot/extensions/tool",
            "global   forecast   2.1.0    yes      python      天気予報 🌦 weather for the week ahead, hour by hour, for any city          <tmp>/zot-home/extensions/forecast",
            "global   half-done  -        broken   -           -                                                                          <tmp>/zot-home/extensions/half-done",
            "    <tmp>/zot-home/extensions/half-done/extension.json:2:11: \"exec\" must be a string, found the number 7",
            "global   notes      0.3.0    yes      javascript  keeps notes per project and lets the agent search, tag and summarise them  <tmp>/zot-home/extensions/notes",
        ])
    );
}

#[test]
fn piped_output_is_full_width_and_unchanged() {
    let env = Env::new();
    crowded(&env);
    let out = env.zot(["ext", "list"]).env("COLUMNS", "40").ok();
    let table = out.stdout.replace(base(&env).to_str().unwrap(), "<tmp>");
    assert_eq!(
        table,
        lines(&[
            "SCOPE    NAME       VERSION  ENABLED  LANGUAGE    DESCRIPTION                                                                                                     DIR",
            "project  tool       1.0.0    no       shell       a short one                                                                                                     <tmp>/project/.zot/extensions/tool",
            "global   forecast   2.1.0    yes      python      天気予報 🌦 weather for the week ahead, hour by hour, for any city                                                   <tmp>/zot-home/extensions/forecast",
            "global   half-done  -        broken   -           <tmp>/zot-home/extensions/half-done/extension.json:2:11: \"exec\" must be a string, found the number 7  <tmp>/zot-home/extensions/half-done",
            "global   notes      0.3.0    yes      javascript  keeps notes per project and lets the agent search, tag and summarise them                                       <tmp>/zot-home/extensions/notes",
        ])
    );
    env.zot(["ext", "list", "--wide"])
        .ok()
        .stdout_is(&out.stdout);
}

#[test]
fn the_terminal_size_wins_over_columns() {
    let env = Env::new();
    crowded(&env);
    assert_eq!(
        list_on_sized_terminal(&env, 200, Some("90"), &[]),
        list_on_terminal(&env, 200, &[])
    );
}

#[test]
fn a_terminal_without_a_size_uses_columns_then_80() {
    let env = Env::new();
    crowded(&env);
    let at_90 = list_on_terminal(&env, 90, &[]);
    assert_ne!(at_90, list_on_terminal(&env, 80, &[]));
    assert_eq!(list_on_sized_terminal(&env, 0, Some("90"), &[]), at_90);
    assert_eq!(
        list_on_sized_terminal(&env, 0, None, &[]),
        list_on_terminal(&env, 80, &[])
    );
    assert_eq!(
        list_on_sized_terminal(&env, 0, Some("not a number"), &[]),
        list_on_terminal(&env, 80, &[])
    );
}

/// The JSON list is written row by row; it must still be one document, laid out exactly as
/// the pretty printer lays out the whole of it.
#[test]
fn json_written_row_by_row_is_one_pretty_document() {
    let env = Env::new();
    let pretty = |stdout: &str| {
        let value: serde_json::Value = serde_json::from_str(stdout).unwrap();
        serde_json::to_string_pretty(&value).unwrap() + "\n"
    };
    let empty = env.zot(["ext", "list", "--json"]).ok().stdout.clone();
    assert_eq!(empty, pretty(&empty));
    let root = env.global_root();
    for i in 0..40 {
        let dir = root.join(format!("ext-{i:02}"));
        fs::create_dir_all(&dir).unwrap();
        let manifest = format!(
            r#"{{"name":"ext-{i:02}","exec":"./run.sh","description":"line\nbreak \"quoted\" https://user:secret@example.com/x"}}"#
        );
        fs::write(dir.join("extension.json"), manifest).unwrap();
    }
    fs::create_dir_all(root.join("broken")).unwrap();
    fs::write(root.join("broken/extension.json"), "{").unwrap();
    env.installed("mine", true);
    let done = env.zot(["ext", "list", "--json"]).ok();
    assert_eq!(done.stdout, pretty(&done.stdout));
    assert!(!done.stdout.contains("secret"), "{}", done.stdout);
    let list = done.extensions();
    assert_eq!(list.as_array().unwrap().len(), 42);
    assert_eq!(list[0]["name"], "mine");
    assert_eq!(list[41]["name"], "ext-39");
}

/// A store with every kind of row `list` prints: project copies hiding global ones, a
/// disabled one, manifests that do not parse, have a wrong type, an unusable name, a byte
/// order mark, invalid UTF-8, misspelled keys (warnings), credentials and control
/// characters in their text; no manifest, a manifest that is a folder, a named pipe, a link
/// or too large; linked and broken-linked folders, a non-UTF-8 folder name, two folders of
/// one manifest name, a hidden folder and a plain file.
#[cfg(target_os = "linux")]
fn tricky(env: &Env) {
    use std::os::unix::ffi::OsStrExt;
    let put = |root: std::path::PathBuf, dir: &std::ffi::OsStr, manifest: &[u8]| {
        fs::create_dir_all(root.join(dir)).unwrap();
        fs::write(root.join(dir).join("extension.json"), manifest).unwrap();
    };
    let g = |dir: &str, manifest: &str| put(env.global_root(), dir.as_ref(), manifest.as_bytes());
    let p = |dir: &str, manifest: &str| put(env.project_root(), dir.as_ref(), manifest.as_bytes());
    p("dup", &crate::support::manifest("dup"));
    p(
        "off",
        r#"{"name":"off","exec":"./run.sh","enabled":false,"version":"0.1.0"}"#,
    );
    g("dup", r#"{"name":"dup","exec":"./x","version":"9.9.9"}"#);
    g("broken", "{\"name\": \"broken\",,\n}");
    g(
        "wrong-type",
        "{\n  \"name\": \"wrong-type\",\n  \"exec\": 7\n}\n",
    );
    g("bad-name", r#"{"name":"../up","exec":"./run.sh"}"#);
    g("no-exec", r#"{"name":"no-exec","exec":"  "}"#);
    g("array", "[1, 2]");
    g(
        "spelled",
        r#"{"Name":"spelled","EXEC":"./run.sh","Enabled":false,"deſcription":"folded"}"#,
    );
    g(
        "secret",
        r#"{"name":"secret","exec":"./run.sh","description":"from https://user:pw@example.com/r?token=abc&x=1 and git@host:r\n\"quoted\"\ttab é 🌦 \u001b[31m","language":"ssh://git:pw@h/x"}"#,
    );
    g(
        "nulls",
        r#"{"name":"nulls","exec":"./run.sh","version":null,"description":null,"args":["a"],"extra":{"deep":[1,{"x":null}]},"language":"go"}"#,
    );
    g(
        "tenki",
        r#"{"name":"天気","exec":"./run.sh","description":"予報"}"#,
    );
    g("twin-a", r#"{"name":"twin","exec":"./run.sh"}"#);
    g(
        "twin-b",
        r#"{"name":"twin","exec":"./run.sh","enabled":false}"#,
    );
    g(".hidden", r#"{"name":"hidden","exec":"./run.sh"}"#);
    put(
        env.global_root(),
        std::ffi::OsStr::from_bytes(b"odd\xff"),
        br#"{"name":"odd","exec":"./run.sh"}"#,
    );
    put(
        env.global_root(),
        "bom".as_ref(),
        b"\xef\xbb\xbf{\"name\":\"bom\",\"exec\":\"x\"}",
    );
    put(
        env.global_root(),
        "latin1".as_ref(),
        b"{\"name\":\"caf\xe9\",\"exec\":\"x\"}",
    );
    put(
        env.global_root(),
        "huge".as_ref(),
        &vec![b' '; (1 << 20) + 1],
    );
    let root = env.global_root();
    fs::create_dir_all(root.join("missing")).unwrap();
    fs::create_dir_all(root.join("folder-manifest/extension.json")).unwrap();
    fs::create_dir_all(root.join("pipe")).unwrap();
    crate::support::hostile::mkfifo(&root.join("pipe/extension.json"));
    fs::create_dir_all(root.join("via-link")).unwrap();
    std::os::unix::fs::symlink(
        root.join("dup/extension.json"),
        root.join("via-link/extension.json"),
    )
    .unwrap();
    let src = env.source("linked-src", "linked");
    std::os::unix::fs::symlink(&src, root.join("linked")).unwrap();
    std::os::unix::fs::symlink(env.work.join("gone"), root.join("gone")).unwrap();
    fs::write(root.join("README"), "not an extension").unwrap();
}

/// `table` (aligned for another length of the temporary folder) with `<tmp>` written
/// `tmp` and laid out again as a piped table is: each cell padded to the most characters
/// in its column, two spaces apart, the last cell not padded. Cells are what two or more
/// spaces separate.
#[cfg(target_os = "linux")]
fn relaid(table: &str, tmp: &str) -> String {
    let rows: Vec<Vec<String>> = table
        .lines()
        .map(|line| {
            line.split("  ")
                .filter(|cell| !cell.is_empty())
                .map(|cell| cell.trim_start().replace("<tmp>", tmp))
                .collect()
        })
        .collect();
    let mut widths = vec![0; rows[0].len()];
    for row in &rows {
        for (i, cell) in row.iter().enumerate() {
            widths[i] = widths[i].max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in &rows {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            line.push_str(cell);
            if i + 1 < row.len() {
                let pad = widths[i] - cell.chars().count() + 2;
                line.extend(std::iter::repeat_n(' ', pad));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// The whole output of `list` for [`tricky`], piped (text and JSON, with the warnings on
/// stderr), on a terminal, and for one scope, byte for byte.
#[cfg(target_os = "linux")]
#[test]
fn tricky_rows_print_exactly_so() {
    let env = Env::new();
    tricky(&env);
    let tmp = base(&env);
    let tmp = tmp.to_str().unwrap();
    let warnings = include_str!("expected/list-tricky.stderr").replace("<tmp>", tmp);
    let table = include_str!("expected/list-tricky.txt");
    assert_eq!(
        relaid(table, "<tmp>"),
        table,
        "the expected table is not aligned"
    );
    env.zot(["ext", "list"])
        .ok()
        .stdout_is(&relaid(table, tmp))
        .stderr_is(&warnings);
    env.zot(["ext", "list", "--json"])
        .ok()
        .stdout_is(&include_str!("expected/list-tricky.json").replace("<tmp>", tmp))
        .stderr_is(&warnings);
    let global: String = table
        .lines()
        .filter(|line| !line.starts_with("project"))
        .flat_map(|line| [line, "\n"])
        .collect();
    env.zot(["ext", "list", "--scope", "global"])
        .ok()
        .stdout_is(&relaid(&global, tmp))
        .stderr_is(&warnings);
    env.zot(["ext", "list", "--scope", "project", "--json"])
        .ok()
        .stderr_is("")
        .json_is(&serde_json::json!({"extensions": [
            {"scope": "project", "name": "dup", "version": "1.0.0", "enabled": true,
             "language": "shell", "description": "test extension dup", "exec": "./run.sh",
             "dir": env.project_root().join("dup"), "linked": null, "shadowed": false,
             "error": null},
            {"scope": "project", "name": "off", "version": "0.1.0", "enabled": false,
             "language": null, "description": null, "exec": "./run.sh",
             "dir": env.project_root().join("off"), "linked": null, "shadowed": false,
             "error": null},
        ]}));
    assert_eq!(
        list_on_terminal(&env, 120, &[]),
        include_str!("expected/list-tricky-120.txt")
    );
}

/// A reader that stops early (`zot ext list | head -1`) ends the listing quietly: a closed
/// stdout is not an error, in JSON or as a table.
#[test]
fn a_closed_pipe_ends_the_listing_quietly() {
    use std::io::Read;
    let env = Env::new();
    // More than a pipe and the output buffer hold, so writes go on after the reader left.
    for i in 0..1000 {
        let dir = env.global_root().join(format!("ext-{i:04}"));
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("extension.json"), crate::support::manifest("x")).unwrap();
    }
    for args in [&["ext", "list", "--json"][..], &["ext", "list"]] {
        let mut cmd = env.zot(args).cmd;
        cmd.stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let mut first = [0u8; 16];
        child.stdout.take().unwrap().read_exact(&mut first).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{args:?}: {out:?}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), "", "{args:?}");
    }
}

/// At 80 columns the table fits in every state at once: a shadowed copy, a linked one (its
/// arrow kept), a broken one and wide characters.
#[test]
fn the_table_fits_80_columns_shadowed_linked_broken_and_wide() {
    let env = Env::new();
    crowded(&env);
    let write = |root: std::path::PathBuf, dir: &str, manifest: &str| {
        fs::create_dir_all(root.join(dir)).unwrap();
        fs::write(root.join(dir).join("extension.json"), manifest).unwrap();
    };
    let manifest = r#"{"name": "hello-py", "version": "1.0.0", "exec": "./run.py", "language": "python",
        "description": "say hi (python)"}"#;
    write(env.project_root(), "hello-py", manifest);
    write(env.global_root(), "hello-py", manifest);
    let source = env.work.join("src/weather-station");
    write(
        source.parent().unwrap().to_path_buf(),
        "weather-station",
        r#"{"name": "weather-station", "version": "0.9.0", "exec": "./run.sh", "language": "shell"}"#,
    );
    std::os::unix::fs::symlink(&source, env.global_root().join("weather-station")).unwrap();
    let table = list_on_terminal(&env, 80, &[]);
    fits(&table, 80);
    let shadowed = table.lines().find(|l| l.starts_with("shadowed")).unwrap();
    assert!(shadowed.contains("hello-py"), "{table}");
    let linked = table
        .lines()
        .find(|l| l.contains("weather-station"))
        .unwrap();
    assert!(linked.contains("-> "), "{table}");
}

/// A 30-character name is whole at 80 columns (the folder and language columns make room)
/// beside a shadowed, a linked and a broken copy; narrower it gives way last, cut in the
/// middle; `--wide` shows it whole.
#[test]
fn a_long_name_is_cut_to_fit_80_columns() {
    let env = Env::new();
    crowded(&env);
    let write = |root: std::path::PathBuf, dir: &str, manifest: &str| {
        fs::create_dir_all(root.join(dir)).unwrap();
        fs::write(root.join(dir).join("extension.json"), manifest).unwrap();
    };
    let long = "weather-station-for-the-a-team";
    assert_eq!(long.len(), 30);
    let manifest = format!(
        r#"{{"name": "{long}", "version": "1.0.0", "exec": "./run.py", "language": "python",
        "description": "say hi (python)"}}"#
    );
    write(env.project_root(), long, &manifest);
    write(env.global_root(), long, &manifest);
    let source = env.work.join("src/linked-station");
    write(
        source.parent().unwrap().to_path_buf(),
        "linked-station",
        r#"{"name": "linked-station", "version": "0.9.0", "exec": "./run.sh", "language": "shell"}"#,
    );
    std::os::unix::fs::symlink(&source, env.global_root().join("linked-station")).unwrap();
    // At 80 columns the folder and language columns make room: the name is whole.
    let table = list_on_terminal(&env, 80, &[]);
    fits(&table, 80);
    let shadowed = table.lines().find(|l| l.starts_with("shadowed")).unwrap();
    assert!(shadowed.contains(long), "{table}");
    assert!(table.contains("-> "), "{table}");
    assert!(table.contains("broken"), "{table}");
    // Narrower, it is cut in the middle.
    let table = list_on_terminal(&env, 56, &[]);
    fits(&table, 56);
    let shadowed = table.lines().find(|l| l.starts_with("shadowed")).unwrap();
    assert!(
        shadowed.contains('…') && shadowed.contains("-a-team"),
        "{table}"
    );
    let wide = list_on_terminal(&env, 80, &["--wide"]);
    assert!(wide.contains(long), "{wide}");
}
