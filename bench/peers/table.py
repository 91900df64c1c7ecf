# Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#
# The table of one sitting (run.sh): corolock's figures from corolock-bench's JSON lines, and
# every peer's from node_peers.js and python_peers.py, side by side. usage: table.py <dir>
import json
import os
import sys

out = sys.argv[1]


def load(name):
    path = os.path.join(out, name)
    if not os.path.exists(path):
        return {}
    lines = [l for l in open(path) if l.startswith("{")]
    return json.loads(lines[-1]) if lines else {}


lock, sync, rate = load("lock.json"), load("sync.json"), load("rate.json")
rows = []


def row(peer, figure, workers, per_s, p99_ms=None, client=None, server=None):
    if per_s is not None:
        rows.append((figure, workers, peer, per_s, p99_ms, client, server))


for n in (1, 50, 256):
    p = "uncontended_%d_" % n
    row("corolock mutex", "uncontended", n, lock.get(p + "cycles_per_s"), None,
        lock.get(p + "client_cpu_us_per_cycle"), lock.get(p + "server_cpu_us_per_cycle"))
    row("cheapest safe cycle (SET NX PX + Lua delete)", "uncontended", n,
        lock.get(p + "cheapest_cycles_per_s"), None, None,
        lock.get(p + "cheapest_server_cpu_us_per_cycle"))
for h in (0, 1):
    p = "contended_hold%dms_" % h
    us = lock.get(p + "wait_p99_us")
    row("corolock mutex", "contended hold %d ms" % h, 50, lock.get(p + "cycles_per_s"),
        us / 1000 if us is not None else None)
row("corolock semaphore(5)", "contended hold 1 ms", 50, sync.get("semaphore_cycles_per_s"))
row("corolock fair_mutex", "contended hold 1 ms (2 connections)", 50,
    sync.get("fair_cycles_per_s"), sync.get("fair_wait_p99_ms"))
for n in (1, 64):
    row("corolock rate_limiter", "consume", n, rate.get("c%d_calls_per_s" % n), None,
        rate.get("c%d_cpu_us_per_call" % n))

skipped = []
for name in ("node.jsonl", "python.jsonl"):
    path = os.path.join(out, name)
    if not os.path.exists(path):
        continue
    for line in open(path):
        if line.startswith("{"):
            r = json.loads(line)
            row(r["peer"], r["figure"], r["workers"], r["per_s"], r["p99_ms"], r["client_cpu_us"],
                r["server_cpu_us"])
for name in ("skipped.txt",):
    path = os.path.join(out, name)
    if os.path.exists(path):
        skipped = [l.strip() for l in open(path) if l.strip()]


def show(v, digits):
    return "—" if v is None else ("%.*f" % (digits, v))


order = {}
for r in rows:
    order.setdefault((r[0], r[1]), len(order))
rows.sort(key=lambda r: order[(r[0], r[1])])
print("| figure | workers | implementation | per s | p99 acquire ms | client CPU us | server CPU us |")
print("|---|---|---|---|---|---|---|")
for figure, workers, peer, per_s, p99, client, server in rows:
    print("| %s | %d | %s | %s | %s | %s | %s |" % (figure, workers, peer, show(per_s, 0),
                                                  show(p99, 2), show(client, 1), show(server, 1)))
for s in skipped:
    print("\nskipped: " + s)
