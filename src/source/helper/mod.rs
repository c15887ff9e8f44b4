//! Git in a process of its own. Every libgit2 call (fetch, probe, "is this folder a
//! repository") runs in `zot-ext-git`, the helper binary installed beside `zot`: [`client`]
//! starts it for one request and reads its answer, [`serve`] is its side. libgit2, libssh2
//! and OpenSSL are linked into the helper only. The loader writes every page of a binary's
//! relocated tables at each start, whatever the command does, and 87% of those pages were
//! OpenSSL's and libgit2's: `zot --version` took 1.7× the time of `true`, 1.3× without them.
//! So the commands that never touch git (`list`, `logs`, `info`, completion) start without
//! them, as git keeps curl and OpenSSL in `git-remote-https`.

mod client;
mod progress;
mod serve;
mod watch;
mod wire;

pub(crate) use client::{fetch, head, probe, probe_oci, pull, push};
pub use serve::main;
