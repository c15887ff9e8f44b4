//! Tying a child process's life to zot's: on Linux a child started through
//! [`die_with_parent`] or [`exec_dying_with_parent`] gets SIGKILL from the kernel when the
//! thread that started it ends (the parent-death signal, kept across `exec`), so a
//! `SIGKILL`ed zot, which can clean nothing up, leaves neither an extension nor the git
//! helper running. Elsewhere there is no such signal, and the child runs until it exits on its own.
//!
//! Asking for the signal needs code between fork and exec (`pre_exec`), and with it the
//! standard library starts the program with `execvp`, which runs a file the kernel refuses
//! (`ENOEXEC`: a script without `#!`) with `/bin/sh` instead. zot starts extensions with
//! `execve`, which fails there ("exec format error"), so [`exec_dying_with_parent`] calls
//! `execve` itself, with everything it needs prepared before the fork.

use std::io;
use std::path::Path;
use std::process::Command;

/// Asks for SIGKILL to `command`'s process when the thread that starts it ends; the start
/// fails if zot is already gone by then. The thread must outlive the child, as every thread
/// that starts one here does.
pub(crate) fn die_with_parent(command: &mut Command) {
    #[cfg(target_os = "linux")]
    before_exec(command, None);
    #[cfg(not(target_os = "linux"))]
    let _ = command;
}

/// [`die_with_parent`] for an extension: `command` (already given its folder, stdio,
/// process group and any variables set or removed with `env`/`env_remove`) runs `program`
/// with `args` and zot's environment as changed on `command`, through `execve`, so a file
/// the kernel cannot run fails to start, as it does in zot. Call it last, after every
/// change to the environment (`env_clear` is not honoured: nothing here clears it). Fails
/// only for an argument holding a NUL byte.
pub(crate) fn exec_dying_with_parent(
    command: &mut Command,
    program: &Path,
    args: &[String],
) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        let exec = linux::Exec::new(program, args, command)?;
        before_exec(command, Some(exec));
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (command, program, args);
    Ok(())
}

