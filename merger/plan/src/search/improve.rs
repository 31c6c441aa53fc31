//! Local search over whole plans: from a plan that meets the caps and
//! minimums, the best single change that scores better ([`score`]), until
//! none does or the deadline passes. Changes: a member added to a group
//! (a callee of one of its members), a member dropped (the group still
//! connected from its caller), and, when neither helps, one moved: dropped
//! from a group and another added to any group (under a total cap, the
//! room a member takes is what another needs).

use super::score::{extra, score};
use super::{EPS, Limits};
use crate::model::{Model, Set, bit, members};

/// A plan's score and merged members: more score, then fewer members.
#[derive(Clone, Copy)]
struct Worth {
    score: f64,
    extra: usize,
}

impl Worth {
    fn of(model: &Model, groups: &[Set]) -> Option<Worth> {
        score(model, groups).map(|score| Worth {
            score,
            extra: extra(groups),
        })
    }

    fn beats(self, other: Worth) -> bool {
        self.score > other.score + EPS
            || (self.score > other.score - EPS && self.extra < other.extra)
    }
}

/// `groups` improved; as given when they break a cap or miss a minimum.
pub fn improve(model: &Model, mut groups: Vec<Set>, limits: &Limits) -> Vec<Set> {
    let Some(mut now) = Worth::of(model, &groups) else {
        return groups;
    };
    while !limits.late() {
        let mut best: Option<(Worth, usize, Set)> = None;
        for (r, set) in adds(model, &groups)
            .into_iter()
            .chain(drops(model, &groups))
        {
            let old = std::mem::replace(&mut groups[r], set);
            let worth = Worth::of(model, &groups);
            groups[r] = old;
            if let Some(w) = worth
                && w.beats(now)
                && best.is_none_or(|(b, _, _)| w.beats(b))
            {
                best = Some((w, r, set));
            }
        }
        if let Some((w, r, set)) = best {
            groups[r] = set;
            now = w;
            continue;
        }
        match moved(model, &mut groups, now, limits) {
            Some(w) => now = w,
            None => break,
        }
    }
    groups
}

/// A member dropped and another added, the first that scores better:
/// applied to `groups`, with its worth.
fn moved(model: &Model, groups: &mut [Set], now: Worth, limits: &Limits) -> Option<Worth> {
    for (r, dropped) in drops(model, groups) {
        let old = std::mem::replace(&mut groups[r], dropped);
        for (s, added) in adds(model, groups) {
            if limits.late() {
                groups[r] = old;
                return None;
            }
            let before = std::mem::replace(&mut groups[s], added);
            if let Some(w) = Worth::of(model, groups)
                && w.beats(now)
            {
                return Some(w);
            }
            groups[s] = before;
        }
        groups[r] = old;
    }
    None
}

/// Each group with one more member, a callee of one of its members, that
/// the model's rules allow (caps and minimums are the score's).
pub(super) fn adds(model: &Model, groups: &[Set]) -> Vec<(usize, Set)> {
    let arrivals = model.value(groups).arrivals;
    let mut out = Vec::new();
    for r in 0..groups.len() {
        if arrivals[r] <= 0.0 || model.left_out[r].is_some() {
            continue;
        }
        for u in members(groups[r]) {
            for v in model.callees(u) {
                let next = groups[r] | bit(v);
                if v != r && next != groups[r] && !out.contains(&(r, next)) && model.admits(r, next)
                {
                    out.push((r, next));
                }
            }
        }
    }
    out
}

/// Each group with one member fewer, still connected from its caller.
fn drops(model: &Model, groups: &[Set]) -> Vec<(usize, Set)> {
    let mut out = Vec::new();
    for (r, &group) in groups.iter().enumerate() {
        for v in members(group).filter(|&v| v != r) {
            let set = group & !bit(v);
            if model.reach_within(r, set) == set {
                out.push((r, set));
            }
        }
    }
    out
}
