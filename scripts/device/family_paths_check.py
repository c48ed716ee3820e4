#!/usr/bin/env python3
"""Issue 27 on CUDA: --compare-path and --tokens-from for a model family, from minfer-trace diff's
JSON. Usage: family_paths_check.py paired PAIRED_DIFF.json | replay REPLAY_DIFF.json
paired: the paired trace's own diff (A = the default path, B = the --compare-path reference)
must have steps, a local error on some matmul node (worst_local) and finite SQNRs.
replay: the diff of a trace against its --tokens-from replay must see the same input tokens on
every step (inputs_agree), and as many steps on both sides.
Prints one line; exit 1 when the check fails."""
import json
import sys


def main():
    kind, path = sys.argv[1], sys.argv[2]
    d = json.load(open(path))
    steps = d.get("steps", [])
    if kind == "paired":
        wl = d.get("worst_local")
        ok = len(steps) > 1 and wl is not None
        print("paired: %d steps, worst local error %s, first divergent %s" % (
            len(steps), wl and "%.1f dB at %s step %s" % (wl.get("sqnr_db", float("nan")), wl.get("name"), wl.get("step")),
            (d.get("first_divergent") or {}).get("name")))
    else:
        agree = [s.get("inputs_agree") for s in steps]
        warn = d.get("warnings", [])
        ok = len(steps) > 1 and all(agree) and not any("step counts differ" in w for w in warn)
        print("replay: %d steps, inputs agree on %d, token agreement %s, warnings %s" % (
            len(steps), sum(1 for a in agree if a), d.get("token_agreement"), warn))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
