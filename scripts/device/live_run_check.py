#!/usr/bin/env python3
"""A live run end to end against a running minfer-viz (docs/live-runs.md), stdlib only.

  live_run_check.py URL --traces DIR [--backend cuda] [--report live-run.json] [...]

URL is the server's address (minfer-viz prints "serving http://127.0.0.1:PORT/"), DIR its first
--traces directory (where live runs are saved). In order:
  1. run A: POST /api/run, then GET /api/run/events?id=N read to its end ("done" / "error"),
     every event counted and timed (events per second while the run streams);
  2. run A's stream again after the run ended (the server replays its whole log): the same
     events byte for byte, and how fast they come when nothing waits on the engine;
  3. run B: a long run, a second POST /api/run while it runs (must be 409 busy), then
     POST /api/run/cancel after a few decode steps: B must end with "done" cancelled=true and
     its trace kept;
  4. run C right after B's "done": accepted (202, not busy) and run to its end.
Then each run's saved trace (.json or .json.gz) against its stream: the same steps, the same
sampled tokens, and for every (step, node) the streamed stats (min, max, mean, absmean, std,
count, nan, inf) against the trace's. The trace writes numbers with 6 significant digits
(recorder/json_out.h); the stream sends the trace's own node records (issue 28), so its numbers
are already rounded (older servers sent doubles in full): a streamed number is compared after the
same rounding ("%.6g"); a difference there is a mismatch, listed with both values.
A mismatch whose full-precision streamed value lies within a 1e-6 fraction of a last-digit
unit of the rounding boundary is a summation-order difference in the last bits (on cuda the
stream's stats come from a host copy, the trace's from the device summaries, both summing in
double): counted apart as "boundary". Any other mismatch fails the check.

Writes a JSON report (--report) and a short summary on stdout. Exit status: 0 when every
check passed, 1 when one failed, 2 when the server could not be used at all.
"""
import argparse
import gzip
import http.client
import json
import math
import os
import sys
import time
import urllib.parse

STAT_FLOATS = ("min", "max", "mean", "absmean", "std")
STAT_INTS = ("count", "nan", "inf")


class Server:
    def __init__(self, url, timeout):
        u = urllib.parse.urlsplit(url if "://" in url else "http://" + url)
        if u.scheme != "http":
            raise SystemExit("live_run_check: only http:// servers (got %r)" % url)
        self.host, self.port = u.hostname, u.port or 80
        self.timeout = timeout

    def conn(self):
        return http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)

    def request(self, method, path, body=None):
        """(status, parsed JSON or text) of one request. A script sends no Origin, so the
        server's request guard (viz-server/request_guard.h) lets the POSTs pass; POST /api/run
        must say Content-Type: application/json (415 otherwise)."""
        c = self.conn()
        headers = {"Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        c.request(method, path, body=data, headers=headers)
        r = c.getresponse()
        raw = r.read()
        c.close()
        try:
            return r.status, json.loads(raw)
        except ValueError:
            return r.status, raw.decode("utf-8", "replace")

    def events(self, run_id, on_event=None):
        """Reads GET /api/run/events?id=N to its end. Returns a dict: events [(type, data
        text)], times (seconds since the request, per event), pings, bytes, status."""
        c = self.conn()
        t0 = time.perf_counter()
        c.request("GET", "/api/run/events?id=%d" % run_id, headers={"Accept": "text/event-stream"})
        r = c.getresponse()
        out = {"status": r.status, "events": [], "times": [], "pings": 0, "bytes": 0,
               "content_type": r.getheader("Content-Type")}
        if r.status != 200:
            out["error"] = r.read().decode("utf-8", "replace")
            c.close()
            return out
        etype, data = None, []
        while True:
            line = r.readline()
            if not line:
                break  # the server closed the stream (it does after "done" / "error")
            out["bytes"] += len(line)
            line = line.decode("utf-8").rstrip("\r\n")
            if line == "":
                if etype is not None or data:
                    text = "\n".join(data)
                    out["events"].append((etype or "message", text))
                    out["times"].append(time.perf_counter() - t0)
                    if on_event:
                        on_event(etype, text)
                    if etype in ("done", "error"):
                        break
                etype, data = None, []
            elif line.startswith(":"):
                out["pings"] += 1
            elif line.startswith("event:"):
                etype = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:][1:] if line[5:6] == " " else line[5:])
            if time.perf_counter() - t0 > self.timeout:
                out["error"] = "stream still open after %d s" % self.timeout
                break
        c.close()
        out["seconds"] = time.perf_counter() - t0
        return out


