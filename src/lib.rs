//! zot-ext: the `zot ext` extension manager for the zot coding agent. Unix only (Linux and
//! macOS): extensions run in process groups of their own, and files are opened with
//! `O_NOFOLLOW` and `O_NONBLOCK`, so there are no fallbacks for other systems.

#[cfg(not(unix))]
compile_error!(
    "zot-ext builds only on Unix (Linux and macOS): it runs extensions in process groups and opens files with O_NOFOLLOW and O_NONBLOCK"
);

// The binary's entry points: the hand-over to the zot agent, the command line, its
// commands, errors and output.
pub mod agent;
pub mod cli;
pub mod cmd;
pub mod error;
pub mod output;

mod catalog;
mod check;
mod fsx;
mod host;
mod install;
mod logs;
mod prepare;
mod project;
mod protocol;
mod seal;
mod source;
mod store;
mod threads;

/// The two stages of a sealed prepare step, which are this binary started under other names
/// (src/seal/): run one when `argv[0]` names it.
#[doc(hidden)]
pub use seal::run_if_stage as seal_stage;

/// `zot-ext-git`, the helper that does zot's git work (src/source/helper/): its `main`.
#[doc(hidden)]
pub use source::helper::main as git_helper_main;

/// What the fuzz targets (`fuzz/`) and the integration tests reach beyond the command line:
/// the manifest and frame codecs, and file lists. Not an API.
#[doc(hidden)]
pub mod testing {
    pub mod manifest {
        pub use crate::catalog::manifest::{FILE, Manifest, key_matches, parse, with_enabled};
    }
    pub mod protocol {
        pub use crate::protocol::{Decoded, Frame, FromExt, FromHost, decode, encode};
    }
    pub use crate::store::filelist::{FileList, Standing};
}

use std::ffi::OsString;
use std::path::Path;

/// The arguments to parse: invoked as `zot-ext`, the binary behaves as `zot ext`.
pub fn effective_args(args: impl IntoIterator<Item = OsString>) -> Vec<OsString> {
    let mut args: Vec<OsString> = args.into_iter().collect();
    let invoked_as = args
        .first()
        .and_then(|a| Path::new(a).file_stem())
        .map(|s| s.to_string_lossy().into_owned());
    if invoked_as.as_deref() == Some("zot-ext") {
        args[0] = OsString::from("zot");
        args.insert(1, OsString::from("ext"));
    }
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: Vec<OsString>) -> Vec<String> {
        v.into_iter().map(|s| s.into_string().unwrap()).collect()
    }

    #[test]
    fn zot_ext_name_implies_ext() {
        let args = effective_args(["/usr/bin/zot-ext", "list"].map(OsString::from));
        assert_eq!(strings(args), ["zot", "ext", "list"]);
        let args = effective_args(["zot", "ext", "list"].map(OsString::from));
        assert_eq!(strings(args), ["zot", "ext", "list"]);
    }
}
