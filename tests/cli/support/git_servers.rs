//! Real git servers for integration tests, all on 127.0.0.1: bare repository fixtures built
//! with the `git` CLI, `git daemon` (git://), and a small HTTP/1.1 server that runs
//! `git http-backend` as CGI (smart HTTP), optionally behind basic auth, logging requests.
//!
//! Everything is bounded: sockets have read and write timeouts, servers are waited for a few
//! seconds at most, and dropping a server stops it.

use std::collections::HashMap;
use std::fs;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use tempfile::TempDir;

/// How long a server may take to start accepting connections.
const START_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a connection may stay silent before the server gives up on it.
const IO_TIMEOUT: Duration = Duration::from_secs(20);
/// How long `git http-backend` may run for one request.
const CGI_TIMEOUT: Duration = Duration::from_secs(30);

// ---------------------------------------------------------------------------------------------
// Repository fixtures

/// Runs `git` with a fixed identity and default branch in `dir`; panics on failure and returns
/// trimmed stdout.
pub fn git(dir: &Path, args: &[&str]) -> String {
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
pub struct Repo {
    _work_tmp: TempDir,
    /// The work tree the commits are made in.
    pub work: PathBuf,
    /// The bare repository under the served root.
    pub bare: PathBuf,
    pub name: String,
}

impl Repo {
    /// An empty bare repository `<root>/<name>.git` (no commits yet) and its work repository.
    pub fn empty(root: &Path, name: &str) -> Repo {
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
    pub fn from_dir(root: &Path, name: &str, src: &Path) -> Repo {
        let repo = Repo::empty(root, name);
        repo.commit_with("initial", |work| copy_tree(src, work));
        repo
    }

    /// A bare repository whose first commit holds `files` (path, text).
    pub fn with_files(root: &Path, name: &str, files: &[(&str, &str)]) -> Repo {
        let repo = Repo::empty(root, name);
        repo.commit(files);
        repo
    }

    /// Writes `files` (path, text; parents created) into the work tree, commits everything
    /// and pushes. Returns the new commit id.
    pub fn commit(&self, files: &[(&str, &str)]) -> String {
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
    pub fn commit_with(&self, message: &str, change: impl FnOnce(&Path)) -> String {
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
    pub fn tag(&self, name: &str) {
        git(&self.work, &["tag", name]);
        self.push();
    }

    /// An annotated tag at the current commit.
    pub fn annotated_tag(&self, name: &str, message: &str) {
        git(&self.work, &["tag", "-a", name, "-m", message]);
        self.push();
    }

    /// Creates the branch `name` at the current commit and switches to it, so the next
    /// commits go there.
    pub fn branch(&self, name: &str) {
        git(&self.work, &["switch", "--quiet", "-c", name]);
        self.push();
    }

    /// Switches the work repository to an existing branch.
    pub fn switch(&self, name: &str) {
        git(&self.work, &["switch", "--quiet", name]);
    }

    /// The commit the work repository's HEAD is at.
    pub fn head_commit(&self) -> String {
        self.rev_parse("HEAD")
    }

    /// The full commit id `rev` names (tags are peeled).
    pub fn rev_parse(&self, rev: &str) -> String {
        git(&self.work, &["rev-parse", &format!("{rev}^{{commit}}")])
    }

    /// Adds `sub` as a submodule at `path`, with `url` as its URL in `.gitmodules` (relative,
    /// a served URL, a path...), commits and pushes. The work repository's own checkout of
    /// the submodule comes from `sub`'s bare path (git >= 2.38 refuses local submodules
    /// unless `protocol.file.allow=always`). Returns the new commit id.
    pub fn add_submodule(&self, path: &str, sub: &Repo, url: &str) -> String {
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
    pub fn set_gitlink(&self, path: &str, commit: &str) -> String {
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
pub fn free_port() -> u16 {
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
pub struct GitDaemon {
    child: Child,
    pub port: u16,
}

impl GitDaemon {
    /// Starts the daemon on a free port and waits until it accepts connections.
    pub fn start(root: &Path) -> GitDaemon {
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
    pub fn url(&self, name: &str) -> String {
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
pub struct Request {
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
    pub fn body_text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

struct Shared {
    root: PathBuf,
    auth: Option<(String, String)>,
    log: Mutex<Vec<Request>>,
    stop: AtomicBool,
}

/// An HTTP/1.1 server on 127.0.0.1 running `git http-backend` for every request, one thread
/// per connection, `Connection: close` after each answer. Stopped on drop.
pub struct HttpGit {
    shared: Arc<Shared>,
    addr: SocketAddr,
    acceptor: Option<JoinHandle<()>>,
}

impl HttpGit {
    /// Serves the repositories under `root` to anyone.
    pub fn start(root: &Path) -> HttpGit {
        HttpGit::serve(root, None)
    }

    /// Serves the repositories under `root` only to requests with basic-auth `user:password`;
    /// others get 401 with `WWW-Authenticate: Basic realm="git"`.
    pub fn with_auth(root: &Path, user: &str, password: &str) -> HttpGit {
        HttpGit::serve(root, Some((user.to_string(), password.to_string())))
    }

    fn serve(root: &Path, auth: Option<(String, String)>) -> HttpGit {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let shared = Arc::new(Shared {
            root: root.to_path_buf(),
            auth,
            log: Mutex::new(Vec::new()),
            stop: AtomicBool::new(false),
        });
        let for_thread = Arc::clone(&shared);
        let acceptor = thread::spawn(move || accept_loop(listener, for_thread));
        assert!(
            wait_for_port(addr, Instant::now() + START_TIMEOUT),
            "the HTTP git server did not start"
        );
        HttpGit {
            shared,
            addr,
            acceptor: Some(acceptor),
        }
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// `http://127.0.0.1:PORT/<name>.git`.
    pub fn url(&self, name: &str) -> String {
        format!("http://127.0.0.1:{}/{name}.git", self.port())
    }

    /// `http://user:password@127.0.0.1:PORT/<name>.git`.
    pub fn url_with_credentials(&self, name: &str, user: &str, password: &str) -> String {
        format!(
            "http://{user}:{password}@127.0.0.1:{}/{name}.git",
            self.port()
        )
    }

    /// Every request received so far (the self-connects of startup and shutdown excluded).
    pub fn requests(&self) -> Vec<Request> {
        self.shared.log.lock().unwrap().clone()
    }
}

impl Drop for HttpGit {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // Unblock accept(); the loop sees the flag and returns.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
    }
}

fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    for stream in listener.incoming() {
        if shared.stop.load(Ordering::SeqCst) {
            return;
        }
        let Ok(stream) = stream else { continue };
        let shared = Arc::clone(&shared);
        // Connection threads are bounded by socket and CGI timeouts; they are not joined.
        thread::spawn(move || {
            let _ = handle(stream, &shared);
        });
    }
}

/// A parsed request head.
struct Head {
    method: String,
    path: String,
    query: String,
    headers: HashMap<String, String>,
}

fn handle(stream: TcpStream, shared: &Shared) -> io::Result<()> {
    stream.set_read_timeout(Some(IO_TIMEOUT))?;
    stream.set_write_timeout(Some(IO_TIMEOUT))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut writer = stream;
    // Startup probes and the shutdown self-connect close without sending anything.
    let Some(head) = read_head(&mut reader)? else {
        return Ok(());
    };
    let body = read_body(&mut reader, &head.headers)?;
    let authorization = head.headers.get("authorization").cloned();
    let log = |status: u16| {
        shared.log.lock().unwrap().push(Request {
            method: head.method.clone(),
            path: head.path.clone(),
            query: head.query.clone(),
            body: body.clone(),
            authorization: authorization.clone(),
            status,
        });
    };
    if let Some((user, password)) = &shared.auth {
        let expected = format!("Basic {}", base64(format!("{user}:{password}").as_bytes()));
        if authorization.as_deref() != Some(expected.as_str()) {
            log(401);
            let text = b"authentication required\n";
            write_response(
                &mut writer,
                401,
                &[
                    ("WWW-Authenticate".into(), "Basic realm=\"git\"".into()),
                    ("Content-Type".into(), "text/plain".into()),
                ],
                text,
            )?;
            return Ok(());
        }
    }
    let (status, headers, out) = match run_backend(shared, &head, &body) {
        Ok(answer) => answer,
        Err(e) => (
            500,
            vec![("Content-Type".into(), "text/plain".into())],
            format!("git http-backend failed: {e}\n").into_bytes(),
        ),
    };
    log(status);
    write_response(&mut writer, status, &headers, &out)?;
    let _ = writer.shutdown(Shutdown::Write);
    Ok(())
}

/// Reads the request line and headers; `None` when the client closed without sending any.
fn read_head(reader: &mut impl BufRead) -> io::Result<Option<Head>> {
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    let mut parts = line.split_whitespace();
    let (Some(method), Some(target)) = (parts.next(), parts.next()) else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("bad request line {line:?}"),
        ));
    };
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let mut head = Head {
        method: method.to_string(),
        path: path.to_string(),
        query: query.to_string(),
        headers: HashMap::new(),
    };
    let mut total = line.len();
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        total += line.len();
        if total > 64 * 1024 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "request head too large",
            ));
        }
        let trimmed = line.trim_end_matches(['\r', '\n']);
        if trimmed.is_empty() {
            return Ok(Some(head));
        }
        if let Some((name, value)) = trimmed.split_once(':') {
            head.headers
                .insert(name.trim().to_ascii_lowercase(), value.trim().to_string());
        }
    }
}

/// Reads a `Content-Length` or `Transfer-Encoding: chunked` body (decoded).
fn read_body(reader: &mut impl BufRead, headers: &HashMap<String, String>) -> io::Result<Vec<u8>> {
    let chunked = headers
        .get("transfer-encoding")
        .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
    if chunked {
        let mut body = Vec::new();
        let mut line = String::new();
        loop {
            line.clear();
            reader.read_line(&mut line)?;
            let size = line.trim().split(';').next().unwrap_or("");
            let size = usize::from_str_radix(size, 16).map_err(|_| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("bad chunk size {line:?}"),
                )
            })?;
            if size == 0 {
                // Trailers, up to the blank line.
                loop {
                    line.clear();
                    if reader.read_line(&mut line)? == 0 || line.trim().is_empty() {
                        return Ok(body);
                    }
                }
            }
            let start = body.len();
            body.resize(start + size, 0);
            reader.read_exact(&mut body[start..])?;
            line.clear();
            reader.read_line(&mut line)?;
        }
    }
    let length: usize = match headers.get("content-length") {
        Some(v) => v
            .parse()
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "bad Content-Length"))?,
        None => 0,
    };
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    Ok(body)
}

