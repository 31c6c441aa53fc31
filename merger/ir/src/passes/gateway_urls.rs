//! Gateway URLs: a warning for each hand-written gateway URL of a merged
//! function in the user's code.
//!
//! Code that calls a function with its own HTTP client
//! (`http://gateway:8080/function/<name>`, optionally `.<namespace>`)
//! bypasses `invoke`, so that call still leaves the process after the merge.
//! fmerge cannot turn it into an in-process call, but it can say where it
//! is. A URL built with `format!` sits in a template whose text pieces carry
//! their length in front of them: it is shown as written, `{}` for each
//! placeholder.

use crate::passes::{Crate, Facts, Found};
use crate::{fmt_args, ir};
use anyhow::Result;
use inkwell::module::Module;

pub fn run(module: &Module<'_>, krate: &Crate, facts: &Facts, found: &mut Found) -> Result<()> {
    if !krate.local {
        return Ok(());
    }
    let members = facts.members();
    let mut urls = Vec::new();
    for bytes in ir::globals(module).into_iter().filter_map(ir::string_bytes) {
        let text = fmt_args::render(&bytes)
            .unwrap_or_else(|| String::from_utf8_lossy(&bytes).into_owned());
        for member in &members {
            if let Some(url) = url_of(&text, member) {
                urls.push((member.clone(), url));
            }
        }
    }
    urls.sort();
    urls.dedup();
    let linked_by = krate.owners.iter().cloned().collect::<Vec<_>>().join(", ");
    for (function, url) in urls {
        found.warnings.push(format!(
            "crate {} (linked by {linked_by}) holds the gateway URL `{url}` of merged function {function}: a call made with it, \
             with its own HTTP client, still leaves the process\nfix: call `fmerge_runtime::invoke(\"{function}\", …)`",
            krate.name
        ));
    }
    Ok(())
}

/// The URL in `text` that ends in `/function/<member>` (the word around
/// the first such match), if any.
fn url_of(text: &str, member: &str) -> Option<String> {
    let needle = format!("/function/{member}");
    let (at, _) = text.match_indices(&needle).find(|(at, _)| {
        let next = text[at + needle.len()..].chars().next();
        !next.is_some_and(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    })?;
    let apart = |c: char| c.is_whitespace() || c.is_control() || c == '"' || c == '`';
    let start = text[..at]
        .char_indices()
        .rev()
        .find(|(_, c)| apart(*c))
        .map_or(0, |(i, c)| i + c.len_utf8());
    let start = text[start..at].find("http").map_or(start, |h| start + h);
    let url: String = text[start..]
        .chars()
        .take_while(|c| !apart(*c))
        .take(120)
        .collect();
    Some(url)
}

#[cfg(test)]
mod tests {
    use super::url_of;

    #[test]
    fn the_url_is_the_word_around_the_match() {
        let url = |t: &str| url_of(t, "ep-store");
        assert_eq!(
            url("http://gateway.openfaas:8080/function/ep-store").as_deref(),
            Some("http://gateway.openfaas:8080/function/ep-store")
        );
        assert_eq!(
            url("calling {}/function/ep-store.openfaas-fn failed: {}").as_deref(),
            Some("{}/function/ep-store.openfaas-fn")
        );
        assert_eq!(
            url("GET:http://gw/function/ep-store").as_deref(),
            Some("http://gw/function/ep-store")
        );
        assert_eq!(url("http://gw/function/ep-store-2"), None);
    }
}
