//! Help, usage errors, exit codes and the `zot-ext` alias.

use crate::support::Env;

/// Without the agent, bare `zot` is short: what is missing, then the overview.
#[test]
fn bare_zot_without_the_agent_prints_a_short_overview() {
    let env = Env::new();
    let done = env.zot(Vec::<&str>::new()).ok();
    assert!(done.stdout.lines().count() <= 25, "{}", done.stdout);
    done.stdout_has("The zot agent is not installed here")
        .stdout_has("\nExamples:\n");
}

/// Bare `zot ext` is an overview, as `gh extension` prints: the commands, three examples,
/// at most 25 lines, on stdout, exit 0.
#[test]
fn bare_zot_ext_prints_a_short_overview_naming_every_subcommand() {
    let env = Env::new();
    let done = env.zot(["ext"]).ok();
    assert_eq!(done.stderr, "");
    let lines: Vec<&str> = done.stdout.lines().collect();
    assert!(lines.len() <= 25, "{}", done.stdout);
    for sub in [
        "list",
        "info",
        "install",
        "add",
        "new",
        "link",
        "enable",
        "disable",
        "remove",
        "update",
        "sync",
        "doctor",
        "call",
        "logs",
        "verify",
        "cache clean",
    ] {
        assert!(
            lines.iter().any(|l| l.starts_with("  ") && l.contains(sub)),
            "{sub}: {}",
            done.stdout
        );
    }
    let examples = lines.iter().skip_while(|l| **l != "Examples:").skip(1);
    let examples = examples.take_while(|l| l.starts_with("  zot ext ")).count();
    assert_eq!(examples, 3, "{}", done.stdout);
}

/// `zot --help` opens with one short line and examples, and no line of its command list is
/// wrapped at 80 columns.
#[test]
fn zot_help_opens_short_with_examples_and_fits_80_columns() {
    let env = Env::new();
    let help = env.zot(["--help"]).env("COLUMNS", "80").ok().stdout;
    assert!(
        help.starts_with(
            "Install and manage extensions for the zot coding agent.\n\nExamples:\n  zot ext "
        ),
        "{help}"
    );
    let commands = help.split("Extension commands:\n").nth(1).unwrap();
    for line in commands.lines() {
        assert!(line.starts_with("  zot ext "), "{line:?}\n{help}");
        assert!(line.chars().count() <= 80, "{line:?}");
    }
}

#[test]
fn help_exits_zero() {
    let env = Env::new();
    env.zot(["ext", "install", "--help"])
        .ok()
        .stdout_has("--force");
}

/// A subcommand's help lists its own flags, then the global ones under their own heading,
/// and ends with its first examples from `zot_ext::cli::pages::EXAMPLES`, byte for byte as
/// shown here (100 columns, as without a terminal; no colour in a pipe).
#[test]
fn subcommand_help_lists_own_flags_then_global_ones_then_examples() {
    let env = Env::new();
    let help = env.zot(["ext", "enable", "-h"]).ok().stdout;
    let expected = "\
Re-enable a disabled extension

Usage: zot ext enable [OPTIONS] <NAME>

Arguments:
  <NAME>  Name of the extension

Options:
  -p, --project        The project scope, ./.zot/extensions/ (same as --scope project)
  -g, --global         The global scope, $ZOT_HOME/extensions/ (same as --scope global)
      --scope <SCOPE>  The scope by name [possible values: project, global]
  -h, --help           Print help (see more with '--help')
  -V, --version        Print version

Global options:
  -q, --quiet         Print nothing but errors (and requested data)
      --color <WHEN>  When to colour output; auto obeys NO_COLOR, CLICOLOR_FORCE and TERM=dumb
                      [default: auto] [possible values: auto, always, never]
      --json          Print machine-readable JSON on stdout instead of text

Examples:
  zot ext enable hello-py
      Turn the extension back on.
  zot ext enable hello-py --project
      Enable the project copy.
";
    assert_eq!(help, expected);
    // The long help ends the same way.
    let long = env.zot(["ext", "enable", "--help"]).ok().stdout;
    let examples = &expected[expected.find("\nExamples:\n").unwrap()..];
    assert!(long.ends_with(examples), "{long}");
}

#[test]
fn version_exits_zero() {
    let env = Env::new();
    let version = env.zot(["--version"]).ok();
    assert!(version.stdout.starts_with("zot-ext "), "{version:?}");
}

#[test]
fn an_unknown_subcommand_is_a_usage_error() {
    let env = Env::new();
    env.zot(["ext", "frobnicate"])
        .fails(2)
        .stderr_has("error: unrecognized subcommand 'frobnicate'");
}

#[test]
fn an_unknown_scope_is_a_usage_error() {
    let env = Env::new();
    env.zot(["ext", "list", "--scope", "nowhere"]).fails(2);
}

