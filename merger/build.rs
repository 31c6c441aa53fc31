//! Links fmerge against the LLVM that the active rustc ships, so that fmerge
//! reads exactly the IR that rustc writes. Debian's LLVM is too old for it.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=RUSTC");
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let out = Command::new(&rustc).args(["--print", "sysroot"]).output();
    let sysroot = match out {
        Ok(o) if o.status.success() => PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()),
        _ => panic!("fmerge: `{rustc} --print sysroot` failed; is a rustup toolchain installed?"),
    };
    let lib = sysroot.join("lib");
    // The library is named libLLVM.so.<ver>-rust-<ver>; the dev alias
    // libLLVM-<major>-rust-<ver>.so is what `-l` can name. Find, never assume.
    let name = std::fs::read_dir(&lib)
        .ok()
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.starts_with("libLLVM-") && n.ends_with(".so"))
        .max()
        .unwrap_or_else(|| {
            panic!(
                "fmerge: no libLLVM-*.so in {}. fmerge uses the LLVM that ships with rustc; \
                 install a rustup toolchain (the `rustc` component ships it) or set RUSTC to one that has it.",
                lib.display()
            )
        });
    let link_name = &name["lib".len()..name.len() - ".so".len()];
    println!("cargo:rustc-link-search=native={}", lib.display());
    println!("cargo:rustc-link-lib=dylib={link_name}");
    println!("cargo:rustc-link-arg=-Wl,-rpath,{}", lib.display());
    println!("cargo:rustc-env=FMERGE_LLVM_LIB={}", lib.join(&name).display());
    println!("cargo:rerun-if-changed={}", lib.display());
}
