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

use libgit2_sys as raw;

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
        // OpenSSL first, as git2 starts it: without an exit handler. libgit2's own start
        // asks OpenSSL for one, which would tear OpenSSL down at exit under any thread
        // still using it.
        raw::openssl_init();
        // SAFETY: no other thread reads the environment meanwhile (see above), and
        // `git_libgit2_init` may be called any number of times, from any thread.
        let starts = unsafe {
            // git2's own first step (its `init`, before libgit2's), taken here first so
            // that libgit2 starts OpenSSL with the folder it finds: without it OpenSSL
            // would also add the folder it was built with, which git2 never trusted.
            openssl_probe::init_openssl_env_vars();
            let saved = std::env::var_os(CERT_FILE);
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    /// Set in the copy of the test binary that [`starting_libgit2_leaves_openssl_up_at_exit`]
    /// starts: that process starts libgit2 and exits.
    const IN_CHILD: &str = "ZOT_EXT_TEST_OPENSSL_AT_EXIT";
    /// What OpenSSL's own exit handler would print, through the handler added to it here.
    const TORN_DOWN: &str = "openssl was torn down at exit";

    unsafe extern "C" {
        /// OpenSSL's list of handlers that its clean-up (`OPENSSL_cleanup`) runs.
        fn OPENSSL_atexit(handler: extern "C" fn()) -> std::ffi::c_int;
    }

    extern "C" fn say_torn_down() {
        let line = format!("{TORN_DOWN}\n");
        // SAFETY: writes a buffer of its own length to standard output.
        unsafe { libc::write(1, line.as_ptr().cast(), line.len()) };
    }

    /// Runs the test `name` of this binary again in a child process (with [`IN_CHILD`] set
    /// and the certificate variables unset, as in a fresh environment); its standard output.
    fn in_child(name: &str) -> String {
        let me = std::env::current_exe().unwrap();
        let full = format!("source::git::certificates::tests::{name}");
        let child = Command::new(me)
            .args(["--exact", &full, "--test-threads=1", "--nocapture"])
            .env(IN_CHILD, "1")
            .env_remove(CERT_FILE)
            .env_remove(CERT_DIR)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&child.stdout).into_owned();
        assert!(child.status.success(), "{stdout}");
        assert!(stdout.contains("1 passed"), "{stdout}");
        stdout
    }

    /// OpenSSL is started as git2 starts it, without an exit handler of its own: a clean-up
    /// at exit would tear it down under any thread still fetching over https.
    #[test]
    fn starting_libgit2_leaves_openssl_up_at_exit() {
        if std::env::var_os(IN_CHILD).is_some() {
            start();
            assert!(
                DEFERRED.load(Ordering::SeqCst),
                "libgit2 was started before"
            );
            // SAFETY: a handler without arguments, as OpenSSL calls it.
            assert_eq!(unsafe { OPENSSL_atexit(say_torn_down) }, 1);
            return;
        }
        let stdout = in_child("starting_libgit2_leaves_openssl_up_at_exit");
        assert!(!stdout.contains(TORN_DOWN), "{stdout}");
    }

    /// libgit2 starts OpenSSL with the certificate folder git2's probe finds already named
    /// (OpenSSL takes its folder from `SSL_CERT_DIR` at that moment, else the one it was
    /// built with, which git2 alone never trusted), and leaves both variables as git2 sets
    /// them.
    #[test]
    fn libgit2_starts_with_the_certificate_places_git2_finds() {
        if std::env::var_os(IN_CHILD).is_some() {
            // What git2's probe finds in this environment (no variable set; a system
            // without certificates finds nothing, and then nothing is to be set).
            let found = openssl_probe::probe();
            start();
            let now = |name| std::env::var_os(name).map(PathBuf::from);
            assert_eq!(now(CERT_DIR), found.cert_dir);
            assert_eq!(now(CERT_FILE), found.cert_file);
            return;
        }
        in_child("libgit2_starts_with_the_certificate_places_git2_finds");
    }
}
