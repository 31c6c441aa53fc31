//! The promise: a merged binary answers, reads its settings and touches its
//! data stores exactly as the unmerged functions do, or `fmerge build`
//! refuses with an error naming the function, the crate or symbol, and the
//! fix. Each test runs fixture functions written the way people outside this
//! repo write them (`merger/tests/fixtures/`), merged and unmerged, against
//! real redis-server and nginx processes on 127.0.0.0/8.
//!
//! Run: `cargo test --release -p fmerge --test soundness`

mod support;

use std::path::Path;
use support::merge_in as merge;
use support::{
    BuiltBinary, Function, Gateway, HttpReply, Redis, assert_ok, assert_says, built_binary,
    fixture, free_port, post, refuses, sha256,
};

/// Asserts that the merge fails with every one of `needles` in its error,
/// and leaves no binary.
fn refused(ws: &Path, functions: &[&str], extra: &[&str], needles: &[&str]) -> String {
    let out = ws.join("out");
    let args = [functions, &["--out", out.to_str().unwrap()], extra].concat();
    let stderr = refuses(ws, &args, needles);
    assert!(
        std::fs::read_dir(&out).map_or(true, |mut d| d.next().is_none()),
        "no binary is left behind"
    );
    stderr
}

const TAGS: &[&str] = &["t1", "t2", "t1"];

#[test]
fn endpoints_written_every_common_way_move_and_std_env_settings_stay_the_callees() {
    // The callee's own store, at the address written in its code.
    let store = Redis::start();
    let ws = fixture(
        "outsider",
        &[
            ("@STORE@", &store.addr()),
            (
                "@RAW_LEN@",
                &format!("redis://{}/", store.addr()).len().to_string(),
            ),
        ],
    );

    // Unmerged: three processes behind the gateway.
    let (caller_db, env_db) = (Redis::start(), Redis::start());
    let (front, ep_store, ep_env) = (free_port(), free_port(), free_port());
    let gateway = Gateway::start(&[("front", front), ("ep-store", ep_store), ("ep-env", ep_env)]);
    // Build first, through fmerge, so the unmerged binaries are the same build.
    // Its own store moves to 127.0.0.12, an address one byte longer.
    let moved = Redis::start_at("127.0.0.12");
    let rewrite = format!("{}={}", store.addr(), moved.addr());
    let BuiltBinary { binary, stderr } = merge(
        ws.path(),
        &["front", "ep-store", "ep-env"],
        &["--name", "outsider", "--rewrite", &rewrite],
    );
    let _procs = [
        Function::start(
            built_binary("front"),
            "front",
            front,
            [
                ("REDIS_URL", caller_db.url()),
                ("GATEWAY_URL", gateway.url()),
            ],
        ),
        Function::start(
            built_binary("ep-store"),
            "ep-store",
            ep_store,
            [("GATEWAY_URL", gateway.url())],
        ),
        Function::start(
            built_binary("ep-env"),
            "ep-env",
            ep_env,
            [("REDIS_URL", env_db.url()), ("GREETING", "hi".into())],
        ),
    ];
    let expected: Vec<_> = TAGS
        .iter()
        .map(|t| post(&gateway.function_url("front"), t))
        .collect();
    assert!(expected.iter().all(|r| r.status == 200), "{expected:?}");
    assert!(
        expected[2].body.starts_with(
            "const=2|from=2|to_string=2|env_default=2|format=2|static=2|direct=2|hi t1"
        ),
        "{expected:?}"
    );
    let (store_state, caller_state, env_state) = (store.dump(), caller_db.dump(), env_db.dump());
    assert_eq!(
        store_state.len(),
        14,
        "7 ways of writing the address × 2 tags: {store_state:?}"
    );
    redis::cmd("FLUSHALL").exec(&mut store.conn()).unwrap();

    // What fmerge said it did.
    let rewrote = format!(
        "rewrote `{}` → `{}` in 2 literal(s)",
        store.addr(),
        moved.addr()
    );
    assert_says(
        &stderr,
        &[
            &rewrote,
            "config: ep-env reads EP_ENV__REDIS_URL (std::env, no default)",
            "config: ep-env reads EP_ENV__GREETING (std::env, no default)",
            "config: ep-store reads EP_STORE__EP_STORE_URL",
            "holds the gateway URL `http://gateway.openfaas:8080/function/ep-store` of merged function ep-store",
            // Built with `format!`: shown as written, not as the template's bytes.
            "crate ep_env (linked by ep-env) holds the gateway URL `{}/function/ep-store` of merged function ep-store",
        ],
    );
    assert!(
        !stderr.contains('\u{fffd}'),
        "no garbage in any message: {stderr}"
    );
    assert!(
        !stderr.contains("crate fmerge_runtime reads"),
        "the runtime's own process settings are not the callees': {stderr}"
    );

    // Merged: the caller's REDIS_URL is set, and so is a GREETING the callee must not see.
    let (caller_db2, env_db2) = (Redis::start(), Redis::start());
    let port = free_port();
    let gateway2 = Gateway::start(&[
        ("front", port),
        ("ep-store", free_port()),
        ("ep-env", free_port()),
    ]);
    let merged = Function::start(
        &binary,
        "front",
        port,
        [
            ("REDIS_URL", caller_db2.url()),
            ("GREETING", "the caller's".into()),
            ("EP_ENV__REDIS_URL", env_db2.url()),
            ("EP_ENV__GREETING", "hi".into()),
            ("GATEWAY_URL", gateway2.url()),
        ],
    );
    let replies: Vec<_> = TAGS
        .iter()
        .map(|t| post(&gateway2.function_url("front"), t))
        .collect();
    assert_eq!(replies, expected, "{}", merged.output());
    assert_eq!(
        moved.dump(),
        store_state,
        "every way of writing the address now reaches the moved store"
    );
    assert!(store.dump().is_empty(), "nothing reached the old address");
    assert_eq!(
        caller_db2.dump(),
        caller_state,
        "the caller kept its own store"
    );
    assert_eq!(
        env_db2.dump(),
        env_state,
        "ep-env read EP_ENV__REDIS_URL, not the caller's REDIS_URL"
    );
    for callee in ["ep-store", "ep-env", "ep-env.openfaas-fn"] {
        assert_eq!(
            gateway2.requests_for(callee),
            0,
            "{callee} was called in-process, `name.namespace` form included"
        );
    }
}

