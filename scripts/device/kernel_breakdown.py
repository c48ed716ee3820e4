#!/usr/bin/env python3
"""Per-kernel time breakdown of the decode (or prefill) steps of a CUDA trace (CUPTI kernel records).

usage: kernel_breakdown.py TRACE.json[.gz] [decode|prefill]   -> markdown on stdout

Groups each step's kernels by function (template arguments dropped) and by the op of
the node they are attributed to, and prints the mean per step over the decode steps that carry
kernel records, with the step's GPU span, busy time and idle gaps, and which kernels the largest
idle gaps fall between.
"""
import gzip
import json
import re
import statistics
import sys
from collections import defaultdict


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def short(name):
    name = name.replace("(anonymous namespace)::", "").replace("minfer::cuda::", "")
    name = re.sub(r"^void ", "", name)
    depth, cut = 0, len(name)
    for i, ch in enumerate(name):  # the argument list starts at the first '(' outside <...>
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0:
            cut = i
            break
    return re.sub(r"<.*>", "<>", name[:cut])  # template arguments


def main():
    t = load(sys.argv[1])
    graphs = {g["id"]: g for g in t["graphs"]}
    phase = sys.argv[2] if len(sys.argv) > 2 else "decode"
    steps = [s for s in t["steps"] if s["phase"] == phase and s.get("kernels")]
    if not steps:
        sys.exit(f"no {phase} step with kernel records in " + sys.argv[1])
    by_fn, by_op = defaultdict(list), defaultdict(list)
    gaps = defaultdict(float)  # (kernel before, kernel after) -> idle µs summed over the steps
    spans, busy, counts = [], [], []
    for s in steps:
        end, before = None, None
        for k in sorted(s["kernels"], key=lambda k: k["start_ns"]):
            if end is not None and k["start_ns"] > end:
                gaps[(before, short(k["name"]))] += (k["start_ns"] - end) / 1e3
            if end is None or k["start_ns"] + k["duration_ns"] > end:
                end, before = k["start_ns"] + k["duration_ns"], short(k["name"])
        nodes = graphs[s["graph"]]["nodes"]
        fn, op = defaultdict(lambda: [0.0, 0]), defaultdict(lambda: [0.0, 0])
        for k in s["kernels"]:
            us = k["duration_ns"] / 1e3
            f = fn[short(k["name"])]
            f[0] += us
            f[1] += 1
            if k["node"] < 0:
                label = "(" + k.get("unattributed", "?") + ")"
            else:  # a fused kernel: every op it computes
                ops = [nodes[i]["op"] for i in k.get("covers", [k["node"]])]
                label = "+".join(dict.fromkeys(ops))
            o = op[label]
            o[0] += us
            o[1] += 1
        for key, v in fn.items():
            by_fn[key].append(v)
        for key, v in op.items():
            by_op[key].append(v)
        spans.append(s.get("gpu_ms", 0) * 1e3)
        busy.append(s.get("gpu_busy_ms", 0) * 1e3)
        counts.append(len(s["kernels"]))
    n = len(steps)
    meta = t["meta"]
    print(f"{phase.capitalize()}-step kernel breakdown: `{meta['model']['file']}`, {meta['backend']} {meta['matmul_path']}, "
          f"{meta.get('device', '')}, commit {meta.get('commit', '?')}; mean over {n} {phase} steps with CUPTI records "
          f"(steps {', '.join(str(s['index']) for s in steps)}).\n")
    print(f"GPU span {statistics.mean(spans):.1f} µs/step, busy {statistics.mean(busy):.1f} µs, idle gaps "
          f"{statistics.mean(spans) - statistics.mean(busy):.1f} µs, {statistics.mean(counts):.0f} kernels/step "
          f"(CUPTI instruments the kernels it records: these times are slightly above untraced ones).\n")
    for title, table in (("kernel function", by_fn), ("node ops it computes", by_op)):
        total = sum(sum(v[0] for v in vs) for vs in table.values()) / n
        print(f"| {title} | µs/step | share | launches/step | µs/launch |")
        print("|---|---:|---:|---:|---:|")
        rows = sorted(table.items(), key=lambda kv: -sum(v[0] for v in kv[1]))
        for key, vs in rows:
            us = sum(v[0] for v in vs) / n
            launches = sum(v[1] for v in vs) / n
            print(f"| `{key}` | {us:.1f} | {100 * us / total:.1f} % | {launches:.0f} | {us / launches:.2f} |")
        print()
    # What each kernel adds to the step: from the previous kernel's end to its own (under PDL a
    # kernel starts early and waits, so its duration overstates it; the ends do not).
    adds = defaultdict(list)
    for s in steps:
        end = None
        for k in sorted(s["kernels"], key=lambda k: k["start_ns"] + k["duration_ns"]):
            e = k["start_ns"] + k["duration_ns"]
            if end is not None:
                adds[short(k["name"])].append((e - end) / 1e3)
            end = e
    print("| kernel function | µs/step from the previous end to its end | launches/step | µs each (median) |")
    print("|---|---:|---:|---:|")
    for key, v in sorted(adds.items(), key=lambda kv: -sum(kv[1])):
        print(f"| `{key}` | {sum(v) / n:.1f} | {len(v) / n:.0f} | {statistics.median(v):.2f} |")
    print()
    print("| idle gap between | and | µs/step |")
    print("|---|---|---:|")
    for (a, b), us in sorted(gaps.items(), key=lambda kv: -kv[1])[:8]:
        print(f"| `{a}` | `{b}` | {us / n:.1f} |")


if __name__ == "__main__":
    main()
