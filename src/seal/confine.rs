//! The second stage, [`super::CONFINED`]: restricts itself with Landlock (the `landlock`
//! crate, from the Landlock project) as its command line says, then becomes the step's
//! program, with stdin on /dev/null. A restriction cannot be undone and passes to every
//! process started from it; `no_new_privs` comes with it, so a setuid program gains nothing.
//! The step's own processes cannot signal the supervisor (Landlock's signal scope, ABI 6),
//! nor reach an abstract Unix socket outside (same ABI).

use std::os::unix::process::CommandExt as _;
use std::process::{Command, Stdio};

use super::spec::Spec;

/// Restricts this process, then runs the program in its place; returns only on failure.
pub(super) fn run(spec: &Spec) -> Result<u8, String> {
    restrict(spec)?;
    let error = Command::new(&spec.program)
        .args(&spec.args)
        .current_dir(&spec.dir)
        .stdin(Stdio::null())
        .exec();
    Err(format!(
        "cannot run {}: {error}",
        crate::output::printable(&spec.program.display().to_string())
    ))
}

#[cfg(not(target_os = "linux"))]
fn restrict(spec: &Spec) -> Result<(), String> {
    if spec.rules.is_some() || !spec.network {
        return Err(super::probe::available().err().unwrap_or_default());
    }
    Ok(())
}

#[cfg(target_os = "linux")]
use linux::restrict;

#[cfg(target_os = "linux")]
mod linux {
    use std::path::{Path, PathBuf};

    use landlock::{
        ABI, Access, AccessFs, AccessNet, BitFlags, PathBeneath, PathFd, Ruleset, RulesetAttr,
        RulesetCreatedAttr, RulesetStatus, Scope,
    };

    use crate::seal::probe::{self, NET_ABI};
    use crate::seal::spec::Spec;

    /// Restricts this process (and what it starts) to the spec's file rules, cuts TCP when
    /// the network is to be cut and no namespace did it, and scopes signals and abstract
    /// sockets. Nothing to do for a step with no file rules that keeps the network.
    pub(super) fn restrict(spec: &Spec) -> Result<(), String> {
        if std::process::id() == 1 {
            own_proc();
            if let Some(rules) = &spec.rules {
                hide_sockets(rules);
            }
        }
        if spec.rules.is_some() {
            drop_capabilities();
        }
        let cut_here = !spec.network && !spec.network_namespace;
        if spec.rules.is_none() && !cut_here {
            return Ok(());
        }
        let version = probe::landlock_abi();
        if version == 0 {
            return Err(probe::available().err().unwrap_or_default());
        }
        if cut_here && version < NET_ABI {
            return Err(format!(
                "cannot cut the network: no network namespace could be made here, and this kernel's Landlock (ABI {version}) has no TCP rules (ABI 4, Linux 6.7)"
            ));
        }
        let abi = ABI::from(i32::from(version));
        let mut ruleset = Ruleset::default();
        if spec.rules.is_some() {
            ruleset = ruleset
                .handle_access(AccessFs::from_all(abi))
                .map_err(|e| e.to_string())?
                .scope(Scope::from_all(abi))
                .map_err(|e| e.to_string())?;
        }
        if cut_here {
            ruleset = ruleset
                .handle_access(AccessNet::from_all(abi))
                .map_err(|e| e.to_string())?;
        }
        let mut created = ruleset.create().map_err(|e| e.to_string())?;
        if let Some(rules) = &spec.rules {
            let writes = AccessFs::from_all(abi) & !(AccessFs::MakeChar | AccessFs::MakeBlock);
            for (paths, access) in [
                (&rules.read, AccessFs::from_read(abi)),
                (&rules.write, writes),
            ] {
                for path in paths {
                    if let Some(rule) = rule(path, access, abi) {
                        created = created.add_rule(rule).map_err(|e| e.to_string())?;
                    }
                }
            }
        }
        let status = created.restrict_self().map_err(|e| e.to_string())?;
        if status.ruleset == RulesetStatus::NotEnforced {
            return Err("the kernel did not enforce the Landlock rules".into());
        }
        Ok(())
    }

    /// As the first process of a PID namespace (in a mount namespace of its own), a /proc
    /// of its own: the step sees its own processes only, not the environment of the user's
    /// others (Landlock leaves `/proc/<pid>/environ` of a process of the same user
    /// readable). Where the kernel refuses the mount (a container that masks parts of
    /// /proc), the step sees the machine's.
    fn own_proc() {
        use rustix::mount::{MountFlags, mount};
        let flags = MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC;
        let _ = mount("proc", "/proc", "proc", flags, None);
    }

    /// Folders where programs keep Unix sockets (a Docker daemon's, an ssh or gpg agent's,
    /// a session bus), which a build could otherwise connect to by path (Landlock does not
    /// govern that): an empty folder is mounted over each that holds nothing the build was
    /// given. Where the kernel refuses, it stays as it is.
    fn hide_sockets(rules: &crate::seal::spec::Rules) {
        use rustix::mount::{MountFlags, mount};
        let given: Vec<PathBuf> = rules
            .read
            .iter()
            .chain(&rules.write)
            .map(|path| std::fs::canonicalize(path).unwrap_or_else(|_| path.clone()))
            .collect();
        let mut hidden: Vec<PathBuf> = Vec::new();
        for folder in ["/run", "/var/run", "/tmp", "/var/tmp"] {
            let Ok(real) = std::fs::canonicalize(folder) else {
                continue;
            };
            let needed = given.iter().any(|path| {
                path.starts_with(&real) || real.starts_with(path) && path != Path::new("/")
            });
            if !needed && !hidden.contains(&real) {
                let flags = MountFlags::NOSUID | MountFlags::NODEV;
                let _ = mount("tmpfs", &real, "tmpfs", flags, c"mode=1777");
                hidden.push(real);
            }
        }
    }

    /// Every capability dropped, from the bounding set too, so a build started by root
    /// gets none back at `exec`: it reads and writes as the files' modes allow, with no
    /// override, and cannot trace or read a process that is not its own.
    fn drop_capabilities() {
        use rustix::thread::{
            CapabilitySet, CapabilitySets, remove_capability_from_bounding_set, set_capabilities,
        };
        for capability in CapabilitySet::all().iter() {
            let _ = remove_capability_from_bounding_set(capability);
        }
        let _ = set_capabilities(
            None,
            CapabilitySets {
                effective: CapabilitySet::empty(),
                permitted: CapabilitySet::empty(),
                inheritable: CapabilitySet::empty(),
            },
        );
    }

    /// `access` beneath `path` (a file gets the rights a file can have); `None` when the
    /// path is not there.
    fn rule(path: &Path, access: BitFlags<AccessFs>, abi: ABI) -> Option<PathBeneath<PathFd>> {
        let fd = PathFd::new(path).ok()?;
        let is_dir = std::fs::metadata(path).is_ok_and(|m| m.is_dir());
        let access = if is_dir {
            access
        } else {
            access & AccessFs::from_file(abi)
        };
        Some(PathBeneath::new(fd, access))
    }
}