#[test]
fn project_and_global_together_are_a_usage_error() {
    let env = Env::new();
    env.zot(["ext", "remove", "a", "--project", "--global"])
        .fails(2);
}

#[test]
fn install_without_a_source_is_a_usage_error() {
    let env = Env::new();
    env.zot(["ext", "install"]).fails(2);
}

#[test]
fn ref_with_a_local_path_is_a_usage_error() {
    let env = Env::new();
    let src = env.source("a", "a");
    env.zot(["ext", "install", src.to_str().unwrap(), "--ref", "main"])
        .fails(2)
        .stderr_is(&format!(
            "error: --ref applies to git sources only; {} is a local folder\n",
            src.display()
        ));
    assert!(env.installed_names().is_empty());
}

#[cfg(unix)]
#[test]
fn invoked_as_zot_ext_behaves_as_zot_ext() {
    let env = Env::new();
    env.installed("alias-test", false);
    let link = env.work.join("zot-ext");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_zot"), &link).unwrap();
    let mut run = env.zot(["list", "--json"]);
    run.cmd = {
        let mut cmd = std::process::Command::new(&link);
        cmd.args(["list", "--json"])
            .current_dir(&env.project)
            .env_clear()
            .env("ZOT_HOME", &env.home)
            .env("HOME", &env.user_home);
        cmd
    };
    let done = run.ok();
    assert_eq!(done.extensions()[0]["name"], "alias-test");
}

#[test]
fn no_color_means_plain_output_and_always_forces_colour() {
    let env = Env::new();
    env.installed("c", false);
    // --color always wins over NO_COLOR.
    env.zot(["ext", "list", "--color", "always"])
        .env("NO_COLOR", "1")
        .ok()
        .stdout_has("\x1b");
    env.zot(["ext", "list"])
        .env("NO_COLOR", "1")
        .ok()
        .stdout_lacks("\x1b");
    env.zot(["ext", "list", "--color", "never"])
        .ok()
        .stdout_lacks("\x1b");
}

/// `--color auto` decides as anstream does: `NO_COLOR`, `CLICOLOR_FORCE`, `TERM=dumb`, a terminal.
#[test]
fn colour_follows_the_environment_like_anstream() {
    let env = Env::new();
    env.installed("c", false);
    let list = ["ext", "list"];
    // A terminal that can show colour gets it...
    env.zot_in_terminal_with(&list, "", &[("TERM", "xterm")])
        .success()
        .stdout_has("\x1b[");
    // ...but not a dumb one, nor with NO_COLOR.
    env.zot_in_terminal_with(&list, "", &[("TERM", "dumb")])
        .success()
        .stdout_lacks("\x1b");
    env.zot_in_terminal_with(&list, "", &[("TERM", "xterm"), ("NO_COLOR", "1")])
        .success()
        .stdout_lacks("\x1b");
    // CLICOLOR_FORCE colours a pipe; --color always does too.
    env.zot(list)
        .env("CLICOLOR_FORCE", "1")
        .ok()
        .stdout_has("\x1b[");
    env.zot(list).ok().stdout_lacks("\x1b");
    env.zot(["ext", "list", "--color", "always"])
        .env("TERM", "dumb")
        .ok()
        .stdout_has("\x1b[");
}

#[test]
fn quiet_silences_messages_but_not_data() {
    let env = Env::new();
    let src = env.source("q", "q");
    env.zot(["-q", "ext", "install", src.to_str().unwrap()])
        .ok()
        .stdout_is("")
        .stderr_is("");
    let listed = env.zot(["ext", "list", "--json", "--quiet"]).ok();
    assert_eq!(listed.extensions()[0]["name"], "q");
}

#[test]
fn zot_home_defaults_to_xdg_state_home() {
    let env = Env::new();
    let state = env.work.join("state");
    let src = env.source("x", "x");
    let mut run = env.zot(["ext", "install", src.to_str().unwrap()]);
    run.cmd.env_remove("ZOT_HOME").env("XDG_STATE_HOME", &state);
    run.ok();
    assert!(state.join("zot/extensions/x/extension.json").is_file());
}

#[test]
fn the_overview_fits_a_narrow_terminal_without_breaking_a_word() {
    let env = Env::new();
    let line = format!("stty cols 60; {} ext", env!("CARGO_BIN_EXE_zot"));
    let out = std::process::Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .current_dir(&env.project)
        .env("ZOT_HOME", &env.home)
        .env("PATH", crate::support::path_without_agent())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout).replace('\r', "");
    for line in text.lines() {
        assert!(
            line.chars().count() <= 60,
            "{} columns: {line:?}",
            line.chars().count()
        );
    }
    let words = |t: &str| t.split_whitespace().map(str::to_string).collect::<Vec<_>>();
    let piped = env.zot(["ext"]).ok();
    assert_eq!(words(&text), words(&piped.stdout), "a word was broken");
}
