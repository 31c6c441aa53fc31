//! What `fmerge plan` refuses before any search: constraints the
//! application cannot meet whatever the plan, each with its fix.

use anyhow::{Result, bail};
use fmerge_plan::model::{Model, Resource};

/// Refuses a cap the stack gives no limits for, the memory objective with
/// no gain asked, and a total cap the unmerged application passes when no
/// usage is measured (no plan then reserves less).
pub fn unmeetable(m: &Model) -> Result<()> {
    let (names, n) = (&m.names, m.names.len());
    // A group's cap needs its possible members' limits; the application's,
    // every function's (any may stay deployed).
    for (flag, given, all, resource) in [
        (
            "--max-memory",
            m.constraints.max_memory.is_some(),
            false,
            Resource::Memory,
        ),
        (
            "--max-total-memory",
            m.constraints.max_total_memory.is_some(),
            true,
            Resource::Memory,
        ),
        (
            "--max-total-cpu",
            m.constraints.max_total_cpu.is_some(),
            true,
            Resource::Cpu,
        ),
    ] {
        let (key, example) = match resource {
            Resource::Memory => ("memory", "like 128Mi"),
            Resource::Cpu => ("cpu", "like 200m"),
        };
        let missing: Vec<&str> = (0..n)
            .filter(|&i| given && (all || m.left_out[i].is_none()))
            .filter(|&i| match resource {
                Resource::Memory => m.memory[i].is_none(),
                Resource::Cpu => m.cpu[i].is_none(),
            })
            .map(|i| names[i].as_str())
            .collect();
        if !missing.is_empty() {
            bail!(
                "{flag} needs each function's {key} limit, and {} set{} no `limits: {key}:` in the stack file (or none fmerge reads, {example})\n\
                 fix: set their limits, or plan without {flag}",
                missing.join(", "),
                if missing.len() == 1 { "s" } else { "" }
            );
        }
    }
    if m.constraints.objective.needs_minimum()
        && m.constraints.min_gain_ms.is_none()
        && m.constraints.min_calls_removed.is_none()
    {
        bail!(
            "--objective memory asks for the least memory that still gains something, and no gain was asked for (the least is no merge at all)\n\
             fix: give --min-gain-ms MS or --min-calls-removed N, or choose --objective latency or calls"
        );
    }
    // With no usage measured a merged pod's limits are its members' sums,
    // so no plan reserves less than the unmerged application: a cap below
    // that is refused now, before any build.
    if m.usage.iter().all(|u| u.iter().all(Option::is_none)) {
        for (flag, cap, resource) in [
            (
                "--max-total-memory",
                m.constraints.max_total_memory,
                Resource::Memory,
            ),
            (
                "--max-total-cpu",
                m.constraints.max_total_cpu,
                Resource::Cpu,
            ),
        ] {
            if let Some(max) = cap
                && m.base(resource) > max * (1.0 + 1e-12)
            {
                let base = resource.show(m.base(resource));
                bail!(
                    "the application reserves {base} before any merge (every function's limits), more than {flag} {} allows\n\
                     fix: raise {flag} to at least {base}, or plan without it",
                    resource.show(max)
                );
            }
        }
    }
    Ok(())
}
