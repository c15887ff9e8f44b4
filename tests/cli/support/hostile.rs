//! The hostile-input and resource-failure harness: a world with a populated store in both
//! scopes and a victim folder beside it, a snapshot of every entry under it (type, mode,
//! inode, link target, contents) that never opens a special file, a `zot` runner with a
//! timeout that kills the whole process group, and the table runner that checks each case.

use std::any::Any;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fmt::Write as _;
use std::fs;
use std::hash::{DefaultHasher, Hasher};
use std::io::{Read, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use super::{Done, Env, command_line};

/// How long one `zot` run may take before it counts as a hang.
pub(crate) const RUN_TIMEOUT: Duration = Duration::from_secs(8);

/// The most output kept from one stream (a runaway writer must not fill the test's memory).
const OUTPUT_CAP: usize = 16 << 20;

/// A store (see [`World::new`]) and a victim folder with files beside the roots that no
/// command may touch.
pub(crate) struct World {
    pub env: Env,
    pub victim: PathBuf,
}

impl World {
    /// An empty store and the victim folder.
    pub(crate) fn empty() -> World {
        let env = Env::new();
        let victim = env.home.parent().unwrap().join("victim");
        fs::create_dir_all(victim.join("sub")).unwrap();
        fs::write(victim.join("precious.txt"), "do not touch\n").unwrap();
        fs::write(victim.join("sub/keep.json"), super::manifest("existing")).unwrap();
        fs::set_permissions(victim.join("sub"), fs::Permissions::from_mode(0o750)).unwrap();
        World { env, victim }
    }

    /// [`World::empty`] with `existing` installed globally and `local` in the project.
    pub(crate) fn new() -> World {
        let world = World::empty();
        world.populate();
        world
    }

    /// Installs `existing` globally and `local` in the project.
    pub(crate) fn populate(&self) {
        let world = self;
        for (name, project) in [("existing", false), ("local", true)] {
            let src = world.env.source(&format!("src-{name}"), name);
            let mut args = vec!["ext".into(), "install".into(), src.into_os_string()];
            if project {
                args.push("--project".into());
            }
            world.run(&Prepared::new(args)).success();
        }
    }

    /// The folder holding home, project, work and victim.
    pub(crate) fn base(&self) -> &Path {
        self.env.home.parent().unwrap()
    }

    pub(crate) fn global_state(&self) -> PathBuf {
        self.env.home.join(".ext-store")
    }

    pub(crate) fn project_state(&self) -> PathBuf {
        self.env.project.join(".zot/.ext-store")
    }

    /// `$ZOT_HOME/logs/ext-<name>.log`.
    pub(crate) fn log(&self, name: &str) -> PathBuf {
        self.env.home.join("logs").join(format!("ext-{name}.log"))
    }

    /// Runs a prepared command under [`RUN_TIMEOUT`].
    pub(crate) fn run(&self, prepared: &Prepared) -> Done {
        let mut run = self.env.zot(&prepared.args);
        if let Some(dir) = &prepared.cwd {
            run = run.current_dir(dir);
        }
        for (key, value) in &prepared.env {
            run = run.env(key, value);
        }
        if prepared.unprivileged {
            run = run.unprivileged();
        }
        run_with_timeout(run.cmd, RUN_TIMEOUT)
    }

    /// Runs `zot ext <args>` under the timeout (for setups).
    pub(crate) fn zot(&self, args: &[&str]) -> Done {
        let mut all = vec![OsString::from("ext")];
        all.extend(args.iter().map(OsString::from));
        self.run(&Prepared::new(all))
    }

    pub(crate) fn snapshot(&self) -> Snapshot {
        Snapshot::of(self.base())
    }
}

/// One entry as the snapshot sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    /// file, dir, link, fifo, socket, char, block
    pub kind: &'static str,
    pub mode: u32,
    pub inode: u64,
    /// Link target, or length and hash of a regular file's contents.
    pub detail: String,
}

/// Every entry under a folder, by relative path; links are never followed and special
/// files never opened. Regular lock files are left out (their contents are not state).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Snapshot(pub BTreeMap<String, Entry>);

impl Snapshot {
    pub(crate) fn of(base: &Path) -> Snapshot {
        let mut map = BTreeMap::new();
        walk(base, base, &mut map);
        Snapshot(map)
    }

