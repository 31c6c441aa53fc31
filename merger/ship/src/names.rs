//! Names OpenFaaS and Kubernetes accept, shared by the image and stack.yml.

use anyhow::{Result, bail};

/// An OpenFaaS function name: a DNS label (RFC 1123) of at most 63 characters.
pub fn validate_function_name(name: &str) -> Result<()> {
    let why = if name.is_empty() {
        Some("it is empty".to_owned())
    } else if name.len() > 63 {
        Some(format!("it has {} characters, more than 63", name.len()))
    } else if !name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    {
        Some("it has characters other than a-z, 0-9 and `-`".to_owned())
    } else if name.starts_with('-') || name.ends_with('-') {
        Some("it starts or ends with `-`".to_owned())
    } else {
        None
    };
    if let Some(why) = why {
        bail!(
            "function name {name:?} is not a DNS label ({why}); OpenFaaS and Kubernetes name services after functions\n\
fix: use at most 63 lowercase letters, digits and `-`, starting and ending with a letter or digit, e.g. {:?}",
            suggest(name)
        );
    }
    Ok(())
}

fn suggest(name: &str) -> String {
    let s: String = name
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let s = s.trim_matches('-');
    let s = if s.len() > 63 {
        s[..63].trim_end_matches('-')
    } else {
        s
    };
    if s.is_empty() {
        "my-function".to_owned()
    } else {
        s.to_owned()
    }
}
