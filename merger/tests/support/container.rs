//! The docker CLI and the Engine, for tests that run an image fmerge built:
//! the Engine and of-watchdog they need, the image's config, a command that
//! must succeed, a container's first answer, and the containers and images
//! to remove at the end.

use fmerge_ship::image::engine;
use fmerge_testkit::{HttpReply, dataplane};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

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

/// The real of-watchdog for a test that builds and runs an image, where a
/// Docker Engine answers; `None` (the test says it was skipped and returns)
/// without one, a failure where the tools are required (CI).
pub fn engine_and_watchdog() -> Option<PathBuf> {
    if !dataplane::tool_present(engine::missing_reason()) {
        return None;
    }
    Some(dataplane::of_watchdog().unwrap_or_else(|e| panic!("the real of-watchdog is needed: {e}")))
}

/// A tag of `repository` unique to this test process, and the [`Cleanup`]
/// that removes its image.
pub fn test_image(repository: &str) -> (String, Cleanup) {
    let tag = format!("{repository}:t{}", std::process::id());
    let cleanup = Cleanup(vec![vec!["rmi".into(), "-f".into(), tag.clone()]]);
    (tag, cleanup)
}

/// `fmerge build`'s flags for an image tagged `tag` with `watchdog` as its
/// of-watchdog.
pub fn image_flags<'a>(tag: &'a str, watchdog: &'a Path) -> [&'a str; 5] {
    let watchdog = watchdog.to_str().expect("UTF-8 path");
    ["--image", "--tag", tag, "--watchdog", watchdog]
}

/// What the Engine says of the image `tag`: its entrypoint and environment.
#[allow(dead_code)] // some tests check only what `image_config` asserts
pub struct ImageConfig {
    pub entrypoint: Vec<String>,
    pub env: Vec<String>,
}

/// The image `tag`'s config, through the Engine; every one of `wanted`
/// (`NAME=value`) must be in its environment.
pub fn image_config(tag: &str, wanted: &[&str]) -> ImageConfig {
    let config = engine::block_on(async {
        let docker = engine::connect().await.unwrap();
        docker.inspect_image(tag).await.unwrap().config.unwrap()
    })
    .unwrap();
    let env = config.env.unwrap_or_default();
    for wanted in wanted {
        assert!(env.iter().any(|e| e == wanted), "{wanted} not in {env:?}");
    }
    ImageConfig {
        entrypoint: config.entrypoint.unwrap_or_default(),
        env,
    }
}

/// Waits up to 20 s for the container `id`, published on `port`, to answer
/// `path` with 200; that reply. Fails with the container's log.
pub fn wait_ready(id: &str, port: u16, path: &str) -> HttpReply {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match fmerge_testkit::wait_http(port, path, Duration::from_secs(10)) {
            Ok(reply) if reply.status == 200 => return reply,
            other => assert!(
                Instant::now() < deadline,
                "{path}: {other:?}\n{}",
                docker(&["logs", id])
            ),
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}
