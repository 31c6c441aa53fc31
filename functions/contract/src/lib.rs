//! The merge contract: what `fmerge-runtime` writes into every function's IR
//! and what the merger looks for there. Both sides, the tests and the bench
//! (through fmerge's output) take these names from here, never a copy.
//!
//! - Each function exports its handler as [`entry_symbol`]`(name)`.
//! - The runtime's `invoke` consults the table [`ROUTES`], a [`Routes`] that
//!   is empty in every unmerged binary; the merger fills it.
//! - `config!` calls [`CONFIG`]`(function, key, default)`, and a merged
//!   callee reads [`namespaced`]`(function, key)`.

/// The symbol names as literals, for attributes (`export_name = …`), which
/// cannot name a `const`.
#[macro_export]
macro_rules! entry_prefix {
    () => {
        "fmerge.entry."
    };
}
#[macro_export]
macro_rules! routes_symbol {
    () => {
        "fmerge.routes"
    };
}
#[macro_export]
macro_rules! config_symbol {
    () => {
        "fmerge.config"
    };
}

/// Prefix of each function's exported entry: `fmerge.entry.<package name>`.
pub const ENTRY_PREFIX: &str = entry_prefix!();
/// The dispatch table.
pub const ROUTES: &str = routes_symbol!();
/// The runtime's settings reader, called with three `&str`: function, key, default.
pub const CONFIG: &str = config_symbol!();

/// `fmerge.entry.<function>`.
pub fn entry_symbol(function: &str) -> String {
    [ENTRY_PREFIX, function].concat()
}

/// Prefix of a callee's C `main` once the merger renamed it:
/// `fmerge.main.<package>`. For a function in the watchdog-process form the
/// merged binary starts a callee by calling it (see `fmerge-shim`).
pub const MAIN_PREFIX: &str = "fmerge.main.";

/// `fmerge.main.<package>`.
pub fn main_symbol(package: &str) -> String {
    [MAIN_PREFIX, package].concat()
}

/// The prefix of the symbol fmerge gives a watchdog-process callee's Rust
/// `main` run through std's `lang_start` closure (no runtime start, no
/// exit): the merged binary's shim calls it to run that callee in the
/// caller's process, where fmerge found nothing that needs a process.
pub const RUN_PREFIX: &str = "fmerge.run.";

/// `fmerge.run.<package>`.
pub fn run_symbol(package: &str) -> String {
    [RUN_PREFIX, package].concat()
}

/// The prefix of the symbol of the entry fmerge generates for a function
/// in a handler-library template (its library's `handle`, served by the
/// template's `main`): the merged binary's shim calls it to answer a call
/// to that function without its server ([`handle_symbol`]).
pub const HANDLE_PREFIX: &str = "fmerge.handle.";

/// `fmerge.handle.<package>`.
pub fn handle_symbol(package: &str) -> String {
    [HANDLE_PREFIX, package].concat()
}

/// The OpenFaaS name of a function whose cargo package is `package`: the
/// package name itself when it is already a DNS label (`write-home-timeline`),
/// else its words in kebab case (`WriteHomeTimeline`, `write_home_timeline`
/// → `write-home-timeline`), as teams name a CamelCase package's deployment.
pub fn function_name(package: &str) -> String {
    let mut name = String::with_capacity(package.len() + 4);
    let mut previous: Option<char> = None;
    for c in package.chars() {
        if c == '_' || c == '-' {
            name.push('-');
        } else if c.is_ascii_uppercase() {
            let boundary = previous.is_some_and(|p| p.is_ascii_lowercase() || p.is_ascii_digit());
            if boundary {
                name.push('-');
            }
            name.push(c.to_ascii_lowercase());
        } else {
            name.push(c);
        }
        previous = Some(c);
    }
    name
}

/// One merged callee: its name as UTF-8 bytes (not NUL-terminated), its
/// entry, and whether it runs on threads of its own by default (1: fmerge
/// found it calls functions that block their thread; 0: not).
/// `E` is the runtime's entry function pointer type.
#[repr(C)]
pub struct Route<E> {
    pub name: *const u8,
    pub len: usize,
    pub entry: E,
    pub isolate: usize,
}

/// The table: a pointer to `len` routes.
#[repr(C)]
pub struct Routes<E> {
    pub routes: *const Route<E>,
    pub len: usize,
}

/// A field of the table's C layout, for the merger to build the same types
/// in LLVM IR.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    Ptr,
    Usize,
}

/// [`Route`]'s fields in order: `{ ptr, i64, ptr, i64 }` on 64-bit targets.
pub const ROUTE_LAYOUT: [Field; 4] = [Field::Ptr, Field::Usize, Field::Ptr, Field::Usize];
/// [`Routes`]'s fields in order: `{ ptr, i64 }`.
pub const ROUTES_LAYOUT: [Field; 2] = [Field::Ptr, Field::Usize];

/// The environment variable holding the application's caller key, with
/// which `invoke` proves `X-Fmerge-Caller` over HTTP (the runtime's
/// `caller` metric label; see docs/operating.md). Every function of one
/// application, and the tests' processes, set the same.
pub const CALLER_KEY_VAR: &str = "FMERGE_CALLER_KEY";

/// The environment variable a merged callee reads for `key`:
/// `social-graph-get-followers`, `REDIS_URL` → `SOCIAL_GRAPH_GET_FOLLOWERS__REDIS_URL`.
/// ASCII letters and digits are upper-cased, everything else becomes `_`.
pub fn namespaced(function: &str, key: &str) -> String {
    let mut name: String = function
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    name.push_str("__");
    name.push_str(key);
    name
}

/// Nanoseconds in one `unit` of a duration setting, as Go's
/// `time.ParseDuration` reads it (of-watchdog's `exec_timeout`, `2m30s`):
/// the runtime and the shim read the same settings.
pub fn duration_unit_nanos(unit: &str) -> Option<f64> {
    Some(match unit {
        "ns" => 1.0,
        "us" | "µs" | "μs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "m" => 60e9,
        "h" => 3600e9,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{align_of, size_of};

    #[test]
    fn the_table_layout_is_what_the_merger_writes() {
        type Entry = fn();
        assert_eq!(
            size_of::<Route<Entry>>(),
            ROUTE_LAYOUT.len() * size_of::<usize>()
        );
        assert_eq!(
            size_of::<Routes<Entry>>(),
            ROUTES_LAYOUT.len() * size_of::<usize>()
        );
        assert_eq!(align_of::<Routes<Entry>>(), size_of::<usize>());
    }

    #[test]
    fn names() {
        assert_eq!(entry_symbol("unique-id"), "fmerge.entry.unique-id");
        assert_eq!(
            namespaced("social-graph-get-followers", "REDIS_URL"),
            "SOCIAL_GRAPH_GET_FOLLOWERS__REDIS_URL"
        );
        assert_eq!(namespaced("a.b_c", "K"), "A_B_C__K");
        assert_eq!(main_symbol("UserFilter"), "fmerge.main.UserFilter");
        assert_eq!(run_symbol("UserFilter"), "fmerge.run.UserFilter");
    }

    #[test]
    fn openfaas_names_of_packages() {
        assert_eq!(function_name("write-home-timeline"), "write-home-timeline");
        assert_eq!(function_name("WriteHomeTimeline"), "write-home-timeline");
        assert_eq!(function_name("write_home_timeline"), "write-home-timeline");
        assert_eq!(function_name("Oauth2Login"), "oauth2-login");
        assert_eq!(function_name("URLShorten"), "urlshorten");
    }
}
