//! `media`: `{"media_ids": [u64], "media_types": [str] (optional, same
//! length)}` → `{"media": [{"media_id": u64, "media_type": str}]}`, in
//! request order (`media_type` left out without `media_types`). Lengths that
//! differ are a 400. DeathStarBench's MediaService::ComposeMedia; no state.

use fmerge_runtime::{self as rt, Bytes, Error};
use serde::{Deserialize, Serialize};

#[derive(Deserialize)]
struct Request {
    #[serde(default)]
    media_ids: Vec<u64>,
    #[serde(default)]
    media_types: Option<Vec<String>>,
}

#[derive(Serialize)]
struct Media {
    media_id: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    media_type: Option<String>,
}

#[derive(Serialize)]
struct Response {
    media: Vec<Media>,
}

async fn handle(body: Bytes) -> rt::Reply {
    let req: Request = rt::json(&body)?;
    let types: Vec<Option<String>> = match req.media_types {
        Some(types) if types.len() != req.media_ids.len() => {
            return Err(Error::bad_request(
                "media_ids and media_types differ in length",
            ));
        }
        Some(types) => types.into_iter().map(Some).collect(),
        None => vec![None; req.media_ids.len()],
    };
    let media = req
        .media_ids
        .into_iter()
        .zip(types)
        .map(|(media_id, media_type)| Media {
            media_id,
            media_type,
        })
        .collect();
    rt::to_json(&Response { media })
}

rt::function!(handle);
