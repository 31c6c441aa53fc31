//! The options that take one of a few named values, each an enum deriving
//! clap's `ValueEnum`: clap lists the values in `--help`, refuses any other
//! as a usage error (exit 2) naming the valid ones, a group file takes
//! the same spellings (clap reads it too, see [`super::layer`]), and the
//! merge cache's key writes them (`Serialize` goes through `ValueEnum`, see
//! `value_enum!`). Each maps onto the library's own type by an
//! exhaustive `match`, so a new library value cannot be forgotten here.
//! The planner's enums (`--objective`, `--search`) derive `ValueEnum` in
//! `fmerge-plan` itself, and are used as they are.

use fmerge_ir as ir;
use fmerge_ship::push;

/// Defines a value enum once: the enum with clap's `ValueEnum`, `Serialize`
/// by the same names, and (with `=> Type`) its mapping onto the library's type.
macro_rules! value_enum {
    ($(#[$m:meta])* $name:ident => $target:ty {
        $($(#[$vm:meta])* $variant:ident => $to:expr),+ $(,)?
    }) => {
        value_enum! { $(#[$m])* $name { $($(#[$vm])* $variant),+ } }

        impl From<$name> for $target {
            fn from(value: $name) -> $target {
                match value {
                    $($name::$variant => $to),+
                }
            }
        }
    };
    ($(#[$m:meta])* $name:ident {
        $($(#[$vm:meta])* $variant:ident),+ $(,)?
    }) => {
        $(#[$m])*
        #[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
        pub enum $name {
            $($(#[$vm])* $variant),+
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let value = clap::ValueEnum::to_possible_value(self).expect("no value is skipped");
                s.serialize_str(value.get_name())
            }
        }

    };
}

value_enum! {
    /// `--lto`: whole-program LTO over the merged module (see [`ir::Lto`]).
    Lto => ir::Lto {
        /// LLVM's `lto<O3>` across all crates, on one thread.
        Fat => ir::Lto::Fat,
        /// The same across the group's own crates, the rest from cargo's objects.
        Own => ir::Lto::Own,
        /// Each crate as rustc optimized it.
        Off => ir::Lto::Off,
    }
}

value_enum! {
    /// `--progress`: how push progress is shown.
    Progress => push::Progress {
        /// Bars on a terminal, lines otherwise.
        Auto => push::Progress::Auto,
        /// Always bars.
        Bars => push::Progress::Bars,
        /// Always plain lines.
        Plain => push::Progress::Plain,
        /// Nothing but errors.
        Quiet => push::Progress::Quiet,
    }
}

value_enum! {
    /// `--registry-auth`: where push credentials come from.
    RegistryAuth => push::Auth {
        /// FMERGE_REGISTRY_USER/FMERGE_REGISTRY_PASSWORD, else ~/.docker/config.json, else none.
        Auto => push::Auth::Auto,
        /// Only FMERGE_REGISTRY_USER/FMERGE_REGISTRY_PASSWORD.
        Env => push::Auth::Env,
        /// Only docker's config (~/.docker/config.json or $DOCKER_CONFIG).
        #[value(alias = "docker-config")]
        Docker => push::Auth::DockerConfig,
        /// No credentials (a registry that allows anonymous pushes).
        #[value(alias = "anonymous")]
        None => push::Auth::Anonymous,
    }
}

value_enum! {
    /// `--message-format`: what stdout gets.
    MessageFormat {
        /// The paths written, one a line.
        Human,
        /// One JSON object a line (cargo's convention), the last `"reason": "finished"`.
        Json,
    }
}

value_enum! {
    /// `fmerge graph --picture`: the picture's format (drawn by Graphviz's `dot`).
    Picture {
        Svg,
        Png,
        None,
    }
}

impl Picture {
    /// The format's name for `dot -T` and the file's extension; `None`: no picture.
    pub fn format(self) -> Option<&'static str> {
        match self {
            Picture::Svg => Some("svg"),
            Picture::Png => Some("png"),
            Picture::None => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_key_writes_the_command_lines_spellings() {
        assert_eq!(
            serde_json::to_value(Lto::Own).unwrap(),
            serde_json::json!("own")
        );
    }
}
