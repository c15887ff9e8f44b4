//! Completion candidates from the real binary (`COMPLETE=<shell> zot -- <words>`) against
//! enabled, disabled, project, shadowed and broken extensions.

use std::fs;

use crate::support::{Env, manifest};

/// Global: alpha (enabled), beta (disabled), shared (enabled), wreck (invalid JSON),
/// nameless (no `exec`). Project: gamma (enabled), delta (disabled), shared (disabled, wins).
fn world() -> Env {
    let env = Env::new();
    for (name, project) in [
        ("alpha", false),
        ("beta", false),
        ("shared", false),
        ("gamma", true),
        ("delta", true),
        ("shared", true),
    ] {
        env.installed(name, project);
    }
    env.zot(["ext", "disable", "beta"]).ok();
    env.zot(["ext", "disable", "delta"]).ok();
    env.zot(["ext", "disable", "shared", "--project"]).ok();
    for (dir, text) in [
        ("wreck", "{ \"name\": \"wreck\", "),
        ("nameless", "{ \"name\": \"nameless\" }"),
    ] {
        let dir = env.global_root().join(dir);
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("extension.json"), text).unwrap();
    }
    env
}

/// What fish would show for `words` (the last one is the word under the cursor), as
/// (value, description) pairs; asserts that nothing reaches stderr.
fn candidates(env: &Env, words: &[&str]) -> Vec<(String, Option<String>)> {
    let mut args = vec!["--", "zot"];
    args.extend_from_slice(words);
    let done = env.zot(&args).env("COMPLETE", "fish").ok();
    done.stderr_is("");
    done.stdout
        .lines()
        .map(|line| match line.split_once('\t') {
            Some((value, help)) => (value.to_owned(), Some(help.to_owned())),
            None => (line.to_owned(), None),
        })
        .collect()
}

fn values(env: &Env, words: &[&str]) -> Vec<String> {
    candidates(env, words).into_iter().map(|(v, _)| v).collect()
}

#[test]
fn enable_offers_disabled_extensions() {
    let env = world();
    assert_eq!(
        values(&env, &["ext", "enable", ""]),
        ["beta", "delta", "shared"]
    );
}

#[test]
fn disable_offers_enabled_extensions() {
    let env = world();
    // `shared` is enabled globally, but the disabled project copy is the one that acts.
    assert_eq!(values(&env, &["ext", "disable", ""]), ["alpha", "gamma"]);
}

#[test]
fn name_taking_subcommands_offer_every_installed_name() {
    let env = world();
    let all = [
        "alpha", "beta", "delta", "gamma", "nameless", "shared", "wreck",
    ];
    for sub in ["remove", "rm", "logs"] {
        assert_eq!(values(&env, &["ext", sub, ""]), all, "zot ext {sub}");
    }
    let with_help = candidates(&env, &["ext", "remove", ""]);
    assert_eq!(
        with_help[0],
        ("alpha".into(), Some("test extension alpha".into()))
    );
    let wreck = with_help.iter().find(|(v, _)| v == "wreck").unwrap();
    assert!(
        wreck.1.as_deref().unwrap().starts_with("broken"),
        "{wreck:?}"
    );
}

#[test]
fn a_typed_prefix_narrows_the_names() {
    let env = world();
    assert_eq!(values(&env, &["ext", "remove", "s"]), ["shared"]);
    assert_eq!(values(&env, &["ext", "logs", "x"]), Vec::<String>::new());
}

#[test]
fn scope_flags_narrow_to_that_scope() {
    let env = world();
    assert_eq!(
        values(&env, &["ext", "disable", "--global", ""]),
        ["alpha", "shared"]
    );
    assert_eq!(
        values(&env, &["ext", "enable", "-p", ""]),
        ["delta", "shared"]
    );
    assert_eq!(
        values(&env, &["ext", "remove", "-yg", ""]),
        ["alpha", "beta", "nameless", "shared", "wreck"]
    );
}

