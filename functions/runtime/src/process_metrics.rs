//! The process's own series, named as Prometheus' process collector names
//! them: `process_resident_memory_bytes` (gauge) and
//! `process_cpu_seconds_total` (user and system CPU, counter), read from
//! `/proc/self` at each scrape, so that what a pod uses can be measured
//! where it runs (a merged image's functions share the one process).

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Unit;
use std::sync::OnceLock;

/// The process's resident memory and CPU time, read at each scrape. A
/// platform without `/proc` exports neither.
#[derive(Debug)]
pub(crate) struct ProcessCollector;

impl Collector for ProcessCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        if let Some(bytes) = resident_bytes() {
            let help = "Resident memory size in bytes.";
            let gauge = ConstGauge::new(bytes);
            encode_series(
                &mut encoder,
                "process_resident_memory",
                help,
                Unit::Bytes,
                gauge,
            )?;
        }
        if let Some(seconds) = cpu_seconds() {
            let help = "Total user and system CPU time spent in seconds.";
            let counter = ConstCounter::new(seconds);
            encode_series(&mut encoder, "process_cpu", help, Unit::Seconds, counter)?;
        }
        Ok(())
    }
}

/// One series: `metric`, described as `name` (the unit's suffix added) with
/// `help`.
fn encode_series(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    unit: Unit,
    metric: impl EncodeMetric,
) -> Result<(), std::fmt::Error> {
    metric.encode(encoder.encode_descriptor(name, help, Some(&unit), metric.metric_type())?)
}

/// The resident set: `/proc/self/statm`'s second field, in pages.
pub(crate) fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * page_size())
}

/// User plus system CPU time: `/proc/self/stat`'s `utime` and `stime`, in
/// clock ticks.
pub(crate) fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name may hold spaces and parentheses: fields count from
    // after its last `)`, where the third field (state) comes first.
    let fields: Vec<&str> = stat
        .get(stat.rfind(')')? + 1..)?
        .split_whitespace()
        .collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) as f64 / clock_ticks() as f64)
}

/// Bytes per page, from `sysconf`.
fn page_size() -> u64 {
    static PAGE: OnceLock<u64> = OnceLock::new();
    // SAFETY: sysconf reads a constant of the system; it has no preconditions.
    *PAGE.get_or_init(|| positive(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096))
}

/// Clock ticks per second (`CLK_TCK`), from `sysconf`.
fn clock_ticks() -> u64 {
    static TICKS: OnceLock<u64> = OnceLock::new();
    // SAFETY: as for the page size.
    *TICKS.get_or_init(|| positive(unsafe { libc::sysconf(libc::_SC_CLK_TCK) }).unwrap_or(100))
}

/// `sysconf`'s answer, unless it failed (-1) or is not positive.
fn positive(value: libc::c_long) -> Option<u64> {
    u64::try_from(value).ok().filter(|&v| v > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_has_resident_memory_and_cpu_time() {
        let rss = resident_bytes().expect("/proc/self/statm");
        assert!(rss > 0, "{rss}");
        // Spin a little, so that the CPU time has something to count.
        let start = std::time::Instant::now();
        let mut x = 0u64;
        while start.elapsed() < std::time::Duration::from_millis(50) {
            x = x.wrapping_add(std::hint::black_box(1));
        }
        assert!(x > 0);
        let cpu = cpu_seconds().expect("/proc/self/stat");
        assert!(cpu > 0.0, "{cpu}");
    }
}
