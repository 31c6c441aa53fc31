//! The stack's functions as the graph's nodes, before anything is built:
//! each with its limits and requests (every one a Kubernetes quantity, or
//! the stack is refused), and the source of each Rust function on the
//! runtime; the rest are nodes left out, with the reason.

use super::Function;
use anyhow::Result;
use fmerge_cargo::workspace;
use fmerge_ship::stack_in::{self, StackIn};
use std::collections::BTreeMap;

/// The stack's functions, before the build.
pub struct StackFunctions {
    /// Each with its limits: the graph's nodes.
    pub functions: Vec<Function>,
    /// Each Rust function's source.
    pub sources: Vec<workspace::FunctionProject>,
}

/// The stack's functions `names` with their limits, each Rust one's source
/// (none built): what the graph starts from, and what `fmerge plan` checks
/// its constraints on before the build.
pub fn functions_of(stack_in: &StackIn, names: Vec<String>) -> Result<StackFunctions> {
    // A limit that is not a quantity stops the graph before its build.
    stack_in.check_every_quantity()?;
    let (mut functions, mut sources) = (Vec::new(), Vec::new());
    for name in names {
        let mut function = Function {
            name: name.clone(),
            ..Function::default()
        };
        match stack_in.entry(&name) {
            Ok(entry) => {
                let (limits, requests) = (&entry.deployment.limits, &entry.deployment.requests);
                function.memory = limits.get("memory").cloned();
                let quantity = |map: &BTreeMap<String, String>, resource: &str| {
                    map.get(resource).and_then(|q| stack_in::quantity(q))
                };
                function.memory_bytes = quantity(limits, "memory");
                function.cpu = quantity(limits, "cpu");
                function.requests_memory_bytes = quantity(requests, "memory");
                function.requests_cpu = quantity(requests, "cpu");
                function.entry = entry.entry;
                function.connector = entry
                    .deployment
                    .annotations
                    .get(stack_in::CONNECTOR_TOPIC)
                    .cloned();
                match workspace::entry_project(&name, &entry.handler, entry.template.as_deref()) {
                    Ok(project) => sources.push(project),
                    Err(e) => function.left_out = Some(format!("{e:#}")),
                }
            }
            // Not a function fmerge can build (another language, say): a node
            // that stays as it is.
            Err(e) => function.left_out = Some(format!("{e:#}")),
        }
        functions.push(function);
    }
    Ok(StackFunctions { functions, sources })
}
