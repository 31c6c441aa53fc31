//! What `/proc` and `getconf` say of a process: its CPU time and its
//! resident set.

use std::process::Command;

/// CPU time (user + system) a process has used, in clock ticks, from
/// `/proc/<pid>/stat`.
pub fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("/proc/<pid>/stat");
    // The command name may hold spaces: fields count from after its `)`.
    let after = &stat[stat.rfind(')').expect("comm") + 2..];
    let fields: Vec<&str> = after.split(' ').collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

/// Clock ticks per second (`getconf CLK_TCK`, 100 on Linux).
pub fn ticks_per_second() -> u64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
        .unwrap_or(100)
}

/// A process's resident set, in KiB.
#[derive(Debug, Clone, Copy)]
pub struct ResidentKib {
    /// Its peak (VmHWM).
    pub peak: u64,
    /// Now (VmRSS).
    pub now: u64,
}

/// A process's peak and current resident set.
pub fn rss_kib(pid: u32) -> ResidentKib {
    let status =
        std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc/<pid>/status");
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    };
    ResidentKib {
        peak: field("VmHWM:"),
        now: field("VmRSS:"),
    }
}
