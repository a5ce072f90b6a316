"""Probe latency of a server thread while another thread computes: CPython's switch interval at 5 ms
(its default) against the secure server's 1 ms (``scheduler.kube.serving.server.SWITCH_INTERVAL``).

    python -m bench.switch_interval [--probes 200] [--rounds 3]

The scheduler answers ``/healthz`` and ``/metrics`` on a thread of its own while its scheduling
thread runs pure Python; each time the server thread wants the GIL it waits up to one switch
interval. Here one thread serves ``GET /healthz`` over TLS (the secure server's own TLS context)
and the main thread spins in pure Python; a child process probes as a kubelet does (a new connection
and handshake per probe). Rounds alternate the two intervals; prints p50/p99/max per round, the
medians, and the computing thread's work per second (what more switches cost it).
"""

from __future__ import annotations

import argparse
import asyncio
import ssl
import statistics
import subprocess
import sys
import threading
import time

from aiohttp import web

from scheduler.kube.serving.server import SWITCH_INTERVAL, serving_ssl_context

CPYTHON_DEFAULT = 0.005

_PROBE = """
import ssl, sys, time, http.client
ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
port, probes = int(sys.argv[1]), int(sys.argv[2])
for _ in range(probes):
    started = time.perf_counter()
    conn = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=10)
    conn.request("GET", "/healthz"); conn.getresponse().read(); conn.close()
    print(time.perf_counter() - started, flush=True)
    time.sleep(0.02)
"""


def _serve(context: ssl.SSLContext, ready: threading.Event, port: list[int], stop: threading.Event) -> None:
    async def healthz(_request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def main() -> None:
        app = web.Application()
        app.router.add_get("/healthz", healthz)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
        await site.start()
        port.append(runner.addresses[0][1])
        ready.set()
        while not stop.is_set():
            await asyncio.sleep(0.05)
        await runner.cleanup()

    asyncio.run(main())


def _round(interval: float, port: int, probes: int) -> tuple[list[float], float]:
    """Probe latencies while the main thread computes, and the main thread's work per second."""
    sys.setswitchinterval(interval)
    child = subprocess.Popen([sys.executable, "-c", _PROBE, str(port), str(probes)], stdout=subprocess.PIPE, text=True)
    work, started = 0, time.perf_counter()
    while child.poll() is None:
        table = {i: i * i for i in range(2000)}  # pure Python: holds the GIL between switch requests
        work += sum(table.values()) > 0
    elapsed = time.perf_counter() - started
    assert child.stdout is not None
    latencies = [float(line) for line in child.stdout.read().split()]
    return latencies, work / elapsed


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.switch_interval", description=__doc__)
    parser.add_argument("--probes", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    ready, stop, port = threading.Event(), threading.Event(), []
    context = serving_ssl_context(None, None, "127.0.0.1")
    server = threading.Thread(target=_serve, args=(context, ready, port, stop), daemon=True)
    server.start()
    ready.wait(30)
    rows: dict[float, list[tuple[float, float, float, float]]] = {CPYTHON_DEFAULT: [], SWITCH_INTERVAL: []}
    for r in range(args.rounds):
        for interval, got in rows.items():
            latencies, work = _round(interval, port[0], args.probes)
            cuts = statistics.quantiles(latencies, n=100)
            row = (cuts[49] * 1000, cuts[98] * 1000, max(latencies) * 1000, work)
            got.append(row)
            print(
                f"round {r + 1} switch interval {interval * 1000:.0f} ms: probe p50 {row[0]:.1f} ms p99 {row[1]:.1f} ms"
                f" max {row[2]:.1f} ms; computing thread {row[3]:.0f} units/s",
                flush=True,
            )
    stop.set()
    server.join(5)
    for interval, got in rows.items():
        p50, p99, slowest, work = (statistics.median(col) for col in zip(*got, strict=True))
        print(
            f"median switch interval {interval * 1000:.0f} ms: p50 {p50:.1f} ms p99 {p99:.1f} ms max {slowest:.1f} ms;"
            f" computing {work:.0f} units/s"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
