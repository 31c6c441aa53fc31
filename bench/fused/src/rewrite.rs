//! The mechanical rewrites that turn a function's `src/main.rs` into one
//! module of a fused program. `build.rs` applies them (it includes this file
//! with `#[path]`); the unit tests below run with the crate's lib.
//!
//! Exactly four rewrites, each checked, so that the baseline fails to build
//! rather than drift from the real functions:
//! - `rt::function!(handle);` (or `(json handle)`) becomes
//!   `fmerge_fused::function!(…)`: no second `main`, no exported entry
//!   symbol, and a `fused_handle` that the rest of the program can call
//!   (`handle` itself is private to its module);
//! - `rt::config!(` becomes `fmerge_fused::config!(`: the plain variable, as
//!   the function reads it standalone (see that macro);
//! - `sn_store::store!();` becomes `sn_store::store!(config:
//!   fmerge_fused::config);`: the Redis address read the same way;
//! - `rt::invoke("<member>", ` becomes `crate::direct::<member>(` for a
//!   member of the same program; any other `invoke` stays a call over HTTP.
//!
//! Line numbers are kept, so that a compiler message about a generated
//! module points at the same line of the function's own `main.rs`.

/// The module (and `direct::` function) name of a function:
/// `social-graph-get-followers` → `social_graph_get_followers`.
pub fn module_name(function: &str) -> String {
    function.replace('-', "_")
}

const FUNCTION_LINE: &str = "rt::function!(handle);";
const JSON_FUNCTION_LINE: &str = "rt::function!(json handle);";
const STORE_LINE: &str = "sn_store::store!();";
const INVOKE: &str = "rt::invoke(";

/// Rewrites `source`, the `main.rs` of `function`, into a module of a
/// program made of `members`. Returns the module's text and the members it
/// now calls directly, or what no longer matches.
pub fn rewrite(
    function: &str,
    source: &str,
    members: &[&str],
) -> Result<(String, Vec<String>), String> {
    let file = format!("functions/{function}/src/main.rs");
    let fix = "update bench/fused/src/rewrite.rs (or the function) so that the fused baseline matches the real function";

    // 1. The entry: exactly one `rt::function!(handle);` line.
    let entry = |l: &str| [FUNCTION_LINE, JSON_FUNCTION_LINE].contains(&l.trim());
    let found = source.lines().filter(|l| entry(l)).count();
    if found != 1 {
        return Err(format!(
            "{file}: expected exactly one line `{FUNCTION_LINE}`, found {found} (`{JSON_FUNCTION_LINE}` counts too); {fix}"
        ));
    }
    let mut text = String::with_capacity(source.len() + 256);
    for line in source.split_inclusive('\n') {
        if entry(line) {
            let (code, newline) = line.split_at(line.trim_end_matches('\n').len());
            text.push_str(&code.replacen("rt::function!(", "fmerge_fused::function!(", 1));
            text.push_str(" // fused: no second `main`, no exported entry symbol");
            text.push_str(newline);
        } else if line.trim() == STORE_LINE {
            text.push_str(&line.replace(
                STORE_LINE,
                "sn_store::store!(config: fmerge_fused::config);",
            ));
        } else if let Some(hidden) = line.trim().strip_prefix("sn_store::")
            && hidden.contains("!(")
        {
            // Its expansion may call members, out of the rewrite's sight.
            return Err(format!(
                "{file}: `sn_store::{hidden}` is a macro whose calls the rewrite cannot see; {fix}"
            ));
        } else {
            text.push_str(line);
        }
    }

    // 2. Settings: the plain variable.
    let text = text.replace("rt::config!(", "fmerge_fused::config!(");
    if text.matches("config!(").count() != text.matches("fmerge_fused::config!(").count() {
        return Err(format!(
            "{file}: a `config!` not written `rt::config!(`; {fix}"
        ));
    }
    if text.matches("function!(").count() != 1 {
        return Err(format!("{file}: a second `function!`; {fix}"));
    }

    // 3. Calls of members: direct.
    let mut out = String::with_capacity(text.len());
    let mut calls = Vec::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find(INVOKE) {
        out.push_str(&rest[..at]);
        let after = &rest[at + INVOKE.len()..];
        let (callee, len) = literal_then_comma(after).ok_or_else(|| {
            format!("{file}: an `{INVOKE}` whose first argument is not a string literal; {fix}")
        })?;
        if members.contains(&callee) {
            out.push_str(&format!("crate::direct::{}(", module_name(callee)));
            // Keep the line count: any newline inside `"name",` stays.
            out.extend(after[..len].chars().filter(|&c| c == '\n'));
            calls.push(callee.to_string());
            rest = &after[len..];
        } else {
            out.push_str(INVOKE);
            rest = after;
        }
    }
    out.push_str(rest);

    // Nothing else may still reach a member another way.
    for (at, _) in out.match_indices("invoke(") {
        if let Some((callee, _)) = literal_then_comma(&out[at + "invoke(".len()..])
            && members.contains(&callee)
        {
            return Err(format!(
                "{file}: an invoke of {callee} not written `{INVOKE}\"{callee}\", …)`; {fix}"
            ));
        }
    }
    Ok((out, calls))
}

