//! Merging functions where OpenFaaS users keep them: each function its own
//! cargo project made by `faas-cli new --lang rust-fmerge`, named in a
//! stack file, merged with `fmerge build -f`, checked with the real faas-cli
//! (`generate`) and run against real Redis and nginx beside the unmerged
//! functions. faas-cli's own build of a template function: tests/template.rs.
//!
//! faas-cli comes from `$FAAS_CLI` or PATH (`ci/test` builds it from
//! ../shared/tools/faas-cli). Without it these tests say they were skipped,
//! except under `.ci/run` (FMERGE_REQUIRE_TOOLS=1), where that fails.
//! faas-cli runs with a dead loopback proxy, so it can reach no network.
//!
//! Run: `cargo test --release -p fmerge --test openfaas`

#[path = "support/faas.rs"]
mod faas;
mod support;

use faas::{faas, faas_cli, two_functions};
use std::path::Path;
use std::process::Command;
use support::{
    Function, Gateway, HttpReply, Ran, Redis, assert_says, built_binary, free_port, post,
    workspace_root,
};

/// The replies, and each Redis's contents.
type Outcome = (
    Vec<HttpReply>,
    Vec<std::collections::BTreeMap<String, String>>,
);

/// What `requests` sent to `url` answer and leave in `stores`.
fn run(url: &str, requests: &[&str], stores: &[&Redis]) -> Outcome {
    let replies = requests.iter().map(|r| post(url, r)).collect();
    (replies, stores.iter().map(|s| s.dump()).collect())
}

const REQUESTS: &[&str] = &["one", "two", "three"];

#[test]
fn functions_made_with_faas_cli_new_merge_from_the_stack_file_and_run_like_unmerged() {
    let Some(cli) = faas_cli() else { return };
    if !fmerge_testkit::dataplane::tool_present(fmerge_ship::image::engine::missing_reason()) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let stack = two_functions(&cli, dir.path());
    let tag = format!("127.0.0.1:5999/of-front:t{}", std::process::id());
    let out = dir.path().join("out");
    let args = [
        "-f",
        stack.to_str().unwrap(),
        "of-front",
        "of-back",
        "--image",
        "--tag",
        tag.as_str(),
        "--out",
        out.to_str().unwrap(),
    ];
    let Ran { ok, stdout, stderr } = support::fmerge(dir.path(), &args, &[]);
    assert!(ok, "{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    let [reference, merged_stack, binary] = lines[..] else {
        panic!("expected image, stack and binary lines:\n{stdout}")
    };
    assert_eq!(reference, tag);
    assert!(
        stderr.contains("of-back reads OF_BACK__GREETING (default hello)"),
        "{stderr}"
    );

    // Unmerged: each function its own process behind the gateway.
    let (a, b) = (Redis::start(), Redis::start());
    let (front, back) = (free_port(), free_port());
    let gateway = Gateway::start(&[("of-front", front), ("of-back", back)]);
    let expected = {
        let _p = [
            Function::start(
                built_binary("of-front"),
                "of-front",
                front,
                [("REDIS_URL", a.url()), ("GATEWAY_URL", gateway.url())],
            ),
            Function::start(
                built_binary("of-back"),
                "of-back",
                back,
                [("REDIS_URL", b.url()), ("GREETING", "hi".into())],
            ),
        ];
        run(&gateway.function_url("of-front"), REQUESTS, &[&a, &b])
    };
    assert_eq!(expected.0[2], HttpReply::new(200, "front got hi#3:three"));

    // Merged, with the callee's settings under its namespaced names.
    let merged_env = |a: &Redis, b: &Redis, gw: &Gateway| {
        [
            ("REDIS_URL", a.url()),
            ("OF_BACK__REDIS_URL", b.url()),
            ("OF_BACK__GREETING", "hi".into()),
            ("GATEWAY_URL", gw.url()),
        ]
    };
    let (a2, b2) = (Redis::start(), Redis::start());
    let port = free_port();
    let gateway2 = Gateway::start(&[("of-front", port), ("of-back", free_port())]);
    let merged = Function::start(binary, "of-front", port, merged_env(&a2, &b2, &gateway2));
    assert_eq!(
        run(&gateway2.function_url("of-front"), REQUESTS, &[&a2, &b2]),
        expected,
        "{}",
        merged.output()
    );
    assert_eq!(
        gateway2.requests_for("of-back"),
        0,
        "the callee ran in-process"
    );

    // The merged stack: faas-cli reads it as the merged function's deployment.
    let generated = faas(
        &cli,
        dir.path(),
        &["generate", "-f", merged_stack, "--filter", "of-front"],
    );
    assert_says(
        &generated,
        &[
            &format!("image: {tag}"),
            "OF_BACK__GREETING: hi",
            "- back-token",
            "- front-token",
            "org.fmerge.member-1: of-back",
            "team: social",
            "memory: 192Mi",
            "OF_BACK__MODE: strict",
        ],
    );
    let kept = faas(
        &cli,
        dir.path(),
        &["generate", "-f", merged_stack, "--filter", "of-back"],
    );
    assert!(
        kept.contains("image: of-back:latest"),
        "the callee stays deployed by default:\n{kept}"
    );
    // --remove-callees: the merged function alone replaces the pair.
    let Ran { ok, stderr, .. } = support::fmerge(
        dir.path(),
        &[&args[..], &["--remove-callees"]].concat(),
        &[],
    );
    assert!(ok, "{stderr}");
    let text = std::fs::read_to_string(merged_stack).unwrap();
    assert!(
        text.contains("of-front:") && !text.contains("of-back:"),
        "{text}"
    );
    let _ = Command::new("docker").args(["rmi", "-f", &tag]).output();

    // The same two functions as separate cargo projects named by package.
    for f in ["of-front", "of-back"] {
        let manifest = dir.path().join(f).join("Cargo.toml");
        let text = std::fs::read_to_string(&manifest)
            .unwrap()
            .replace("name = \"handler\"", &format!("name = \"{f}\""));
        std::fs::write(&manifest, text).unwrap();
    }
    let Ran { ok, stdout, stderr } = support::fmerge(
        dir.path(),
        &[
            "of-front",
            "of-back",
            "--manifest-path",
            "of-front/Cargo.toml",
            "--manifest-path",
            "of-back/Cargo.toml",
            "--name",
            "two-projects",
        ],
        &[],
    );
    assert!(ok, "{stderr}");
    let binary = stdout.lines().last().unwrap().to_string();
    let (a3, b3) = (Redis::start(), Redis::start());
    let port = free_port();
    let gateway3 = Gateway::start(&[("of-front", port)]);
    let merged = Function::start(&binary, "of-front", port, merged_env(&a3, &b3, &gateway3));
    assert_eq!(
        run(&gateway3.function_url("of-front"), REQUESTS, &[&a3, &b3]),
        expected,
        "{}",
        merged.output()
    );
}

