//! The shim's modules in layers, each importing only from the layers below
//! it (or its own, without a cycle). The check is `fmerge_testkit::layers`.
//!
//! Run: `cargo test --release -p fmerge-shim --test layers`.

/// The layers, lowest first. A new module must be placed here.
const LAYERS: &[&[&str]] = &[
    // HTTP/1.1, the gateway's names, rewrites (the contract, a path module,
    // is outside src/); descriptors over Unix sockets, and the warm
    // launcher's requests; the C library's calls the processes need.
    &["http", "gateway", "rewrite", "wire", "sys"],
    // The generated table; of-watchdog's CGI; the relay to the real gateway.
    &["table", "cgi", "relay"],
    // A member run in this process; one run in a process of the zygote's.
    &["inproc", "zygote"],
    // A call to a member, run where it may run; members that serve HTTP
    // themselves, started once and called through their servers; the
    // caller's own process forked by the warm server; work at a deadline.
    &["member", "servers", "warm", "deadlines"],
    // The stand-in that serves calls on threads of its own; handler
    // libraries' `handle`s, which it calls.
    &["server", "handles"],
    // Calls answered on the calling thread.
    &["inline"],
    // The C functions in libc's place, which send calls to the above.
    &["interpose"],
];

fmerge_testkit::layers_test!(LAYERS);