    /// Paths that differ, with before/after, for messages.
    pub(crate) fn diff(&self, after: &Snapshot) -> Vec<String> {
        let mut out = Vec::new();
        for (path, entry) in &self.0 {
            match after.0.get(path) {
                None => out.push(format!("removed {path} ({})", entry.kind)),
                Some(now) if now != entry => {
                    out.push(format!("changed {path}: {entry:?} -> {now:?}"));
                }
                _ => {}
            }
        }
        for (path, entry) in &after.0 {
            if !self.0.contains_key(path) {
                out.push(format!("added {path} ({})", entry.kind));
            }
        }
        out
    }
}

fn walk(base: &Path, dir: &Path, map: &mut BTreeMap<String, Entry>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let rel = path.strip_prefix(base).unwrap().display().to_string();
        let Ok(meta) = fs::symlink_metadata(&path) else {
            continue;
        };
        let kind = kind_of(meta.file_type());
        if kind == "file" && rel.ends_with(".ext-store/lock") {
            continue;
        }
        let detail = match kind {
            "file" => content_digest(&path, &meta),
            "link" => fs::read_link(&path).unwrap().display().to_string(),
            _ => String::new(),
        };
        map.insert(
            rel,
            Entry {
                kind,
                mode: meta.mode() & 0o7777,
                inode: meta.ino(),
                detail,
            },
        );
        if kind == "dir" {
            walk(base, &path, map);
        }
    }
}

fn kind_of(kind: fs::FileType) -> &'static str {
    if kind.is_symlink() {
        "link"
    } else if kind.is_dir() {
        "dir"
    } else if kind.is_file() {
        "file"
    } else if kind.is_fifo() {
        "fifo"
    } else if kind.is_socket() {
        "socket"
    } else if kind.is_char_device() {
        "char"
    } else {
        "block"
    }
}

fn content_digest(path: &Path, meta: &fs::Metadata) -> String {
    let len = meta.len();
    let mut hasher = DefaultHasher::new();
    let read = if len <= WHOLE_HASH_LIMIT {
        fs::read(path).map(|bytes| hasher.write(&bytes))
    } else {
        // A huge (often sparse) file: its ends and its modification time stand for it.
        hasher.write_i64(meta.mtime());
        hasher.write_i64(meta.mtime_nsec());
        hash_ends(path, len, &mut hasher)
    };
    match read {
        Ok(()) => format!("{len} bytes, hash {:016x}", hasher.finish()),
        Err(e) => format!("{len} bytes, unreadable: {e}"),
    }
}

/// Files up to this size are hashed whole by the snapshot.
const WHOLE_HASH_LIMIT: u64 = 8 << 20;

fn hash_ends(path: &Path, len: u64, hasher: &mut DefaultHasher) -> std::io::Result<()> {
    use std::io::{Seek, SeekFrom};
    let mut file = fs::File::open(path)?;
    let mut buf = vec![0u8; 1 << 20];
    file.read_exact(&mut buf)?;
    hasher.write(&buf);
    file.seek(SeekFrom::Start(len - buf.len() as u64))?;
    file.read_exact(&mut buf)?;
    hasher.write(&buf);
    Ok(())
}

/// Runs `cmd` in its own process group, with stdin closed, and kills the group if it
/// has not finished within `timeout` (the result then has code -1 and says so in stderr).
pub(crate) fn run_with_timeout(mut cmd: Command, timeout: Duration) -> Done {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = cmd.spawn().expect("spawn zot");
    let out = reader(child.stdout.take().unwrap());
    let err = reader(child.stderr.take().unwrap());
    let deadline = Instant::now() + timeout;
    let (code, hung) = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break (status.code().unwrap_or(-1), false);
        }
        if Instant::now() > deadline {
            kill_group(&mut child);
            break (-1, true);
        }
        thread::sleep(Duration::from_millis(5));
    };
    let stdout = out.join().unwrap();
    let mut stderr = err.join().unwrap();
    if hung {
        let _ = write!(stderr, "<killed: no exit within {timeout:?}>");
    }
    Done {
        command: command_line(&cmd),
        code,
        stdout,
        stderr,
    }
}

fn kill_group(child: &mut Child) {
    // The child leads its own group (process_group(0)), so its id is the group's id.
    if let Some(group) = i32::try_from(child.id())
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    {
        let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
    }
    let _ = child.kill();
    let _ = child.wait();
}

fn reader(mut stream: impl Read + Send + 'static) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut kept = Vec::new();
        let mut buf = [0u8; 8192];
        while let Ok(n) = stream.read(&mut buf) {
            if n == 0 {
                break;
            }
            if kept.len() < OUTPUT_CAP {
                kept.extend_from_slice(&buf[..n]);
            }
        }
        String::from_utf8_lossy(&kept).into_owned()
    })
}

