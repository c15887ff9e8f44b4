//! `zot-ext-git`'s side: read the one request, run it with libgit2 ([`crate::source::git`]),
//! and write progress and the answer (see [`super::wire`]). An error is an answer too; the
//! exit status is 0 unless the helper could not be talked to. A heartbeat thread reports
//! the bytes received meanwhile, for zot's low-speed watchdog.

use std::ffi::OsString;
use std::io::{IsTerminal as _, Read as _, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Result, bail};

use super::wire::HELPER;
use super::wire::{
    FETCH, HEAD, MAX_LINE, Message, OCI_PROBE, OciRequest, PROBE, PULL, PUSH, Request,
};
use crate::source::git;
use crate::source::git::progress::Step;
use crate::source::git::url::GitUrl;
use crate::source::meter::{self, LowSpeed};
use crate::source::oci;

/// Progress is passed on at most this often (libgit2 reports every object), and always
/// when a new kind of step begins or the last object is in and its deltas resolved.
const PROGRESS_EVERY: Duration = Duration::from_millis(50);

/// How often the heartbeat is sent: well within a second, so zot hears from a working
/// helper at least once a second.
const HEARTBEAT_EVERY: Duration = Duration::from_millis(400);

/// Set, under the stdout lock, when the answer is written: no heartbeat follows it.
static ANSWERED: AtomicBool = AtomicBool::new(false);

/// The helper's `main`.
pub fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let Some(bytes) = read_request() else {
        return not_by_hand();
    };
    let verb = args.first().and_then(|a| a.to_str());
    if let (Some(HEAD), [_, folder]) = (verb, args.as_slice()) {
        return answer(Ok(Message::Head(git::head(Path::new(folder)))));
    }
    if matches!(verb, Some(PULL | OCI_PROBE | PUSH)) {
        let Ok(request) = serde_json::from_slice::<OciRequest>(&bytes) else {
            return not_by_hand();
        };
        return answer(Ok(oci_answer(&request, &args[1..])));
    }
    let Ok(request) = serde_json::from_slice::<Request>(&bytes) else {
        return not_by_hand();
    };
    let answer = match (verb, &args[1.min(args.len())..]) {
        (Some(FETCH), [git_dir, tree, only @ ..]) if only.len() <= 1 => {
            start_heartbeat();
            let only = only.first().map(PathBuf::from);
            fetch(
                &request,
                Path::new(git_dir),
                Path::new(tree),
                only.as_deref(),
            )
        }
        (Some(PROBE), [scratch]) => {
            start_heartbeat();
            let probed = git::probe(&request.url, request.git_ref.as_deref(), Path::new(scratch));
            Ok(probed.map_or_else(|e| failure(&e), Message::Probed))
        }
        _ => return not_by_hand(),
    };
    self::answer(answer)
}

/// An OCI pull (`<tree>`), push (what the request holds) or probe (no
/// arguments), answered.
fn oci_answer(request: &OciRequest, args: &[OsString]) -> Message {
    let answered = match (args, &request.packed) {
        ([tree, keep @ ..], None) if keep.len() <= 1 => {
            start_heartbeat();
            let keep = keep.first().map(Path::new);
            oci::pull(&request.reference, Path::new(tree), keep)
                .map(|p| Message::Pulled(Box::new(p)))
        }
        ([], Some(packed)) => {
            start_heartbeat();
            oci::push(&request.reference, packed, &request.platforms).map(Message::Pushed)
        }
        ([], None) => oci::probe(&request.reference).map(|digest| {
            Message::Pulled(Box::new(oci::Pulled {
                digest,
                platform: None,
                prepared: None,
                layer: None,
            }))
        }),
        _ => {
            return failure(&anyhow::anyhow!(
                "{HELPER}: a pull takes the folder to unpack into"
            ));
        }
    };
    answered.unwrap_or_else(|e| failure(&e))
}

/// Writes the answer; the exit status.
fn answer(answer: std::io::Result<Message>) -> ExitCode {
    let answered = answer.and_then(|message| {
        let mut out = std::io::stdout().lock();
        ANSWERED.store(true, Ordering::SeqCst);
        send(&mut out, &message)?;
        out.flush()
    });
    match answered {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::FAILURE,
    }
}

/// Starts the thread that tells zot, every [`HEARTBEAT_EVERY`], how many bytes were
/// received so far and the low-speed limit ([`meter`]): zot stops a helper whose transfer
/// is too slow, or that stops telling. It ends at the answer, or when zot stops reading.
fn start_heartbeat() {
    let low_speed = LowSpeed::configured();
    let beat = move || {
        loop {
            let (received, metered) = meter::reading();
            let heartbeat = Message::Heartbeat {
                received,
                metered,
                low_speed,
                fetching: meter::fetching_now(),
            };
            let mut out = std::io::stdout().lock();
            if ANSWERED.load(Ordering::SeqCst)
                || send(&mut out, &heartbeat)
                    .and_then(|()| out.flush())
                    .is_err()
            {
                return;
            }
            drop(out);
            std::thread::sleep(HEARTBEAT_EVERY);
        }
    };
    // Without the thread, zot stops the helper after the low-speed time.
    let _ = std::thread::Builder::new()
        .name("heartbeat".into())
        .spawn(beat);
}