#[test]
fn a_rewrite_of_an_address_copied_as_raw_bytes_is_refused_naming_function_crate_and_item() {
    let addr = "127.0.0.1:6379";
    let ws = fixture(
        "outsider",
        &[
            ("@STORE@", addr),
            ("@RAW_LEN@", &format!("redis://{addr}/").len().to_string()),
        ],
    );
    refused(
        ws.path(),
        &["front", "ep-raw"],
        &[
            // front never calls ep-raw: a group made for the rewrite's refusal.
            "--allow-uncalled",
            "--name",
            "raw",
            "--rewrite",
            &format!("ep-raw:{addr}=127.0.0.12:6379"),
        ],
        &[
            "in function ep-raw (crate ep_raw)",
            "ep_raw::handle",
            "copies it as raw bytes",
            "llvm.memcpy",
            "\nfix: ",
        ],
    );
}

#[test]
fn mutable_statics_in_a_crate_two_functions_link_are_refused_unless_allowed() {
    let ws = fixture("shared", &[]);
    refused(
        ws.path(),
        &["st-front", "st-back"],
        &[],
        &[
            "shared state",
            "crate st-helper",
            "`st_helper::CALLS`",
            "`st_helper::CLIENT`",
            "st-back, st-front",
            "\nfix: keep the static in each function's own crate",
            "--allow-shared-static",
        ],
    );
    // Allowed, the two functions share the counter: the callee sees the caller's call.
    let BuiltBinary { binary, .. } = merge(
        ws.path(),
        &["st-front", "st-back"],
        &["--allow-shared-static", "st-helper"],
    );
    let port = free_port();
    let merged = Function::start(
        &binary,
        "st-front",
        port,
        [("GATEWAY_URL", "http://127.0.0.1:9".to_string())],
    );
    assert_ok(
        &post(&format!("{}/", merged.url()), "abc"),
        "front calls=2 back: calls=2 body=3",
        &merged.output(),
    );
}

