#!/usr/bin/env python3
"""The paired trace on the GPU (issue 30 item 1), for scripts/device-check.sh's `paired` stage.

  paired_cost.py cost PRESET WEIGHTS TRACED.json PAIRED.json TRACED.err PAIRED.err [UNTRACED.err] >> summary
      per-token cost of a paired traced run (--compare-path) against an unpaired traced run of the
      same model, prompt and token count: the median decode step (`time_ms`, from the previous
      token to its own, the recorder's work on the run thread included), the prefill step, and
      the CLI's decode tokens/s; prints one summary line and, with --jsonl FILE, appends the JSON.
  paired_cost.py local TRACE [--jsonl FILE]
      MatMul/Logits node-steps with and without a local error (`cmp.local`), how many of them were
      rerun on the other path (local SQNR under 200 dB), the worst local and full SQNR.
Traces may be gzip'd (.gz).
"""
import gzip
import json
import re
import statistics
import sys


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def step_times(t):
    dec = [s["time_ms"] for s in t["steps"] if s["phase"] == "decode"]
    pre = [s["time_ms"] for s in t["steps"] if s["phase"] == "prefill"]
    return {
        "decode_steps": len(dec),
        "decode_ms_median": statistics.median(dec) if dec else None,
        "decode_ms_mean": statistics.mean(dec) if dec else None,
        "prefill_ms": pre[0] if pre else None,
    }


def cli_rates(err_path):
    """prefill and decode tokens/s from the CLI's last line on stderr."""
    try:
        text = open(err_path, errors="replace").read()
    except OSError:
        return {}
    m = re.findall(r"prefill: (\d+) tokens, ([\d.]+) tokens/s \| decode: (\d+) tokens, ([\d.]+) tokens/s", text)
    if not m:
        return {}
    pt, ps, dt, ds = m[-1]
    return {"prompt_tokens": int(pt), "prefill_tok_s": float(ps), "decode_tokens": int(dt), "decode_tok_s": float(ds)}


def local_coverage(t):
    graphs = {g["id"]: g for g in t["graphs"]}
    c = {"matmul_node_steps": 0, "with_local": 0, "without_local": 0, "rerun": 0,
         "worst_local_db": None, "worst_local_node": None, "worst_full_db": None}
    for s in t["steps"]:
        g = graphs[s["graph"]]
        for r in s["nodes"]:
            n = g["nodes"][r["id"]]
            if n["op"] not in ("matmul", "logits") or "stats" not in r:
                continue
            c["matmul_node_steps"] += 1
            cmp = r.get("cmp") or {}
            if "local" not in cmp:
                c["without_local"] += 1
                continue
            c["with_local"] += 1
            db = cmp["local"]["sqnr_db"]
            if db < 200:
                c["rerun"] += 1
            if c["worst_local_db"] is None or db < c["worst_local_db"]:
                c["worst_local_db"], c["worst_local_node"] = db, "step %d %s" % (s["index"], n["name"])
            if c["worst_full_db"] is None or cmp["sqnr_db"] < c["worst_full_db"]:
                c["worst_full_db"] = cmp["sqnr_db"]
    c["meta_local"] = t["meta"].get("compare", {}).get("local")
    return c


def fmt(x, spec="%.2f"):
    return "n/a" if x is None else spec % x


def main(argv):
    jsonl = None
    if "--jsonl" in argv:
        i = argv.index("--jsonl")
        jsonl = argv[i + 1]
        argv = argv[:i] + argv[i + 2:]
    if len(argv) >= 2 and argv[0] == "local":
        j = {"kind": "paired_local", "trace": argv[1], **local_coverage(load(argv[1]))}
        print("paired sample %s: %d matmul node-steps, %d with local error, %d without; %d rerun on the other path; "
              "worst local %s dB (%s), worst full %s dB; meta.compare.local=%s" % (
                  argv[1].rsplit("/", 1)[-1], j["matmul_node_steps"], j["with_local"], j["without_local"], j["rerun"],
                  fmt(j["worst_local_db"], "%.1f"), j["worst_local_node"], fmt(j["worst_full_db"], "%.1f"), j["meta_local"]))
    elif len(argv) >= 7 and argv[0] == "cost":
        preset, weights, traced_p, paired_p, traced_err, paired_err = argv[1:7]
        untraced_err = argv[7] if len(argv) > 7 else None
        traced, paired = load(traced_p), load(paired_p)
        a, b = step_times(traced), step_times(paired)
        ratio = lambda x, y: (x / y) if (x is not None and y) else None
        j = {"kind": "paired_cost", "preset": preset, "weights": weights, "traced": a, "paired": b,
             "decode_ratio": ratio(b["decode_ms_median"], a["decode_ms_median"]),
             "prefill_ratio": ratio(b["prefill_ms"], a["prefill_ms"]),
             "cli": {"traced": cli_rates(traced_err), "paired": cli_rates(paired_err)},
             "local": local_coverage(paired)}
        if untraced_err:
            j["cli"]["untraced"] = cli_rates(untraced_err)
        dec_cli = j["cli"]["untraced"].get("decode_tok_s") if untraced_err else None
        print("paired cost %s %s: decode step median %s ms traced, %s ms paired (x%s); prefill %s ms traced, %s ms paired (x%s); "
              "CLI decode %s tok/s traced, %s paired%s; local error on %d/%d matmul node-steps" % (
                  preset, weights, fmt(a["decode_ms_median"]), fmt(b["decode_ms_median"]), fmt(j["decode_ratio"]),
                  fmt(a["prefill_ms"]), fmt(b["prefill_ms"]), fmt(j["prefill_ratio"]),
                  fmt(j["cli"]["traced"].get("decode_tok_s"), "%.1f"), fmt(j["cli"]["paired"].get("decode_tok_s"), "%.1f"),
                  "" if dec_cli is None else ", %.1f untraced" % dec_cli,
                  j["local"]["with_local"], j["local"]["matmul_node_steps"]))
    else:
        sys.exit(__doc__)
    if jsonl:
        with open(jsonl, "a") as f:
            f.write(json.dumps(j) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
