"""The server's own record of what was written: kube-apiserver's audit log, read back by the tests.

A property the API server enforces (a bound pod's nodeName never changes: a second Binding gets 409)
proves nothing about the scheduler. What the scheduler *attempted* does: the e2e control plane runs
kube-apiserver with ``AUDIT_POLICY``, which records every Binding, pod status write, pod deletion and
update of a PersistentVolume, PersistentVolumeClaim or ResourceClaim (metadata: who, when, the response
code) and every Lease write with its body (the holder). Each scheduler process of the e2e tests logs
in as a user of its own (``cluster.user_kubeconfig``), so every write is attributed to one process
incarnation.

Times are the server's (``requestReceivedTimestamp``, microseconds): one clock for every writer, so
"after the lease was taken" is judged as the API server saw it, whatever the processes' clocks say.
"""

from __future__ import annotations

import collections
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

# kube-apiserver --audit-policy-file (JSON is YAML). The first matching rule wins.
AUDIT_POLICY: dict[str, Any] = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    "omitStages": ["RequestReceived"],
    "rules": [
        {
            "level": "Request",  # the body: who the Lease names as holder
            "verbs": ["create", "update", "patch"],
            "resources": [{"group": "coordination.k8s.io", "resources": ["leases"]}],
        },
        {
            "level": "Metadata",
            "verbs": ["create"],
            "resources": [{"group": "", "resources": ["pods/binding", "bindings"]}],
        },
        {"level": "Metadata", "verbs": ["update", "patch"], "resources": [{"group": "", "resources": ["pods/status"]}]},
        {"level": "Metadata", "verbs": ["delete"], "resources": [{"group": "", "resources": ["pods"]}]},
        # Rebalancing: evictions (create pods/eviction).
        {"level": "Metadata", "verbs": ["create"], "resources": [{"group": "", "resources": ["pods/eviction"]}]},
        # Spread-aware scale-down: the pod-deletion-cost annotation (a merge patch of the pod).
        {"level": "Metadata", "verbs": ["patch"], "resources": [{"group": "", "resources": ["pods"]}]},
        {  # VolumeBinding's PreBind: a PV's claimRef, a claim's selected node
            "level": "Metadata",
            "verbs": ["update", "patch"],
            "resources": [{"group": "", "resources": ["persistentvolumes", "persistentvolumeclaims"]}],
        },
        {  # DynamicResources: PreBind's finalizer, allocation and reservation, PostFilter's deallocation,
            # Unreserve's patch; from 1.36 the claim for a pod's extended resources (PreBind's create,
            # Unreserve's delete)
            "level": "Metadata",
            "verbs": ["update", "patch", "create", "delete"],
            "resources": [{"group": "resource.k8s.io", "resources": ["resourceclaims", "resourceclaims/status"]}],
        },
        {"level": "None"},
    ],
}

SCHEDULER_WRITES = frozenset({"binding", "status", "delete", "volume", "claim", "cost", "eviction"})


@dataclass(frozen=True, slots=True)
class Write:
    """One audited request, as the server answered it."""

    at: datetime
    user: str
    verb: str
    resource: str
    subresource: str
    namespace: str
    name: str
    code: int
    holder: str | None = None  # a Lease write: spec.holderIdentity ("" when released)

    @property
    def kind(self) -> str:
        """binding | status | delete | volume | claim | cost | eviction | lease | other."""
        if self.resource == "leases":
            return "lease"
        if self.resource in ("persistentvolumes", "persistentvolumeclaims") and not self.subresource:
            return "volume"
        if self.resource == "resourceclaims":  # its status too: a ResourceClaim write of DynamicResources
            return "claim"
        if self.resource == "bindings" or self.subresource == "binding":
            return "binding"
        if self.subresource == "status":
            return "status"
        if self.resource == "pods" and self.subresource == "eviction":
            return "eviction"
        if self.resource == "pods" and not self.subresource and self.verb in ("delete", "patch"):
            return "delete" if self.verb == "delete" else "cost"  # a patch of a pod: its deletion cost
        return "other"

    @property
    def ok(self) -> bool:
        return 200 <= self.code < 300

    def __str__(self) -> str:
        return f"{self.at.isoformat()} {self.user} {self.verb} {self.kind} {self.namespace}/{self.name} -> {self.code}"


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


def parse(line: str) -> Write | None:
    """One audit event (ResponseComplete or Panic stage) as a Write; None for anything else."""
    try:
        event = json.loads(line)
    except ValueError:
        return None  # a line cut by a crash of the server
    if not isinstance(event, dict) or event.get("stage") not in ("ResponseComplete", "Panic"):
        return None
    ref = event.get("objectRef") or {}
    holder = None
    if ref.get("resource") == "leases":
        body = event.get("requestObject") or {}
        holder = str((body.get("spec") or {}).get("holderIdentity") or "")
    return Write(
        at=_time(event["requestReceivedTimestamp"]),
        user=str((event.get("user") or {}).get("username", "")),
        verb=str(event.get("verb", "")),
        resource=str(ref.get("resource", "")),
        subresource=str(ref.get("subresource", "")),
        namespace=str(ref.get("namespace", "")),
        name=str(ref.get("name", "")),
        code=int((event.get("responseStatus") or {}).get("code", 0)),
        holder=holder,
    )


