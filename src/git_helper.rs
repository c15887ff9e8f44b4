//! The `zot-ext-git` binary: the helper `zot` runs for its git work (fetch and probe), so
//! that libgit2, libssh2 and OpenSSL are loaded only by the commands that use them. Its
//! protocol is in src/source/helper/.

fn main() -> std::process::ExitCode {
    zot_ext::git_helper_main()
}
