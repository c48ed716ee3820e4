#!/usr/bin/env python3
"""Where a traced run's decode steps spend their time: medians over the decode steps of a trace
of time_ms (token to token), event_ms (GPU time between the step's events), host_ms (the host's
enqueue), gpu_ms and gpu_busy_ms (CUPTI steps only). Prints one JSON object.
  step_times.py TRACE"""
import gzip
import json
import statistics
import sys


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


steps = [s for s in load(sys.argv[1])["steps"] if s.get("phase") == "decode"]


def median(key):
    v = [s[key] for s in steps if isinstance(s.get(key), (int, float))]
    return round(statistics.median(v), 4) if v else None


print(json.dumps({k: median(k) for k in ("time_ms", "event_ms", "host_ms", "gpu_ms", "gpu_busy_ms")}))