#[test]
fn the_zot_ext_alias_completes_like_zot_ext() {
    let env = world();
    let done = env
        .zot(["--", "zot-ext", "disable", ""])
        .env("COMPLETE", "fish")
        .ok();
    assert_eq!(done.stdout.lines().count(), 2, "{}", done.stdout);
    assert!(done.stdout.starts_with("alpha\t"), "{}", done.stdout);
    // bash passes the cursor position separately; it moves with the inserted `ext`.
    env.zot(["--", "zot-ext", "enable", ""])
        .env("COMPLETE", "bash")
        .env("_CLAP_COMPLETE_INDEX", "2")
        .env("_CLAP_IFS", "\n")
        .ok()
        .stdout_is("beta\ndelta\nshared");
}

#[test]
fn subcommands_flags_and_values_complete() {
    let env = Env::new();
    let ext = values(&env, &["ext", ""]);
    for sub in ["list", "install", "remove", "enable", "disable", "logs"] {
        assert!(ext.iter().any(|v| v == sub), "{ext:?}");
    }
    // Flags wait for a `-` when names or subcommands are possible.
    assert!(!ext.iter().any(|v| v.starts_with('-')), "{ext:?}");
    let flags = values(&env, &["ext", "list", "--"]);
    for flag in ["--scope", "--json", "--color", "--quiet"] {
        assert!(flags.iter().any(|v| v == flag), "{flags:?}");
    }
    assert_eq!(
        values(&env, &["ext", "list", "--scope", ""]),
        ["project", "global"]
    );
    assert_eq!(
        values(&env, &["ext", "list", "--color", ""]),
        ["auto", "always", "never"]
    );
    assert_eq!(
        values(&env, &["completions", ""]),
        ["bash", "elvish", "fish", "powershell", "zsh"]
    );
    let top = values(&env, &[""]);
    assert!(top.iter().any(|v| v == "completions"), "{top:?}");
}

#[test]
fn install_completes_paths() {
    let env = Env::new();
    fs::create_dir_all(env.project.join("my-ext/sub")).unwrap();
    fs::write(env.project.join("my-ext/extension.json"), manifest("x")).unwrap();
    assert_eq!(values(&env, &["ext", "install", "my"]), ["my-ext/"]);
    assert_eq!(
        values(&env, &["ext", "install", "my-ext/"]),
        ["my-ext/sub/"]
    );
}

/// doctor and call take a folder as well as a name: a word with a `/`, or starting with `.`
/// or `~`, completes folders (hidden ones once a `.` is typed), as clap completes paths.
#[test]
fn doctor_and_call_complete_folders_for_path_like_words() {
    let env = world();
    fs::create_dir_all(env.project.join("my-ext/sub")).unwrap();
    fs::write(env.project.join("notes.txt"), "x").unwrap();
    fs::create_dir_all(env.user_home.join("src/weather")).unwrap();
    let absolute = format!("{}/my", env.project.display());
    let cases: [(&str, &[&str]); 7] = [
        ("./", &["./my-ext/"]),
        (".", &["./my-ext/"]),
        ("./my-ext/", &["./my-ext/sub/"]),
        ("./.z", &["./.zot/"]),
        ("~/", &["~/src/"]),
        ("~/src/w", &["~/src/weather/"]),
        // A word without a `/` or a leading `.` or `~` is a name.
        ("a", &["alpha"]),
    ];
    for sub in ["doctor", "call"] {
        for (word, expected) in cases {
            assert_eq!(
                values(&env, &["ext", sub, word]),
                expected,
                "zot ext {sub} {word}<TAB>"
            );
        }
        assert_eq!(
            values(&env, &["ext", sub, &absolute]),
            [format!("{}/my-ext/", env.project.display())],
            "zot ext {sub} {absolute}<TAB>"
        );
        assert_eq!(values(&env, &["ext", sub, "my"]), Vec::<String>::new());
    }
    // doctor checks several: every word completes.
    assert_eq!(
        values(&env, &["ext", "doctor", "alpha", "./m"]),
        ["./my-ext/"]
    );
    // The commands that take only names offer no folders.
    for sub in ["remove", "logs", "enable", "disable", "info", "update"] {
        assert_eq!(
            values(&env, &["ext", sub, "./"]),
            Vec::<String>::new(),
            "zot ext {sub} ./<TAB>"
        );
    }
}

