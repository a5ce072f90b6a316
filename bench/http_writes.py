"""CPU per write: the client's aiohttp session against our own connections (scheduler.kube.client.transport).

    python -m bench.http_writes [--requests 2000] [--rounds 3]

Starts a local API server (no controller-manager) and POSTs Scheduled-like events, ``WRITE_CONNECTIONS``
at a time as a burst's binding cycles do, alternating the two paths; prints our process's CPU microseconds per
request and requests per second for each round, then the medians and their ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from e2e.cluster import Cluster
from scheduler.kube.client.apiclient import api_client
from scheduler.kube.client.rest import send
from scheduler.kube.client.transport import WRITE_CONNECTIONS
from scheduler.kube.writes import ApiWrites, send_once

ROOT = Path(__file__).resolve().parent.parent
PATH = "/apis/events.k8s.io/v1/namespaces/{namespace}/events"


def _event(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": f"p{i}.{time.time_ns():x}", "namespace": "default"},
        "eventTime": "2026-11-27T10:00:00.000000Z",
        "reportingController": "spread-scheduler",
        "reportingInstance": "spread-scheduler-bench",
        "action": "Binding",
        "reason": "Scheduled",
        "note": f"Successfully assigned default/p{i} to node-00001",
        "type": "Normal",
        "regarding": {"apiVersion": "v1", "kind": "Pod", "namespace": "default", "name": f"p{i}", "uid": "u"},
    }


async def _burst(requests: int, post: Callable[[int], Awaitable[int]]) -> tuple[float, float]:
    """(CPU us per request, requests per second) for ``requests`` POSTs, WRITE_CONNECTIONS at a time."""
    slots = asyncio.Semaphore(WRITE_CONNECTIONS)

    async def one(i: int) -> None:
        async with slots:
            status = await post(i)
            if status != 201:
                raise RuntimeError(f"event {i}: HTTP {status}")

    cpu, wall = time.process_time(), time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(requests)))
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return cpu * 1e6 / requests, requests / wall


async def _compare(kubeconfig: str, requests: int, rounds: int) -> dict[str, list[tuple[float, float]]]:
    api = await api_client(kubeconfig)
    writes = ApiWrites(api)
    assert writes.connections is not None, "a proxy is configured: the writes would use the client's session"

    async def session(i: int) -> int:
        response = await send(api, "POST", PATH, {"namespace": "default"}, body=_event(i))
        await response.read()
        response.release()
        return int(response.status)

    async def ours(i: int) -> int:
        reply = await send_once(writes, "POST", PATH, {"namespace": "default"}, _event(i), "application/json")
        return int(reply.status)

    paths = {"client session (aiohttp)": session, "our connections": ours}
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in paths}
    for post in paths.values():
        await _burst(requests // 4, post)  # warm: connections open, code paths hot
    for r in range(rounds):
        for name, post in paths.items():
            row = await _burst(requests, post)
            results[name].append(row)
            print(f"round {r + 1} {name:<26} {row[0]:7.1f} us CPU/request {row[1]:7.0f} requests/s", flush=True)
    await writes.close()
    await api.close()  # type: ignore[no-untyped-call]
    return results


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.http_writes", description=__doc__)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    cluster = Cluster(ROOT / ".cluster" / "http-writes", controller_manager=False, kwok=False)
    cluster.down(quiet=True)
    cluster.up()
    try:
        results = asyncio.run(_compare(str(cluster.kubeconfig), args.requests, args.rounds))
    finally:
        cluster.down(quiet=True)
    medians = {name: statistics.median(cpu for cpu, _ in rows) for name, rows in results.items()}
    for name, cpu in medians.items():
        print(f"median {name:<26} {cpu:7.1f} us CPU/request")
    ours, theirs = medians["our connections"], medians["client session (aiohttp)"]
    print(f"ours / client session: {ours / theirs:.2f} of the CPU per request")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
