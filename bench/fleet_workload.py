"""The fleet's workload runs (bench/fleet.sh with WORKLOAD): recorded
workloads merged into one, each run's jobs and picks collected from its
daemon, and the SUMMARY line of a one-GPU run against a fleet's.

    python3 bench/fleet_workload.py merge OUT.json FILE.workload.json...
    python3 bench/fleet_workload.py collect ADDRESS OUT.json WALL_S TWICE JOB_ID...
    python3 bench/fleet_workload.py summary GPUS ONE.json FLEET.json [FAULTED.json...]

merge: the problems of every file in one workload (a problem in two files
is one, its calls and time added, as client/workload.h reads a file).

collect: of each job (the ids `tunectl workload sweep --json` queued): its
problem, state, counts and the configs each daemon measured; the served
pick (GetBest: a config and its median, or the baseline); every stored
measurement of the job (config name, status, median ms). With the run's wall time and
the configs its daemons measured twice (tuned_measured_twice_total).

summary: efficiency = one-GPU wall / (GPUS x the fleet's wall); a
problem's regret = the one-GPU run's median of the fleet's pick (its
config, or the baseline where the fleet serves that) over the one-GPU
run's pick's median, minus 1; where the one-GPU run never measured the
fleet's pick, the fleet's own median of it over the one-GPU pick's (two
runs' timings: counted in `cross_run`). lost: jobs of a run not DONE, or
DONE with configs never measured; duplicated: configs measured twice, and
problems queued as two jobs. Prints
    SUMMARY fleet_workload gpus=<n> problems=<n> wall_s=<x> efficiency=<x>
      max_regret=<x> lost=<n> duplicated=<n> one_gpu_wall_s=<x> cross_run=<n> runs=<n>
(lost and duplicated over the fleet's runs: the plain one and those with
faults; wall_s and efficiency of the plain one.)
"""

import json
import sys

import tuned
from tuned import pb


def merge(out, files):
    problems = {}
    for f in files:
        for p in json.load(open(f))["problems"]:
            key = json.dumps({k: v for k, v in p.items() if k not in ("calls", "gpu_ms")}, sort_keys=True)
            if key in problems:
                problems[key]["calls"] += p["calls"]
                problems[key]["gpu_ms"] += p["gpu_ms"]
            else:
                problems[key] = dict(p)
    json.dump({"format": "tuned-workload-1", "problems": list(problems.values())}, open(out, "w"), indent=1)
    print(f"# {len(problems)} problems from {len(files)} workloads into {out}")


def key(problem):
    """A problem's identity across runs and databases."""
    p = pb.Problem()
    p.CopyFrom(problem)
    p.ClearField("spec_hash")
    return p.SerializeToString(deterministic=True).hex()


def collect(address, out, wall, twice, ids):
    c = tuned.Client(address)
    jobs = []
    for i in ids:
        j = c.job(int(i))
        try:
            best = c._call(c._stub.GetBest, pb.GetBestRequest(problem=j.problem, view=pb.BEST_VIEW_BASIC))
        except tuned.TunedError:  # nothing served: no config passed and no baseline timed
            best = pb.BestKernel()
        ms = [m for m in c._call(c._stub.ListMeasurements, pb.ListMeasurementsRequest(problem=j.problem)).measurements
              if m.job_id == j.id]  # not the warming run's, nor another job's of the problem
        jobs.append({
            "id": j.id, "key": key(j.problem), "state": pb.JobState.Name(j.state),
            "total": j.total, "done": j.done, "failed": j.failed,
            "daemons": [[d.host, d.gpu, d.measured] for d in j.daemons],
            "pick": "baseline" if best.use_baseline else best.measurement.config.name,
            "pick_ms": best.baseline_ms if best.use_baseline else best.measurement.median_ms,
            "baseline_ms": best.baseline_ms,
            "measured": {m.config.name: m.median_ms for m in ms if m.status == pb.MEASUREMENT_OK},
            "rows": len(ms), "names": len({m.config.name for m in ms})})
    json.dump({"wall_s": float(wall), "twice": int(twice), "jobs": jobs}, open(out, "w"))
    print(f"# collected {len(jobs)} jobs from {address} into {out}")


def faults(run):
    """(lost, duplicated) of one run."""
    lost = sum(1 for j in run["jobs"] if j["state"] != "JOB_DONE" or j["done"] + j["failed"] < j["total"])
    keys = [j["key"] for j in run["jobs"]]
    dup = run["twice"] + len(keys) - len(set(keys)) + sum(j["rows"] - j["names"] for j in run["jobs"])
    return lost, dup


def summary(gpus, one_path, fleet_path, faulted_paths):
    one, fleet = json.load(open(one_path)), json.load(open(fleet_path))
    ones = {j["key"]: j for j in one["jobs"]}
    regrets, cross = [], 0
    for j in fleet["jobs"]:
        o = ones.get(j["key"])
        if o is None or o["pick_ms"] <= 0:
            continue
        if j["pick"] == o["pick"]:
            regrets.append(0.0)
            continue
        ms = o["baseline_ms"] if j["pick"] == "baseline" else o["measured"].get(j["pick"])
        if ms is None:  # never measured by the one-GPU run: the fleet's own time
            ms, cross = j["pick_ms"], cross + 1
        regrets.append(ms / o["pick_ms"] - 1)
    lost = dup = 0
    for run in [fleet] + [json.load(open(p)) for p in faulted_paths]:
        l, d = faults(run)
        lost, dup = lost + l, dup + d
    eff = one["wall_s"] / (gpus * fleet["wall_s"]) if fleet["wall_s"] > 0 else 0
    print(f"# regret per problem: {', '.join(f'{r:.3f}' for r in sorted(regrets, reverse=True)[:10])} ...")
    print(f"SUMMARY fleet_workload gpus={gpus} problems={len(fleet['jobs'])} wall_s={fleet['wall_s']:.1f} "
          f"efficiency={eff:.3f} max_regret={max(regrets, default=0):.3f} lost={lost} duplicated={dup} "
          f"one_gpu_wall_s={one['wall_s']:.1f} cross_run={cross} runs={1 + len(faulted_paths)}")


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "merge":
        merge(args[0], args[1:])
    elif cmd == "collect":
        collect(args[0], args[1], args[2], args[3], args[4:])
    elif cmd == "summary":
        summary(int(args[0]), args[1], args[2], args[3:])
    else:
        sys.exit(f"fleet_workload.py: unknown command {cmd!r}: merge, collect or summary")


if __name__ == "__main__":
    main()
