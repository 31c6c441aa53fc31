"""The profile the planner plans from: before any merged deployment is
planned, the unmerged deployment runs the mixed workload once at a rate it
sustains, its runtimes scraped before and after. The scrapes give `fmerge
plan --metrics` the traffic, the hop costs and each function's resident
memory and cpu, as a team would scrape its cluster before merging. This run
also seeds the data every later run starts from; it is not one of the
rounds, so no projection is priced with its hop costs."""

from .app import App, application, seed_once
from .appstack import deployment_stack
from .config import die, log


def profile(ctx, args, builds, oha):
    """Runs the profile; returns {"metrics": [before, after] scrape paths,
    "rate", "snap": the seeded Redis contents, "requests": each entry
    point's request}."""
    builds.setdefault("stacks", {})["unmerged"] = deployment_stack(builds["graph"]["functions"], [])
    app = App(ctx, args, builds, "unmerged", rnd="-profile")
    spec = application(builds)
    rate = spec["profile_rate"]
    snap, requests = seed_once(app, ctx.out / "bin" / "seed")
    app.restore(snap)
    app.mix(oha, "mixed", spec["ladder"][0], requests, 2, 16, "profile-warmup")
    app.restore(snap)
    run = app.mix(oha, "mixed", rate, requests, args.duration, args.connections, "profile")
    ctx.procs.stop_all()
    if not run["sustained"]:
        die(f"the unmerged deployment did not sustain the profile's {rate}/s of the mixed workload: "
            "the machine is too busy to plan from its usage\nfix: rerun on a quiet machine (load average below 2)")
    log(f"app: profile of unmerged at {rate}/s for {args.duration} s: scrapes {', '.join(run['metrics'])}")
    return {"metrics": run["metrics"], "rate": rate, "snap": snap, "requests": requests}
