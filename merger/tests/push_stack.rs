//! The push and stack.yml stages: an image pushed to a real registry
//! (Debian's `docker-registry`) on 127.0.0.1 through the real Docker Engine,
//! its failures and credentials; and the stack.yml written for the merge.
//!
//! Run: `cargo test --release -p fmerge --test push_stack`. Where no engine
//! exists (no `/var/run/docker.sock`, no `DOCKER_HOST`) the engine tests print
//! why and return; the stack.yml tests always run.

#[path = "support/registry.rs"]
mod registry;
#[macro_use]
#[path = "support/images.rs"]
mod images;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use fmerge_ship::image::{self, engine};
use fmerge_ship::push::{self, Auth, Credentials};
use fmerge_ship::stack_out::{self as stack, CalleeEnv, Deployment, StackSpec};
use images::{
    FUNCTION, is_child, push_error, quick_retries, registry_and_image, remove_local, run_child,
    spec,
};
use registry::unique;

#[test]
fn wrong_password_is_refused_clearly_and_nothing_is_pushed() {
    need_engine!();
    let (reg, reference, _) = registry_and_image("w");
    let wrong = unique("wrong-password-");
    let t = Instant::now();
    let msg = push_error(
        &reference,
        &quick_retries(Auth::Explicit(Credentials::new(
            reg.user.clone(),
            wrong.clone(),
        ))),
    );
    eprintln!("error as shown: {msg}");
    assert!(msg.contains("refused"), "{msg}");
    assert!(msg.contains("fix:"), "{msg}");
    assert!(msg.contains(&reg.host()), "{msg}");
    assert!(
        !msg.contains(&wrong),
        "the password leaked into the error: {msg}"
    );
    assert!(
        t.elapsed() < Duration::from_secs(30),
        "auth failures must not be retried"
    );
    assert!(
        reg.catalog().is_empty(),
        "something was pushed: {:?}",
        reg.catalog()
    );
    assert!(reg.tags(FUNCTION).is_empty());
    remove_local(&reference);
}

#[test]
fn unreachable_registry_is_a_clear_error() {
    need_engine!();
    let port = registry::free_port(); // nothing listens there
    let reference = format!("127.0.0.1:{port}/{FUNCTION}:{}", unique("u"));
    image::build(&spec(&reference)).expect("build");
    let msg = push_error(
        &reference,
        &quick_retries(Auth::Explicit(Credentials::new("u", "irrelevant-pw"))),
    );
    eprintln!("error as shown: {msg}");
    assert!(
        msg.contains("cannot reach registry") && msg.contains("fix:"),
        "{msg}"
    );
    assert!(
        msg.contains("after 2 attempts"),
        "transient failures are retried: {msg}"
    );
    remove_local(&reference);
}

#[test]
fn pushing_an_image_that_is_not_built_says_so() {
    need_engine!();
    let msg = push_error(
        "127.0.0.1:5999/not-built-here:v1",
        &quick_retries(Auth::Anonymous),
    );
    assert!(
        msg.contains("not in the local Docker Engine") && msg.contains("fix:"),
        "{msg}"
    );
    // Docker Hub without a namespace cannot be pushed to; said before any network use.
    let msg = push_error("some-merge:abc", &quick_retries(Auth::Anonymous));
    assert!(msg.contains("docker.io/<user>/some-merge:abc"), "{msg}");
}

#[test]
fn interrupted_push_is_resumed_by_a_rerun() {
    need_engine!();
    let (reg, reference, _) = registry_and_image("i");
    let options = quick_retries(Auth::Explicit(Credentials::new(
        reg.user.clone(),
        reg.password.clone(),
    )));
    // Cut the push off after its first events (the client goes away mid-push).
    let interrupted = engine::block_on(async {
        let d = engine::connect().await.unwrap();
        tokio::time::timeout(
            Duration::from_millis(40),
            push::push_async(&d, &reference, &options),
        )
        .await
    })
    .unwrap();
    eprintln!(
        "first attempt: {}",
        if interrupted.is_err() {
            "interrupted"
        } else {
            "finished before the cut"
        }
    );
    let pushed = push::push(&reference, &options).expect("the re-run completes the push");
    let tag = reference.rsplit(':').next().unwrap();
    assert_eq!(reg.tags(FUNCTION), vec![tag.to_owned()]);
    let (status, _) = reg
        .get(&format!("/v2/{FUNCTION}/manifests/{}", pushed.digest), true)
        .unwrap();
    assert_eq!(status, 200, "the registry serves the pushed manifest");
    remove_local(&reference);
}

