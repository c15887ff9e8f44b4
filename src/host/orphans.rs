//! Processes that leave an extension's process group (setsid, a double fork) outlive a kill of
//! the group. On Linux, zot ext makes itself a child subreaper, so such processes are
//! re-parented to it instead of to init; after an extension stops they are found (from a
//! snapshot of its process tree, and among the processes zot adopted), stopped with SIGTERM
//! and then SIGKILL, reaped, and reported. Signals and waits go through rustix's safe calls.
//!
//! The process tree is read from `/proc/<pid>/stat` (parent, start time) by hand: the three
//! fields needed take a dozen lines, where a process crate (`sysinfo`, `procfs`) would bring
//! a large dependency for them. Children are found through `/proc/<pid>/task/<tid>/children`
//! where the kernel has it (so only the tree itself is read, not every process on the
//! machine), else by reading every process's parent.

use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, WaitOptions};

/// How long a leftover process gets to exit after SIGTERM, and again after SIGKILL.
const GRACE: Duration = Duration::from_secs(1);

/// A process an extension left running after it was stopped (now ended).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Leftover {
    pub pid: i32,
    pub command: String,
}

/// A process seen in `/proc`, identified by pid and start time (pids are reused).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Proc {
    pub pid: i32,
    pub ppid: i32,
    pub pgid: i32,
    pub state: char,
    pub start: u64,
}

/// Makes this process the reaper of orphaned descendants (Linux; a no-op elsewhere).
pub(crate) fn become_subreaper() {
    #[cfg(target_os = "linux")]
    {
        // Failure only means escaped processes go to init, as without this call.
        let _ = rustix::process::set_child_subreaper(Some(rustix::process::getpid()));
    }
}

/// Parses `/proc/<pid>/stat`; the command name may hold spaces and parentheses.
fn parse_stat(pid: i32, text: &str) -> Option<Proc> {
    let rest = text.get(text.rfind(')')? + 2..)?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Some(Proc {
        pid,
        state: fields.first()?.chars().next()?,
        ppid: fields.get(1)?.parse().ok()?,
        pgid: fields.get(2)?.parse().ok()?,
        // Field 22 of stat, the 20th after the command name.
        start: fields.get(19)?.parse().ok()?,
    })
}

fn stat(pid: i32) -> Option<Proc> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(pid, &text)
}

/// Every process visible in `/proc` (none where there is no `/proc`).
fn processes() -> Vec<Proc> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(stat)
        .collect()
}

/// Whether the kernel lists each task's children (`CONFIG_PROC_CHILDREN`, on in common
/// distributions' kernels).
fn lists_children() -> bool {
    static LISTS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *LISTS.get_or_init(|| std::fs::metadata("/proc/thread-self/children").is_ok())
}

/// The children of `pid` (of any of its threads), from the kernel's lists; `None` when the
/// kernel has none or `pid` is gone.
fn children_of(pid: i32) -> Option<Vec<i32>> {
    if !lists_children() {
        return None;
    }
    let mut children = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))
        .ok()?
        .flatten()
    {
        let Ok(text) = std::fs::read_to_string(task.path().join("children")) else {
            continue;
        };
        children.extend(
            text.split_whitespace()
                .filter_map(|w| w.parse::<i32>().ok()),
        );
    }
    Some(children)
}

/// The descendants of `root` (not `root` itself), following parent links.
pub(crate) fn descendants(root: i32) -> Vec<Proc> {
    if children_of(root).is_none() {
        return descendants_in(&processes(), root);
    }
    let mut found: Vec<Proc> = Vec::new();
    let mut frontier = vec![root];
    while let Some(parent) = frontier.pop() {
        for child in children_of(parent).unwrap_or_default() {
            if child != root
                && !found.iter().any(|f| f.pid == child)
                && let Some(p) = stat(child)
            {
                frontier.push(child);
                found.push(p);
            }
        }
    }
    found
}

