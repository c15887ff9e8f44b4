//! Links GCC's unwinder into the binaries instead of loading `libgcc_s.so.1` at every
//! start (Linux with glibc only). Rust's standard library asks the linker for `-lgcc_s`;
//! loading that library, relocating it and running its constructor (which asks the CPU for
//! its features: `cpuid`, a trap to the hypervisor in a virtual machine) took about 150 µs
//! of each start here, a tenth of `zot --version`. The build script puts a linker script
//! named `libgcc_s.so` first on the library path that stands for the static `libgcc_eh.a`
//! of the C compiler in use: the same unwinder, linked in, as `-static-libgcc` does for C.
//! When the compiler does not name a `libgcc_eh.a` (clang with its own runtime, say), or
//! when cross-compiling without the target's compiler named in the environment (the host's
//! `cc` would name the host's archive), nothing changes.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let target = std::env::var("TARGET").unwrap_or_default();
    for variable in compiler_variables(&target) {
        println!("cargo:rerun-if-env-changed={variable}");
    }
    let linux_gnu = std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux")
        && std::env::var("CARGO_CFG_TARGET_ENV").as_deref() == Ok("gnu");
    if !linux_gnu {
        return;
    }
    let Some(unwinder) = static_unwinder(&target) else {
        return;
    };
    // The script names the archive's path: found again when it moves (a new GCC release
    // takes the old one's folder away), else every link fails until `cargo clean`.
    println!("cargo:rerun-if-changed={}", unwinder.display());
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let dir = out.join("static-unwinder");
    std::fs::create_dir_all(&dir).expect("OUT_DIR is writable");
    let script = format!("INPUT ( {} )\n", unwinder.display());
    std::fs::write(dir.join("libgcc_s.so"), script).expect("OUT_DIR is writable");
    println!("cargo:rustc-link-search=native={}", dir.display());
}

/// The variables that name the target's C compiler, first match wins, as the `cc` crate
/// reads them.
fn compiler_variables(target: &str) -> [String; 4] {
    [
        format!("CC_{target}"),
        format!("CC_{}", target.replace('-', "_")),
        "TARGET_CC".to_owned(),
        "CC".to_owned(),
    ]
}

/// The target's C compiler: the first variable of [`compiler_variables`] that is set, else
/// `cc` when building for this machine; `None` when cross-compiling without one.
fn target_compiler(target: &str) -> Option<String> {
    let named = compiler_variables(target)
        .iter()
        .find_map(|variable| std::env::var(variable).ok());
    let native = std::env::var("HOST").is_ok_and(|host| host == target);
    named.or_else(|| native.then(|| "cc".to_owned()))
}

/// `libgcc_eh.a` as the target's C compiler finds it (`-print-file-name`), when it is a
/// file and its path needs no quoting in a linker script.
fn static_unwinder(target: &str) -> Option<PathBuf> {
    let compiler = target_compiler(target)?;
    let output = Command::new(compiler)
        .arg("-print-file-name=libgcc_eh.a")
        .output()
        .ok()?;
    let path = String::from_utf8(output.stdout).ok()?;
    let path = Path::new(path.trim());
    let plain = path
        .to_str()
        .is_some_and(|p| !p.contains(|c: char| c.is_whitespace() || "()\"'".contains(c)));
    (output.status.success() && path.is_absolute() && path.is_file() && plain)
        .then(|| path.to_path_buf())
}