type Answer = (u16, Vec<(String, String)>, Vec<u8>);

/// Runs `git http-backend` for one request and parses its CGI answer.
fn run_backend(shared: &Shared, head: &Head, body: &[u8]) -> io::Result<Answer> {
    let mut cmd = git_program("http-backend");
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &shared.root)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_PROJECT_ROOT", &shared.root)
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("GATEWAY_INTERFACE", "CGI/1.1")
        .env("SERVER_PROTOCOL", "HTTP/1.1")
        .env("REQUEST_METHOD", &head.method)
        .env("PATH_INFO", &head.path)
        .env("QUERY_STRING", &head.query)
        .env("CONTENT_LENGTH", body.len().to_string())
        .env("REMOTE_ADDR", "127.0.0.1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if let Some(kind) = head.headers.get("content-type") {
        cmd.env("CONTENT_TYPE", kind);
    }
    if let Some(protocol) = head.headers.get("git-protocol") {
        cmd.env("GIT_PROTOCOL", protocol);
    }
    // http-backend inflates gzip bodies itself when told so.
    if let Some(encoding) = head.headers.get("content-encoding") {
        cmd.env("HTTP_CONTENT_ENCODING", encoding);
    }
    if let Some((user, _)) = &shared.auth {
        cmd.env("REMOTE_USER", user);
        cmd.env("AUTH_TYPE", "Basic");
    }
    let mut child = cmd.spawn()?;
    let mut stdin = child.stdin.take().unwrap();
    let input = body.to_vec();
    let writer = thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let mut stdout = child.stdout.take().unwrap();
    let reader = thread::spawn(move || {
        let mut out = Vec::new();
        let _ = stdout.read_to_end(&mut out);
        out
    });
    let deadline = Instant::now() + CGI_TIMEOUT;
    loop {
        if child.try_wait()?.is_some() {
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "git http-backend timed out",
            ));
        }
        thread::sleep(Duration::from_millis(5));
    }
    let _ = writer.join();
    let out = reader.join().unwrap();
    parse_cgi(&out)
}

