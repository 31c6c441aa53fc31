//! The image of a watchdog-process group (issue 49, item 5) against the
//! real Docker Engine and the real of-watchdog: `fmerge build -f stack.yml
//! --image --watchdog PATH` puts of-watchdog in the `FROM scratch` image as
//! its entrypoint, running the merged binary as `fprocess` in the caller's
//! mode (read from the caller's Dockerfile); the container answers
//! `/_/health` and runs the caller; `stack.merged.yml` keeps `fprocess`
//! and `mode` and namespaces the callee's settings. Without `--watchdog`,
//! `--image` is refused before cargo starts.
//!
//! The pair is written here (std only, so it builds in seconds): `front`
//! answers `front got: <body>` and calls `back` only on input `call`, so a
//! run without a gateway still answers.
//!
//! The container runs on the Engine's bridge network with its ports
//! published on 127.0.0.1, not `--network host`: of-watchdog 0.11.6 always
//! binds its metrics port 8081, which another test may hold on the host.
//!
//! Run: `cargo test --release -p fmerge --test watchdog_image`

#[path = "support/container.rs"]
mod container;
mod support;

use container::{docker, engine_and_watchdog, image_config, image_flags, test_image, wait_ready};

use std::path::Path;
use std::time::Duration;
use support::{Ran, assert_says, fmerge_in, free_port, refused_before_cargo};

const FRONT: &str = r#"//! front: echoes its input; on `call`, calls back through the gateway.
use std::io::{Read as _, Write as _};

fn main() {
    let mut input = String::new();
    std::io::stdin().read_to_string(&mut input).unwrap();
    if input.trim() == "call" {
        let mut s = std::net::TcpStream::connect("gateway.openfaas:8080").unwrap();
        let body = "from front";
        write!(s, "POST /function/back HTTP/1.0\r\nContent-Length: {}\r\n\r\n{body}", body.len()).unwrap();
        let mut reply = String::new();
        s.read_to_string(&mut reply).unwrap();
        print!("{reply}");
        return;
    }
    print!("front got: {input}");
}
"#;

const BACK: &str = r#"//! back: answers what it was sent, with its level.
use std::io::Read as _;

fn main() {
    let mut input = String::new();
    std::io::stdin().read_to_string(&mut input).unwrap();
    let level = std::env::var("LEVEL").unwrap_or_default();
    print!("back {level}: {input}");
}
"#;

/// The pair, each function its own package with a team's Dockerfile, and
/// the stack: front runs in serializing mode, back sets `LEVEL`.
fn pair() -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix("fmerge-wd-image-")
        .tempdir()
        .unwrap();
    std::fs::write(
        dir.path().join("Cargo.toml"),
        "[workspace]\nresolver = \"3\"\nmembers = [\"front\", \"back\"]\n",
    )
    .unwrap();
    for (name, source, mode) in [("front", FRONT, "serializing"), ("back", BACK, "streaming")] {
        let folder = dir.path().join(name);
        std::fs::create_dir_all(folder.join("src")).unwrap();
        std::fs::write(
            folder.join("Cargo.toml"),
            format!("[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2024\"\n"),
        )
        .unwrap();
        std::fs::write(folder.join("src/main.rs"), source).unwrap();
        std::fs::write(
            folder.join("Dockerfile"),
            format!(
                "FROM ghcr.io/openfaas/of-watchdog:0.11.6 AS watchdog\n\
                 FROM rust:1-bookworm AS build\nCOPY . .\nRUN cargo build --release\n\
                 FROM debian:bookworm-slim\n\
                 COPY --from=watchdog /fwatchdog /usr/bin/fwatchdog\n\
                 COPY --from=build /target/release/{name} /usr/bin/{name}\n\
                 ENV fprocess=\"{name}\" mode={mode}\n\
                 CMD [\"fwatchdog\"]\n"
            ),
        )
        .unwrap();
    }
    std::fs::write(
        dir.path().join("stack.yml"),
        "version: 1.0\nprovider:\n  name: openfaas\nfunctions:\n\
         \x20 front:\n    lang: dockerfile\n    handler: ./front\n    image: team/front:1\n\
         \x20 back:\n    lang: dockerfile\n    handler: ./back\n    image: team/back:1\n    environment:\n      LEVEL: \"3\"\n",
    )
    .unwrap();
    dir
}

/// `fmerge build` of the pair in `dir` from its stack, with `extra`.
fn build(dir: &Path, extra: &[&str]) -> Ran {
    build_from(dir, &["-f", "stack.yml"], extra)
}

/// `fmerge build` of the pair in `dir`, found as `source` says (`-f
/// stack.yml`, `--manifest-path …`), with `extra`, into `<dir>/out`.
fn build_from(dir: &Path, source: &[&str], extra: &[&str]) -> Ran {
    let out = dir.join("out");
    let mut args = source.to_vec();
    args.extend(["front", "back", "--allow-uncalled"]);
    args.extend(["--out", out.to_str().unwrap()]);
    args.extend(extra);
    fmerge_in(dir, &args)
}

