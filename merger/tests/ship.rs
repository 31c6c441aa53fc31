//! `fmerge build … --push`: the merged pair as an image in a real registry,
//! pulled back with the `docker` CLI (a client we did not write), run on the
//! host network against a local Redis, and compared with the merged binary's
//! own answer.
//!
//! Run: `cargo test --release -p fmerge --test ship`

#[path = "support/registry.rs"]
mod registry;
mod support;

use registry::{Container, Registry, docker, docker_ok, unique, wait_http};
use std::path::PathBuf;
use std::time::Duration;
use support::{
    Function, HttpReply, Ran, Redis, free_port, post, seed_social_network, workspace_root,
};

const REQUEST: &str =
    r#"{"post_id": 100, "user_id": 1, "timestamp": 1700000000, "user_mentions_id": [5, 3]}"#;

#[test]
fn the_merged_pair_is_pushed_pulled_back_and_answers_like_the_binary() {
    if !registry::engine_present() {
        return;
    }
    let reg = Registry::start();
    let tag = format!("{}/pair:{}", reg.host(), unique("t"));
    let out = workspace_root().join("target/fmerge-tests/ship");
    let Ran { ok, stdout, stderr } = support::fmerge(
        &workspace_root(),
        &[
            "write-home-timeline",
            "social-graph-get-followers",
            "--name",
            "ship",
            "--out",
            out.to_str().unwrap(),
            "--push",
            "--tag",
            &tag,
            "--registry-auth",
            "env",
            "--gateway",
            "http://127.0.0.1:8080",
        ],
        &[
            ("FMERGE_REGISTRY_USER", &reg.user),
            ("FMERGE_REGISTRY_PASSWORD", &reg.password),
        ],
    );
    assert!(ok, "{stderr}");
    assert!(
        !stdout.contains(&reg.password) && !stderr.contains(&reg.password),
        "the password is never printed"
    );
    let lines: Vec<&str> = stdout.lines().collect();
    let [pinned, stack, binary] = lines[..] else {
        panic!("expected image, stack.yml and binary lines:\n{stdout}")
    };
    assert!(
        pinned.starts_with(&format!("{}/pair@sha256:", reg.host())),
        "{pinned}"
    );
    assert_eq!(
        reg.tags("pair"),
        [tag.rsplit(':').next().unwrap()],
        "exactly the built tag"
    );

    // stack.yml deploys the pushed image under the caller's name, with the callee's namespaced setting.
    let stack = std::fs::read_to_string(stack).unwrap();
    assert!(
        stack.contains("write-home-timeline:") && stack.contains(pinned),
        "{stack}"
    );
    assert!(
        stack.contains("SOCIAL_GRAPH_GET_FOLLOWERS__REDIS_URL"),
        "{stack}"
    );
    assert!(
        stack.contains("skip_build: true") && stack.contains("lang: dockerfile"),
        "{stack}"
    );

    // The merged binary's own answer, on its own seeded Redis.
    let expected = {
        let redis = Redis::start();
        seed_social_network(&mut redis.conn());
        let env = [
            ("REDIS_URL", redis.url()),
            ("SOCIAL_GRAPH_GET_FOLLOWERS__REDIS_URL", redis.url()),
        ];
        let f = Function::start(
            PathBuf::from(binary),
            "write-home-timeline",
            free_port(),
            env,
        );
        (post(&format!("{}/", f.url()), REQUEST), redis.dump())
    };
    assert_eq!(expected.0, HttpReply::new(200, r#"{"updated":4}"#));

    // Remove the local image, pull it back with docker, run it.
    docker(None, &["image", "rm", "-f", &tag]);
    assert!(
        !docker(None, &["image", "inspect", &tag]).status.success(),
        "the local image is gone"
    );
    docker_ok(Some(&reg.docker_config_dir()), &["pull", &tag]);
    let redis = Redis::start();
    seed_social_network(&mut redis.conn());
    let port = free_port();
    let env = [
        ("port", port.to_string()),
        ("REDIS_URL", redis.url()),
        ("SOCIAL_GRAPH_GET_FOLLOWERS__REDIS_URL", redis.url()),
        ("GATEWAY_URL", "http://127.0.0.1:9".to_string()),
    ];
    let container = Container::run(&tag, &env);
    let health = wait_http(port, "/_/health", Duration::from_secs(20))
        .unwrap_or_else(|e| panic!("{e}\n{}", container.logs()));
    assert_eq!(health.status, 200);
    let answer = post(&format!("http://127.0.0.1:{port}/"), REQUEST);
    assert_eq!(answer, expected.0, "{}", container.logs());
    assert_eq!(
        redis.dump(),
        expected.1,
        "the same Redis state as the binary left"
    );
    drop(container);
    docker(None, &["image", "rm", "-f", &tag]);
}
