//! Generated files: the man pages in `man/` (clap_mangen from the clap definitions, with a
//! SYNOPSIS of our own, plus EXIT STATUS, ENVIRONMENT, FILES, EXAMPLES and SEE ALSO) and the
//! completion scripts in `completions/`, rendered in memory so a test can compare them with
//! the committed copies.

use clap::{Arg, ArgAction, Command, CommandFactory, ValueEnum};
use clap_complete::{Generator, Shell};
use clap_mangen::Man;
use clap_mangen::roff::{Inline, Roff, bold, italic, roman};

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
         else ~/.local/state/zot; on macOS ~/Library/Application Support/zot.",
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
        "ZOT_AGENT",
        "The zot agent's executable. Invoked as zot with a command line other than ext, \
         completions or help for those, the binary runs the agent in its place with the \
         same arguments; when unset or empty, the agent is the next zot on PATH that is not \
         this binary (by file identity; relative PATH entries are skipped). Never used when \
         invoked as zot-ext.",
    ),
    (
        "ZOT_EXT_PASSTHROUGH",
        "Set in the agent's environment: how many times in a row a command line was handed \
         to the agent. At 4 the binary stops (exit 2), since the agent then seems to call \
         zot back.",
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
        "Beside each extensions folder: the lock file, staging and trash folders, the \
         install records sources/<name>.json (where each extension came from), the file \
         lists files/<name>.json (what each install placed, with SHA-256 and the tree hash), \
         backup/<name>/<time>/ (what update and install --force saved; the last 3 kept) and \
         pending/, a journal that is empty except while a change is being made. Never followed \
         through a symbolic link: a link there is an error naming it.",
    ),
];

/// The exit statuses of every command; each page adds its own from [`EXIT_STATUSES`].
const EXIT_STATUS: &[(&str, &str)] = &[
    (
        "0",
        "Success, also when the output pipe was closed early (zot ext list | head -1).",
    ),
    (
        "1",
        "Failure: what was asked could not be done, for instance because a file could not \
         be read or written. The error is printed to stderr as error: ..., naming the file, \
         field or flag involved.",
    ),
    (
        "2",
        "Usage error: an unknown flag or subcommand, a missing argument, or a value that \
         does not parse; nothing was changed.",
    ),
];

