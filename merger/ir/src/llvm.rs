//! Finding the LLVM that ships with rustc. Shared by the build script (which
//! links fmerge to it) and the library (which checks, before a merge, that the
//! active rustc is still the one fmerge was built with). Std only.

use std::path::Path;

/// The `-l` name of rustc's LLVM in `lib_dir` (`<sysroot>/lib`): the library
/// is `libLLVM.so.<ver>-rust-<ver>`, and `libLLVM-<major>-rust-<ver>.so` is its
/// link-time alias. Found by listing, never assumed, so no version is
/// hard-coded.
pub fn llvm_link_name(lib_dir: &Path) -> Result<String, String> {
    let names = std::fs::read_dir(lib_dir)
        .map_err(|e| format!("cannot list {}: {e}", lib_dir.display()))?
        .filter_map(|e| e.ok()?.file_name().into_string().ok());
    let best = names
        .filter(|n| n.starts_with("libLLVM-") && n.ends_with(".so"))
        .max();
    match best {
        Some(name) => Ok(name["lib".len()..name.len() - ".so".len()].to_string()),
        None => Err(format!(
            "no libLLVM-*.so in {}: fmerge reads rustc's IR with the LLVM that ships with rustc, and this toolchain has none\n\
             fix: use a rustup toolchain (`rustup default stable`; its `rustc` component ships libLLVM), \
             or point RUSTC at one that has it, then rebuild fmerge",
            lib_dir.display()
        )),
    }
}