#[test]
fn an_image_without_a_watchdog_is_refused_before_cargo_starts() {
    let dir = pair();
    refused_before_cargo(
        build(dir.path(), &["--image"]),
        &[
            "error: front is a watchdog process (a `main` run once per request",
            "no --watchdog is given",
            "\nfix: add --watchdog PATH",
        ],
    );
    // A watchdog that needs a loader the image lacks is refused too.
    let Ran { ok, stderr, .. } = build(dir.path(), &["--image", "--watchdog", "/bin/sh"]);
    assert!(!ok && stderr.contains("is dynamically linked"), "{stderr}");
}

#[test]
fn the_image_runs_the_merged_binary_under_of_watchdog_in_the_callers_mode() {
    let Some(watchdog) = engine_and_watchdog() else {
        return;
    };
    let dir = pair();
    let (tag, mut cleanup) = test_image("fmerge-wd/front");
    let Ran { ok, stdout, stderr } = build(dir.path(), &image_flags(&tag, &watchdog));
    assert!(ok, "fmerge build --image failed:\n{stderr}");
    assert_says(&stdout, &[&tag]);
    assert_says(
        &stderr,
        &[
            &format!("image {tag} built: "),
            " MiB of the image) runs /usr/local/bin/fmerge-warm /usr/local/bin/front-merged in serializing mode, as it ran front",
        ],
    );

    // The image's config, through the Engine.
    let config = image_config(
        &tag,
        &[
            "fprocess=/usr/local/bin/fmerge-warm /usr/local/bin/front-merged",
            "mode=serializing",
            "port=8080",
        ],
    );
    assert_eq!(config.entrypoint, ["/usr/bin/fwatchdog"]);

    // Run it: of-watchdog's health, metrics, and the caller's answer.
    let (port, metrics) = (free_port(), free_port());
    let id = docker(&[
        "run",
        "-d",
        "-p",
        &format!("127.0.0.1:{port}:8080"),
        "-p",
        &format!("127.0.0.1:{metrics}:8081"),
        &tag,
    ]);
    cleanup.0.push(vec!["rm".into(), "-f".into(), id.clone()]);
    wait_ready(&id, port, "/_/health");
    let answers = |body: &str| {
        let reply = fmerge_testkit::post(&format!("http://127.0.0.1:{port}/"), body);
        assert_eq!(
            (reply.status, reply.body),
            (200, format!("front got: {body}")),
            "{}",
            docker(&["logs", &id])
        );
    };
    answers("hello");
    // The first start left the warm server (the merged binary, waiting,
    // with no request in flight) in the container, as the launcher and the
    // image's writable /tmp allow; the next request is one of its processes.
    let top = docker(&["top", &id, "-o", "pid,args"]);
    assert!(
        top.lines()
            .any(|l| l.trim_end().ends_with("/usr/local/bin/front-merged")),
        "no warm server in the container:\n{top}"
    );
    answers("again");
    let scrape = fmerge_testkit::wait_http(metrics, "/metrics", Duration::from_secs(5)).unwrap();
    assert!(
        scrape.body.contains("http_requests_total"),
        "{}",
        scrape.body
    );

    // stack.merged.yml: the merged entry keeps of-watchdog's contract, and
    // the callee's settings are namespaced as for any merge.
    let merged = std::fs::read_to_string(dir.path().join("stack.merged.yml")).unwrap();
    let doc: serde_yaml_ng::Value = serde_yaml_ng::from_str(&merged).unwrap();
    let env = &doc["functions"]["front"]["environment"];
    assert_eq!(
        env["fprocess"], "/usr/local/bin/fmerge-warm /usr/local/bin/front-merged",
        "{merged}"
    );
    assert_eq!(env["mode"], "serializing", "{merged}");
    assert_eq!(env["BACK__LEVEL"], "3", "{merged}");
    assert_eq!(doc["functions"]["front"]["image"], tag.as_str(), "{merged}");
}

/// Built without a stack file (`--manifest-path`), the image runs the
/// merged binary in the caller's mode read from the Dockerfile beside its
/// package, as the build reads it (issue 49: that path had no test).
#[test]
fn without_a_stack_the_image_takes_the_callers_mode_from_its_dockerfile() {
    let Some(watchdog) = engine_and_watchdog() else {
        return;
    };
    let dir = pair();
    let (tag, _cleanup) = test_image("fmerge-wd/front-nostack");
    let manifest = dir.path().join("Cargo.toml");
    let source = ["--manifest-path", manifest.to_str().unwrap()];
    let Ran { ok, stderr, .. } = build_from(dir.path(), &source, &image_flags(&tag, &watchdog));
    assert!(ok, "fmerge build --image failed:\n{stderr}");
    assert_says(&stderr, &["in serializing mode, as it ran front"]);
    let env = image_config(
        &tag,
        &[
            "fprocess=/usr/local/bin/fmerge-warm /usr/local/bin/front-merged",
            "mode=serializing",
        ],
    )
    .env;
    assert!(
        !env.iter().any(|e| e.starts_with("upstream_url=")),
        "a watchdog process has no upstream: {env:?}"
    );
}
