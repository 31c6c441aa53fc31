//! Kubernetes quantities (`128Mi`, `129e6`, `500m`, `1.5Gi`), the one
//! parser of them in fmerge: stack.yml's `limits`/`requests`, `fmerge plan`'s
//! `--max-memory`, `--max-total-memory` and `--max-total-cpu`, and the sums
//! written into a merged stack.
//!
//! The grammar is apimachinery's `resource.Quantity`:
//! `<sign>?<number><suffix>`, a number being `1`, `1.5`, `1.` or `.5`, and
//! the suffix one of the binary `Ki Mi Gi Ti Pi Ei`, the decimal
//! `n u m "" k M G T P E`, or an exponent `e<sign>?<digits>` / `E…`.
//! Anything else (a capital `K`, `KB`, `1 Mi`) is refused, as the API server
//! refuses it. The value is a float: figures for planning and sums of
//! limits, never an identity.

use anyhow::{Result, bail};

/// The binary suffixes, powers of 1024.
const BINARY: [(&str, i32); 6] = [
    ("Ki", 1),
    ("Mi", 2),
    ("Gi", 3),
    ("Ti", 4),
    ("Pi", 5),
    ("Ei", 6),
];

/// The decimal suffixes, powers of 10.
const DECIMAL: [(&str, i32); 9] = [
    ("n", -9),
    ("u", -6),
    ("m", -3),
    ("k", 3),
    ("M", 6),
    ("G", 9),
    ("T", 12),
    ("P", 15),
    ("E", 18),
];

/// The value of the quantity `text` (bytes for memory, cores for cpu).
pub fn parse(text: &str) -> Result<f64> {
    let refused = |why: &str| -> Result<f64> {
        bail!(
            "{text:?} is not a Kubernetes quantity ({why})\n\
             fix: write a number with one of the suffixes Ki Mi Gi Ti Pi Ei (powers of 1024), \
             n u m k M G T P E (powers of 1000; kilo is a small k), or an exponent, \
             e.g. 512Mi, 1.5Gi, 129M, 129e6, 500m"
        )
    };
    let body = text.strip_prefix(['+', '-']).unwrap_or(text);
    let negative = text.starts_with('-');
    let digits_end = body
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(body.len());
    let (number, suffix) = body.split_at(digits_end);
    if number.is_empty() || number == "." || number.matches('.').count() > 1 {
        return refused("no number before its suffix");
    }
    let Ok(value) = number.parse::<f64>() else {
        return refused("no number before its suffix");
    };
    let scale = if suffix.is_empty() {
        1.0
    } else if let Some((_, power)) = BINARY.iter().find(|(s, _)| *s == suffix) {
        1024f64.powi(*power)
    } else if let Some((_, power)) = DECIMAL.iter().find(|(s, _)| *s == suffix) {
        10f64.powi(*power)
    } else if let Some(exponent) = suffix.strip_prefix(['e', 'E']).filter(|e| !e.is_empty()) {
        let digits = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
        match exponent.parse::<i32>() {
            Ok(e) if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) => {
                10f64.powi(e)
            }
            _ => return refused(&format!("`{suffix}` is not an exponent")),
        }
    } else {
        return refused(&format!("`{suffix}` is not a suffix of quantities"));
    };
    let value = value * scale;
    if !value.is_finite() {
        return refused("too large");
    }
    Ok(if negative { -value } else { value })
}

/// The quantity `text`, which must be more than zero, for `what` (a flag,
/// or a stack.yml field), whose name leads the error.
pub fn positive(what: &str, text: &str) -> Result<f64> {
    match parse(text.trim()) {
        Ok(v) if v > 0.0 => Ok(v),
        Ok(_) => {
            bail!("{what} {text:?} is not more than zero\nfix: give a size above 0, e.g. 512Mi")
        }
        Err(e) => Err(e.context(what.to_string())),
    }
}

