//! The `zot` binary: parse, dispatch, map errors to exit codes, and print an error as one
//! line with no credential in it. Rust's runtime does the rest of the process's start and
//! end: `SIGPIPE` ignored (a closed pipe is an error [`error::is_broken_pipe`] turns into
//! success), closed standard descriptors opened on `/dev/null` (so no file zot opens becomes
//! its stdout), a panic exiting with status 101, stdout flushed at exit.

use std::io::Write;
use std::process::ExitCode;

use zot_ext::{cmd, error, output};

fn main() -> ExitCode {
    ExitCode::from(zot())
}

/// The process's body; its exit status.
fn zot() -> u8 {
    // Started by zot itself as a stage of a prepare step's seal (src/seal/).
    if let Some(code) = zot_ext::seal_stage() {
        return code;
    }
    // Answers `COMPLETE=<shell> zot -- <words>` (shell completion) and exits; else no-op.
    zot_ext::cli::complete::complete_if_requested();
    // Invoked as `zot` with a command line that is not ours: the zot agent's (src/agent.rs).
    if let Some(code) = zot_ext::agent::pass_through_if_agents() {
        return code;
    }
    let args = zot_ext::effective_args(std::env::args_os());
    if let Some(overview) = zot_ext::cli::overview_alone(&args) {
        // On a terminal, fitted to its width; a pipe gets the lines as written.
        let overview = if std::io::IsTerminal::is_terminal(&std::io::stdout()) {
            zot_ext::cli::reflow(&overview, zot_ext::output::table::terminal_width())
        } else {
            overview
        };
        return match std::io::stdout().write_all(overview.as_bytes()) {
            Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => 1,
            _ => 0,
        };
    }
    let json = args.iter().any(|a| a == "--json");
    let cli = match zot_ext::cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) if json && e.use_stderr() => {
            // A usage error of a command asked for JSON is JSON too, as its other errors.
            let (message, tips) = zot_ext::cli::usage_error_parts(&e);
            output::json_error(&message, &tips);
            return u8::try_from(e.exit_code()).unwrap_or(2);
        }
        Err(e) => {
            let _ = e.print();
            // clap's exit codes are 0 (help, version) and 2 (usage).
            return u8::try_from(e.exit_code()).unwrap_or(2);
        }
    };
    match cmd::run(&cli) {
        Ok(()) => 0,
        Err(e) if error::is_broken_pipe(&e) => 0,
        Err(e) if !cli.global.json && error::declined(&e).is_some() => {
            let note = error::declined(&e).unwrap_or_default();
            cli.global.output().note(&format!("note: {note}"));
            1
        }
        Err(e) if cli.global.json => {
            cli.global
                .output()
                .json_error(&format!("{e:#}"), error::suggestions(&e));
            error::exit_code(&e)
        }
        Err(e) => {
            let label = cli.global.output().paint_err(output::BAD, "error:");
            // Redacted and escaped as a whole: an error built from a raw URL or a hostile
            // file name still prints as one line without a secret.
            let message = output::clean(&format!("{e:#}"));
            let _ = writeln!(std::io::stderr(), "{label} {message}");
            error::exit_code(&e)
        }
    }
}
