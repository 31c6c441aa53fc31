//! `text-service`: `{"text": "..."}` →
//! `{"text": "<text with each URL replaced by its short URL>",
//!   "user_mentions": [{"user_id", "username"}, …],
//!   "urls": [{"shortened_url", "expanded_url"}, …]}`.
//!
//! As in DeathStarBench's TextService::ComposeText, it always asks both
//! `url-shorten` and `user-mention`, concurrently, even with nothing to ask.
//! It keeps no state of its own.

use fmerge_runtime::{self as rt, Error};
use serde::Deserialize;
use serde_json::json;
use sn_store::api::{Text, Urls, UserMentions};

#[derive(Deserialize)]
struct Request {
    text: String,
}

/// DeathStarBench's URL pattern, `(http://|https://)[a-zA-Z0-9_!~*'().&=+$%-]+`,
/// plus `/?#:` so that paths and queries are part of the URL.
fn url_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "_!~*'().&=+$%-/?#:".contains(c)
}

/// The URLs in `text`, as (byte range, url), in order.
fn find_urls(text: &str) -> Vec<(std::ops::Range<usize>, String)> {
    let mut found = Vec::new();
    let mut at = 0;
    let next = |at: usize| {
        ["http://", "https://"]
            .iter()
            .filter_map(|s| text[at..].find(s).map(|i| (at + i, s.len())))
            .min()
    };
    while let Some((start, scheme)) = next(at) {
        let rest = &text[start + scheme..];
        let len = rest.find(|c| !url_char(c)).unwrap_or(rest.len());
        let end = start + scheme + len;
        if len > 0 {
            found.push((start..end, text[start..end].to_string()));
        }
        at = end;
    }
    found
}

/// The distinct usernames mentioned as `@name` (DeathStarBench: `@[a-zA-Z0-9-_]+`),
/// in order of first mention.
fn find_mentions(text: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for (i, _) in text.match_indices('@') {
        let rest = &text[i + 1..];
        let name = &rest[..rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
            .unwrap_or(rest.len())];
        if !name.is_empty() && !names.iter().any(|n| n == name) {
            names.push(name.to_string());
        }
    }
    names
}

async fn handle(req: Request) -> Result<Text, Error> {
    let found = find_urls(&req.text);
    let urls: Vec<&str> = found.iter().map(|(_, u)| u.as_str()).collect();
    let shorten = serde_json::to_vec(&json!({ "urls": urls }))?;
    let mention = serde_json::to_vec(&json!({ "usernames": find_mentions(&req.text) }))?;
    let (shortened, mentioned) = tokio::try_join!(
        rt::invoke("url-shorten", shorten),
        rt::invoke("user-mention", mention)
    )?;
    let Urls { urls } = rt::callee_json("url-shorten", &shortened)?;
    let UserMentions { user_mentions } = rt::callee_json("user-mention", &mentioned)?;
    if urls.len() != found.len() {
        return Err(Error::new(format!(
            "url-shorten answered {} URLs for {}",
            urls.len(),
            found.len()
        )));
    }
    // Rebuild the text with each URL replaced by its short form.
    let mut text = String::with_capacity(req.text.len());
    let mut at = 0;
    for ((range, _), url) in found.iter().zip(&urls) {
        text.push_str(&req.text[at..range.start]);
        text.push_str(&url.shortened_url);
        at = range.end;
    }
    text.push_str(&req.text[at..]);
    Ok(Text {
        text,
        user_mentions,
        urls,
    })
}

rt::function!(json handle);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_urls_and_mentions() {
        let text = "hi @bob, see https://example.com/a?b=1 and http://x.org. @carol-1 @bob";
        let urls: Vec<String> = find_urls(text).into_iter().map(|(_, u)| u).collect();
        assert_eq!(urls, ["https://example.com/a?b=1", "http://x.org."]);
        assert_eq!(find_mentions(text), ["bob", "carol-1"]);
        assert!(find_urls("http:// nothing").is_empty());
        assert!(find_mentions("a @ b").is_empty());
    }
}
