//! A part of a graph already read (`fmerge plan --graph calls.json --filter
//! …`): what `fmerge graph` does with `--filter` and `--regex` when it
//! reads the stack, done to its file.

use super::{Graph, partial};
use crate::options::stack::Select;
use anyhow::Result;

impl Graph {
    /// Keeps the functions `select` names. A call from a function left out
    /// into one kept counts as requests from outside to its callee (the
    /// rest of the application calls it), the kept functions' calls of the
    /// rest stay remote, and the graph says it is a part
    /// ([`partial`](Self::partial)), so a plan of it drops no deployment.
    /// Notes what was counted from outside.
    pub fn select(&mut self, select: &Select) -> Result<Vec<String>> {
        let names: Vec<String> = self.functions.iter().map(|f| f.name.clone()).collect();
        let kept = select.apply(names.clone())?;
        if kept.len() == names.len() {
            return Ok(Vec::new());
        }
        let is_kept = |name: &str| kept.iter().any(|k| k == name);
        let mut notes = Vec::new();
        for e in self.edges.iter().filter(|e| !is_kept(&e.from)) {
            let Some(to) = e.to.as_deref().filter(|to| is_kept(to)) else {
                continue;
            };
            let Some(calls) = e.calls.filter(|&c| c > 0.0) else {
                continue;
            };
            if let Some(f) = self.functions.iter_mut().find(|f| f.name == to)
                && let Some(external) = &mut f.external
            {
                *external += calls;
                notes.push(format!(
                    "{} is left out of the plan and makes {calls} calls of {to}: counted as requests from outside",
                    e.from
                ));
            }
        }
        self.edges.retain(|e| is_kept(&e.from));
        self.conflicts.retain(|c| is_kept(&c.a) && is_kept(&c.b));
        self.functions.retain(|f| is_kept(&f.name));
        let part = partial(select, kept.len(), names.len());
        self.partial = match self.partial.take() {
            Some(was) => part.map(|p| format!("{p}, of a graph where {was}")),
            None => part,
        };
        Ok(notes)
    }
}
