//! `fmerge`, the launcher: links no LLVM; runs `fmerge-llvm` (main.rs, the
//! command itself) with the libLLVM of the rustc it runs with, or says why
//! it cannot and how to rebuild fmerge (exit 1, not the dynamic loader's
//! 127). Why and how: docs/ARCHITECTURE.md, "The launcher".

mod rustc_vv;
mod version;

use std::ffi::OsString;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

/// The binary that links libLLVM, installed beside this one.
const LLVM_BINARY: &str = "fmerge-llvm";

fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().collect();
    if let Some(text) = version::requested(args.get(1..).unwrap_or_default()) {
        println!("{text}");
        return ExitCode::SUCCESS;
    }
    let why = launch(&args);
    eprintln!("error: {why}");
    ExitCode::FAILURE
}

/// Runs fmerge-llvm in place of this process; returns only why it could not.
fn launch(args: &[OsString]) -> String {
    let binary = match std::env::current_exe() {
        Ok(exe) => exe.with_file_name(LLVM_BINARY),
        Err(e) => {
            return format!(
                "cannot find where fmerge is installed: {e}\nfix: {}",
                rebuild()
            );
        }
    };
    if !binary.is_file() {
        return format!(
            "{} is missing: the launcher `fmerge` runs it from its own folder\nfix: {}",
            binary.display(),
            rebuild()
        );
    }
    let rustc = std::env::var_os("RUSTC")
        .filter(|r| !r.is_empty())
        .unwrap_or_else(|| "rustc".into());
    let lib = match sysroot(&rustc) {
        Ok(sysroot) => sysroot.join("lib"),
        Err(why) => {
            return format!(
                "{why}; fmerge loads the libLLVM of the rustc it runs with\n\
                 fix: install a rustup toolchain (`rustup default stable`) or set RUSTC to a rustc, then rebuild fmerge: {}",
                rebuild()
            );
        }
    };
    if !lib.join(version::LLVM_FILE).is_file() {
        return mismatch(&rustc, &lib);
    }
    let mut path = lib.into_os_string();
    if let Some(old) = std::env::var_os("LD_LIBRARY_PATH").filter(|p| !p.is_empty()) {
        path.push(":");
        path.push(old);
    }
    let err = Command::new(&binary)
        .arg0(args.first().cloned().unwrap_or_else(|| "fmerge".into()))
        .args(args.iter().skip(1))
        .env("LD_LIBRARY_PATH", path)
        .exec();
    format!("cannot run {}: {err}\nfix: {}", binary.display(), rebuild())
}

/// `<rustc> --print sysroot`.
fn sysroot(rustc: &OsString) -> Result<PathBuf, String> {
    let shown = Path::new(rustc).display();
    let out = Command::new(rustc)
        .args(["--print", "sysroot"])
        .output()
        .map_err(|e| format!("cannot run `{shown} --print sysroot`: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !out.status.success() || text.is_empty() {
        return Err(format!(
            "`{shown} --print sysroot` failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(PathBuf::from(text))
}

/// The rustc found is not the one fmerge was built with.
fn mismatch(rustc: &OsString, lib: &Path) -> String {
    let found = Command::new(rustc)
        .arg("-vV")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    format!(
        "fmerge was built with rustc {} (LLVM {}) and needs its {}, which is not in {}: \
         the rustc it runs with (`{}`) is rustc {} (LLVM {})\nfix: rebuild fmerge with this rustc: {}",
        version::RUSTC_RELEASE,
        version::LLVM_VERSION,
        version::LLVM_FILE,
        lib.display(),
        Path::new(rustc).display(),
        rustc_vv::field(&found, "release"),
        rustc_vv::field(&found, "LLVM version"),
        rebuild()
    )
}

/// The one command that rebuilds and reinstalls fmerge from the checkout it
/// was built from, with the rustc now in use.
fn rebuild() -> String {
    let merger = Path::new(env!("CARGO_MANIFEST_DIR"));
    format!("cargo install --path {} --locked --force", merger.display())
}
