//! `fmerge build` end to end: real merges of the socialNetwork functions, run
//! beside the unmerged functions on real Redis and a real nginx gateway, all
//! on 127.0.0.1. A merged binary must answer exactly as the unmerged system
//! does, leave the same Redis state, and never send a merged callee's RPC
//! through the gateway.
//!
//! Run: `cargo test --release -p fmerge --test merge`

mod support;

use std::path::PathBuf;
use support::{BuiltBinary, Ran, assert_ok, fmerge_in_repo as fmerge, target_dir};
use support::{
    Deployment, Function, Gateway, HttpReply, PAIR_REQUESTS, Redis, SAMPLE_POSTS, Unmerged,
    free_port, post, redis_env, seed_social_network, unmerged_replies, workspace_root,
};

/// Merges `functions` (the caller first) as `name`; returns the binary and fmerge's stderr.
fn merge(name: &str, functions: &[&str], extra: &[&str]) -> BuiltBinary {
    let out = workspace_root().join("target/fmerge-tests").join(name);
    let mut args = functions.to_vec();
    args.extend(["--name", name, "--out", out.to_str().unwrap()]);
    args.extend(extra);
    let built = support::merged(&workspace_root(), &args);
    assert_eq!(
        built.binary,
        out.join(name),
        "the last stdout line is the binary"
    );
    built
}

/// The merged binary serves `caller` behind the gateway; every other function
/// also runs unmerged behind it, so a call that wrongly left the process would
/// still succeed, and show in the gateway's log.
struct MergedSystem {
    system: Deployment,
    merged: Function,
    redis: Redis,
}

fn merged_system(binary: &PathBuf, caller: &str) -> MergedSystem {
    let redis = Redis::start();
    seed_social_network(&mut redis.conn());
    let port = free_port();
    let system = Deployment::unmerged(&redis, &[(caller, port)], &[]);
    let mut env = redis_env(&redis.url(), support::FUNCTIONS);
    env.push(("GATEWAY_URL".into(), system.gateway.url()));
    let merged = Function::start(binary, caller, port, env);
    MergedSystem {
        system,
        merged,
        redis,
    }
}

/// Sends `requests` to `caller` in the unmerged system and in the merged
/// `binary` ([`merged_system`]); asserts the same replies and the same Redis
/// state, and returns the merged system and its replies.
fn same_as_unmerged(
    binary: &PathBuf,
    caller: &str,
    requests: &[&str],
) -> (MergedSystem, Vec<HttpReply>) {
    let Unmerged {
        replies: expected,
        state: expected_state,
    } = unmerged_replies(caller, requests);
    let m = merged_system(binary, caller);
    let replies: Vec<_> = requests
        .iter()
        .map(|r| post(&m.system.url(caller), r))
        .collect();
    assert_eq!(replies, expected, "{}", m.merged.output());
    assert_eq!(
        m.redis.dump(),
        expected_state,
        "same Redis state as the unmerged system"
    );
    (m, replies)
}

