//! What one `invoke` costs: a merged (in-process) callee vs a direct call of
//! the same no-op handler vs the same no-op served over HTTP on loopback.
//!
//! `cargo bench -p fmerge-runtime --bench dispatch` (bench/run runs it and
//! reads Criterion's estimates).
//!
//! The merged case registers its callee the way `fmerge` does, without the
//! merger: it writes the runtime's table `fmerge.routes` (declared here as an
//! extern static) so that `invoke` takes exactly the lookup path of a merged
//! binary. The HTTP case runs the real `fmerge_runtime::serve` in a thread on
//! 127.0.0.1 and reaches it with `invoke` through `GATEWAY_URL`, i.e. the
//! pooled keep-alive client of an unmerged function, minus the gateway hop.
//!
//! Each measurement runs `iters` calls inside one `block_on` of a
//! current-thread tokio runtime (`iter_custom`), so that entering the runtime
//! is not part of the per-call figure.

use criterion::{Criterion, criterion_group, criterion_main};
use fmerge_runtime::hooks::{Route, Routes};
use fmerge_runtime::{BoxResponse, Bytes, Error, Input, Request, invoke};
use std::hint::black_box;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Once;
use std::time::{Duration, Instant};

unsafe extern "Rust" {
    #[link_name = fmerge_contract::routes_symbol!()]
    static mut ROUTES: Routes;
}

/// A small request, like the pair's `{"user_id": 1}`.
const PAYLOAD: &[u8] = br#"{"user_id":1}"#;

/// The no-op handler: the body of a function that does nothing.
async fn noop(body: Bytes) -> Result<Vec<u8>, Error> {
    black_box(&body);
    Ok(Vec::new())
}

/// Its entry, exactly as `function!` writes one.
fn noop_entry(input: Input) -> BoxResponse {
    fmerge_runtime::run_handler("noop", noop, input)
}

/// Names in the table. `noop` is first; `noop-7` is the last of eight, like
/// the last callee of the compose-post chain (7 callees) in a linear scan.
const MERGED: [&str; 8] = [
    "noop", "noop-1", "noop-2", "noop-3", "noop-4", "noop-5", "noop-6", "noop-7",
];

static SETUP: Once = Once::new();
static mut HTTP_PORT: u16 = 0;

/// Registers the merged callees and starts the HTTP server, once.
fn setup() -> u16 {
    SETUP.call_once(|| {
        let routes: &'static [Route] = Box::leak(
            MERGED
                .iter()
                .map(|name| Route {
                    name: name.as_ptr(),
                    len: name.len(),
                    entry: noop_entry,
                    isolate: 0,
                })
                .collect::<Vec<_>>()
                .into_boxed_slice(),
        );
        // SAFETY: written once, before any `invoke`, from this thread only.
        unsafe {
            ROUTES = Routes {
                routes: routes.as_ptr(),
                len: routes.len(),
            }
        };

        let port = {
            let probe = TcpListener::bind("127.0.0.1:0").expect("free port");
            probe.local_addr().expect("addr").port()
        };
        // SAFETY: no other thread exists yet that reads the environment.
        unsafe {
            std::env::set_var("port", port.to_string());
            std::env::set_var("GATEWAY_URL", format!("http://127.0.0.1:{port}"));
        }
        // Served under another name than the one invoked: this process has
        // a filled table, and `invoke` of the function it serves would run
        // in-process (a merged binary's call back to its caller).
        std::thread::spawn(|| fmerge_runtime::serve("noop-server", noop_entry));
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect_timeout(&addr, Duration::from_millis(100)).is_err() {
            assert!(
                Instant::now() < deadline,
                "the HTTP no-op server did not come up on {addr}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        // SAFETY: written once, here.
        unsafe { HTTP_PORT = port };
    });
    unsafe { HTTP_PORT }
}

fn dispatch(c: &mut Criterion) {
    setup();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio");
    let mut g = c.benchmark_group("dispatch");

    g.bench_function("direct_async_fn", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    black_box(noop(black_box(Bytes::from_static(PAYLOAD))).await.unwrap());
                }
                start.elapsed()
            })
        })
    });
    g.bench_function("direct_entry", |b| {
        let entry: fn(Input) -> BoxResponse = black_box(noop_entry);
        b.iter_custom(|iters| {
            rt.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    black_box(
                        entry(black_box(Input::from(Request::new(Bytes::from_static(
                            PAYLOAD,
                        )))))
                        .await,
                    );
                }
                start.elapsed()
            })
        })
    });
    for (id, name) in [
        ("invoke_merged_first_of_8", "noop"),
        ("invoke_merged_last_of_8", "noop-7"),
    ] {
        g.bench_function(id, |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let start = Instant::now();
                    for _ in 0..iters {
                        black_box(
                            invoke(black_box(name), Bytes::from_static(PAYLOAD))
                                .await
                                .unwrap(),
                        );
                    }
                    start.elapsed()
                })
            })
        });
    }
    g.bench_function("invoke_http_loopback", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    black_box(
                        invoke(black_box("noop-http"), Bytes::from_static(PAYLOAD))
                            .await
                            .unwrap(),
                    );
                }
                start.elapsed()
            })
        })
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(50);
    targets = dispatch
}
criterion_main!(benches);
