//! `url-shorten`: `{"urls": ["https://…", …]}` →
//! `{"urls": [{"shortened_url": "http://short-url/<code>", "expanded_url": "https://…"}, …]}`
//! in request order, and `SET short-url:<code> <expanded url>` for each.
//!
//! DeathStarBench draws a random code; this one takes the code from the C
//! library in `functions/shortcode` (FNV-1a + base62), so a URL always gets
//! the same short URL and runs are reproducible. That library is also why
//! this function has a native static library to link.

use fmerge_runtime::{self as rt, Error};
use serde::Deserialize;
use sn_store::api::{Url, Urls};

/// DeathStarBench's prefix for short URLs.
const SHORT_URL_PREFIX: &str = "http://short-url/";

#[derive(Deserialize)]
struct Request {
    urls: Vec<String>,
}

sn_store::store!();

async fn handle(req: Request) -> Result<Urls, Error> {
    let mut pipe = redis::pipe();
    let mut urls = Vec::with_capacity(req.urls.len());
    for expanded_url in req.urls {
        let code = shortcode::short_code(&expanded_url);
        pipe.cmd("SET")
            .arg(format!("short-url:{code}"))
            .arg(&expanded_url)
            .ignore();
        urls.push(Url {
            shortened_url: format!("{SHORT_URL_PREFIX}{code}"),
            expanded_url,
        });
    }
    if !urls.is_empty() {
        redis().await?.query_pipe::<()>(&pipe).await?;
    }
    Ok(Urls { urls })
}

rt::function!(json handle);
