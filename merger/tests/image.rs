//! The image, push and stack.yml stages against the real Docker Engine and a real
//! registry (Debian's `docker-registry`) on 127.0.0.1.
//!
//! Run: `cargo test --release -p fmerge --test image`. Where no engine exists (no
//! `/var/run/docker.sock`, no `DOCKER_HOST`) the engine tests print why and return;
//! the stack.yml tests always run.
//!
//! Until merged binaries are available here, the image holds a real unmerged
//! OpenFaaS function (`social-graph-get-followers`).

#[path = "support/registry.rs"]
mod registry;

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use fmerge_ship::image::{self, BuiltImage, ImageSpec, engine};
use fmerge_ship::push::{self, Auth, Credentials, Progress, PushOptions};
use fmerge_ship::stack_out::{self as stack, CalleeEnv, StackSpec};
use futures_util::StreamExt as _;
use registry::{Container, Registry, docker, docker_ok, unique, wait_http};

const FUNCTION: &str = "social-graph-get-followers";

/// Skips without an Engine; otherwise holds the Engine for the rest of the
/// test. These tests build identical content, so their images share one ID:
/// one test's `docker rmi` would delete the image another is about to tag.
macro_rules! need_engine {
    () => {
        if let Some(reason) = registry::engine_skip_reason() {
            eprintln!("SKIPPED: {reason}");
            return;
        }
        let _engine = engine();
    };
}

fn engine() -> std::sync::MutexGuard<'static, ()> {
    static ENGINE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    ENGINE.lock().unwrap_or_else(|e| e.into_inner())
}

fn spec(tag: &str) -> ImageSpec {
    ImageSpec {
        binary: registry::function_binary().to_path_buf(),
        name: FUNCTION.into(),
        tag: Some(tag.into()),
        members: vec![FUNCTION.into()],
        env: vec![(
            "SOCIAL_GRAPH_GET_FOLLOWERS__REDIS_URL".into(),
            "redis://127.0.0.1:6379".into(),
        )],
        source_revision: Some("0123456789abcdef".into()),
        dockerfile: fmerge::assets::DOCKERFILE.into(),
        ..ImageSpec::default()
    }
}

fn quick_retries(auth: Auth) -> PushOptions {
    PushOptions {
        auth,
        progress: Progress::Plain,
        attempts: 2,
        min_delay: Duration::from_millis(100),
        max_delay: Duration::from_millis(200),
    }
}

fn remove_local(reference: &str) {
    let _ = docker(None, &["rmi", "-f", reference]);
}

/// Exports `reference` with the Engine API (`docker save`): {path in archive: bytes}.
fn export(reference: &str) -> BTreeMap<String, Vec<u8>> {
    let bytes = engine::block_on(async {
        let d = engine::connect().await.unwrap();
        let mut s = d.export_image(reference);
        let mut all = Vec::new();
        while let Some(chunk) = s.next().await {
            all.extend_from_slice(&chunk.expect("export chunk"));
        }
        all
    })
    .unwrap();
    untar(&bytes)
}

fn untar(bytes: &[u8]) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut ar = tar::Archive::new(bytes);
    for e in ar.entries().unwrap() {
        let mut e = e.unwrap();
        let path = e.path().unwrap().to_string_lossy().into_owned();
        let mut data = Vec::new();
        e.read_to_end(&mut data).unwrap();
        out.insert(path, data);
    }
    out
}

