//! Slow transfers end: a server that sends a byte a second (a trickle), or nothing at
//! all, fails the fetch once it has been under the low-speed limit for the low-speed time,
//! for http and git:// alike; the limit and time are lowered through `GIT_HTTP_LOW_SPEED_*` so each
//! case takes a few seconds (zot's default is 1,000 bytes per second over 60 s).

use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Duration;

use crate::git_install::{bounded, extension_repo, served};
use crate::support::Env;
use crate::support::git_servers::{HttpGit, Repo};

/// A loopback server that answers every connection with `reply`, one byte a second.
struct Trickle {
    port: u16,
    stop: Arc<AtomicBool>,
}

impl Trickle {
    fn start(reply: &'static [u8]) -> Trickle {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        thread::spawn(move || {
            for stream in listener.incoming() {
                if flag.load(Ordering::SeqCst) {
                    return;
                }
                let flag = Arc::clone(&flag);
                if let Ok(stream) = stream {
                    thread::spawn(move || trickle(stream, reply, &flag));
                }
            }
        });
        Trickle { port, stop }
    }
}

fn trickle(mut stream: TcpStream, reply: &[u8], stop: &AtomicBool) {
    let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
    let _ = stream.read(&mut [0; 4096]);
    for byte in reply {
        if stop.load(Ordering::SeqCst) || stream.write_all(&[*byte]).is_err() {
            return;
        }
        thread::sleep(Duration::from_secs(1));
    }
    // Then silence, the connection held open.
    while !stop.load(Ordering::SeqCst) {
        thread::sleep(Duration::from_millis(200));
    }
}

impl Drop for Trickle {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// An HTTP answer whose headers take minutes at a byte a second.
const HTTP_REPLY: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Type: application/x-git-upload-pack-advertisement\r\nCache-Control: no-cache\r\nContent-Length: 4096\r\n\r\n";
/// A ref advertisement whose first pkt-line (256 bytes) takes minutes.
const GIT_REPLY: &[u8] = b"0100aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

#[test]
fn a_trickling_server_ends_the_fetch_with_the_rate_and_the_url() {
    let http = Trickle::start(HTTP_REPLY);
    let git = Trickle::start(GIT_REPLY);
    let silent = Trickle::start(b"");
    for url in [
        format!("git://127.0.0.1:{}/x.git", silent.port),
        format!("http://127.0.0.1:{}/x.git", http.port),
        format!("git://127.0.0.1:{}/x.git", git.port),
        format!("http://u:hunter2@127.0.0.1:{}/x.git", http.port),
    ] {
        let env = Env::new();
        let done = bounded(
            env.zot(["ext", "install", &url])
                .env("GIT_HTTP_LOW_SPEED_LIMIT", "1000")
                .env("GIT_HTTP_LOW_SPEED_TIME", "3"),
            &[],
        );
        done.failure(1);
        let shown = url.replace("u:hunter2", "***");
        done.stderr_has(&format!("cannot fetch {shown}: the transfer was too slow"))
            .stderr_has("bytes per second, under the limit of 1000 bytes per second for 3 s")
            .stderr_lacks("hunter2")
            .stderr_one_line();
        assert!(env.installed_names().is_empty());
    }
}

/// The same limit from the user's git configuration.
#[test]
fn the_low_speed_limit_is_read_from_the_git_configuration() {
    let http = Trickle::start(HTTP_REPLY);
    let env = Env::new();
    std::fs::write(
        env.user_home.join(".gitconfig"),
        "[http]\n\tlowSpeedLimit = 500\n\tlowSpeedTime = 2\n",
    )
    .unwrap();
    let url = format!("http://127.0.0.1:{}/x.git", http.port);
    let done = bounded(env.zot(["ext", "install", &url]), &[]);
    done.failure(1);
    done.stderr_has("under the limit of 500 bytes per second for 2 s");
}

/// A slow submodule server: the error names the submodule's URL, not the top one's.
#[test]
fn a_slow_submodule_is_named_by_its_own_url() {
    let env = Env::new();
    let (_tmp, root) = served();
    let lib = Repo::with_files(&root, "lib", &[("lib.txt", "lib\n")]);
    let http = HttpGit::start(&root);
    let slow = Trickle::start(HTTP_REPLY);
    let slow_url = format!("http://127.0.0.1:{}/lib.git", slow.port);
    let sup = extension_repo(&env, &root, "withsub");
    sup.add_submodule("vendor/lib", &lib, &slow_url);
    let done = bounded(
        env.zot(["ext", "install", &http.url("withsub")])
            .env("GIT_HTTP_LOW_SPEED_TIME", "3"),
        &[],
    );
    done.failure(1);
    done.stderr_has(&format!(
        "cannot fetch {slow_url}: the transfer was too slow"
    ));
    assert!(env.installed_names().is_empty());
}