/// The command a case runs, and whatever must live while it runs (servers).
pub(crate) struct Prepared {
    pub args: Vec<OsString>,
    pub unprivileged: bool,
    pub cwd: Option<PathBuf>,
    pub env: Vec<(&'static str, OsString)>,
    pub keep: Vec<Box<dyn Any>>,
}

impl Prepared {
    pub(crate) fn new(args: Vec<OsString>) -> Prepared {
        Prepared {
            args,
            unprivileged: false,
            cwd: None,
            env: Vec::new(),
            keep: Vec::new(),
        }
    }

    /// Runs as `nobody` when the tests run as root (see [`Env::open_to_everyone`]).
    pub(crate) fn unprivileged(mut self) -> Prepared {
        self.unprivileged = true;
        self
    }

    pub(crate) fn with_arg(mut self, arg: impl Into<OsString>) -> Prepared {
        self.args.push(arg.into());
        self
    }

    pub(crate) fn in_dir(mut self, dir: PathBuf) -> Prepared {
        self.cwd = Some(dir);
        self
    }

    pub(crate) fn with_env(mut self, key: &'static str, value: impl Into<OsString>) -> Prepared {
        self.env.push((key, value.into()));
        self
    }

    pub(crate) fn keeping(mut self, thing: impl Any) -> Prepared {
        self.keep.push(Box::new(thing));
        self
    }
}

/// `zot ext <args>`.
pub(crate) fn ext<I, S>(args: I) -> Prepared
where
    I: IntoIterator<Item = S>,
    S: Into<OsString>,
{
    let mut all = vec![OsString::from("ext")];
    all.extend(args.into_iter().map(Into::into));
    Prepared::new(all)
}

/// What a case may change when it succeeds.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Changes {
    /// Nothing anywhere (the store and the outside are byte-identical).
    Nothing,
    /// Only entries whose path starts with one of these (relative to the world's base).
    Under(&'static [&'static str]),
}

/// As a case's `code`: exit 0 or 1 are both right (a read-only command may list around
/// the problem, mentioning `existing`, or refuse with one line containing the case's
/// `says`); the nothing-changed rule holds either way.
pub(crate) const EITHER: i32 = -100;

/// What the output of a read-only command that succeeded must mention: the extension
/// every world has installed globally.
const LISTED: &str = "existing";

/// One hostile input: how to prepare it, and what `zot` must answer.
pub(crate) struct Case {
    pub name: &'static str,
    pub setup: fn(&World) -> Prepared,
    pub code: i32,
    /// A substring of the error (or, on success, of stdout or stderr).
    pub says: &'static str,
    /// A string that must appear in no output (a secret).
    pub forbid: Option<&'static str>,
    pub changes: Changes,
    /// The fix this case waits for; the runner skips it (with a note) until the tag is gone.
    /// The tag names the area of the fix: "store" (state folder, lock, manifests written),
    /// "reads" (special files, capped reads), "redact" (secrets and control characters in
    /// output), "git" (repository manifests), "links" (links kept as links).
    pub pending: Option<&'static str>,
}

impl Case {
    /// A refusal: exit `code`, one line on stderr containing `says`, nothing changed.
    pub(crate) fn fails(
        name: &'static str,
        code: i32,
        says: &'static str,
        setup: fn(&World) -> Prepared,
    ) -> Case {
        Case {
            name,
            setup,
            code,
            says,
            forbid: None,
            changes: Changes::Nothing,
            pending: None,
        }
    }

    /// A success that changes nothing (a read-only command on a hostile store).
    /// Exit 0 or 1 (see [`EITHER`]).
    pub(crate) fn either(
        name: &'static str,
        says: &'static str,
        setup: fn(&World) -> Prepared,
    ) -> Case {
        Case::fails(name, EITHER, says, setup)
    }

    pub(crate) fn succeeds(
        name: &'static str,
        says: &'static str,
        setup: fn(&World) -> Prepared,
    ) -> Case {
        Case::fails(name, 0, says, setup)
    }

    pub(crate) fn pending(mut self, owner: &'static str) -> Case {
        self.pending = Some(owner);
        self
    }

    pub(crate) fn forbid(mut self, secret: &'static str) -> Case {
        self.forbid = Some(secret);
        self
    }

