//! Command-line definitions: every flag, argument and help text of `zot` and `zot ext`, and
//! the command the binary parses with ([`command`]: the definitions plus each subcommand's
//! examples from [`pages`], built only when help is asked for).
//!
//! The doc comments on clap items are help text, printed as written (no Markdown): names such
//! as $ZOT_HOME stay unquoted there.
#![allow(clippy::doc_markdown)]

pub mod candidates;
pub mod complete;
#[cfg(test)]
mod flag_mentions;
mod hints;
pub mod pages;

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::builder::FalseyValueParser;
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};
use clap_complete::Shell;

use crate::catalog::paths::Scope;
use crate::output::{ColorChoice, Output};
use candidates::{Offer, names};

/// The command line as the binary parses it: [`Cli`]'s definitions with each subcommand's
/// examples ([`pages::help_examples`]) at the end of its help. The man pages are rendered
/// from it too.
pub fn command() -> clap::Command {
    decorated(Examples::Included)
}

/// Whether a command carries the examples at the end of each subcommand's help.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Examples {
    Included,
    Left,
}

fn decorated(examples: Examples) -> clap::Command {
    let mut cli = Cli::command();
    let root = cli.get_name().to_owned();
    let styles = cli.get_styles().clone();
    decorate(&mut cli, &root, examples, &styles);
    cli
}

/// Parses `args` (the program name first) like [`command`]: only help prints the examples,
/// and formatting them all costs more than the rest of a parse, so they are built only when
/// the first parse asks for help. A usage error gets a tip that works where clap's own has
/// none ([`hints`]).
pub fn try_parse_from(args: impl IntoIterator<Item = OsString>) -> Result<Cli, clap::Error> {
    let args: Vec<OsString> = args.into_iter().collect();
    if let Some(answer) = version_alone(&args) {
        return Err(answer);
    }
    let lean = decorated(Examples::Left);
    match parse_with(lean, &args) {
        Err(e) if shows_help(&e) => parse_with(command(), &args),
        parsed => parsed,
    }
}

fn shows_help(e: &clap::Error) -> bool {
    use clap::error::ErrorKind;
    matches!(
        e.kind(),
        ErrorKind::DisplayHelp | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    )
}

/// `zot -V` or `zot --version`, and the same after `ext`, with nothing else on the line: the
/// answer the full parse gives (`zot <version>` on stdout, exit 0), from a command without
/// the subcommand tree, which costs more to build than the rest of such a run. Any other
/// line (`--version --bogus`, `ext list -V`) is left to the full parse.
fn version_alone(args: &[OsString]) -> Option<clap::Error> {
    let flag = match args.get(1..)? {
        [flag] => flag,
        [ext, flag] if ext == "ext" => flag,
        _ => return None,
    };
    if flag != "--version" && flag != "-V" {
        return None;
    }
    clap::Command::new("zot")
        .display_name(VERSION_NAME)
        .version(env!("CARGO_PKG_VERSION"))
        .try_get_matches_from(["zot", "--version"])
        .err()
}

fn parse_with(mut cmd: clap::Command, args: &[OsString]) -> Result<Cli, clap::Error> {
    cmd.try_get_matches_from_mut(args.to_vec())
        .map_err(|e| hints::improve(e, args, &cmd))
        .and_then(|matches| Cli::from_arg_matches(&matches).map_err(|e| e.format(&mut cmd)))
}

/// The name `--version` prints before the version: `zot-ext`, so it is not mistaken for the
/// zot agent's (`zot --version` of the agent prints `zot 0.1.62`).
const VERSION_NAME: &str = "zot-ext";

/// Gives every subcommand below `cmd` (whose path is `path`, `zot ext`) `-V` printing
/// `zot-ext <version>` (clap would name the subcommand, `zot-ext-list`), and, when `examples`
/// says so, examples after its help. Edited in place: rebuilding the tree costs as much as
/// the parse.
fn decorate(
    cmd: &mut clap::Command,
    path: &str,
    examples: Examples,
    styles: &clap::builder::Styles,
) {
    for sub in cmd.get_subcommands_mut() {
        let sub_path = format!("{path} {}", sub.get_name());
        let mut edited = std::mem::take(sub).display_name(VERSION_NAME);
        if examples == Examples::Included
            && let Some(text) = pages::help_examples(&sub_path, styles)
        {
            edited = edited.after_help(text);
        }
        decorate(&mut edited, &sub_path, examples, styles);
        *sub = edited;
    }
}

/// `zot --help`: one line, examples, then what zot ext does and how it shares zot's name.
const LONG_ABOUT: &str = "\
Install and manage extensions for the zot coding agent.

Examples:
  zot ext install https://github.com/you/zot-clock.git
  zot ext new hello-py --lang python
  zot ext doctor

zot ext manages extensions (folders with an extension.json manifest and a program that speaks \
newline-delimited JSON) in the project scope, ./.zot/extensions/, or the global scope, \
$ZOT_HOME/extensions/: install, new and link add them; list and info show them; enable, \
disable, update and remove change them; logs, doctor and call look inside them; add records \
one in the project file .zot/extensions.json and sync makes the installed set match that file \
and its lock; verify checks them against their file lists and lock file, cache clean \
empties the fetch cache, prepare runs an extension's build or dependency install again, and \
publish pushes one to an OCI registry. \
zot completions prints the shell completion script.

zot shares its name with the zot agent: any other command line (zot --ext ./x, and with the \
agent installed also the bare zot, --help and --version) is handed to the agent, $ZOT_AGENT or \
the next zot on PATH that is not a copy of this binary. A ZOT_AGENT without a slash is looked \
up on PATH; with a slash it is a path (relative to the current folder unless it starts with /). \
Invoked as zot-ext, the binary is always zot ext.";

/// Install and manage extensions for the zot coding agent.
#[derive(Debug, Parser)]
#[command(
    name = "zot",
    display_name = "zot-ext",
    version,
    arg_required_else_help = true,
    propagate_version = true,
    max_term_width = 100,
    long_about = LONG_ABOUT,
    after_help = EXT_OVERVIEW
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,

    #[command(subcommand)]
    pub command: Command,
}