#[test]
fn faas_cli_reads_the_stack_file_fmerge_writes_for_a_merge_without_one() {
    let Some(cli) = faas_cli() else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut spec = fmerge_ship::stack_out::StackSpec::new(
        vec![
            "write-home-timeline".into(),
            "social-graph-get-followers".into(),
        ],
        "127.0.0.1:5000/pair@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
    );
    spec.deployment
        .environment
        .insert("REDIS_URL".into(), "redis://redis:6379".into());
    spec.callee_environment
        .push(fmerge_ship::stack_out::CalleeEnv {
            function: "social-graph-get-followers".into(),
            key: "REDIS_URL".into(),
            value: "redis://graph:6379".into(),
        });
    spec.deployment.secrets.push("redis-password".into());
    let path = fmerge_ship::stack_out::write(&spec, dir.path()).unwrap();
    let generated = faas(
        &cli,
        dir.path(),
        &["generate", "-f", path.to_str().unwrap()],
    );
    for needle in [
        "name: write-home-timeline",
        "image: 127.0.0.1:5000/pair@sha256:0123456789abcdef",
        "SOCIAL_GRAPH_GET_FOLLOWERS__REDIS_URL: redis://graph:6379",
        "REDIS_URL: redis://redis:6379",
        "- redis-password",
        "org.fmerge.member-1: social-graph-get-followers",
    ] {
        assert!(
            generated.contains(needle),
            "expected {needle:?} in faas-cli generate:\n{generated}"
        );
    }
}