#[test]
fn an_exported_symbol_that_native_code_calls_is_never_renamed() {
    let ws = fixture("native", &[]);
    refused(
        ws.path(),
        &["nc-front", "nc-back"],
        &[],
        &[
            "symbol clash",
            "nc-front (crate nc_front)",
            "nc-back (crate nc_back)",
            "`sn_scale`",
            "libnctwice.a",
            "\nfix: ",
        ],
    );
}

/// Each merged binary, serving `function` with `gateway` as its gateway,
/// answers "abc" with `expected`.
fn answer_alike(binaries: &[&Path], function: &str, gateway: &str, expected: &HttpReply) {
    for binary in binaries {
        let merged = Function::start(binary, function, free_port(), [("GATEWAY_URL", gateway)]);
        assert_eq!(
            &post(&format!("{}/", merged.url()), "abc"),
            expected,
            "{}: {}",
            binary.display(),
            merged.output()
        );
    }
}

#[test]
fn renamed_symbols_keep_each_function_its_own_and_identical_inputs_give_an_identical_binary() {
    let ws = fixture("native", &[]);
    let BuiltBinary { binary, stderr } = merge(ws.path(), &["rn-front", "rn-back"], &["--force"]);
    assert!(
        stderr.contains("sn_tag in rn-back is now sn_tag.rn-back"),
        "{stderr}"
    );
    let first = sha256(&binary);
    let BuiltBinary {
        binary: again,
        stderr,
    } = merge(ws.path(), &["rn-front", "rn-back"], &["--force"]);
    assert!(
        !stderr.contains("nothing changed"),
        "--force redoes the merge: {stderr}"
    );
    assert_eq!(
        sha256(&again),
        first,
        "two merges of the same bitcode give the same bytes"
    );

    // Unmerged and merged answer alike: each function calls its own sn_tag.
    let (gateway, _unmerged) = support::unmerged_behind_gateway(&["rn-front", "rn-back"]);
    let expected = post(&gateway.function_url("rn-front"), "abc");
    assert_eq!(expected, HttpReply::new(200, "front=1003 back=2003"));
    // `--lto own` links the renamed crates into one module: still their own.
    let BuiltBinary { binary: own, .. } = merge(
        ws.path(),
        &["rn-front", "rn-back"],
        &["--lto", "own", "--name", "renamed-own"],
    );
    answer_alike(
        &[again.as_path(), own.as_path()],
        "rn-front",
        &gateway.url(),
        &expected,
    );
}

#[test]
fn one_global_allocator_serves_the_merged_binary_and_two_different_ones_are_refused() {
    let ws = fixture("allocator", &[]);
    // Two different allocators: refused, naming both functions.
    refused(
        ws.path(),
        &["alloc-caller", "alloc-other"],
        // alloc-caller never calls alloc-other: a group made for the refusal.
        &["--name", "two-allocators", "--allow-uncalled"],
        &[
            "the merged functions set different #[global_allocator]s",
            "alloc-caller (crate alloc_caller)",
            "alloc-other (crate alloc_other)",
            "\nfix: ",
        ],
    );

    // One: the merged binary allocates with it (also when `--lto own`
    // optimizes the functions' crates as one module).
    let BuiltBinary { binary, stderr } = merge(ws.path(), &["alloc-caller", "alloc-callee"], &[]);
    let BuiltBinary { binary: own, .. } = merge(
        ws.path(),
        &["alloc-caller", "alloc-callee"],
        &["--lto", "own", "--name", "allocator-own"],
    );
    assert!(
        stderr.contains(
            "warning: alloc-caller (crate alloc_caller) sets its own #[global_allocator]: merged, alloc-callee allocate with it too"
        ),
        "{stderr}"
    );

    // Unmerged: the caller's allocator counts what its own process allocates.
    let (gateway, _unmerged) = support::unmerged_behind_gateway(&["alloc-caller", "alloc-callee"]);
    let expected = post(&gateway.function_url("alloc-caller"), "abc");
    assert_eq!(expected, HttpReply::new(200, "echo:abc counted=true"));

    // Merged: the callee runs in-process, and allocates through the counter.
    let gateway2 = Gateway::start(&[("alloc-caller", free_port()), ("alloc-callee", free_port())]);
    answer_alike(
        &[binary.as_path(), own.as_path()],
        "alloc-caller",
        &gateway2.url(),
        &expected,
    );
    assert_eq!(
        gateway2.requests_for("alloc-callee"),
        0,
        "called in-process"
    );
}