/// What each command's exit statuses mean beyond [`EXIT_STATUS`], keyed by command like
/// [`EXAMPLES`]: (status, when). A test fails when a `zot ext` subcommand has none.
pub const EXIT_STATUSES: &[(&str, &[(&str, &str)])] = &[
    (
        "zot",
        &[(
            "2",
            "Without a command and without an agent: the help is printed instead. A \
                 command line for the agent when no agent is found, ZOT_AGENT names \
                 something that cannot run, or the hand-over loops. (A command line handed \
                 to the agent ends with the agent's own exit status.)",
        )],
    ),
    (
        "zot ext",
        &[("2", "Without a subcommand: the help is printed instead.")],
    ),
    (
        "zot ext list",
        &[
            (
                "0",
                "Also when a manifest is missing or invalid: that extension is listed as \
                 broken, with the reason. Also when nothing is installed.",
            ),
            ("1", "An extensions folder exists but cannot be read."),
        ],
    ),
    (
        "zot ext install",
        &[
            (
                "1",
                "The source does not exist, is a file, or is inside (or contains) the \
                 extensions folder; cloning it or checking out --ref fails; the subfolder \
                 does not exist; the manifest is missing or invalid; the source holds a \
                 named pipe, socket or device; a submodule cannot be fetched; the project's \
                 .zot or .zot/extensions is a symbolic link (with --project), or .ext-store \
                 is not what it must be; or an extension of that name is installed and \
                 --force is not given. Nothing is installed.",
            ),
            (
                "2",
                "--ref with a local folder; both --subdir and URL#path; a --subdir that is \
                 not a relative folder inside the source; an empty source; or a \
                 user:password@host:path source (that form cannot carry a password).",
            ),
        ],
    ),
    (
        "zot ext remove",
        &[
            (
                "1",
                "No extension of that name is installed (in the scope given), the answer \
                 at the terminal is not y or yes, or --keep-data cannot save its data; \
                 nothing is removed.",
            ),
            (
                "2",
                "Without --yes when stdin is not a terminal and gives no y or yes line within \
                 1 second (an empty or silent pipe, /dev/null, any other answer); nothing is \
                 removed.",
            ),
        ],
    ),
    (
        "zot ext enable",
        &[
            (
                "0",
                "Also when the extension is enabled already; the manifest is left as it is.",
            ),
            (
                "1",
                "No extension of that name is installed (in the scope given), or its \
                 manifest is invalid (fix it first).",
            ),
        ],
    ),
    (
        "zot ext disable",
        &[
            (
                "0",
                "Also when the extension is disabled already; the manifest is left as it is.",
            ),
            (
                "1",
                "No extension of that name is installed (in the scope given), or its \
                 manifest is invalid (fix it first).",
            ),
        ],
    ),
    (
        "zot ext logs",
        &[(
            "1",
            "No extension of that name is installed and it has no log; or, without -f, the \
             log of an installed extension does not exist yet (with -f zot waits for it); or \
             the log is not a regular file (a named pipe, socket or device; also with -f).",
        )],
    ),
    (
        "zot ext doctor",
        &[
            (
                "0",
                "Also when nothing is installed: there is nothing to check.",
            ),
            (
                "1",
                "Any extension checked has an error; with --strict, also when one has only \
                 warnings (notes never fail). Also when a named extension is not installed, \
                 or a folder given as a path does not exist.",
            ),
        ],
    ),
    (
        "zot ext call",
        &[
            (
                "1",
                "The extension cannot be started (not installed, invalid manifest, exec not \
                 found); it does not register the command or tool, or the tool is \
                 interactive; it exits or times out (--timeout) before answering, or its \
                 answer cannot be decoded; or it answers with an error (a command_response \
                 with an error, a tool_result with is_error).",
            ),
            (
                "2",
                "No /<command> is given, or its name is empty; or the --tool arguments are \
                 not one JSON object. The extension is not started.",
            ),
        ],
    ),
    (
        "zot ext new",
        &[
            (
                "1",
                "An extension of that name exists already in the scope, or the --dir folder \
                 exists and is not an empty folder; nothing is written.",
            ),
            (
                "2",
                "The name is not a valid extension name (letters, digits, '.', '_' and '-').",
            ),
        ],
    ),
    (
        "zot ext update",
        &[
            (
                "0",
                "Also when nothing changed (up to date) and when extensions are skipped: \
                 pinned to a tag or commit (without --ref), and, with --all, linked ones, \
                 ones made by zot ext new and ones without an install record.",
            ),
            (
                "1",
                "Any extension failed to update (it keeps its old version; the others are \
                 still updated), or a named extension is not installed or cannot be updated \
                 (linked, made by zot ext new, or without an install record); the reasons \
                 go to stderr, also with --quiet.",
            ),
            (
                "2",
                "Neither names nor --all; names together with --all; or --ref without \
                 exactly one name.",
            ),
        ],
    ),
    (
        "zot ext link",
        &[(
            "1",
            "The path does not exist, is not a folder, or is inside (or contains) the \
             extensions folder; its manifest is missing or invalid; or an extension of that \
             name is installed and --force is not given. Nothing is linked.",
        )],
    ),
    (
        "zot ext info",
        &[
            (
                "0",
                "Also when the copies found are broken: their errors are shown.",
            ),
            ("1", "No copy of that name is installed in either scope."),
        ],
    ),
    (
        "zot completions",
        &[(
            "2",
            "The shell is not one of bash, elvish, fish, powershell and zsh (also for \
             COMPLETE=<shell> zot).",
        )],
    ),
];

