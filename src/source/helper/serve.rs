//! `zot-ext-git`'s side: read the one request, run it with libgit2 ([`crate::source::git`]),
//! and write progress and the answer (see [`super::wire`]). An error is an answer too; the
//! exit status is 0 unless the helper could not be talked to.

use std::ffi::OsString;
use std::io::{IsTerminal as _, Read as _, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};

use super::wire::HELPER;
use super::wire::{FETCH, MAX_LINE, Message, PROBE, Request};
use crate::source::GitUrl;
use crate::source::git;

/// Progress is passed on at most this often (libgit2 reports every object), and always
/// when the last object is in.
const PROGRESS_EVERY: Duration = Duration::from_millis(50);

/// The helper's `main`.
pub fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let Some(request) = read_request() else {
        return not_by_hand();
    };
    let mut out = std::io::stdout().lock();
    let answered = match (
        args.first().and_then(|a| a.to_str()),
        &args[1.min(args.len())..],
    ) {
        (Some(FETCH), [git_dir, tree, only @ ..]) if only.len() <= 1 => {
            let only = only.first().map(PathBuf::from);
            fetch(
                &mut out,
                &request,
                Path::new(git_dir),
                Path::new(tree),
                only.as_deref(),
            )
        }
        (Some(PROBE), [scratch]) => {
            let probed = git::probe(&request.url, request.git_ref.as_deref(), Path::new(scratch));
            send(
                &mut out,
                &probed.map_or_else(|e| failure(&e), Message::Probed),
            )
        }
        _ => return not_by_hand(),
    };
    match answered.and_then(|()| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::FAILURE,
    }
}

/// The request on stdin; `None` when stdin is a terminal or holds no request.
fn read_request() -> Option<Request> {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        return None;
    }
    let mut bytes = Vec::new();
    stdin.lock().take(MAX_LINE).read_to_end(&mut bytes).ok()?;
    serde_json::from_slice(&bytes).ok()
}

fn not_by_hand() -> ExitCode {
    eprintln!(
        "{HELPER}: zot runs this for its git work (`zot ext install <git URL>`, `update`, `sync`); it is not a command of its own"
    );
    ExitCode::from(2)
}

fn fetch(
    out: &mut impl Write,
    request: &Request,
    git_dir: &Path,
    tree: &Path,
    only: Option<&Path>,
) -> std::io::Result<()> {
    let mut last: Option<Instant> = None;
    let mut failed_writing = None;
    let fetched = check_repository(&request.url).and_then(|()| {
        git::fetch(
            &request.url,
            request.git_ref.as_deref(),
            git_dir,
            tree,
            only,
            &mut |received, total, bytes| {
                let due = last.is_none_or(|t| t.elapsed() >= PROGRESS_EVERY);
                if (due || received == total) && failed_writing.is_none() {
                    last = Some(Instant::now());
                    let progress = Message::Progress(received, total, bytes);
                    failed_writing = send(out, &progress).and_then(|()| out.flush()).err();
                }
            },
        )
    });
    if let Some(e) = failed_writing {
        return Err(e);
    }
    let checkout = match fetched {
        Ok(checkout) => checkout,
        Err(e) => return send(out, &failure(&e)),
    };
    let file_list = checkout.written.map(|files| files.to_bytes());
    let answer = Message::Fetched {
        commit: checkout.commit,
        ref_kind: checkout.ref_kind,
        branch: checkout.branch,
        file_list: file_list.as_ref().map(Vec::len),
    };
    send(out, &answer)?;
    if let Some(file_list) = file_list {
        out.write_all(&file_list)?;
    }
    Ok(())
}

/// The answer for an error: its message with its causes, and whether it is a usage error.
fn failure(e: &anyhow::Error) -> Message {
    Message::Failed {
        message: format!("{e:#}"),
        usage: crate::error::exit_code(e) == 2,
    }
}

/// Writes `message` as one line.
fn send(out: &mut impl Write, message: &Message) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, message)?;
    out.write_all(b"\n")
}

/// A local repository path must be a repository; libgit2 would only say "unsupported URL
/// protocol" or "could not find repository". (That it exists is checked before zot starts
/// the helper.)
fn check_repository(url: &GitUrl) -> Result<()> {
    if !url.local || url.url.to_ascii_lowercase().starts_with("file://") {
        return Ok(());
    }
    let path = Path::new(&url.url);
    if git2::Repository::open_bare(path).is_err() && git2::Repository::open(path).is_err() {
        bail!(
            "{} is not a git repository, nor a folder with extension.json to copy",
            url.display
        );
    }
    Ok(())
}
