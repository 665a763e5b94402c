"""The bars of bench/models.py's SUMMARY lines, over one run or several
(a matrix split across device calls): no torch needed.

    python3 bench/models_bars.py LOG...     # models.log files of bench/models.sh

prints

    SUMMARY models_bars models=<n> cases=<n> modes=<n> lines=<n> eager_min=<x>
      eager_geomean=<x> graph_min=<x> graph_decode_geomean=<x> max_autotune_geomean=<x>
      max_autotune_lines=<n> host_tuned_le_torch=<k>/<n> prediction_within_10pct=<k>/<n>
      max_prediction_error=<x>

(eager_*: the exec=eager lines' vs_eager; graph_*: the exec=graph lines';
max_autotune_geomean over the lines that ran it (vs_max_autotune > 0);
host_tuned_le_torch: host_overhead lines with tuned_us <= torch_us;
prediction_within_10pct: exec=graph workload lines whose predicted_saving is within
10% (relative) of measured_saving; max_prediction_error: the largest
|predicted - measured| / measured of them; 0 where a kind of line is
missing.)
"""

import math
import sys


def fields(line):
    """The key=value fields of a SUMMARY line."""
    return dict(w.split("=", 1) for w in line.split() if "=" in w)


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else 0.0


def bars(lines):
    """The SUMMARY models_bars line of the SUMMARY lines `lines`."""
    models = [fields(l) for l in lines if l.startswith("SUMMARY model ")]
    eager = [float(f["vs_eager"]) for f in models if f["exec"] == "eager"]
    graph = [float(f["vs_eager"]) for f in models if f["exec"] == "graph"]
    decode = [float(f["vs_eager"]) for f in models if f["exec"] == "graph" and f["case"] == "decode"]
    autotune = [float(f["vs_max_autotune"]) for f in models if float(f["vs_max_autotune"]) > 0]
    hosts = [fields(l) for l in lines if l.startswith("SUMMARY host_overhead ")]
    host_ok = sum(float(f["tuned_us"]) <= float(f["torch_us"]) for f in hosts)
    errors = []
    for f in (fields(l) for l in lines if l.startswith("SUMMARY workload ")):
        if f["exec"] != "graph":  # the bar: the saving measured with CUDA graphs
            continue
        measured, predicted = float(f["measured_saving"]), float(f["predicted_saving"])
        errors.append(abs(predicted - measured) / abs(measured) if measured else math.inf)
    return (
        f"SUMMARY models_bars models={len({f['name'] for f in models})} "
        f"cases={len({f['case'] for f in models})} modes={len({f['dtype'] for f in models})} "
        f"lines={len(models)} eager_min={min(eager, default=0):.3f} "
        f"eager_geomean={geomean(eager):.3f} graph_min={min(graph, default=0):.3f} "
        f"graph_decode_geomean={geomean(decode):.3f} max_autotune_geomean={geomean(autotune):.3f} "
        f"max_autotune_lines={len(autotune)} host_tuned_le_torch={host_ok}/{len(hosts)} "
        f"prediction_within_10pct={sum(e <= 0.1 for e in errors)}/{len(errors)} "
        f"max_prediction_error={max(errors, default=0):.3f}")


def main():
    lines = []
    for path in sys.argv[1:]:
        with open(path, encoding="utf-8") as f:
            lines += [l.strip() for l in f if l.startswith("SUMMARY ")]
    print(bars(lines))


if __name__ == "__main__":
    main()