class Ledger:
    """The audit log of one control plane; ``mark()`` then ``writes(mark)`` reads one test's part."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def mark(self) -> int:
        return self.path.stat().st_size if self.path.exists() else 0

    def writes(self, since: int = 0) -> list[Write]:
        if not self.path.exists():
            return []
        with self.path.open("rb") as log:
            log.seek(since)
            text = log.read().decode(errors="replace")
        return [w for w in map(parse, text.splitlines()) if w is not None]


@dataclass(frozen=True, slots=True)
class Term:
    """A time a user held the Lease, as the server saw it: from its acquiring write to the earlier of
    another user's acquiring write, its own release, or its last renewal plus the lease duration."""

    user: str
    start: datetime
    end: datetime


def lease_terms(writes: Iterable[Write], namespace: str, name: str, duration: timedelta) -> list[Term]:
    """The holders of one Lease, in order, from its successful writes."""
    terms: list[Term] = []
    user: str | None = None
    start = last = datetime.min.replace(tzinfo=UTC)
    for w in writes:
        if w.kind != "lease" or not w.ok or (w.namespace, w.name) != (namespace, name):
            continue
        if user is not None and (w.user != user or not w.holder or w.at > last + duration):
            terms.append(Term(user, start, min(w.at, last + duration)))
            user = None
        if w.holder:
            if user is None:
                user, start = w.user, w.at
            last = w.at
    if user is not None:
        terms.append(Term(user, start, last + duration))
    return terms


def holder_at(terms: Sequence[Term], at: datetime) -> str | None:
    for term in terms:
        if term.start <= at < term.end:
            return term.user
    return None


def writes_without_lease(writes: Iterable[Write], terms: Sequence[Term], users: Iterable[str]) -> list[Write]:
    """Scheduler writes (Bindings, pod status, pod deletions, PV, PVC and ResourceClaim updates) by ``users`` sent at
    a moment they did not hold the Lease, 2xx or not: an attempt is what a fenced leader must never make."""
    mine = set(users)
    return [w for w in writes if w.user in mine and w.kind in SCHEDULER_WRITES and holder_at(terms, w.at) != w.user]


def writes_after_losing(writes: Iterable[Write], terms: Sequence[Term]) -> list[Write]:
    """Scheduler writes by a user after the end of its last term (it led, then lost the Lease)."""
    last_end: dict[str, datetime] = {}
    for term in terms:
        last_end[term.user] = term.end
    return [w for w in writes if w.kind in SCHEDULER_WRITES and w.user in last_end and w.at >= last_end[w.user]]


def binding_attempts(writes: Iterable[Write], namespace: str) -> dict[str, collections.Counter[int]]:
    """pod name -> response codes of every Binding sent for it (201 bound, 409 already bound, ...)."""
    attempts: dict[str, collections.Counter[int]] = collections.defaultdict(collections.Counter)
    for w in writes:
        if w.kind == "binding" and w.namespace == namespace:
            attempts[w.name][w.code] += 1
    return dict(attempts)


def rebinds_by_one_process(writes: Iterable[Write], namespace: str) -> list[Write]:
    """Binding requests a process sent for a pod after its own earlier request for that pod was
    answered 201 or 409: it had been told, and asked again (a retry after a 5xx or a timeout is fair)."""
    settled: set[tuple[str, str]] = set()
    again: list[Write] = []
    for w in writes:
        if w.kind != "binding" or w.namespace != namespace:
            continue
        if (w.user, w.name) in settled:
            again.append(w)
        if w.ok or w.code == 409:
            settled.add((w.user, w.name))
    return again


def summary(writes: Sequence[Write], namespace: str, users: Iterable[str]) -> dict[str, int]:
    """The counts the reliability reports print, all from the server's record."""
    mine = set(users)
    attempts = binding_attempts((w for w in writes if w.user in mine), namespace)
    return {
        "binding_requests": sum(sum(c.values()) for c in attempts.values()),
        "pods_bound": sum(1 for c in attempts.values() if c[201]),
        "pods_with_more_than_one_binding_request": sum(1 for c in attempts.values() if sum(c.values()) > 1),
        "binding_conflicts_409": sum(c[409] for c in attempts.values()),
        "rebinds_by_one_process": len(rebinds_by_one_process((w for w in writes if w.user in mine), namespace)),
        "pod_deletions": sum(1 for w in writes if w.user in mine and w.kind == "delete" and w.namespace == namespace),
        "cost_patches": sum(1 for w in writes if w.user in mine and w.kind == "cost" and w.namespace == namespace),
        "evictions": sum(1 for w in writes if w.user in mine and w.kind == "eviction" and w.namespace == namespace),
    }
