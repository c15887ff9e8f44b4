//! Extensions the tests write (a manifest and a `/bin/sh` program), and checks that nothing
//! they started is still running.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::write_executable;

/// Writes `<root>/<dir>/` with a manifest named `name` running `./run.sh` = `script`.
pub(crate) fn sh_extension(root: &Path, dir: &str, name: &str, script: &str) -> PathBuf {
    let path = root.join(dir);
    fs::create_dir_all(&path).unwrap();
    let manifest = format!(
        "{{\"name\": \"{name}\", \"version\": \"1.0.0\", \"exec\": \"./run.sh\", \"language\": \"shell\"}}\n"
    );
    fs::write(path.join("extension.json"), manifest).unwrap();
    write_executable(&path.join("run.sh"), &format!("#!/bin/sh\n{script}"));
    path
}

/// A well-behaved script body: hello, the given registration lines, ready, then it answers
/// commands, tools and shutdown.
pub(crate) fn good_script(name: &str, registrations: &[&str]) -> String {
    let mut script = format!(
        "echo '{{\"type\":\"hello\",\"name\":\"{name}\",\"version\":\"1.0.0\"}}'\nread ack\n"
    );
    for line in registrations {
        let _ = writeln!(script, "echo '{line}'");
    }
    script += "echo '{\"type\":\"ready\"}'\n";
    script += SERVE;
    script
}

/// Answers `command_invoked` and `tool_call` (id "1") and shutdown, like zot's frames are written.
pub(crate) const SERVE: &str = r#"while IFS= read -r line; do
  case $line in
    '{"type":"command_invoked"'*) echo '{"type":"command_response","id":"1","action":"display","display":"done"}' ;;
    '{"type":"tool_call"'*) echo '{"type":"tool_result","id":"1","content":[{"type":"text","text":"tool done"}]}' ;;
    '{"type":"shutdown"'*) echo '{"type":"shutdown_ack"}'; exit 0 ;;
  esac
done
"#;

/// `/proc/<pid>/stat`: (state, process group), or None once the process is gone.
fn stat(pid: &str) -> Option<(char, i32)> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses; the fields follow the last ')'.
    let rest = &text[text.rfind(')')? + 2..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((state, pgrp))
}

/// Whether `pid` runs (a zombie waiting to be reaped does not).
pub(crate) fn alive(pid: i32) -> bool {
    stat(&pid.to_string()).is_some_and(|(state, _)| state != 'Z')
}

/// Live processes in process group `pgid`.
pub(crate) fn group_members(pgid: i32) -> Vec<i32> {
    let mut members = Vec::new();
    for entry in fs::read_dir("/proc").unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if let (Ok(pid), Some((state, pgrp))) = (name.parse::<i32>(), stat(&name))
            && pgrp == pgid
            && state != 'Z'
        {
            members.push(pid);
        }
    }
    members
}

/// Asserts that nothing of the process group led by `pid` is left (allowing a moment for
/// the kernel to finish a kill).
pub(crate) fn assert_gone(pid: i32) {
    let until = Instant::now() + Duration::from_millis(500);
    while (alive(pid) || !group_members(pid).is_empty()) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!alive(pid), "process {pid} is still running");
    assert!(
        group_members(pid).is_empty(),
        "process group {pid} still has {:?}",
        group_members(pid)
    );
}

/// Whether `program` is on PATH.
pub(crate) fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|dir| dir.join(program).is_file()))
}

/// The repository's examples folder.
pub(crate) fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/extensions")
}
