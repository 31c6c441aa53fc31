//! `fmerge build -f stack.yml` on functions in the watchdog-process form
//! (issue 49) that teams build with a Dockerfile of their own (`lang:
//! dockerfile`): fmerge reads each Dockerfile's `fprocess` and `mode`
//! (never builds it), under the stack's `environment:`, says each
//! function's form and mode, merges the `watchdog` fixture chain whose
//! packages are CamelCase under kebab-case stack keys, and refuses before
//! cargo starts a mode it does not merge or an `fprocess` of another binary;
//! `fmerge graph` finds the calls the chain makes through its own HTTP
//! clients, and `fmerge plan` and `build --plan` take it.
//!
//! Run: `cargo test --release -p fmerge --test watchdog_stack`

mod support;

use std::path::Path;
use support::{
    Ran, assert_says, edges_of, fixture, fmerge, fmerge_in, graph_of_stack, plan_and_build,
    refused_before_cargo, weighed_graph,
};

/// The chain: (stack key, package, the Dockerfile's ENV line).
const CHAIN: [(&str, &str, &str); 4] = [
    (
        "write-home-timeline",
        "WriteHomeTimeline",
        "ENV fprocess=\"WriteHomeTimeline\"",
    ),
    (
        "social-graph-get-followers",
        "SocialGraphGetFollowers",
        "ENV fprocess=SocialGraphGetFollowers mode=streaming",
    ),
    (
        "user-filter",
        "UserFilter",
        "ENV fprocess /usr/bin/UserFilter",
    ),
    (
        "audit-log",
        "AuditLog",
        "ENV mode=streaming \\\n    fprocess=\"AuditLog\"",
    ),
];

/// A Dockerfile as a team writes one for a Rust function behind
/// of-watchdog: a stage with the watchdog, the cargo build, `env_line`.
fn dockerfile(package: &str, env_line: &str) -> String {
    format!(
        "FROM ghcr.io/openfaas/of-watchdog:0.11.6 AS watchdog\n\
         FROM rust:1-bookworm AS build\n\
         WORKDIR /home/rust\n\
         COPY . .\n\
         RUN cargo build --release -p {package}\n\
         \n\
         FROM debian:bookworm-slim\n\
         COPY --from=watchdog /fwatchdog /usr/bin/fwatchdog\n\
         COPY --from=build /home/rust/target/release/{package} /usr/bin/{package}\n\
         {env_line}\n\
         EXPOSE 8080\n\
         HEALTHCHECK --interval=3s CMD [ -e /tmp/.lock ] || exit 1\n\
         CMD [\"fwatchdog\"]\n"
    )
}

/// The fixture chain with a Dockerfile in each function's folder and a
/// stack.yml naming them by their OpenFaaS names; `extra` is added to
/// audit-log's entry.
fn chain_stack(extra: &str) -> tempfile::TempDir {
    let ws = fixture("watchdog", &[]);
    let mut stack = String::from("version: 1.0\nprovider:\n  name: openfaas\nfunctions:\n");
    for (key, package, env_line) in CHAIN {
        std::fs::write(
            ws.path().join(package).join("Dockerfile"),
            dockerfile(package, env_line),
        )
        .unwrap();
        stack.push_str(&format!(
            "  {key}:\n    lang: dockerfile\n    handler: ./{package}\n    image: team/{key}:1\n"
        ));
    }
    stack.push_str(extra);
    std::fs::write(ws.path().join("stack.yml"), stack).unwrap();
    ws
}

fn build(ws: &Path, members: &[&str]) -> Ran {
    build_with(ws, members, &[])
}

/// [`build`] with `env` added.
fn build_with(ws: &Path, members: &[&str], env: &[(&str, &str)]) -> Ran {
    let out = ws.join("out");
    let mut args = vec!["-f", "stack.yml"];
    args.extend(members);
    args.extend(["--out", out.to_str().unwrap()]);
    fmerge(ws, &args, env)
}

