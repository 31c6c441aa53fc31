//! Native libraries that no build script reports: functions that link a
//! system library with `#[link(name = "z")]`, in their own main.rs and in a
//! library crate, merged and run beside the unmerged functions on a real
//! nginx gateway (127.0.0.1). The merged binary must link, call zlib as the
//! unmerged functions do, and say which libraries it linked.
//!
//! Run: `cargo test --release -p fmerge --test link_libs`

mod support;

use std::path::PathBuf;
use support::{Function, HttpReply, Ran, fixture, fmerge_out, free_port, post};

#[test]
fn libraries_of_link_attributes_are_linked_into_the_merged_binary_and_reported() {
    let ws = fixture("syslib", &[]);
    let Ran { ok, stdout, stderr } = fmerge_out(
        ws.path(),
        &["zl-front", "zl-back", "--message-format", "json"],
    );
    assert!(ok, "the merge links:\n{stderr}");
    // The merged record, before the `finished` one that ends every JSON output.
    let report: serde_json::Value = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|r| r["reason"] == "merged")
        .expect("the merged line");
    assert_eq!(report["reason"], "merged", "{stdout}");
    // Both #[link(name = "z")] name one library: linked once, by the file
    // the unmerged binaries load.
    assert_eq!(
        report["native_libs"],
        serde_json::json!(["dylib:+verbatim=libz.so.1"]),
        "{stdout}"
    );
    assert!(
        stderr.contains("linked native libraries: dylib:+verbatim=libz.so.1"),
        "{stderr}"
    );
    let binary = PathBuf::from(report["binary"].as_str().unwrap());

    // Unmerged: two processes behind the gateway.
    let (gateway, _unmerged) = support::unmerged_behind_gateway(&["zl-front", "zl-back"]);
    let HttpReply {
        status,
        body: expected,
    } = post(&gateway.function_url("zl-front"), "abc");
    // zlib's CRC-32 of "abc" is 0x352441c2; the version is the library's own.
    assert_eq!(status, 200, "{expected}");
    let version = expected
        .strip_prefix("crc=891568578 back=zlib ")
        .unwrap_or_else(|| panic!("unexpected reply {expected:?}"));
    assert!(
        version.split('.').count() >= 3 && version.split('.').all(|p| p.parse::<u32>().is_ok()),
        "{version}"
    );

    // Merged: one process answers alike.
    let port = free_port();
    let merged = Function::start(&binary, "zl-front", port, [("GATEWAY_URL", gateway.url())]);
    assert_eq!(
        post(&format!("{}/", merged.url()), "abc"),
        HttpReply::new(200, &expected),
        "{}",
        merged.output()
    );
}
