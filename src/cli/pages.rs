//! The examples of each command beyond its clap definitions: `--help` shows each
//! subcommand's first ones ([`help_examples`]) and its man page all of them. The man pages'
//! other sections (exit statuses, environment, files) are data of their renderer, which the
//! binary never reads: tests/cli/support/man_sections.rs.
//!
//! Commands are keyed by their path as typed: `zot`, `zot ext`, `zot ext list`.

use std::fmt::Write as _;

use clap::builder::{StyledStr, Styles};

/// How many of a command's examples its `--help` shows (the first ones); the man page shows
/// them all.
pub const HELP_EXAMPLES: usize = 4;

/// The width `--help` examples are wrapped to, so an 80-column terminal shows them as
/// written (clap re-wraps longer lines without their indentation).
const HELP_WIDTH: usize = 80;

/// Examples for every command: (command line, what it does). A test fails when a command has
/// none; order them so the first [`HELP_EXAMPLES`] are the ones worth showing in `--help`.
pub const EXAMPLES: &[(&str, &[(&str, &str)])] = &[
    (
        "zot",
        &[
            (
                "zot ext list",
                "List the installed extensions of both scopes.",
            ),
            (
                "zot ext install ./hello-py",
                "Install the extension in the folder ./hello-py.",
            ),
            (
                "source <(zot completions bash)",
                "Turn on completion in the running bash; add the line to ~/.bashrc to keep it.",
            ),
            (
                "zot-ext list",
                "The same as zot ext list, through a link named zot-ext to the binary.",
            ),
            (
                "zot --ext ./hello-py",
                "Not a command of ours: runs the zot agent (ZOT_AGENT, else the next zot on \
                 PATH) with these arguments.",
            ),
        ],
    ),
    (
        "zot ext",
        &[
            (
                "zot ext install https://github.com/me/zot-weather.git --ref v1.2.0",
                "Clone tag v1.2.0 of a git repository and install it globally.",
            ),
            (
                "zot ext disable zot-weather",
                "Turn it off without removing it.",
            ),
            (
                "zot ext logs zot-weather -f",
                "Watch what it writes to its stderr.",
            ),
            (
                "zot ext remove zot-weather --yes",
                "Remove it without a question.",
            ),
        ],
    ),
    (
        "zot ext list",
        &[
            (
                "zot ext list",
                "Every extension of both scopes, project first.",
            ),
            (
                "zot ext list --scope global",
                "Only the global ones (the same as -g).",
            ),
            (
                "zot ext list --wide",
                "Every description and folder whole, even on a narrow terminal.",
            ),
            (
                "zot ext list --json | jq -r '.extensions[] | select(.error) | .name'",
                "The names of broken extensions, through jq.",
            ),
        ],
    ),
    (
        "zot ext install",
        &[
            (
                "zot ext install ./hello-py",
                "Copy a local folder into $ZOT_HOME/extensions/.",
            ),
            (
                "zot ext install https://github.com/me/zot-weather.git",
                "Clone the default branch of a repository, shallowly.",
            ),
            (
                "zot ext install git@github.com:me/zot-weather --ref v1.2.0",
                "Clone a tag over SSH.",
            ),
            (
                "zot ext install ./hello-py --project",
                "Install into ./.zot/extensions/ of the current project.",
            ),
            (
                "zot ext install ./hello-py --force",
                "Replace the installed copy of the same name, keeping the files it did not \
                 place and its enabled state; what is replaced is saved in .ext-store/backup/.",
            ),
            (
                "zot ext install https://github.com/patriceckhart/zot.git#examples/extensions/clock",
                "Install one extension out of a bigger repository (the same as --subdir).",
            ),
        ],
    ),
    (
        "zot ext remove",
        &[
            (
                "zot ext remove hello-py",
                "Ask at the terminal, then remove the copy that wins.",
            ),
            (
                "zot ext remove hello-py --yes",
                "Remove without asking, as scripts do.",
            ),
            (
                "zot ext remove my-go my-shell -y",
                "Remove several: each on its own, one summary; exit 1 if any was not removed.",
            ),
            (
                "echo y | zot ext remove hello-py",
                "Confirm on stdin without a terminal (read for up to 1 second).",
            ),
            (
                "zot ext remove hello-py --global --yes",
                "Remove the global copy even when a project copy exists.",
            ),
            (
                "zot ext remove zot-loop --yes --keep-data",
                "Remove it but save the files it wrote (its state) to .ext-store/backup.",
            ),
        ],
    ),
    (
        "zot ext enable",
        &[
            ("zot ext enable hello-py", "Turn the extension back on."),
            (
                "zot ext enable hello-py --project",
                "Enable the project copy.",
            ),
        ],
    ),
    (
        "zot ext disable",
        &[
            (
                "zot ext disable hello-py",
                "Turn the extension off; zot skips it from its next start.",
            ),
            (
                "zot ext disable hello-py --global --json",
                "Disable the global copy and report the result as JSON.",
            ),
        ],
    ),
    (
        "zot ext logs",
        &[
            ("zot ext logs hello-py", "Print the whole log."),
            ("zot ext logs hello-py -n 50", "Print the last 50 lines."),
            (
                "zot ext logs hello-py -f",
                "Keep printing new lines, like tail -F; Ctrl-C ends it.",
            ),
        ],
    ),
    (
        "zot ext doctor",
        &[
            (
                "zot ext doctor",
                "Check every installed extension; exit status 1 if one has an error.",
            ),
            (
                "zot ext doctor hello-py --json",
                "Check one extension and print the report as JSON.",
            ),
            (
                "zot ext doctor ./my-ext --timeout 10 --strict",
                "Check a working copy, waiting up to 10 seconds, failing on warnings too.",
            ),
            (
                "zot ext doctor --project",
                "Check only the extensions of this project.",
            ),
        ],
    ),
    (
        "zot ext call",
        &[
            (
                "zot ext call clock /clock Europe/Berlin",
                "Run /clock with the argument Europe/Berlin and print the answer.",
            ),
            (
                "zot ext call clock --tool clock '{\"timezone\":\"UTC\"}'",
                "Call the clock tool with a JSON object of arguments.",
            ),
            (
                "zot ext call --timeout 5 clock /clock UTC",
                "Give up after 5 seconds instead of zot's limit (30 for a command, 60 for a tool).",
            ),
        ],
    ),
    (
        "zot ext new",
        &[
            (
                "zot ext new weather",
                "Create a Python extension in $ZOT_HOME/extensions/weather/.",
            ),
            (
                "zot ext new weather --lang node --project",
                "Create a Node extension in ./.zot/extensions/weather/.",
            ),
            (
                "zot ext new weather --lang go --dir ~/src/weather",
                "Create a Go extension in a folder of its own; build it with go build.",
            ),
        ],
    ),
    (
        "zot ext update",
        &[
            (
                "zot ext update --all",
                "Update every installed extension; pinned, linked and new ones are skipped and said so.",
            ),
            (
                "zot ext update weather --dry-run --json",
                "Show the current and available version and commit, changing nothing.",
            ),
            (
                "zot ext update weather --ref v2.0.0",
                "Re-pin weather to tag v2.0.0 (a branch name makes it track that branch).",
            ),
            (
                "zot ext update weather --keep-local --enable",
                "Keep the files edited since install over the new version's, and enable it.",
            ),
        ],
    ),
    (
        "zot ext link",
        &[
            (
                "zot ext link ~/src/weather",
                "Run the working copy in ~/src/weather as the installed extension weather.",
            ),
            (
                "zot ext link ~/src/weather --project",
                "Link it into ./.zot/extensions/ of the project in the current folder only.",
            ),
        ],
    ),
    (
        "zot ext publish",
        &[
            (
                "zot ext publish ./weather oci://ghcr.io/me/zot-weather:1.2.0",
                "Push the folder as an OCI artifact; prints the manifest digest.",
            ),
            (
                "zot ext publish weather oci://registry.internal/ext/weather:1.2.0 --json",
                "Push the installed copy (its files as installed, without what a build made) and print the digest as data.",
            ),
            (
                "SOURCE_DATE_EPOCH=$(git log -1 --format=%ct) zot ext publish . oci://ghcr.io/me/zot-weather:1.2.0",
                "Also record when it was made, from the last commit: the same folder still publishes to the same digest.",
            ),
        ],
    ),
    (
        "zot ext info",
        &[
            (
                "zot ext info weather",
                "Show which copy of weather wins, what it runs, where it came from and its log.",
            ),
            (
                "zot ext info weather --json",
                "The same as data, one element per installed copy.",
            ),
            (
                "zot ext info weather -g",
                "Only the global copy, whether it wins or not.",
            ),
        ],
    ),
    (
        "zot ext add",
        &[
            (
                "zot ext add https://example.com/zot-clock.git --ref v1.2.0",
                "Install clock at the tag v1.2.0 and record it in ./.zot/extensions.json and its lock.",
            ),
            (
                "zot ext add ./tools/hello-py --disabled",
                "Install a folder of the project, disabled, and record it with \"enabled\": false.",
            ),
            (
                "zot ext add https://example.com/mono.git --subdir ext/weather -g",
                "Install a subfolder of a repository and record it in $ZOT_HOME/extensions.json.",
            ),
        ],
    ),
    (
        "zot ext verify",
        &[
            (
                "zot ext verify",
                "Check every installed extension against what its install placed (and the \
                 lock file, where the scope has one).",
            ),
            ("zot ext verify clock -p", "Only the project's clock."),
            (
                "zot ext verify --json | jq -r '.extensions[] | select(.status != \"ok\") | .name'",
                "The names of the extensions that are not ok.",
            ),
        ],
    ),
    (
        "zot ext sync",
        &[
            (
                "zot ext sync",
                "Install what ./.zot/extensions.json names and is missing, update what drifted.",
            ),
            (
                "zot ext sync --frozen",
                "In CI: exactly the locked commits and trees, or fail and change nothing.",
            ),
            (
                "zot ext sync --dry-run",
                "Print what would be installed, updated or removed; change nothing.",
            ),
            (
                "zot ext sync --prune --jobs 8",
                "Also remove project extensions the file does not name; fetch 8 at a time.",
            ),
        ],
    ),
    (
        "zot ext prepare",
        &[
            (
                "zot ext prepare hello",
                "Build hello again (after installing Go, say): in staging, then swapped in.",
            ),
            (
                "zot ext prepare --all --offline",
                "Every installed extension that has a step, from the tools' local caches only.",
            ),
            (
                "zot ext prepare weather --allow-scripts",
                "npm ci with the packages' lifecycle scripts, which are off by default.",
            ),
        ],
    ),
    (
        "zot ext cache",
        &[
            (
                "zot ext cache clean",
                "Delete every fetched commit kept in $ZOT_HOME/.ext-store/cache/.",
            ),
            (
                "zot ext cache clean --json",
                "The same, saying how many commits and bytes were freed as JSON.",
            ),
        ],
    ),
    (
        "zot ext cache clean",
        &[
            (
                "zot ext cache clean",
                "Delete every fetched commit kept in $ZOT_HOME/.ext-store/cache/.",
            ),
            (
                "zot ext cache clean -q",
                "The same, printing nothing but errors.",
            ),
        ],
    ),
    (
        "zot completions",
        &[
            (
                "source <(zot completions bash)",
                "Bash: a line for ~/.bashrc.",
            ),
            (
                "zot completions zsh > ~/.zfunc/_zot",
                "Zsh: a file in a folder of $fpath, which must be set before compinit runs.",
            ),
            (
                "zot completions fish > ~/.config/fish/completions/zot.fish",
                "Fish: loaded when zot is first completed.",
            ),
            (
                "zot completions powershell >> $PROFILE",
                "PowerShell: appended to the profile.",
            ),
            (
                "eval (zot completions elvish | slurp)",
                "Elvish: a line for ~/.config/elvish/rc.elv.",
            ),
        ],
    ),
];