/// A variable only the caller's stack entry sets.
const CALLER_OWN: &str = "WHT_OWN_SETTING";

const KEYS: [&str; 4] = [CHAIN[0].0, CHAIN[1].0, CHAIN[2].0, CHAIN[3].0];

#[test]
fn a_stack_of_dockerfile_functions_merges_and_says_each_form_and_mode() {
    // audit-log's stack environment wins over its Dockerfile's mode.
    let ws = chain_stack("    environment:\n      mode: serializing\n");
    // A setting of the caller's own deployment, which the members'
    // processes must not see (the shim's table lists it).
    let stack_path = ws.path().join("stack.yml");
    let image = format!("image: team/{}:1\n", KEYS[0]);
    let stack = std::fs::read_to_string(&stack_path).unwrap().replacen(
        &image,
        &format!("{image}    environment:\n      {CALLER_OWN}: \"x\"\n"),
        1,
    );
    std::fs::write(&stack_path, stack).unwrap();
    let Ran { ok, stdout, stderr } = build(ws.path(), &KEYS);
    assert!(ok, "fmerge build failed:\n{stderr}");
    assert_says(
        &stderr,
        &[
            "write-home-timeline: of-watchdog runs `WriteHomeTimeline` in streaming mode (from its Dockerfile)",
            "social-graph-get-followers: of-watchdog runs `SocialGraphGetFollowers` in streaming mode (from its Dockerfile)",
            "user-filter: of-watchdog runs `/usr/bin/UserFilter` in streaming mode (from its Dockerfile)",
            "audit-log: of-watchdog runs `AuditLog` in serializing mode (from its Dockerfile and stack environment)",
        ],
    );
    // The form, as the build found it, for each function by its stack key.
    // (The pipeline's wording: `<name> is a … watchdog process … function`.)
    for key in KEYS {
        let said = stderr.lines().any(|l| {
            l.split("; ").any(|part| {
                part.contains(&format!("{key} is a")) && part.contains("watchdog process")
            })
        });
        assert!(said, "the form of {key} is not said:\n{stderr}");
    }
    let binary = Path::new(stdout.lines().last().expect("the binary's path"));
    assert!(binary.is_file(), "{stdout}");
    assert_eq!(
        binary.file_name().unwrap(),
        "write-home-timeline-merged",
        "named after the caller's stack key"
    );
    // The members answer to their OpenFaaS names (the stack keys, which
    // their callers post to), not their packages'.
    let bytes = std::fs::read(binary).unwrap();
    assert!(
        bytes
            .windows(CALLER_OWN.len())
            .any(|w| w == CALLER_OWN.as_bytes()),
        "the caller's own settings are not in the shim's table"
    );
    for key in KEYS {
        assert!(
            bytes.windows(key.len()).any(|w| w == key.as_bytes()),
            "{key} is not named in the merged binary"
        );
    }
}

/// A stack environment that does not fit the package is refused before
/// cargo starts: a mode its code does not serve, an fprocess that is no
/// binary of it.
#[test]
fn a_stack_environment_that_does_not_fit_the_package_is_refused_before_cargo_starts() {
    for (environment, said) in [
        (
            "    environment:\n      mode: http\n",
            [
                "error: function audit-log runs in of-watchdog mode `http` (its Dockerfile and stack environment)",
                "but its package AuditLog depends on no crate fmerge knows to serve HTTP with",
                "\nfix: leave audit-log out of the group",
            ],
        ),
        (
            "    environment:\n      fprocess: /usr/bin/SomethingElse --flag\n",
            [
                "error: function audit-log: of-watchdog runs `SomethingElse`",
                "which is not a binary of its package AuditLog (it has AuditLog)",
                "\nfix: ",
            ],
        ),
    ] {
        let ws = chain_stack(environment);
        refused_before_cargo(build(ws.path(), &KEYS), &said);
    }
}

