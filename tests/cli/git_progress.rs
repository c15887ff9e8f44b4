//! The progress line of a git install: on a terminal, the server's own words while it
//! counts and compresses, then the objects received with a percentage, the size in binary
//! units, and the line erased before the result; nothing into a pipe, with `--json` or with
//! `--quiet`. The server is `git daemon` behind a relay that passes its answer on in small
//! pieces, so the transfer lasts long enough for the line to be redrawn.

use std::io::{Read as _, Write as _};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::Path;
use std::thread;
use std::time::Duration;

use crate::git_install::{extension_repo, served};
use crate::support::Env;
use crate::support::git_servers::{GitDaemon, Repo};

/// The server's answer goes on in pieces of this many bytes...
const PIECE: usize = 4096;
/// ...one every this long.
const PAUSE: Duration = Duration::from_millis(80);

/// A relay on 127.0.0.1 in front of a server: what the client sends goes on at once, the
/// server's answer in [`PIECE`]s with a [`PAUSE`] after each. It serves until the test
/// process ends.
struct Relay {
    port: u16,
}

impl Relay {
    fn start(server_port: u16) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let Ok(server) = TcpStream::connect(("127.0.0.1", server_port)) else {
                    continue;
                };
                let (mut to_server, mut from_client) =
                    (server.try_clone().unwrap(), client.try_clone().unwrap());
                thread::spawn(move || {
                    let _ = std::io::copy(&mut from_client, &mut to_server);
                    let _ = to_server.shutdown(Shutdown::Write);
                });
                thread::spawn(move || paced(server, client));
            }
        });
        Relay { port }
    }

    fn url(&self, name: &str) -> String {
        format!("git://127.0.0.1:{}/{name}.git", self.port)
    }
}

fn paced(mut server: TcpStream, mut client: TcpStream) {
    let mut piece = vec![0; PIECE];
    while let Ok(n @ 1..) = server.read(&mut piece) {
        if client.write_all(&piece[..n]).is_err() {
            return;
        }
        thread::sleep(PAUSE);
    }
    let _ = client.shutdown(Shutdown::Write);
}

/// The extension `big`, with 160 KiB of files that do not compress, served by `git daemon`
/// behind a [`Relay`]; its URL.
fn big_extension(env: &Env, root: &Path) -> (GitDaemon, Relay, String) {
    let repo: Repo = extension_repo(env, root, "big");
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    repo.commit_with("data", |tree| {
        for file in 0..8 {
            let bytes: Vec<u8> = (0..20 * 1024)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    seed.to_le_bytes()[0]
                })
                .collect();
            std::fs::write(tree.join(format!("data{file}.bin")), bytes).unwrap();
        }
    });
    let daemon = GitDaemon::start(root);
    let relay = Relay::start(daemon.port);
    let url = relay.url("big");
    (daemon, relay, url)
}

#[test]
fn on_a_terminal_the_servers_phases_then_a_percentage_are_drawn_and_erased() {
    let env = Env::new();
    let (_tmp, root) = served();
    let (_daemon, _relay, url) = big_extension(&env, &root);
    let done = env.zot_in_terminal_with(&["ext", "install", &url], "", &[("TERM", "xterm")]);
    let shown = done.stdout;
    assert_eq!(done.code, 0, "{shown:?}");
    let remote = shown.find("\r\x1b[2Kremote: ").expect("the server's phase");
    let receiving = shown
        .match_indices("\r\x1b[2Kreceiving objects: ")
        .map(|(at, _)| at)
        .find(|&at| {
            // `receiving objects:  45% (9/20), 72.0 KiB`, and maybe ` | 50.1 KiB/s`
            let drawn = shown[at + 24..].split('\r').next().unwrap_or_default();
            let Some((percent, rest)) = drawn.split_once("% (") else {
                return false;
            };
            let size = rest.split_once("), ").map_or("", |(_, size)| size);
            let size = size.split(" | ").next().unwrap_or_default();
            percent.trim().parse::<u8>().is_ok_and(|p| p <= 100)
                && (size.ends_with(" KiB") || size.ends_with(" B"))
                && size.split(' ').next().is_some_and(|n| n.len() <= 4)
        })
        .unwrap_or_else(|| panic!("no percentage: {shown:?}"));
    assert!(remote < receiving, "{shown:?}");
    // The line is erased before the result, which is alone on its line.
    let result = shown
        .find("installed big ")
        .unwrap_or_else(|| panic!("no result: {shown:?}"));
    assert!(shown[..result].ends_with("\r\x1b[2K"), "{shown:?}");
    assert!(!shown[result..].contains("receiving"), "{shown:?}");
}