/// `  "name" , ` at the start of `s`: the name, and the length through the
/// comma and the spaces after it on the same line.
fn literal_then_comma(s: &str) -> Option<(&str, usize)> {
    let start = s.len() - s.trim_start().len();
    let body = s[start..].strip_prefix('"')?;
    let end = body.find('"')?;
    let name = &body[..end];
    let after = body[end + 1..].trim_start().strip_prefix(',')?;
    let spaces = after.len() - after.trim_start_matches([' ', '\t']).len();
    Some((name, s.len() - after.len() + spaces))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Asserts that `text` contains `needle`.
    fn says(text: &str, needle: &str) {
        assert!(text.contains(needle), "{text}");
    }

    const CALLER: &str = "use fmerge_runtime::{self as rt, Bytes};\n\
        async fn handle(body: Bytes) -> rt::Reply {\n\
        \x20   let url = rt::config!(\"REDIS_URL\", \"redis://x\");\n\
        \x20   let a = rt::invoke(\"b\", body.clone()).await?;\n\
        \x20   let c = rt::invoke(\n        \"c\",\n        body).await?;\n\
        \x20   rt::to_json(&(a, c))\n\
        }\n\
        \n\
        rt::function!(handle);\n";

    #[test]
    fn members_become_direct_calls_and_others_stay_invokes() {
        let (text, calls) = rewrite("a", CALLER, &["a", "b"]).unwrap();
        assert_eq!(calls, ["b"]);
        says(&text, "let a = crate::direct::b(body.clone()).await?;");
        says(&text, "let c = rt::invoke(\n        \"c\",\n        body)");
        says(&text, "fmerge_fused::config!(\"REDIS_URL\", \"redis://x\")");
        says(&text, "\nfmerge_fused::function!(handle);");
        assert!(!text.contains("rt::function!"), "{text}");
        assert_eq!(
            text.lines().count(),
            CALLER.lines().count(),
            "line numbers are kept"
        );

        // Formatted over three lines, the call still becomes direct, lines kept.
        let (text, calls) = rewrite("a", CALLER, &["a", "c"]).unwrap();
        assert_eq!(calls, ["c"]);
        says(&text, "let c = crate::direct::c(\n\n        body).await?;");
        assert_eq!(text.lines().count(), CALLER.lines().count());
    }

    #[test]
    fn a_json_handler_and_its_store_are_rewritten_in_place() {
        let source = CALLER
            .replace("rt::function!(handle);", "rt::function!(json handle);")
            .replace("async fn handle", "sn_store::store!();\nasync fn handle");
        let (text, _) = rewrite("a", &source, &["a"]).unwrap();
        says(&text, "\nfmerge_fused::function!(json handle); // fused");
        says(&text, "\nsn_store::store!(config: fmerge_fused::config);\n");
        assert_eq!(text.lines().count(), source.lines().count());
    }

    #[test]
    fn a_function_that_no_longer_matches_is_an_error_that_says_what() {
        let no_entry = CALLER.replace(
            "rt::function!(handle);",
            "fmerge_runtime::function!(handle);",
        );
        let e = rewrite("a", &no_entry, &["a"]).unwrap_err();
        says(
            &e,
            "functions/a/src/main.rs: expected exactly one line `rt::function!(handle);`, found 0",
        );

        let other_config = CALLER.replace("rt::config!(", "fmerge_runtime::config!(");
        says(
            &rewrite("a", &other_config, &["a"]).unwrap_err(),
            "a `config!` not written `rt::config!(`",
        );

        let computed = CALLER.replace("rt::invoke(\"b\"", "rt::invoke(name");
        says(
            &rewrite("a", &computed, &["a"]).unwrap_err(),
            "not a string literal",
        );

        let hidden = CALLER.replace(
            "async fn handle",
            "sn_store::by_usernames!(\"b\");\nasync fn handle",
        );
        let e = rewrite("a", &hidden, &["a", "b"]).unwrap_err();
        says(&e, "a macro whose calls the rewrite cannot see");

        let other_invoke = CALLER.replace("rt::invoke(\"b\"", "fmerge_runtime::invoke(\"b\"");
        let e = rewrite("a", &other_invoke, &["a", "b"]).unwrap_err();
        says(&e, "an invoke of b not written");
    }
}
