//! The `fmerge` binary loads the libLLVM that ships with rustc (linked by
//! fmerge-ir); a library's build script cannot give a binary of another
//! package its rpath, so this one does.

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=RUSTC");
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let out = Command::new(&rustc)
        .args(["--print", "sysroot"])
        .output()
        .expect("rustc --print sysroot");
    let sysroot = String::from_utf8_lossy(&out.stdout).trim().to_string();
    println!("cargo:rustc-link-arg-bins=-Wl,-rpath,{sysroot}/lib");
}
