//! `fused-chain`: compose-post with unique-id, text-service, url-shorten,
//! user-mention, compose-creator-with-user-id, media, store-post,
//! write-user-timeline, write-home-timeline and
//! social-graph-get-followers called as plain async functions, in one
//! process (see the crate docs).

use fmerge_runtime::{BoxReply, Bytes};

// The members' modules, generated from their main.rs by build.rs, and `direct`.
include!(concat!(env!("OUT_DIR"), "/chain.rs"));

fn entry(body: Bytes) -> BoxReply {
    Box::pin(compose_post::fused_handle(body))
}

fn main() {
    fmerge_runtime::serve("compose-post", entry)
}