/// Every entry of every layer of an exported image: (path, mode, bytes).
fn layer_entries(saved: &BTreeMap<String, Vec<u8>>) -> Vec<(String, u32, Vec<u8>)> {
    let manifest: serde_json::Value = serde_json::from_slice(&saved["manifest.json"]).unwrap();
    let mut out = Vec::new();
    for layer in manifest[0]["Layers"].as_array().unwrap() {
        let data = &saved[layer.as_str().unwrap()];
        let mut ar = tar::Archive::new(data.as_slice());
        for e in ar.entries().unwrap() {
            let mut e = e.unwrap();
            let path = e
                .path()
                .unwrap()
                .to_string_lossy()
                .trim_end_matches('/')
                .to_owned();
            let mode = e.header().mode().unwrap();
            let mut d = Vec::new();
            e.read_to_end(&mut d).unwrap();
            out.push((path, mode, d));
        }
    }
    out
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// Runs `reference` with docker `options` and its Redis at `host:redis_port`;
/// returns its reply to `{"user_id":7}` and its logs.
fn followers_reply(
    reference: &str,
    options: &[&str],
    host: &str,
    redis_port: u16,
) -> ((u16, String), String) {
    let port = registry::free_port();
    let c = Container::run_with(
        reference,
        options,
        &[
            ("port", port.to_string()),
            ("REDIS_URL", format!("redis://{host}:{redis_port}")),
        ],
    );
    wait_http(port, "/_/health", Duration::from_secs(20))
        .unwrap_or_else(|e| panic!("{e}\n{}", c.logs()));
    let reply = registry::post(port, "/", r#"{"user_id":7}"#);
    (reply, c.logs())
}

#[test]
fn build_push_pull_run_answers_health() {
    need_engine!();
    let reg = Registry::start();
    let reference = format!("{}/{FUNCTION}:{}", reg.host(), unique("t"));
    let built: BuiltImage = image::build(&spec(&reference)).expect("build");
    eprintln!("{built}");
    assert_eq!(built.reference, reference);
    assert!(
        built.size_bytes > 1_000_000 && built.size_bytes < 60_000_000,
        "size {}",
        built.size_bytes
    );

    let creds = Credentials::new(reg.user.clone(), reg.password.clone());
    let pushed =
        push::push(&reference, &quick_retries(Auth::Explicit(creds.clone()))).expect("push");
    eprintln!("{pushed}");
    assert!(pushed.digest.starts_with("sha256:"), "{pushed:?}");
    let tag = reference.rsplit(':').next().unwrap();
    assert_eq!(reg.catalog(), vec![FUNCTION.to_owned()]);
    assert_eq!(
        reg.tags(FUNCTION),
        vec![tag.to_owned()],
        "exactly the built tag is pushed"
    );

    // A second push of the same tag is safe and gives the same digest.
    let again = push::push(&reference, &quick_retries(Auth::Explicit(creds))).expect("re-push");
    assert_eq!(again.digest, pushed.digest);

    // Pull it back with a client we did not write, then run it.
    remove_local(&reference);
    assert!(
        !docker(None, &["image", "inspect", &reference])
            .status
            .success(),
        "local image still there"
    );
    let config = reg.docker_config_dir();
    docker_ok(Some(&config), &["pull", &reference]);
    let port = registry::free_port();
    let c = Container::run(&reference, &[("port", port.to_string())]);
    let answer = wait_http(port, "/_/health", Duration::from_secs(20));
    let logs = c.logs();
    let (status, body) = answer.unwrap_or_else(|e| panic!("{e}\ncontainer logs:\n{logs}"));
    assert_eq!(status, 200, "{body}\n{logs}");
    drop(c);

    // It does real work: a host name resolves through the image's NSS setup
    // (nsswitch.conf + glibc), and it reads Redis.
    let redis = fmerge_testkit::Redis::start();
    redis::cmd("ZADD")
        .arg("social-graph:followers:7")
        .arg(1)
        .arg(100)
        .arg(2)
        .arg(200)
        .exec(&mut redis.conn())
        .unwrap();
    let ((status, body), logs) = followers_reply(
        &reference,
        &["--add-host", "redis.fmerge.test:127.0.0.1"],
        "redis.fmerge.test",
        redis.port(),
    );
    assert_eq!(
        (status, body.as_str()),
        (200, r#"{"followers":[100,200]}"#),
        "{logs}"
    );

    // And through real DNS, as cluster names (`gateway.openfaas`) resolve: glibc's
    // resolver in the scratch image asks the DNS server the container is given.
    let dns = registry::DnsServer::start("redis.cluster.fmerge.test");
    let ((status, body), logs) = followers_reply(
        &reference,
        &["--dns", &dns.addr],
        "redis.cluster.fmerge.test",
        redis.port(),
    );
    assert_eq!(
        (status, body.as_str()),
        (200, r#"{"followers":[100,200]}"#),
        "{logs}\ndns log:\n{}",
        dns.log()
    );
    assert!(
        dns.log().contains("redis.cluster.fmerge.test"),
        "the name was not resolved through DNS:\n{}",
        dns.log()
    );

    // It runs as the non-root user, with the OpenFaaS port and our labels.
    let inspect = docker_ok(None, &["image", "inspect", &reference]);
    let v: serde_json::Value = serde_json::from_str(&inspect).unwrap();
    let cfg = &v[0]["Config"];
    assert_eq!(cfg["User"], "10001:10001");
    assert!(cfg["ExposedPorts"]["8080/tcp"].is_object(), "{cfg}");
    assert!(
        cfg["Env"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e == "port=8080"),
        "{cfg}"
    );
    assert_eq!(cfg["Entrypoint"][0], format!("/usr/local/bin/{FUNCTION}"));
    assert_eq!(cfg["Labels"]["org.fmerge.members"], FUNCTION);
    assert_eq!(
        cfg["Labels"]["org.fmerge.version"],
        env!("CARGO_PKG_VERSION")
    );
    assert_eq!(
        cfg["Labels"]["org.opencontainers.image.revision"],
        "0123456789abcdef"
    );
    remove_local(&reference);
}

#[test]
fn wrong_password_is_refused_clearly_and_nothing_is_pushed() {
    need_engine!();
    let reg = Registry::start();
    let reference = format!("{}/{FUNCTION}:{}", reg.host(), unique("w"));
    image::build(&spec(&reference)).expect("build");
    let wrong = unique("wrong-password-");
    let t = Instant::now();
    let err = push::push(
        &reference,
        &quick_retries(Auth::Explicit(Credentials::new(
            reg.user.clone(),
            wrong.clone(),
        ))),
    )
    .expect_err("a wrong password must fail");
    let msg = format!("{err:#}");
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
    let err = push::push(
        &reference,
        &quick_retries(Auth::Explicit(Credentials::new("u", "irrelevant-pw"))),
    )
    .expect_err("no registry there");
    let msg = format!("{err:#}");
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
    let err = push::push(
        "127.0.0.1:5999/not-built-here:v1",
        &quick_retries(Auth::Anonymous),
    )
    .unwrap_err();
    let msg = format!("{err:#}");
    assert!(
        msg.contains("not in the local Docker Engine") && msg.contains("fix:"),
        "{msg}"
    );
    // Docker Hub without a namespace cannot be pushed to; said before any network use.
    let err = push::push("some-merge:abc", &quick_retries(Auth::Anonymous)).unwrap_err();
    assert!(
        format!("{err:#}").contains("docker.io/<user>/some-merge:abc"),
        "{err:#}"
    );
}

#[test]
fn interrupted_push_is_resumed_by_a_rerun() {
    need_engine!();
    let reg = Registry::start();
    let reference = format!("{}/{FUNCTION}:{}", reg.host(), unique("i"));
    image::build(&spec(&reference)).expect("build");
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
fn image_holds_what_the_function_needs_and_no_secret() {
    need_engine!();
    let reg = Registry::start();
    let reference = format!("{}/{FUNCTION}:{}", reg.host(), unique("c"));
    let built = image::build(&spec(&reference)).expect("build");
    push::push(
        &reference,
        &quick_retries(Auth::Explicit(Credentials::new(
            reg.user.clone(),
            reg.password.clone(),
        ))),
    )
    .expect("push");
    eprintln!(
        "test image size: {} bytes ({:.1} MiB)",
        built.size_bytes,
        built.size_bytes as f64 / 1048576.0
    );

    let saved = export(&reference);
    let entries = layer_entries(&saved);
    let find = |p: &str| entries.iter().find(|(path, _, _)| path == p);
    let bin = find(&format!("usr/local/bin/{FUNCTION}")).expect("binary in the image");
    assert_eq!(bin.2, std::fs::read(registry::function_binary()).unwrap());
    assert_eq!(bin.1 & 0o111, 0o111, "binary is executable");
    assert!(
        find("etc/ssl/certs/ca-certificates.crt").is_some_and(|e| e.2.len() > 10_000),
        "CA bundle"
    );
    let tmp = find("tmp").expect("/tmp in the image");
    assert_eq!(tmp.1 & 0o7777, 0o1777, "/tmp is world-writable and sticky");
    assert!(
        find("lib64/ld-linux-x86-64.so.2").is_some(),
        "the program interpreter"
    );
    for lib in [
        "libc.so.6",
        "libnss_dns.so.2",
        "libnss_files.so.2",
        "libresolv.so.2",
    ] {
        assert!(
            entries
                .iter()
                .any(|(p, _, _)| p.ends_with(&format!("/{lib}"))),
            "{lib} missing: {:?}",
            entries.iter().map(|e| &e.0).collect::<Vec<_>>()
        );
    }
    let passwd = String::from_utf8(find("etc/passwd").unwrap().2.clone()).unwrap();
    assert!(passwd.contains("app:x:10001:10001:"), "{passwd}");
    assert!(String::from_utf8_lossy(&find("etc/group").unwrap().2).contains("app:x:10001:"));
    assert!(
        String::from_utf8_lossy(&find("etc/nsswitch.conf").unwrap().2).contains("hosts: files dns")
    );
    assert!(find("home/app").is_some(), "home dir");

    // No credential anywhere: not in layers, config, manifest or labels.
    for (path, data) in &saved {
        assert!(
            !contains(data, reg.password.as_bytes()),
            "the registry password is in {path}"
        );
    }
    for (path, _, data) in &entries {
        assert!(
            !contains(data, reg.password.as_bytes()),
            "the registry password is in layer file {path}"
        );
        assert!(
            !path.contains(".docker"),
            "a docker config got into the image: {path}"
        );
    }
    remove_local(&reference);
}

#[test]
fn default_tag_is_name_and_content_hash_and_stable() {
    need_engine!();
    let mut s = spec("unused");
    s.tag = None;
    s.repository_prefix = Some("127.0.0.1:5999/fmerge-test".into());
    let a = image::build(&s).expect("build");
    let b = image::build(&s).expect("rebuild");
    assert_eq!(a.reference, b.reference, "same inputs, same tag");
    assert!(
        a.reference
            .starts_with(&format!("127.0.0.1:5999/fmerge-test/{FUNCTION}:")),
        "{}",
        a.reference
    );
    assert_eq!(a.reference.rsplit(':').next().unwrap().len(), 12);
    s.env.push(("EXTRA".into(), "1".into()));
    let c = image::build(&s).expect("build with other env");
    assert_ne!(a.reference, c.reference, "different content, different tag");
    for img in [&a.reference, &a.id, &b.id, &c.reference, &c.id] {
        remove_local(img);
    }
}

#[test]
fn secrets_are_refused_as_image_env() {
    // No engine needed: refused before any engine call.
    let mut s = spec("127.0.0.1:5999/x:v1");
    s.env.push(("REDIS_PASSWORD".into(), "hunter22".into()));
    if registry::engine_skip_reason().is_some() {
        return;
    }
    let err = image::build(&s).unwrap_err();
    let msg = format!("{err:#}");
    assert!(
        msg.contains("/var/openfaas/secrets") && !msg.contains("hunter22"),
        "{msg}"
    );
}

/// Runs one `child_*` test in a fresh process with `env`, so that process-wide
/// variables (DOCKER_HOST, credentials) never leak into the tests running beside it.
fn run_child(test: &str, env: &[(&str, &str)]) -> String {
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

fn is_child(test: &str) -> bool {
    std::env::var("FMERGE_TEST_CHILD").as_deref() == Ok(test)
}

#[test]
fn unreachable_engine_is_a_clear_error() {
    need_engine!(); // (needs the binary built; the engine itself is not used)
    let _ = registry::function_binary();
    let text = run_child(
        "child_unreachable_engine",
        &[("DOCKER_HOST", "unix:///tmp/fmerge-no-engine-here.sock")],
    );
    eprintln!("{text}");
}

#[test]
#[ignore = "run by unreachable_engine_is_a_clear_error in its own process"]
fn child_unreachable_engine() {
    if !is_child("child_unreachable_engine") {
        return;
    }
    let err = image::build(&spec("127.0.0.1:5999/x:v1")).unwrap_err();
    let msg = format!("{err:#}");
    eprintln!("build error as shown: {msg}");
    assert!(
        msg.contains("cannot reach the Docker Engine at unix:///tmp/fmerge-no-engine-here.sock"),
        "{msg}"
    );
    assert!(msg.contains("fix:") && msg.contains("DOCKER_HOST"), "{msg}");
    let err = push::push("127.0.0.1:5999/x:v1", &PushOptions::default()).unwrap_err();
    assert!(
        format!("{err:#}").contains("cannot reach the Docker Engine"),
        "{err:#}"
    );
}

#[test]
fn credentials_from_env_and_from_docker_config() {
    need_engine!();
    let reg = Registry::start();
    let reference = format!("{}/{FUNCTION}:{}", reg.host(), unique("e"));
    image::build(&spec(&reference)).expect("build");
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
        environment: vec![("REDIS_URL".into(), "redis://redis:6379".into())],
        callee_environment: vec![CalleeEnv {
            function: FUNCTION.into(),
            key: "REDIS_URL".into(),
            value: "redis://graph:6379".into(),
        }],
        secrets: vec!["redis-password".into()],
        ..StackSpec::default()
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
            environment: vec![("DB_PASSWORD".into(), "x".into())],
            ..stack_spec()
        },
        &["secret"],
    );
    check(
        StackSpec {
            labels: vec![("team".into(), "a b".into())],
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
