//! `bench/groups.txt` against the copy Rust tests keep: the chain the
//! benchmark fuses and merges is testkit's compose-post tree.

use fmerge_fused::groups;

#[test]
fn the_chain_is_the_compose_post_tree_and_the_pair_part_of_it() {
    let groups = groups::parse(groups::TEXT).expect("bench/groups.txt parses");
    let names: Vec<&str> = groups.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(names, ["pair", "chain"]);
    let members = |i: usize| -> Vec<&str> { groups[i].1.iter().map(String::as_str).collect() };
    assert_eq!(members(1), fmerge_testkit::COMPOSE_POST_TREE);
    // The pair is a caller of the chain and the function it calls.
    assert!(members(0).iter().all(|f| members(1).contains(f)));
}

#[test]
fn a_malformed_groups_file_is_refused() {
    assert!(groups::parse("orphan\n[g]\na\nb\n").is_err());
    assert!(groups::parse("[g]\nalone\n").is_err());
    assert_eq!(
        groups::parse("# c\n\n[g]\na\nb\n"),
        Ok(vec![(
            "g".to_string(),
            vec!["a".to_string(), "b".to_string()]
        )])
    );
}