fn descendants_in(all: &[Proc], root: i32) -> Vec<Proc> {
    let mut found: Vec<Proc> = Vec::new();
    let mut frontier = vec![root];
    while let Some(parent) = frontier.pop() {
        for child in all.iter().filter(|p| p.ppid == parent && p.pid != root) {
            if !found.iter().any(|f| f.pid == child.pid) {
                frontier.push(child.pid);
                found.push(child.clone());
            }
        }
    }
    found
}

/// The same process, still there (as a zombie too)?
fn current(p: &Proc) -> Option<Proc> {
    stat(p.pid).filter(|now| now.start == p.start)
}

fn running(p: &Proc) -> bool {
    current(p).is_some_and(|now| now.state != 'Z')
}

/// The command line of `pid`, or its command name.
fn command(pid: i32) -> String {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let words: Vec<String> = cmdline
        .split(|&b| b == 0)
        .filter(|w| !w.is_empty())
        .map(|w| String::from_utf8_lossy(w).into_owned())
        .collect();
    if words.is_empty() {
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        return comm.trim().to_string();
    }
    words.join(" ")
}

/// Ends the processes of `snapshot` (an extension's tree, taken while it ran) that are still
/// running outside its process group `pgid` after the group was killed; returns them.
pub(crate) fn end_escaped(snapshot: &[Proc], pgid: i32) -> Vec<Leftover> {
    let escaped: Vec<Proc> = snapshot
        .iter()
        .filter_map(current)
        .filter(|p| p.state != 'Z' && p.pgid != pgid)
        .collect();
    let leftovers = end(&escaped);
    reap(snapshot);
    leftovers
}

/// Ends every process this one adopted (its children that are not `keep`, which are the
/// leaders of extensions still running); returns the ones that were still running.
pub(crate) fn end_adopted(keep: &[i32]) -> Vec<Leftover> {
    let me = i32::try_from(std::process::id()).unwrap_or(0);
    let children = match children_of(me) {
        Some(pids) => pids.into_iter().filter_map(stat).collect(),
        None => processes(),
    };
    let adopted: Vec<Proc> = children
        .into_iter()
        .filter(|p| p.ppid == me && !keep.contains(&p.pid))
        .collect();
    let running: Vec<Proc> = adopted.iter().filter(|p| p.state != 'Z').cloned().collect();
    let leftovers = end(&running);
    reap(&adopted);
    leftovers
}

/// How long [`end_all_descendants`] keeps sweeping.
const SWEEP: Duration = Duration::from_secs(5);

