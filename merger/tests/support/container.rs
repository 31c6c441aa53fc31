//! The docker CLI, for tests that run an image fmerge built: a command that
//! must succeed, and the containers and images to remove at the end.

use std::process::Command;

/// Runs `docker ARGS`, which must succeed; its stdout, trimmed.
pub fn docker(args: &[&str]) -> String {
    let out = Command::new("docker").args(args).output().expect("docker");
    assert!(
        out.status.success(),
        "docker {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// `docker` commands run on drop, last first (`rm -f` a container, then
/// `rmi -f` its image).
pub struct Cleanup(pub Vec<Vec<String>>);

impl Drop for Cleanup {
    fn drop(&mut self) {
        for args in self.0.iter().rev() {
            let _ = Command::new("docker").args(args).output();
        }
    }
}
