//! Links fmerge against the LLVM that the active rustc ships, so that fmerge
//! reads exactly the IR that rustc writes. Debian's LLVM is too old for it.

#[path = "src/llvm.rs"]
mod llvm;

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=RUSTC");
    println!("cargo:rerun-if-changed=src/llvm.rs");
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let sysroot = Command::new(&rustc).args(["--print", "sysroot"]).output();
    let sysroot = match sysroot {
        Ok(o) if o.status.success() => PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()),
        _ => panic!("fmerge: `{rustc} --print sysroot` failed; is a rustup toolchain installed?"),
    };
    let release = Command::new(&rustc).arg("-vV").output().expect("rustc -vV");
    let release = String::from_utf8_lossy(&release.stdout);
    let release = release
        .lines()
        .find_map(|l| l.strip_prefix("release: "))
        .unwrap_or("unknown");
    let lib = sysroot.join("lib");
    let name = llvm::llvm_link_name(&lib).unwrap_or_else(|why| panic!("fmerge: {why}"));
    println!("cargo:rustc-link-search=native={}", lib.display());
    println!("cargo:rustc-link-lib=dylib={name}");
    println!("cargo:rustc-link-arg=-Wl,-rpath,{}", lib.display());
    println!("cargo:rustc-env=FMERGE_RUSTC_RELEASE={release}");
    println!("cargo:rerun-if-changed={}", lib.display());
}
