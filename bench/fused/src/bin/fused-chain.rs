//! `fused-chain`: compose-post with unique-id, text-service, url-shorten,
//! user-mention, compose-creator-with-user-id, media, store-post,
//! write-user-timeline, write-home-timeline and
//! social-graph-get-followers called as plain async functions, in one
//! process (see the crate docs).

use fmerge_runtime::{BoxResponse, Input};

// The members' modules, generated from their main.rs by build.rs, and `direct`.
include!(concat!(env!("OUT_DIR"), "/chain.rs"));

fn entry(input: Input) -> BoxResponse {
    fmerge_runtime::run_handler("compose-post", compose_post::fused_handle, input)
}

fn main() {
    fmerge_runtime::serve("compose-post", entry)
}
