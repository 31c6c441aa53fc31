"""fmerge benchmarks: merged vs unmerged vs hand-fused latency and
throughput (two testbed modes), the cost of one RPC hop, in-process dispatch
overhead, build time and memory (the merge step at -j 1 and -j <cores>),
binary size.

    bench/run                 everything (cold builds included: about 25 min on 2 cores)
    bench/run --quick         no cold builds (about 19 min on 2 cores)
    bench/run --only watchdog our runtime against of-watchdog in front of it (a few minutes)
    bench/run --only app      the whole socialNetwork application, five deployments, two
                              workloads, and the cold build of every group (about 40 min)
    bench/run --help          all flags

Everything runs on 127.0.0.1 and is started and stopped by this script:
redis-server, nginx as the OpenFaaS gateway, every function as its own
process (calls between them go through nginx), the merged binaries (the pair
write-home-timeline + social-graph-get-followers, and the whole compose-post
chain) and the hand-fused programs of the same two groups (bench/fused, the
limit of merging). Load comes from `oha` (installed once from crates.io into
bench/.tools) at fixed request rates with latency correction (coordinated
omission), and closed-loop for the maximum throughput.

Two testbed modes: "shared" (one nginx for ingress and function-to-function
calls, nothing pinned) and "pinned" (client, ingress nginx and Redis on one
half of the cores, the function tier and a second, internal nginx on the
other half, with taskset).

Writes bench/results.json and bench/results.md; logs and scratch files go to
bench/out/ (git-ignored). `bench/update-summary` pastes results.md into
docs/PERFORMANCE.md between <!-- bench:start --> and <!-- bench:end -->.

The package behind bench/run: config (what is measured, the goals), processes
(child processes, ports, Redis, CPU accounting), testbed (nginx and the
deployments of one mode), load (oha runs and what they mean), watchdog (the
runtime against of-watchdog in front of it), builds (build times, sizes, the
criterion dispatch bench), report (results.md) and cli (flags, main); app,
appbuild and appreport do the same for the whole application (--only app).
"""
