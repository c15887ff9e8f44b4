//! Generated files: the man pages in `man/` (clap_mangen from the clap definitions, plus
//! EXIT STATUS, ENVIRONMENT, FILES, EXAMPLES and SEE ALSO) and the completion scripts in
//! `completions/`, rendered in memory so a test can compare them with the committed copies.

use clap::{CommandFactory, ValueEnum};
use clap_complete::{Generator, Shell};
use clap_mangen::Man;
use clap_mangen::roff::{Roff, bold, italic, roman};

use crate::cli::Cli;
use crate::complete;

/// The date in each page's `.TH` line. Pages must not change from run to run, so this is a
/// constant rather than today: set it to the release date when the version changes.
pub const MAN_DATE: &str = "2026-11-29";

/// Examples for every page, keyed by command (`zot ext list`): (command line, what it does).
/// A test fails when a command has none.
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
            ("zot ext list --scope global", "Only the global ones."),
            (
                "zot ext list --json | jq -r '.[] | select(.error) | .name'",
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
                "Replace the installed copy of the same name.",
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
                "zot ext remove hello-py --global --yes",
                "Remove the global copy even when a project copy exists.",
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
                "Update every installed extension; pinned and linked ones are skipped and said so.",
            ),
            (
                "zot ext update weather --dry-run --json",
                "Show the current and available version and commit, changing nothing.",
            ),
            (
                "zot ext update weather --ref v2.0.0",
                "Re-pin weather to tag v2.0.0 (a branch name makes it track that branch).",
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
                "zot ext link . --project",
                "Link the current folder into ./.zot/extensions/ for this project only.",
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

const ENVIRONMENT: &[(&str, &str)] = &[
    (
        "ZOT_HOME",
        "Where global extensions and logs live. When unset or empty: $XDG_STATE_HOME/zot, \
         else ~/.local/state/zot; on macOS ~/Library/Application Support/zot, on Windows \
         %LOCALAPPDATA%\\zot.",
    ),
    (
        "XDG_STATE_HOME",
        "The base of the default ZOT_HOME on Linux and other Unix systems; ignored unless it \
         is an absolute path.",
    ),
    (
        "NO_COLOR",
        "When set, output is not coloured, unless --color always is given.",
    ),
    (
        "COMPLETE",
        "Set by the completion scripts: zot then prints completion candidates for the words \
         after -- instead of running a command.",
    ),
];

const FILES: &[(&str, &str)] = &[
    (
        "./.zot/extensions/<name>/",
        "Project scope: extensions of the project in the current directory. A project copy \
         wins over a global copy of the same name.",
    ),
    (
        "$ZOT_HOME/extensions/<name>/",
        "Global scope: extensions of every project.",
    ),
    (
        "<extension>/extension.json",
        "The manifest: name, exec, args, version, language, description and enabled.",
    ),
    (
        "$ZOT_HOME/logs/ext-<name>.log",
        "The extension's stderr, appended by zot; printed by zot ext logs.",
    ),
    (
        ".ext-store/",
        "Beside each extensions folder: the lock file, staging and trash folders, and the \
         install records sources/<name>.json (where each extension came from).",
    ),
];

const EXIT_STATUS: &[(&str, &str)] = &[
    (
        "0",
        "Success, also when the output pipe was closed early (zot ext list | head -1).",
    ),
    (
        "1",
        "Failure: an invalid manifest, a missing source, a network or permission error, a \
         name that is not installed, and so on. The error is printed to stderr as \
         error: ..., naming the file, field or flag involved.",
    ),
    (
        "2",
        "Usage error: an unknown flag or subcommand, a missing argument, --ref with a local \
         path, or remove without a terminal and without --yes.",
    ),
];

/// One manual page: `zot`, `zot ext`, `zot ext list`, ... and `zot completions`.
pub struct Page {
    /// The command as typed: `zot ext list`.
    pub path: String,
    /// The page name: `zot-ext-list`.
    pub name: String,
    pub command: clap::Command,
}

/// Every generated file as (path relative to the repository root, contents).
pub fn render() -> Vec<(String, Vec<u8>)> {
    let mut files = completion_scripts();
    files.extend(pages().iter().map(|page| {
        (
            format!("man/{}.1", page.name),
            render_page(page, &pages_of_interest(page)),
        )
    }));
    files
}

/// `completions/<file>` for each shell: the script `zot completions <shell>` prints.
pub fn completion_scripts() -> Vec<(String, Vec<u8>)> {
    Shell::value_variants()
        .iter()
        .map(|shell| {
            (
                format!("completions/{}", shell.file_name("zot")),
                complete::registration(*shell),
            )
        })
        .collect()
}

/// Every command that gets a page, parents before children, without clap's `help`.
pub fn pages() -> Vec<Page> {
    fn without_help(cmd: clap::Command) -> clap::Command {
        cmd.disable_help_subcommand(true)
            .mut_subcommands(without_help)
    }
    fn collect(cmd: &clap::Command, path: String, out: &mut Vec<Page>) {
        out.push(Page {
            name: path.replace(' ', "-"),
            path: path.clone(),
            command: cmd.clone(),
        });
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            collect(sub, format!("{path} {}", sub.get_name()), out);
        }
    }
    let mut root = without_help(Cli::command());
    root.build();
    let mut out = Vec::new();
    collect(&root, root.get_name().to_owned(), &mut out);
    out
}

