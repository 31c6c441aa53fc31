//! fmerge-cargo's modules in layers, each importing only from the layers
//! below it (or its own, without a cycle). The check is
//! `fmerge_testkit::layers`.
//!
//! Run: `cargo test --release -p fmerge-cargo --test layers`.

/// The layers, lowest first. A new module must be placed here.
const LAYERS: &[&[&str]] = &[
    // Atomic outputs, the toolchain, the release profile, "did you mean".
    &["artifact", "toolchain", "profile", "suggest"],
    // The merge cache; the functions found; the native link.
    &["cache", "resolve", "native"],
    // The object cache; separate projects in one workspace; the cargo build.
    &["objects", "workspace", "emit"],
    // The shim a merged binary of watchdog-process functions links.
    &["shim"],
];

fmerge_testkit::layers_test!(LAYERS);
