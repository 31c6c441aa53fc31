//! Sets of functions, as bits in a few words: a group's members, the callers
//! still open in a search. `Copy` and as cheap as an integer, with the
//! operators the planner uses (`|`, `&`, `!`), so that a model holds up to
//! [`Set::CAPACITY`] functions.

use std::cmp::Ordering;
use std::ops::{BitAnd, BitAndAssign, BitOr, BitOrAssign, Not};

const WORDS: usize = 4;

/// A set of function indices below [`Set::CAPACITY`].
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Set([u64; WORDS]);

impl Set {
    /// The most functions a set (and so a model) holds.
    pub const CAPACITY: usize = 64 * WORDS;
    pub const EMPTY: Set = Set([0; WORDS]);
    /// Every function (every index below the capacity).
    pub const ALL: Set = Set([u64::MAX; WORDS]);

    /// The set of `i` alone.
    pub fn of(i: usize) -> Set {
        let mut s = Set::EMPTY;
        s.0[i / 64] = 1 << (i % 64);
        s
    }

    pub fn contains(self, i: usize) -> bool {
        self.0[i / 64] >> (i % 64) & 1 != 0
    }

    pub fn is_empty(self) -> bool {
        self == Set::EMPTY
    }

    pub fn count_ones(self) -> u32 {
        self.0.iter().map(|w| w.count_ones()).sum()
    }

    /// The members, lowest first.
    pub fn iter(self) -> impl Iterator<Item = usize> {
        (0..WORDS).flat_map(move |k| {
            let mut w = self.0[k];
            std::iter::from_fn(move || {
                (w != 0).then(|| {
                    let i = w.trailing_zeros() as usize;
                    w &= w - 1;
                    64 * k + i
                })
            })
        })
    }
}

/// As the integer its bits would make: the highest member decides.
impl Ord for Set {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.iter().rev().cmp(other.0.iter().rev())
    }
}

impl PartialOrd for Set {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl std::fmt::Debug for Set {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

/// `Set $op Set` and `Set $op= Set`, word by word: union and intersection
/// are the same code but for the operator.
macro_rules! word_by_word {
    ($Op:ident::$op:ident, $OpAssign:ident::$op_assign:ident, $assign:tt) => {
        impl $Op for Set {
            type Output = Set;
            fn $op(mut self, other: Set) -> Set {
                self.$op_assign(other);
                self
            }
        }

        impl $OpAssign for Set {
            fn $op_assign(&mut self, other: Set) {
                for (a, b) in self.0.iter_mut().zip(other.0) {
                    *a $assign b;
                }
            }
        }
    };
}

word_by_word!(BitOr::bitor, BitOrAssign::bitor_assign, |=);
word_by_word!(BitAnd::bitand, BitAndAssign::bitand_assign, &=);

impl Not for Set {
    type Output = Set;
    fn not(self) -> Set {
        Set(self.0.map(|w| !w))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_holds_functions_past_128() {
        let s = Set::of(3) | Set::of(130) | Set::of(255);
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![3, 130, 255]);
        assert_eq!(s.count_ones(), 3);
        assert!(s.contains(130) && !s.contains(129));
        assert_eq!((s & !Set::of(130)).iter().collect::<Vec<_>>(), vec![3, 255]);
        assert!(Set::of(200) > Set::of(3) | Set::of(100));
        assert!((Set::EMPTY & s).is_empty());
    }
}
