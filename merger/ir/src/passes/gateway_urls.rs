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
//!
//! For watchdog-process members ([`Facts::process`]) the calls are not
//! rewritten but redirected at run time: every base URL of a gateway in
//! their code (`http://host[:port]` alone, or followed by `/function/`)
//! goes into [`Found::gateway_urls`], and the merged binary answers the
//! calls made to it that name a member in the pod (`fmerge-shim`).

use super::fmt_args;
use crate::ir;
use crate::passes::{Crate, Facts, Found};
use anyhow::Result;
use inkwell::module::Module;

pub fn run(module: &Module<'_>, krate: &Crate, facts: &Facts, found: &mut Found) -> Result<()> {
    if !krate.local {
        return Ok(());
    }
    if facts.process {
        return collect_bases(module, krate, found);
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

/// Adds the gateway base URLs of a process-form member's crate to
/// `found.gateway_urls`, with a note naming each.
fn collect_bases(module: &Module<'_>, krate: &Crate, found: &mut Found) -> Result<()> {
    let mut bases = std::collections::BTreeSet::new();
    for bytes in ir::globals(module).into_iter().filter_map(ir::string_bytes) {
        let text = fmt_args::render(&bytes)
            .unwrap_or_else(|| String::from_utf8_lossy(&bytes).into_owned());
        bases.extend(gateway_bases(&text));
    }
    for base in bases {
        found.notes.push(format!(
            "{} calls functions at the gateway `{base}`: calls to members are answered in the pod",
            krate.describe()
        ));
        found.gateway_urls.insert(base);
    }
    Ok(())
}

/// The gateway base URLs in `text`: `http://host[:port]` standing alone
/// (a constant the code appends `/function/<name>` to) or followed by
/// `/function/`. A host that is a placeholder (`http://{}:8080/…`) is not
/// one: its value comes at run time.
fn gateway_bases(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (at, _) in text.match_indices("http://") {
        let rest = &text[at + "http://".len()..];
        let end = rest
            .find(|c: char| c == '/' || c.is_whitespace() || c == '"' || c == '{')
            .unwrap_or(rest.len());
        let authority = &rest[..end];
        let after = &rest[end..];
        let alone = at == 0 && (after.is_empty() || after == "/");
        if authority.is_empty() || !(alone || after.starts_with("/function/")) {
            continue;
        }
        out.push(format!("http://{authority}"));
    }
    out
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
    use super::{gateway_bases, url_of};

    #[test]
    fn gateway_bases_are_hosts_that_serve_functions() {
        assert_eq!(
            gateway_bases("http://gateway.openfaas.svc.cluster.local.:8080/function/{}"),
            ["http://gateway.openfaas.svc.cluster.local.:8080"]
        );
        assert_eq!(gateway_bases("http://gw:8080"), ["http://gw:8080"]);
        assert_eq!(gateway_bases("http://gw:8080/"), ["http://gw:8080"]);
        assert!(gateway_bases("http://{}:8080/function/{}").is_empty());
        assert!(gateway_bases("see http://example.com/docs").is_empty());
        assert!(gateway_bases("calling http://api.example.com/v1/x").is_empty());
    }

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
