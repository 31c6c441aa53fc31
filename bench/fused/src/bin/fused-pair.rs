//! `fused-pair`: write-home-timeline with social-graph-get-followers called
//! as a plain async function, in one process (see the crate docs).

use fmerge_runtime::{BoxReply, Bytes};

// The members' modules, generated from their main.rs by build.rs, and `direct`.
include!(concat!(env!("OUT_DIR"), "/pair.rs"));

fn entry(body: Bytes) -> BoxReply {
    Box::pin(write_home_timeline::fused_handle(body))
}

fn main() {
    fmerge_runtime::serve("write-home-timeline", entry)
}
