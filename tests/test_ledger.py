"""The e2e ledger's reading of kube-apiserver audit events: who held the Lease when, and which
writes came from a process that did not. The e2e tests trust these counts, so they are tested here
on hand-written events of the shape kube-apiserver writes (audit.k8s.io/v1, ResponseComplete)."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

from e2e.ledger import (
    AUDIT_POLICY,
    Ledger,
    binding_attempts,
    holder_at,
    lease_terms,
    parse,
    rebinds_by_one_process,
    writes_after_losing,
    writes_without_lease,
)

LEASE = ("kube-system", "spread-scheduler")
DURATION = timedelta(seconds=4)


def event(second: float, user: str, verb: str, resource: str, name: str, code: int, **extra: Any) -> dict[str, Any]:
    ref = {"resource": resource, "namespace": extra.pop("namespace", "ns"), "name": name}
    if "subresource" in extra:
        ref["subresource"] = extra.pop("subresource")
    body = {
        "kind": "Event",
        "apiVersion": "audit.k8s.io/v1",
        "level": "Metadata",
        "stage": extra.pop("stage", "ResponseComplete"),
        "verb": verb,
        "user": {"username": user, "groups": ["system:masters"]},
        "objectRef": ref,
        "responseStatus": {"metadata": {}, "code": code},
        "requestReceivedTimestamp": f"2026-11-24T10:00:{second:09.6f}Z",
        "stageTimestamp": f"2026-11-24T10:00:{second:09.6f}Z",
    }
    return body | extra


def lease(second: float, user: str, holder: str, code: int = 200) -> dict[str, Any]:
    return event(
        second,
        user,
        "update",
        "leases",
        LEASE[1],
        code,
        namespace=LEASE[0],
        level="Request",
        requestObject={"spec": {"holderIdentity": holder}},
    )


def bind(second: float, user: str, pod: str, code: int = 201) -> dict[str, Any]:
    return event(second, user, "create", "pods", pod, code, subresource="binding")


def writes(*events: dict[str, Any]) -> list[Any]:
    parsed = [parse(json.dumps(e)) for e in events]
    assert all(parsed)
    return parsed


def test_parse_reads_kinds_codes_and_the_lease_holder() -> None:
    b, s, d, le = writes(
        bind(1, "a", "p"),
        event(2, "a", "patch", "pods", "p", 200, subresource="status"),
        event(3, "a", "delete", "pods", "p", 200),
        lease(4, "a", "host_a"),
    )
    assert (b.kind, b.ok, b.name, b.user) == ("binding", True, "p", "a")
    assert (s.kind, d.kind, le.kind, le.holder) == ("status", "delete", "lease", "host_a")
    assert parse(json.dumps(bind(1, "a", "p") | {"stage": "RequestReceived"})) is None
    assert parse('{"stage": "ResponseComplete", "requestRec') is None  # a line cut by a crash


def test_resource_claim_writes_are_scheduler_writes_counted_without_the_lease() -> None:
    """DynamicResources' finalizer (update) and status writes (update, Unreserve's patch) are claim
    writes, which a process without the Lease must never send."""
    finalizer, status, unreserve = writes(
        event(1, "a", "update", "resourceclaims", "c", 200),
        event(2, "a", "update", "resourceclaims", "c", 200, subresource="status"),
        event(3, "a", "patch", "resourceclaims", "c", 200, subresource="status"),
    )
    assert (finalizer.kind, status.kind, unreserve.kind) == ("claim", "claim", "claim")
    assert writes_without_lease([finalizer, status, unreserve], [], ["a"]) == [finalizer, status, unreserve]


def test_the_extended_resources_claims_create_and_delete_are_claim_writes() -> None:
    """DRAExtendedResource: PreBind's create of the pod's claim and Unreserve's delete are audited and
    counted as claim writes, fenced as the others."""
    create, delete = writes(
        event(1, "a", "create", "resourceclaims", "p-extended-resources-x", 201),
        event(2, "a", "delete", "resourceclaims", "p-extended-resources-x", 200),
    )
    assert (create.kind, delete.kind) == ("claim", "claim")
    assert writes_without_lease([create, delete], [], ["a"]) == [create, delete]
    rule = next(r for r in AUDIT_POLICY["rules"] if "resource.k8s.io" in str(r.get("resources")))
    assert {"create", "delete"} <= set(rule["verbs"])


def test_terms_end_at_takeover_release_or_expiry() -> None:
    log = writes(
        lease(0, "a", "A"),
        lease(1, "a", "A"),
        lease(2, "b", "B", code=409),  # a failed attempt changes nothing
        lease(3, "a", ""),  # released
        lease(3.5, "b", "B"),
        lease(4, "b", "B"),  # b stops renewing: expires at 8
        lease(20, "c", "C"),
    )
    terms = lease_terms(log, *LEASE, DURATION)
    assert [(t.user, t.start.second, t.end.second) for t in terms] == [("a", 0, 3), ("b", 3, 8), ("c", 20, 24)]
    assert holder_at(terms, log[5].at + timedelta(seconds=3)) == "b"
    assert holder_at(terms, log[5].at + timedelta(seconds=5)) is None


def test_a_write_without_the_lease_is_counted_whoever_answered_it() -> None:
    log = writes(
        lease(0, "a", "A"),
        bind(1, "a", "p1"),
        bind(1.5, "b", "p2", code=409),  # b never led: an attempt all the same
        lease(2, "b", "B"),  # takeover (a's lease had not expired: a server-side view of a stolen lease)
        bind(2.5, "a", "p3"),  # a, after losing it
        bind(3, "b", "p4"),
    )
    terms = lease_terms(log, *LEASE, DURATION)
    assert [str(w.name) for w in writes_without_lease(log, terms, ["a", "b"])] == ["p2", "p3"]
    assert [w.name for w in writes_after_losing(log, terms)] == ["p3"]


def test_rebinds_by_one_process_allow_retries_after_errors_and_a_new_process_after_a_kill() -> None:
    log = writes(
        bind(1, "a", "p", code=500),
        bind(2, "a", "p", code=201),  # a retry after a 5xx is fair
        bind(3, "b", "p", code=409),  # the next incarnation did not know
        bind(4, "b", "p", code=409),  # but b was told: asking again is a bug
        bind(5, "a", "q", code=201),
        bind(6, "a", "q", code=409),  # and so is a binding a pod it bound
    )
    assert [(w.user, w.name, w.at.second) for w in rebinds_by_one_process(log, "ns")] == [("b", "p", 4), ("a", "q", 6)]
    assert {k: dict(v) for k, v in binding_attempts(log, "ns").items()} == {
        "p": {500: 1, 201: 1, 409: 2},
        "q": {201: 1, 409: 1},
    }


def test_ledger_reads_from_a_mark(tmp_path: Path) -> None:
    path = tmp_path / "audit.log"
    ledger = Ledger(path)
    assert ledger.mark() == 0 and ledger.writes() == []
    path.write_text(json.dumps(bind(1, "a", "old")) + "\n")
    mark = ledger.mark()
    with path.open("a") as log:
        log.write(json.dumps(bind(2, "a", "new")) + "\n")
    assert [w.name for w in ledger.writes(mark)] == ["new"]


def test_a_new_cluster_starts_a_new_ledger(tmp_path: Path) -> None:
    """The Lease's terms are read from the whole audit log: a previous cluster's lease writes in the
    same directory once counted as terms of this one (79 "terms" for 20 kills in make reliability)."""
    from e2e.cluster import Cluster  # noqa: PLC0415

    cluster = Cluster(tmp_path)
    cluster.logs.mkdir(parents=True)
    cluster.audit_log.write_text('{"old": "cluster"}\n')
    cluster.fresh_ledger()
    assert not cluster.audit_log.exists()
    assert (cluster.logs / "audit.previous.log").read_text() == '{"old": "cluster"}\n'
    cluster.fresh_ledger()  # nothing to rotate: no error, the previous one kept
    assert (cluster.logs / "audit.previous.log").exists()
