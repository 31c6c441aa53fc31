//! Rounds from a call log: overlap, sequence, the fallback for what the
//! code does not place, the note when it disagrees, and bad lines.

use super::*;
use crate::graph::{Edge, Function};

fn shape(rounds: &[Round]) -> Vec<Vec<&str>> {
    rounds
        .iter()
        .map(|r| r.calls.iter().map(String::as_str).collect())
        .collect()
}

/// `a` calls each of `callees` at one site; its code's rounds are `code`.
fn graph(callees: &[&str], code: &[&[&str]]) -> Graph {
    let function = |name: &str| Function {
        name: name.to_string(),
        ..Function::default()
    };
    let mut g = Graph {
        functions: std::iter::once("a")
            .chain(callees.iter().copied())
            .map(function)
            .collect(),
        edges: callees
            .iter()
            .map(|c| Edge {
                from: "a".into(),
                to: Some(c.to_string()),
                sites: 1,
                ..Edge::default()
            })
            .collect(),
        ..Graph::default()
    };
    g.functions[0].rounds = code
        .iter()
        .map(|r| Round {
            calls: r.iter().map(|c| c.to_string()).collect(),
            looped: Vec::new(),
        })
        .collect();
    g
}

/// Two requests of `a`: b and c at once, then d (in the second, c.ns is
/// the namespaced name of c, and the lines come out of order).
const LOG: &str = "\
# fmerge calls: request caller callee start_us end_us
p1.1 a b 100 250
p1.1 a c 110 200
p1.1 a d 250 300
p1.2 a d 900 950
p1.2 a c.openfaas-fn 500 700
p1.2 a b 520 600
";

#[test]
fn overlapping_calls_share_a_round_and_a_later_one_starts_the_next() {
    let log = parse(LOG, "calls.txt").unwrap();
    let requests = &log.requests["a"];
    assert_eq!(requests.len(), 2);
    for r in requests {
        assert_eq!(shape(r), [vec!["b", "c"], vec!["d"]]);
    }
}

#[test]
fn calls_one_after_another_are_rounds_of_their_own() {
    let spans = spans(&[(0, 10, "b"), (10, 20, "b"), (30, 40, "c")]);
    assert_eq!(shape(&rounds(spans)), [["b"], ["b"], ["c"]]);
}

#[test]
fn the_bound_over_requests_keeps_the_most_calls_of_each_round() {
    let one = |r: &[&[&str]]| -> Vec<Round> {
        r.iter()
            .map(|c| Round {
                calls: c.iter().map(|s| s.to_string()).collect(),
                looped: Vec::new(),
            })
            .collect()
    };
    let bound = bound(&[one(&[&["b", "b"], &["d"]]), one(&[&["b", "c"]])]);
    assert_eq!(shape(&bound), [vec!["b", "b", "c"], vec!["d"]]);
}

#[test]
fn a_callee_the_code_does_not_place_takes_its_rounds_from_the_log() {
    // The code places b and c at once, not d (a name in a variable, say).
    let mut g = graph(&["b", "c", "d"], &[&["b", "c"]]);
    assert_eq!(g.unplaced("a"), ["d"]);
    let notes = g.order_from(&parse(LOG, "calls.txt").unwrap());
    assert!(g.unplaced("a").is_empty());
    assert_eq!(shape(&g.functions[0].rounds), [vec!["b", "c"], vec!["d"]]);
    assert_eq!(g.functions[0].traced, Some(2));
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].starts_with("a: its code does not show when it calls d"));
    // The planner reads them: `plan`'s tests (rounds.rs).
}

#[test]
fn a_log_that_disagrees_with_the_code_is_noted_and_the_code_stays() {
    // The code says b, c and d at once; the log has d after them.
    let mut g = graph(&["b", "c", "d"], &[&["b", "c", "d"]]);
    let notes = g.order_from(&parse(LOG, "calls.txt").unwrap());
    assert_eq!(shape(&g.functions[0].rounds), [["b", "c", "d"]]);
    assert_eq!(g.functions[0].traced, None);
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].starts_with("a: 2 of its 2 requests in calls.txt do not fit the rounds its code shows ([b, c, d]), e.g. [b, c] then [d]"),
        "{}",
        notes[0]
    );
    // A code's order the log fits (one branch of two run) is not noted.
    let mut g = graph(&["b", "c", "d", "e"], &[&["b", "c", "e"], &["d"]]);
    assert!(g.order_from(&parse(LOG, "calls.txt").unwrap()).is_empty());
}

#[test]
fn a_looped_site_takes_a_round_per_iteration() {
    let code = [Round {
        calls: Vec::new(),
        looped: vec!["b".into()],
    }];
    let traced = rounds(spans(&[(0, 5, "b"), (6, 9, "b")]));
    assert!(fits(&traced, &code));
    assert!(!fits(&rounds(spans(&[(0, 5, "c")])), &code));
}

/// Calls `(start, end, callee)`.
fn spans(calls: &[(u64, u64, &str)]) -> Vec<Span> {
    calls
        .iter()
        .map(|&(start, end, callee)| Span {
            start,
            end,
            callee: callee.to_string(),
        })
        .collect()
}

#[test]
fn a_malformed_line_is_an_error_naming_it_and_the_fix() {
    for bad in [
        "p1.1 a b 100\n",
        "p1.1 a b 100 ninety\n",
        "p1.1 a b 300 200\n",
        "p1.1 a b -1 200\n",
    ] {
        let text = format!("# header\n{bad}");
        let e = parse(&text, "calls.txt").unwrap_err().to_string();
        assert!(e.starts_with("calls.txt:2: not a call record: "), "{e}");
        assert!(
            e.contains("<request> <caller> <callee> <start µs> <end µs>"),
            "{e}"
        );
        assert!(e.contains("\nfix: correct or delete the line"), "{e}");
    }
}

#[test]
fn records_that_name_their_parent_give_rates_per_call_path() {
    // s called twice by A (no calls of t) and twice by B (one each), the
    // sixth column naming the request that called it; a five-column log
    // names none.
    let log = parse(
        "a1 A s 0 1 -\n\
         a2 A s 2 3 -\n\
         b1 B s 4 9 -\n\
         s1 s t 5 6 b1\n\
         b2 B s 10 19 -\n\
         s2 s t 11 12 b2\n",
        "calls.txt",
    )
    .unwrap();
    let rate = |via: &str| {
        let r = paths::rates(&log);
        r.iter()
            .find(|r| r.via == via && r.from == "s" && r.to == "t")
            .map(|r| r.calls)
    };
    assert_eq!((rate("A"), rate("B")), (Some(0.0), Some(1.0)));
    let old = parse("a1 A s 0 1\nb1 B s 4 9\ns1 s t 5 6\n", "calls.txt").unwrap();
    assert!(paths::rates(&old).is_empty());
    // A seventh column is no record.
    let e = parse("a1 A s 0 1 - x\n", "calls.txt")
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("calls.txt:1: not a call record: "), "{e}");
}
