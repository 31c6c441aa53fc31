//! testkit builds the unmerged functions into the target dir the merge builds
//! in; with other flags each build would invalidate the other's units.

#[test]
fn testkit_builds_the_functions_with_the_merge_flags() {
    assert_eq!(
        fmerge_testkit::FUNCTION_RUSTFLAGS,
        fmerge_cargo::emit::RUSTFLAGS
    );
}