/// A stack file and handler folders in a temp dir, for the bad-input cases.
fn stack_with(entries: &[(&str, Option<&str>)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let mut yaml = String::from(
        "version: 1.0\nprovider:\n  name: openfaas\n  gateway: http://127.0.0.1:8080\nfunctions:\n",
    );
    for (name, manifest) in entries {
        yaml.push_str(&format!(
            "  {name}:\n    lang: rust-fmerge\n    handler: ./{name}\n    image: {name}:latest\n"
        ));
        std::fs::create_dir_all(dir.path().join(name).join("src")).unwrap();
        std::fs::write(dir.path().join(name).join("src/main.rs"), "fn main() {}\n").unwrap();
        if let Some(manifest) = manifest {
            std::fs::write(dir.path().join(name).join("Cargo.toml"), manifest).unwrap();
        }
    }
    std::fs::write(dir.path().join("stack.yml"), yaml).unwrap();
    dir
}

fn function_manifest(name: &str, runtime: &Path) -> String {
    format!(
        "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n[dependencies]\nfmerge-runtime = {{ path = {:?} }}\n\n[workspace]\n",
        runtime.display().to_string()
    )
}

fn refused(dir: &Path, args: &[&str], needles: &[&str]) {
    let stderr = support::refuses(dir, args, needles);
    assert!(
        !stderr.contains("building"),
        "refused before cargo built anything:\n{stderr}"
    );
}

#[test]
fn bad_project_options_are_refused_with_the_fix() {
    let runtime = workspace_root().join("functions/runtime");
    let dir = stack_with(&[
        ("a", Some(&function_manifest("a", &runtime))),
        ("b", Some(&function_manifest("b", &runtime))),
    ]);
    let d = dir.path();
    refused(
        d,
        &[
            "a",
            "c",
            "--manifest-path",
            "a/Cargo.toml",
            "--manifest-path",
            "b/Cargo.toml",
        ],
        &[
            "unknown function c",
            "a/Cargo.toml",
            "another --manifest-path",
        ],
    );
    refused(
        d,
        &[
            "-f",
            "stack.yml",
            "a",
            "b",
            "--manifest-path",
            "a/Cargo.toml",
        ],
        &["-f and --manifest-path", "give one of them"],
    );
    refused(
        d,
        &["a", "b", "--message-format", "yaml"],
        &["invalid value 'yaml'", "human", "json"],
    );
}

#[test]
fn bad_stack_files_and_handlers_are_refused_naming_the_file_and_the_fix() {
    let runtime = workspace_root().join("functions/runtime");
    let good = function_manifest("a", &runtime);
    let dir = stack_with(&[("a", Some(&good)), ("b", None)]);
    let stack = dir.path().join("stack.yml");
    let s = stack.to_str().unwrap();

    std::fs::write(dir.path().join("broken.yml"), "functions: [unclosed\n").unwrap();
    refused(
        dir.path(),
        &["-f", "broken.yml", "a", "b"],
        &["broken.yml is not valid YAML", "fix"],
    );
    refused(
        dir.path(),
        &["-f", s, "a", "nope"],
        &[
            "unknown function nope",
            "the functions a, b",
            "\nfix: check the spelling",
        ],
    );
    refused(
        dir.path(),
        &["-f", s, "a", "b"],
        &[
            "function b's handler",
            "holds no Cargo.toml",
            "faas-cli new --lang rust-fmerge",
        ],
    );

    // A handler that is a Rust crate, but not on the runtime: a plain
    // `main` (the watchdog-process form), which does not merge with a
    // function on the runtime.
    std::fs::write(
        dir.path().join("b/Cargo.toml"),
        "[package]\nname = \"b\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n[workspace]\n",
    )
    .unwrap();
    refused(
        dir.path(),
        &["-f", s, "a", "b", "--allow-uncalled"],
        &["b is a watchdog process", "a group of one form", "\nfix: "],
    );

    // Two functions on two different versions of the runtime.
    let other = dir.path().join("runtime-0.2");
    std::fs::create_dir_all(other.join("src")).unwrap();
    std::fs::write(other.join("src/lib.rs"), "").unwrap();
    std::fs::write(other.join("Cargo.toml"), "[package]\nname = \"fmerge-runtime\"\nversion = \"0.2.0\"\nedition = \"2024\"\n\n[workspace]\n").unwrap();
    std::fs::write(
        dir.path().join("b/Cargo.toml"),
        function_manifest("b", &other),
    )
    .unwrap();
    refused(
        dir.path(),
        // (a's stub never calls b: allowed, to reach the runtime check.)
        &["-f", s, "a", "b", "--allow-uncalled"],
        &[
            "different copies of fmerge-runtime",
            "0.1.0",
            "0.2.0",
            "\nfix: make every function depend on the same",
        ],
    );
}