/// The `zot ext` subcommands, shown under `zot --help` so both help screens name them all.
pub const EXT_OVERVIEW: &str = "\
Extension commands:
  zot ext list                    List installed extensions and their state
  zot ext install <path|git-url>  Copy a folder or clone a git repository
  zot ext remove <name>...        Delete installed extensions
  zot ext enable <name>           Re-enable a disabled extension
  zot ext disable <name>          Disable an extension without removing it
  zot ext logs <name> [-f]        Print or follow an extension's log
  zot ext doctor [<name>...]      Start extensions as zot does and check them
  zot ext call <name> /<command>  Run a command (or --tool) without the agent
  zot ext new <name>              Create a new extension from a template
  zot ext update [<name>...]      Update extensions from their sources
  zot ext link <path>             Register a working copy by symbolic link
  zot ext info <name>             Where it came from and which copy wins
  zot ext publish <folder> <ref>  Push an extension to an OCI registry
  zot ext add <path|git-url>      Install and record it in the project file
  zot ext sync                    Match the installed set to the project file
  zot ext verify [<name>...]      Check installed files against their lists
  zot ext prepare [<name>...]     Run a build or dependency install again
  zot ext cache clean             Empty the fetch cache of git commits";

/// What bare `zot ext` prints (and bare `zot` without the agent): the commands by what they
/// do and three examples, on stdout, exit 0.
pub const SHORT_OVERVIEW: &str = "\
zot ext: install and manage extensions for the zot coding agent

Commands:
  list, info                  what is installed, and which copy zot loads
  install, add, new, link     bring in an extension (add records it in the project)
  publish                     push one to an OCI registry
  enable, disable, remove     turn one on or off, or delete it
  update, sync                fetch again; match the project file and its lock
  doctor, call, logs          start one as zot does, run a command, read its log
  prepare                     run its build or dependency install again
  verify, cache clean         check installed files; empty the fetch cache

Examples:
  zot ext install https://github.com/you/zot-clock.git
  zot ext new hello-py --lang python
  zot ext doctor

zot ext <command> --help shows a command's options and examples; zot --help has more.
";

/// `text` (the overview) fitted to `width` columns: a line that is wider is cut at word
/// boundaries, a command line of the list (`  name, name      what it does`) with what it
/// does indented under itself, so nothing breaks mid-word.
pub fn reflow(text: &str, width: usize) -> String {
    use crate::output::table::{display_width, wrap};
    let mut out = String::new();
    for line in text.lines() {
        if display_width(line) <= width {
            out.push_str(line);
            out.push('\n');
            continue;
        }
        let indent = line
            .find("   ")
            .filter(|_| line.starts_with("  "))
            .map(|gap| gap + line[gap..].len() - line[gap..].trim_start().len());
        let (head, rest) = match indent {
            Some(at) if at + 10 < width => line.split_at(at),
            _ => ("", line),
        };
        let pad = " ".repeat(display_width(head));
        for (i, piece) in wrap(rest, width.saturating_sub(pad.len()))
            .iter()
            .enumerate()
        {
            out.push_str(if i == 0 { head } else { &pad });
            out.push_str(piece);
            out.push('\n');
        }
    }
    out
}

/// A usage error as one line and its tips (for `--json`): clap's text without `error: `,
/// the usage block and the help line.
pub fn usage_error_parts(error: &clap::Error) -> (String, Vec<String>) {
    let text = error.render().to_string();
    let mut lines = text.lines();
    let message = lines
        .next()
        .unwrap_or_default()
        .trim_start_matches("error: ")
        .to_string();
    let tips = lines
        .filter_map(|line| line.trim().strip_prefix("tip: "))
        .map(str::to_string)
        .collect();
    (crate::output::clean(&message), tips)
}

/// The overview for a command line that is only `zot ext` (or only `zot`, which reaches here
/// when no agent was found to hand it to).
pub fn overview_alone(args: &[OsString]) -> Option<String> {
    match args.get(1..)? {
        [ext] if ext == "ext" => Some(SHORT_OVERVIEW.to_string()),
        [] => Some(format!(
            "The zot agent is not installed here (see {}, or set {} to it);\nthis binary runs zot ext and zot completions.\n\n{SHORT_OVERVIEW}",
            crate::agent::AGENT_HOME,
            crate::agent::AGENT_VAR
        )),
        _ => None,
    }
}

/// Flags accepted by every subcommand, listed after its own under their own heading.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Global options")]
pub struct GlobalArgs {
    /// Print nothing but errors (and requested data)
    #[arg(short, long, global = true)]
    pub quiet: bool,

    // A plain string: the environment variables are shown as typed, without backticks.
    #[arg(
        long,
        global = true,
        value_enum,
        default_value_t = ColorChoice::Auto,
        value_name = "WHEN",
        help = "When to colour output; auto obeys NO_COLOR, CLICOLOR_FORCE and TERM=dumb"
    )]
    pub color: ColorChoice,

    /// Print machine-readable JSON on stdout instead of text
    #[arg(long, global = true)]
    pub json: bool,
}

