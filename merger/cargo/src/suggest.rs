//! "Did you mean": the names closest to a misspelled one, by edit distance,
//! for every refusal of an unknown name (a function, a `--rewrite` callee, a
//! stack entry, a `--keep-apart` member).

/// How far a name may be from the one given and still be offered: a third
/// of the given name's length, at least two edits.
fn near(given: &str) -> usize {
    (given.chars().count() / 3).max(2)
}

/// The known name closest to `given`, if it is near enough to be what was
/// meant (never `given` itself).
pub fn closest<'a>(given: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    known
        .into_iter()
        .filter(|k| *k != given)
        .map(|k| (strsim::levenshtein(given, k), k))
        .filter(|(d, _)| *d <= near(given))
        .min()
        .map(|(_, k)| k)
}

/// `; did you mean `NAME`?` for the closest of `known`, or nothing.
pub fn did_you_mean<'a>(given: &str, known: impl IntoIterator<Item = &'a str>) -> String {
    closest(given, known)
        .map(|k| format!("; did you mean `{k}`?"))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_near_name_is_offered_and_a_far_one_is_not() {
        let known = ["social-graph-get-followers", "social-graph-get-followees"];
        assert_eq!(
            closest("social-graph-get-folowers", known),
            Some("social-graph-get-followers")
        );
        assert_eq!(closest("compose-post", known), None);
        assert_eq!(
            closest("social-graph-get-followers", known[..1].iter().copied()),
            None
        );
        assert_eq!(
            did_you_mean("url-shortn", ["url-shorten"]),
            "; did you mean `url-shorten`?"
        );
    }
}
