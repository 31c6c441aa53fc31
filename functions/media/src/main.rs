//! `media`: `{"media_ids": [u64], "media_types": [str] (optional, same
//! length)}` → `{"media": [{"media_id": u64, "media_type": str}]}`, in
//! request order (`media_type` left out without `media_types`). Lengths that
//! differ are a 400. DeathStarBench's MediaService::ComposeMedia; no state.

use fmerge_runtime::{self as rt, Error};
use serde::Deserialize;
use sn_store::api::{Media, MediaList};

#[derive(Deserialize)]
struct Request {
    #[serde(default)]
    media_ids: Vec<u64>,
    media_types: Option<Vec<String>>,
}

async fn handle(req: Request) -> Result<MediaList, Error> {
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
    Ok(MediaList { media })
}

rt::function!(json handle);
