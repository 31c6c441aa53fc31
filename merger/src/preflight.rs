//! Everything about a build that can be checked before cargo starts, checked
//! there, so that a mistake costs seconds instead of a build: the rewrites'
//! callees, the members' names and whether they call each other (read from
//! their source with `cargo metadata`, no build), and for an image the
//! Docker Engine and the push credentials. Option values and group files are
//! checked where they are read ([`Options::check`], `Group::load`);
//! this is the one call a build makes after them.

mod calls;

use crate::options::Options;
use anyhow::{Result, bail};
use fmerge_cargo::resolve::{self, Code};
use fmerge_cargo::suggest;
use fmerge_ship::push::Auth;

/// What the image needs, when one is built.
pub struct Image<'a> {
    pub tag: Option<&'a str>,
    pub registry: Option<&'a str>,
    /// With a push: where its credentials come from.
    pub push: Option<&'a Auth>,
}

/// Checks `opts` (already through [`Options::check`]) and the image
/// before anything is built.
pub fn check(opts: &Options, image: Option<Image>) -> Result<()> {
    let members: Vec<String> = opts.members().map(String::from).collect();
    for rewrite in &opts.rewrite {
        rewrite_callee(rewrite, &opts.caller, &opts.callees)?;
    }
    // Allowed, the callees need not be called: nothing to read (the names
    // are checked by the build's own resolve, before cargo builds).
    if !opts.callees.is_empty()
        && !opts.allow_uncalled
        && let Some(code) = code_of(opts, &members)?
    {
        let calls = code.iter().map(calls::read).collect::<Result<Vec<_>>>()?;
        calls::check(&opts.caller, &opts.callees, &calls, opts.allow_uncalled)?;
    }
    if let Some(image) = image {
        fmerge_ship::ready::check(&opts.label(), image.tag, image.registry, image.push)?;
    }
    Ok(())
}

/// Where each member's code is: from the workspace, or from each separate
/// project (a stack's handlers, several `--manifest-path`s). Of a separate
/// project that is not a function's, `None`: the workspace fmerge generates
/// for them refuses it, naming its handler, before cargo builds.
fn code_of(opts: &Options, members: &[String]) -> Result<Option<Vec<Code>>> {
    if opts.sources.is_empty() {
        return resolve::code(opts.manifest_path.as_deref(), members).map(Some);
    }
    let mut code = Vec::new();
    for name in members {
        let Some(source) = opts.sources.iter().find(|s| &s.function == name) else {
            return Ok(None);
        };
        let one = match resolve::code(Some(&source.manifest), std::slice::from_ref(name)) {
            Ok(mut one) => one.remove(0),
            // A stack key that is not its package's name (`write-home-timeline`
            // for `WriteHomeTimeline`): the package at the handler is the function.
            Err(_) => match resolve::code_of_package(&source.manifest, name) {
                Ok(one) => one,
                Err(_) => return Ok(None),
            },
        };
        code.push(match &source.handler_library {
            Some(library) => resolve::with_handler_library(one, library)?,
            None => one,
        });
    }
    Ok(Some(code))
}

/// `--rewrite CALLEE:FROM=TO` names a callee of the group. A FROM may hold
/// a `:` itself (`host:port`), so a prefix is taken as a callee when it
/// names one; a prefix near a member's name but not one is a misspelled
/// callee, and so is a prefix shaped like a function name before another
/// `host:port`.
fn rewrite_callee(rewrite: &str, caller: &str, callees: &[String]) -> Result<()> {
    let from = rewrite.split_once('=').map_or(rewrite, |(from, _)| from);
    let Some((prefix, rest)) = from.split_once(':') else {
        return Ok(());
    };
    if prefix == caller || callees.iter().any(|c| c == prefix) {
        return Ok(());
    }
    if let Some(meant) = suggest::closest(prefix, callees.iter().map(String::as_str)) {
        let to = rewrite.split_once('=').map_or("TO", |(_, to)| to);
        bail!(
            "--rewrite {rewrite}: {prefix} is not a member of the group; did you mean `{meant}`?\n\
             fix: write --rewrite {meant}:{rest}={to}"
        );
    }
    let named = !prefix.is_empty()
        && prefix
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if named && rest.contains(':') && !rest.starts_with("//") {
        bail!(
            "--rewrite {rewrite}: {prefix} is not a callee of the group, whose callees are {}\n\
             fix: scope the rewrite to one of them (CALLEE:FROM=TO), or drop `{prefix}:` to rewrite FROM in every callee",
            callees.join(", ")
        );
    }
    Ok(())
}

/// One `--keep-apart` set of `fmerge plan`: functions (`names`) of the
/// application at `place` (its stack or graph file). That it names two or
/// more is the flag's own check (`options::plan`).
pub fn keep_apart(set: &[String], names: &[String], place: &str) -> Result<()> {
    for name in set {
        if !names.contains(name) {
            bail!("{}", resolve::unknown_function(name, names, place, ""));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::rewrite_callee;

    #[test]
    fn a_rewrite_names_a_callee_of_the_group() {
        let callees = ["social-graph-get-followers".to_string()];
        let ok = |r: &str| rewrite_callee(r, "write-home-timeline", &callees).unwrap();
        ok("sn-redis-master:6379=127.0.0.1:6379");
        ok("social-graph-get-followers:sn-redis-master:6379=127.0.0.1:6379");
        ok("redis://sn-redis-master:6379=redis://127.0.0.1:6379");
        ok("plain=other");
        let e = rewrite_callee(
            "social-graph-get-folowers:host:6379=127.0.0.1:6379",
            "write-home-timeline",
            &callees,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("did you mean `social-graph-get-followers`?")
                && e.contains(
                    "\nfix: write --rewrite social-graph-get-followers:host:6379=127.0.0.1:6379"
                ),
            "{e}"
        );
        let e = rewrite_callee("unique-id:host:6379=h:1", "write-home-timeline", &callees)
            .unwrap_err()
            .to_string();
        assert!(e.contains("unique-id is not a callee of the group"), "{e}");
    }
}
