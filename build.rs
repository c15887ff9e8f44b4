//! Links GCC's unwinder into the binaries instead of loading `libgcc_s.so.1` at every
//! start (Linux with glibc only). Rust's standard library asks the linker for `-lgcc_s`;
//! loading that library, relocating it and running its constructor (which asks the CPU for
//! its features: `cpuid`, a trap to the hypervisor in a virtual machine) took about 150 µs
//! of each start here, a tenth of `zot --version`. The build script puts a linker script
//! named `libgcc_s.so` first on the library path that stands for the static `libgcc_eh.a`
//! of the C compiler in use: the same unwinder, linked in, as `-static-libgcc` does for C.
//! When the compiler does not name a `libgcc_eh.a` (clang with its own runtime, say),
//! nothing changes.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let target = std::env::var("TARGET").unwrap_or_default();
    println!("cargo:rerun-if-env-changed=CC_{}", target.replace('-', "_"));
    println!("cargo:rerun-if-env-changed=CC");
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

/// `libgcc_eh.a` as the target's C compiler finds it (`-print-file-name`), when it is a
/// file and its path needs no quoting in a linker script.
fn static_unwinder(target: &str) -> Option<PathBuf> {
    let compiler = std::env::var("CC_".to_owned() + &target.replace('-', "_"))
        .or_else(|_| std::env::var("CC"))
        .unwrap_or_else(|_| "cc".to_owned());
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