impl GlobalArgs {
    /// How this run prints.
    pub fn output(&self) -> Output {
        Output::new(self.color, self.quiet, self.json)
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Install, list and manage extensions
    ///
    /// An extension is a folder with an extension.json manifest and a program that speaks
    /// newline-delimited JSON on stdin/stdout. install copies or clones such a folder into
    /// the places zot scans, new writes one from a template and link registers a working copy;
    /// list and info show what is installed and which copy wins; enable and disable turn one
    /// on and off, update fetches it again from its source and remove deletes it; logs prints
    /// its log, doctor checks it by starting it as zot does, and call runs one of its
    /// commands or tools without the agent. add installs one and records it in the project
    /// file (.zot/extensions.json); sync installs, updates and removes until the installed
    /// set matches that file and its lock (.zot/extensions.lock). verify checks the installed
    /// files against what the install placed and the lock file records; cache clean empties
    /// the fetch cache; prepare runs an installed extension's build or dependency install
    /// again; publish pushes one to an OCI registry, as an artifact install oci://… takes.
    ///
    /// Extensions live in two scopes: the project scope, ./.zot/extensions/<name>/ under the
    /// current directory, and the global scope, $ZOT_HOME/extensions/<name>/. A project copy
    /// wins over a global copy of the same name. Invoked as zot-ext (a link to the binary),
    /// zot behaves as zot ext.
    Ext(ExtArgs),
    /// Print the shell completion script for zot and zot-ext
    ///
    /// Prints the script that makes SHELL complete zot's subcommands, flags, flag values and
    /// the names of installed extensions: enable offers the disabled ones, disable the
    /// enabled ones, and remove and logs every installed one, from both scopes. The script
    /// runs COMPLETE=<shell> zot for candidates, so zot must be on PATH. It is the same as
    /// the file for SHELL in the source's completions/ folder; load it from the shell's
    /// startup file; for bash, add source <(zot completions bash) to ~/.bashrc. Without
    /// SHELL, the shell the SHELL environment variable names.
    Completions(CompletionsArgs),
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to print the completion script for [default: the one $SHELL names]
    #[arg(value_name = "SHELL", value_parser = ShellName)]
    pub shell: Option<Shell>,
}

/// A shell zot completes for, by name: an unknown one (`tcsh`) is refused with the list of
/// those there are, not a look-alike.
#[derive(Debug, Clone, Copy)]
pub struct ShellName;

impl ShellName {
    /// The shell `name` names, as clap_complete knows shells (`pwsh` is PowerShell); a
    /// path such as `$SHELL`'s `/usr/bin/zsh` too.
    pub fn parse(name: &str) -> Option<Shell> {
        let stem = std::path::Path::new(name).file_stem()?.to_str()?;
        let shells = clap_complete::env::Shells::builtins();
        Shell::from_str(shells.completer(stem)?.name(), true).ok()
    }

    /// The shells' names, for messages: `bash, elvish, fish, powershell or zsh`.
    pub fn names() -> String {
        let names: Vec<String> = Shell::value_variants()
            .iter()
            .filter_map(|s| s.to_possible_value().map(|v| v.get_name().to_owned()))
            .collect();
        match names.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
            _ => names.join(""),
        }
    }
}

impl clap::builder::TypedValueParser for ShellName {
    type Value = Shell;

    fn parse_ref(
        &self,
        _cmd: &clap::Command,
        _arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<Shell, clap::Error> {
        let text = value.to_string_lossy();
        ShellName::parse(&text).ok_or_else(|| {
            clap::Error::raw(
                clap::error::ErrorKind::InvalidValue,
                format!(
                    "{} is not a shell zot completes for; use {}\n",
                    crate::output::printable(&text),
                    ShellName::names()
                ),
            )
        })
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(
            Shell::value_variants()
                .iter()
                .filter_map(ValueEnum::to_possible_value),
        ))
    }
}

#[derive(Debug, Args)]
#[command(arg_required_else_help = true)]
pub struct ExtArgs {
    #[command(subcommand)]
    pub command: ExtCommand,
}

