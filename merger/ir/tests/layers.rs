//! fmerge-ir's modules in layers, each importing only from the layers below
//! it (or its own, without a cycle): the passes below the merge that runs
//! them, codegen below the reuse path that compiles with it. The check is
//! `fmerge_testkit::layers`.
//!
//! Run: `cargo test --release -p fmerge-ir --test layers`.

/// The layers, lowest first. A new module must be placed here.
const LAYERS: &[&[&str]] = &[
    // LLVM itself: finding it, small views of its values, the IR link.
    &["llvm", "ir", "link"],
    &["symbols"],
    // The rewrites and checks, one file each.
    &["passes"],
    &["split"],
    // Optimize and compile, over the parallel split.
    &["codegen"],
    // What the planner reads from a crate; the path that links cargo's objects.
    &["calls", "reuse"],
    // The one entry: passes, link, then reuse or codegen.
    &["merge"],
];

fmerge_testkit::layers_test!(LAYERS);
