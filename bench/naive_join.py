#!/usr/bin/env python3
"""The throw-away join a user would otherwise write (the seed's approach):
load the requests and writes JSON Lines, take the produce requests at or
above the p99, and for each find the writes to its partitions that
overlapped it, calling it a slow write when the longest covers half its
latency. It does a fraction of what kscope explain does (no lock waits,
connection queues, journal roots, message ids or stalls); it is here to
time the same inputs side by side. Usage: naive_join.py DIR"""
import bisect
import json
import sys
from collections import defaultdict
from datetime import datetime


def ns(ts):
    # RFC 3339 with nanoseconds and Z: Python's fromisoformat keeps 6 digits.
    base, _, frac = ts.rstrip("Z").partition(".")
    sec = datetime.fromisoformat(base + "+00:00").timestamp()
    return int(sec) * 1_000_000_000 + int((frac + "000000000")[:9])


def main(d):
    writes = defaultdict(list)
    with open(d + "/writes.jsonl") as f:
        for line in f:
            w = json.loads(line)
            if w.get("op") in ("write", "pwrite64", "writev", "pwritev", "pwritev2") and w.get("topic"):
                writes[(w["topic"], w["partition"])].append((ns(w["start"]), ns(w["end"])))
    for v in writes.values():
        v.sort()
    reqs = []
    with open(d + "/requests.jsonl") as f:
        for line in f:
            r = json.loads(line)
            if r["api_key"] == 0 and r["answered"]:
                reqs.append(r)
    lats = sorted(r["latency_ms"] for r in reqs)
    p99 = lats[max(0, -(-len(lats) * 99 // 100) - 1)]
    slow = [r for r in reqs if r["latency_ms"] >= p99]
    causes = defaultdict(int)
    for r in slow:
        a, e = ns(r["arrival"]), ns(r["end"])
        best = 0
        for p in r.get("partitions", []):
            ws = writes.get((p["topic"], p["partition"]), [])
            i = bisect.bisect_left(ws, (a - 10_000_000_000, 0))
            for s, t in ws[i:]:
                if s >= e:
                    break
                if t > a:
                    best = max(best, min(t, e) - max(s, a))
        causes["slow-write" if best * 2 >= e - a else "other"] += 1
    print(f"{len(reqs)} produce requests, p99 {p99:.1f} ms, {len(slow)} slow: {dict(causes)}")


if __name__ == "__main__":
    main(sys.argv[1])