#[test]
fn the_pair_merged_answers_like_the_unmerged_pair_without_the_gateway() {
    let BuiltBinary { binary, stderr } = merge(
        "pair",
        &["write-home-timeline", "social-graph-get-followers"],
        &["--emit-ll"],
    );
    assert!(
        stderr.contains("social-graph-get-followers reads SOCIAL_GRAPH_GET_FOLLOWERS__REDIS_URL"),
        "{stderr}"
    );

    let (m, replies) = same_as_unmerged(&binary, "write-home-timeline", PAIR_REQUESTS);
    assert_eq!(replies[0], HttpReply::new(200, r#"{"updated":4}"#));
    assert_eq!(replies[3].status, 400, "malformed JSON is still a 400");
    assert_eq!(
        m.system.gateway.requests_for("write-home-timeline"),
        PAIR_REQUESTS.len()
    );
    assert_eq!(
        m.system.gateway.requests_for("social-graph-get-followers"),
        0,
        "the merged callee is never called over HTTP"
    );
}

#[test]
fn emit_ll_writes_ir_that_parses_back_through_the_same_llvm() {
    let out = workspace_root().join("target/fmerge-tests/ll");
    let args = [
        "write-home-timeline",
        "social-graph-get-followers",
        "--emit-ll",
        "--opt-level",
        "0",
        "--name",
        "ll",
        "--out",
        out.to_str().unwrap(),
    ];
    let Ran { ok, stdout, stderr } = fmerge(&args);
    assert!(ok, "{stderr}");
    let ll = out.join("ll.ll");
    assert_eq!(stdout.lines().next().map(PathBuf::from), Some(ll.clone()));
    let text = std::fs::read_to_string(&ll).unwrap();
    assert!(
        text.contains("@fmerge.routes = internal constant"),
        "the dispatch table is filled in"
    );
    assert!(text.contains("@fmerge.entry.social-graph-get-followers"));
    fmerge_ir::link::parse_ll(&ll).expect("the .ll parses and verifies");

    // Nothing changed: the next merge keeps the binary instead of redoing it.
    let binary = out.join("ll");
    let before = std::fs::metadata(&binary).unwrap().modified().unwrap();
    let Ran { ok, stderr, .. } = fmerge(&args);
    assert!(
        ok && stderr.contains("nothing changed since the last merge"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::metadata(&binary).unwrap().modified().unwrap(),
        before
    );
    // Another option is another binary.
    let Ran { ok, stderr, .. } = fmerge(
        &[
            &args[..],
            &[
                "--rewrite",
                "sn-redis-master.openfaas-fn.svc.cluster.local=127.0.0.1",
            ],
        ]
        .concat(),
    );
    assert!(ok && !stderr.contains("nothing changed"), "{stderr}");

    // Another fmerge (rebuilt or upgraded: here, one byte more) never keeps a
    // binary that an older one made.
    assert!(fmerge(&args).ok, "back to the first options");
    let Ran { ok, stderr, .. } = fmerge(&args);
    assert!(
        ok && stderr.contains("nothing changed since the last merge"),
        "{stderr}"
    );
    let other = tempfile::tempdir().unwrap();
    let exe = other.path().join("fmerge");
    std::fs::copy(env!("CARGO_BIN_EXE_fmerge"), &exe).unwrap();
    let mut bytes = std::fs::read(env!("CARGO_BIN_EXE_fmerge-llvm")).unwrap();
    bytes.push(0);
    let llvm = other.path().join("fmerge-llvm");
    std::fs::write(&llvm, bytes).unwrap();
    std::fs::set_permissions(&llvm, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let target = target_dir();
    let run = std::process::Command::new(&exe)
        .current_dir(workspace_root())
        .arg("build")
        .args(args)
        .args(["--target-dir", target.to_str().unwrap()])
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        run.status.success() && !stderr.contains("nothing changed"),
        "{stderr}"
    );
}

#[test]
fn a_rewrite_sends_the_callee_to_its_own_redis_and_leaves_the_caller_alone() {
    let (a, b) = (Redis::start(), Redis::start());
    // Followers live only in B, the callee's store; timelines go to A, the caller's.
    seed_social_network(&mut b.conn());
    let rewrite = format!(
        "social-graph-get-followers:sn-redis-master.openfaas-fn.svc.cluster.local:6379=127.0.0.1:{}",
        b.port()
    );
    let BuiltBinary { binary, stderr } = merge(
        "rewrite",
        &["write-home-timeline", "social-graph-get-followers"],
        &["--rewrite", &rewrite],
    );
    assert!(
        stderr.contains(&format!(
            "SOCIAL_GRAPH_GET_FOLLOWERS__REDIS_URL (default redis://127.0.0.1:{})",
            b.port()
        )),
        "{stderr}"
    );

    // Only the caller's REDIS_URL is set: the callee must not see it.
    let gateway = Gateway::start(&[]);
    let port = free_port();
    let merged = Function::start(
        &binary,
        "write-home-timeline",
        port,
        [("REDIS_URL", a.url()), ("GATEWAY_URL", gateway.url())],
    );
    let request = r#"{"post_id": 7, "user_id": 1, "timestamp": 42, "user_mentions_id": []}"#;
    assert_ok(
        &post(&format!("{}/", merged.url()), request),
        r#"{"updated":3}"#,
        &format!("followers 4, 2, 5 were read from B\n{}", merged.output()),
    );
    assert_eq!(
        a.keys("*"),
        ["home-timeline:2", "home-timeline:4", "home-timeline:5"]
    );
    assert!(
        b.keys("home-timeline:*").is_empty(),
        "nothing written to the callee's store"
    );
}

#[test]
fn the_whole_compose_post_chain_merged_matches_unmerged() {
    let chain = support::COMPOSE_POST_TREE;
    let BuiltBinary { binary, stderr } = merge("chain", chain, &[]);
    assert!(
        !stderr.contains("blocks its thread"),
        "no function of the chain blocks its thread:\n{stderr}"
    );
    assert!(
        stderr.contains("static=shortcode"),
        "url-shorten's C library came from its build script:\n{stderr}"
    );

    let (m, replies) = same_as_unmerged(&binary, "compose-post", SAMPLE_POSTS);
    assert!(replies.iter().all(|r| r.status == 200), "{replies:?}");
    for callee in &chain[1..] {
        assert_eq!(
            m.system.gateway.requests_for(callee),
            0,
            "{callee} went over HTTP"
        );
    }
}

/// No socialNetwork function blocks its thread, and the `blocking` pass
/// finds none: each of the 26 is a callee here or, unique-id, in the
/// compose-post chain above. Only the merge: cargo built them all already.
#[test]
fn no_socialnetwork_function_is_found_blocking_its_thread() {
    let others = support::FUNCTIONS.iter().filter(|f| **f != "unique-id");
    let functions: Vec<&str> = std::iter::once("unique-id")
        .chain(others.copied())
        .collect();
    // unique-id calls none of them: each is merged to have its handler judged.
    // `--force`: a merge kept from an earlier run says no `— N routes`.
    let BuiltBinary { stderr, .. } = merge("all", &functions, &["--allow-uncalled", "--force"]);
    assert!(
        stderr.contains("— 25 routes"),
        "every other function merged:\n{stderr}"
    );
    assert!(!stderr.contains("blocks its thread"), "{stderr}");
}

#[test]
fn the_text_service_fan_out_merged_matches_unmerged_and_survives_a_callee_panic() {
    let functions = ["text-service", "url-shorten", "user-mention"];
    let BuiltBinary { binary, stderr } = merge("fanout", &functions, &[]);
    assert!(stderr.contains("static=shortcode"), "{stderr}");

    let texts = [
        r#"{"text": "hello @bob, see https://example.com/a?x=1 and http://x.org/p"}"#,
        r#"{"text": "@erin @dave @erin"}"#,
        // `@mallory` is not registered: user-mention panics on it, on purpose.
        r#"{"text": "hi @mallory"}"#,
        r#"{"text": "after the panic, @alice https://y.net"}"#,
    ];
    let (m, replies) = same_as_unmerged(&binary, "text-service", &texts);
    assert_eq!(replies[2].status, 500);
    assert!(
        replies[2].body.contains("user-mention") && replies[2].body.contains("panicked"),
        "{}",
        replies[2].body
    );
    assert_eq!(
        replies[3].status, 200,
        "the process keeps serving after a callee panicked"
    );
    assert!(m.merged.output().contains("panicked"));
    assert_eq!(
        m.system.gateway.requests_for("url-shorten")
            + m.system.gateway.requests_for("user-mention"),
        0
    );
}

#[test]
fn a_partial_merge_still_reaches_the_other_functions_through_the_gateway() {
    let BuiltBinary { binary, .. } = merge(
        "partial",
        &["compose-post", "unique-id", "text-service"],
        &[],
    );
    let (m, _) = same_as_unmerged(&binary, "compose-post", SAMPLE_POSTS);
    let gw = &m.system.gateway;
    assert_eq!(
        (
            gw.requests_for("unique-id"),
            gw.requests_for("text-service")
        ),
        (0, 0),
        "merged: in-process"
    );
    let n = SAMPLE_POSTS.len();
    for unmerged in [
        "url-shorten",
        "user-mention",
        "store-post",
        "write-home-timeline",
    ] {
        assert_eq!(
            gw.requests_for(unmerged),
            n,
            "{unmerged} is not merged, so every post reaches it through nginx"
        );
    }
    assert!(gw.requests_for("social-graph-get-followers") >= n);
}

#[test]
fn one_thread_or_two_give_a_byte_identical_binary() {
    // The partitions follow the module, never the cores or -j: a CI machine
    // and a laptop build the same bytes.
    let mut digests = Vec::new();
    for jobs in ["1", "2"] {
        let out = workspace_root()
            .join("target/fmerge-tests")
            .join(format!("jobs-{jobs}"));
        let Ran { ok, stdout, stderr } = fmerge(&[
            "write-home-timeline",
            "social-graph-get-followers",
            "--name",
            "pair-jobs",
            "--out",
            out.to_str().unwrap(),
            "-j",
            jobs,
            "--force",
        ]);
        assert!(ok, "fmerge build -j {jobs} failed:\n{stderr}");
        let binary = PathBuf::from(stdout.lines().last().expect("the binary path"));
        assert_eq!(binary, out.join("pair-jobs"));
        digests.push(support::sha256(&binary));
    }
    assert_eq!(
        digests[0], digests[1],
        "-j 1 and -j 2 give the same SHA-256"
    );
}
