"""Quantities, a pod's requests and a node's totals: the inputs of NodeResourcesFit and NodePorts.

Scenarios ported from upstream v1.35.4 (``apimachinery/pkg/api/resource`` parsing,
``component-helpers/resource/helpers_test.go`` TestPodResourceRequests,
``pkg/scheduler/framework/types_test.go`` TestPodInfoCalculateResources / TestNodeInfoAddPod /
TestUpdateUsedPorts); ids are upstream's case names. Expected numbers are worked out from the
rules in the comments, never read back from our code. Gates as 1.35's defaults: SidecarContainers,
PodLevelResources and InPlacePodVerticalScaling on.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from scheduler.api import quantity
from scheduler.api.objects import Node, Pod
from scheduler.api.quantity import milli_value, parse_quantity, value
from scheduler.api.resources import HostPort, is_extended_resource_name, is_scalar_resource_name
from scheduler.backend.cache.cache import Cache
from scheduler.framework.types import NodeInfo
from scheduler.testing import make_node, make_pod

FORMAT_ERROR = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
SUFFIX_ERROR = "unable to parse quantity's suffix"
Mi = 1024 * 1024
DEFAULT_MILLI_CPU = 100  # schedutil.DefaultMilliCPURequest
DEFAULT_MEMORY = 200 * Mi  # schedutil.DefaultMemoryRequest


def ctr(name: str, requests: dict[str, str] | None = None, *, sidecar: bool = False) -> dict[str, Any]:
    """A container dict; ``sidecar`` marks an init container ``restartPolicy: Always``."""
    out: dict[str, Any] = {"name": name, "image": "pause"}
    if requests is not None:
        out["resources"] = {"requests": dict(requests)}
    if sidecar:
        out["restartPolicy"] = "Always"
    return out


def pod(
    containers: list[dict[str, Any]],
    init: list[dict[str, Any]] | None = None,
    *,
    name: str = "p",
    overhead: dict[str, str] | None = None,
    pod_level: dict[str, str] | None = None,
    status: dict[str, Any] | None = None,
    node: str = "",
) -> Pod:
    b = make_pod(name).set("spec.containers", containers)
    if init is not None:
        b = b.set("spec.initContainers", init)
    if overhead is not None:
        b = b.overhead(**overhead)
    if pod_level is not None:
        b = b.set("spec.resources", {"requests": dict(pod_level)})
    for key, val in (status or {}).items():
        b = b.set(f"status.{key}", val)
    if node:
        b = b.node(node)
    built = b.build()
    assert not built.errors, built.error_message
    return built


# -- quantities ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "want"),
    [
        pytest.param("0", Fraction(0), id="zero"),
        pytest.param("1", Fraction(1), id="plain integer"),
        pytest.param("100m", Fraction(1, 10), id="milli"),
        pytest.param("1n", Fraction(1, 10**9), id="nano"),
        pytest.param("1u", Fraction(1, 10**6), id="micro"),
        pytest.param("1k", Fraction(1000), id="decimal kilo is lower-case k"),
        pytest.param("1M", Fraction(10**6), id="mega"),
        pytest.param("1G", Fraction(10**9), id="giga"),
        pytest.param("1T", Fraction(10**12), id="tera"),
        pytest.param("1P", Fraction(10**15), id="peta"),
        pytest.param("1E", Fraction(10**18), id="exa"),
        pytest.param("1Ki", Fraction(1024), id="kibi"),
        pytest.param("1Mi", Fraction(2**20), id="mebi"),
        pytest.param("1Gi", Fraction(2**30), id="gibi"),
        pytest.param("1Ti", Fraction(2**40), id="tebi"),
        pytest.param("1Pi", Fraction(2**50), id="pebi"),
        pytest.param("1Ei", Fraction(2**60), id="exbi"),
        pytest.param("1e3", Fraction(1000), id="exponent e3"),
        pytest.param("1E3", Fraction(1000), id="exponent E3 (E followed by digits is an exponent)"),
        pytest.param("5e-3", Fraction(5, 1000), id="negative exponent"),
        pytest.param("1.5", Fraction(3, 2), id="decimal fraction"),
        pytest.param("0.5Gi", Fraction(2**29), id="fraction of a binary suffix"),
        pytest.param(".5", Fraction(1, 2), id="no integer part"),
        pytest.param("1.", Fraction(1), id="trailing dot (upstream: we currently allow 1.G)"),
        pytest.param("1.G", Fraction(10**9), id="trailing dot before a suffix"),
        pytest.param("+2", Fraction(2), id="explicit plus sign"),
        pytest.param("-2", Fraction(-2), id="negative"),
        pytest.param("007", Fraction(7), id="leading zeros"),
    ],
)
def test_parse_quantity(text: str, want: Fraction) -> None:
    assert parse_quantity(text) == want


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        pytest.param(2, Fraction(2), id="YAML integer"),
        pytest.param(0.5, Fraction(1, 2), id="YAML float"),
    ],
)
def test_parse_quantity_yaml_numbers(raw: object, want: Fraction) -> None:
    assert parse_quantity(raw) == want


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("", id="empty"),
        pytest.param("abc", id="no number"),
        pytest.param("1KiB", id="trailing garbage after binary suffix"),
        pytest.param("1kb", id="trailing garbage after decimal suffix"),
        pytest.param("1 Gi", id="space"),
        pytest.param("1.2.3", id="two dots"),
    ],
)
def test_parse_quantity_refuses_bad_format(text: str) -> None:
    # parseQuantityString returns ErrFormatWrong for each of these.
    with pytest.raises(ValueError, match=r"^quantities must match the regular expression") as exc:
        parse_quantity(text)
    assert str(exc.value) == FORMAT_ERROR


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("1K", id="upper-case K is no suffix"),
        pytest.param("1m3", id="suffix letters followed by digits that are no exponent"),
        pytest.param("1e", id="exponent marker without digits"),
        pytest.param("1e+", id="exponent sign without digits"),
    ],
)
def test_parse_quantity_refuses_unknown_suffix(text: str) -> None:
    # Upstream: the string splits fine but quantitySuffixer.interpret fails: ErrSuffix, not ErrFormatWrong.
    with pytest.raises(ValueError) as exc:
        parse_quantity(text)
    assert str(exc.value) == SUFFIX_ERROR


@pytest.mark.parametrize(
    "raw",
    [pytest.param(True, id="bool"), pytest.param(None, id="null"), pytest.param([1], id="list")],
)
def test_parse_quantity_refuses_non_scalars(raw: object) -> None:
    with pytest.raises(ValueError):
        parse_quantity(raw)


@pytest.mark.parametrize(
    ("text", "milli", "whole"),
    [
        # MilliValue() and Value() both round up (ScaledValue uses ceiling).
        pytest.param("1", 1000, 1, id="one"),
        pytest.param("100m", 100, 1, id="100m: Value rounds 0.1 up to 1"),
        pytest.param("1n", 1, 1, id="1n: 0.000001 milli rounds up to 1"),
        pytest.param("1.5m", 2, 1, id="1.5m rounds up to 2 milli"),
        pytest.param("1.5", 1500, 2, id="1.5"),
        pytest.param("0", 0, 0, id="zero"),
        pytest.param("1Gi", 1073741824000, 1073741824, id="1Gi"),
    ],
)
def test_milli_value_and_value_round_up(text: str, milli: int, whole: int) -> None:
    q = parse_quantity(text)
    assert milli_value(q) == milli
    assert value(q) == whole


def test_sums_are_exact_before_rounding() -> None:
    # Three containers of 0.3333m: Go adds the Quantities (exactly) and rounds the total once:
    # 0.9999m → MilliValue 1; rounding each first would give 3.
    p = pod([ctr(f"c{i}", {"cpu": "0.3333m"}) for i in range(3)])
    assert p.resources.requests.milli_cpu == 1


# -- resource names ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "extended", "scalar"),
    [
        pytest.param("example.com/foo", True, True, id="extended"),
        pytest.param("cpu", False, False, id="cpu is native"),
        pytest.param("memory", False, False, id="memory is native"),
        pytest.param("kubernetes.io/something", False, True, id="kubernetes.io prefix is native but scalar"),
        pytest.param("subdomain.kubernetes.io/something", False, True, id="kubernetes.io subdomain"),
        pytest.param("hugepages-2Mi", False, True, id="hugepages"),
        pytest.param("attachable-volumes-aws-ebs", False, True, id="attachable volumes"),
        pytest.param("requests.example.com/foo", False, False, id="requests. prefix is not extended"),
        pytest.param("example.com/a/b", False, False, id="not a qualified name"),
    ],
)
def test_resource_name_classes(name: str, extended: bool, scalar: bool) -> None:
    assert is_extended_resource_name(name) is extended
    assert is_scalar_resource_name(name) is scalar


# -- PodRequests (component-helpers TestPodResourceRequests) -------------------------------------


@pytest.mark.parametrize(
    ("containers", "init", "overhead", "want_milli_cpu", "want_memory"),
    [
        pytest.param(
            [ctr("c", {"cpu": "1"})],
            [ctr("i", {"cpu": "4"})],
            None,
            4000,  # max(sum(containers)=1, init=4)
            0,
            id="nil options, larger init container",
        ),
        pytest.param(
            [ctr("c1", {"cpu": "2"}), ctr("c2", {"cpu": "3"})],
            [ctr("i", {"cpu": "2"})],
            None,
            5000,  # max(2+3, 2)
            0,
            id="nil options, larger containers",
        ),
        pytest.param(
            [ctr("c1", {"cpu": "2"}), ctr("c2", {"cpu": "3"})],
            [ctr("i", {"cpu": "2"})],
            {"cpu": "1", "memory": "1Gi"},
            6000,  # max(5, 2) + overhead 1
            1024**3,  # overhead only
            id="pod overhead included",
        ),
        pytest.param(
            [ctr("regular", {"cpu": "1"})],
            [ctr("restartable-init", {"cpu": "1"}, sidecar=True)],
            None,
            2000,  # a sidecar runs alongside: 1 + 1
            0,
            id="restartable init container",
        ),
        pytest.param(
            [ctr("c", {"cpu": "1"})],
            [
                ctr("init-1", {"cpu": "5"}),
                ctr("restartable-init-1", {"cpu": "1"}, sidecar=True),
                ctr("restartable-init-2", {"cpu": "2"}, sidecar=True),
                ctr("restartable-init-3", {"cpu": "3"}, sidecar=True),
            ],
            None,
            # running: 1 + (1+2+3) = 7; init phases: 5, 1, 3, 6 → max 6; max(7, 6) = 7
            7000,
            0,
            id="multiple restartable init containers",
        ),
        pytest.param(
            [ctr("c", {"cpu": "1"})],
            [
                ctr("init-1", {"cpu": "5"}),
                ctr("restartable-init-1", {"cpu": "1"}, sidecar=True),
                ctr("restartable-init-2", {"cpu": "2"}, sidecar=True),
                ctr("init-2", {"cpu": "5"}),
                ctr("restartable-init-3", {"cpu": "3"}, sidecar=True),
            ],
            None,
            # running: 1 + 1+2+3 = 7; init phases: 5, 1, 3, 5+(1+2)=8, 6 → max 8; max(7, 8) = 8
            8000,
            0,
            id="multiple restartable and regular init containers",
        ),
        pytest.param(
            [ctr("c", {"cpu": "100"})],
            [ctr("restartable-init-1", {"cpu": "10"}, sidecar=True), ctr("init-1", {"cpu": "200"})],
            None,
            # running: 100 + 10 = 110; init phases: 10, 200 + 10 = 210 → 210
            210000,
            0,
            id="restartable-init, init and regular",
        ),
    ],
)
def test_pod_requests(
    containers: list[dict[str, Any]],
    init: list[dict[str, Any]],
    overhead: dict[str, str] | None,
    want_milli_cpu: int,
    want_memory: int,
) -> None:
    p = pod(containers, init, overhead=overhead)
    assert p.resources.requests.milli_cpu == want_milli_cpu
    assert p.resources.requests.memory == want_memory
    # Nothing was resized: what a NodeInfo counts is the same.
    assert p.resources.usage == p.resources.requests


INFEASIBLE = [{"type": "PodResizePending", "status": "True", "reason": "Infeasible"}]


def _status(name: str, actuated: dict[str, str] | None, allocated: dict[str, str] | None = None) -> dict[str, Any]:
    st: dict[str, Any] = {"name": name}
    if actuated is not None:
        st["resources"] = {"requests": dict(actuated)}
    if allocated is not None:
        st["allocatedResources"] = dict(allocated)
    return st


@pytest.mark.parametrize(
    ("containers", "init", "status", "want_usage_cpu", "want_spec_cpu"),
    [
        pytest.param(
            [ctr("container-1", {"cpu": "4"})],
            [],
            {"conditions": INFEASIBLE, "containerStatuses": [_status("container-1", {"cpu": "2"})]},
            2000,  # infeasible: max(actuated 2, allocated -) = 2
            4000,
            id="resized, infeasible",
        ),
        pytest.param(
            [ctr("container-1", {"cpu": "6"})],
            [],
            {"conditions": INFEASIBLE, "containerStatuses": [_status("container-1", {"cpu": "2"}, {"cpu": "4"})]},
            4000,  # infeasible: max(actuated 2, allocated 4) = 4 (spec 6 ignored)
            6000,
            id="resized, infeasible & in-progress",
        ),
        pytest.param(
            [ctr("container-1", {"cpu": "4"})],
            [],
            {"containerStatuses": [_status("container-1", {"cpu": "2"})]},
            4000,  # max(spec 4, actuated 2)
            4000,
            id="resized, no resize status",
        ),
        pytest.param(
            [],
            [ctr("restartable-init-1", {"cpu": "4"}, sidecar=True)],
            {"conditions": INFEASIBLE, "initContainerStatuses": [_status("restartable-init-1", {"cpu": "2"})]},
            2000,
            4000,
            id="resized, restartable init container, infeasible",
        ),
        pytest.param(
            [],
            [ctr("restartable-init-1", {"cpu": "4"}, sidecar=True)],
            {"initContainerStatuses": [_status("restartable-init-1", {"cpu": "2"})]},
            4000,
            4000,
            id="resized, restartable init container, no resize status",
        ),
    ],
)
def test_assigned_pods_count_resized_requests(
    containers: list[dict[str, Any]],
    init: list[dict[str, Any]],
    status: dict[str, Any],
    want_usage_cpu: int,
    want_spec_cpu: int,
) -> None:
    # usage is PodRequests with UseStatusResources (NodeInfo); requests is the spec (PreFilter, and
    # upstream's "..., but don't use status" cases).
    p = pod(containers, init, status=status)
    assert p.resources.usage.milli_cpu == want_usage_cpu
    assert p.resources.requests.milli_cpu == want_spec_cpu


def test_resized_per_resource_three_way_maximum() -> None:
    p = pod(
        [ctr("container-1", {"cpu": "30m", "memory": "20M", "ephemeral-storage": "10G"})],
        status={
            "containerStatuses": [
                _status(
                    "container-1",
                    {"cpu": "10m", "memory": "30M", "ephemeral-storage": "20G"},
                    {"cpu": "20m", "memory": "10M", "ephemeral-storage": "30G"},
                )
            ]
        },
    )
    # max(spec, actuated, allocated) per resource: cpu 30m (spec), memory 30M (actuated), storage 30G (allocated)
    usage = p.resources.usage
    assert (usage.milli_cpu, usage.memory, usage.ephemeral_storage) == (30, 30 * 10**6, 30 * 10**9)


def test_non_restartable_init_container_status_is_ignored() -> None:
    # Upstream only reads the status of restartable init containers.
    p = pod(
        [],
        [ctr("init-1", {"cpu": "4"})],
        status={"initContainerStatuses": [_status("init-1", {"cpu": "8"})]},
    )
    assert p.resources.usage.milli_cpu == 4000


# -- pod-level resources ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("containers", "init", "pod_level", "want"),
    [
        pytest.param(
            [ctr("c", {"cpu": "500m", "memory": "500Mi"})],
            [ctr("i", {"cpu": "500m", "memory": "500Mi"})],
            {"cpu": "1200m", "memory": "1200Mi"},
            (1200, 1200 * Mi, 1200, 1200 * Mi),  # pod-level replaces both
            id="1X container and 1X init container with pod-level requests",
        ),
        pytest.param(
            [ctr("c", {"cpu": "500m", "memory": "500Mi"})],
            [ctr("i", {"cpu": "500m", "memory": "500Mi"}, sidecar=True)],
            {"cpu": "1200m", "memory": "1200Mi"},
            (1200, 1200 * Mi, 1200, 1200 * Mi),
            id="1X container and 1X sidecar container with pod-level requests",
        ),
        pytest.param(
            [ctr("c", {})],
            [ctr("i", {})],
            {"memory": "1200Mi"},
            # cpu is missing everywhere: the non-zero default 100m applies; memory is pod-level's
            (0, 1200 * Mi, DEFAULT_MILLI_CPU, 1200 * Mi),
            id="1X container with pod-level memory requests",
        ),
        pytest.param(
            [ctr("c", {})],
            [ctr("i", {})],
            {"cpu": "500m"},
            # memory default per container: running 200Mi, init 200Mi → max 200Mi
            (500, 0, 500, DEFAULT_MEMORY),
            id="1X container with pod-level cpu requests",
        ),
    ],
)
def test_pod_level_requests_and_non_zero(
    containers: list[dict[str, Any]],
    init: list[dict[str, Any]],
    pod_level: dict[str, str],
    want: tuple[int, int, int, int],
) -> None:
    r = pod(containers, init, pod_level=pod_level).resources
    assert (r.requests.milli_cpu, r.requests.memory, r.non0_cpu, r.non0_mem) == want


def test_pod_level_keeps_container_level_unsupported_resources() -> None:
    # "1X container unsupported resources and pod-level supported resources": ephemeral-storage is
    # no pod-level resource, so containers' max(init 500Mi, running 800Mi) stays.
    r = pod(
        [ctr("c", {"ephemeral-storage": "800Mi"})],
        [ctr("i", {"ephemeral-storage": "500Mi"})],
        pod_level={"cpu": "500m"},
    ).resources
    assert (r.requests.milli_cpu, r.requests.ephemeral_storage) == (500, 800 * Mi)
    assert (r.non0_cpu, r.non0_mem) == (500, DEFAULT_MEMORY)


def test_pod_level_hugepages_override_container_hugepages() -> None:
    r = pod([ctr("c", {"hugepages-2Mi": "3"})], pod_level={"cpu": "3m", "hugepages-2Mi": "5"}).resources
    assert r.requests.scalar == {"hugepages-2Mi": 5}
    assert r.requests.milli_cpu == 3


def test_pod_level_unsupported_resource_alone_is_not_pod_level() -> None:
    # IsPodLevelRequestsSet: only cpu, memory and hugepages-* count; ephemeral-storage alone is ignored.
    r = pod([ctr("c", {"cpu": "1"})], pod_level={"ephemeral-storage": "1Gi"}).resources
    assert r.requests.milli_cpu == 1000
    assert r.requests.ephemeral_storage == 0


def test_pod_level_plus_overhead() -> None:
    # PodRequests adds the overhead after the pod-level override.
    r = pod([ctr("c", {"cpu": "1"})], pod_level={"cpu": "2"}, overhead={"cpu": "250m"}).resources
    assert r.requests.milli_cpu == 2250


# -- non-zero requests (PodInfo.CalculateResource) -----------------------------------------------


@pytest.mark.parametrize(
    ("containers", "init", "want"),
    [
        pytest.param([ctr("c")], [], (0, 0, DEFAULT_MILLI_CPU, DEFAULT_MEMORY), id="requestless container"),
        pytest.param(
            [ctr("c", {"cpu": "500m", "memory": "500Mi"})],
            [],
            (500, 500 * Mi, 500, 500 * Mi),
            id="1X container with requests",
        ),
        pytest.param(
            [ctr("c1", {"cpu": "500m", "memory": "500Mi"}), ctr("c2", {"cpu": "700m", "memory": "800Mi"})],
            [],
            (1200, 1300 * Mi, 1200, 1300 * Mi),
            id="2X container with requests",
        ),
        pytest.param(
            [ctr("c", {"cpu": "0", "memory": "0"})],
            [],
            (0, 0, 0, 0),  # applyNonMissing: listed (even as 0) means no default
            id="explicit zero requests get no default",
        ),
        pytest.param(
            [ctr("c", {"cpu": "250m"})],
            [],
            (250, 0, 250, DEFAULT_MEMORY),  # default only for the missing name
            id="default only for the missing resource",
        ),
        pytest.param(
            [ctr("c1"), ctr("c2")],
            [],
            (0, 0, 2 * DEFAULT_MILLI_CPU, 2 * DEFAULT_MEMORY),  # per container
            id="defaults are per container",
        ),
        pytest.param(
            [],
            [],
            (0, 0, 0, 0),  # no container, nothing to default
            id="no containers at all",
        ),
        pytest.param(
            [ctr("c")],
            [ctr("i", {"cpu": "1"})],
            # running: 100m, 200Mi; init: 1000m, default 200Mi → max: 1000m, 200Mi
            (1000, 0, 1000, DEFAULT_MEMORY),
            id="init container defaults are maxed, not added",
        ),
    ],
)
def test_non_zero_requests(
    containers: list[dict[str, Any]], init: list[dict[str, Any]], want: tuple[int, int, int, int]
) -> None:
    r = pod(containers, init).resources
    assert (r.usage.milli_cpu, r.usage.memory, r.non0_cpu, r.non0_mem) == want


def test_non_zero_with_overhead() -> None:
    # The overhead is added to the defaulted requests too: 100m + 10m, 200Mi + 1Mi.
    r = pod([ctr("c")], overhead={"cpu": "10m", "memory": "1Mi"}).resources
    assert (r.non0_cpu, r.non0_mem) == (110, DEFAULT_MEMORY + Mi)


# -- host ports (schedutil.GetHostPorts + HostPortInfo.sanitize) --------------------------------


def test_host_ports_are_sanitized_and_sidecars_count() -> None:
    raw = [
        {"containerPort": 80, "hostPort": 80},  # no protocol, no hostIP → TCP on 0.0.0.0
        {"containerPort": 53, "hostPort": 53, "protocol": "UDP", "hostIP": "127.0.0.1"},
        {"containerPort": 9090},  # no hostPort: not a host port
        {"containerPort": 9091, "hostPort": 0},
    ]
    containers = [{"name": "c", "image": "pause", "ports": raw}]
    init = [
        {"name": "init", "image": "pause", "ports": [{"containerPort": 81, "hostPort": 81}]},  # not a sidecar
        {
            "name": "sidecar",
            "image": "pause",
            "restartPolicy": "Always",
            "ports": [{"containerPort": 82, "hostPort": 82, "protocol": "SCTP"}],
        },
    ]
    p = pod(containers, init)
    # Sidecars first, then app containers (GetHostPorts' order).
    assert p.resources.host_ports == (
        HostPort("0.0.0.0", "SCTP", 82),
        HostPort("0.0.0.0", "TCP", 80),
        HostPort("127.0.0.1", "UDP", 53),
    )


# -- node allocatable (NodeInfo.SetNode) ---------------------------------------------------------


def test_node_allocatable() -> None:
    node = (
        make_node("n")
        .capacity(cpu="1")  # capacity is not what the scheduler reads
        .allocatable(
            cpu="3500m",
            memory="8Gi",
            pods="110",
            **{"ephemeral-storage": "100Gi", "example.com/foo": "2", "hugepages-2Mi": "4Mi", "storage": "5"},
        )
        .build()
    )
    a = node.allocatable
    assert (a.milli_cpu, a.memory, a.allowed_pod_number, a.ephemeral_storage) == (3500, 8 * 2**30, 110, 100 * 2**30)
    # Scalar: extended and hugepages; a native name the scheduler does not count ("storage") is dropped.
    assert dict(a.scalar) == {"example.com/foo": 2, "hugepages-2Mi": 4 * Mi}


def test_node_without_allocatable_offers_nothing() -> None:
    raw = make_node("n").dict()
    del raw["status"]["allocatable"]
    a = Node.from_dict(raw).allocatable
    assert (a.milli_cpu, a.memory, a.allowed_pod_number, dict(a.scalar)) == (0, 0, 0, {})


# -- NodeInfo totals (TestNodeInfoAddPod / TestNodeInfoRemovePod / TestUpdateUsedPorts) ----------


def _port_pod(
    name: str, requests: dict[str, str], *ports: dict[str, Any], overhead: dict[str, str] | None = None
) -> Pod:
    c = ctr("c", requests)
    c["ports"] = list(ports)
    return pod([c], name=name, node="node-1", overhead=overhead)


def test_node_info_add_and_remove_pod() -> None:
    p1 = _port_pod("test-1", {"cpu": "100m", "memory": "500"}, {"hostIP": "127.0.0.1", "hostPort": 80})
    p2 = _port_pod(
        "test-2",
        {"cpu": "200m", "memory": "1Ki"},
        {"hostIP": "127.0.0.1", "hostPort": 8080, "protocol": "TCP"},
        overhead={"cpu": "500m", "memory": "500"},
    )
    p3 = _port_pod("test-3", {}, {"hostPort": 8081, "protocol": "UDP"}, overhead={"cpu": "500m", "memory": "500"})
    info = NodeInfo(make_node("node-1").build())
    for p in (p1, p2, p3):
        info.add_pod(p)
    # cpu: 100 + (200 + 500) + (0 + 500) = 1300m; memory: 500 + (1024 + 500) + (0 + 500) = 2524
    assert (info.requested_milli_cpu, info.requested_memory) == (1300, 2524)
    # non-zero: p3's container lists no requests at all → defaults 100m / 200Mi, plus its overhead
    assert (info.non0_cpu, info.non0_mem) == (100 + 700 + 600, 500 + 1524 + DEFAULT_MEMORY + 500)
    assert set(info.used_ports) == {
        HostPort("127.0.0.1", "TCP", 80),
        HostPort("127.0.0.1", "TCP", 8080),
        HostPort("0.0.0.0", "UDP", 8081),
    }
    assert len(info.pods) == 3

    removed = info.remove_pod(p2.key)
    assert removed is p2
    assert (info.requested_milli_cpu, info.requested_memory) == (600, 1000)
    assert (info.non0_cpu, info.non0_mem) == (700, 500 + DEFAULT_MEMORY + 500)
    assert set(info.used_ports) == {HostPort("127.0.0.1", "TCP", 80), HostPort("0.0.0.0", "UDP", 8081)}
    assert info.remove_pod(p2.key) is None  # removing again changes nothing
    assert info.requested_milli_cpu == 600


def test_node_info_removing_one_of_two_pods_on_a_port_frees_it() -> None:
    """Upstream's ``HostPortInfo`` is a set, not a count: two pods bound to one node with the same
    hostPort hold it once, and removing either frees it (NodePorts then lets a third pod take it)."""
    info = NodeInfo(make_node("node-1").build())
    info.add_pod(_port_pod("a", {}, {"hostPort": 80}))
    info.add_pod(_port_pod("b", {}, {"hostPort": 80}))
    assert info.used_ports == {HostPort("0.0.0.0", "TCP", 80)}
    info.remove_pod(_port_pod("a", {}, {"hostPort": 80}).key)
    assert not info.used_ports
    assert len(info.pods) == 1


def test_a_port_freed_while_the_node_was_gone_stays_free_when_it_returns() -> None:
    """Upstream's cache keeps a deleted node's NodeInfo while pods remain on it, and removes pods from
    that one: a port freed meanwhile (two holders, one deleted) is still free once the node is back."""
    cache = Cache()
    cache.add_node(make_node("node-1").build())
    a, b = _port_pod("a", {}, {"hostPort": 80}), _port_pod("b", {}, {"hostPort": 80})
    cache.add_pod(a)
    cache.remove_node("node-1")
    cache.add_pod(b)  # its watch event came after the node's delete
    cache.remove_pod(a)
    cache.add_node(make_node("node-1").build())
    info = cache.get("node-1")
    assert info is not None and list(info.pods) == [b.key]
    assert not info.used_ports


def test_node_info_add_pod_replaces_an_earlier_version() -> None:
    info = NodeInfo(make_node("node-1").build())
    info.add_pod(_port_pod("p", {"cpu": "1"}, {"hostPort": 80}))
    info.add_pod(_port_pod("p", {"cpu": "2"}, {"hostPort": 81}))
    assert len(info.pods) == 1
    assert info.requested_milli_cpu == 2000
    assert set(info.used_ports) == {HostPort("0.0.0.0", "TCP", 81)}


def test_node_info_counts_scalar_and_ephemeral_storage() -> None:
    info = NodeInfo(make_node("node-1").build())
    info.add_pod(pod([ctr("c", {"example.com/foo": "2", "ephemeral-storage": "1Gi"})], name="a", node="node-1"))
    info.add_pod(pod([ctr("c", {"example.com/foo": "3"})], name="b", node="node-1"))
    assert info.requested_scalar["example.com/foo"] == 5
    assert info.requested_ephemeral_storage == 2**30
    info.remove_pod(make_pod("a").build().key)
    assert info.requested_scalar["example.com/foo"] == 3
    assert info.requested_ephemeral_storage == 0


def test_parsed_quantities_are_remembered_only_when_short_and_valid() -> None:
    """The parse cache is bounded in entries and in the length of what it keeps; errors are not kept."""
    quantity._parse_short.cache_clear()
    assert parse_quantity("32Gi") == 32 * 2**30 and parse_quantity("32Gi") == 32 * 2**30
    assert quantity._parse_short.cache_info().hits == 1
    long = "0" * 100 + "1"
    assert parse_quantity(long) == 1
    for bad in ("1K", "1K"):
        with pytest.raises(ValueError, match="suffix"):
            parse_quantity(bad)
    assert quantity._parse_short.cache_info().currsize == 1  # "32Gi" only
    for i in range(quantity._REMEMBERED + 10):
        parse_quantity(f"{i}m")
    assert quantity._parse_short.cache_info().currsize == quantity._REMEMBERED