#[test]
fn credentials_from_env_and_from_docker_config() {
    need_engine!();
    let (reg, reference, _) = registry_and_image("e");
    let empty = tempfile::tempdir().unwrap();
    // 1. FMERGE_REGISTRY_USER/PASSWORD (what CI uses), with an empty docker config.
    let text = run_child(
        "child_push_with",
        &[
            ("FMERGE_PUSH_REF", reference.as_str()),
            ("FMERGE_PUSH_AUTH", "env"),
            ("FMERGE_REGISTRY_USER", reg.user.as_str()),
            ("FMERGE_REGISTRY_PASSWORD", reg.password.as_str()),
            ("DOCKER_CONFIG", empty.path().to_str().unwrap()),
        ],
    );
    assert!(
        !text.contains(&reg.password),
        "the password was printed:\n{text}"
    );
    assert!(text.contains("FMERGE_REGISTRY_USER=fmerge-ci"), "{text}");
    // 2. docker's config.json (what `docker login` writes), auto-detected.
    let config = reg.docker_config_dir();
    let text = run_child(
        "child_push_with",
        &[
            ("FMERGE_PUSH_REF", reference.as_str()),
            ("FMERGE_PUSH_AUTH", "auto"),
            ("DOCKER_CONFIG", config.to_str().unwrap()),
        ],
    );
    assert!(text.contains("docker's config"), "{text}");
    assert!(
        !text.contains(&reg.password),
        "the password was printed:\n{text}"
    );
    // 3. No credentials at all: refused by the registry, clearly.
    let text = run_child(
        "child_push_with",
        &[
            ("FMERGE_PUSH_REF", reference.as_str()),
            ("FMERGE_PUSH_AUTH", "auto"),
            ("FMERGE_PUSH_EXPECT_FAIL", "1"),
            ("DOCKER_CONFIG", empty.path().to_str().unwrap()),
        ],
    );
    assert!(text.contains("refused"), "{text}");
    remove_local(&reference);
}

#[test]
#[ignore = "run by credentials_from_env_and_from_docker_config in its own process"]
fn child_push_with() {
    if !is_child("child_push_with") {
        return;
    }
    let reference = std::env::var("FMERGE_PUSH_REF").unwrap();
    let auth: Auth = std::env::var("FMERGE_PUSH_AUTH").unwrap().parse().unwrap();
    let mut options = quick_retries(auth);
    if let Ok(p) = std::env::var("FMERGE_PUSH_PROGRESS") {
        options.progress = p.parse().unwrap();
    }
    let result = push::push(&reference, &options);
    if std::env::var_os("FMERGE_PUSH_EXPECT_FAIL").is_some() {
        let err = result.expect_err("no credentials must fail");
        eprintln!("error as shown: {err:#}");
    } else {
        let pushed = result.expect("push");
        eprintln!("{pushed}");
    }
}

// ------------------------------------------------------------------- stack.yml

fn stack_spec() -> StackSpec {
    StackSpec {
        gateway: "http://127.0.0.1:8080".into(),
        members: vec!["write-home-timeline".into(), FUNCTION.into()],
        image: "docker.io/alice/write-home-timeline:3f2a9c81d0e4".into(),
        deployment: Deployment {
            environment: BTreeMap::from([("REDIS_URL".into(), "redis://redis:6379".into())]),
            secrets: vec!["redis-password".into()],
            ..Deployment::default()
        },
        callee_environment: vec![CalleeEnv {
            function: FUNCTION.into(),
            key: "REDIS_URL".into(),
            value: "redis://graph:6379".into(),
        }],
    }
}

