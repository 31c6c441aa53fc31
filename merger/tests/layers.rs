//! fmerge's modules in layers, each importing only from the layers below it
//! (or its own, without a cycle): the commands over the operations over the
//! work (graph, build pipeline, checks, plan) over the options and records
//! everything reads. The check is `fmerge_testkit::layers`.
//!
//! Run: `cargo test --release -p fmerge --test layers`.

/// The layers, lowest first. A new module must be placed here.
const LAYERS: &[&[&str]] = &[
    // Std or other crates only: embedded files, progress, and the
    // binaries' own modules (`main.rs` and `launcher.rs` include them).
    &["assets", "progress", "rustc_vv", "version"],
    // Every option defined once (`fmerge build`'s whole command line too,
    // as a group file holds it); the cargo build with bitcode.
    &["options", "bitcode"],
    // What reads the options: JSON records, group files, the call graph.
    &["message", "group", "graph"],
    // One build's stages; the checks before one.
    &["pipeline", "preflight"],
    // The planner over the graph, writing group files.
    &["plan"],
    // The operations the commands call.
    &["ops"],
    // The commands: flags in, one operation called.
    &["cli"],
    // The `fmerge` binary, which starts `fmerge-llvm` (main.rs).
    &["launcher"],
];

fmerge_testkit::layers_test!(LAYERS);
