//! The active Rust toolchain, asked once per merge: which rustc, its release
//! (whose LLVM must read the bitcode) and the host triple everything is built for.

use anyhow::{Context as _, Result, bail};
use std::process::Command;

#[derive(Debug, Clone)]
pub struct Toolchain {
    /// The rustc to run (`$RUSTC`, else `rustc`).
    pub rustc: String,
    /// `1.95.0`
    pub release: String,
    /// `x86_64-unknown-linux-gnu`
    pub triple: String,
}

impl Toolchain {
    pub fn detect() -> Result<Toolchain> {
        let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
        let out = Command::new(&rustc)
            .arg("-vV")
            .output()
            .with_context(|| format!("cannot run `{rustc} -vV`\nfix: install Rust with rustup (https://rustup.rs), or point RUSTC at a rustc"))?;
        if !out.status.success() {
            bail!(
                "`{rustc} -vV` failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        let text = String::from_utf8_lossy(&out.stdout);
        let field = |name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(name))
                .map(str::to_string)
        };
        Ok(Toolchain {
            release: field("release: ").context("rustc -vV printed no release")?,
            triple: field("host: ").context("rustc -vV printed no host triple")?,
            rustc,
        })
    }

    /// fmerge reads bitcode with the LLVM of the rustc it was built with
    /// (`built_with`); a newer rustc writes bitcode that LLVM cannot read.
    pub fn check_release(&self, built_with: &str) -> Result<()> {
        if self.release != built_with {
            bail!(
                "fmerge was built with rustc {built_with} and reads IR with that rustc's LLVM, but the active rustc is {}\n\
                 fix: rebuild fmerge with the active toolchain (`cargo build --release -p fmerge`), or switch back to {built_with}",
                self.release
            );
        }
        Ok(())
    }
}
