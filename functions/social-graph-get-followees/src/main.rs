//! `social-graph-get-followees`: `{"user_id": u64}` → `{"followees": [u64, ...]}`,
//! the members of `social-graph:followees:<user_id>` in ascending score
//! order (when they were followed).

use fmerge_runtime::{self as rt, Error};
use sn_store::api::{Followees, UserId};
use sn_store::social_graph::{self, Side};

sn_store::store!();

async fn handle(UserId { user_id }: UserId) -> Result<Followees, Error> {
    let mut conn = redis().await?;
    let followees = social_graph::all(&mut conn, Side::Followees, user_id).await?;
    Ok(Followees { followees })
}

rt::function!(json handle);