#[test]
fn no_progress_into_a_pipe_nor_with_json_or_quiet() {
    let env = Env::new();
    let (_tmp, root) = served();
    let (_daemon, _relay, url) = big_extension(&env, &root);
    env.zot(["ext", "install", &url])
        .env("TERM", "xterm")
        .ok()
        .stderr_lacks("\r")
        .stderr_lacks("\x1b")
        .stderr_lacks("remote:")
        .stderr_lacks("receiving objects");
    for flag in ["--json", "--quiet"] {
        let done = env.zot_in_terminal_with(
            &["ext", "install", "--force", flag, &url],
            "",
            &[("TERM", "xterm")],
        );
        assert_eq!(done.code, 0, "{flag}: {:?}", done.stdout);
        for drawn in ["remote:", "receiving objects", "\x1b[2K"] {
            assert!(!done.stdout.contains(drawn), "{flag}: {:?}", done.stdout);
        }
    }
}

/// The server's text is remote text: a server that writes a terminal title sequence, a
/// bidi override and a credential-bearing URL among its progress gets them shown escaped
/// and redacted, on the one line. (`git http-backend` runs with the served root as its
/// home, so `.gitconfig` there is its global configuration, where git honours
/// `uploadpack.packObjectsHook`: the hook's stderr reaches the client as progress.)
#[test]
fn the_servers_text_is_escaped_and_redacted_on_the_terminal() {
    let env = Env::new();
    let (_tmp, root) = served();
    extension_repo(&env, &root, "loud");
    let hook = root.with_file_name("loud-hook.sh");
    crate::support::write_executable(
        &hook,
        "#!/bin/sh\nprintf 'Counting \\033]0;pwned\\007 https://u:hunter2@e.x \\342\\200\\256 objects\\n' >&2\nsleep 1\nexec \"$@\"\n",
    );
    std::fs::write(
        root.join(".gitconfig"),
        format!("[uploadpack]\n\tpackObjectsHook = {}\n", hook.display()),
    )
    .unwrap();
    let server = crate::support::git_servers::HttpGit::start(&root);
    let done = env.zot_in_terminal_with(
        &["ext", "install", &server.url("loud")],
        "",
        &[("TERM", "xterm")],
    );
    let shown = done.stdout;
    assert_eq!(done.code, 0, "{shown:?}");
    assert!(
        shown.contains(
            "\r\x1b[2Kremote: Counting \\u{1b}]0;pwned\\u{7} https://***@e.x \\u{202e} objects\r"
        ),
        "{shown:?}"
    );
    for raw in ["\x1b]0", "\u{7}", "\u{202e}", "hunter2"] {
        assert!(!shown.contains(raw), "{raw:?} in {shown:?}");
    }
}

/// A fetch that fails after the line was drawn erases it before the error.
#[test]
fn a_failed_fetch_erases_the_line_before_its_error() {
    let env = Env::new();
    let (_tmp, root) = served();
    extension_repo(&env, &root, "broken");
    let hook = root.with_file_name("failing-hook.sh");
    crate::support::write_executable(
        &hook,
        "#!/bin/sh\necho 'Counting objects: 1' >&2\nsleep 1\nexit 1\n",
    );
    std::fs::write(
        root.join(".gitconfig"),
        format!("[uploadpack]\n\tpackObjectsHook = {}\n", hook.display()),
    )
    .unwrap();
    let server = crate::support::git_servers::HttpGit::start(&root);
    let done = env.zot_in_terminal_with(
        &["ext", "install", &server.url("broken")],
        "",
        &[("TERM", "xterm"), ("NO_COLOR", "1")],
    );
    let shown = done.stdout;
    assert_eq!(done.code, 1, "{shown:?}");
    let drawn = shown
        .find("remote: Counting objects: 1")
        .unwrap_or_else(|| panic!("no progress: {shown:?}"));
    let error = shown
        .find("error: ")
        .unwrap_or_else(|| panic!("no error: {shown:?}"));
    assert!(drawn < error, "{shown:?}");
    assert!(shown[..error].ends_with("\r\x1b[2K"), "{shown:?}");
}
