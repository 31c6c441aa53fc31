//! The call graph for people and tools: JSON (what `fmerge plan --graph`
//! reads), Graphviz DOT, and a picture rendered from the DOT by Graphviz's
//! own `dot` (Debian package `graphviz`), never drawn by hand.

use super::Graph;
use anyhow::{Context as _, Result, bail};
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

pub fn json(graph: &Graph) -> String {
    serde_json::to_string_pretty(graph).expect("a graph serializes") + "\n"
}

/// DOT: functions as boxes (dashed when no group may hold them), a callee
/// outside the stack as a dashed ellipse, an unknown callee (a name that is
/// not a literal) as its own "unknown" node per caller; edges labelled with
/// their call sites and, when known, the calls seen.
pub fn dot(graph: &Graph) -> String {
    let id = |name: &str| format!("\"{}\"", name.replace('\\', "\\\\").replace('"', "\\\""));
    let mut out = String::from(
        "digraph calls {\n  rankdir=LR;\n  node [shape=box, fontname=\"Helvetica\"];\n  edge [fontname=\"Helvetica\", fontsize=10];\n",
    );
    for f in &graph.functions {
        let mut label = f.name.clone();
        if let Some(memory) = &f.memory {
            let _ = write!(label, "\\n{memory}");
        }
        if let Some(n) = f.external.filter(|n| *n > 0.0) {
            let _ = write!(label, "\\n{} requests", figure(n));
        }
        let style = if f.left_out.is_some() {
            ", style=dashed, color=gray40"
        } else {
            ""
        };
        let _ = writeln!(out, "  {} [label=\"{label}\"{style}];", id(&f.name));
    }
    let mut outside = std::collections::BTreeSet::new();
    for (i, e) in graph.edges.iter().enumerate() {
        let to = match &e.to {
            Some(to) => {
                if graph.function(to).is_none() && outside.insert(to.clone()) {
                    let _ = writeln!(
                        out,
                        "  {} [label=\"{to}\\n(not in the stack)\", shape=ellipse, style=dashed];",
                        id(to)
                    );
                }
                id(to)
            }
            None => {
                let node = format!("\"unknown.{i}\"");
                let _ = writeln!(
                    out,
                    "  {node} [label=\"unknown\\n(name not a literal)\", shape=ellipse, style=dotted];"
                );
                node
            }
        };
        let mut label = format!("{} site{}", e.sites, if e.sites == 1 { "" } else { "s" });
        if let Some(calls) = e.calls {
            let _ = write!(label, "\\n{} calls", figure(calls));
        }
        let _ = writeln!(out, "  {} -> {to} [label=\"{label}\"];", id(&e.from));
    }
    out.push_str("}\n");
    out
}

fn figure(n: f64) -> String {
    if n.fract() == 0.0 {
        format!("{n:.0}")
    } else {
        format!("{n:.1}")
    }
}

/// Renders DOT text to `path` with `dot -T<format>` (`svg` or `png`).
pub fn picture(dot_text: &str, format: &str, path: &Path) -> Result<()> {
    if !matches!(format, "svg" | "png") {
        bail!("cannot render a {format} picture\nfix: use svg or png");
    }
    let temp = fmerge_cargo::artifact::temp_beside(path)?;
    let mut child = Command::new("dot")
        .arg(format!("-T{format}"))
        .arg("-o")
        .arg(&*temp)
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context(
            "cannot run Graphviz's `dot` to draw the graph\n\
             fix: install Graphviz (Debian: `apt-get install graphviz`), \
             or write --format dot and render it elsewhere",
        )?;
    child
        .stdin
        .take()
        .expect("piped")
        .write_all(dot_text.as_bytes())?;
    let out = child.wait_with_output()?;
    if !out.status.success() {
        bail!(
            "Graphviz's dot failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    fmerge_cargo::artifact::commit(temp, path, 0o644)?;
    Ok(())
}
