//! Command-line definitions: every flag, argument and help text of `zot` and `zot ext`.

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Install and manage extensions for the zot coding agent.
#[derive(Debug, Parser)]
#[command(
    name = "zot",
    version,
    arg_required_else_help = true,
    propagate_version = true,
    max_term_width = 100,
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
  zot ext install <path|git-url>  Copy a directory or clone a git repository
  zot ext remove <name>           Delete an installed extension
  zot ext enable <name>           Re-enable a disabled extension
  zot ext disable <name>          Disable an extension without removing it
  zot ext logs <name> [-f]        Print or follow an extension's log";

/// Flags accepted by every subcommand.
#[derive(Debug, Clone, Args)]
pub struct GlobalArgs {
    /// Print nothing but errors (and requested data)
    #[arg(short, long, global = true)]
    pub quiet: bool,

    /// When to colour output; NO_COLOR in the environment means never
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto, value_name = "WHEN")]
    pub color: ColorChoice,

    /// Print machine-readable JSON on stdout instead of text
    #[arg(long, global = true)]
    pub json: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Install, list and manage extensions
    Ext(ExtArgs),
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
    #[command(visible_alias = "ls")]
    List(ListArgs),
    /// Copy a directory or clone a git repository into the extensions folder
    Install(InstallArgs),
    /// Delete an installed extension
    #[command(visible_alias = "rm")]
    Remove(RemoveArgs),
    /// Re-enable a disabled extension
    Enable(ToggleArgs),
    /// Disable an extension without removing it
    Disable(ToggleArgs),
    /// Print or follow an extension's log (its stderr)
    Logs(LogsArgs),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ScopeArg {
    Project,
    Global,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// Only list extensions of this scope
    #[arg(long, value_enum, value_name = "SCOPE")]
    pub scope: Option<ScopeArg>,
}

#[derive(Debug, Args)]
pub struct InstallArgs {
    /// Local directory, or git URL (https://, http://, ssh://, git://, file://, git@host:path, *.git)
    #[arg(value_name = "PATH|GIT-URL")]
    pub source: String,

    /// Branch, tag or commit to check out (git sources only)
    #[arg(long = "ref", value_name = "REF")]
    pub git_ref: Option<String>,

    /// Replace an installed extension of the same name
    #[arg(short, long)]
    pub force: bool,

    /// Install into ./.zot/extensions/ instead of $ZOT_HOME/extensions/
    #[arg(short, long)]
    pub project: bool,
}

/// Which copy of an extension a command acts on.
#[derive(Debug, Clone, Copy, Args)]
#[group(multiple = false)]
pub struct ScopeSelect {
    /// Act on the project-local copy (./.zot/extensions/)
    #[arg(short, long)]
    pub project: bool,

    /// Act on the global copy ($ZOT_HOME/extensions/)
    #[arg(short, long)]
    pub global: bool,
}

#[derive(Debug, Args)]
pub struct RemoveArgs {
    /// Name of the extension
    pub name: String,

    /// Do not ask for confirmation
    #[arg(short, long)]
    pub yes: bool,

    #[command(flatten)]
    pub scope: ScopeSelect,
}

#[derive(Debug, Args)]
pub struct ToggleArgs {
    /// Name of the extension
    pub name: String,

    #[command(flatten)]
    pub scope: ScopeSelect,
}

#[derive(Debug, Args)]
pub struct LogsArgs {
    /// Name of the extension
    pub name: String,

    /// Keep printing new lines as they are written (through truncation and rotation)
    #[arg(short, long)]
    pub follow: bool,

    /// Print only the last N lines
    #[arg(short = 'n', long = "lines", value_name = "N")]
    pub lines: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn definitions_are_consistent() {
        Cli::command().debug_assert();
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
