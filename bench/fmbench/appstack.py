"""The stack each application deployment runs, as the bench models it: one
entry (a pod) per deployment, each with its `requests` and `limits`; what
they add up to; and whether the application's declared entry points are
still deployed. The bench starts exactly these entries, so the pods it
counts are the processes it measures.

Unmerged is `functions/stack.yml` itself (read through calls.json, which
carries each function's figures). A merged deployment replaces each group's
caller with the group's pod; its figures and which callee deployments it
drops come from the planner's plan.json when it gives them
(`planned_deployment`, its `cluster` section), else they follow what
`fmerge build` writes for an explicit plan: the members' sums, every callee
kept.

The application's entry points are the functions its stack declares with
the label the planner reads, `com.openfaas.fmerge.entry: "true"`
(`declared_entries`): every function its front end calls, whether the
bench's workloads exercise it or not."""

import re
from pathlib import Path

# Bytes in a MiB, the unit stack files write memory in.
MIB = 1024 * 1024
# A pod's resources, and the calls.json keys of each function's own.
FIGURES = {("limits", "memory"): "memory_bytes", ("limits", "cpu"): "cpu",
           ("requests", "memory"): "requests_memory_bytes", ("requests", "cpu"): "requests_cpu"}
# Where a merged pod's figures came from.
FROM_PLAN, MEMBERS_SUM = "plan.json", "members' sum"


# The stack label that declares an entry point (as `fmerge plan` reads it).
ENTRY_LABEL = "com.openfaas.fmerge.entry"


def function_blocks(stack):
    """The functions of a faas-cli stack file, in order, each with the lines
    of its block: [(name, [line])]. Read as text (the bench reads no YAML
    library): a function is a two-space key under `functions:`."""
    out, inside = [], False
    for line in Path(stack).read_text().splitlines():
        if re.match(r"^functions:\s*$", line):
            inside = True
            continue
        if not inside:
            continue
        if re.match(r"^\S", line):
            break
        m = re.match(r"^  ([A-Za-z0-9][A-Za-z0-9_.-]*):\s*$", line)
        if m:
            out.append((m.group(1), []))
        elif out:
            out[-1][1].append(line)
    return out


def declared_entries(stack):
    """The functions a faas-cli stack file declares as entry points, in the
    stack's order: those whose labels set ENTRY_LABEL to true."""
    label = re.compile(r"^\s+" + re.escape(ENTRY_LABEL) + r"""\s*:\s*["']?true["']?\s*(#.*)?$""")
    return [name for name, lines in function_blocks(stack) if any(label.match(line) for line in lines)]


def own_figures(function):
    """{"limits": {memory, cpu}, "requests": {memory, cpu}} of one calls.json
    function (None where the stack sets none)."""
    out = {"limits": {}, "requests": {}}
    for (kind, what), key in FIGURES.items():
        out[kind][what] = function.get(key)
    return out


def summed(figures):
    """The members' figures added up, per kind and resource (None when some
    member sets none: fmerge keeps the caller's then, which the bench does
    not guess)."""
    out = {"limits": {}, "requests": {}}
    for kind, what in FIGURES:
        values = [f[kind][what] for f in figures]
        out[kind][what] = None if any(v is None for v in values) else sum(values)
    return out


def planned_deployment(doc):
    """What a plan.json says of the deployment it plans (its `cluster`
    section): {"dropped": [callee deployments it no longer needs], "pods":
    {caller: {"limits": {memory, cpu}, "requests": {memory, cpu}, "from":
    {kind: {resource: where the planner took it}}}}}, memory in bytes and
    cpu in cores; None when it has no `cluster`. The one place the bench
    reads the planner's deployment."""
    c = (doc or {}).get("cluster")
    if not c:
        return None
    pods = {}
    for p in c.get("pods", []):
        def each(key):
            return {kind: {what: (p.get(kind) or {}).get(what, {}).get(key) for what in ("memory", "cpu")}
                    for kind in ("limits", "requests")}
        pods[p["caller"]] = {**each("amount"), "from": each("from")}
    return {"dropped": list(c.get("dropped", [])), "pods": pods}


def deployment_stack(functions, groups, planned=None):
    """The entries a deployment runs, in the stack's order: [{name, members,
    limits, requests, source}]. With no groups, every function's own entry.
    Each group's pod takes its caller's place (named as the caller: it
    serves the caller's route), with plan.json's figures for it or else its
    members' sums; the callees plan.json drops have no entry."""
    by = {f["name"]: f for f in functions}
    planned = planned or {"dropped": [], "pods": {}}
    of_caller = {g["members"][0]: g for g in groups}
    dropped = set(planned["dropped"]) - set(of_caller)  # a caller keeps its route
    out = []
    for f in functions:
        name = f["name"]
        if name in dropped:
            continue
        g = of_caller.get(name)
        if g is None:
            out.append({"name": name, "members": [name], **own_figures(f), "source": "stack"})
            continue
        if name in planned["pods"]:
            pod = planned["pods"][name]
            figures = {kind: pod[kind] for kind in ("limits", "requests")}
            froms = sorted({f for kind in pod.get("from", {}).values() for f in kind.values() if f})
            source = f"{FROM_PLAN} ({', '.join(froms)})" if froms else FROM_PLAN
        else:
            figures, source = summed([own_figures(by[m]) for m in g["members"]]), MEMBERS_SUM
        out.append({"name": name, "members": list(g["members"]), "group": g.get("name"), **figures, "source": source})
    return out


def totals(stack):
    """Pods, and the requests and limits added up over a stack's entries
    ({kind: {resource: total}}; None for a resource some entry lacks)."""
    out = {"pods": len(stack)}
    for kind, what in FIGURES:
        values = [e[kind][what] for e in stack]
        out.setdefault(kind, {})[what] = None if not values or any(v is None for v in values) else sum(values)
    return out


def missing_entries(stack, declared):
    """The declared entry points a stack does not deploy (no entry serves
    their route)."""
    served = {e["name"] for e in stack}
    return [e for e in declared if e not in served]
