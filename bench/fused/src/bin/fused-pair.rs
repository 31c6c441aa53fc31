//! `fused-pair`: write-home-timeline with social-graph-get-followers called
//! as a plain async function, in one process (see the crate docs).

use fmerge_runtime::{BoxResponse, Input};

// The members' modules, generated from their main.rs by build.rs, and `direct`.
include!(concat!(env!("OUT_DIR"), "/pair.rs"));

fn entry(input: Input) -> BoxResponse {
    fmerge_runtime::run_handler(
        "write-home-timeline",
        write_home_timeline::fused_handle,
        input,
    )
}

fn main() {
    fmerge_runtime::serve("write-home-timeline", entry)
}
