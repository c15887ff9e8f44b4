//! Whether the seal can be had here: the Landlock ABI the kernel offers, asked by creating
//! (and dropping) rulesets; nothing is restricted.

/// The highest of the Landlock ABIs the seal tells apart (1: files; 4: TCP; 6: signal and
/// abstract socket scopes) this kernel has; 0 without Landlock.
pub(crate) fn landlock_abi() -> u8 {
    #[cfg(target_os = "linux")]
    {
        linux::abi()
    }
    #[cfg(not(target_os = "linux"))]
    {
        0
    }
}

/// The first Landlock ABI with TCP rules (Linux 6.7).
pub(crate) const NET_ABI: u8 = 4;

/// Whether a sealed step can run here; the reason when not.
pub(crate) fn available() -> Result<(), String> {
    if !cfg!(target_os = "linux") {
        return Err(format!(
            "{} has no Landlock, the kernel's file rules the seal is made of",
            std::env::consts::OS
        ));
    }
    if landlock_abi() == 0 {
        return Err(
            "this kernel has no Landlock (Linux 5.13 or later, with landlock in the lsm= boot list)"
                .into(),
        );
    }
    Ok(())
}

#[cfg(target_os = "linux")]
mod linux {
    use landlock::{
        ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr, Scope,
    };

    use crate::seal::probe::NET_ABI;

    pub(super) fn abi() -> u8 {
        [6, NET_ABI, 1]
            .into_iter()
            .find(|&version| supports(version))
            .unwrap_or(0)
    }

    /// Whether a ruleset handling everything ABI `version` defines can be made.
    fn supports(version: u8) -> bool {
        let abi = ABI::from(i32::from(version));
        let mut ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(AccessFs::from_all(abi));
        if version >= NET_ABI {
            ruleset = ruleset.and_then(|r| r.handle_access(AccessNet::from_all(abi)));
        }
        if version >= 6 {
            ruleset = ruleset.and_then(|r| r.scope(Scope::from_all(abi)));
        }
        ruleset.and_then(Ruleset::create).is_ok()
    }
}
