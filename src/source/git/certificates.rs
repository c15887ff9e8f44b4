//! OpenSSL's certificate bundle, read only when a connection may speak TLS.
//!
//! When libgit2 starts, it starts OpenSSL, which reads and parses every certificate of the
//! system's bundle (`SSL_CTX_set_default_verify_paths` loads the file that `SSL_CERT_FILE`
//! names: some 140 certificates, about 50 million instructions, 5 ms before anything
//! connects), although a fetch over git://, ssh or from a local repository never uses
//! them. [`start`] starts libgit2 with that variable naming no file for the moment, so
//! nothing is read; [`load_for`] loads the same file, and the folder `SSL_CERT_DIR` names,
//! before the first connection to an `http://` or `https://` URL (plain http too: the
//! server may redirect to https). What is trusted is unchanged: the file and folder git2
//! finds (its `openssl-probe` step, which runs before any connection) or the user set.
//!
//! When libgit2 had already been started (a local repository opened first), the bundle
//! was loaded then, and nothing here changes anything.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Once;
use std::sync::atomic::{AtomicBool, Ordering};

/// The variables OpenSSL reads for its default bundle file and folder.
const CERT_FILE: &str = "SSL_CERT_FILE";
const CERT_DIR: &str = "SSL_CERT_DIR";

/// Whether libgit2 was started by [`start`], without the bundle.
static DEFERRED: AtomicBool = AtomicBool::new(false);

unsafe extern "C" {
    /// libgit2's own start (counted: git2 calls it too); says how many times it was called.
    fn git_libgit2_init() -> std::ffi::c_int;
}

/// Starts libgit2 without reading OpenSSL's certificate bundle, unless it was started
/// before. Changing the environment is only sound while no other thread reads it: called
/// before a command starts threads of its own (fetch and probe run first in their
/// commands; `sync` calls it before its pool of fetching threads).
pub(crate) fn start() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let saved = std::env::var_os(CERT_FILE);
        // SAFETY: no other thread reads the environment meanwhile (see above), and
        // `git_libgit2_init` may be called any number of times, from any thread.
        let starts = unsafe {
            std::env::set_var(CERT_FILE, "");
            let starts = git_libgit2_init();
            restore(saved);
            starts
        };
        DEFERRED.store(starts == 1, Ordering::SeqCst);
    });
}

/// Puts `SSL_CERT_FILE` back as it was.
///
/// # Safety
/// As [`std::env::set_var`]: no other thread may read the environment meanwhile.
unsafe fn restore(saved: Option<OsString>) {
    // SAFETY: passed on to the caller.
    unsafe {
        match saved {
            Some(value) => std::env::set_var(CERT_FILE, value),
            None => std::env::remove_var(CERT_FILE),
        }
    }
}

/// Loads the certificate bundle that [`start`] left out, before the first connection to
/// `url` when it is an http(s) URL. Every connection calls this first, so none can be
/// verifying a server while the bundle is loaded.
pub(crate) fn load_for(url: &[u8]) {
    static LOADED: Once = Once::new();
    let web = url
        .get(..4)
        .is_some_and(|s| s.eq_ignore_ascii_case(b"http"));
    if !web || !DEFERRED.load(Ordering::SeqCst) {
        return;
    }
    LOADED.call_once(|| {
        let var = |name| std::env::var_os(name).map(PathBuf::from);
        // SAFETY: these change libgit2's TLS context, which no connection uses yet (each
        // waits for this first). A file or folder that cannot be read is skipped, as
        // OpenSSL skips its defaults.
        unsafe {
            if let Some(file) = var(CERT_FILE) {
                let _ = git2::opts::set_ssl_cert_file(file);
            }
            if let Some(dir) = var(CERT_DIR) {
                let _ = git2::opts::set_ssl_cert_dir(dir);
            }
        }
    });
}