/// Splits a CGI answer into status, headers (without `Status`/`Content-Length`) and body.
fn parse_cgi(out: &[u8]) -> io::Result<Answer> {
    let (head_end, body_start) = if let Some(i) = find(out, b"\r\n\r\n") {
        (i, i + 4)
    } else if let Some(i) = find(out, b"\n\n") {
        (i, i + 2)
    } else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("no CGI headers in {:?}", String::from_utf8_lossy(out)),
        ));
    };
    let mut status = 200;
    let mut headers = Vec::new();
    for line in String::from_utf8_lossy(&out[..head_end]).lines() {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let (name, value) = (name.trim(), value.trim());
        if name.eq_ignore_ascii_case("status") {
            status = value
                .split_whitespace()
                .next()
                .and_then(|code| code.parse().ok())
                .unwrap_or(500);
        } else if !name.eq_ignore_ascii_case("content-length") {
            headers.push((name.to_string(), value.to_string()));
        }
    }
    Ok((status, headers, out[body_start..].to_vec()))
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        304 => "Not Modified",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        415 => "Unsupported Media Type",
        500 => "Internal Server Error",
        _ => "Unknown",
    }
}

fn write_response(
    out: &mut impl Write,
    status: u16,
    headers: &[(String, String)],
    body: &[u8],
) -> io::Result<()> {
    let mut head = format!("HTTP/1.1 {status} {}\r\n", reason(status));
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    ));
    out.write_all(head.as_bytes())?;
    out.write_all(body)?;
    out.flush()
}