    pub(crate) fn changing(mut self, under: &'static [&'static str]) -> Case {
        self.changes = Changes::Under(under);
        self
    }

    /// Runs the case in a fresh world; returns what went wrong, if anything.
    pub(crate) fn check(&self) -> Result<(), String> {
        let world = World::new();
        let prepared = (self.setup)(&world);
        let before = world.snapshot();
        let done = world.run(&prepared);
        let after = world.snapshot();
        if std::env::var_os("ZOT_HOSTILE_SHOW").is_some() {
            let shown = format!("{}: exit {}: {:?}\n", self.name, done.code, done.stderr);
            let _ = std::io::stderr().write_all(shown.as_bytes());
        }
        let mut problems = Vec::new();
        let code_ok = match self.code {
            EITHER => done.code == 0 || done.code == 1,
            code => done.code == code,
        };
        if !code_ok {
            problems.push(format!("exit {} instead of {}", done.code, self.code));
        }
        let lines = done.stderr.lines().count();
        if done.code == 2 {
            // A usage error: clap's first line says what is wrong, a usage block follows.
            let first = done.stderr.lines().next().unwrap_or("");
            if !first.starts_with("error: ") || !first.contains(self.says) {
                problems.push(format!("the first line does not say {:?}", self.says));
            }
        } else if done.code != 0 {
            if lines != 1 || !done.stderr.starts_with("error: ") || !done.stderr.ends_with('\n') {
                problems.push(format!("stderr is not one `error: ` line ({lines} lines)"));
            }
            if !done.stderr.contains(self.says) {
                problems.push(format!("stderr does not say {:?}", self.says));
            }
        } else {
            if lines > 1 {
                problems.push(format!("stderr has {lines} lines"));
            }
            // Exit 0 where a refusal was allowed too: the command listed around the problem.
            let says = if self.code == EITHER {
                LISTED
            } else {
                self.says
            };
            if !done.stdout.contains(says) && !done.stderr.contains(says) {
                problems.push(format!("the output does not say {says:?}"));
            }
        }
        if let Some(secret) = self.forbid
            && (done.stdout.contains(secret) || done.stderr.contains(secret))
        {
            problems.push(format!("the output shows the secret {secret:?}"));
        }
        let allowed = |path: &str| match self.changes {
            Changes::Nothing => false,
            Changes::Under(prefixes) => prefixes.iter().any(|p| path.starts_with(p)),
        };
        let diff: Vec<String> = before
            .diff(&after)
            .into_iter()
            // "added <path> (<kind>)": the path may hold spaces.
            .filter(|line| {
                let path = line.split_once(' ').map_or("", |(_, rest)| rest);
                !allowed(path.rsplit_once(" (").map_or(path, |(path, _)| path))
            })
            .collect();
        if !diff.is_empty() {
            problems.push(format!("changed on disk:\n    {}", diff.join("\n    ")));
        }
        if problems.is_empty() {
            return Ok(());
        }
        Err(format!(
            "{}: {}\n  stdout: {:?}\n  stderr: {:?}",
            self.name,
            problems.join("; "),
            truncate(&done.stdout),
            truncate(&done.stderr)
        ))
    }
}

fn truncate(text: &str) -> String {
    text.chars().take(600).collect()
}

