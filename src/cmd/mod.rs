//! One module per `zot` and `zot ext` subcommand, each implementing [`Run`] on its clap arguments.

mod add;
mod cache;
mod call;
mod completions;
mod doctor;
mod info;
mod install;
mod link;
mod list;
mod logs;
mod named;
mod new;
mod prepare;
mod publish;
mod remove;
mod sync;
mod toggle;
mod update;
mod verify;

use anyhow::Result;

use crate::catalog::paths::Layout;
use crate::cli::{CarryFlags, Cli, Command, ExtCommand, PrepareFlags, StepFlags};
use crate::output::Output;

/// What every command gets: where things live and how to print.
pub struct Context {
    pub layout: Layout,
    pub out: Output,
}

impl Context {
    /// For a command that works on a project file (`add`, `sync`), run in a subfolder of a
    /// project and not for the global scope: the context of the project above (as npm and
    /// cargo find their root), said in a note that names what `verb` does there.
    fn in_project_above(&self, global: bool, verb: &str) -> Option<Context> {
        let above = (!global)
            .then(|| crate::project::project_above(&self.layout))
            .flatten()?;
        self.out.note(&crate::project::working_above(verb, &above));
        Some(Context {
            layout: self.layout.with_project_root(&above),
            out: self.out.clone(),
        })
    }
}

/// A runnable subcommand.
pub trait Run {
    fn run(&self, ctx: &Context) -> Result<()>;
}

/// Runs the parsed command line.
pub fn run(cli: &Cli) -> Result<()> {
    let ctx = Context {
        layout: Layout::from_process()?,
        out: cli.global.output(),
    };
    match &cli.command {
        Command::Ext(ext) => match &ext.command {
            ExtCommand::List(args) => args.run(&ctx),
            ExtCommand::Install(args) => args.run(&ctx),
            ExtCommand::Remove(args) => args.run(&ctx),
            ExtCommand::Enable(args) => args.run(&ctx),
            ExtCommand::Disable(args) => args.run(&ctx),
            ExtCommand::Logs(args) => args.run(&ctx),
            ExtCommand::Doctor(args) => args.run(&ctx),
            ExtCommand::Call(args) => args.run(&ctx),
            ExtCommand::New(args) => args.run(&ctx),
            ExtCommand::Update(args) => args.run(&ctx),
            ExtCommand::Link(args) => args.run(&ctx),
            ExtCommand::Info(args) => args.run(&ctx),
            ExtCommand::Publish(args) => args.run(&ctx),
            ExtCommand::Add(args) => args.run(&ctx),
            ExtCommand::Sync(args) => args.run(&ctx),
            ExtCommand::Verify(args) => args.run(&ctx),
            ExtCommand::Cache(args) => args.run(&ctx),
            ExtCommand::Prepare(args) => args.run(&ctx),
        },
        Command::Completions(args) => args.run(&ctx),
    }
}

impl PrepareFlags {
    /// How to prepare staged copies, logs and build caches in `$ZOT_HOME` (`global`'s base).
    pub(crate) fn options(
        &self,
        global: &crate::catalog::paths::ScopeDirs,
    ) -> crate::prepare::Options {
        let mut options = self.step.options(global);
        options.enabled = !self.no_prepare;
        options
    }
}

impl StepFlags {
    /// How a step runs, logs and build caches in `$ZOT_HOME` (`global`'s base).
    pub(crate) fn options(
        &self,
        global: &crate::catalog::paths::ScopeDirs,
    ) -> crate::prepare::Options {
        let mut options = crate::prepare::Options::new(global);
        options.allow_scripts = self.allow_scripts;
        options.offline = self.offline;
        options.no_sandbox = self.no_sandbox;
        options.require_sandbox = self.require_sandbox;
        if let Some(secs) = self.prepare_timeout {
            options.timeout = std::time::Duration::from_secs(secs);
        }
        options
    }
}

impl CarryFlags {
    /// What to do with the files an update or `--force` carries over.
    pub fn options(&self) -> crate::store::carry::Options {
        crate::store::carry::Options {
            keep_local: self.keep_local,
            enabled: match (self.enable, self.disable) {
                (true, _) => Some(true),
                (_, true) => Some(false),
                _ => None,
            },
            keep_unchanged_edits: false,
        }
    }
}
