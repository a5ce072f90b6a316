"""leaderElection as kube-scheduler reads it: strict types (a string where a bool, a duration or a
name is wanted is refused, naming the field) and the timing rules of component-base's
``ValidateLeaderElectionConfiguration`` and client-go's ``NewLeaderElector``, checked at load.

A config that client-go would refuse must not start: with ``renewDeadline <= retryPeriod * 1.2`` a
leader's own renewals (every retryPeriod, jittered) can miss renewDeadline and it loses a lease it
holds.
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.config import ConfigError, parse_config

API = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}


def config_error(doc: object) -> str:
    with pytest.raises(ConfigError) as info:
        parse_config(doc)
    return str(info.value)


def le(**fields: Any) -> dict[str, Any]:
    return {**API, "leaderElection": fields}


@pytest.mark.parametrize(
    ("renew", "retry"),
    [
        pytest.param("2400ms", "2s", id="equal-to-1.2x"),
        pytest.param("2s", "2s", id="equal"),
        pytest.param("1s", "2s", id="below"),
    ],
)
def test_renew_deadline_must_exceed_retry_period_times_jitter(renew: str, retry: str) -> None:
    """client-go NewLeaderElector: ``RenewDeadline <= JitterFactor * RetryPeriod`` is refused."""
    assert config_error(le(renewDeadline=renew, retryPeriod=retry)) == (
        "leaderElection.renewDeadline: Invalid value: "
        f'"{renew}": renewDeadline must be greater than retryPeriod*JitterFactor'
    )


def test_just_above_retry_period_times_jitter_is_accepted() -> None:
    cfg = parse_config(le(renewDeadline="2401ms", retryPeriod="2s"))
    assert cfg.leader_election.renew_deadline == pytest.approx(2.401)


def test_timings_are_not_checked_without_leader_election() -> None:
    cfg = parse_config(le(leaderElect=False, renewDeadline="1s", retryPeriod="2s"))
    assert cfg.leader_election.leader_elect is False


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        pytest.param("false", '"false"', id="string-false"),
        pytest.param("true", '"true"', id="string-true"),
        pytest.param(0, "0", id="zero"),
        pytest.param(1, "1", id="one"),
        pytest.param("", '""', id="empty"),
    ],
)
def test_leader_elect_must_be_a_boolean(value: object, shown: str) -> None:
    """``leaderElect: "false"`` read as true before: a non-empty string is truthy."""
    assert (
        config_error(le(leaderElect=value)) == f"leaderElection.leaderElect: Invalid value: {shown}: must be a boolean"
    )


@pytest.mark.parametrize("field", ["leaseDuration", "renewDeadline", "retryPeriod"])
@pytest.mark.parametrize("value", [15, 2.5, True, ["15s"]], ids=["int", "float", "bool", "list"])
def test_durations_must_be_duration_strings(field: str, value: object) -> None:
    """metav1.Duration decodes from a JSON string only; a number is refused, as kube-scheduler does."""
    assert config_error(le(**{field: value})) == f"leaderElection.{field}: must be a duration such as 15s"


@pytest.mark.parametrize("field", ["resourceName", "resourceNamespace", "resourceLock"])
@pytest.mark.parametrize("value", [7, True, {"a": 1}], ids=["int", "bool", "map"])
def test_names_must_be_strings(field: str, value: object) -> None:
    assert config_error(le(**{field: value})) == f"leaderElection.{field}: Invalid value: {value!r}: must be a string"


def test_resource_lock_leases_is_accepted() -> None:
    assert parse_config(le(resourceLock="leases")).leader_election.leader_elect is True


@pytest.mark.parametrize("lock", ["endpoints", "configmaps", "endpointsleases", "Lease"])
def test_other_lock_types_are_refused(lock: str) -> None:
    """Only the Lease lock exists (client-go's resourcelock.New refuses the rest)."""
    assert config_error(le(resourceLock=lock)) == (
        f'leaderElection.resourceLock: Unsupported value: "{lock}": supported values: "leases"'
    )


def test_an_empty_resource_lock_means_leases() -> None:
    """kube-scheduler's defaulting turns an empty lock into ``leases`` before validation."""
    assert parse_config(le(resourceLock="")).leader_election.leader_elect is True


def test_the_first_error_is_the_one_upstream_reports_first() -> None:
    """component-base checks the durations before NewLeaderElector sees them."""
    assert config_error(le(leaseDuration="10s", renewDeadline="10s", retryPeriod="10s")) == (
        "leaderElection.leaseDuration: Invalid value: 10.0s: must be greater than `RenewDeadline`"
    )


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        pytest.param(
            {**API, "clientConnection": {"kubeconfig": 5}},
            "clientConnection.kubeconfig: Invalid value: 5: must be a string",
            id="kubeconfig",
        ),
        pytest.param(
            {**API, "clientConnection": {"contentType": 1}},
            "clientConnection.contentType: Invalid value: 1: must be a string",
            id="contentType",
        ),
        pytest.param(
            {**API, "clientConnection": {"burst": "100"}},
            "clientConnection.burst: Invalid value: '100': must be an integer in [0, 2147483647]",
            id="burst",
        ),
        pytest.param(
            {**API, "parallelism": "16"},
            "parallelism: Invalid value: '16': must be an integer in [1, 2147483647]",
            id="parallelism",
        ),
        pytest.param(
            {**API, "enableProfiling": "false"},
            'enableProfiling: Invalid value: "false": must be a boolean',
            id="enableProfiling",
        ),
        pytest.param(
            {**API, "enableContentionProfiling": "no"},
            'enableContentionProfiling: Invalid value: "no": must be a boolean',
            id="enableContentionProfiling",
        ),
        pytest.param(
            {**API, "delayCacheUntilActive": 1},
            "delayCacheUntilActive: Invalid value: 1: must be a boolean",
            id="delayCacheUntilActive",
        ),
        pytest.param(
            {**API, "podInitialBackoffSeconds": "1"},
            "podInitialBackoffSeconds: Invalid value: '1': must be an integer in [1, 2147483647]",
            id="podInitialBackoffSeconds",
        ),
    ],
)
def test_the_rest_of_the_config_is_typed_strictly(doc: dict[str, Any], message: str) -> None:
    assert config_error(doc) == message
