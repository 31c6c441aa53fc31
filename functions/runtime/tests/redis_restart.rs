//! A Redis restart is not a permanent outage: with traffic flowing through
//! compose-post's tree (six functions that use Redis, each its own process
//! behind the nginx gateway), redis-server is killed and, a few seconds
//! later, started again on the same port. The functions must find the new
//! server on their own (sn-store's reconnecting `ConnectionManager`) and
//! answer every request again within a generous bound. The recovery time is
//! printed (run with `--nocapture` to see it); it is measured, not asserted
//! tightly, because a slow machine must not fail the test.
//!
//! Run: `cargo test --release -p fmerge-runtime --test redis_restart -- --nocapture`

use fmerge_testkit::{Deployment, HttpReply, Redis, try_post};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How long Redis stays down.
const DOWN: Duration = Duration::from_secs(3);
/// The bound on recovery: far above what it takes, so only a real failure
/// to reconnect fails the test.
const RECOVERY_BOUND: Duration = Duration::from_secs(30);
/// How long every request must have succeeded for "recovered".
const STREAK: Duration = Duration::from_secs(3);

struct Sample {
    start: Instant,
    end: Instant,
    ok: bool,
}

#[test]
fn traffic_succeeds_again_within_seconds_of_a_redis_restart() {
    let mut redis = Redis::start();
    let system = Deployment::unmerged(&redis, &[], &[]);
    let compose = system.url("compose-post");
    let samples: Mutex<Vec<Sample>> = Mutex::new(Vec::new());
    let stop = AtomicBool::new(false);
    let timestamp = AtomicU64::new(1_700_000_000_000);
    let (mut down_at, mut up_at) = (Instant::now(), Instant::now());
    let mut recovered = false;

    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                // Bounded: at most 20 000 requests per client.
                for _ in 0..20_000 {
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    // No mentions (the restarted Redis is empty); a URL, so
                    // url-shorten writes too.
                    let ts = timestamp.fetch_add(1, Ordering::Relaxed);
                    let request = format!(
                        r#"{{"username":"alice","user_id":1,"text":"restart https://example.com/{ts}","timestamp":{ts}}}"#
                    );
                    let start = Instant::now();
                    let ok = matches!(try_post(&compose, &request), Ok(HttpReply { status: 200, .. }));
                    let end = Instant::now();
                    samples
                        .lock()
                        .unwrap()
                        .push(Sample { start, end, ok });
                    std::thread::sleep(Duration::from_millis(20));
                }
            });
        }

        std::thread::sleep(Duration::from_secs(1));
        // Before stopping: a request that fails while redis goes down ends
        // after this, not before.
        down_at = Instant::now();
        redis.stop();
        std::thread::sleep(DOWN);
        redis.start_again();
        up_at = Instant::now();

        // Wait for a streak of successes, or give up after the bound.
        while up_at.elapsed() < RECOVERY_BOUND + STREAK {
            std::thread::sleep(Duration::from_millis(200));
            let samples = samples.lock().unwrap();
            let recent: Vec<&Sample> = samples
                .iter()
                .filter(|x| x.start > up_at && x.start.elapsed() < STREAK)
                .collect();
            let streak_long = up_at.elapsed() > STREAK;
            if streak_long && recent.len() >= 10 && recent.iter().all(|x| x.ok) {
                recovered = true;
                break;
            }
        }
        stop.store(true, Ordering::Relaxed);
    });

    let samples = samples.into_inner().unwrap();
    let before: Vec<&Sample> = samples.iter().filter(|x| x.end < down_at).collect();
    assert!(
        !before.is_empty() && before.iter().all(|x| x.ok),
        "traffic before the restart must succeed\n{}",
        system.outputs()
    );
    let failed = samples.iter().filter(|x| !x.ok).count();
    assert!(
        recovered,
        "no {STREAK:?} of 100% success within {RECOVERY_BOUND:?} of Redis coming back \
         ({failed} of {} requests failed)\n{}",
        samples.len(),
        system.outputs()
    );
    // The final all-success streak starts where the last failure ends.
    let last_failure = samples.iter().filter(|x| !x.ok).map(|x| x.end).max();
    let first_good = samples
        .iter()
        .filter(|x| x.ok && last_failure.is_none_or(|f| x.start >= f))
        .min_by_key(|x| x.end)
        .expect("successes after the restart");
    let recovery = first_good.end.saturating_duration_since(up_at);
    assert!(recovery < RECOVERY_BOUND, "recovery took {recovery:?}");

    // The functions did reconnect to the new server (it had no clients):
    // unique-id, url-shorten, store-post, write-user-timeline and
    // social-graph-get-followers (write-home-timeline has no follower to
    // write to on the empty Redis), plus this test's own connection.
    let info: String = redis::cmd("INFO")
        .arg("clients")
        .query(&mut redis.conn())
        .unwrap();
    let clients: usize = info
        .lines()
        .find_map(|l| l.strip_prefix("connected_clients:"))
        .and_then(|n| n.trim().parse().ok())
        .expect("connected_clients in INFO");
    assert!(clients >= 6, "5 functions and this test: {info}");
    eprintln!(
        "redis down {:.2} s; {} requests, {failed} failed; 100% success again {:.3} s after \
         Redis answered PING again",
        up_at.duration_since(down_at).as_secs_f64(),
        samples.len(),
        recovery.as_secs_f64()
    );
}
