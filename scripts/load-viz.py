#!/usr/bin/env python3
"""Load run against a running minfer-viz: many clients, clients that drop mid-download, and
slow clients that trickle their request head, while a prober times /api/health.

    build/bin/minfer-viz --traces traces --port 8931 &
    scripts/load-viz.py --port 8931 --seconds 60 --clients 50 --dropping 10 --slow 20

Prints one JSON object: requests per route and status, errors, and the health latencies
(median, p99, worst). Exit 1 when a request failed or health went unanswered for 5 s.
"""
import argparse
import http.client
import json
import random
import socket
import statistics
import threading
import time
import urllib.request


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8080)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--dropping", type=int, default=10)
    ap.add_argument("--slow", type=int, default=20)
    ap.add_argument("--slow-interval", type=float, default=2.0, help="seconds between a slow client's bytes")
    args = ap.parse_args()

    base = f"http://{args.host}:{args.port}"
    with urllib.request.urlopen(base + "/api/traces", timeout=30) as r:
        traces = [t["name"] for t in json.load(r) if "error" not in t]
    if not traces:
        raise SystemExit("load-viz: the server lists no readable trace")
    pairs = [(a, b) for a in traces for b in traces if a < b] or [(traces[0], traces[0])]

    stop = threading.Event()
    lock = threading.Lock()
    counts, errors, health_ms = {}, [], []

    def count(route, status):
        with lock:
            counts[f"{route} {status}"] = counts.get(f"{route} {status}", 0) + 1

    def client(seed):
        rng = random.Random(seed)
        conn = http.client.HTTPConnection(args.host, args.port, timeout=30)
        while not stop.is_set():
            pick = rng.random()
            if pick < 0.35:
                route, path, headers = "trace", f"/api/traces/{rng.choice(traces)}", {"Accept-Encoding": rng.choice(["gzip", "identity"])}
            elif pick < 0.6:
                route, path, headers = "list", "/api/traces", {}
            elif pick < 0.8:
                a, b = rng.choice(pairs)
                route, path, headers = "compare", f"/api/compare?a={a}&b={b}", {"Accept-Encoding": "gzip"}
            else:
                route, path, headers = "health", "/api/health", {}
            try:
                conn.request("GET", path, headers=headers)
                r = conn.getresponse()
                r.read()
                count(route, r.status)
                if r.status >= 500:
                    with lock:
                        errors.append(f"{path}: {r.status}")
            except Exception as e:  # noqa: BLE001 - every failure is reported
                with lock:
                    errors.append(f"{path}: {e!r}")
                conn.close()
                conn = http.client.HTTPConnection(args.host, args.port, timeout=30)

    def dropping(seed):
        rng = random.Random(seed)
        while not stop.is_set():
            try:
                s = socket.create_connection((args.host, args.port), timeout=10)
                s.sendall(f"GET /api/traces/{rng.choice(traces)} HTTP/1.1\r\nHost: x\r\n"
                          f"Accept-Encoding: {rng.choice(['gzip', 'identity'])}\r\n\r\n".encode())
                s.recv(rng.choice([1, 1000, 30000]))
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                s.close()  # RST mid-download
                count("dropped", "-")
            except OSError as e:
                with lock:
                    errors.append(f"dropping client: {e!r}")
            time.sleep(0.05)

    def slow(_):
        head = b"GET /api/traces HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 1000 + b"\r\n\r\n"
        while not stop.is_set():
            try:
                s = socket.create_connection((args.host, args.port), timeout=10)
                for byte in head:
                    if stop.is_set():
                        break
                    s.send(bytes([byte]))
                    stop.wait(args.slow_interval)
                s.close()
            except OSError:
                count("slow", "closed by server")  # expected once the read timeout fires
                stop.wait(args.slow_interval)

    def prober():
        conn = http.client.HTTPConnection(args.host, args.port, timeout=5)
        while not stop.is_set():
            t0 = time.perf_counter()
            try:
                conn.request("GET", "/api/health")
                r = conn.getresponse()
                r.read()
                ms = (time.perf_counter() - t0) * 1e3
                with lock:
                    health_ms.append(ms)
            except Exception as e:  # noqa: BLE001
                with lock:
                    errors.append(f"health probe: {e!r}")
                    health_ms.append((time.perf_counter() - t0) * 1e3)
                conn.close()
                conn = http.client.HTTPConnection(args.host, args.port, timeout=5)
            stop.wait(0.1)

    threads = [threading.Thread(target=slow, args=(i,)) for i in range(args.slow)]
    threads += [threading.Thread(target=client, args=(i,)) for i in range(args.clients)]
    threads += [threading.Thread(target=dropping, args=(1000 + i,)) for i in range(args.dropping)]
    threads.append(threading.Thread(target=prober))
    for t in threads:
        t.daemon = True
        t.start()
    time.sleep(args.seconds)
    stop.set()
    for t in threads:
        t.join(timeout=10)

    q = sorted(health_ms)
    result = {
        "seconds": args.seconds, "clients": args.clients, "dropping": args.dropping, "slow": args.slow,
        "requests": dict(sorted(counts.items())),
        "requests_total": sum(v for k, v in counts.items() if not k.startswith(("dropped", "slow"))),
        "errors": len(errors), "first_errors": errors[:10],
        "health_probes": len(q),
        "health_ms": {"median": round(statistics.median(q), 2) if q else None,
                      "p99": round(q[int(0.99 * (len(q) - 1))], 2) if q else None,
                      "worst": round(q[-1], 2) if q else None},
    }
    print(json.dumps(result, indent=1))
    return 1 if errors or not q or q[-1] > 5000 else 0


if __name__ == "__main__":
    raise SystemExit(main())