/// One manual page: `zot`, `zot ext`, `zot ext list`, ... and `zot completions`.
pub struct Page {
    /// The command as typed: `zot ext list`.
    pub path: String,
    /// The page name: `zot-ext-list`.
    pub name: String,
    pub command: Command,
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
    fn without_help(cmd: Command) -> Command {
        cmd.disable_help_subcommand(true)
            .mut_subcommands(without_help)
    }
    fn collect(cmd: &Command, path: String, out: &mut Vec<Page>) {
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

/// The exit statuses particular to `path`, if the table has them.
pub fn exit_statuses(path: &str) -> Option<&'static [(&'static str, &'static str)]> {
    EXIT_STATUSES
        .iter()
        .find(|(p, _)| *p == path)
        .map(|(_, e)| *e)
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
    out.extend(synopsis(page).into_bytes());
    let _ = man.render_description_section(&mut out);
    if page.command.get_arguments().any(|a| !a.is_hide_set()) {
        let _ = man.render_options_section(&mut out);
    }
    if page.command.get_subcommands().any(|s| !s.is_hide_set()) {
        let _ = man.render_subcommands_section(&mut out);
    }
    let mut roff = Roff::new();
    exit_status(&mut roff, &page.path);
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

/// SYNOPSIS, rendered here: clap_mangen 0.3's leaves out option values (`[--timeout]`), the
/// `...` of repeatable arguments and which flags exclude each other, and clap's usage line
/// folds every option into `[OPTIONS]`.
fn synopsis(page: &Page) -> String {
    let mut items = vec![vec![bold(page.path.as_str())]];
    items.extend(synopsis_items(&page.command));
    let line: Vec<String> = items
        .iter()
        .map(|item| item.iter().map(inline_roff).collect())
        .collect();
    // Left-aligned, so the spaces between items are not stretched.
    format!(".SH SYNOPSIS\n.ad l\n{}\n.ad\n", line.join(" "))
}

/// One piece of text as roff, its spaces unbreakable: a line never breaks inside
/// `[--timeout SECS]` (the roff crate cannot write `\ `).
fn inline_roff(inline: &Inline) -> String {
    let (font, text) = match inline {
        Inline::Roman(text) => ("", text),
        Inline::Bold(text) => ("B", text),
        Inline::Italic(text) => ("I", text),
        Inline::LineBreak => return String::new(),
    };
    let text = text
        .replace('\\', "\\e")
        .replace('-', "\\-")
        .replace(' ', "\\ ");
    match font {
        "" => text,
        font => format!("\\f{font}{text}\\fR"),
    }
}

/// What follows the command in its synopsis: the options (flags that exclude each other
/// as one `[-p|-g]`), the arguments, then the subcommand.
fn synopsis_items(cmd: &Command) -> Vec<Vec<Inline>> {
    let groups = exclusive_groups(cmd);
    let mut shown = vec![false; groups.len()];
    let mut items = Vec::new();
    for opt in options(cmd) {
        let member = |g: &(bool, Vec<&Arg>)| g.1.iter().any(|a| a.get_id() == opt.get_id());
        match groups.iter().position(member) {
            Some(i) if !shown[i] => {
                shown[i] = true;
                items.push(exclusive_item(&groups[i]));
            }
            Some(_) => {}
            None => items.push(option_item(opt)),
        }
    }
    for arg in cmd.get_positionals().filter(|a| !a.is_hide_set()) {
        let name = vec![italic(value_name(arg))];
        items.push(bracket(name, !arg.is_required_set(), repeats(arg)));
    }
    if cmd.has_subcommands() {
        let name = cmd.get_subcommand_value_name().unwrap_or("COMMAND");
        let optional = !cmd.is_subcommand_required_set();
        items.push(bracket(vec![italic(name)], optional, false));
    }
    items
}

/// The visible options: the command's own, then the global ones, then help and version.
fn options(cmd: &Command) -> Vec<&Arg> {
    let mut opts: Vec<&Arg> = cmd
        .get_arguments()
        .filter(|a| !a.is_positional() && !a.is_hide_set())
        .collect();
    opts.sort_by_key(|a| match a.get_id().as_str() {
        "help" | "version" => 2,
        _ if a.is_global_set() => 1,
        _ => 0,
    });
    opts
}

/// The groups of options of which at most one may be given: (required, members).
fn exclusive_groups(cmd: &Command) -> Vec<(bool, Vec<&Arg>)> {
    let option = |id: &clap::Id| {
        cmd.get_arguments()
            .find(|a| a.get_id() == id && !a.is_positional() && !a.is_hide_set())
    };
    cmd.get_groups()
        .filter(|g| !(*g).clone().is_multiple())
        .map(|g| {
            (
                g.is_required_set(),
                g.get_args().filter_map(option).collect(),
            )
        })
        .filter(|(_, members): &(bool, Vec<&Arg>)| members.len() > 1)
        .collect()
}

/// `[-n|--lines N]`: both names of an option, and its value.
fn option_item(opt: &Arg) -> Vec<Inline> {
    let short = opt.get_short().map(|c| bold(format!("-{c}")));
    let long = opt.get_long().map(|l| bold(format!("--{l}")));
    let mut words = match (short, long) {
        (Some(short), Some(long)) => vec![short, roman("|"), long],
        (short, long) => short.into_iter().chain(long).collect(),
    };
    words.extend(value_words(opt));
    bracket(words, !opt.is_required_set(), repeats(opt))
}

/// `[-p|-g]`: one name of each option of an exclusive group (the short one if any).
fn exclusive_item((required, members): &(bool, Vec<&Arg>)) -> Vec<Inline> {
    let mut words = Vec::new();
    for (i, opt) in members.iter().enumerate() {
        if i > 0 {
            words.push(roman("|"));
        }
        let name = match (opt.get_short(), opt.get_long()) {
            (Some(c), _) => format!("-{c}"),
            (None, Some(long)) => format!("--{long}"),
            (None, None) => continue,
        };
        words.push(bold(name));
        words.extend(value_words(opt));
    }
    bracket(words, !required, false)
}

/// ` SECS` after an option that takes a value, ` [SECS]` if the value may be left out.
fn value_words(opt: &Arg) -> Vec<Inline> {
    match opt.get_num_args() {
        Some(range) if range.takes_values() && range.min_values() == 0 => {
            vec![roman(" ["), italic(value_name(opt)), roman("]")]
        }
        Some(range) if range.takes_values() => vec![roman(" "), italic(value_name(opt))],
        _ => Vec::new(),
    }
}

/// `NAME`: the value name clap shows in help, or the argument's id in capitals.
fn value_name(arg: &Arg) -> String {
    match arg.get_value_names() {
        Some(names) if !names.is_empty() => names
            .iter()
            .map(|n| n.as_str())
            .collect::<Vec<_>>()
            .join(" "),
        _ => arg.get_id().as_str().to_uppercase(),
    }
}

/// Whether the argument may be given more than once (or takes several values).
fn repeats(arg: &Arg) -> bool {
    matches!(arg.get_action(), ArgAction::Append | ArgAction::Count)
        || arg.get_num_args().is_some_and(|r| r.max_values() > 1)
}

/// `[words...]`: `...` when repeatable, brackets when optional.
fn bracket(mut words: Vec<Inline>, optional: bool, repeats: bool) -> Vec<Inline> {
    if repeats {
        words.push(roman("..."));
    }
    if optional {
        words.insert(0, roman("["));
        words.push(roman("]"));
    }
    words
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

/// EXIT STATUS: the statuses of every command, then those particular to `path`.
fn exit_status(roff: &mut Roff, path: &str) {
    definitions(roff, "EXIT STATUS", EXIT_STATUS, false);
    if let Some(particular) = exit_statuses(path) {
        roff.control("PP", []);
        roff.text([roman("In particular, "), bold(path), roman(" exits with:")]);
        tagged(roff, particular, false);
    }
}

/// A section of tagged paragraphs; `italic_terms` for path patterns.
fn definitions(roff: &mut Roff, title: &str, items: &[(&str, &str)], italic_terms: bool) {
    roff.control("SH", [title]);
    tagged(roff, items, italic_terms);
}

/// Tagged paragraphs: each term on a line of its own, its text indented below.
fn tagged(roff: &mut Roff, items: &[(&str, &str)], italic_terms: bool) {
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
    fn every_ext_subcommand_has_exit_statuses() {
        let missing: Vec<String> = pages()
            .into_iter()
            .filter(|p| p.path.starts_with("zot ext "))
            .filter(|p| exit_statuses(&p.path).is_none_or(|e| e.is_empty()))
            .map(|p| p.path)
            .collect();
        assert!(
            missing.is_empty(),
            "add the exit statuses particular to {missing:?} to EXIT_STATUSES in src/docs.rs"
        );
    }

    #[test]
    fn every_exit_status_entry_belongs_to_a_page() {
        let paths: Vec<String> = pages().into_iter().map(|p| p.path).collect();
        for (path, statuses) in EXIT_STATUSES {
            assert!(paths.iter().any(|p| p == path), "no command {path:?}");
            for (status, _) in *statuses {
                assert!(["0", "1", "2"].contains(status), "{path}: status {status}");
            }
        }
    }

    /// The rendered page of `path` (`zot ext doctor`).
    fn page(path: &str) -> String {
        let file = format!("man/{}.1", path.replace(' ', "-"));
        let (_, bytes) = render().into_iter().find(|(f, _)| *f == file).unwrap();
        String::from_utf8(bytes).unwrap()
    }

    /// The text of `section` of the page of `path`, without fonts and escapes.
    fn section(path: &str, section: &str) -> String {
        let page = page(path);
        // The roff crate quotes a title with spaces.
        let start = [format!(".SH {section}\n"), format!(".SH \"{section}\"\n")]
            .iter()
            .find_map(|heading| page.find(heading))
            .unwrap_or_else(|| panic!("{path} has no {section}"));
        let body = &page[start..];
        let body = body[4..]
            .find("\n.SH ")
            .map_or(body, |end| &body[..end + 4]);
        body.replace("\\fB", "")
            .replace("\\fI", "")
            .replace("\\fR", "")
            .replace("\\-", "-")
            .replace("\\ ", " ")
    }

    #[test]
    fn synopsis_shows_values_repeats_and_exclusive_flags() {
        let doctor = section("zot ext doctor", "SYNOPSIS");
        assert!(
            doctor.contains("\nzot ext doctor [--timeout SECS] [--strict] "),
            "{doctor}"
        );
        assert!(doctor.contains(" [NAME...]\n"), "{doctor}");
        let call = section("zot ext call", "SYNOPSIS");
        assert!(call.contains("[--tool TOOL] [--timeout SECS]"), "{call}");
        assert!(call.contains(" NAME [INPUT...]\n"), "{call}");
        let update = section("zot ext update", "SYNOPSIS");
        for part in ["[--ref REF]", "[-p|-g]", "[NAME...]", "[--color WHEN]"] {
            assert!(update.contains(part), "{part} in {update}");
        }
        assert!(!update.contains("--project"), "{update}");
        let logs = section("zot ext logs", "SYNOPSIS");
        assert!(
            logs.contains("[-n|--lines N]") && logs.contains(" NAME\n"),
            "{logs}"
        );
        let new = section("zot ext new", "SYNOPSIS");
        assert!(
            new.contains("[--lang LANG]") && new.contains("[-p|--dir PATH]"),
            "{new}"
        );
        let ext = section("zot ext", "SYNOPSIS");
        assert!(ext.contains(" COMMAND\n"), "{ext}");
    }

    /// Every option that takes a value shows it, and every repeatable argument its `...`,
    /// on every page (arguments added later included).
    #[test]
    fn every_synopsis_names_values_and_repeats() {
        for page in pages() {
            let synopsis = section(&page.path, "SYNOPSIS");
            for arg in page.command.get_arguments().filter(|a| !a.is_hide_set()) {
                let value = value_name(arg);
                if arg.is_positional() {
                    let shown = if repeats(arg) {
                        format!("{value}...")
                    } else {
                        value
                    };
                    assert!(
                        synopsis.contains(&shown),
                        "{}: {shown} in {synopsis}",
                        page.path
                    );
                    continue;
                }
                if !arg.get_num_args().is_some_and(|r| r.takes_values()) {
                    continue;
                }
                let short = arg.get_short().map(|c| format!("-{c} {value}"));
                let long = arg.get_long().map(|l| format!("--{l} {value}"));
                assert!(
                    [short, long]
                        .into_iter()
                        .flatten()
                        .any(|s| synopsis.contains(&s)),
                    "{}: {} without {value} in {synopsis}",
                    page.path,
                    arg.get_id()
                );
            }
        }
    }

    #[test]
    fn exit_status_is_particular_to_each_page() {
        let doctor = section("zot ext doctor", "EXIT STATUS");
        assert!(doctor.contains("--strict"), "{doctor}");
        for other in ["--ref", "terminal", "--yes"] {
            assert!(!doctor.contains(other), "{other} in {doctor}");
        }
        let remove = section("zot ext remove", "EXIT STATUS");
        assert!(
            remove.contains("not a terminal") && remove.contains("--yes"),
            "{remove}"
        );
        let call = section("zot ext call", "EXIT STATUS");
        assert!(
            call.contains("JSON object") && call.contains("times out"),
            "{call}"
        );
        // The general statuses are on every page.
        for page in pages() {
            let text = section(&page.path, "EXIT STATUS");
            for general in ["Success", "Failure", "Usage error"] {
                assert!(text.contains(general), "{}: {text}", page.path);
            }
        }
    }

    #[test]
    fn rendering_is_deterministic() {
        assert_eq!(render(), render());
    }
}
