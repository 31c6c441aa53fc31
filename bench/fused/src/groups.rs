//! The benchmark's groups, as `bench/groups.txt` defines them for this
//! crate's build (the fused programs) and for `bench/fmbench` alike.

/// `bench/groups.txt`.
pub const TEXT: &str = include_str!("../../groups.txt");

/// Each group of `text` (`bench/groups.txt`'s format): its name, then its
/// members, the caller first.
pub fn parse(text: &str) -> Result<Vec<(String, Vec<String>)>, String> {
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            groups.push((name.to_string(), Vec::new()));
        } else if let Some((_, members)) = groups.last_mut() {
            members.push(line.to_string());
        } else {
            return Err(format!(
                "bench/groups.txt:{}: {line:?} before the first `[group]`",
                n + 1
            ));
        }
    }
    match groups.iter().find(|(_, members)| members.len() < 2) {
        Some((name, _)) => Err(format!(
            "bench/groups.txt: [{name}] needs a caller and at least one callee"
        )),
        None => Ok(groups),
    }
}
