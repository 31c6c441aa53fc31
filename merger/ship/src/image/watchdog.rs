//! The image of a watchdog-process group: the merged binary run by the
//! of-watchdog binary the user gives (`--watchdog PATH`), as the caller's
//! own image ran the caller.
//!
//! Why a user-given of-watchdog and not fmerge's runtime front: the
//! merged binary of such a group is the caller's `main`, which of-watchdog
//! starts per request in the caller's mode; the runtime's front serves the
//! runtime's functions only, and serving the process modes there is a
//! rework of its own. of-watchdog is a static Go binary, so it goes into
//! the `FROM scratch` image as one file, and its port (8080), `/_/health`,
//! metrics, timeouts and logs are exactly those the caller had.

use anyhow::{Context as _, Result, bail};
use std::path::{Path, PathBuf};

/// Where of-watchdog goes in the image (its own images' path, `fwatchdog`).
pub const IN_IMAGE: &str = "/usr/bin/fwatchdog";

/// Where the warm-start launcher goes in the image.
pub const LAUNCHER_IN_IMAGE: &str = "/usr/local/bin/fmerge-warm";

/// How the image runs the merged binary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Watchdog {
    /// The of-watchdog binary on this machine (checked by [`check`]).
    pub binary: PathBuf,
    /// The caller's of-watchdog mode (`streaming`, `serializing`).
    pub mode: String,
    /// What follows the program in the caller's `fprocess`, kept for the
    /// merged binary (empty: none).
    pub arguments: String,
    /// Where of-watchdog's `http` mode proxies to: the caller's
    /// `upstream_url` (its server's address), for a caller that serves
    /// HTTP itself.
    pub upstream_url: Option<String>,
    /// The warm-start launcher on this machine (fmerge builds it beside a
    /// merged binary of-watchdog starts per request): `fprocess` runs the
    /// binary through it, from [`LAUNCHER_IN_IMAGE`].
    pub launcher: Option<PathBuf>,
}

impl Watchdog {
    /// `fprocess` for the merged binary at `binary` in the image.
    pub fn fprocess(&self, binary: &Path) -> String {
        let program = match &self.launcher {
            Some(_) => format!("{LAUNCHER_IN_IMAGE} {}", binary.display()),
            None => binary.display().to_string(),
        };
        match self.arguments.as_str() {
            "" => program,
            args => format!("{program} {args}"),
        }
    }
}

/// Refuses a file that cannot be the image's watchdog: not an ELF
/// executable, or one that needs a dynamic loader (the image has only the
/// merged binary's libraries, and of-watchdog's releases are static).
pub fn check(path: &Path) -> Result<()> {
    let bytes = std::fs::read(path).with_context(|| {
        format!(
            "cannot read the watchdog {}\nfix: give --watchdog the path of an of-watchdog binary (the `fwatchdog` of ghcr.io/openfaas/of-watchdog, or one built from its source)",
            path.display()
        )
    })?;
    let elf = match goblin::elf::Elf::parse(&bytes) {
        Ok(elf) => elf,
        Err(_) => bail!(
            "the watchdog {} is not an ELF executable, so it cannot run in the image\n\
             fix: give --watchdog the path of an of-watchdog binary for Linux",
            path.display()
        ),
    };
    if let Some(interpreter) = elf.interpreter {
        bail!(
            "the watchdog {} is dynamically linked (it needs {interpreter}), and the image is `FROM scratch` with only the merged binary's libraries\n\
             fix: give a static of-watchdog (its releases are; built from source, with CGO_ENABLED=0)",
            path.display()
        );
    }
    if elf.header.e_type != goblin::elf::header::ET_EXEC
        && elf.header.e_type != goblin::elf::header::ET_DYN
    {
        bail!(
            "the watchdog {} is an ELF file but not an executable\nfix: give --watchdog the path of an of-watchdog binary",
            path.display()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dynamic_or_non_elf_watchdog_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let text = dir.path().join("fwatchdog");
        std::fs::write(&text, "#!/bin/sh\n").unwrap();
        let e = format!("{:#}", check(&text).unwrap_err());
        assert!(
            e.contains("not an ELF executable") && e.contains("\nfix: "),
            "{e}"
        );
        // This test's own binary is linked against libc, through a loader.
        let own = std::env::current_exe().unwrap();
        let e = format!("{:#}", check(&own).unwrap_err());
        assert!(
            e.contains("dynamically linked") && e.contains("\nfix: "),
            "{e}"
        );
        let w = Watchdog {
            binary: own,
            mode: "streaming".into(),
            arguments: "--verbose".into(),
            upstream_url: None,
            launcher: None,
        };
        assert_eq!(
            w.fprocess(Path::new("/usr/local/bin/m")),
            "/usr/local/bin/m --verbose"
        );
        let warm = Watchdog {
            launcher: Some("/target/fmerge/m/fmerge-warm".into()),
            ..w
        };
        assert_eq!(
            warm.fprocess(Path::new("/usr/local/bin/m")),
            "/usr/local/bin/fmerge-warm /usr/local/bin/m --verbose"
        );
    }
}
