"""The Lease lives where the scheduler is installed: RBAC grants leases only in that namespace."""

from __future__ import annotations

from scheduler.config import LeaderElection, parse_config
from scheduler.kube.leader import DEFAULT_LEASE_NAMESPACE, with_lease_namespace

API = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}


def _namespace(leader_election: dict[str, object], environ: dict[str, str]) -> str:
    settings = parse_config({**API, "leaderElection": leader_election}).leader_election
    return with_lease_namespace(settings, environ).resource_namespace


def test_unset_namespace_is_the_pods_own() -> None:
    assert _namespace({}, {"POD_NAMESPACE": "platform"}) == "platform"
    assert _namespace({"resourceNamespace": ""}, {"POD_NAMESPACE": "platform"}) == "platform"


def test_outside_a_pod_the_install_namespace() -> None:
    assert _namespace({}, {}) == DEFAULT_LEASE_NAMESPACE == "spread-scheduler"
    assert _namespace({}, {"POD_NAMESPACE": "  "}) == "spread-scheduler"  # blank is unset, not a namespace


def test_an_explicit_namespace_wins_over_the_pods() -> None:
    assert _namespace({"resourceNamespace": "ops"}, {"POD_NAMESPACE": "platform"}) == "ops"


def test_the_rest_of_the_settings_is_kept() -> None:
    settings = LeaderElection(lease_duration=4.0, renew_deadline=3.0, retry_period=1.0, resource_name="lock")
    resolved = with_lease_namespace(settings, {"POD_NAMESPACE": "a"})
    assert resolved == LeaderElection(True, 4.0, 3.0, 1.0, "a", "lock")