/// The launcher a watchdog-process caller gets links statically: a C
/// toolchain without the static C library is refused before cargo starts,
/// not at the launcher's link after the build.
#[test]
fn a_c_toolchain_without_the_static_c_library_is_refused_before_cargo_starts() {
    let ws = chain_stack("");
    let bin = ws.path().join("fake-cc");
    std::fs::create_dir(&bin).unwrap();
    let real_cc = fmerge_testkit::need("cc", "gcc");
    std::fs::write(
        bin.join("cc"),
        format!(
            "#!/bin/sh\ncase \"$1\" in -print-file-name=libc.a) echo libc.a; exit 0;; esac\nexec {} \"$@\"\n",
            real_cc.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(bin.join("cc"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    refused_before_cargo(
        build_with(ws.path(), &KEYS, &[("PATH", &path)]),
        &[
            "error: write-home-timeline is started by of-watchdog per request",
            "this machine's C toolchain has no static C library",
            "\nfix: install it (Debian: `apt-get install libc6-dev`",
        ],
    );
}

/// Built without a stack file, a function's mode is its Dockerfile's, the
/// one beside its package, and is checked before cargo starts as a stack
/// entry's is.
#[test]
fn without_a_stack_the_dockerfile_beside_a_package_is_read() {
    let ws = chain_stack("");
    let dockerfile = ws.path().join("AuditLog/Dockerfile");
    let text = std::fs::read_to_string(&dockerfile).unwrap();
    std::fs::write(&dockerfile, format!("{text}ENV mode=http\n")).unwrap();
    let out = ws.path().join("out");
    let manifest = ws.path().join("Cargo.toml");
    let Ran { ok, stderr, .. } = fmerge_in(
        ws.path(),
        &[
            "WriteHomeTimeline",
            "SocialGraphGetFollowers",
            "UserFilter",
            "AuditLog",
            "--manifest-path",
            manifest.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert!(!ok, "{stderr}");
    assert_says(
        &stderr,
        &[
            "error: function AuditLog runs in of-watchdog mode `http` (its Dockerfile)",
            "depends on no crate fmerge knows to serve HTTP with",
        ],
    );
    assert!(
        !stderr.contains("building 4 functions"),
        "cargo started:\n{stderr}"
    );
}

/// The calls go through each team's own client and helper (`make_rpc` with
/// libcurl, `call_function` with reqwest, inline ureq), by literal names:
/// `fmerge graph` finds each, through the helper, in the function that
/// passes the name; `fmerge plan` groups the chain and `build --plan`
/// builds it.
#[test]
fn graph_and_plan_see_the_calls_through_the_teams_own_clients() {
    let ws = chain_stack("");
    let dir = ws.path();
    let edge = |from: &str, to: &str, within: &str| {
        (from.to_string(), to.to_string(), vec![within.to_string()])
    };
    assert_eq!(
        edges_of(&graph_of_stack(dir, &[])),
        [
            edge("social-graph-get-followers", "user-filter", "main"),
            edge("user-filter", "audit-log", "audit"),
            edge("write-home-timeline", "social-graph-get-followers", "main"),
        ]
    );
    // The gateway's access log weighs those edges: 4 requests from
    // outside, each calling down the chain, 2 of them as far as audit-log.
    let calls = weighed_graph(
        dir,
        &[(KEYS[0], 4), (KEYS[1], 4), (KEYS[2], 2), (KEYS[3], 2)],
    );
    let weight = |from: &str, to: &str| {
        calls["edges"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["from"] == from && e["to"] == to)
            .and_then(|e| e["calls"].as_f64())
    };
    assert_eq!(weight(KEYS[0], KEYS[1]), Some(4.0), "{calls}");
    assert_eq!(weight(KEYS[1], KEYS[2]), Some(2.0), "{calls}");
    assert_eq!(weight(KEYS[2], KEYS[3]), Some(2.0), "{calls}");
    plan_and_build(dir, &KEYS);
}
