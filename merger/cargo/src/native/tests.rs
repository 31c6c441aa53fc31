//! Tests of `native`: the link flags of each native library, and a binary's own shared libraries.

use super::*;

#[test]
fn link_flags_keep_the_kind_modifiers_and_order_of_each_library() {
    let native = NativeLibs {
        libs: vec![
            "static=nc".into(),
            "static:+whole-archive=w".into(),
            "ssl".into(),
            "dylib:+verbatim=libz.so.1".into(),
        ],
        search: vec!["native=/out".into(), "dependency=/deps".into()],
    };
    assert_eq!(
        native_args(&native),
        [
            "-L/out",
            "-Wl,-Bstatic",
            "-lnc",
            "-Wl,-Bdynamic",
            "-Wl,-Bstatic",
            "-Wl,--whole-archive",
            "-lw",
            "-Wl,--no-whole-archive",
            "-Wl,-Bdynamic",
            "-lssl",
            "-l:libz.so.1",
        ]
    );
}

#[test]
fn a_binary_s_own_libraries_are_those_beyond_the_standard_library() {
    let toolchain = Toolchain::detect().unwrap();
    let dir = tempfile::tempdir().unwrap();
    // The empty program loads only what the standard library links.
    let (names, sonames) = std_libs(dir.path(), &toolchain).unwrap();
    assert!(names.iter().any(|n| n == "c"), "{names:?}");
    let empty = dir.path().join("fmerge_empty");
    assert_eq!(needed(&empty).unwrap(), sonames);
    assert!(
        loaded_libs(&[empty], &[], dir.path(), &toolchain)
            .unwrap()
            .is_empty()
    );
}