/// The pages SEE ALSO names: the parent, the children, and for the top page every page.
fn pages_of_interest(page: &Page) -> Vec<String> {
    let all = pages();
    let parent = page.path.rsplit_once(' ').map(|(p, _)| p.to_owned());
    all.iter()
        .filter(|other| other.path != page.path)
        .filter(|other| {
            Some(&other.path) == parent.as_ref()
                || other.path.rsplit_once(' ').map(|(p, _)| p) == Some(page.path.as_str())
                || (parent.is_none() && other.path.matches(' ').count() == 1)
        })
        .map(|other| other.name.clone())
        .collect()
}

/// The examples of `path`, if the table has them.
pub fn examples(path: &str) -> Option<&'static [(&'static str, &'static str)]> {
    EXAMPLES.iter().find(|(p, _)| *p == path).map(|(_, e)| *e)
}

fn render_page(page: &Page, see_also: &[String]) -> Vec<u8> {
    let version = page.command.get_version().unwrap_or_default();
    let man = Man::new(page.command.clone().display_name(page.name.clone()))
        .title(page.name.to_uppercase())
        .date(MAN_DATE)
        .source(format!("zot {version}"))
        .manual("zot manual");
    let mut out = Vec::new();
    // Writing into a Vec cannot fail.
    let _ = man.render_title(&mut out);
    let _ = man.render_name_section(&mut out);
    let _ = man.render_synopsis_section(&mut out);
    let _ = man.render_description_section(&mut out);
    if page.command.get_arguments().any(|a| !a.is_hide_set()) {
        let _ = man.render_options_section(&mut out);
    }
    if page.command.get_subcommands().any(|s| !s.is_hide_set()) {
        let _ = man.render_subcommands_section(&mut out);
    }
    let mut roff = Roff::new();
    definitions(&mut roff, "EXIT STATUS", EXIT_STATUS, false);
    definitions(&mut roff, "ENVIRONMENT", ENVIRONMENT, false);
    definitions(&mut roff, "FILES", FILES, true);
    if let Some(examples) = examples(&page.path) {
        roff.control("SH", ["EXAMPLES"]);
        for (command, what) in examples {
            roff.control("TP", []);
            roff.text([bold(*command)]);
            roff.text([roman(*what)]);
        }
    }
    if !see_also.is_empty() {
        roff.control("SH", ["SEE ALSO"]);
        let mut refs = Vec::new();
        for (i, name) in see_also.iter().enumerate() {
            if i > 0 {
                refs.push(roman(", "));
            }
            refs.push(bold(name.as_str()));
            refs.push(roman("(1)"));
        }
        roff.text(refs);
    }
    let _ = roff.to_writer(&mut out);
    tidy(&String::from_utf8_lossy(&out)).into_bytes()
}

/// Every `Roff` written starts with the same apostrophe preamble; keep one, at the top.
/// clap_mangen separates an option's help from its possible values with `.br`, an empty
/// line and `.br`, which mandoc warns about; a `.sp` does the same.
fn tidy(page: &str) -> String {
    const PREAMBLE: &str = ".ie \\n(.g .ds Aq \\(aq\n.el .ds Aq '\n";
    let body = page.replace(PREAMBLE, "").replace(".br\n\n.br\n", ".sp\n");
    let mut out = String::from(PREAMBLE);
    for line in body.lines() {
        // clap_mangen ends the synopsis with a space; an escaped one (`\ `) would matter.
        let trimmed = line.trim_end_matches(' ');
        out.push_str(if trimmed.ends_with('\\') {
            line
        } else {
            trimmed
        });
        out.push('\n');
    }
    out
}

/// A section of tagged paragraphs; `italic_terms` for path patterns.
fn definitions(roff: &mut Roff, title: &str, items: &[(&str, &str)], italic_terms: bool) {
    roff.control("SH", [title]);
    for (term, text) in items {
        roff.control("TP", []);
        roff.text([if italic_terms {
            italic(*term)
        } else {
            bold(*term)
        }]);
        roff.text([roman(*text)]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_page_has_examples() {
        let missing: Vec<String> = pages()
            .into_iter()
            .filter(|p| examples(&p.path).is_none_or(|e| e.is_empty()))
            .map(|p| p.path)
            .collect();
        assert!(
            missing.is_empty(),
            "add examples for {missing:?} to EXAMPLES in src/docs.rs"
        );
    }

    #[test]
    fn every_example_belongs_to_a_page() {
        let paths: Vec<String> = pages().into_iter().map(|p| p.path).collect();
        for (path, _) in EXAMPLES {
            assert!(paths.iter().any(|p| p == path), "no command {path:?}");
        }
    }

    #[test]
    fn pages_cover_every_subcommand() {
        let names: Vec<String> = pages().into_iter().map(|p| p.name).collect();
        for expected in [
            "zot",
            "zot-ext",
            "zot-ext-list",
            "zot-ext-remove",
            "zot-completions",
        ] {
            assert!(names.iter().any(|n| n == expected), "{names:?}");
        }
        assert!(!names.iter().any(|n| n.ends_with("-help")), "{names:?}");
    }

    #[test]
    fn rendering_is_deterministic() {
        assert_eq!(render(), render());
    }
}