#[test]
fn stack_yml_follows_faas_cli_schema() {
    let dir = tempfile::tempdir().unwrap();
    let path = stack::write(&stack_spec(), dir.path()).unwrap();
    assert_eq!(path, dir.path().join("stack.yml"));
    let text = std::fs::read_to_string(&path).unwrap();
    eprintln!("{text}");
    assert!(text.contains("version: 1.0\n"), "{text}");
    let v: serde_yaml_ng::Value = serde_yaml_ng::from_str(&text).unwrap();
    assert_eq!(v["provider"]["name"], "openfaas");
    assert_eq!(v["provider"]["gateway"], "http://127.0.0.1:8080");
    let functions = v["functions"].as_mapping().unwrap();
    assert_eq!(
        functions.len(),
        1,
        "one merged function, named after the caller"
    );
    let f = &v["functions"]["write-home-timeline"];
    assert_eq!(f["lang"], "dockerfile");
    assert_eq!(f["skip_build"], true);
    assert_eq!(
        f["image"],
        "docker.io/alice/write-home-timeline:3f2a9c81d0e4"
    );
    assert_eq!(f["environment"]["REDIS_URL"], "redis://redis:6379");
    assert_eq!(
        f["environment"]["SOCIAL_GRAPH_GET_FOLLOWERS__REDIS_URL"],
        "redis://graph:6379"
    );
    assert_eq!(f["secrets"][0], "redis-password");
    assert_eq!(f["labels"]["org.fmerge.caller"], "write-home-timeline");
    assert_eq!(f["labels"]["org.fmerge.member-1"], FUNCTION);
    assert_eq!(f["labels"]["org.fmerge.member-count"], "2");
    assert_eq!(
        f["annotations"]["org.fmerge.members"],
        format!("write-home-timeline,{FUNCTION}")
    );
    // Only stack.yml is in the directory: the temp file was renamed, not left behind.
    let names: Vec<PathBuf> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(names, vec![path.clone()]);
    // Rewriting replaces it whole.
    let mut s = stack_spec();
    s.image = "127.0.0.1:5000/write-home-timeline:v2".into();
    stack::write(&s, dir.path()).unwrap();
    assert!(
        std::fs::read_to_string(&path)
            .unwrap()
            .contains("127.0.0.1:5000/write-home-timeline:v2")
    );
}

#[test]
fn stack_yml_rejects_bad_input_and_names_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let check = |s: StackSpec, want: &[&str]| {
        let err = format!("{:#}", stack::write(&s, dir.path()).unwrap_err());
        for w in want {
            assert!(err.contains(w), "{err:?} lacks {w:?}");
        }
        assert!(err.contains("fix:"), "{err}");
        assert!(
            !Path::new(&dir.path().join("stack.yml")).exists(),
            "nothing is written on error"
        );
    };
    let long = "a".repeat(64);
    check(
        StackSpec {
            members: vec![long.clone()],
            ..stack_spec()
        },
        &[&long, "more than 63"],
    );
    check(
        StackSpec {
            members: vec!["Write_Home".into()],
            ..stack_spec()
        },
        &["\"Write_Home\"", "write-home"],
    );
    check(
        StackSpec {
            members: vec!["ok".into(), "-bad".into()],
            ..stack_spec()
        },
        &["\"-bad\""],
    );
    check(
        StackSpec {
            members: vec![],
            ..stack_spec()
        },
        &["member list is empty"],
    );
    check(
        StackSpec {
            gateway: "127.0.0.1:8080".into(),
            ..stack_spec()
        },
        &["not an http(s) URL"],
    );
    check(
        StackSpec {
            image: String::new(),
            ..stack_spec()
        },
        &["no image"],
    );
    check(
        StackSpec {
            image: "Bad Image".into(),
            ..stack_spec()
        },
        &["not a valid image reference"],
    );
    check(
        StackSpec {
            callee_environment: vec![CalleeEnv {
                function: "other".into(),
                key: "K".into(),
                value: "v".into(),
            }],
            ..stack_spec()
        },
        &["not a merged callee"],
    );
    check(
        StackSpec {
            deployment: Deployment {
                environment: BTreeMap::from([("DB_PASSWORD".into(), "x".into())]),
                ..stack_spec().deployment
            },
            ..stack_spec()
        },
        &["secret"],
    );
    check(
        StackSpec {
            deployment: Deployment {
                labels: BTreeMap::from([("team".into(), "a b".into())]),
                ..stack_spec().deployment
            },
            ..stack_spec()
        },
        &["Kubernetes"],
    );
    let longest = "b".repeat(63);
    let ok = StackSpec {
        members: vec![longest.clone()],
        callee_environment: vec![],
        ..stack_spec()
    };
    stack::write(&ok, dir.path()).expect("63 characters is allowed");
}