/// The request on stdin, as sent; `None` when stdin is a terminal or holds nothing.
fn read_request() -> Option<Vec<u8>> {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        return None;
    }
    let mut bytes = Vec::new();
    stdin.lock().take(MAX_LINE).read_to_end(&mut bytes).ok()?;
    Some(bytes)
}

fn not_by_hand() -> ExitCode {
    eprintln!(
        "{HELPER}: zot runs this for its git work (`zot ext install <git URL>`, `update`, `sync`); it is not a command of its own"
    );
    ExitCode::from(2)
}

/// Runs the fetch, passing progress on; the answer.
fn fetch(
    request: &Request,
    git_dir: &Path,
    tree: &Path,
    only: Option<&Path>,
) -> std::io::Result<Message> {
    let mut passing = Passing::new();
    let fetched = check_repository(&request.url).and_then(|()| {
        git::fetch(
            &request.url,
            request.git_ref.as_deref(),
            git_dir,
            tree,
            only,
            &mut |step| passing.pass(step, Instant::now()),
        )
    });
    if let Some(e) = passing.failed_writing {
        return Err(e);
    }
    Ok(match fetched {
        Ok(checkout) => Message::Fetched {
            commit: checkout.commit,
            ref_kind: checkout.ref_kind,
            branch: checkout.branch,
        },
        Err(e) => failure(&e),
    })
}

/// Passes a fetch's steps on to zot: at most every [`PROGRESS_EVERY`], but always the first
/// of a new kind of step and the end of a transfer.
struct Passing {
    last: Option<(Instant, std::mem::Discriminant<Step>)>,
    failed_writing: Option<std::io::Error>,
}

impl Passing {
    fn new() -> Passing {
        Passing {
            last: None,
            failed_writing: None,
        }
    }

    /// The message for `step` at `now`, if one is due.
    fn message(&mut self, step: Step, now: Instant) -> Option<Message> {
        let kind = std::mem::discriminant(&step);
        let due = match self.last {
            None => true,
            Some((at, last)) => last != kind || now.duration_since(at) >= PROGRESS_EVERY,
        };
        let ends = matches!(&step, Step::Receiving(t) if t.done());
        if !due && !ends {
            return None;
        }
        self.last = Some((now, kind));
        Some(Message::Step(step))
    }

    fn pass(&mut self, step: Step, now: Instant) {
        if self.failed_writing.is_some() {
            return;
        }
        if let Some(message) = self.message(step, now) {
            let mut out = std::io::stdout().lock();
            self.failed_writing = send(&mut out, &message).and_then(|()| out.flush()).err();
        }
    }
}

/// The answer for an error: its message with its causes, and whether it is a usage error.
fn failure(e: &anyhow::Error) -> Message {
    Message::Failed {
        message: format!("{e:#}"),
        usage: crate::error::exit_code(e) == 2,
    }
}

/// Writes `message` as one line, in one write (the heartbeat thread writes too).
fn send(out: &mut impl Write, message: &Message) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(message)?;
    line.push(b'\n');
    out.write_all(&line)
}

/// A local repository path must be a repository; libgit2 would only say "unsupported URL
/// protocol" or "could not find repository". (That it exists is checked before zot starts
/// the helper.)
fn check_repository(url: &GitUrl) -> Result<()> {
    if !url.is_local_path() {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::git::progress::Transfer;

    fn receiving(objects: usize, total: usize) -> Step {
        Step::Receiving(Transfer {
            objects,
            total,
            bytes: 10,
            ..Transfer::default()
        })
    }

    /// What is sent of `steps` (milliseconds from the start, step), as JSON.
    fn sent(steps: Vec<(u64, Step)>) -> Vec<String> {
        let start = Instant::now();
        let mut passing = Passing::new();
        steps
            .into_iter()
            .filter_map(|(ms, step)| passing.message(step, start + Duration::from_millis(ms)))
            .map(|message| serde_json::to_string(&message).unwrap())
            .collect()
    }

    #[test]
    fn steps_are_passed_on_at_most_every_50_ms_but_each_new_kind_and_the_end_at_once() {
        let steps = vec![
            (0, Step::Remote("Counting objects:  50% (1/2)".into())),
            (
                10,
                Step::Remote("Counting objects: 100% (2/2), done.".into()),
            ),
            (20, receiving(1, 3)),
            (30, receiving(2, 3)),
            (40, receiving(3, 3)),
            (45, Step::Checkout),
        ];
        assert_eq!(
            sent(steps),
            [
                r#"{"step":{"remote":"Counting objects:  50% (1/2)"}}"#,
                r#"{"step":{"receiving":{"objects":1,"total":3,"bytes":10,"deltas":0,"total_deltas":0}}}"#,
                r#"{"step":{"receiving":{"objects":3,"total":3,"bytes":10,"deltas":0,"total_deltas":0}}}"#,
                r#"{"step":"checkout"}"#,
            ]
        );
    }
}
