#!/usr/bin/env python3
"""Markdown table of `minfer-trace diff --json` files (CUDA vs CPU traces of one prompt):
per file, the prefill and decode steps with identical inputs, the worst and median node SQNR and
cosine, the first node under 30 dB, and greedy token agreement.
Usage: diff_table.py diff-PRESET-WEIGHTS-PATH.json ...  (writes markdown to stdout)"""
import json
import os
import statistics
import sys

print("| model | weights | prefill path | steps (same inputs) | token agreement | min SQNR dB (node) | median SQNR dB | min cosine | first node < 30 dB |")
print("|---|---|---|---|---|---|---|---|---|")
for path in sys.argv[1:]:
    d = json.load(open(path))
    name = os.path.basename(path)[len("diff-"):-len(".json")]
    # Presets carry dashes (qwen2.5-0.5b, llama-3.2-1b), weight and path names do not.
    preset, weights, mpath = name.rsplit("-", 2)
    sq, cos, worst = [], [], (1e9, "-")
    same = 0
    for s in d["steps"]:
        # Separate runs: once one side sampled another token, every later step sees other
        # inputs (its token or the KV cache), so only the steps before the first differing
        # input are compared.
        if not s.get("inputs_agree", True):
            break
        same += 1
        for n in s["nodes"]:
            if isinstance(n.get("sqnr_db"), (int, float)):
                sq.append(n["sqnr_db"])
                if n["sqnr_db"] < worst[0]:
                    worst = (n["sqnr_db"], "%s@%d" % (n["name"], s["index"]))
            if isinstance(n.get("cosine"), (int, float)):
                cos.append(n["cosine"])
    fd = d.get("first_divergent")
    if fd and fd["step"] >= same:
        fd = None  # named from a step whose inputs differ: not a divergence of the kernels
    fds = "none" if not fd else "%s @ step %d (%.1f dB)" % (fd["name"], fd["step"], fd["sqnr_db"] if fd.get("sqnr_db") is not None else float("nan"))
    print("| %s | %s | %s | %d of %d | %.2f | %.1f (%s) | %.1f | %.6f | %s |" % (
        preset, weights, mpath, same, len(d["steps"]), d.get("token_agreement") or 0,
        worst[0] if sq else float("nan"), worst[1], statistics.median(sq) if sq else float("nan"),
        min(cos) if cos else float("nan"), fds))