def rate(stream):
    """Events, seconds and events per second of a stream: from the first event to the last
    (the wait for the model to load and the first step to finish is not the stream's)."""
    ev, ts = stream["events"], stream["times"]
    counts = {}
    for t, _ in ev:
        counts[t] = counts.get(t, 0) + 1
    span = ts[-1] - ts[0] if len(ts) > 1 else 0.0
    return {
        "events": len(ev),
        "by_type": counts,
        "bytes": stream["bytes"],
        "pings": stream["pings"],
        "first_event_s": round(ts[0], 4) if ts else None,
        "span_s": round(span, 4),
        "request_to_end_s": round(stream.get("seconds", 0.0), 4),
        "events_per_s": round(len(ev) / span, 1) if span > 0 else None,
        "node_events_per_s": round(counts.get("node", 0) / span, 1) if span > 0 else None,
        "mb_per_s": round(stream["bytes"] / span / 1e6, 2) if span > 0 else None,
    }


def last_event(stream):
    for t, d in reversed(stream["events"]):
        if t in ("done", "error"):
            return t, json.loads(d)
    return None, None


def first_event(stream, kind):
    for t, d in stream["events"]:
        if t == kind:
            return json.loads(d)
    return None


def load_trace(path):
    with open(path, "rb") as f:
        head = f.read(2)
    opener = gzip.open if head == b"\x1f\x8b" else open
    with opener(path, "rb") as f:
        return json.load(f)


def find_trace(traces_dir, name):
    for cand in (name, name + ".gz", name[:-3] if name.endswith(".gz") else None):
        if cand and os.path.isfile(os.path.join(traces_dir, cand)):
            return os.path.join(traces_dir, cand)
    return None


def round6(x):
    return float("%.6g" % x)


def unit6(x):
    """One unit in the 6th significant digit of x."""
    if x == 0:
        return 0.0
    return 10.0 ** (math.floor(math.log10(abs(x))) - 5)