#[derive(Debug, Subcommand)]
pub enum ExtCommand {
    /// List installed extensions and their state
    ///
    /// Lists every extension of both scopes, project first, folder names sorted, with its
    /// scope, name, version, whether it is enabled, language, description and folder. A
    /// global folder hidden by a project folder of the same folder name is marked shadowed
    /// (zot skips it whatever either manifest says). A folder
    /// whose manifest is missing or invalid is listed as broken with the reason
    /// (file:line:column: message); the others still list and the exit status stays 0.
    /// On a terminal the table fits its width (descriptions, then folders, are shortened
    /// with …; --wide shows them whole) and the reason is on a line under its row; piped,
    /// every cell is whole and the reason is the description.
    #[command(visible_alias = "ls")]
    List(ListArgs),
    /// Copy a directory or clone a git repository into the extensions folder
    ///
    /// A local folder is copied, keeping file modes, times and symbolic links; a git URL is
    /// cloned (shallowly when remote) at its default branch or at --ref. The manifest is
    /// validated before anything becomes visible, and the extension is placed atomically in
    /// $ZOT_HOME/extensions/<name>/ (./.zot/extensions/<name>/ with --project), named after
    /// the manifest's name. Any failure leaves the installed extensions as they were.
    Install(InstallArgs),
    /// Delete installed extensions
    ///
    /// Asks for confirmation at a terminal (one question naming them all); without one it
    /// removes nothing unless --yes is given or stdin gives a y or yes line within 1 second
    /// (echo y | zot ext remove NAME); otherwise it exits with status 2. Several names are
    /// removed one by one, each atomically: one that cannot be removed is reported and the
    /// others are still removed (exit 1). Each extension is moved out of its root, then deleted; a
    /// symlinked extension loses only its link. Without --project or --global the copy that
    /// wins is removed. Files in the folder that the install did not place (the extension's
    /// data) are deleted with it, and named first; --keep-data saves them to
    /// <base>/.ext-store/backup/<name>/<time>/ (the last 3 are kept). An extension without a
    /// file list (copied in by hand or installed by an older zot) is saved whole. When the
    /// scope's project file (extensions.json) names the extension, a terminal is asked
    /// whether to drop it from the file too; without a terminal it is dropped (with its lock
    /// entry) and the output says so; --keep-in-file keeps it, so zot ext sync installs it
    /// again.
    #[command(visible_alias = "rm")]
    Remove(RemoveArgs),
    /// Re-enable a disabled extension
    ///
    /// Sets "enabled": true in the extension's manifest atomically, changing nothing else in
    /// the file (key order, unknown fields and indentation are kept). Enabling an enabled
    /// extension says so and exits 0. Restart zot for the change to take effect.
    Enable(EnableArgs),
    /// Disable an extension without removing it
    ///
    /// Sets "enabled": false in the extension's manifest atomically, changing nothing else in
    /// the file (key order, unknown fields and indentation are kept). zot skips a disabled
    /// extension; zot ext enable turns it back on. Restart zot for the change to take
    /// effect.
    Disable(DisableArgs),
    /// Print or follow an extension's log (its stderr)
    ///
    /// Prints $ZOT_HOME/logs/ext-<name>.log, where zot appends the extension's stderr; any
    /// name whose log exists works, installed or not (an extension loaded with zot --ext has
    /// a log). The name must be a single file name (no slash or backslash). With
    /// -n only the last N lines are printed, read from the end of the file. With -f it keeps
    /// printing new lines, following the file through truncation, rotation and a file that
    /// does not exist yet, until interrupted. The log must be a regular file: a named pipe,
    /// socket or device in its place is an error in every form, -f included.
    Logs(LogsArgs),
    /// Check extensions by starting them and speaking their protocol
    ///
    /// Checks each named extension (every installed one when none is named; a name with a
    /// slash is a folder, such as a working copy): the manifest, that exec resolves as zot
    /// resolves it and is executable, then starts it as zot does and checks hello, the
    /// registrations up to ready, tool schemas, event subscriptions and shutdown, and finally
    /// which commands and tools are taken by zot itself or by an extension loaded earlier.
    /// Extensions are checked in parallel; no process is left running. Exits 1 if any
    /// extension has an error (or, with --strict, a warning).
    Doctor(DoctorArgs),
    /// Run an extension's slash command or tool without the agent
    ///
    /// Starts the extension as zot does, sends command_invoked for /<command> with the rest
    /// of the line as its arguments (or, with --tool, tool_call with a JSON object of
    /// arguments), prints the command_response or tool_result and any notify frames, then
    /// shuts the extension down. Exits 1 if the extension fails, times out, or answers with
    /// an error.
    Call(CallArgs),
    /// Create a new extension from a template
    ///
    /// Writes a small extension (extension.json, the program and a README) that registers
    /// one slash command and one tool and handles shutdown, in Python or Node (no
    /// dependencies), Go (built at once when installed and Go is on PATH), Rust (build it
    /// first), or POSIX shell. It goes to
    /// $ZOT_HOME/extensions/<name>/, ./.zot/extensions/<name>/ with --project, or the folder
    /// given with --dir, written atomically; an existing extension is never overwritten. An
    /// installed one gets an install record of kind "new" (with the template and language),
    /// which info shows and update knows has no source to fetch from.
    New(NewArgs),
    /// Update extensions from where they were installed from
    ///
    /// A git install fetches its branch (the default branch unless installed with --ref
    /// <branch>) shallowly and moves to the new tip; an install pinned to a tag or commit is
    /// skipped unless --ref re-pins it. A folder install is copied again from its folder. A
    /// linked one, one made by zot ext new and one without an install record ("unknown
    /// source") cannot be updated: named, that is an error (exit status 1); with --all they
    /// are skipped with a note. The new version is staged and validated exactly like an
    /// install; when no file the install placed would change it is "up to date" (or
    /// "re-pinned" when only the ref changed) and the installed folder is left as it is;
    /// otherwise it is swapped in atomically: any failure leaves the old version in place and
    /// working, its reason goes to stderr (also with --quiet), and the exit status is 1.
    Update(UpdateArgs),
    /// Register a working copy as an extension, by symbolic link
    ///
    /// Creates $ZOT_HOME/extensions/<name>/ (./.zot/extensions/<name>/ with --project) as a
    /// symbolic link to the folder, named after its manifest, so zot runs the working copy as
    /// it is. list shows it as linked, update skips it, and remove deletes only the link.
    Link(LinkArgs),
    /// Show where an extension came from and which copy wins
    ///
    /// Prints every installed copy of the name, the winning one first: scope, folder,
    /// manifest fields, the program exec resolves to (relative to the folder, or found on
    /// PATH), the source, kind, ref (pinned or tracking), commit and install time from the
    /// install record, and the log file with its size.
    Info(InfoArgs),
    /// Publish an extension to an OCI registry
    ///
    /// Pushes the extension (a folder, or an installed extension by name) to
    /// oci://<registry>/<repository>:<tag> as an OCI artifact: its files as one
    /// gzip-compressed tar layer (sorted, owners and times zero, modes kept, links as links;
    /// exactly what installing it places, built outputs of an installed copy left out), its
    /// extension.json as the config blob, this project's media types and the standard
    /// annotations (version, title; source and revision from a git install's record or
    /// the git working copy a folder is in; created from SOURCE_DATE_EPOCH, else that
    /// commit's time, never the clock), so the same files publish to the same digest. Blobs the repository has are not sent again. zot ext install
    /// oci://… installs it.
    ///
    /// With --platform, the extension is also prepared in staging for each platform named
    /// (Go cross-compiles; npm and Cargo build for the running platform only; a Python venv
    /// is not published) and pushed as one manifest per platform, and the tag names an
    /// image index of the source manifest and those: an install takes the one built for its
    /// machine, with no toolchain and nothing run, and falls back to the source and its
    /// prepare step elsewhere. The index's manifests for other platforms are kept when it
    /// indexes the same source, so each platform's machine can publish its own in turn.
    Publish(PublishArgs),
    /// Install an extension and record it in the project file
    ///
    /// Installs the source exactly as install does (into ./.zot/extensions/, or
    /// $ZOT_HOME/extensions/ with --global), then records it under its name in the project
    /// file ./.zot/extensions.json ($ZOT_HOME/extensions.json with --global), creating the
    /// file, and writes what was installed (commit and tree hash) to the lock file beside it,
    /// extensions.lock. With --disabled the extension is installed disabled and recorded
    /// with "enabled": false. Commit both files: zot ext sync installs the same set
    /// elsewhere.
    Add(AddArgs),
    /// Make the installed extensions match the project file
    ///
    /// Reads ./.zot/extensions.json ($ZOT_HOME/extensions.json with --global) and its lock,
    /// then installs what is missing, updates what drifted (its source, ref or subdir
    /// changed against the lock, or the installed files no longer hash to the lock's tree
    /// hash), sets each extension's enabled state, and with --prune removes the scope's
    /// extensions the file does not name. When the lock pins every extension and every
    /// installed tree matches it, nothing is fetched and it says "up to date". Extensions are
    /// fetched in parallel (--jobs), each placed atomically on its own; one that fails is
    /// named and the others still land (exit status 1). The lock is then written. With
    /// --frozen the lock is the truth: every entry must agree with the file, the locked
    /// commits are fetched, and every fetched tree must hash to the lock, all checked before
    /// anything is placed; any disagreement changes nothing and exits 1. --dry-run prints
    /// the plan and changes nothing.
    Sync(SyncArgs),
    /// Check installed extensions against their file lists and the lock file
    ///
    /// For each named extension (every installed one when none is named), compares the files
    /// in its folder with the file list its install recorded: a file the install placed that
    /// was edited, deleted, or replaced (by a link, a folder or a special file) makes it
    /// modified. Files the install did not place are the extension's own data (state,
    /// caches) and never count. Where the scope has a lock file (extensions.lock beside its
    /// extensions folder), the tree hash of each install is compared with the lock's, an
    /// extension the lock names but that is not installed is missing, and one installed but
    /// not in the lock is noted. An extension without a file list (copied in by hand, linked,
    /// or installed by an older zot ext) cannot be verified and is said so. Links are never
    /// followed and special files never opened. Exits 1 on any mismatch.
    Verify(VerifyArgs),
    /// Manage the fetch cache of git commits
    ///
    /// Git installs keep each commit they fetch in $ZOT_HOME/.ext-store/cache/, so installing
    /// the same commit again (into any project or the global scope, with --ref <commit>)
    /// needs no network. An entry is used only when its files still hash to the tree hash
    /// recorded with it. cache clean deletes every entry.
    #[command(arg_required_else_help = true)]
    Cache(CacheArgs),
    /// Run an installed extension's build or dependency install again
    ///
    /// For each named extension (every installed one with --all), runs again what install
    /// runs before placing a copy (a Go or Cargo build, npm ci, a Python venv; see
    /// Dependencies and builds in the README), for example after installing the toolchain
    /// it was missing: the installed copy's files are copied into staging, prepared there,
    /// and swapped in atomically, with the files the extension wrote at run time carried
    /// over. A failure leaves the installed copy as it was. A linked working copy is never
    /// prepared (the command to run in it is printed instead); an extension with nothing to
    /// prepare is said so and left alone.
    Prepare(PrepareArgs),
}

