//! The socialNetwork deployment of this repo, and its standard data set.

use crate::{FUNCTIONS, Function, Gateway, Redis, free_port, function_binary, redis_env};
use std::path::PathBuf;

/// The address the Redis URL defaults to inside every function: never let a
/// test fall back to it (see [`redis_env`]).
pub const CLUSTER_REDIS_URL: &str = "redis://sn-redis-master.openfaas-fn.svc.cluster.local:6379";

/// The unmerged socialNetwork: every function of [`FUNCTIONS`] as its own
/// process behind one [`Gateway`], all on one [`Redis`].
pub struct Deployment {
    // Dropped in this order: the gateway first, then the functions.
    pub gateway: Gateway,
    pub functions: Vec<Function>,
    /// Each process's metrics port (its own, as each pod has its own).
    pub metrics: Vec<u16>,
}

impl Deployment {
    /// Starts the unmerged system: every function of [`FUNCTIONS`] from its
    /// own [`function_binary`]. `overrides` routes some functions to other
    /// ports instead (a [`Stub`](crate::Stub), or a closed port from [`free_port`] for a
    /// function that is down); those are not started. `env` is added to
    /// every process.
    pub fn unmerged(redis: &Redis, overrides: &[(&str, u16)], env: &[(&str, &str)]) -> Deployment {
        let processes: Vec<(&str, PathBuf)> = FUNCTIONS
            .iter()
            .filter(|f| !overrides.iter().any(|(o, _)| o == *f))
            .map(|f| (*f, function_binary(f)))
            .collect();
        Deployment::start(redis, &processes, overrides, env)
    }

    /// Starts one process per `(function name, binary)` of `processes` (a
    /// merged binary under the name of its group's caller, say), each
    /// routed at `/function/<name>`, plus the `overrides` routes, behind one
    /// gateway. A function merged into another's binary gets no route, so
    /// the gateway answers 404 if anything asks for it over the network.
    /// Every process gets `REDIS_URL` and every `<FUNCTION>__REDIS_URL` of
    /// [`FUNCTIONS`] set to `redis`, `GATEWAY_URL`, and `env`.
    pub fn start(
        redis: &Redis,
        processes: &[(&str, PathBuf)],
        overrides: &[(&str, u16)],
        env: &[(&str, &str)],
    ) -> Deployment {
        let ports: Vec<(&str, u16)> = processes
            .iter()
            .map(|(name, _)| (*name, free_port()))
            .collect();
        let routes: Vec<(&str, u16)> = overrides.iter().chain(&ports).copied().collect();
        let gateway = Gateway::start(&routes);
        let mut common: Vec<(String, String)> = redis_env(&redis.url(), FUNCTIONS);
        common.push(("GATEWAY_URL".into(), gateway.url()));
        common.extend(env.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let metrics: Vec<u16> = processes.iter().map(|_| free_port()).collect();
        let functions = processes
            .iter()
            .zip(&ports)
            .zip(&metrics)
            .map(|(((name, binary), (_, port)), metrics)| {
                let own = ("metrics_port".to_string(), metrics.to_string());
                Function::start(binary, name, *port, [own].into_iter().chain(common.clone()))
            })
            .collect();
        Deployment {
            gateway,
            functions,
            metrics,
        }
    }

    /// Every process's `/metrics`, one after another: what a Prometheus
    /// scrape of the application's pods holds.
    pub fn scrape(&self) -> String {
        self.metrics
            .iter()
            .map(|port| {
                let crate::HttpReply { status, body } =
                    crate::get(&format!("http://127.0.0.1:{port}/metrics"));
                assert_eq!(status, 200, "GET /metrics on {port}: {body}");
                body
            })
            .collect()
    }

    /// The gateway URL of function `name`.
    pub fn url(&self, name: &str) -> String {
        self.gateway.function_url(name)
    }

    /// The process of function `name`.
    pub fn function(&mut self, name: &str) -> &mut Function {
        self.functions
            .iter_mut()
            .find(|f| f.name() == name)
            .unwrap_or_else(|| panic!("{name} was not started"))
    }

    /// Every function's output, for a failure message.
    pub fn outputs(&self) -> String {
        self.functions
            .iter()
            .map(|f| format!("--- {}\n{}", f.name(), f.output()))
            .collect()
    }
}

/// Seeds the standard socialNetwork data set:
/// users `user:<name>` → id: alice 1, bob 2, carol 3, dave 4, erin 5;
/// followers (`social-graph:followers:<id>`, score = when they followed):
/// of 1: dave@10, bob@20, erin@30; of 2: alice@5, carol@7; of 3: alice@1.
pub fn seed_social_network(conn: &mut redis::Connection) {
    let mut pipe = redis::pipe();
    for (name, id) in [
        ("alice", 1),
        ("bob", 2),
        ("carol", 3),
        ("dave", 4),
        ("erin", 5),
    ] {
        pipe.cmd("SET").arg(format!("user:{name}")).arg(id).ignore();
    }
    for (user, followers) in [
        (1, &[(4, 10), (2, 20), (5, 30)][..]),
        (2, &[(1, 5), (3, 7)][..]),
        (3, &[(1, 1)][..]),
    ] {
        for (follower, score) in followers {
            pipe.cmd("ZADD")
                .arg(format!("social-graph:followers:{user}"))
                .arg(*score)
                .arg(*follower)
                .ignore();
        }
    }
    pipe.query::<()>(conn).expect("seeding Redis");
}

/// compose-post requests that succeed on [`seed_social_network`]'s data, with
/// URLs, mentions, media and explicit timestamps.
pub const SAMPLE_POSTS: &[&str] = &[
    r#"{"username":"alice","user_id":1,"text":"hello @bob, see https://example.com/a?x=1","media_ids":[11],"media_types":["png"],"post_type":"POST","timestamp":1700000000000}"#,
    r#"{"username":"bob","user_id":2,"text":"@alice @carol http://x.org/p and https://y.net","media_ids":[],"post_type":"POST","timestamp":1700000001000}"#,
    r#"{"username":"carol","user_id":3,"text":"no links, no mentions","media_ids":[],"post_type":"REPOST","timestamp":1700000002000}"#,
    r#"{"username":"alice","user_id":1,"text":"@erin @dave @erin https://example.com/a?x=1","media_ids":[12,13],"media_types":["jpg","gif"],"post_type":"POST","timestamp":1700000003000}"#,
];

/// write-home-timeline requests on [`seed_social_network`]'s data: followers
/// and mentions overlapping, none, an unknown author, and malformed JSON (a 400).
pub const PAIR_REQUESTS: &[&str] = &[
    r#"{"post_id": 100, "user_id": 1, "timestamp": 1700000000, "user_mentions_id": [5, 3]}"#,
    r#"{"post_id": 101, "user_id": 2, "timestamp": 1700000001, "user_mentions_id": []}"#,
    r#"{"post_id": 102, "user_id": 99, "timestamp": 1700000002, "user_mentions_id": [2]}"#,
    r#"{"post_id": 103, "user_id": 1"#,
];
