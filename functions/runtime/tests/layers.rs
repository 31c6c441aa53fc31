//! The runtime's modules in layers: each imports only from the layers
//! below it (or its own, without a cycle), so that a new import upward or
//! around fails here before it knots the crate again. The check, and how it
//! reads imports, is `fmerge_testkit::layers`.
//!
//! Run: `cargo test --release -p fmerge-runtime --test layers`.

/// The layers, lowest first. A new module must be placed here.
const LAYERS: &[&[&str]] = &[
    // What everything reads: errors, settings, names, the connection layer.
    &[
        "error",
        "json",
        "server_settings",
        "function_config",
        "hooks",
        "process_metrics",
        "connections",
    ],
    &["metrics"],
    &["call_log", "record"],
    // The running call: its context and signatures.
    &["call"],
    &["limits", "handler"],
    &["callees", "isolation"],
    &["dispatch"],
    &["invoke"],
    &["body"],
    &["request", "metrics_port"],
    &["serve"],
];

fmerge_testkit::layers_test!(LAYERS);