/// The examples of `path`, if the table has them.
pub fn examples(path: &str) -> Option<&'static [(&'static str, &'static str)]> {
    EXAMPLES.iter().find(|(p, _)| *p == path).map(|(_, e)| *e)
}

/// The end of `path`'s `--help`: an `Examples:` heading, then the first [`HELP_EXAMPLES`]
/// examples, each command line with what it does indented below. `None` without examples.
pub fn help_examples(path: &str, styles: &Styles) -> Option<StyledStr> {
    let examples = examples(path).filter(|e| !e.is_empty())?;
    let header = styles.get_header();
    let literal = styles.get_literal();
    let mut text = format!("{header}Examples:{header:#}\n");
    for (command, what) in examples.iter().take(HELP_EXAMPLES) {
        let _ = writeln!(text, "  {literal}{command}{literal:#}");
        for line in wrap(what, "      ", HELP_WIDTH) {
            text.push_str(&line);
            text.push('\n');
        }
    }
    Some(StyledStr::from(text.trim_end().to_owned()))
}

/// `text` in lines of at most `width` columns (a longer word stays whole), each starting
/// with `indent`.
fn wrap(text: &str, indent: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::from(indent);
    for word in text.split_whitespace() {
        let fits = line.chars().count() + 1 + word.chars().count() <= width;
        if line.len() > indent.len() && !fits {
            lines.push(std::mem::replace(&mut line, String::from(indent)));
        }
        if line.len() > indent.len() {
            line.push(' ');
        }
        line.push_str(word);
    }
    lines.push(line);
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every command path a page is made for: `zot`, `zot ext`, `zot ext list`, ...
    fn paths() -> Vec<String> {
        fn collect(cmd: &clap::Command, path: String, out: &mut Vec<String>) {
            for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
                collect(sub, format!("{path} {}", sub.get_name()), out);
            }
            out.push(path);
        }
        let root = super::super::command();
        let mut out = Vec::new();
        collect(&root, root.get_name().to_owned(), &mut out);
        out
    }

    #[test]
    fn every_command_has_examples() {
        let missing: Vec<String> = paths()
            .into_iter()
            .filter(|p| examples(p).is_none_or(|e| e.len() < 2))
            .collect();
        assert!(
            missing.is_empty(),
            "add at least two examples for {missing:?} to EXAMPLES in src/cli/pages.rs"
        );
    }

    #[test]
    fn every_example_belongs_to_a_command() {
        let paths = paths();
        for (path, _) in EXAMPLES {
            assert!(paths.iter().any(|p| p == path), "no command {path:?}");
        }
    }

    #[test]
    fn help_examples_are_indented_and_fit_80_columns() {
        let help = help_examples("zot ext install", &Styles::plain()).unwrap();
        let text = help.to_string();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "Examples:");
        assert_eq!(lines[1], "  zot ext install ./hello-py");
        assert_eq!(
            lines[2],
            "      Copy a local folder into $ZOT_HOME/extensions/."
        );
        let shown = lines.iter().filter(|l| l.starts_with("  zot ")).count();
        assert_eq!(shown, HELP_EXAMPLES, "{text}");
        for line in lines.iter().filter(|l| l.starts_with("      ")) {
            assert!(line.chars().count() <= HELP_WIDTH, "{line:?}");
        }
        assert!(help_examples("zot ext nothing", &Styles::plain()).is_none());
    }

    #[test]
    fn wrap_breaks_between_words_and_keeps_long_words_whole() {
        assert_eq!(wrap("a bb ccc", "  ", 7), ["  a bb", "  ccc"]);
        assert_eq!(wrap("abcdefghij k", "  ", 5), ["  abcdefghij", "  k"]);
    }
}
