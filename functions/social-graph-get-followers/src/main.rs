//! `social-graph-get-followers`: `{"user_id": u64}` → `{"followers": [u64, ...]}`,
//! the members of `social-graph:followers:<user_id>` in ascending score order.

use fmerge_runtime::{self as rt, Error};
use sn_store::api::{Followers, UserId};
use sn_store::social_graph::{self, Side};

sn_store::store!();

async fn handle(UserId { user_id }: UserId) -> Result<Followers, Error> {
    let mut conn = redis().await?;
    let followers = social_graph::all(&mut conn, Side::Followers, user_id).await?;
    Ok(Followers { followers })
}

rt::function!(json handle);
