//! `seed`: fills a socialNetwork deployment with users, a follow graph and
//! posts, through its gateway (see `fmerge_testkit::seed`).
//!
//! ```text
//! cargo run --release -p fmerge-testkit --bin seed -- \
//!     --gateway http://127.0.0.1:8080 --users 1000 --degree 20 --posts 5000
//! ```

use clap::Parser;
use fmerge_testkit::{SeedOptions, seed};
use std::process::ExitCode;

/// Registers users `user1`..`user<N>` (ids 1..N), makes each follow DEGREE
/// others, and composes POSTS posts, all through the gateway's
/// `/function/<name>` routes. The data depends only on the flags (and, for
/// post ids, on --concurrency 1).
#[derive(Parser)]
#[command(name = "seed")]
struct Args {
    /// The gateway: `http://host:port` (its `/function/<name>` routes are used).
    #[arg(long, env = "GATEWAY_URL", default_value = "http://127.0.0.1:8080")]
    gateway: String,
    /// Users to register.
    #[arg(long, default_value_t = 100)]
    users: u64,
    /// Followees per user (capped at users - 1).
    #[arg(long, default_value_t = 10)]
    degree: u64,
    /// Posts to compose.
    #[arg(long, default_value_t = 1000)]
    posts: u64,
    /// Seed of the generator: the same seed, the same data set.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Requests in flight at once.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=1024))]
    concurrency: u16,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let opts = SeedOptions {
        users: args.users,
        degree: args.degree,
        posts: args.posts,
        seed: args.seed,
        concurrency: args.concurrency.into(),
    };
    match seed(&args.gateway, &opts) {
        Ok(done) => {
            println!(
                "seeded {} users, {} follows and {} posts through {} in {:.1} s",
                done.users,
                done.follows,
                done.posts,
                args.gateway,
                done.took.as_secs_f64()
            );
            ExitCode::SUCCESS
        }
        Err(why) => {
            eprintln!(
                "seed: {why}\n(is the application deployed behind {}? \
                 a username that is taken means this data set was seeded already)",
                args.gateway
            );
            ExitCode::FAILURE
        }
    }
}
