#!/usr/bin/env python3
"""bench/merge_rounds.py — merge R recordings of the same spaces into one schedule-cache export.

    bench/merge_rounds.py OUT.json ROUND1.json ROUND2.json [...]

Each ROUND is a `tessera-tune export` of the same workloads measured again (a fresh tune of the
same space into an empty cache, in its own order). On a shared VM a trial's median is stable
within the trial (2-3% IQR) but the same point measured minutes apart differs by up to 1.8x:
the host's load drifts over seconds to minutes, so two recordings of one space agree only at
Kendall tau ~0.66. A ranking model evaluated against one recording is judged against that
noise. The merge takes, for every point, the median over rounds of its median, each round first
scaled to the workload's common level (its geometric mean over the points every round has), so
a round that ran on a slower host as a whole does not decide the median. The per-round medians
are kept in metrics.rounds_ns; the samples are the median round's.

Also prints, per workload, Kendall tau-b between every pair of rounds (the reproducibility the
machine allows) so the evaluation on the merged data can be read against it."""
import json
import math
import sys
from itertools import combinations


def key_maps(doc):
    wl = {w["id"]: (w["op"], w["shape"], w["dtype"]) for w in doc["workloads"]}
    dev = {d["id"]: (d["backend"], d["name"], d["arch"]) for d in doc["devices"]}
    tc = {t["id"]: (t["compiler"], t["kgen_version"]) for t in doc["toolchains"]}
    return wl, dev, tc


def trial_key(doc_maps, t):
    wl, dev, tc = doc_maps
    return (wl[t["workload"]], dev[t["device"]], tc[t["toolchain"]], t["hash"])


def tau_b(x, y):
    """Kendall tau-b (O(n^2): a few hundred points per workload)."""
    conc = disc = tx = ty = 0
    for i, j in combinations(range(len(x)), 2):
        dx, dy = x[i] - x[j], y[i] - y[j]
        if dx == 0 and dy == 0:
            continue
        if dx == 0:
            tx += 1
        elif dy == 0:
            ty += 1
        elif (dx > 0) == (dy > 0):
            conc += 1
        else:
            disc += 1
    den = math.sqrt((conc + disc + tx) * (conc + disc + ty))
    return (conc - disc) / den if den else float("nan")


def main():
    if len(sys.argv) < 4:
        sys.exit("usage: merge_rounds.py OUT.json ROUND1.json ROUND2.json [...]")
    out_path, paths = sys.argv[1], sys.argv[2:]
    docs = []
    for p in paths:
        with open(p) as f:
            docs.append(json.load(f))
    maps = [key_maps(d) for d in docs]
    base, base_maps = docs[0], maps[0]
    for p, m in zip(paths[1:], maps[1:]):
        if set(m[1].values()) != set(base_maps[1].values()):
            sys.exit("%s: recorded on another device than %s; rounds must share one" % (p, paths[0]))

    # rounds[r][key] = trial, verified trials only (a point that failed in any round is
    # dropped from the merge: its status is not reproducible, so neither is its rank)
    rounds = [{trial_key(m, t): t for t in d["trials"] if t["status"] == "ok"}
              for d, m in zip(docs, maps)]
    common = set(rounds[0])
    for r in rounds[1:]:
        common &= set(r)
    by_workload = {}
    for k in common:
        by_workload.setdefault(k[0], []).append(k)

    inv_wl = {v: i for i, v in base_maps[0].items()}
    inv_dev = {v: i for i, v in base_maps[1].items()}
    inv_tc = {v: i for i, v in base_maps[2].items()}
    trials, best = [], []
    for wl, keys in sorted(by_workload.items()):
        keys.sort(key=lambda k: k[3])
        logs = [[math.log(r[k]["median_ns"]) for k in keys] for r in rounds]
        levels = [sum(l) / len(l) for l in logs]
        common_level = sum(levels) / len(levels)
        print("# %s %s %s: %d points in all %d rounds; round levels %s" % (
            wl[0], wl[1], wl[2], len(keys), len(rounds),
            " ".join("%.3f" % math.exp(lv - common_level) for lv in levels)))
        for a, b in combinations(range(len(rounds)), 2):
            print("#   tau-b round %d vs round %d: %.3f" % (a + 1, b + 1, tau_b(logs[a], logs[b])))
        for i, k in enumerate(keys):
            scaled = sorted((logs[r][i] - levels[r] + common_level, r) for r in range(len(rounds)))
            mid_log, mid_round = scaled[len(scaled) // 2] if len(scaled) % 2 else (
                (scaled[len(scaled) // 2 - 1][0] + scaled[len(scaled) // 2][0]) / 2,
                scaled[len(scaled) // 2][1])
            t = dict(rounds[mid_round][k])
            t["workload"], t["device"], t["toolchain"] = inv_wl[k[0]], inv_dev[k[1]], inv_tc[k[2]]
            t["median_ns"] = math.exp(mid_log)
            metrics = dict(t.get("metrics") or {})
            metrics["rounds_ns"] = [rounds[r][k]["median_ns"] for r in range(len(rounds))]
            t["metrics"] = metrics
            trials.append(t)
        fastest = min((t for t in trials if t["workload"] == inv_wl[wl]),
                      key=lambda t: t["median_ns"])
        best.append({"workload": fastest["workload"], "device": fastest["device"],
                     "toolchain": fastest["toolchain"], "hash": fastest["hash"]})

    out = dict(base, trials=trials, best=best)
    with open(out_path, "w") as f:
        json.dump(out, f)
    print("# wrote %s: %d trials of %d workloads, median over %d rounds" % (
        out_path, len(trials), len(by_workload), len(rounds)))


if __name__ == "__main__":
    main()