def compare_run(stream, trace, max_listed=40):
    """The stream's steps, tokens and node stats against the saved trace's."""
    res = {"steps_stream": 0, "steps_trace": len(trace.get("steps", [])), "nodes_compared": 0,
           "numbers_compared": 0, "exact_equal_full_precision": 0, "mismatches": 0, "boundary": 0,
           "stream_only": 0, "trace_only": 0, "trace_only_no_output": {}, "no_output_agree": 0,
           "tokens_equal": True, "token_mismatches": [], "listed": []}

    def note(kind, **kw):
        if len(res["listed"]) < max_listed:
            res["listed"].append(dict(kind=kind, **kw))

    s_nodes, s_tokens, s_steps = {}, {}, []
    for t, d in stream["events"]:
        if t == "node":
            j = json.loads(d)
            s_nodes[(j["step"], j["id"])] = j
        elif t == "token":
            j = json.loads(d)
            s_tokens[j["step"]] = j["id"]
        elif t == "step":
            s_steps.append(json.loads(d)["step"])
    res["steps_stream"] = len(s_steps)
    t_nodes, t_tokens = {}, {}
    skipped_steps = 0
    for st in trace.get("steps", []):
        k = st["index"]
        if st.get("nodes_skipped"):
            skipped_steps += 1
        for n in st.get("nodes", []):
            t_nodes[(k, n["id"])] = n
        lg = st.get("logits")
        if isinstance(lg, dict) and "chosen" in lg:
            t_tokens[k] = lg["chosen"]
    res["trace_steps_without_nodes"] = skipped_steps
    t_steps = [st["index"] for st in trace.get("steps", [])]
    res["steps_equal"] = s_steps == t_steps
    if not res["steps_equal"]:
        note("steps differ", stream=s_steps[:20], trace=t_steps[:20])
    for k in sorted(set(s_tokens) | set(t_tokens)):
        if s_tokens.get(k) != t_tokens.get(k):
            res["tokens_equal"] = False
            if len(res["token_mismatches"]) < 20:
                res["token_mismatches"].append({"step": k, "stream": s_tokens.get(k), "trace": t_tokens.get(k)})

    for key in sorted(set(s_nodes) | set(t_nodes)):
        s, t = s_nodes.get(key), t_nodes.get(key)
        step, nid = key
        if t is None:
            res["stream_only"] += 1
            note("only in the stream", step=step, id=nid, stream=s)
            continue
        if s is None:
            if "no_output" in t:  # e.g. fused-away nodes the executor never reports
                r = str(t["no_output"])
                res["trace_only_no_output"][r] = res["trace_only_no_output"].get(r, 0) + 1
            else:
                res["trace_only"] += 1
                note("only in the trace", step=step, id=nid)
            continue
        s_has, t_has = "stats" in s, "stats" in t
        if not s_has and not t_has:
            res["no_output_agree"] += 1
            continue
        if s_has != t_has:
            res["mismatches"] += 1
            note("stats on one side only", step=step, id=nid, stream=s.get("stats", s.get("no_output")),
                 trace=t.get("stats", t.get("no_output")))
            continue
        res["nodes_compared"] += 1
        ss, ts = s["stats"], t["stats"]
        for f in STAT_INTS:
            res["numbers_compared"] += 1
            if ss.get(f) != ts.get(f):
                res["mismatches"] += 1
                note("differs", step=step, id=nid, field=f, stream=ss.get(f), trace=ts.get(f))
            else:
                res["exact_equal_full_precision"] += 1
        for f in STAT_FLOATS:
            res["numbers_compared"] += 1
            a, b = ss.get(f), ts.get(f)
            if a is None or b is None:
                if a is None and b is None:
                    res["exact_equal_full_precision"] += 1
                else:
                    res["mismatches"] += 1
                    note("differs", step=step, id=nid, field=f, stream=a, trace=b)
                continue
            if a == b:
                res["exact_equal_full_precision"] += 1
            if round6(a) == b:
                continue
            u = unit6(b) or unit6(a)
            if u and abs(abs(a - b) - 0.5 * u) <= 1e-6 * u:
                res["boundary"] += 1
                note("boundary (last-bits difference at a rounding boundary)", step=step, id=nid, field=f,
                     stream=a, trace=b)
            else:
                res["mismatches"] += 1
                note("differs", step=step, id=nid, field=f, stream=a, stream_rounded=round6(a), trace=b,
                     rel=abs(a - b) / max(abs(b), 1e-300))
    whole = res["steps_equal"] and res["stream_only"] == 0 and res["trace_only"] == 0 and res["nodes_compared"] > 0
    res["stats_equal"] = whole and res["mismatches"] == 0 and res["boundary"] == 0
    res["stats_equal_at_trace_precision"] = whole and res["mismatches"] == 0
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("url", help="minfer-viz address, e.g. http://127.0.0.1:8080/")
    ap.add_argument("--traces", required=True, help="the server's first --traces directory (where live runs are saved)")
    ap.add_argument("--model", default="", help="model file name as the server lists it (default: the only / first one)")
    ap.add_argument("--backend", default="auto", choices=("auto", "cpu", "cuda"))
    ap.add_argument("--matmul-path", default="mmq", choices=("mmq", "f16", "f32"))
    ap.add_argument("--prompt", default="Why is the sky blue? Explain briefly.")
    ap.add_argument("--max-tokens", type=int, default=32, help="tokens of runs A and C")
    ap.add_argument("--cancel-max-tokens", type=int, default=0,
                    help="tokens asked of run B, the cancelled one (default 512, fewer when the context is smaller: "
                         "a cancel that did not work ends there, its trace ~0.5 MB per 0.5b decode step)")
    ap.add_argument("--cancel-after", type=int, default=4, help="decode steps of run B streamed before the cancel")
    ap.add_argument("--temperature", type=float, default=None, help="(default: the server's)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=600, help="seconds a request or a whole stream may take")
    ap.add_argument("--report", default="live-run.json")
    a = ap.parse_args()

    srv = Server(a.url, a.timeout)
    report = {"url": a.url, "backend_requested": a.backend, "matmul_path": a.matmul_path, "checks": {}, "runs": {}}
    checks = report["checks"]

    def finish(code, why=None):
        report["ok"] = code == 0
        if why:
            report.setdefault("failed", []).append(why)
            print("live run check: FAIL (%s)" % why)
        with open(a.report, "w") as f:
            json.dump(report, f, indent=1)
        return code

    try:
        st, models = srv.request("GET", "/api/run/models")
    except OSError as e:
        report["error"] = "cannot reach the server: %s" % e
        return finish(2, report["error"])
    if st != 200 or not isinstance(models, dict) or not models.get("enabled"):
        report["error"] = "live runs are off: %s" % (models,)
        return finish(2, report["error"])
    names = [m["name"] for m in models.get("models", [])]
    model = a.model or (names[0] if names else "")
    report["model"] = model
    if models.get("busy"):
        report["error"] = "the server is busy with run %s" % models.get("run")
        return finish(2, report["error"])

    def body(max_tokens):
        b = {"model": model, "prompt": a.prompt, "max_tokens": max_tokens, "backend": a.backend,
             "matmul_path": a.matmul_path, "seed": a.seed}
        if a.temperature is not None:
            b["temperature"] = a.temperature
        return b

    def start(max_tokens, label):
        t0 = time.perf_counter()
        st, j = srv.request("POST", "/api/run", body(max_tokens))
        report["runs"].setdefault(label, {})["start"] = {"status": st, "answer": j, "s": round(time.perf_counter() - t0, 4)}
        if st != 202:
            print("live_run_check: run %s: POST /api/run answered %d: %s" % (label, st, j))
            return None
        return j

    def run_summary(label, stream):
        r = report["runs"].setdefault(label, {})
        r["stream"] = rate(stream)
        if stream.get("error"):
            r["stream"]["error"] = stream["error"]
        s = first_event(stream, "start") or {}
        r["backend"], r["device"] = s.get("backend"), s.get("device")
        r["prompt_tokens"] = s.get("prompt_tokens")
        kind, last = last_event(stream)
        r["end"] = kind
        if last is not None:
            r["done"] = {k: last.get(k) for k in ("trace", "cancelled", "steps", "generated", "prefill_tok_s",
                                                   "decode_tok_s", "message")}
        return kind, last, s

    # 1. Run A, streamed live.
    ja = start(a.max_tokens, "A")
    if ja is None:
        return finish(1, "run A did not start")
    sa = srv.events(ja["id"])
    kind, done_a, start_a = run_summary("A", sa)
    checks["run_completed"] = kind == "done" and not done_a.get("cancelled") and done_a.get("trace") is not None
    be = start_a.get("backend")
    checks["backend_as_requested"] = a.backend == "auto" or be == a.backend
    # 2. Its replay (the run is over: the server sends its whole log at once).
    sr = srv.events(ja["id"])
    report["runs"]["A"]["replay"] = rate(sr)
    checks["replay_identical"] = sr["events"] == sa["events"]

    # 3. Run B: busy while it runs, then cancelled.
    n_ctx = ((start_a.get("meta") or {}).get("model") or {}).get("hparams", {}).get("n_ctx", 0)
    ptoks = start_a.get("prompt_tokens") or 0
    cancel_max = a.cancel_max_tokens or max(1, min(512, (n_ctx or 4096) - ptoks - 1))
    report["runs"]["B"] = {"max_tokens": cancel_max, "cancel_after_decode_steps": a.cancel_after}
    jb = start(cancel_max, "B")
    if jb is None:
        return finish(1, "run B did not start")
    state = {"decode_ends": 0, "busy": None, "cancel": None, "cancel_at_step": None}

    def on_b(etype, text):
        if etype == "step_end":
            step = json.loads(text)["step"]
            if step > 0:
                state["decode_ends"] += 1
            if state["busy"] is None:  # a second start while B runs
                st, j = srv.request("POST", "/api/run", body(1))
                state["busy"] = {"status": st, "answer": j}
            if state["cancel"] is None and state["decode_ends"] >= a.cancel_after:
                t0 = time.perf_counter()
                st, j = srv.request("POST", "/api/run/cancel")
                state["cancel"] = {"status": st, "answer": j, "s": round(time.perf_counter() - t0, 4)}
                state["cancel_at_step"] = step

    sb = srv.events(jb["id"], on_b)
    kind_b, done_b, _ = run_summary("B", sb)
    report["runs"]["B"].update({"busy_answer": state["busy"], "cancel_answer": state["cancel"],
                                "cancel_sent_after_step": state["cancel_at_step"]})
    checks["busy_is_409"] = bool(state["busy"]) and state["busy"]["status"] == 409
    checks["cancel_ok"] = (bool(state["cancel"]) and state["cancel"]["status"] == 200
                           and state["cancel"]["answer"].get("cancelled") is True
                           and kind_b == "done" and done_b.get("cancelled") is True
                           and done_b.get("generated", cancel_max) < cancel_max
                           and done_b.get("trace") is not None)
    if done_b is not None and state["cancel_at_step"] is not None:
        # steps after the one whose end the client saw when it sent the cancel
        report["runs"]["B"]["steps_after_cancel_sent"] = done_b.get("steps", 0) - 1 - state["cancel_at_step"]

    # 4. Run C, started as soon as B's "done" arrived.
    jc = start(a.max_tokens, "C")
    checks["second_run_accepted"] = jc is not None
    if jc is not None:
        sc = srv.events(jc["id"])
        kind_c, done_c, _ = run_summary("C", sc)
        checks["second_run_ok"] = kind_c == "done" and not done_c.get("cancelled") and done_c.get("trace") is not None
    else:
        sc, done_c, checks["second_run_ok"] = None, None, False

    # 5. Streams against the saved traces.
    all_equal, all_precision, all_tokens = True, True, True
    for label, stream, done in (("A", sa, done_a), ("B", sb, done_b), ("C", sc, done_c)):
        if stream is None or not done or not done.get("trace"):
            continue
        path = find_trace(a.traces, done["trace"])
        r = report["runs"][label]
        if path is None:
            r["compare"] = {"error": "trace %s not found in %s" % (done["trace"], a.traces)}
            all_equal = all_precision = all_tokens = False
            continue
        tr = load_trace(path)
        c = compare_run(stream, tr)
        c["trace_file"] = os.path.basename(path)
        c["trace_bytes"] = os.path.getsize(path)
        c["trace_backend"] = tr.get("meta", {}).get("backend")
        c["trace_summaries"] = tr.get("meta", {}).get("summaries")
        r["compare"] = c
        all_equal &= c["stats_equal"]
        all_precision &= c["stats_equal_at_trace_precision"]
        all_tokens &= c["tokens_equal"]
    checks["stats_equal"] = all_equal
    checks["stats_equal_at_trace_precision"] = all_precision
    checks["tokens_equal"] = all_tokens

    # What fails the check: everything but the last-bits rounding-boundary cases.
    must = [k for k in checks if k != "stats_equal"]
    failed = [k for k in must if not checks[k]]
    report["failed"] = failed

    ra = report["runs"]["A"]
    print("live run check: %s, backend %s (%s), model %s" % (a.url, be, start_a.get("device"), model))
    print("  run A: %d events in %.2f s of stream: %s events/s (%s node events/s, %s MB/s); replay %s events/s; %s" % (
        ra["stream"]["events"], ra["stream"]["span_s"], ra["stream"]["events_per_s"], ra["stream"]["node_events_per_s"],
        ra["stream"]["mb_per_s"], ra["replay"]["events_per_s"],
        "decode %.1f tok/s" % (done_a.get("decode_tok_s") or 0) if done_a else ""))
    rb = report["runs"]["B"]
    print("  run B: busy answer %s, cancel %s after step %s -> %s steps, cancelled=%s" % (
        (state["busy"] or {}).get("status"), (state["cancel"] or {}).get("answer"), state["cancel_at_step"],
        (done_b or {}).get("steps"), (done_b or {}).get("cancelled")))
    if jc is not None:
        rc = report["runs"]["C"]
        print("  run C: accepted right after B; %s, %d events, %s events/s" % (
            rc.get("end"), rc["stream"]["events"], rc["stream"]["events_per_s"]))
    for label in ("A", "B", "C"):
        c = report["runs"].get(label, {}).get("compare")
        if not c:
            continue
        if "error" in c:
            print("  trace %s: %s" % (label, c["error"]))
            continue
        print("  trace %s (%s, %d bytes): %d steps, %d nodes, %d numbers: %d mismatches, %d boundary, "
              "%d exact at full precision; stream-only %d, trace-only %d %s; tokens %s" % (
                  label, c["trace_file"], c["trace_bytes"], c["steps_trace"], c["nodes_compared"], c["numbers_compared"],
                  c["mismatches"], c["boundary"], c["exact_equal_full_precision"], c["stream_only"], c["trace_only"],
                  c["trace_only_no_output"] or "", "equal" if c["tokens_equal"] else "DIFFER"))
        for m in c["listed"][:5]:
            print("    " + json.dumps(m))
    print("  checks: " + " ".join("%s=%s" % (k, "ok" if v else "FAIL") for k, v in checks.items()))
    print("live run check: %s" % ("PASS" if not failed else "FAIL (" + ", ".join(failed) + ")"))
    return finish(0 if not failed else 1)


if __name__ == "__main__":
    sys.exit(main())
