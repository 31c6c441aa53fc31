//! fmerge-plan's modules in layers, each importing only from the layers
//! below it: the searches above the model they search. The check is
//! `fmerge_testkit::layers`.
//!
//! Run: `cargo test --release -p fmerge-plan --test layers`.

/// The layers, lowest first. A new module must be placed here.
const LAYERS: &[&[&str]] = &[
    &["set"],
    // The application and the value of a set of groups.
    &["model"],
    &["search"],
    // The Pareto front: the cost search again and again.
    &["front"],
];

fmerge_testkit::layers_test!(LAYERS);
