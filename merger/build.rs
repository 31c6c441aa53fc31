//! The `fmerge` package's build script. It writes two files into OUT_DIR:
//! - `vendored.rs`: every source file of fmerge-runtime and fmerge-contract,
//!   which `fmerge template` vendors into the faas-cli template (found by
//!   listing, so a new runtime module needs no edit here);
//! - `shim.rs`: every source file of fmerge-shim, which a merged binary of
//!   watchdog-process functions links (compiled for each group);
//! - `built.rs`: the rustc and libLLVM that `fmerge-llvm` is linked with, for
//!   `fmerge --version` and for the launcher, which loads that libLLVM from
//!   the sysroot of the rustc it runs with (src/launcher.rs says why).
//!
//! Std only: the launcher and this script must not wait on other crates.

#[path = "ir/src/llvm.rs"]
mod llvm;
#[path = "src/rustc_vv.rs"]
mod rustc_vv;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The crates the template vendors: the folder each gets in the template,
/// and where this checkout keeps it.
const VENDORED: &[(&str, &str)] = &[
    ("fmerge-runtime", "../functions/runtime"),
    ("fmerge-contract", "../functions/contract"),
];

/// The shim, in the same form.
const SHIM: &[(&str, &str)] = &[("fmerge-shim", "../functions/shim")];

fn main() {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    std::fs::write(out.join("vendored.rs"), crates(VENDORED)).expect("write vendored.rs");
    std::fs::write(out.join("shim.rs"), crates(SHIM)).expect("write shim.rs");
    std::fs::write(out.join("built.rs"), built()).expect("write built.rs");
}

/// The `Crate` list of `crates` (each its name and folder), every source
/// file included.
fn crates(crates: &[(&str, &str)]) -> String {
    let mut s = String::from("&[\n");
    for (name, dir) in crates {
        let dir = Path::new(dir).canonicalize().expect("a vendored crate");
        println!(
            "cargo:rerun-if-changed={}",
            dir.join("Cargo.toml").display()
        );
        println!("cargo:rerun-if-changed={}", dir.join("src").display());
        let mut files = Vec::new();
        list(&dir.join("src"), &mut files);
        files.sort();
        let _ = writeln!(
            s,
            "    Crate {{ dir: {name:?}, manifest: include_str!({:?}), files: &[",
            dir.join("Cargo.toml").display().to_string()
        );
        for file in files {
            let rel = file.strip_prefix(&dir).expect("inside the crate");
            let _ = writeln!(
                s,
                "        File {{ path: {:?}, text: include_str!({:?}) }},",
                rel.display().to_string(),
                file.display().to_string()
            );
        }
        s.push_str("    ] },\n");
    }
    s.push_str("]\n");
    s
}

fn list(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("list a vendored crate") {
        let path = entry.expect("a folder entry").path();
        if path.is_dir() {
            list(&path, out);
        } else {
            out.push(path);
        }
    }
}

fn built() -> String {
    println!("cargo:rerun-if-env-changed=RUSTC");
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let run = |args: &[&str]| {
        let out = Command::new(&rustc)
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("fmerge: cannot run `{rustc} {}`: {e}", args.join(" ")));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let verbose = run(&["-vV"]);
    let lib = PathBuf::from(run(&["--print", "sysroot"])).join("lib");
    println!("cargo:rerun-if-changed={}", lib.display());
    let link_name = llvm::llvm_link_name(&lib).unwrap_or_else(|why| panic!("fmerge: {why}"));
    let version = std::env::var("CARGO_PKG_VERSION").expect("cargo sets it");
    let release = rustc_vv::field(&verbose, "release");
    let llvm = rustc_vv::field(&verbose, "LLVM version");
    let short = format!("{version} (rustc {release}, LLVM {llvm})");
    // rustc's own `-vV` lines, under `rustc:` for its first.
    let mut long = format!(
        "fmerge {short}\nrustc: {}",
        verbose.lines().next().unwrap_or("rustc")
    );
    for line in verbose
        .lines()
        .skip(1)
        .filter(|l| !l.starts_with("binary: "))
    {
        long.push('\n');
        long.push_str(line);
    }
    let mut s = String::new();
    for (name, value) in [
        ("SHORT", short),
        ("LONG", long),
        ("RUSTC_RELEASE", release),
        ("LLVM_VERSION", llvm),
        ("LLVM_FILE", llvm_file(&lib, &link_name)),
    ] {
        let _ = writeln!(s, "pub const {name}: &str = {value:?};");
    }
    s
}

/// The file the dynamic loader looks for (libLLVM's soname): the link-time
/// alias `lib<link name>.so` is a one-line linker script naming it, or the
/// library itself.
fn llvm_file(lib: &Path, link_name: &str) -> String {
    let alias = lib.join(format!("lib{link_name}.so"));
    let text = std::fs::read(&alias).unwrap_or_default();
    let text = String::from_utf8_lossy(&text);
    if let Some(inner) = text.trim().strip_prefix("INPUT(") {
        return inner.trim_end_matches(')').trim().to_string();
    }
    let real = alias.canonicalize().unwrap_or(alias);
    real.file_name().expect("a file").to_string_lossy().into()
}
