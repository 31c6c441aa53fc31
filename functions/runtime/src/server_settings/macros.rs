//! The macro that turns the settings table (`table.rs`) into everything
//! that reads it: the types that hold the settings, their parsing in the
//! table's order, the list the start logs, and the rows of
//! `docs/operating.md`'s settings table. A setting is written once, there.

/// One row of `docs/operating.md`'s settings table: the variable, its
/// default, what it bounds and what a request gets past it (Markdown).
#[derive(Debug)]
pub struct Row {
    pub key: &'static str,
    pub default: &'static str,
    pub meaning: &'static str,
    pub past_it: &'static str,
}

/// Two sections: the server's settings, then the limits each call is held
/// to (in-process calls of a merged callee included, under its namespaced
/// keys). An entry is `field: Type { key, default, parse, doc_default,
/// meaning, past_it }` (`past_it` left out: the cell is empty), and a limit
/// adds `none`, its value when there is no limit. A `default` may name a
/// field above it; `meaning` is the field's doc and the row's text.
macro_rules! settings_table {
    (
        $(#[$server_doc:meta])*
        server $Server:ident {
            $(
                $field:ident: $ty:ty {
                    key: $key:literal,
                    default: $default:expr,
                    parse: $parse:expr,
                    doc_default: $doc_default:literal,
                    meaning: $meaning:literal,
                    $(past_it: $past_it:literal $(,)?)?
                }
            ),* $(,)?
        }
        $(#[$limits_doc:meta])*
        limits $Limits:ident {
            $(
                $lfield:ident: $lty:ty {
                    key: $lkey:literal,
                    default: $ldefault:expr,
                    none: $lnone:expr,
                    parse: $lparse:expr,
                    doc_default: $ldoc_default:literal,
                    meaning: $lmeaning:literal,
                    $(past_it: $lpast_it:literal $(,)?)?
                }
            ),* $(,)?
        }
    ) => {
        $(#[$server_doc])*
        #[derive(Debug, Clone, PartialEq)]
        pub struct $Server {
            $(
                #[doc = concat!("`", $key, "` (default ", $doc_default, "): ", $meaning)]
                pub $field: $ty,
            )*
            /// The limits each call is held to.
            pub limits: $Limits,
        }

        $(#[$limits_doc])*
        #[derive(Debug, Clone, Copy, PartialEq)]
        pub struct $Limits {
            $(
                #[doc = concat!("`", $lkey, "` (default ", $ldoc_default, "): ", $lmeaning)]
                pub $lfield: $lty,
            )*
        }

        impl $Limits {
            /// No limit at all: each limit's `none`.
            pub(crate) const NONE: $Limits = $Limits { $($lfield: $lnone,)* };
        }

        impl $Server {
            /// Each setting from `get` (key → value), in the table's order.
            pub(super) fn parse(get: &dyn Fn(&str) -> Option<String>) -> Result<$Server, String> {
                $(
                    let $field: $ty = parse::read(get, $key, $parse, || $default)?;
                )*
                $(
                    let $lfield: $lty = parse::read(get, $lkey, $lparse, || $ldefault)?;
                )*
                Ok($Server {
                    $($field,)*
                    limits: $Limits { $($lfield,)* },
                })
            }

            /// Every setting as `key=value`, in the table's order (the start log).
            pub fn listed(&self) -> String {
                [
                    $(format!("{}={:?}", $key, self.$field),)*
                    $(format!("{}={:?}", $lkey, self.limits.$lfield),)*
                ]
                .join(" ")
            }

            /// The rows of `docs/operating.md`'s settings table, in order.
            pub const ROWS: &[Row] = &[
                $(Row { key: $key, default: $doc_default, meaning: $meaning,
                    past_it: concat!($($past_it)?) },)*
                $(Row { key: $lkey, default: $ldoc_default, meaning: $lmeaning,
                    past_it: concat!($($lpast_it)?) },)*
            ];

            /// The keys of the limits, which a merged callee reads namespaced.
            pub const LIMIT_KEYS: &[&str] = &[$($lkey,)*];
        }
    };
}
