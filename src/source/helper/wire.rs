//! What `zot` and `zot-ext-git` say to each other. The helper's arguments are the verb and
//! the paths it works in (paths may not be UTF-8); the request, a URL that may hold a
//! credential, is one JSON document on its stdin, never on its command line. Its stdout is
//! JSON lines: progress and heartbeats, then one answer; a fetch answer that carries the checkout's file
//! list is followed by the list's bytes (its stored form), counted in the answer.
//!
//! The two are installed together, but either side tolerates the other being older or
//! newer: the request says which progress messages zot reads ([`PROGRESS_STEPS`]; a
//! helper ignores fields it does not know, so an older one sends [`Message::Progress`]),
//! and zot passes over a message kind it does not know before the answer.

use serde::{Deserialize, Serialize};

use crate::source::GitUrl;
use crate::source::git::Probe;
use crate::source::git::meter::LowSpeed;
use crate::source::git::progress::Step;
use crate::store::record::RefKind;

/// The helper's file name; it is looked up beside the running `zot`.
pub(crate) const HELPER: &str = "zot-ext-git";

/// `zot-ext-git fetch <git-dir> <tree> [<only>]`: clone into `tree` with `git-dir` as the
/// scratch object store, limited to the folder `only` of the repository when given.
pub(super) const FETCH: &str = "fetch";
/// `zot-ext-git probe <scratch>`: what the ref points at on the remote.
pub(super) const PROBE: &str = "probe";

/// The `progress` of a request that reads [`Message::Step`].
pub(super) const PROGRESS_STEPS: u32 = 1;

/// What to fetch or probe.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Request {
    pub url: GitUrl,
    pub git_ref: Option<String>,
    /// The progress messages zot reads: 0 (a zot-ext from before this field) only
    /// [`Message::Progress`], [`PROGRESS_STEPS`] [`Message::Step`] instead.
    #[serde(default)]
    pub progress: u32,
}

/// One line of the helper's stdout.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum Message {
    /// Objects received of total, bytes: the progress sent to a request whose `progress`
    /// is 0.
    Progress(usize, usize, usize),
    /// A step of a fetch: the server's text, the transfer, the checkout (sent to a request
    /// whose `progress` is at least [`PROGRESS_STEPS`]).
    Step(Step),
    Fetched {
        commit: String,
        ref_kind: RefKind,
        branch: Option<String>,
    },
    Probed(Probe),
    /// Sent by the helper's own thread at least once a second until the answer: the bytes
    /// received so far, whether the time now counts against the limit (not while a
    /// checkout is written or a credential helper asked), and the limit.
    Heartbeat {
        received: u64,
        metered: bool,
        low_speed: LowSpeed,
        /// The (redacted) URL being fetched now: the top repository's or a submodule's.
        fetching: Option<String>,
    },
    Failed {
        /// The error and its causes, as one line (`{:#}`).
        message: String,
        /// A usage error (exit status 2).
        usage: bool,
    },
}

/// The message kinds zot must read (answers and heartbeats); a line of another kind
/// that zot cannot read is passed over.
pub(super) const DECISIVE: [&str; 4] = ["fetched", "probed", "failed", "heartbeat"];

/// The longest line the client reads: an answer is a few hundred bytes, an error message
/// a few lines' worth.
pub(super) const MAX_LINE: u64 = 1 << 20;
