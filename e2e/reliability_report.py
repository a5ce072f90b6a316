"""The reliability table of docs/reliability.md, made from the reports the fault, load and leader
tests write (``e2e-logs/*.json``): every count in it comes from the API server's audit log (the
ledger, e2e/ledger.py) or from the test's own watch, never from a constant.

    python -m e2e.reliability_report .cluster/reliability/e2e-logs            # print the table
    python -m e2e.reliability_report .cluster/reliability/e2e-logs --write docs/reliability.md

``--write`` replaces the part of the page between the two ``reliability-table`` markers.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

BEGIN, END = "<!-- reliability-table:begin -->", "<!-- reliability-table:end -->"

COLUMNS = (
    "what",
    "Binding requests / pods bound",
    "pods with 2+ requests (409s)",
    "writes without the Lease",
    "writes after losing it",
    "also measured",
)

Report = dict[str, Any]


def _count(report: Report, key: str) -> str:
    value = report.get(key)
    return "n/a" if value is None else f"{value:,}"


def _bindings(report: Report) -> str:
    return f"{_count(report, 'binding_requests')} / {_count(report, 'pods_bound')}"


def _twice(report: Report) -> str:
    return f"{_count(report, 'pods_with_more_than_one_binding_request')} ({_count(report, 'binding_conflicts_409')})"


def _row(what: str, report: Report, also: str) -> list[str]:
    return [
        what,
        _bindings(report),
        _twice(report),
        _count(report, "writes_without_lease"),
        _count(report, "writes_after_losing_lease"),
        also,
    ]


def _kills(r: Report) -> list[str]:
    return _row(
        f"{r['kills']} SIGKILLs in a {r['pods']:,}-pod burst (`test_faults.py`)",
        r,
        f"{r['lost']} lost, {r['pods_bound_twice']} nodeName changes, {r['rebinds_by_one_process']} requests "
        f"repeated by a process that had its answer, {r['lease_terms']} lease terms",
    )


def _sigstop(r: Report) -> list[str]:
    lease, renew, retry = r["lease_seconds"]
    return _row(
        f"leader SIGSTOPped in a {r['pods']:,}-pod burst, {lease}/{renew}/{retry} s (`test_leader_election.py`)",
        r,
        f"takeover {r['takeover_seconds']} s; {r['bindings_by_the_paused_leader']} pods bound by the leader "
        "before its pause, none after",
    )


def _skew(r: Report) -> list[str]:
    return _row(
        f"{r['skewed']} clock {r['skew_seconds']:+g} s, two replicas (`test_leader_election.py`)",
        r,
        f"terms {len(r['lease_terms'])}: the follower took the lease "
        f"{r['follower_acquired_after_holder_died_seconds']} s after the holder's last term ended",
    )


def _etcd(r: Report) -> list[str]:
    return _row(
        f"etcd stopped {r['outage_seconds']} s, leader election on (`test_leader_election.py`)",
        r,
        f"leader stepped down after {r['leader_stepped_down_after_seconds']} s, exited after "
        f"{r['leader_exited_after_seconds']} s; {len(r['lease_terms'])} terms; "
        f"{r['binding_requests_failed_5xx']} Bindings failed 5xx",
    )


def _throttled(r: Report) -> list[str]:
    report = {**r, "pods_bound": r.get("bound")}
    return _row(
        f"API Priority and Fairness rejecting our writes, {r['pods']} pods (`test_api_throttling.py`)",
        report,
        f"{r['throttled_429']} 429s; shortest wait after a 429 {r['shortest_retry_after_a_429_seconds']} s "
        f"(median {r['median_retry_after_a_429_seconds']} s); writes/s mean {r['writes_per_second_mean']}, "
        f"peak {r['writes_per_second_peak']}",
    )


def _preemption(r: Report) -> list[str]:
    return _row(
        f"SIGKILL during a preemption, {r['rounds']} rounds (`test_preemption.py`)",
        r,
        f"{r['victim_deletions']} victim deletions (2 a round, each once); {r['pods_bound_twice']} pods bound "
        f"twice; {r['rounds_written_by_two_incarnations']} rounds finished by the next incarnation",
    )


def _volume_kills(r: Report) -> list[str]:
    return _row(
        f"{r['kills']} SIGKILLs during PreBind's writes, {r['pods']:,} StatefulSet pods (`test_volume_faults.py`)",
        r,
        f"{r['lost']} lost; {r['pv_updates']} PV and {r['claim_updates']} claim updates from "
        f"{r['incarnations_with_volume_writes']} incarnations; "
        f"{r['pvs_bound_to_two_claims']} PVs bound to two claims, {r['claims_not_on_their_pods_node']} claims "
        f"off their pod's node",
    )


def _dra_kills(r: Report) -> list[str]:
    return _row(
        f"{r['kills']} SIGKILLs with claim writes in flight, {r['pods']} pods with a claim each (`test_dra_faults.py`)",
        r,
        f"{r['claim_writes_ok']} claim writes ({r['claim_writes_409']} 409s, {r['claim_writes_cut_by_a_kill']} cut "
        f"by a kill) for {r['devices']} devices; {r['claims_allocated_twice']} claims allocated twice; "
        f"{r['claims_written_by_one_incarnation_bound_by_the_next']} claims written by one incarnation and "
        f"bound by the next; {r['devices_held_twice']} devices held by two claims",
    )


def _load(r: Report) -> list[str]:
    also = (
        f"{r['feasible_bound']:,} bound, {r['infeasible_refused']:,} refused with "
        f"{r['failed_scheduling_events']:,} FailedScheduling events, in {r['seconds']} s; "
        f"peak RSS {r['peak_rss_mib']} MiB"
    )
    if "memory_limit_mib" in r:
        also += f" (limit {r['memory_limit_mib']:g} MiB)"
    if "max_zone_skew" in r:
        also += f"; zone skew at most {r['max_zone_skew']} (maxSkew 5)"
    also += f"; `/healthz` p99 {r['healthz_p99_seconds']} s"
    return _row(f"{r['pods']:,} pods over {r['nodes']:,} nodes (`test_load.py`)", r, also)


def _coexistence(r: Report) -> list[str]:
    return _row(
        f"beside kube-scheduler on 3 nodes, {r['pods']} pods (`test_coexistence.py`)",
        r,
        f"{r['bound_by_us']} bound by us, {r['bound_by_upstream']} by upstream; {r['races']} races "
        "between the two schedulers",
    )


# file name pattern -> row maker, in the table's order
ROWS: tuple[tuple[str, Callable[[Report], list[str]]], ...] = (
    ("kills.json", _kills),
    ("sigstop-*.json", _sigstop),
    ("skew-holder.json", _skew),
    ("skew-follower.json", _skew),
    ("etcd-outage-leader.json", _etcd),
    ("throttled.json", _throttled),
    ("preemption-kills.json", _preemption),
    ("volume-kills.json", _volume_kills),
    ("dra-kills.json", _dra_kills),
    ("load-*.json", _load),
    ("coexistence.json", _coexistence),
)


def _reports(logs: Path) -> Iterator[tuple[Path, Callable[[Report], list[str]]]]:
    for pattern, make in ROWS:
        for path in sorted(logs.glob(pattern), key=lambda p: p.stat().st_mtime):
            yield path, make


def table(logs: Path) -> str:
    """The Markdown table of every report in ``logs``, with the date of the newest and the revision."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + " --- |" * len(COLUMNS)]
    newest = 0.0
    for path, make in _reports(logs):
        try:
            cells = make(json.loads(path.read_text()))
        except (KeyError, TypeError, ValueError) as exc:
            raise SystemExit(f"{path}: not a report this table knows ({exc!r})") from None
        lines.append("| " + " | ".join(cells) + " |")
        newest = max(newest, path.stat().st_mtime)
    if len(lines) == 2:
        raise SystemExit(f"{logs}: no reports (run `make reliability` first)")
    when = datetime.fromtimestamp(newest, UTC).strftime("%Y-%m-%d")
    head = f"From `make reliability` (reports of {when}, revision {_revision()}):"
    return head + "\n\n" + "\n".join(lines)


def _revision() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return out.stdout.strip()


def write(page: Path, text: str) -> None:
    content = page.read_text()
    if BEGIN not in content or END not in content:
        raise SystemExit(f"{page}: no {BEGIN} ... {END} markers")
    before, rest = content.split(BEGIN, 1)
    _old, after = rest.split(END, 1)
    page.write_text(f"{before}{BEGIN}\n{text}\n{END}{after}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("logs", type=Path, help="an e2e-logs directory")
    parser.add_argument("--write", type=Path, help="the page whose marked table to replace")
    args = parser.parse_args(argv)
    text = table(args.logs)
    print(text)
    if args.write:
        write(args.write, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