#[derive(Debug, Args)]
pub struct PrepareArgs {
    /// Extensions to prepare, by name
    #[arg(value_name = "NAME", add = names(Offer::Installed))]
    pub names: Vec<String>,

    /// Prepare every installed extension that needs it
    #[arg(short, long, conflicts_with = "names")]
    pub all: bool,

    #[command(flatten)]
    pub step: StepFlags,

    #[command(flatten)]
    pub scope: ScopeSelect,
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// Extensions to verify, by name (default: every installed one)
    #[arg(value_name = "NAME", add = names(Offer::Installed))]
    pub names: Vec<String>,

    #[command(flatten)]
    pub scope: ScopeSelect,
}

#[derive(Debug, Args)]
pub struct CacheArgs {
    #[command(subcommand)]
    pub command: CacheCommand,
}

#[derive(Debug, Subcommand)]
pub enum CacheCommand {
    /// Delete every entry of the fetch cache
    ///
    /// Deletes everything in $ZOT_HOME/.ext-store/cache/ (never through a link: a link in its
    /// place is an error) and says how many commits and bytes were freed. Installed
    /// extensions are not touched; the next install of a commit fetches it again.
    Clean,
}

#[derive(Debug, Args)]
pub struct AddArgs {
    /// A folder holding extension.json, or a git URL (URL#path for a subfolder)
    #[arg(value_name = "PATH|GIT-URL", value_hint = clap::ValueHint::DirPath)]
    pub source: String,

    /// Branch, tag or commit to install (git sources only)
    #[arg(long = "ref", value_name = "REF")]
    pub git_ref: Option<String>,

    /// Install the extension in this folder of the source
    #[arg(long, value_name = "PATH")]
    pub subdir: Option<String>,

    #[command(flatten)]
    pub prepare: PrepareFlags,

    /// Use the global project file and scope, $ZOT_HOME/extensions.json
    #[arg(short, long)]
    pub global: bool,

    /// Install it disabled and record "enabled": false
    #[arg(long)]
    pub disabled: bool,

    /// Replace an installed extension of the same name, as install --force does (edits and
    /// files it wrote are carried over or saved)
    #[arg(short, long)]
    pub force: bool,

    /// Fetch and check the source, then say what would be installed and recorded; change
    /// nothing (the project file included)
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Debug, Args)]
pub struct SyncArgs {
    /// Install exactly the locked commits and trees; fail if file and lock disagree
    #[arg(long)]
    pub frozen: bool,

    /// Print the plan and change nothing
    #[arg(long)]
    pub dry_run: bool,

    /// How many extensions to fetch at once (default: the number of cores)
    #[arg(short, long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub jobs: Option<u16>,

    /// Remove the scope's extensions the project file does not name
    #[arg(long)]
    pub prune: bool,

    #[command(flatten)]
    pub prepare: PrepareFlags,

    /// Use the global project file and scope, $ZOT_HOME/extensions.json
    #[arg(short, long)]
    pub global: bool,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub scope: ScopeSelect,

    /// On a terminal, show every cell whole instead of fitting the table to its width
    #[arg(long)]
    pub wide: bool,
}

#[derive(Debug, Args)]
pub struct InstallArgs {
    /// Local directory, git URL (https://, http://, ssh://, git://, file://, git@host:path,
    /// *.git), or an extension in an OCI registry (oci://registry/repository:tag or
    /// …@sha256:digest)
    #[arg(value_name = "PATH|GIT-URL", value_hint = clap::ValueHint::DirPath)]
    pub source: String,

    /// Branch, tag or commit to check out (git sources only)
    #[arg(long = "ref", value_name = "REF")]
    pub git_ref: Option<String>,

    /// Replace an installed extension of the same name
    #[arg(short, long)]
    pub force: bool,

    /// Fetch and check the source, then say what would be placed where, replacing what and
    /// carrying over what; change nothing
    #[arg(long)]
    pub dry_run: bool,

    /// Install only this folder of the source (also written SOURCE#path, for a folder or a git
    /// URL)
    #[arg(long, value_name = "PATH")]
    pub subdir: Option<String>,

    #[command(flatten)]
    pub prepare: PrepareFlags,

    #[command(flatten)]
    pub carry: CarryFlags,

    #[command(flatten)]
    pub scope: ScopeSelect,
}

