//! `store-post`: a composed post (the JSON that `compose-post` builds, with at
//! least `"post_id": u64`) → `SET post:<post_id> <the request body>` →
//! `{"post_id": u64}`. Like DeathStarBench's PostStorageService::StorePost,
//! minus the cache.

use fmerge_runtime::{self as rt, Bytes, Error};
use redis::aio::MultiplexedConnection;
use serde::{Deserialize, Serialize};
use tokio::sync::OnceCell;

/// Only the id is read; the rest of the post is stored as it came.
#[derive(Deserialize, Serialize)]
struct PostId {
    post_id: u64,
}

async fn redis() -> Result<MultiplexedConnection, Error> {
    static CONN: OnceCell<MultiplexedConnection> = OnceCell::const_new();
    CONN.get_or_try_init(|| async {
        let url = rt::config!("REDIS_URL", "redis://sn-redis-master.openfaas-fn.svc.cluster.local:6379");
        let client = redis::Client::open(url.as_str()).map_err(|e| Error::new(format!("bad REDIS_URL {url}: {e}")))?;
        client
            .get_multiplexed_async_connection()
            .await
            .map_err(|e| Error::new(format!("cannot connect to Redis at {url}: {e}")))
    })
    .await
    .cloned()
}

async fn handle(body: Bytes) -> rt::Reply {
    let post: PostId = rt::json(&body)?;
    let mut conn = redis().await?;
    redis::cmd("SET")
        .arg(format!("post:{}", post.post_id))
        .arg(&body[..])
        .query_async::<()>(&mut conn)
        .await
        .map_err(|e| Error::new(format!("redis SET failed: {e}")))?;
    rt::to_json(&post)
}

rt::function!(handle);
