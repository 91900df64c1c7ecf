# Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#
# Debian's python3-redis (redis-py) beside corolock-bench, on the server given: redis-py's Lock
# (a Lua compare-and-delete release, no fencing token), uncontended at 1 worker on one
# connection, lease 10 s. redis-py is synchronous: more workers would need one connection each,
# which is not the single-connection figure corolock is measured on, so only 1 is run.
# Same JSON objects as node_peers.js. usage: python3 python_peers.py <host> <port> <seconds>
import json
import resource
import sys
import time

import redis


def server_cpu(client):
    info = client.info("cpu")
    return float(info["used_cpu_sys"]) + float(info["used_cpu_user"])


def own_cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main():
    host, port, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    client = redis.Redis(host=host, port=port)
    client.ping()
    lock = client.lock("peer:py:0", timeout=10)

    def cycle():
        t = time.perf_counter()
        if not lock.acquire(blocking=True):
            raise RuntimeError("acquire refused")
        wait = (time.perf_counter() - t) * 1e3
        lock.release()
        return wait

    end = time.perf_counter() + 0.5
    while time.perf_counter() < end:
        cycle()
    waits = []
    s0, c0, t0 = server_cpu(client), own_cpu(), time.perf_counter()
    end = t0 + seconds
    while time.perf_counter() < end:
        waits.append(cycle())
    t1, c1, s1 = time.perf_counter(), own_cpu(), server_cpu(client)
    n = len(waits)
    waits.sort()
    print(json.dumps({
        "peer": "redis-py Lock", "figure": "uncontended", "workers": 1,
        "per_s": n / (t1 - t0), "p99_ms": waits[min(n - 1, int(n * 0.99))] if n else None,
        "client_cpu_us": (c1 - c0) * 1e6 / n if n else None,
        "server_cpu_us": (s1 - s0) * 1e6 / n if n else None,
        "errors": 0, "first_error": ""}))


if __name__ == "__main__":
    main()