#[test]
fn nothing_installed_and_unusable_homes_stay_silent() {
    let env = Env::new();
    // No names: the flags are what is left to offer.
    let offered = values(&env, &["ext", "remove", ""]);
    assert!(offered.iter().all(|v| v.starts_with('-')), "{offered:?}");
    // ZOT_HOME is a file: no names, and nothing on stderr (checked by `candidates`).
    let file = env.work.join("not-a-dir");
    fs::write(&file, "x").unwrap();
    let done = env
        .zot(["--", "zot", "ext", "remove", ""])
        .env("COMPLETE", "fish")
        .env("ZOT_HOME", &file)
        .ok();
    done.stderr_is("");
    assert!(
        done.stdout.lines().all(|l| l.starts_with('-')),
        "{}",
        done.stdout
    );
}

#[test]
fn a_broken_request_fails_quietly() {
    let env = Env::new();
    // bash with a cursor beyond the words: clap_complete finds nothing to complete.
    let done = env
        .zot(["--", "zot", "ext"])
        .env("COMPLETE", "bash")
        .env("_CLAP_COMPLETE_INDEX", "9")
        .output();
    done.stderr_is("");
    assert_ne!(done.code, 0);
}

#[test]
fn a_thousand_extensions_complete() {
    let env = Env::new();
    let root = env.global_root();
    for i in 0..1000 {
        let name = format!("ext-{i:04}");
        let dir = root.join(&name);
        fs::create_dir_all(&dir).unwrap();
        let mut text = manifest(&name);
        if i % 2 == 1 {
            text = text.replace("\"enabled\": true", "\"enabled\": false");
        }
        fs::write(dir.join("extension.json"), text).unwrap();
    }
    assert_eq!(values(&env, &["ext", "remove", ""]).len(), 1000);
    let enable = values(&env, &["ext", "enable", "ext-000"]);
    assert_eq!(
        enable,
        ["ext-0001", "ext-0003", "ext-0005", "ext-0007", "ext-0009"]
    );
}

#[test]
fn logs_also_offers_names_that_only_have_a_log() {
    let env = world();
    let logs = env.home.join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    for file in [
        "ext-loose.log",
        "ext-alpha.log",
        "other.txt",
        "ext-..log",
        "ext-a\\b.log",
    ] {
        std::fs::write(logs.join(file), "x\n").unwrap();
    }
    assert_eq!(values(&env, &["ext", "logs", "l"]), ["loose"]);
    let all = candidates(&env, &["ext", "logs", ""]);
    let names: Vec<&str> = all.iter().map(|(v, _)| v.as_str()).collect();
    assert_eq!(
        names,
        [
            "alpha", "beta", "delta", "gamma", "loose", "nameless", "shared", "wreck"
        ]
    );
    let loose = all.iter().find(|(v, _)| v == "loose").unwrap();
    assert_eq!(loose.1.as_deref(), Some("not installed; has a log"));
    // Other commands act on installed extensions only.
    assert_eq!(values(&env, &["ext", "remove", "l"]), Vec::<String>::new());
}

