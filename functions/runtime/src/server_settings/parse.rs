//! How a setting's text becomes its value: one parser per kind of value
//! (duration, number, address, flag), each failing with a message that
//! names the variable and says the fix, and the defaults read from the
//! machine (the memory limit).

use std::net::IpAddr;
use std::str::FromStr;
use std::time::Duration;

/// The value of `key`: parsed from the text `get` gives (a variable set
/// to blanks counts as unset), else `default`.
pub(crate) fn read<T>(
    get: &dyn Fn(&str) -> Option<String>,
    key: &str,
    parse: impl Fn(&str, &str) -> Result<T, String>,
    default: impl FnOnce() -> T,
) -> Result<T, String> {
    match get(key).filter(|v| !v.trim().is_empty()) {
        None => Ok(default()),
        Some(text) => parse(key, &text),
    }
}

/// A duration, as [`parse_duration`] reads it.
pub(crate) fn duration(key: &str, text: &str) -> Result<Duration, String> {
    parse_duration(text).map_err(|why| {
        format!(
            "{key}={text:?} is not a duration ({why})\nfix: write e.g. 10s, 500ms, 1m30s or a number of seconds"
        )
    })
}

/// A duration over zero (of-watchdog refuses a zero `write_timeout`).
pub(crate) fn positive_duration(key: &str, text: &str) -> Result<Duration, String> {
    let d = duration(key, text)?;
    if d.is_zero() {
        return Err(format!(
            "{key} must be over 0s (as of-watchdog requires)\nfix: set it to e.g. 30s, or unset it for the default"
        ));
    }
    Ok(d)
}

/// A number; `what` names what it counts ("a number of requests").
pub(crate) fn number<T: FromStr>(what: &'static str) -> impl Fn(&str, &str) -> Result<T, String> {
    move |key, text| {
        text.trim().parse().map_err(|_| {
            format!(
                "{key}={text:?} is not {what}\nfix: give {what}, or unset {key} for its default"
            )
        })
    }
}

/// A whole number of seconds.
pub(crate) fn whole_seconds(key: &str, text: &str) -> Result<Duration, String> {
    number("a whole number of seconds")(key, text).map(Duration::from_secs)
}

/// Any text (a URL, say).
pub(crate) fn text(_key: &str, text: &str) -> Result<String, String> {
    Ok(text.trim().to_string())
}

/// A value that must not be logged: the start log says only whether it
/// is set.
#[derive(Clone, PartialEq)]
pub struct Secret(pub Vec<u8>);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("(set)")
    }
}

/// A secret's text, as given.
pub(crate) fn secret(_key: &str, text: &str) -> Result<Option<Secret>, String> {
    Ok(Some(Secret(text.as_bytes().to_vec())))
}

/// Some text (a name, say), trimmed.
pub(crate) fn some_text(key: &str, text: &str) -> Result<Option<String>, String> {
    self::text(key, text).map(Some)
}

/// A comma-separated list of names, `none` for none.
pub(crate) fn names(_key: &str, text: &str) -> Result<Option<Vec<String>>, String> {
    Ok(Some(
        text.split(',')
            .map(str::trim)
            .filter(|n| !n.is_empty() && *n != "none")
            .map(str::to_string)
            .collect(),
    ))
}

/// A number of call log records, at most `max`.
pub(crate) fn records(max: usize) -> impl Fn(&str, &str) -> Result<usize, String> {
    move |key, text| {
        let n: usize = number("a number of records")(key, text)?;
        if n > max {
            return Err(format!(
                "{key}={n} keeps more than {max} records\nfix: set it at most that and read GET /calls more often"
            ));
        }
        Ok(n)
    }
}

/// A number over zero; `zero` says what 0 would do.
pub(crate) fn positive(
    what: &'static str,
    zero: &'static str,
) -> impl Fn(&str, &str) -> Result<usize, String> {
    move |key, text| {
        let n: usize = number(what)(key, text)?;
        if n == 0 {
            return Err(format!(
                "{key}=0 {zero}\nfix: leave it unset for the default"
            ));
        }
        Ok(n)
    }
}

/// An IP address to bind.
pub(crate) fn ip_address(key: &str, text: &str) -> Result<IpAddr, String> {
    text.trim().parse().map_err(|_| {
        format!("{key}={text:?} is not an IP address\nfix: write e.g. 0.0.0.0, 127.0.0.1 or ::")
    })
}

/// On or off: `1`/`true` or `0`/`false`.
pub(crate) fn flag(key: &str, text: &str) -> Result<bool, String> {
    match text.trim() {
        "0" | "false" => Ok(false),
        "1" | "true" => Ok(true),
        _ => Err(format!(
            "{key}={text:?} is not 1, true, 0 or false\nfix: set {key}=1 to turn it on, or unset it"
        )),
    }
}

/// The memory this process may use: its cgroup's limit (v2, then v1), else
/// the machine's.
pub(crate) fn memory_limit() -> Option<u64> {
    let read = |path: &str| std::fs::read_to_string(path).ok();
    let cgroup = read("/sys/fs/cgroup/memory.max")
        .or_else(|| read("/sys/fs/cgroup/memory/memory.limit_in_bytes"))
        .and_then(|v| v.trim().parse::<u64>().ok())
        // v1 says "no limit" with a number near 2^63.
        .filter(|&bytes| bytes < 1 << 60);
    cgroup.or_else(|| {
        let meminfo = read("/proc/meminfo")?;
        let kib = meminfo
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))?
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse::<u64>()
            .ok()?;
        Some(kib * 1024)
    })
}

/// A duration as of-watchdog reads it: a whole number of seconds (`30`), or
/// Go's `time.ParseDuration` syntax (`10s`, `500ms`, `1m30s`, `1.5h`; units
/// ns, us, µs, ms, s, m, h).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if let Ok(secs) = text.parse::<u64>() {
        return Ok(Duration::from_secs(secs));
    }
    let mut rest = text.strip_prefix('+').unwrap_or(text);
    if rest.starts_with('-') {
        return Err("negative".into());
    }
    if rest.is_empty() {
        return Err("empty".into());
    }
    let mut total = 0f64;
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or("a number without a unit")?;
        if number_len == 0 {
            return Err(format!("expected a number at {rest:?}"));
        }
        let number: f64 = rest[..number_len]
            .parse()
            .map_err(|_| format!("bad number {:?}", &rest[..number_len]))?;
        rest = &rest[number_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit = &rest[..unit_len];
        let nanos = fmerge_contract::duration_unit_nanos(unit)
            .ok_or_else(|| format!("unknown unit {unit:?}"))?;
        total += number * nanos;
        rest = &rest[unit_len..];
    }
    if total > u64::MAX as f64 {
        return Err("too long".into());
    }
    Ok(Duration::from_nanos(total as u64))
}