/// How the staged copy is prepared (built, its dependencies installed) before it is placed.
#[derive(Debug, Args, Clone, Copy)]
pub struct PrepareFlags {
    /// Place the copy as fetched: no build, no dependency install
    #[arg(long)]
    pub no_prepare: bool,

    #[command(flatten)]
    pub step: StepFlags,
}

/// How a build or dependency install runs (`zot ext prepare`, and every command that
/// prepares a staged copy).
#[derive(Debug, Args, Clone, Copy)]
pub struct StepFlags {
    /// Let the packages' lifecycle scripts, cgo and Python build backends run (sealed; off by default)
    #[arg(long, env = "ZOT_EXT_ALLOW_SCRIPTS", value_parser = FalseyValueParser::new())]
    pub allow_scripts: bool,

    /// Run build steps without the seal: with the network, your home and environment
    #[arg(long, conflicts_with = "require_sandbox")]
    pub no_sandbox: bool,

    /// Fail rather than run a build step without the seal (for CI)
    #[arg(long, env = "ZOT_EXT_REQUIRE_SANDBOX", value_parser = FalseyValueParser::new())]
    pub require_sandbox: bool,

    /// Build and install dependencies from the tools' local caches only
    #[arg(long)]
    pub offline: bool,

    /// Seconds a build or dependency install may run before it is ended (default 600)
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..))]
    pub prepare_timeout: Option<u64>,
}

/// What `update` and `install --force` do with the installed copy's edits and `enabled`.
#[derive(Debug, Args, Clone, Copy)]
pub struct CarryFlags {
    /// Keep files of the installed copy that were edited since install over the new version's
    #[arg(long)]
    pub keep_local: bool,

    /// Enable the new version (default: keep the installed copy's enabled state)
    #[arg(long, conflicts_with = "disable")]
    pub enable: bool,

    /// Disable the new version (default: keep the installed copy's enabled state)
    #[arg(long)]
    pub disable: bool,
}

#[derive(Debug, Args)]
pub struct UpdateArgs {
    /// Extensions to update (by name)
    #[arg(value_name = "NAME", add = names(Offer::Updatable))]
    pub names: Vec<String>,

    /// Update every installed extension
    #[arg(short, long, conflicts_with = "names")]
    pub all: bool,

    /// Show what would change without changing anything
    #[arg(long)]
    pub dry_run: bool,

    /// Re-pin one git extension to this branch, tag or commit
    #[arg(long = "ref", value_name = "REF")]
    pub git_ref: Option<String>,

    #[command(flatten)]
    pub prepare: PrepareFlags,

    #[command(flatten)]
    pub carry: CarryFlags,

    #[command(flatten)]
    pub scope: ScopeSelect,
}

#[derive(Debug, Args)]
pub struct LinkArgs {
    /// The extension's working copy (a folder with extension.json)
    #[arg(value_name = "PATH", value_hint = clap::ValueHint::DirPath)]
    pub path: PathBuf,

    /// Replace an installed extension of the same name
    #[arg(short, long)]
    pub force: bool,

    #[command(flatten)]
    pub scope: ScopeSelect,
}

#[derive(Debug, Args)]
pub struct PublishArgs {
    /// A folder holding extension.json, or the name of an installed extension
    #[arg(value_name = "FOLDER|NAME", value_hint = clap::ValueHint::DirPath)]
    pub source: String,

    /// Where to: oci://<registry>/<repository>:<tag>
    #[arg(value_name = "OCI-REF")]
    pub reference: String,

    /// Also publish it prepared (built, dependencies installed) for this platform, under an image index with the source (repeat, or separate with commas: linux/amd64,linux/arm64)
    #[arg(long = "platform", value_name = "OS/ARCH", value_delimiter = ',')]
    pub platforms: Vec<String>,

    #[command(flatten)]
    pub step: StepFlags,

    #[command(flatten)]
    pub scope: ScopeSelect,
}

#[derive(Debug, Args)]
pub struct InfoArgs {
    /// Name of the extension
    #[arg(add = names(Offer::Installed))]
    pub name: String,

    #[command(flatten)]
    pub scope: ScopeSelect,
}

/// The scope a command acts on, writes to, lists or checks: one grammar for every command
/// that has a scope (`-p`, `-g`, or `--scope project|global`, at most one of them). What
/// leaving it out means is the command's own (both scopes, the copy that wins, or global).
#[derive(Debug, Clone, Copy, Default, Args)]
#[group(id = SCOPE_GROUP, multiple = false)]
pub struct ScopeSelect {
    /// The project scope, ./.zot/extensions/ (same as --scope project)
    #[arg(short, long)]
    pub project: bool,

    /// The global scope, $ZOT_HOME/extensions/ (same as --scope global)
    #[arg(short, long)]
    pub global: bool,

    /// The scope by name
    #[arg(long = "scope", value_enum, value_name = "SCOPE")]
    pub named: Option<Scope>,
}

/// The clap group of [`ScopeSelect`]'s flags (for flags that conflict with all of them).
pub const SCOPE_GROUP: &str = "scope_select";

impl ScopeSelect {
    /// The scope picked with `-p`, `-g` or `--scope`, if any.
    pub fn scope(&self) -> Option<Scope> {
        if self.project {
            Some(Scope::Project)
        } else if self.global {
            Some(Scope::Global)
        } else {
            self.named
        }
    }

    /// The scopes to look in: the one picked, else both in precedence order.
    pub fn scopes(&self) -> Vec<Scope> {
        self.scope()
            .map_or_else(|| Scope::ALL.to_vec(), |s| vec![s])
    }
}

#[derive(Debug, Args)]
pub struct RemoveArgs {
    /// Names of the extensions (each removed on its own; one question for all)
    #[arg(value_name = "NAME", required = true, add = names(Offer::Installed))]
    pub names: Vec<String>,

    /// Do not ask for confirmation
    #[arg(short, long)]
    pub yes: bool,

    /// Save the files the install did not place (the extension's data) to .ext-store/backup
    #[arg(long)]
    pub keep_data: bool,

    /// Keep the extension's entry in the project file (extensions.json)
    #[arg(long)]
    pub keep_in_file: bool,

    #[command(flatten)]
    pub scope: ScopeSelect,
}

#[derive(Debug, Args)]
pub struct EnableArgs {
    /// Name of the extension
    #[arg(add = names(Offer::Disabled))]
    pub name: String,

