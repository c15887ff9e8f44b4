//! What `zot` and `zot-ext-git` say to each other. The helper's arguments are the verb and
//! the paths it works in (paths may not be UTF-8); the request, a URL that may hold a
//! credential, is one JSON document on its stdin, never on its command line. Its stdout is
//! JSON lines: progress steps and heartbeats, then one answer. The two binaries are built
//! and installed together, so each reads exactly what the other writes: a line zot cannot
//! read is an error.

use serde::{Deserialize, Serialize};

use crate::source::git::progress::Step;
use crate::source::git::url::GitUrl;
use crate::source::git::{Head, Probe};
use crate::source::meter::LowSpeed;
use crate::source::oci::pack::Packed;
use crate::source::oci::reference::OciRef;
use crate::source::oci::{ForPlatform, Pulled, Pushed};
use crate::store::record::RefKind;

/// The helper's file name; it is looked up beside the running `zot`.
pub(crate) const HELPER: &str = "zot-ext-git";

/// `zot-ext-git fetch <git-dir> <tree> [<only>]`: clone into `tree` with `git-dir` as the
/// scratch object store, limited to the folder `only` of the repository when given.
pub(super) const FETCH: &str = "fetch";
/// `zot-ext-git probe <scratch>`: what the ref points at on the remote.
pub(super) const PROBE: &str = "probe";
/// Pull an extension from an OCI registry into a new folder: `pull <tree> [<keep>]` (the
/// compressed layer written to the new file `keep` too), an [`OciRequest`].
pub(super) const PULL: &str = "pull";
/// The digest an OCI reference names now: `oci-probe`, an [`OciRequest`].
pub(super) const OCI_PROBE: &str = "oci-probe";
/// The commit the working copy a folder is in names: `head <folder>` (any request).
pub(super) const HEAD: &str = "head";
/// Push a packed extension to an OCI registry: `push`, an [`OciRequest`] with `packed`.
pub(super) const PUSH: &str = "push";

/// What to fetch or probe.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Request {
    pub url: GitUrl,
    pub git_ref: Option<String>,
}

/// One line of the helper's stdout.
/// What to pull from a registry, or probe.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct OciRequest {
    pub reference: OciRef,
    /// What to push (`push` only).
    #[serde(default)]
    pub packed: Option<Packed>,
    /// The prepared extension for each platform, pushed under an index with `packed`.
    #[serde(default)]
    pub platforms: Vec<ForPlatform>,
}

impl OciRequest {
    /// A pull or probe of `reference`.
    pub(super) fn of(reference: &OciRef) -> OciRequest {
        OciRequest {
            reference: reference.clone(),
            packed: None,
            platforms: Vec::new(),
        }
    }
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum Message {
    /// A step of a fetch: the server's text, the transfer, the checkout.
    Step(Step),
    Fetched {
        commit: String,
        ref_kind: RefKind,
        branch: Option<String>,
    },
    Probed(Probe),
    /// The working copy's `HEAD` (`head`); `None` outside a repository.
    Head(Option<Head>),
    /// What a pull fetched, or the digest a reference names now (a probe).
    Pulled(Box<Pulled>),
    /// What a push put under the tag.
    Pushed(Pushed),
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

/// The longest line the client reads: an answer is a few hundred bytes, an error message
/// a few lines' worth.
pub(super) const MAX_LINE: u64 = 1 << 20;