/// Runs every case (on `threads` workers), prints `<title>: N cases, P pending` to the
/// real stderr (past the test harness's capture), and panics with every failure.
///
/// `ZOT_HOSTILE_ONLY=<substring>` runs the matching cases only; `ZOT_HOSTILE_PENDING=1`
/// runs the pending ones too and reports which of them pass now; `ZOT_HOSTILE_SHOW=1`
/// prints what each case's run said on stderr.
pub(crate) fn run_table(title: &str, cases: &[Case], threads: usize) {
    let only = std::env::var("ZOT_HOSTILE_ONLY").unwrap_or_default();
    let run_pending = std::env::var_os("ZOT_HOSTILE_PENDING").is_some();
    let mut names = std::collections::BTreeSet::new();
    for case in cases {
        assert!(names.insert(case.name), "two cases are named {}", case.name);
    }
    let chosen: Vec<&Case> = cases.iter().filter(|c| c.name.contains(&only)).collect();
    let next = AtomicUsize::new(0);
    let failures = Mutex::new(Vec::new());
    let notes = Mutex::new(Vec::new());
    let timings = Mutex::new(Vec::new());
    let started = Instant::now();
    thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some(case) = chosen.get(i) else { break };
                    if let Some(owner) = case.pending
                        && !run_pending
                    {
                        notes.lock().unwrap().push(format!(
                            "pending ({owner}): {} skipped until that fix is merged",
                            case.name
                        ));
                        continue;
                    }
                    let took = Instant::now();
                    let result = std::panic::catch_unwind(|| case.check())
                        .unwrap_or_else(|_| Err(format!("{}: the case panicked", case.name)));
                    timings.lock().unwrap().push((took.elapsed(), case.name));
                    match (result, case.pending) {
                        (Ok(()), Some(owner)) => notes.lock().unwrap().push(format!(
                            "pending ({owner}): {} passes now; drop its tag",
                            case.name
                        )),
                        (Err(e), Some(owner)) => notes
                            .lock()
                            .unwrap()
                            .push(format!("pending ({owner}) still failing: {e}")),
                        (Ok(()), None) => {}
                        (Err(e), None) => failures.lock().unwrap().push(e),
                    }
                }
            });
        }
    });
    let pending = chosen.iter().filter(|c| c.pending.is_some()).count();
    let mut notes = notes.into_inner().unwrap();
    notes.sort();
    let mut report = String::new();
    let mut timings = timings.into_inner().unwrap();
    timings.sort();
    let slowest: Vec<String> = timings
        .iter()
        .rev()
        .take(5)
        .map(|(took, name)| format!("{name} {:.1}s", took.as_secs_f64()))
        .collect();
    let _ = writeln!(report, "  slowest: {}", slowest.join(", "));
    for note in &notes {
        let _ = writeln!(report, "  {note}");
    }
    let _ = writeln!(
        report,
        "{title}: {} cases, {pending} pending, {:.1}s",
        chosen.len(),
        started.elapsed().as_secs_f64()
    );
    // Written to the process's stderr directly, so the figure shows without --nocapture.
    let _ = std::io::stderr().write_all(report.as_bytes());
    let failures = failures.into_inner().unwrap();
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        chosen.len(),
        failures.join("\n")
    );
}

/// Makes a named pipe at `path`.
pub(crate) fn mkfifo(path: &Path) {
    let ok = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(ok.success(), "mkfifo {}", path.display());
}

/// Replaces whatever is at `path` (file, folder or link) with a symbolic link to `target`.
pub(crate) fn replace_with_link(path: &Path, target: &Path) {
    remove_any(path);
    std::os::unix::fs::symlink(target, path).unwrap();
}

/// Replaces whatever is at `path` with a named pipe.
pub(crate) fn replace_with_fifo(path: &Path) {
    remove_any(path);
    mkfifo(path);
}

pub(crate) fn remove_any(path: &Path) {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => fs::remove_dir_all(path).unwrap(),
        Ok(_) => fs::remove_file(path).unwrap(),
        Err(_) => {}
    }
}

/// A small tmpfs mounted over an empty folder for disk-full tests; unmounted on drop.
pub(crate) struct Tmpfs {
    at: PathBuf,
}

impl Tmpfs {
    /// Mounts a tmpfs of `size` (e.g. "2m") at `at`, or says on stderr why it cannot
    /// (not root, or mounting is not permitted here) and returns None.
    pub(crate) fn mount(at: &Path, size: &str) -> Option<Tmpfs> {
        if !super::is_root() {
            skip(&format!(
                "disk-full test skipped: not root, cannot mount a tmpfs at {}",
                at.display()
            ));
            return None;
        }
        fs::create_dir_all(at).unwrap();
        let out = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0755"),
                "tmpfs",
            ])
            .arg(at)
            .output();
        match out {
            Ok(out) if out.status.success() => Some(Tmpfs {
                at: at.to_path_buf(),
            }),
            Ok(out) => {
                skip(&format!(
                    "disk-full test skipped: mount -t tmpfs failed: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                ));
                None
            }
            Err(e) => {
                skip(&format!("disk-full test skipped: cannot run mount: {e}"));
                None
            }
        }
    }

    /// Bytes still free on the tmpfs.
    pub(crate) fn free(&self) -> u64 {
        let out = Command::new("df")
            .args(["-B1", "--output=avail"])
            .arg(&self.at)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        text.lines().nth(1).unwrap().trim().parse().unwrap()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.at).status();
    }
}

/// Says on the real stderr (past the harness's capture) that a test did not run fully.
pub(crate) fn skip(message: &str) {
    let _ = std::io::stderr().write_all(format!("note: {message}\n").as_bytes());
}

/// `len` bytes that no compressor shrinks (git zlib-compresses what it stores).
pub(crate) fn incompressible(len: usize) -> Vec<u8> {
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        })
        .collect()
}

/// The entries left in a folder (for "staging was emptied" checks).
pub(crate) fn entries(dir: &Path) -> Vec<String> {
    fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}