    #[command(flatten)]
    pub scope: ScopeSelect,
}

#[derive(Debug, Args)]
pub struct DisableArgs {
    /// Name of the extension
    #[arg(add = names(Offer::Enabled))]
    pub name: String,

    #[command(flatten)]
    pub scope: ScopeSelect,
}

#[derive(Debug, Args)]
pub struct LogsArgs {
    /// Name of the extension (installed or not, if its log exists)
    #[arg(add = names(Offer::InstalledOrLogged))]
    pub name: String,

    /// Keep printing new lines as they are written (through truncation and rotation)
    #[arg(short, long)]
    pub follow: bool,

    /// Print only the last N lines (0 or more)
    #[arg(short = 'n', long = "lines", value_name = "N", allow_negative_numbers = true, value_parser = line_count)]
    pub lines: Option<u64>,
}

/// Parses `logs -n`: a count of lines, 0 or more (a negative one is told what works, not
/// taken for a flag).
fn line_count(text: &str) -> Result<u64, String> {
    if let Some(count) = text.strip_prefix('-')
        && count.parse::<u64>().is_ok()
    {
        let last = if count.parse::<u64>() == Ok(1) {
            "line".to_string()
        } else {
            format!("{count} lines")
        };
        return Err(format!(
            "a count of lines is 0 or more: use -n {count} for the last {last}, or leave -n out for the whole log"
        ));
    }
    text.parse()
        .map_err(|_| format!("\"{text}\" is not a count of lines: give 0 or more, such as -n 20"))
}

/// Parses a positive number of seconds (`5`, `0.5`).
fn seconds(text: &str) -> Result<Duration, String> {
    let secs: f64 = text
        .parse()
        .map_err(|_| format!("\"{text}\" is not a number of seconds"))?;
    if !(secs > 0.0 && secs <= 86_400.0) {
        return Err("must be more than 0 and at most 86400 seconds".into());
    }
    Ok(Duration::from_secs_f64(secs))
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Extensions to check, by name or as a path to a folder (default: every installed one)
    #[arg(value_name = "NAME", add = names(Offer::InstalledOrFolder))]
    pub names: Vec<String>,

    /// Seconds to wait at most for hello, and for ready, after starting an extension (only a
    /// bound: the report shows how long each took, and a hello after 1 s is a warning)
    #[arg(long, value_name = "SECS", default_value = "30", allow_negative_numbers = true, value_parser = seconds)]
    pub timeout: Duration,

    /// Exit 1 on warnings too, not only on errors (notes never fail)
    #[arg(long)]
    pub strict: bool,

    /// Check at most N extensions at once (default: all, up to what the open-file limit allows)
    #[arg(short, long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub jobs: Option<u32>,

    /// Judge by what this zot version does (default: the version the zot agent reports,
    /// else the newest known)
    #[arg(long, value_name = "VERSION")]
    pub zot_version: Option<String>,

    #[command(flatten)]
    pub scope: ScopeSelect,
}

#[derive(Debug, Args)]
pub struct CallArgs {
    /// The extension, by name or as a path to its folder
    #[arg(value_name = "NAME", add = names(Offer::InstalledOrFolder))]
    pub name: String,

    /// /<command> and its arguments, passed on verbatim (so flags go before /<command>);
    /// with --tool, the tool's arguments as one JSON object
    #[arg(
        value_name = "INPUT",
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    pub input: Vec<String>,

    /// Call this tool instead of a slash command
    #[arg(long, value_name = "TOOL")]
    pub tool: Option<String>,

    /// Seconds to wait for the extension to start, and again for its answer [default: 30
    /// for a command, 60 for a tool: zot's own limits]
    #[arg(long, value_name = "SECS", allow_negative_numbers = true, value_parser = seconds)]
    pub timeout: Option<Duration>,
}

/// The language of a new extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Lang {
    #[value(alias = "py")]
    Python,
    /// JavaScript on Node.js
    #[value(alias = "javascript", alias = "js")]
    Node,
    Go,
    #[value(alias = "sh")]
    Shell,
    #[value(alias = "rs")]
    Rust,
}

/// Where `new` writes the extension: a scope, or a folder of its own.
#[derive(Debug, Clone, Args)]
pub struct NewPlace {
    #[command(flatten)]
    pub scope: ScopeSelect,

