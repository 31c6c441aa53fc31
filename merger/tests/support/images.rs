//! What the image and push tests share: the Engine held for one test at a
//! time, the image they build, pushes that retry quickly, and tests run in a
//! process of their own.
//!
//! A part of `image.rs` and `push_stack.rs` (`#[path = "support/images.rs"]
//! mod images;`), beside `registry`.

#![allow(dead_code)]

use crate::registry::{Registry, unique};
use crate::registry::{docker, function_binary};
use fmerge_ship::image::{self, BuiltImage, ImageSpec};
use fmerge_ship::push::{self, Auth, Progress, PushOptions};
use std::process::Command;
use std::time::Duration;

/// The function the images hold.
pub const FUNCTION: &str = "social-graph-get-followers";

/// Skips without an Engine ([`crate::registry::engine_present`]); otherwise holds the Engine for the rest of the
/// test. These tests build identical content, so their images share one ID:
/// one test's `docker rmi` would delete the image another is about to tag.
macro_rules! need_engine {
    () => {
        if !$crate::registry::engine_present() {
            return;
        }
        let _engine = $crate::images::engine();
    };
}

pub fn engine() -> std::sync::MutexGuard<'static, ()> {
    static ENGINE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    ENGINE.lock().unwrap_or_else(|e| e.into_inner())
}

pub fn spec(tag: &str) -> ImageSpec {
    ImageSpec {
        binary: function_binary().to_path_buf(),
        name: FUNCTION.into(),
        tag: Some(tag.into()),
        members: vec![FUNCTION.into()],
        env: vec![fmerge_ship::image::context::EnvVar::new(
            "SOCIAL_GRAPH_GET_FOLLOWERS__REDIS_URL",
            "redis://127.0.0.1:6379",
        )],
        source_revision: Some("0123456789abcdef".into()),
        dockerfile: fmerge::assets::DOCKERFILE.into(),
        ..ImageSpec::default()
    }
}

pub fn quick_retries(auth: Auth) -> PushOptions {
    PushOptions {
        auth,
        progress: Progress::Plain,
        attempts: 2,
        min_delay: Duration::from_millis(100),
        max_delay: Duration::from_millis(200),
    }
}

pub fn remove_local(reference: &str) {
    let _ = docker(None, &["rmi", "-f", reference]);
}

/// Runs one `child_*` test in a fresh process with `env`, so that process-wide
/// variables (DOCKER_HOST, credentials) never leak into the tests running beside it.
pub fn run_child(test: &str, env: &[(&str, &str)]) -> String {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--exact",
        test,
        "--include-ignored",
        "--nocapture",
        "--test-threads=1",
    ])
    .env("FMERGE_TEST_CHILD", test);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{test} failed:\n{text}");
    assert!(text.contains("1 passed"), "{test} did not run:\n{text}");
    text
}

pub fn is_child(test: &str) -> bool {
    std::env::var("FMERGE_TEST_CHILD").as_deref() == Ok(test)
}

/// How pushing `reference` with `options` fails, as shown (`{:#}`).
pub fn push_error(reference: &str, options: &PushOptions) -> String {
    let err = push::push(reference, options).expect_err("the push must fail");
    format!("{err:#}")
}

/// A new registry, and the image built as `<registry>/<FUNCTION>:<unique
/// tag>` (the tag starting with `prefix`): the registry, the reference and
/// what was built.
pub fn registry_and_image(prefix: &str) -> (Registry, String, BuiltImage) {
    let reg = Registry::start();
    let reference = format!("{}/{FUNCTION}:{}", reg.host(), unique(prefix));
    let built = image::build(&spec(&reference)).expect("build");
    (reg, reference, built)
}
