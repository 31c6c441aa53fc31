//! The names that `fmerge` looks for in LLVM IR. They are the whole merge
//! contract between this crate and the merger; change them in both places.

/// Prefix of each function's exported entry: `fmerge.entry.<package name>`.
/// Its type is [`crate::Entry`].
pub const ENTRY_PREFIX: &str = "fmerge.entry.";

/// The dispatch table that [`crate::invoke`] consults before the network.
/// A [`Routes`] that is empty in every unmerged binary; the merger replaces
/// its initializer with the merged callees.
pub const ROUTES: &str = "fmerge.routes";

/// The runtime's config reader, called by the [`crate::config!`] macro with
/// three `&str` literals: function, key, default.
pub const CONFIG: &str = "fmerge.config";

/// One merged callee: its name as UTF-8 bytes, and its entry.
#[repr(C)]
pub struct Route {
    pub name: *const u8,
    pub len: usize,
    pub entry: crate::Entry,
}

/// The table: a pointer to `len` routes. `repr(C)` so that the merger can
/// write it as `{ ptr, i64 }`.
#[repr(C)]
pub struct Routes {
    pub routes: *const Route,
    pub len: usize,
}
