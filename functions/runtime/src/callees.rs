//! The merged callees, as the dispatch table the merger writes into the IR
//! describes them.
//!
//! The table is a mutable global so that the optimizer of the runtime crate
//! cannot fold its emptiness into `invoke`; the merger replaces it with a
//! constant, after which the optimizer may fold lookups by constant name.

use crate::Entry;
use crate::hooks::{Route, Routes};
use std::sync::OnceLock;

#[unsafe(export_name = fmerge_contract::routes_symbol!())]
#[used]
static mut ROUTES: Routes = Routes {
    routes: std::ptr::null(),
    len: 0,
};

/// The merged callees: empty in an unmerged binary.
fn routes() -> &'static [Route] {
    // SAFETY: nothing in Rust writes the table; the merger sets it at build
    // time to `len` valid routes (reading through the raw pointer makes no
    // reference to the `static mut`).
    unsafe {
        let table = &raw const ROUTES;
        if (*table).len == 0 {
            return &[];
        }
        std::slice::from_raw_parts((*table).routes, (*table).len)
    }
}

/// A merged callee as the table describes it, its name read once as text
/// (`?` if it were not UTF-8).
pub(crate) struct Merged {
    /// Its place in [`callees`], and so in the guards' table
    /// ([`GROUP_CALLER_INDEX`]: the group's caller, the function this binary
    /// serves).
    pub(crate) index: usize,
    pub(crate) name: &'static str,
    pub(crate) entry: Entry,
    /// `fmerge build` found it blocks its thread (see `isolation`).
    pub(crate) isolate: bool,
}

/// [`Merged::index`] of the group's caller, the function this binary serves.
pub(crate) const GROUP_CALLER_INDEX: usize = usize::MAX;

/// The merged callees, read once: a lookup per call compares names and
/// nothing else.
pub(crate) fn callees() -> &'static [Merged] {
    static CALLEES: OnceLock<Vec<Merged>> = OnceLock::new();
    CALLEES.get_or_init(|| {
        routes()
            .iter()
            .enumerate()
            .map(|(index, route)| {
                // SAFETY: the merger writes each name as `len` bytes of
                // UTF-8 in a constant.
                let name = unsafe { std::slice::from_raw_parts(route.name, route.len) };
                Merged {
                    index,
                    name: std::str::from_utf8(name).unwrap_or("?"),
                    entry: route.entry,
                    isolate: route.isolate != 0,
                }
            })
            .collect()
    })
}

/// The names of the functions merged into this binary.
pub(crate) fn merged() -> Vec<&'static str> {
    callees().iter().map(|c| c.name).collect()
}
