//! Tests of `emit`: the LTO the caller's release profile asks for.

use super::Release;

fn read(profile: &str) -> Release {
    let dir = std::env::temp_dir().join(format!(
        "fmerge-release-{}-{}",
        std::process::id(),
        profile.len()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let manifest = dir.join("Cargo.toml");
    std::fs::write(
        &manifest,
        format!("[workspace]\n\n[profile.release]\n{profile}\n"),
    )
    .unwrap();
    let release = Release::read(&manifest);
    std::fs::remove_dir_all(&dir).unwrap();
    release
}

#[test]
fn lto_is_what_the_profile_asks_for_and_the_note_says_what_the_merge_does() {
    for (profile, lto) in [
        ("lto = true", true),
        ("lto = \"fat\"", true),
        ("lto = \"thin\"", true),
        ("lto = false", false),
        ("lto = \"off\"", false),
        ("", false),
    ] {
        assert_eq!(read(profile).lto, lto, "{profile}");
    }
    let release = read("lto = true\npanic = \"abort\"");
    assert!(release.panic_abort);
    let fat = release.notes(true).join("\n");
    assert!(
        fat.contains("panic = \"unwind\"")
            && fat.contains("runs LTO over the whole merged program"),
        "{fat}"
    );
    let off = release.notes(false).join("\n");
    assert!(
        off.contains("--lto off leaves it out") && !off.contains("runs LTO"),
        "{off}"
    );
    assert!(read("").notes(false).is_empty());
    assert!(!Release::read(std::path::Path::new("/nonexistent/Cargo.toml")).lto);
}