    /// Create it in this folder (which must not exist, or be empty) instead of a scope
    #[arg(long, value_name = "PATH", value_hint = clap::ValueHint::DirPath, conflicts_with = SCOPE_GROUP)]
    pub dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct NewArgs {
    /// Name of the new extension: letters, digits, '.', '_' and '-'
    // Not "name": installed names are no completion for a name that must be new.
    #[arg(id = "new_name", value_name = "NAME")]
    pub name: String,

    /// Language of the extension's program
    #[arg(long, value_enum, default_value_t = Lang::Python, value_name = "LANG")]
    pub lang: Lang,

    #[command(flatten)]
    pub place: NewPlace,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn definitions_are_consistent() {
        Cli::command().debug_assert();
        command().debug_assert();
    }

    #[test]
    fn the_short_overview_names_every_command() {
        let mut cmd = command();
        cmd.build();
        let ext = cmd.find_subcommand("ext").unwrap();
        let listed: Vec<&str> = SHORT_OVERVIEW
            .lines()
            .skip_while(|l| *l != "Commands:")
            .skip(1)
            .take_while(|l| !l.is_empty())
            .flat_map(|l| l.get(..28).unwrap_or(l).split(", "))
            .map(str::trim)
            .collect();
        for sub in ext.get_subcommands().filter(|s| !s.is_hide_set()) {
            let name = sub.get_name();
            let name = if name == "cache" { "cache clean" } else { name };
            assert!(
                name == "help" || listed.contains(&name),
                "{name} is missing from SHORT_OVERVIEW"
            );
        }
    }

    #[test]
    fn every_subcommand_help_ends_with_examples() {
        let mut cmd = command();
        cmd.build();
        let ext = cmd.find_subcommand("ext").unwrap();
        let subs = ext.get_subcommands().chain(cmd.get_subcommands());
        for sub in subs.filter(|s| s.get_name() != "help") {
            let after = sub
                .get_after_help()
                .map(std::string::ToString::to_string)
                .unwrap_or_default();
            assert!(
                after.starts_with("Examples:\n  "),
                "{}: {after:?}",
                sub.get_name()
            );
        }
    }

    #[test]
    fn parsing_with_examples_gives_the_same_result() {
        let args = ["zot", "ext", "install", "./x", "--ref", "v1", "-p"].map(OsString::from);
        let cli = try_parse_from(args.clone()).unwrap();
        assert_eq!(
            format!("{cli:?}"),
            format!("{:?}", Cli::try_parse_from(args).unwrap())
        );
        let error = try_parse_from(["zot", "ext", "list", "--nope"].map(OsString::from));
        assert_eq!(error.unwrap_err().exit_code(), 2);
    }

    /// What the full parse answers for `args`, the version shortcut bypassed.
    fn full_parse(args: &[&str]) -> Result<Cli, clap::Error> {
        let args: Vec<OsString> = args.iter().map(OsString::from).collect();
        parse_with(decorated(Examples::Left), &args)
    }

    #[test]
    fn version_alone_answers_as_the_full_parse() {
        for line in [
            &["zot", "--version"][..],
            &["zot", "-V"],
            &["/usr/local/bin/zot", "-V"],
            &["zot", "ext", "--version"],
            &["zot", "ext", "-V"],
        ] {
            let args: Vec<OsString> = line.iter().map(OsString::from).collect();
            let quick = version_alone(&args).expect("taken by the shortcut");
            let full = full_parse(line).unwrap_err();
            assert_eq!(quick.kind(), full.kind(), "{line:?}");
            assert_eq!(quick.exit_code(), full.exit_code(), "{line:?}");
            assert_eq!(quick.use_stderr(), full.use_stderr(), "{line:?}");
            assert_eq!(quick.to_string(), full.to_string(), "{line:?}");
            assert_eq!(
                quick.render().ansi().to_string(),
                full.render().ansi().to_string()
            );
        }
    }

    #[test]
    fn version_with_anything_else_is_left_to_the_full_parse() {
        for line in [
            &["zot"][..],
            &["zot", "--version", "--bogus"],
            &["zot", "--bogus", "--version"],
            &["zot", "-V", "ext"],
            &["zot", "ext", "list", "-V"],
            &["zot", "-q", "--version"],
            &["zot", "--versio"],
            &["zot", "-v"],
            &["zot", "ext", "--version", "x"],
            &["zot", "completions", "-V"],
        ] {
            let args: Vec<OsString> = line.iter().map(OsString::from).collect();
            assert!(version_alone(&args).is_none(), "{line:?}");
        }
        let error = try_parse_from(["zot", "--version", "--bogus"].map(OsString::from));
        let full = full_parse(&["zot", "--version", "--bogus"]);
        assert_eq!(
            error.unwrap_err().to_string(),
            full.unwrap_err().to_string()
        );
    }

    #[test]
    fn examples_are_built_only_for_help() {
        let lean = decorated(Examples::Left);
        let ext = lean.find_subcommand("ext").unwrap();
        let install = ext.find_subcommand("install").unwrap();
        assert!(install.get_after_help().is_none());
        assert_eq!(install.get_display_name(), Some("zot-ext"));
        for args in [
            ["zot", "ext", "install", "--help"],
            ["zot", "ext", "help", "install"],
        ] {
            let help = try_parse_from(args.map(OsString::from))
                .unwrap_err()
                .to_string();
            assert!(help.contains("\nExamples:\n  zot ext install "), "{help}");
        }
    }

    #[test]
    fn ext_description_names_every_subcommand() {
        let cli = Cli::command();
        let ext = cli.find_subcommand("ext").unwrap();
        let about = ext.get_long_about().unwrap().to_string();
        let words: Vec<&str> = about.split(|c: char| !c.is_alphanumeric()).collect();
        for sub in ext.get_subcommands() {
            assert!(
                words.contains(&sub.get_name()),
                "{} is not described",
                sub.get_name()
            );
        }
        let root = cli.get_long_about().unwrap().to_string();
        let words: Vec<&str> = root.split(|c: char| !c.is_alphanumeric()).collect();
        for sub in ext.get_subcommands() {
            assert!(
                words.contains(&sub.get_name()),
                "zot: {} is not described",
                sub.get_name()
            );
        }
    }

    #[test]
    fn every_scope_taking_subcommand_has_the_one_scope_grammar() {
        let mut cmd = command();
        cmd.build();
        let ext = cmd.find_subcommand("ext").unwrap();
        let scoped = [
            "list", "install", "remove", "enable", "disable", "update", "new", "link", "info",
            "doctor", "verify", "prepare",
        ];
        for name in scoped {
            let sub = ext.find_subcommand(name).unwrap();
            for (short, long) in [
                (Some('p'), "project"),
                (Some('g'), "global"),
                (None, "scope"),
            ] {
                let arg = sub.get_arguments().find(|a| a.get_long() == Some(long));
                let arg = arg.unwrap_or_else(|| panic!("{name} lacks --{long}"));
                assert_eq!(arg.get_short(), short, "{name} --{long}");
            }
        }
        for name in ["logs", "call", "cache"] {
            let sub = ext.find_subcommand(name).unwrap();
            assert!(
                !sub.get_arguments().any(|a| a.get_long() == Some("scope")),
                "{name}"
            );
        }
    }

    #[test]
    fn only_logs_has_dash_n() {
        let mut cmd = command();
        cmd.build();
        let ext = cmd.find_subcommand("ext").unwrap();
        for sub in ext.get_subcommands() {
            let has_n = sub.get_arguments().any(|a| a.get_short() == Some('n'));
            assert_eq!(has_n, sub.get_name() == "logs", "{}", sub.get_name());
        }
    }

    #[test]
    fn top_level_help_names_every_ext_subcommand() {
        let cli = Cli::command();
        let ext = cli.find_subcommand("ext").unwrap();
        for sub in ext.get_subcommands() {
            let line = format!("zot ext {} ", sub.get_name());
            assert!(EXT_OVERVIEW.contains(&line), "EXT_OVERVIEW lacks {line:?}");
        }
    }
}