/// Standard base64 with padding.
pub fn base64(input: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(input)
}

// ---------------------------------------------------------------------------------------------
// sshd

/// Where Debian's OpenSSH server lives; sshd refuses to start from a relative path.
pub const SSHD: &str = "/usr/sbin/sshd";

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
pub fn ssh_key(dir: &Path, name: &str) -> PathBuf {
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
pub fn user_name() -> String {
    let output = Command::new("id")
        .arg("-un")
        .stdin(Stdio::null())
        .output()
        .expect("cannot run id -un");
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

/// An OpenSSH server on 127.0.0.1 with its own host key, letting the current user in with
/// the keys written to its authorized keys file only; killed on drop.
pub struct Sshd {
    child: Child,
    dir: TempDir,
    pub port: u16,
    /// The public host key line (`ssh-ed25519 AAAA... comment`).
    pub host_key: String,
}

impl Sshd {
    /// Starts sshd on a free port, accepting the public keys of `authorized` (private key
    /// paths; `.pub` is added), and waits until it accepts connections.
    pub fn start(authorized: &[&Path]) -> Sshd {
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
    pub fn url(&self, bare: &Path) -> String {
        format!(
            "ssh://{}@127.0.0.1:{}{}",
            user_name(),
            self.port,
            bare.display()
        )
    }

    /// The known_hosts line for this server: `[127.0.0.1]:PORT <key type> <key>`.
    pub fn known_hosts_line(&self) -> String {
        let mut fields = self.host_key.split_whitespace();
        let (kind, key) = (fields.next().unwrap(), fields.next().unwrap());
        format!("[127.0.0.1]:{} {kind} {key}", self.port)
    }

    /// The host key's fingerprint as ssh shows it: `SHA256:<base64>`.
    pub fn fingerprint(&self) -> String {
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
    pub fn log(&self) -> String {
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
pub struct SshAgent {
    child: Child,
    _dir: TempDir,
    pub socket: PathBuf,
}

impl SshAgent {
    /// Starts an agent holding the private key `key`.
    pub fn with_key(key: &Path) -> SshAgent {
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
            if Instant::now() > deadline || agent.child.try_wait().unwrap().is_some() {
                panic!("ssh-agent did not create {}", agent.socket.display());
            }
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