/// Kills every process beneath this one with SIGKILL and reaps them, sweeping again until
/// none is left (one that forks while the sweep runs is caught by the next): what a
/// subreaper does once the step it started has ended. Processes that left the tree before
/// this one became their subreaper are not found.
pub(crate) fn end_all_descendants() {
    let me = i32::try_from(std::process::id()).unwrap_or(0);
    let until = Instant::now() + SWEEP;
    loop {
        let tree = descendants(me);
        for p in tree.iter().filter(|p| p.state != 'Z') {
            if let Some(pid) = pid(p.pid) {
                let _ = rustix::process::kill_process(pid, Signal::KILL);
            }
        }
        // Reap every child that has ended; none left (ECHILD) ends the sweep.
        loop {
            match rustix::process::wait(WaitOptions::NOHANG) {
                Ok(Some(_)) => {}
                Ok(None) => break,
                Err(_) => return,
            }
        }
        if Instant::now() >= until {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// SIGTERM (to the process, and to its group when it leads one), then SIGKILL.
fn end(procs: &[Proc]) -> Vec<Leftover> {
    let leftovers: Vec<Leftover> = procs
        .iter()
        .map(|p| Leftover {
            pid: p.pid,
            command: command(p.pid),
        })
        .collect();
    for signal in [Signal::TERM, Signal::KILL] {
        let alive: Vec<&Proc> = procs.iter().filter(|p| running(p)).collect();
        if alive.is_empty() {
            break;
        }
        for p in &alive {
            send(p, signal);
        }
        let until = Instant::now() + GRACE;
        while procs.iter().any(running) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    leftovers
}

/// `raw` as a pid rustix takes: 0 and negative numbers (groups, "any child") are not one.
fn pid(raw: i32) -> Option<Pid> {
    if raw > 0 { Pid::from_raw(raw) } else { None }
}

/// The start time was checked just before; ESRCH (it has exited meanwhile) is fine.
fn send(p: &Proc, signal: Signal) {
    let Some(pid) = pid(p.pid) else {
        return;
    };
    if p.pgid == p.pid {
        let _ = rustix::process::kill_process_group(pid, signal);
    }
    let _ = rustix::process::kill_process(pid, signal);
}

/// Reaps the processes of `procs` that are this process's children and have exited.
/// A zombie child cannot be replaced by another process of its pid before it is reaped, so
/// the start time check makes sure only these very processes are waited for.
fn reap(procs: &[Proc]) {
    let me = i32::try_from(std::process::id()).unwrap_or(0);
    let until = Instant::now() + Duration::from_millis(200);
    loop {
        let mut waiting = false;
        for p in procs {
            match current(p) {
                Some(now) if now.ppid == me && now.state == 'Z' => {
                    if let Some(pid) = pid(p.pid) {
                        let _ = rustix::process::waitpid(Some(pid), WaitOptions::NOHANG);
                    }
                }
                Some(now) if now.ppid == me => waiting = true,
                _ => {}
            }
        }
        if !waiting || Instant::now() >= until {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proc(pid: i32, parent: i32) -> Proc {
        Proc {
            pid,
            ppid: parent,
            pgid: pid,
            state: 'S',
            start: 1,
        }
    }

    #[test]
    fn stat_lines_with_odd_names_parse() {
        let line = "42 (a (b) c) S 7 40 40 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 98765 0 0";
        let p = parse_stat(42, line).unwrap();
        assert_eq!((p.state, p.ppid, p.pgid, p.start), ('S', 7, 40, 98765));
        assert_eq!(parse_stat(1, "garbage"), None);
    }

    #[test]
    fn descendants_follow_parent_links() {
        let all = [
            proc(10, 1),
            proc(11, 10),
            proc(12, 11),
            proc(13, 1),
            proc(14, 12),
        ];
        let mut pids: Vec<i32> = descendants_in(&all, 10).iter().map(|p| p.pid).collect();
        pids.sort_unstable();
        assert_eq!(pids, [11, 12, 14]);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_children_lists_give_the_tree_the_parent_links_give() {
        use std::process::Command;
        let mut child = Command::new("sh")
            .args(["-c", "sleep 30 & (sleep 30 & wait) & wait"])
            .spawn()
            .unwrap();
        let root = i32::try_from(child.id()).unwrap();
        let pids = |procs: Vec<Proc>| {
            let mut pids: Vec<i32> = procs.iter().map(|p| p.pid).collect();
            pids.sort_unstable();
            pids
        };
        let until = Instant::now() + Duration::from_secs(10);
        let mut from_lists = pids(descendants(root));
        while from_lists.len() < 3 && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
            from_lists = pids(descendants(root));
        }
        let from_parents = pids(descendants_in(&processes(), root));
        let _ = rustix::process::kill_process(pid(root).unwrap(), Signal::KILL);
        for p in &from_parents {
            let _ = rustix::process::kill_process(pid(*p).unwrap(), Signal::KILL);
        }
        child.wait().unwrap();
        assert_eq!(from_lists.len(), 3, "{from_lists:?}");
        assert_eq!(from_lists, from_parents);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_is_seen() {
        let me = i32::try_from(std::process::id()).unwrap();
        let p = stat(me).unwrap();
        assert!(running(&p));
        assert!(!command(me).is_empty());
    }
}