/// Between fork and exec: the parent-death signal, then `exec` when given (else the
/// standard library's own exec follows).
#[cfg(target_os = "linux")]
fn before_exec(command: &mut Command, exec: Option<linux::Exec>) {
    use std::os::unix::process::CommandExt as _;
    let parent = this_process();
    // SAFETY: the closure only calls async-signal-safe functions (the prctl and getppid
    // system calls, execve) and allocates nothing: `exec` holds every string and pointer
    // array execve reads, made before the fork.
    unsafe {
        command.pre_exec(move || {
            ask_for_kill(parent)?;
            if let Some(exec) = &exec {
                exec.run();
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

#[cfg(target_os = "linux")]
fn this_process() -> Option<rustix::process::Pid> {
    rustix::process::Pid::from_raw(i32::try_from(std::process::id()).unwrap_or(0))
}

/// In the child: the parent-death signal, then a check that the parent it names is still
/// zot (zot died before the signal was asked for). A child that is the first process of a
/// new PID namespace sees no parent (0) and cannot check; it is the seal's, whose whole
/// namespace ends with it. rustix's calls are the raw system
/// calls, which allocate nothing and are safe between fork and exec.
#[cfg(target_os = "linux")]
fn ask_for_kill(parent: Option<rustix::process::Pid>) -> io::Result<()> {
    use rustix::process::{Signal, getppid, set_parent_process_death_signal};
    set_parent_process_death_signal(Some(Signal::KILL))?;
    let now = getppid();
    if now.is_some() && now != parent {
        return Err(io::Error::from(rustix::io::Errno::SRCH));
    }
    Ok(())
}

#[cfg(target_os = "linux")]
mod linux {
    use std::ffi::CString;
    use std::io;
    use std::os::unix::ffi::OsStrExt as _;
    use std::path::Path;

    /// What `execve` reads: the program, its argument vector and the environment as
    /// NUL-terminated strings, and the null-terminated arrays of pointers to them.
    pub(super) struct Exec {
        program: CString,
        argv: Vec<*const libc::c_char>,
        envp: Vec<*const libc::c_char>,
        /// The strings `argv` and `envp` point into (a `CString`'s bytes stay where they are
        /// when it moves).
        _strings: Vec<CString>,
    }

    // SAFETY: the pointers point into strings this value owns and never changes; the
    // value is only read, in the forked child.
    unsafe impl Send for Exec {}
    // SAFETY: as for Send: nothing is ever written through the pointers.
    unsafe impl Sync for Exec {}

    fn c_string(bytes: &[u8]) -> io::Result<CString> {
        CString::new(bytes).map_err(|_| {
            io::Error::new(io::ErrorKind::InvalidInput, "an argument holds a NUL byte")
        })
    }

    impl Exec {
        /// `program` with `args` (the program itself as `argv[0]`, as the standard library
        /// gives it) and this process's environment with `command`'s changes to it.
        pub(super) fn new(
            program: &Path,
            args: &[String],
            command: &std::process::Command,
        ) -> io::Result<Exec> {
            let program = c_string(program.as_os_str().as_bytes())?;
            let mut argv_strings = vec![program.clone()];
            for word in args {
                argv_strings.push(c_string(word.as_bytes())?);
            }
            let mut environment: std::collections::BTreeMap<_, _> = std::env::vars_os().collect();
            for (key, value) in command.get_envs() {
                match value {
                    Some(value) => environment.insert(key.to_owned(), value.to_owned()),
                    None => environment.remove(key),
                };
            }
            let mut env_strings = Vec::new();
            for (key, value) in environment {
                let pair = [key.as_bytes(), b"=", value.as_bytes()].concat();
                // A variable that cannot be passed on (NUL) is left out.
                if let Ok(pair) = c_string(&pair) {
                    env_strings.push(pair);
                }
            }
            let pointers = |strings: &[CString]| {
                let mut list: Vec<*const libc::c_char> =
                    strings.iter().map(|s| s.as_ptr()).collect();
                list.push(std::ptr::null());
                list
            };
            let argument_list = pointers(&argv_strings);
            let environment_list = pointers(&env_strings);
            argv_strings.extend(env_strings);
            Ok(Exec {
                program,
                argv: argument_list,
                envp: environment_list,
                _strings: argv_strings,
            })
        }

        /// Replaces this process with the program; returns only if `execve` failed (the
        /// reason in `errno`).
        pub(super) fn run(&self) {
            // SAFETY: every pointer points to a NUL-terminated string owned by `self`, and
            // both arrays end with a null pointer, as execve requires.
            unsafe {
                libc::execve(
                    self.program.as_ptr(),
                    self.argv.as_ptr(),
                    self.envp.as_ptr(),
                );
            }
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;
    use std::process::Stdio;

    fn script(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    #[test]
    fn the_program_runs_with_its_arguments_and_environment() {
        let tmp = tempfile::tempdir().unwrap();
        let program = script(
            tmp.path(),
            "run",
            "#!/bin/sh\nprintf '%s|%s|%s' \"$0\" \"$1 $2\" \"${PATH:+path}\"\n",
        );
        let mut command = Command::new(&program);
        command.stdout(Stdio::piped());
        exec_dying_with_parent(&mut command, &program, &["a b".into(), "c".into()]).unwrap();
        let out = command.output().unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        assert_eq!(text, format!("{}|a b c|path", program.display()));
    }

    /// Variables set and removed on the command reach the program (the launch is not
    /// rebuilt from zot's environment alone).
    #[test]
    fn the_commands_own_variables_reach_the_program() {
        let program = Path::new("/bin/sh");
        let mut command = Command::new(program);
        command
            .stdout(Stdio::piped())
            .env("ZOT_EXT_LAUNCH_PROBE", "seen")
            .env_remove("HOME");
        let args = [
            "-c".to_owned(),
            "echo \"$ZOT_EXT_LAUNCH_PROBE ${HOME-unset}\"".to_owned(),
        ];
        exec_dying_with_parent(&mut command, program, &args).unwrap();
        let out = command.output().unwrap();
        assert_eq!(String::from_utf8(out.stdout).unwrap(), "seen unset\n");
    }

    /// execvp would run a script without `#!` with /bin/sh; zot's execve refuses it.
    #[test]
    fn a_file_the_kernel_cannot_run_fails_to_start() {
        let tmp = tempfile::tempdir().unwrap();
        let program = script(tmp.path(), "plain", "echo ran\n");
        let mut command = Command::new(&program);
        exec_dying_with_parent(&mut command, &program, &[]).unwrap();
        let err = command.output().unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ENOEXEC), "{err}");
        let arg = "nul\0inside".to_string();
        assert!(exec_dying_with_parent(&mut command, &program, &[arg]).is_err());
    }
}
