//! Real git servers for integration tests, all on 127.0.0.1: bare repository fixtures built
//! with the `git` CLI, `git daemon` (git://), an HTTP/1.1 server (`tiny_http`) that runs
//! `git http-backend` as CGI (smart HTTP), optionally behind basic auth, logging requests,
//! a TLS front for it (https, with the certificates of `tests/cli/tls/`), and sshd.
//!
//! Everything is bounded: servers are waited for a few seconds at most, a CGI program is
//! killed after a time limit, and dropping a server stops it.

use std::fs;
use std::io::{self, BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use tempfile::TempDir;

/// How long a server may take to start accepting connections.
const START_TIMEOUT: Duration = Duration::from_secs(10);
/// How long `git http-backend` may run for one request.
const CGI_TIMEOUT: Duration = Duration::from_secs(30);

// ---------------------------------------------------------------------------------------------
// Repository fixtures

/// Runs `git` with a fixed identity and default branch in `dir`; panics on failure and returns
/// trimmed stdout.
pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(["-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run git {args:?}: {e}"));
    assert!(
        output.status.success(),
        "git {args:?} in {} failed:\n{}{}",
        dir.display(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

/// A bare repository `<root>/<name>.git` (what the servers serve) fed from a private work
/// repository: every commit, tag and branch made here is pushed to the bare one at once.
pub(crate) struct Repo {
    _work_tmp: TempDir,
    /// The work tree the commits are made in.
    pub work: PathBuf,
    /// The bare repository under the served root.
    pub bare: PathBuf,
    pub name: String,
}

impl Repo {
    /// An empty bare repository `<root>/<name>.git` (no commits yet) and its work repository.
    pub(crate) fn empty(root: &Path, name: &str) -> Repo {
        fs::create_dir_all(root).unwrap();
        let bare = root.join(format!("{name}.git"));
        git(root, &["init", "--quiet", "--bare", bare.to_str().unwrap()]);
        let work_tmp = tempfile::tempdir().unwrap();
        let work = fs::canonicalize(work_tmp.path()).unwrap().join("work");
        fs::create_dir(&work).unwrap();
        git(&work, &["init", "--quiet"]);
        git(&work, &["remote", "add", "origin", bare.to_str().unwrap()]);
        Repo {
            _work_tmp: work_tmp,
            work,
            bare,
            name: name.to_string(),
        }
    }

    /// A bare repository whose first commit holds a copy of the folder `src` (files, folders,
    /// modes and symbolic links as links).
    pub(crate) fn from_dir(root: &Path, name: &str, src: &Path) -> Repo {
        let repo = Repo::empty(root, name);
        repo.commit_with("initial", |work| copy_tree(src, work));
        repo
    }

    /// A bare repository whose first commit holds `files` (path, text).
    pub(crate) fn with_files(root: &Path, name: &str, files: &[(&str, &str)]) -> Repo {
        let repo = Repo::empty(root, name);
        repo.commit(files);
        repo
    }

    /// Writes `files` (path, text; parents created) into the work tree, commits everything
    /// and pushes. Returns the new commit id.
    pub(crate) fn commit(&self, files: &[(&str, &str)]) -> String {
        self.commit_with("change", |work| {
            for (path, text) in files {
                let path = work.join(path);
                fs::create_dir_all(path.parent().unwrap()).unwrap();
                fs::write(path, text).unwrap();
            }
        })
    }

    /// Lets `change` edit the work tree (write, delete, link...), commits everything with
    /// `message` and pushes. Returns the new commit id.
    pub(crate) fn commit_with(&self, message: &str, change: impl FnOnce(&Path)) -> String {
        change(&self.work);
        git(&self.work, &["add", "--all"]);
        git(
            &self.work,
            &["commit", "--quiet", "--allow-empty", "-m", message],
        );
        self.push();
        self.head_commit()
    }

    /// A lightweight tag at the current commit.
    pub(crate) fn tag(&self, name: &str) {
        git(&self.work, &["tag", name]);
        self.push();
    }

    /// An annotated tag at the current commit.
    pub(crate) fn annotated_tag(&self, name: &str, message: &str) {
        git(&self.work, &["tag", "-a", name, "-m", message]);
        self.push();
    }

    /// Creates the branch `name` at the current commit and switches to it, so the next
    /// commits go there.
    pub(crate) fn branch(&self, name: &str) {
        git(&self.work, &["switch", "--quiet", "-c", name]);
        self.push();
    }

    /// Switches the work repository to an existing branch.
    pub(crate) fn switch(&self, name: &str) {
        git(&self.work, &["switch", "--quiet", name]);
    }

    /// The commit the work repository's HEAD is at.
    pub(crate) fn head_commit(&self) -> String {
        self.rev_parse("HEAD")
    }

    /// The full commit id `rev` names (tags are peeled).
    pub(crate) fn rev_parse(&self, rev: &str) -> String {
        git(&self.work, &["rev-parse", &format!("{rev}^{{commit}}")])
    }

    /// Adds `sub` as a submodule at `path`, with `url` as its URL in `.gitmodules` (relative,
    /// a served URL, a path...), commits and pushes. The work repository's own checkout of
    /// the submodule comes from `sub`'s bare path (git >= 2.38 refuses local submodules
    /// unless `protocol.file.allow=always`). Returns the new commit id.
    pub(crate) fn add_submodule(&self, path: &str, sub: &Repo, url: &str) -> String {
        git(
            &self.work,
            &[
                "-c",
                "protocol.file.allow=always",
                "submodule",
                "add",
                "--quiet",
                sub.bare.to_str().unwrap(),
                path,
            ],
        );
        git(
            &self.work,
            &[
                "config",
                "--file",
                ".gitmodules",
                &format!("submodule.{path}.url"),
                url,
            ],
        );
        self.commit_with(&format!("add submodule {path}"), |_| {})
    }

    /// Points the gitlink at `path` to `commit` (which need not exist anywhere), commits that
    /// alone and pushes. Later [`Repo::commit_with`] calls would stage the work repository's
    /// checkout of the submodule again. Returns the new commit id.
    pub(crate) fn set_gitlink(&self, path: &str, commit: &str) -> String {
        git(
            &self.work,
            &[
                "update-index",
                "--add",
                "--cacheinfo",
                &format!("160000,{commit},{path}"),
            ],
        );
        git(
            &self.work,
            &["commit", "--quiet", "-m", &format!("move {path}")],
        );
        self.push();
        self.head_commit()
    }

    /// Mirrors every branch and tag of the work repository into the bare one.
    fn push(&self) {
        git(&self.work, &["push", "--quiet", "--mirror", "origin"]);
    }
}

/// Copies `src` into the existing folder `dst`, keeping modes and symbolic links.
fn copy_tree(src: &Path, dst: &Path) {
    for entry in walkdir::WalkDir::new(src).min_depth(1).follow_links(false) {
        let entry = entry.unwrap();
        let to = dst.join(entry.path().strip_prefix(src).unwrap());
        let kind = entry.file_type();
        if kind.is_dir() {
            fs::create_dir_all(&to).unwrap();
        } else if kind.is_symlink() {
            std::os::unix::fs::symlink(fs::read_link(entry.path()).unwrap(), &to).unwrap();
        } else {
            fs::copy(entry.path(), &to).unwrap();
        }
    }
}

/// A command running git's helper program `git-<name>` directly from git's exec path, so
/// killing it kills the program itself (`git <name>` would run it as a child of the `git`
/// wrapper, which a kill would orphan). Falls back to `git <name>`.
fn git_program(name: &str) -> Command {
    let exec_path = Command::new("git")
        .arg("--exec-path")
        .stdin(Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    match exec_path.map(|dir| dir.join(format!("git-{name}"))) {
        Some(program) if program.is_file() => Command::new(program),
        _ => {
            let mut cmd = Command::new("git");
            cmd.arg(name);
            cmd
        }
    }
}

/// A port on 127.0.0.1 that was free a moment ago (nothing listens on it now).
pub(crate) fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Waits until something accepts connections on `addr`, or the deadline passes.
fn wait_for_port(addr: SocketAddr, deadline: Instant) -> bool {
    while Instant::now() < deadline {
        if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            return true;
        }
        thread::sleep(Duration::from_millis(25));
    }
    false
}

// ---------------------------------------------------------------------------------------------
// git daemon

/// `git daemon` serving every repository under a root on 127.0.0.1; killed on drop.
pub(crate) struct GitDaemon {
    child: Child,
    pub port: u16,
}

impl GitDaemon {
    /// Starts the daemon on a free port and waits until it accepts connections.
    pub(crate) fn start(root: &Path) -> GitDaemon {
        GitDaemon::start_with_hook(root, None)
    }

    /// Like [`GitDaemon::start`], appending a line (`<service> <path>`) to `log` for every
    /// connection a client makes (the daemon's access hook).
    pub(crate) fn start_logging(root: &Path, log: &Path) -> GitDaemon {
        let hook = root.with_file_name("access-hook.sh");
        super::write_executable(
            &hook,
            &format!("#!/bin/sh\necho \"$1 $2\" >> '{}'\n", log.display()),
        );
        GitDaemon::start_with_hook(root, Some(&hook))
    }

    fn start_with_hook(root: &Path, hook: Option<&Path>) -> GitDaemon {
        let mut last_error = String::new();
        // The free port may be taken between the probe and the daemon's bind: retry a few times.
        for _ in 0..5 {
            let port = free_port();
            let mut child = git_program("daemon")
                .arg("--reuseaddr")
                .arg("--export-all")
                .arg(format!("--base-path={}", root.display()))
                .arg("--listen=127.0.0.1")
                .arg(format!("--port={port}"))
                .args(hook.map(|h| format!("--access-hook={}", h.display())))
                .arg(root)
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("cannot start git daemon");
            let addr = SocketAddr::from(([127, 0, 0, 1], port));
            let deadline = Instant::now() + START_TIMEOUT;
            let up = wait_for_port(addr, deadline);
            match child.try_wait() {
                Ok(None) if up => return GitDaemon { child, port },
                Ok(Some(status)) => last_error = format!("git daemon exited: {status}"),
                _ => last_error = format!("git daemon did not listen on {addr} in time"),
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("{last_error}");
    }

    /// `git://127.0.0.1:PORT/<name>.git`.
    pub(crate) fn url(&self, name: &str) -> String {
        format!("git://127.0.0.1:{}/{name}.git", self.port)
    }
}

impl Drop for GitDaemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// ---------------------------------------------------------------------------------------------
// Smart HTTP

/// One request the HTTP server received.
#[derive(Debug, Clone)]
pub(crate) struct Request {
    pub method: String,
    pub path: String,
    pub query: String,
    /// The body as received, after removing any chunked transfer encoding.
    pub body: Vec<u8>,
    /// The value of the `Authorization` header, if any.
    pub authorization: Option<String>,
    /// The status the server answered with.
    pub status: u16,
}

impl Request {
    /// The body as text (lossy), for `contains` checks on pkt-lines.
    pub(crate) fn body_text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

struct Shared {
    root: PathBuf,
    auth: Option<(String, String)>,
    log: Mutex<Vec<Request>>,
}

/// An HTTP/1.1 server on 127.0.0.1 (`tiny_http`, which parses requests and decodes chunked
/// bodies) running `git http-backend` as CGI for every request, one thread per request.
/// Stopped on drop.
pub(crate) struct HttpGit {
    server: Arc<tiny_http::Server>,
    shared: Arc<Shared>,
    port: u16,
    acceptor: Option<JoinHandle<()>>,
}

impl HttpGit {
    /// Serves the repositories under `root` to anyone.
    pub(crate) fn start(root: &Path) -> HttpGit {
        HttpGit::serve(root, None)
    }

    /// Serves the repositories under `root` only to requests with basic-auth `user:password`;
    /// others get 401 with `WWW-Authenticate: Basic realm="git"`.
    pub(crate) fn with_auth(root: &Path, user: &str, password: &str) -> HttpGit {
        HttpGit::serve(root, Some((user.to_string(), password.to_string())))
    }

    fn serve(root: &Path, auth: Option<(String, String)>) -> HttpGit {
        let server = Arc::new(
            tiny_http::Server::http("127.0.0.1:0")
                .unwrap_or_else(|e| panic!("cannot start the HTTP git server: {e}")),
        );
        let port = server.server_addr().to_ip().unwrap().port();
        let shared = Arc::new(Shared {
            root: root.to_path_buf(),
            auth,
            log: Mutex::new(Vec::new()),
        });
        let (requests, for_thread) = (Arc::clone(&server), Arc::clone(&shared));
        let acceptor = thread::spawn(move || {
            for request in requests.incoming_requests() {
                let shared = Arc::clone(&for_thread);
                // Request threads are bounded by the CGI timeout; they are not joined.
                thread::spawn(move || answer(request, &shared));
            }
        });
        HttpGit {
            server,
            shared,
            port,
            acceptor: Some(acceptor),
        }
    }

    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    /// `http://127.0.0.1:PORT/<name>.git`.
    pub(crate) fn url(&self, name: &str) -> String {
        format!("http://127.0.0.1:{}/{name}.git", self.port())
    }

    /// `http://user:password@127.0.0.1:PORT/<name>.git`.
    pub(crate) fn url_with_credentials(&self, name: &str, user: &str, password: &str) -> String {
        format!(
            "http://{user}:{password}@127.0.0.1:{}/{name}.git",
            self.port()
        )
    }

    /// Every request received so far.
    pub(crate) fn requests(&self) -> Vec<Request> {
        self.shared.log.lock().unwrap().clone()
    }
}

impl Drop for HttpGit {
    fn drop(&mut self) {
        // Ends `incoming_requests`, so the acceptor returns.
        self.server.unblock();
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
    }
}

/// The value of the request's header `name`, if it has one.
fn header(request: &tiny_http::Request, name: &'static str) -> Option<String> {
    request
        .headers()
        .iter()
        .find(|h| h.field.equiv(name))
        .map(|h| h.value.to_string())
}

/// A short plain-text answer.
fn text_response(status: u16, text: &str) -> tiny_http::Response<io::Cursor<Vec<u8>>> {
    tiny_http::Response::from_string(text)
        .with_status_code(status)
        .with_header(tiny_http::Header::from_bytes("Content-Type", "text/plain").unwrap())
}

/// Checks basic auth if the server wants it, runs `git http-backend` and streams its answer;
/// logs the request with the status it gets.
fn answer(mut request: tiny_http::Request, shared: &Shared) {
    let mut body = Vec::new();
    if let Err(e) = request.as_reader().read_to_end(&mut body) {
        let _ = request.respond(text_response(400, &format!("cannot read the body: {e}\n")));
        return;
    }
    let (path, query) = request.url().split_once('?').unwrap_or((request.url(), ""));
    let mut entry = Request {
        method: request.method().to_string(),
        path: path.to_string(),
        query: query.to_string(),
        body,
        authorization: header(&request, "Authorization"),
        status: 0,
    };
    let log = |entry: Request| shared.log.lock().unwrap().push(entry);
    if let Some((user, password)) = &shared.auth {
        let expected = format!("Basic {}", base64(format!("{user}:{password}").as_bytes()));
        if entry.authorization.as_deref() != Some(expected.as_str()) {
            entry.status = 401;
            log(entry);
            let challenge =
                tiny_http::Header::from_bytes("WWW-Authenticate", "Basic realm=\"git\"").unwrap();
            let _ = request
                .respond(text_response(401, "authentication required\n").with_header(challenge));
            return;
        }
    }
    match run_backend(shared, &request, &entry.body) {
        Ok((status, headers, out)) => {
            entry.status = status;
            log(entry);
            let response = tiny_http::Response::new(status.into(), headers, out, None, None);
            let _ = request.respond(response);
        }
        Err(e) => {
            entry.status = 500;
            log(entry);
            let _ = request.respond(text_response(
                500,
                &format!("git http-backend failed: {e}\n"),
            ));
        }
    }
}

/// Starts `git http-backend` for `request` (CGI, RFC 3875: the request in meta-variables,
/// its body on stdin), reads the CGI header, and returns the status, the headers for the
/// HTTP answer and the rest of the program's output, still being written. The program is
/// killed if it runs longer than [`CGI_TIMEOUT`].
fn run_backend(
    shared: &Shared,
    request: &tiny_http::Request,
    body: &[u8],
) -> io::Result<(u16, Vec<tiny_http::Header>, BufReader<ChildStdout>)> {
    let mut cmd = git_program("http-backend");
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &shared.root)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_PROJECT_ROOT", &shared.root)
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .envs(meta_variables(request, body.len()));
    if let Some((user, _)) = &shared.auth {
        cmd.env("REMOTE_USER", user).env("AUTH_TYPE", "Basic");
    }
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let mut stdin = child.stdin.take().unwrap();
    let input = body.to_vec();
    // Written from a thread: the program may answer before it has read everything.
    thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    thread::spawn(move || kill_after(child, CGI_TIMEOUT));
    let (status, headers) = read_cgi_header(&mut stdout)?;
    Ok((status, headers, stdout))
}

/// The CGI meta-variables of `request` (RFC 3875 section 4.1): the request line, the body's
/// length and type, and every other header as `HTTP_<NAME>` (`Git-Protocol` reaches
/// http-backend as `HTTP_GIT_PROTOCOL`, `Content-Encoding: gzip` as `HTTP_CONTENT_ENCODING`).
fn meta_variables(request: &tiny_http::Request, body_len: usize) -> Vec<(String, String)> {
    let (path, query) = request.url().split_once('?').unwrap_or((request.url(), ""));
    let version = request.http_version();
    let mut vars = vec![
        ("GATEWAY_INTERFACE".into(), "CGI/1.1".into()),
        (
            "SERVER_PROTOCOL".into(),
            format!("HTTP/{}.{}", version.0, version.1),
        ),
        ("SERVER_SOFTWARE".into(), "tiny_http".into()),
        ("REQUEST_METHOD".into(), request.method().to_string()),
        ("SCRIPT_NAME".into(), String::new()),
        ("PATH_INFO".into(), path.to_string()),
        ("QUERY_STRING".into(), query.to_string()),
        ("REMOTE_ADDR".into(), "127.0.0.1".into()),
    ];
    if body_len > 0 {
        vars.push(("CONTENT_LENGTH".into(), body_len.to_string()));
    }
    for h in request.headers() {
        let name = h
            .field
            .as_str()
            .as_str()
            .to_ascii_uppercase()
            .replace('-', "_");
        match name.as_str() {
            "CONTENT_TYPE" => vars.push((name, h.value.to_string())),
            // The body is passed on decoded, whole; credentials stay with the server.
            "CONTENT_LENGTH" | "TRANSFER_ENCODING" | "AUTHORIZATION" => {}
            _ => vars.push((format!("HTTP_{name}"), h.value.to_string())),
        }
    }
    vars
}

/// Waits for `child`, killing it once `limit` has passed.
fn kill_after(mut child: Child, limit: Duration) {
    let deadline = Instant::now() + limit;
    while matches!(child.try_wait(), Ok(None)) {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return;
        }
        thread::sleep(Duration::from_millis(10));
    }
}

/// Reads a CGI header (up to the blank line) into the HTTP status (from `Status`, else 302
/// with a `Location`, else 200) and the other headers.
fn read_cgi_header(out: &mut impl BufRead) -> io::Result<(u16, Vec<tiny_http::Header>)> {
    let bad = |what: String| io::Error::new(io::ErrorKind::InvalidData, what);
    let (mut status, mut headers, mut read) = (None, Vec::new(), 0);
    loop {
        let mut line = String::new();
        if out.read_line(&mut line)? == 0 {
            return Err(bad("the CGI output ended before its header did".into()));
        }
        read += line.len();
        if read > 64 * 1024 {
            return Err(bad("the CGI header is longer than 64 KiB".into()));
        }
        let line = line.trim_end_matches(['\r', '\n']);
        if line.is_empty() {
            break;
        }
        let (name, value) = line
            .split_once(':')
            .ok_or_else(|| bad(format!("bad CGI header line {line:?}")))?;
        let value = value.trim();
        if name.eq_ignore_ascii_case("status") {
            let code = value.split_whitespace().next().and_then(|c| c.parse().ok());
            status = Some(code.ok_or_else(|| bad(format!("bad CGI status {value:?}")))?);
            continue;
        }
        if name.eq_ignore_ascii_case("location") && status.is_none() {
            status = Some(302);
        }
        let header = tiny_http::Header::from_bytes(name.trim(), value)
            .map_err(|()| bad(format!("bad CGI header line {line:?}")))?;
        headers.push(header);
    }
    Ok((status.unwrap_or(200), headers))
}

/// Standard base64 with padding.
pub(crate) fn base64(input: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(input)
}

// ---------------------------------------------------------------------------------------------
// https

/// The TLS front of [`Https`]: accepts TLS connections with the certificate of
/// `tests/cli/tls/server.pem` (issued for 127.0.0.1 by `tls/ca.pem`, valid 2000-2200) and
/// relays each to the plain HTTP server, both ways.
const TLS_FRONT: &str = r#"
import socket, ssl, sys, threading
cert, key, upstream = sys.argv[1], sys.argv[2], int(sys.argv[3])
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
listener = socket.create_server(("127.0.0.1", 0))
print(listener.getsockname()[1], flush=True)
def relay(a, b):
    try:
        while data := a.recv(65536):
            b.sendall(data)
    except OSError:
        pass
    for s in (a, b):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
def serve(client):
    try:
        tls = ctx.wrap_socket(client, server_side=True)
    except (OSError, ssl.SSLError):
        client.close()
        return
    plain = socket.create_connection(("127.0.0.1", upstream))
    threading.Thread(target=relay, args=(tls, plain), daemon=True).start()
    relay(plain, tls)
while True:
    client, _ = listener.accept()
    threading.Thread(target=serve, args=(client,), daemon=True).start()
"#;

/// The certificate folder of the https server.
pub(crate) fn tls_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cli/tls")
}

/// [`HttpGit`] behind TLS (a python3 relay, killed on drop): `https://127.0.0.1:PORT/`,
/// trusted by a client whose bundle is `tls_dir()/ca.pem`.
pub(crate) struct Https {
    pub http: HttpGit,
    relay: Child,
    port: u16,
}

impl Https {
    pub(crate) fn start(root: &Path) -> Https {
        let http = HttpGit::start(root);
        let tls = tls_dir();
        let mut relay = Command::new("python3")
            .arg("-c")
            .arg(TLS_FRONT)
            .arg(tls.join("server.pem"))
            .arg(tls.join("server.key"))
            .arg(http.port().to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("cannot start python3");
        let mut line = String::new();
        let stdout = relay.stdout.take().expect("piped");
        BufReader::new(stdout).read_line(&mut line).unwrap();
        let port = line.trim().parse().expect("the relay's port");
        Https { http, relay, port }
    }

    /// `https://127.0.0.1:PORT/<name>.git`.
    pub(crate) fn url(&self, name: &str) -> String {
        format!("https://127.0.0.1:{}/{name}.git", self.port)
    }
}

impl Drop for Https {
    fn drop(&mut self) {
        let _ = self.relay.kill();
        let _ = self.relay.wait();
    }
}

// ---------------------------------------------------------------------------------------------
// sshd

/// Where Debian's OpenSSH server lives; sshd refuses to start from a relative path.
pub(crate) const SSHD: &str = "/usr/sbin/sshd";

/// Runs `ssh-keygen args`; panics on failure.
fn ssh_keygen(args: &[&str]) {
    let output = Command::new("ssh-keygen")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("cannot run ssh-keygen");
    assert!(
        output.status.success(),
        "ssh-keygen {args:?} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A fresh passphrase-less ed25519 key pair `<dir>/<name>` and `<dir>/<name>.pub`.
pub(crate) fn ssh_key(dir: &Path, name: &str) -> PathBuf {
    fs::create_dir_all(dir).unwrap();
    let key = dir.join(name);
    ssh_keygen(&[
        "-q",
        "-t",
        "ed25519",
        "-N",
        "",
        "-C",
        name,
        "-f",
        key.to_str().unwrap(),
    ]);
    key
}

/// The name of the user running the tests (the one sshd lets in).
pub(crate) fn user_name() -> String {
    let output = Command::new("id")
        .arg("-un")
        .stdin(Stdio::null())
        .output()
        .expect("cannot run id -un");
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

/// An OpenSSH server on 127.0.0.1 with its own host key, letting the current user in with
/// the keys written to its authorized keys file only; killed on drop.
pub(crate) struct Sshd {
    child: Child,
    dir: TempDir,
    pub port: u16,
    /// The public host key line (`ssh-ed25519 AAAA... comment`).
    pub host_key: String,
}

impl Sshd {
    /// Starts sshd on a free port, accepting the public keys of `authorized` (private key
    /// paths; `.pub` is added), and waits until it accepts connections.
    pub(crate) fn start(authorized: &[&Path]) -> Sshd {
        let dir = tempfile::tempdir().unwrap();
        let base = fs::canonicalize(dir.path()).unwrap();
        let host_key = ssh_key(&base, "host_key");
        let mut keys = String::new();
        for key in authorized {
            keys.push_str(&fs::read_to_string(key.with_extension("pub")).unwrap());
        }
        let authorized_keys = base.join("authorized_keys");
        fs::write(&authorized_keys, keys).unwrap();
        // A privileged sshd needs its privilege separation folder (systemd makes it normally).
        if crate::support::is_root() {
            let _ = fs::create_dir_all("/run/sshd");
        }
        let log = base.join("sshd.log");
        let mut last_error = String::new();
        // The free port may be taken between the probe and sshd's bind: retry a few times.
        for _ in 0..5 {
            let port = free_port();
            let config = base.join("sshd_config");
            fs::write(
                &config,
                format!(
                    "ListenAddress 127.0.0.1\nPort {port}\nHostKey {}\nAuthorizedKeysFile {}\n\
                     PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n\
                     StrictModes no\nPidFile none\nPermitRootLogin prohibit-password\n\
                     LogLevel ERROR\n",
                    host_key.display(),
                    authorized_keys.display()
                ),
            )
            .unwrap();
            let mut child = Command::new(SSHD)
                .arg("-D")
                .arg("-e")
                .arg("-f")
                .arg(&config)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(fs::File::create(&log).unwrap())
                .spawn()
                .expect("cannot start sshd");
            let addr = SocketAddr::from(([127, 0, 0, 1], port));
            let up = wait_for_port(addr, Instant::now() + START_TIMEOUT);
            match child.try_wait() {
                Ok(None) if up => {
                    let host_key = fs::read_to_string(host_key.with_extension("pub"))
                        .unwrap()
                        .trim()
                        .to_string();
                    return Sshd {
                        child,
                        dir,
                        port,
                        host_key,
                    };
                }
                Ok(Some(status)) => last_error = format!("sshd exited: {status}"),
                _ => last_error = format!("sshd did not listen on {addr} in time"),
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        let log = fs::read_to_string(&log).unwrap_or_default();
        panic!("{last_error}\n{log}");
    }

    /// `ssh://<user>@127.0.0.1:PORT<bare>`.
    pub(crate) fn url(&self, bare: &Path) -> String {
        format!(
            "ssh://{}@127.0.0.1:{}{}",
            user_name(),
            self.port,
            bare.display()
        )
    }

    /// The `known_hosts` line for this server: `[127.0.0.1]:PORT <key type> <key>`.
    pub(crate) fn known_hosts_line(&self) -> String {
        let mut fields = self.host_key.split_whitespace();
        let (kind, key) = (fields.next().unwrap(), fields.next().unwrap());
        format!("[127.0.0.1]:{} {kind} {key}", self.port)
    }

    /// The host key's fingerprint as ssh shows it: `SHA256:<base64>`.
    pub(crate) fn fingerprint(&self) -> String {
        let output = Command::new("ssh-keygen")
            .arg("-l")
            .arg("-f")
            .arg(self.dir.path().join("host_key.pub"))
            .stdin(Stdio::null())
            .output()
            .expect("cannot run ssh-keygen");
        let text = String::from_utf8_lossy(&output.stdout);
        text.split_whitespace()
            .nth(1)
            .unwrap_or_default()
            .to_string()
    }

    /// What sshd logged so far (errors only), for failure messages.
    pub(crate) fn log(&self) -> String {
        fs::read_to_string(self.dir.path().join("sshd.log")).unwrap_or_default()
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An `ssh-agent` listening on a socket in a temporary folder, in the foreground so its
/// pid is the child's; killed on drop.
pub(crate) struct SshAgent {
    child: Child,
    _dir: TempDir,
    pub socket: PathBuf,
}

impl SshAgent {
    /// Starts an agent holding the private key `key`.
    pub(crate) fn with_key(key: &Path) -> SshAgent {
        let dir = tempfile::tempdir().unwrap();
        let socket = fs::canonicalize(dir.path()).unwrap().join("agent.sock");
        let child = Command::new("ssh-agent")
            .arg("-D")
            .arg("-a")
            .arg(&socket)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("cannot start ssh-agent");
        let mut agent = SshAgent {
            child,
            _dir: dir,
            socket,
        };
        let deadline = Instant::now() + START_TIMEOUT;
        while !agent.socket.exists() {
            assert!(
                !(Instant::now() > deadline || agent.child.try_wait().unwrap().is_some()),
                "ssh-agent did not create {}",
                agent.socket.display()
            );
            thread::sleep(Duration::from_millis(10));
        }
        let output = Command::new("ssh-add")
            .arg(key)
            .env("SSH_AUTH_SOCK", &agent.socket)
            .stdin(Stdio::null())
            .output()
            .expect("cannot run ssh-add");
        assert!(
            output.status.success(),
            "ssh-add failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        agent
    }
}

impl Drop for SshAgent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
