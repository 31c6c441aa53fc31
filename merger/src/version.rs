//! What `fmerge --version` says: fmerge's version and the rustc and libLLVM
//! that `fmerge-llvm` is linked with (written by build.rs), short or in
//! rustc's `-vV` style. Std only: both binaries include this file.
#![allow(dead_code)] // each binary uses part of it

include!(concat!(env!("OUT_DIR"), "/built.rs"));

/// The version text `args` (the arguments after the program's name) ask
/// for, if they are only a version request: `-V`/`--version` the short one,
/// with `-v`/`--verbose` (`-vV`, as rustc takes it) the long one.
pub fn requested(args: &[std::ffi::OsString]) -> Option<String> {
    let mut version = false;
    let mut verbose = false;
    for arg in args {
        match arg.to_str()? {
            "-V" | "--version" => version = true,
            "-v" | "--verbose" => verbose = true,
            "-vV" | "-Vv" => (version, verbose) = (true, true),
            _ => return None,
        }
    }
    match (version, verbose) {
        (true, false) => Some(format!("fmerge {SHORT}")),
        (true, true) => Some(LONG.to_string()),
        _ => None,
    }
}