/// The shell named in `COMPLETE` is shown escaped: a value with a newline or an escape
/// sequence still makes a one-line error and cannot restyle the terminal.
#[test]
fn an_unknown_shell_is_refused_on_one_escaped_line() {
    let env = Env::new();
    let done = env
        .zot::<[&str; 0], &str>([])
        .env("COMPLETE", "nosh\n\u{1b}[31mred")
        .fails(2);
    assert_eq!(
        done.stderr,
        "error: COMPLETE=nosh\\n\\u{1b}[31mred names no shell zot can complete for; use bash, elvish, fish, powershell or zsh\n"
    );
    assert_eq!(done.stdout, "");
}

#[test]
fn remove_offers_further_names_after_the_first() {
    let env = world();
    assert_eq!(values(&env, &["ext", "remove", "alpha", "g"]), ["gamma"]);
    assert_eq!(
        values(&env, &["ext", "rm", "alpha", "beta", "s"]),
        ["shared"]
    );
}

/// Where a name goes and none fits, nothing is offered: bash would insert the flags'
/// common `--`. Flags still come once a `-` is typed.
#[test]
fn a_name_with_nothing_to_offer_offers_no_flags() {
    let env = Env::new();
    env.installed("alpha", false);
    assert_eq!(values(&env, &["ext", "enable", ""]), Vec::<String>::new());
    let flags = values(&env, &["ext", "enable", "--"]);
    assert!(flags.iter().any(|f| f == "--global"), "{flags:?}");
    assert_eq!(values(&env, &["ext", "disable", ""]), ["alpha"]);
}

/// `update` offers what it can update: installed from a folder or a git repository, not
/// linked, not copied in by hand, and pinned ones only once `--ref` is on the line.
#[test]
fn update_offers_only_what_it_can_update() {
    let env = world();
    let pinned = crate::support::git_servers::Repo::with_files(
        &env.work.join("repos"),
        "pinned",
        &[("extension.json", &manifest("pinned")), ("run.sh", "")],
    );
    pinned.tag("v1");
    let url = format!("file://{}", pinned.bare.display());
    env.zot(["ext", "install", "-g", &url, "--ref", "v1"]).ok();
    let working = env.source("working-copy", "linked");
    env.zot(["ext", "link", working.to_str().unwrap()]).ok();
    assert_eq!(
        values(&env, &["ext", "update", ""]),
        ["alpha", "beta", "delta", "gamma", "shared"]
    );
    assert_eq!(
        values(&env, &["ext", "update", "--ref", "v2", ""]),
        ["alpha", "beta", "delta", "gamma", "pinned", "shared"]
    );
    // Every installed name stays offered where any can be acted on.
    assert!(values(&env, &["ext", "remove", ""]).contains(&"linked".to_owned()));
}

/// `zot completions` alone prints the script of the shell `$SHELL` names; a shell zot does
/// not complete for is refused with the list of those it does, not a look-alike.
#[test]
fn completions_takes_the_shell_from_shell_and_lists_the_shells() {
    let env = Env::new();
    let named = env.zot(["completions", "zsh"]).ok().stdout;
    let from_env = env
        .zot(["completions"])
        .env("SHELL", "/usr/bin/zsh")
        .ok()
        .stdout;
    assert_eq!(named, from_env);
    // pwsh, PowerShell's executable on Linux and macOS, is PowerShell.
    assert_eq!(
        env.zot(["completions"])
            .env("SHELL", "/usr/bin/pwsh")
            .ok()
            .stdout,
        env.zot(["completions", "powershell"]).ok().stdout
    );
    let tcsh = env.zot(["completions", "tcsh"]).fails(2);
    assert_eq!(
        tcsh.stderr,
        "error: tcsh is not a shell zot completes for; use bash, elvish, fish, powershell or zsh\n"
    );
    env.zot(["completions"])
        .env("SHELL", "/bin/tcsh")
        .fails(2)
        .stderr_has("$SHELL is /bin/tcsh, which zot does not complete for; name one of bash, elvish, fish, powershell or zsh");
    env.zot(["completions"])
        .env_remove("SHELL")
        .fails(2)
        .stderr_has("$SHELL is not set");
}
