//! Reading `rustc -vV`: one way for the build script (the rustc fmerge is
//! built with) and the launcher (the rustc it runs with), so that the two
//! name a rustc alike when they differ. Std only: build.rs includes it.

/// The value of `key` (`release`, `LLVM version`) in `verbose`, the output
/// of `rustc -vV`, or `unknown`.
pub fn field(verbose: &str, key: &str) -> String {
    verbose
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(": "))
        .unwrap_or("unknown")
        .to_string()
}
