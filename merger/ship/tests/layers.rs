//! fmerge-ship's modules in layers, each importing only from the layers
//! below it (or its own, without a cycle): stack.yml read above stack.yml
//! written, `ship` over all. The check is `fmerge_testkit::layers`.
//!
//! Run: `cargo test --release -p fmerge-ship --test layers`.

/// The layers, lowest first. A new module must be placed here.
const LAYERS: &[&[&str]] = &[
    // Names and quantities Kubernetes takes; the faas-cli template.
    &["names", "quantity", "template"],
    &["image"],
    // The push; the stack.yml written.
    &["push", "stack_out"],
    // The checks before a build; the stack.yml read (and written back).
    &["ready", "stack_in"],
    &["ship"],
];

fmerge_testkit::layers_test!(LAYERS);