#[test]
fn common_release_profiles_merge_and_a_callee_panic_under_panic_abort_fails_only_its_call() {
    let ws = fixture("profiles", &[]);
    // pf-back has a second binary (an admin CLI): fmerge picks the function.
    let BuiltBinary { binary, stderr } = merge(ws.path(), &["pf-front", "pf-back"], &[]);
    assert!(
        stderr.contains("panic = \"unwind\"") && stderr.contains("profile.release sets lto"),
        "{stderr}"
    );

    // Unmerged (from the same build, which fmerge makes with panic = "unwind"):
    // a panic in pf-back becomes its 500, which pf-front passes on.
    let redis = Redis::start();
    let (front, back) = (free_port(), free_port());
    let gateway = Gateway::start(&[("pf-front", front), ("pf-back", back)]);
    let env = |gw: &Gateway| {
        [
            ("GATEWAY_URL", gw.url()),
            ("PF_BACK__REDIS_URL", redis.url()),
            ("REDIS_URL", redis.url()),
        ]
    };
    let requests = ["ok", "toolong", "boom", "ok"];
    let (expected, back_log): (Vec<_>, String) = {
        let _caller = Function::start(built_binary("pf-front"), "pf-front", front, env(&gateway));
        let callee = Function::start(built_binary("pf-back"), "pf-back", back, env(&gateway));
        let replies = requests
            .iter()
            .map(|r| post(&gateway.function_url("pf-front"), r))
            .collect();
        (replies, callee.output())
    };
    assert_eq!(expected[0], HttpReply::new(200, "back said call 1 sum 252"));
    // The client gets a stable message; the payload is in the callee's log.
    assert!(
        expected[1].status == 500
            && expected[1].body.contains("function pf-back panicked")
            && back_log.contains("function pf-back panicked: attempt to")
            && back_log.contains("overflow"),
        "overflow checks stay on: {expected:?}\n{back_log}"
    );
    assert!(
        expected[2].status == 500
            && expected[2].body.contains("function pf-back panicked")
            && back_log.contains("pf-back was asked to panic"),
        "{expected:?}\n{back_log}"
    );
    let expected_state = redis.dump();

    // Merged: the same replies; each panic fails only its own call.
    redis::cmd("FLUSHALL").exec(&mut redis.conn()).unwrap();
    let port = free_port();
    let gateway2 = Gateway::start(&[("pf-front", port)]);
    let merged = Function::start(&binary, "pf-front", port, env(&gateway2));
    let url = format!("{}/", merged.url());
    let replies: Vec<_> = requests.iter().map(|r| post(&url, r)).collect();
    assert_eq!(replies, expected, "{}", merged.output());
    assert_eq!(
        replies[3],
        HttpReply::new(200, "back said call 2 sum 252"),
        "the process went on after two panics"
    );
    assert_eq!(redis.dump(), expected_state);

    // The other forms: thin LTO, a callee optimized for size with "s".
    let manifest = ws.path().join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest)
        .unwrap()
        .replace("lto = true", "lto = \"thin\"")
        .replace("opt-level = \"z\"", "opt-level = \"s\"");
    std::fs::write(&manifest, text).unwrap();
    let BuiltBinary { binary, .. } = merge(ws.path(), &["pf-front", "pf-back"], &[]);
    drop(merged);
    let port = free_port();
    let merged = Function::start(&binary, "pf-front", port, env(&gateway2));
    assert_eq!(
        post(&format!("{}/", merged.url()), "ok"),
        HttpReply::new(200, "back said call 3 sum 252"),
        "{}",
        merged.output()
    );
}

#[test]
fn functions_whose_binaries_share_a_name_are_refused_before_building() {
    let ws = fixture("samebin", &[]);
    // sb-front never calls sb-back: that check is not the one under test.
    let stderr = refused(
        ws.path(),
        &["sb-front", "sb-back"],
        &["--allow-uncalled"],
        &[
            "sb-front and sb-back",
            "binary target named `handler`",
            "[[bin]] name",
        ],
    );
    assert!(
        !stderr.contains("building"),
        "refused before cargo ran:\n{stderr}"
    );
}