/// A sum written back into a stack file: cpu in millicores, memory in
/// `Mi` when whole, else in bytes.
pub fn format(resource: &str, value: f64) -> String {
    if resource == "cpu" {
        format!("{}m", (value * 1000.0).round() as u64)
    } else if value % 1048576.0 == 0.0 {
        format!("{}Mi", (value / 1048576.0) as u64)
    } else {
        format!("{}", value.round() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Kubernetes' documented examples ("Resource Management for Pods and
    /// Containers" and apimachinery's `resource.Quantity`), and the forms
    /// fmerge once got wrong (`512k`, `1Ti` refused; `K` accepted).
    #[test]
    fn the_documented_quantities() {
        let mib = 1048576.0;
        let table: &[(&str, f64)] = &[
            // "128974848, 129e6, 129M, 128974848000m, 123Mi": roughly the same memory.
            ("128974848", 128974848.0),
            ("129e6", 129e6),
            ("129M", 129e6),
            ("128974848000m", 128974848.0),
            ("123Mi", 123.0 * mib),
            // "0.1 cpu = 100m"; a half core.
            ("0.1", 0.1),
            ("100m", 0.1),
            ("500m", 0.5),
            ("0.5", 0.5),
            // 400m of memory is 0.4 bytes: legal, if rarely meant.
            ("400m", 0.4),
            // Every decimal suffix.
            ("1n", 1e-9),
            ("1u", 1e-6),
            ("512k", 512e3),
            ("1G", 1e9),
            ("1T", 1e12),
            ("1P", 1e15),
            ("1E", 1e18),
            // Every binary suffix, and fractions of them.
            ("1Ki", 1024.0),
            ("1Gi", 1024.0 * mib),
            ("1Ti", 1024.0 * 1024.0 * mib),
            ("1Pi", 1024f64.powi(5)),
            ("2Ei", 2.0 * 1024f64.powi(6)),
            ("1.5Gi", 1.5 * 1024.0 * mib),
            // Exponents, either case, signed.
            ("1e3", 1e3),
            ("12E6", 12e6),
            ("5e-3", 5e-3),
            ("1E+2", 100.0),
            // Numbers of every documented shape.
            ("2", 2.0),
            ("1.", 1.0),
            (".5", 0.5),
            ("+1", 1.0),
            ("-1", -1.0),
        ];
        for (text, want) in table {
            let got = parse(text).unwrap_or_else(|e| panic!("{text}: {e:#}"));
            assert!(
                (got - want).abs() <= want.abs() * 1e-12,
                "{text}: {got} is not {want}"
            );
        }
    }

    #[test]
    fn what_kubernetes_refuses_is_refused() {
        for bad in [
            "1K", "1KB", "1Mb", "1mi", "1 Mi", "Mi", "", ".", "1.2.3", "1e", "1e1.5", "1Ki2",
            "lots", "0x10",
        ] {
            let e = parse(bad).expect_err(bad).to_string();
            assert!(
                e.contains("is not a Kubernetes quantity") && e.contains("\nfix: "),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn a_limit_must_be_more_than_zero() {
        let e = positive("--max-memory", "0").unwrap_err();
        assert!(format!("{e:#}").contains("not more than zero"), "{e:#}");
        let e = positive("--max-memory", "512K").unwrap_err();
        assert!(format!("{e:#}").starts_with("--max-memory: "), "{e:#}");
        assert_eq!(positive("--max-memory", "1Ti").unwrap(), 1024f64.powi(4));
    }

    #[test]
    fn sums_are_written_as_kubernetes_reads_them() {
        assert_eq!(format("memory", 192.0 * 1048576.0), "192Mi");
        assert_eq!(format("memory", 1e9), "1000000000");
        assert_eq!(format("cpu", 0.75), "750m");
        for (resource, v) in [("memory", 3.0 * 1048576.0), ("cpu", 1.25)] {
            assert_eq!(parse(&format(resource, v)).unwrap(), v);
        }
    }
}
