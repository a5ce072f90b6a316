"""Bad input through the real kube-apiserver v1.35.4: refused objects, and hostile objects it accepts.

Each object is first offered to the API server. What it refuses (422 naming the field, or 400 for
a quantity it cannot decode) is asserted as refused, and the same object then goes through
``simulate``, where our parser must name the same field. What it accepts goes to the live
scheduler, which must either bind it correctly or leave it ``PodScheduled=False`` with upstream's
message and a ``FailedScheduling`` Event, and then still bind a normal pod created right after.

Priorities and PDBs (issue #19): a missing PriorityClass (admission's 403), a priority beyond int32
(the decoder's 400), PriorityClasses above 1e9 or misusing a system name and a PDB with a malformed
selector (422) are refused, and named alike by our parsers; a negative class is admitted and binds.

Measured on v1.35.4: refused 25 kinds (22 pods in ``REFUSED``, 6 of them inter-pod affinity; 3 nodes in
``REFUSED_NODES``), accepted 22 (the tests after them; the 8 inter-pod affinity cases also go through
kube-scheduler with its default profile, which must end each the same way).
Nothing sleeps to synchronise: every wait is ``wait_for`` on a condition with a timeout.
"""

from __future__ import annotations

import json
import time
import uuid
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client

from e2e.conftest import SchedulerProcess
from e2e.kube_helpers import (
    HOSTNAME,
    ZONE,
    events_for,
    node_body,
    node_of,
    pod_body,
    scheduled_condition,
    wait_for,
    wait_unschedulable,
    without_preemption,
    zone_spread,
)
from scheduler.api.disruptionbudget import PodDisruptionBudget
from scheduler.api.objects import Node, Pod
from scheduler.api.priorityclass import PriorityClass
from scheduler.config import load_config
from scheduler.simulate import Simulation
from scheduler.testing import spread_constraint
from tests.helpers import NO_CLAIMS, preemption_not_helpful

APP = {"app": "web"}
QUANTITY = "quantities must match the regular expression"
AFFINITY_REASON = "node(s) didn't match Pod's node affinity/selector"
MISSING_LABEL = "node(s) didn't match pod topology spread constraints (missing required label)"


def constraint(**fields: Any) -> dict[str, Any]:
    return spread_constraint(APP, **fields)


def spread_pod(*constraints: dict[str, Any]) -> dict[str, Any]:
    return pod_body("bad", APP, topologySpreadConstraints=list(constraints))


def requests_pod(**requests: str) -> dict[str, Any]:
    return pod_body("bad", containers=[{"name": "c", "image": "x", "resources": {"requests": requests}}])


def ports_pod(*containers: list[dict[str, Any]]) -> dict[str, Any]:
    return pod_body("bad", containers=[{"name": f"c{i}", "image": "x", "ports": p} for i, p in enumerate(containers)])


def required_affinity(*expressions: dict[str, Any]) -> dict[str, Any]:
    terms = [{"matchExpressions": list(expressions)}]
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}


REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
POD_AFFINITY_REASON = "node(s) didn't match pod affinity rules"
POD_ANTI_AFFINITY_REASON = "node(s) didn't match pod anti-affinity rules"


def affinity_term(topology_key: str = HOSTNAME, **fields: Any) -> dict[str, Any]:
    """A PodAffinityTerm selecting the app=web pods (``labelSelector=None`` leaves it out: nil selects none)."""
    term: dict[str, Any] = {"labelSelector": {"matchLabels": APP}, "topologyKey": topology_key, **fields}
    return {k: v for k, v in term.items() if v is not None}


def pod_affinity(
    kind: str = "podAffinity", required: list[Any] | None = None, preferred: list[Any] | None = None
) -> dict[str, Any]:
    """``spec.affinity`` with inter-pod terms of one kind (``podAffinity`` or ``podAntiAffinity``)."""
    rules: dict[str, Any] = {}
    if required is not None:
        rules[REQUIRED] = required
    if preferred is not None:
        rules[PREFERRED] = preferred
    return {kind: rules}


def affinity_pod(**kwargs: Any) -> dict[str, Any]:
    return pod_body("bad", affinity=pod_affinity(**kwargs))


def _path(kind: str, rule: str, i: int = 0) -> str:
    return f"spec.affinity.{kind}.{rule}[{i}]" + (".podAffinityTerm" if rule == PREFERRED else "")


# (object, HTTP status, text in the API's message, text in our simulate message). The field path is
# in both; where the two servers word the rest differently, the part they share is what is compared.
REFUSED = [
    pytest.param(
        spread_pod(constraint(maxSkew=0)),
        422,
        "spec.topologySpreadConstraints[0].maxSkew: Invalid value: 0: must be greater than zero",
        "spec.topologySpreadConstraints[0].maxSkew: must be greater than zero",
        id="max-skew-zero",
    ),
    pytest.param(
        spread_pod(constraint(maxSkew=-1)),
        422,
        "spec.topologySpreadConstraints[0].maxSkew: Invalid value: -1: must be greater than zero",
        "spec.topologySpreadConstraints[0].maxSkew: must be greater than zero",
        id="max-skew-negative",
    ),
    pytest.param(
        spread_pod(constraint(minDomains=2, whenUnsatisfiable="ScheduleAnyway")),
        422,
        "spec.topologySpreadConstraints[0].minDomains: Invalid value: 2: can only use minDomains if "
        "whenUnsatisfiable=DoNotSchedule, not ScheduleAnyway",
        "spec.topologySpreadConstraints[0].minDomains: Invalid value: 2: can only use minDomains if "
        "whenUnsatisfiable=DoNotSchedule, not ScheduleAnyway",
        id="min-domains-with-schedule-anyway",
    ),
    pytest.param(
        spread_pod(constraint(minDomains=0)),
        422,
        "spec.topologySpreadConstraints[0].minDomains: Invalid value: 0: must be greater than zero",
        "spec.topologySpreadConstraints[0].minDomains: must be greater than zero",
        id="min-domains-zero",
    ),
    pytest.param(
        spread_pod(constraint(whenUnsatisfiable="Sometimes")),
        422,
        'spec.topologySpreadConstraints[0].whenUnsatisfiable: Unsupported value: "Sometimes": '
        'supported values: "DoNotSchedule", "ScheduleAnyway"',
        'spec.topologySpreadConstraints[0].whenUnsatisfiable: Unsupported value: "Sometimes": '
        'supported values: "DoNotSchedule", "ScheduleAnyway"',
        id="when-unsatisfiable-unknown",
    ),
    pytest.param(
        spread_pod(constraint(labelSelector={"matchExpressions": [{"key": "app", "operator": "Gt", "values": ["1"]}]})),
        422,
        'spec.topologySpreadConstraints[0].labelSelector.matchExpressions[0].operator: Invalid value: "Gt"',
        'spec.topologySpreadConstraints[0].labelSelector.matchExpressions[0].operator: Unsupported value: "Gt"',
        id="selector-operator-gt",
    ),
    pytest.param(
        spread_pod(
            constraint(labelSelector={"matchExpressions": [{"key": "app", "operator": "In", "values": ["a b"]}]})
        ),
        422,
        'spec.topologySpreadConstraints[0].labelSelector.matchExpressions[0].values[0]: Invalid value: "a b"',
        'spec.topologySpreadConstraints[0].labelSelector.matchExpressions[0].values[0]: Invalid value: "a b"',
        id="selector-value-invalid",
    ),
    pytest.param(
        pod_body("bad", affinity=required_affinity({"key": "cores", "operator": "Like", "values": ["1"]})),
        422,
        "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
        '.matchExpressions[0].operator: Invalid value: "Like": not a valid selector operator',
        "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
        '.matchExpressions[0].operator: Unsupported value: "Like"',
        id="affinity-operator-unknown",
    ),
    pytest.param(
        spread_pod(constraint(), constraint(maxSkew=2)),
        422,
        # Upstream reports the pair at the first index, we at the second (tests/test_validation.py says so).
        f'{{topologyKey, whenUnsatisfiable}}: Duplicate value: "{{{ZONE}, DoNotSchedule}}"',
        f'{{topologyKey, whenUnsatisfiable}}: Duplicate value: "{{{ZONE}, DoNotSchedule}}"',
        id="duplicate-key-and-policy",
    ),
    pytest.param(
        pod_body("bad", tolerations=[{"key": "k", "operator": "Exists", "effect": "Sometimes"}]),
        422,
        'spec.tolerations[0].effect: Unsupported value: "Sometimes"',
        'spec.tolerations[0].effect: Unsupported value: "Sometimes"',
        id="toleration-effect-unknown",
    ),
    pytest.param(
        pod_body("bad", {"app": "v" * 64}),
        422,
        f'metadata.labels: Invalid value: "{"v" * 64}": must be no more than 63',
        f'metadata.labels: Invalid value: "{"v" * 64}": must be no more than 63',
        id="label-value-64-chars",
    ),
    pytest.param(
        requests_pod(cpu="1.5.5"),
        400,
        QUANTITY,
        f'spec.containers[0].resources.requests[cpu]: Invalid value: "1.5.5": {QUANTITY}',
        id="request-two-dots",
    ),
    pytest.param(
        requests_pod(cpu="-1"),
        422,
        'spec.containers[0].resources.requests[cpu]: Invalid value: "-1": must be greater than or equal to 0',
        'spec.containers[0].resources.requests[cpu]: Invalid value: "-1": must be greater than or equal to 0',
        id="request-negative",
    ),
    pytest.param(
        requests_pod(memory="abc"),
        400,
        QUANTITY,
        f'spec.containers[0].resources.requests[memory]: Invalid value: "abc": {QUANTITY}',
        id="request-not-a-number",
    ),
    pytest.param(
        ports_pod([{"containerPort": 80, "hostPort": 70000}]),
        422,
        "spec.containers[0].ports[0].hostPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
        "spec.containers[0].ports[0].hostPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
        id="host-port-out-of-range",
    ),
    pytest.param(
        ports_pod([{"containerPort": 80, "hostPort": 8080}], [{"containerPort": 81, "hostPort": 8080}]),
        422,
        'spec.containers[1].ports[0].hostPort: Duplicate value: "TCP//8080"',
        None,  # like upstream's scheduler we do not validate duplicates: the pod is simply scheduled
        id="host-port-duplicate",
    ),
    # -- inter-pod affinity: what the API server refuses, and simulate names ---------------------------
    pytest.param(
        affinity_pod(required=[affinity_term("")]),
        422,
        f"{_path('podAffinity', REQUIRED)}.topologyKey: Required value: can not be empty",
        f"{_path('podAffinity', REQUIRED)}.topologyKey: Required value: can not be empty",
        id="pod-affinity-empty-topology-key",
    ),
    pytest.param(
        affinity_pod(kind="podAntiAffinity", preferred=[{"weight": 1, "podAffinityTerm": affinity_term("")}]),
        422,
        f"{_path('podAntiAffinity', PREFERRED)}.topologyKey: Required value: can not be empty",
        f"{_path('podAntiAffinity', PREFERRED)}.topologyKey: Required value: can not be empty",
        id="pod-anti-affinity-preferred-empty-topology-key",
    ),
    pytest.param(
        affinity_pod(
            kind="podAntiAffinity",
            required=[
                affinity_term(labelSelector={"matchExpressions": [{"key": "app", "operator": "Near", "values": ["x"]}]})
            ],
        ),
        422,
        f'{_path("podAntiAffinity", REQUIRED)}.labelSelector.matchExpressions[0].operator: Invalid value: "Near"',
        f'{_path("podAntiAffinity", REQUIRED)}.labelSelector.matchExpressions[0].operator: Unsupported value: "Near"',
        id="pod-anti-affinity-selector-operator-unknown",
    ),
    pytest.param(
        affinity_pod(
            required=[affinity_term(namespaceSelector={"matchExpressions": [{"key": "team", "operator": "In"}]})]
        ),
        422,
        f"{_path('podAffinity', REQUIRED)}.namespaceSelector.matchExpressions[0].values: Required value: must be "
        "specified when `operator` is 'In' or 'NotIn'",
        f"{_path('podAffinity', REQUIRED)}.namespaceSelector.matchExpressions[0].values: must be "
        "specified when `operator` is 'In' or 'NotIn'",
        id="pod-affinity-namespace-selector-in-without-values",
    ),
    pytest.param(
        affinity_pod(preferred=[{"weight": 0, "podAffinityTerm": affinity_term()}]),
        422,
        f"spec.affinity.podAffinity.{PREFERRED}[0].weight: Invalid value: 0: must be in the range 1-100",
        f"spec.affinity.podAffinity.{PREFERRED}[0].weight: Invalid value: 0: must be in the range 1-100",
        id="pod-affinity-weight-zero",
    ),
    pytest.param(
        affinity_pod(required=[affinity_term(namespaces=["Bad_NS"])]),
        422,
        # "namespace", not "namespaces[0]": upstream's own path (validatePodAffinityTerm).
        f'{_path("podAffinity", REQUIRED)}.namespace: Invalid value: "Bad_NS"',
        f'{_path("podAffinity", REQUIRED)}.namespace: Invalid value: "Bad_NS"',
        id="pod-affinity-namespace-name-invalid",
    ),
]


def _simulate(obj: dict[str, Any]) -> str:
    """The object's fate in ``simulate`` next to one healthy node: the pod's message."""
    sim = Simulation(load_config(None), seed=0)
    healthy = node_body("n1", labels={ZONE: "a"})
    sim.add_objects([healthy, {**obj, "metadata": {**obj["metadata"], "namespace": "default"}}])
    (attempt,) = sim.run()
    return attempt.message if attempt.host is None else f"bound to {attempt.host}"


@pytest.mark.parametrize(("obj", "status", "api_text", "our_text"), REFUSED)
def test_refused_pod_is_refused_by_the_api_and_named_by_simulate(
    core: client.CoreV1Api, namespace: str, obj: dict[str, Any], status: int, api_text: str, our_text: str | None
) -> None:
    with pytest.raises(client.ApiException) as refused:
        core.create_namespaced_pod(namespace, obj)
    assert refused.value.status == status
    assert api_text in json.loads(refused.value.body)["message"]
    message = _simulate(obj)
    if our_text is None:
        assert Pod.from_dict(obj).errors == ()
        assert message == "bound to n1"
    else:
        assert message.startswith("invalid pod: ") and our_text in message, message


REFUSED_NODES = [
    pytest.param(
        node_body("bad", taints=[{"key": "k", "effect": "Sometimes"}]),
        422,
        # The API server says metadata.taints (upstream's own path slip); the field is spec.taints.
        'taints[0].effect: Unsupported value: "Sometimes"',
        'spec.taints[0].effect: Unsupported value: "Sometimes"',
        "bound",  # TaintToleration filters NoSchedule/NoExecute only, as upstream: the taint is inert
        id="node-taint-effect-unknown",
    ),
    pytest.param(
        node_body("bad", cpu="1.5.5"),
        400,
        QUANTITY,
        f'status.allocatable[cpu]: Invalid value: "1.5.5": {QUANTITY}',
        f"0/1 nodes are available: 1 Insufficient cpu. {NO_CLAIMS}, {preemption_not_helpful(1)}",  # cpu counts as none
        id="node-allocatable-two-dots",
    ),
    pytest.param(
        node_body("bad", cpu="-1"),
        422,
        'status.allocatable.cpu: Invalid value: "-1": must be greater than or equal to 0',
        None,  # not an error of ours (nodes are not validated): the node just fits nothing
        f"0/1 nodes are available: 1 Insufficient cpu. {NO_CLAIMS}, {preemption_not_helpful(1)}",
        id="node-allocatable-negative",
    ),
]


@pytest.mark.parametrize(("obj", "status", "api_text", "our_text", "outcome"), REFUSED_NODES)
def test_refused_node_is_refused_by_the_api_and_named_by_our_parser(
    core: client.CoreV1Api, obj: dict[str, Any], status: int, api_text: str, our_text: str | None, outcome: str
) -> None:
    obj = {**obj, "metadata": {**obj["metadata"], "name": f"bad-{uuid.uuid4().hex[:6]}"}}
    with pytest.raises(client.ApiException) as refused:
        core.create_node(obj)
    assert refused.value.status == status
    assert api_text in json.loads(refused.value.body)["message"]
    errors = "; ".join(str(e) for e in Node.from_dict(obj).errors)
    assert (our_text in errors) if our_text else errors == "", errors
    sim = Simulation(load_config(None), seed=0)
    sim.add_objects([obj, requests_pod(cpu="1")])
    (attempt,) = sim.run()
    assert (attempt.message if attempt.host is None else "bound") == outcome


# -- accepted by the API server: the live scheduler's outcome -----------------------------------------


def _failed(core: client.CoreV1Api, namespace: str, name: str, message: str) -> None:
    """PodScheduled=False with exactly ``message``, and one FailedScheduling Event saying it."""
    cond = wait_unschedulable(core, namespace, name)
    assert (cond.reason, cond.message) == ("Unschedulable", message)
    events = wait_for(
        lambda: [e for e in events_for(core, namespace, name) if e["reason"] == "FailedScheduling"], 30, "event"
    )
    assert [(e["type"], e["note"]) for e in events] == [("Warning", message)]
    time.sleep(1.5)  # a retry (backoff 1 s) would have posted a second one by now
    events = [e for e in events_for(core, namespace, name) if e["reason"] == "FailedScheduling"]
    assert [(e["type"], e["note"]) for e in events] == [("Warning", message)]
    assert node_of(core, namespace, name) is None


def _bound(core: client.CoreV1Api, namespace: str, name: str) -> str:
    return wait_for(lambda: node_of(core, namespace, name), 30, f"{name} bound")


def _a_normal_pod_still_binds(core: client.CoreV1Api, namespace: str) -> str:
    """The scheduler keeps scheduling the other pods."""
    name = f"normal-{uuid.uuid4().hex[:6]}"
    core.create_namespaced_pod(namespace, pod_body(name))
    return _bound(core, namespace, name)


@pytest.fixture
def two_zones(nodes: Callable[..., str]) -> list[str]:
    return [nodes("a", labels={ZONE: "a"}), nodes("b", labels={ZONE: "b"})]


def test_gt_with_a_non_integer_matches_no_node(
    core: client.CoreV1Api, scheduler: SchedulerProcess, namespace: str, two_zones: list[str]
) -> None:
    """``Gt ["abc"]`` is valid to the API; the term matches no node, as upstream's selector says."""
    affinity = required_affinity({"key": "cores", "operator": "Gt", "values": ["abc"]})
    core.create_namespaced_pod(namespace, pod_body("gt", affinity=affinity))
    _failed(
        core, namespace, "gt", f"0/2 nodes are available: 2 {AFFINITY_REASON}. {NO_CLAIMS}, {preemption_not_helpful(2)}"
    )
    _a_normal_pod_still_binds(core, namespace)


def test_topology_key_no_node_has(
    core: client.CoreV1Api, scheduler: SchedulerProcess, namespace: str, two_zones: list[str]
) -> None:
    spread = constraint(topologyKey="example.com/nobody-has-this")
    core.create_namespaced_pod(namespace, pod_body("nokey", APP, topologySpreadConstraints=[spread]))
    _failed(
        core,
        namespace,
        "nokey",
        f"0/2 nodes are available: 2 {MISSING_LABEL}. {NO_CLAIMS}, {preemption_not_helpful(2)}",
    )
    _a_normal_pod_still_binds(core, namespace)


def test_request_no_node_can_hold(
    core: client.CoreV1Api, scheduler: SchedulerProcess, namespace: str, two_zones: list[str]
) -> None:
    """A valid but absurd quantity (a million cores): Insufficient cpu, not a crash or an overflow."""
    huge = requests_pod(cpu="1000000")
    huge["metadata"]["name"] = "huge"
    core.create_namespaced_pod(namespace, huge)
    _failed(
        core,
        namespace,
        "huge",
        f"0/2 nodes are available: 2 Insufficient cpu. {NO_CLAIMS}, {preemption_not_helpful(2)}",
    )
    _a_normal_pod_still_binds(core, namespace)


def test_63_character_label_values_and_null_fields_schedule(
    core: client.CoreV1Api, scheduler: SchedulerProcess, namespace: str, two_zones: list[str]
) -> None:
    long = {"app": "v" * 63}
    core.create_namespaced_pod(namespace, pod_body("long", long, topologySpreadConstraints=[zone_spread(1, long)]))
    nulls = pod_body("nulls", tolerations=None, nodeSelector=None, affinity=None, topologySpreadConstraints=None)
    core.create_namespaced_pod(namespace, nulls)
    no_selector = constraint(labelSelector=None)  # selects no pod: skew 0 everywhere
    core.create_namespaced_pod(namespace, pod_body("no-selector", APP, topologySpreadConstraints=[no_selector]))
    for name in ("long", "nulls", "no-selector"):
        assert _bound(core, namespace, name) in two_zones


def test_selector_with_1000_expressions_and_pod_with_100_constraints(
    core: client.CoreV1Api, scheduler: SchedulerProcess, namespace: str, nodes: Callable[..., str]
) -> None:
    keys = {f"example.com/k{i}": "x" for i in range(100)}
    targets = [nodes("a", labels={ZONE: "a", **keys}), nodes("b", labels={ZONE: "b", **keys})]
    exprs = [{"key": f"k{i}", "operator": "In", "values": [f"v{i}"]} for i in range(1000)]
    big = constraint(labelSelector={"matchExpressions": exprs})
    core.create_namespaced_pod(namespace, pod_body("big-selector", APP, topologySpreadConstraints=[big]))
    many = [constraint(topologyKey=key) for key in keys]
    core.create_namespaced_pod(namespace, pod_body("many", APP, topologySpreadConstraints=many))
    assert _bound(core, namespace, "big-selector") in targets
    assert _bound(core, namespace, "many") in targets
    # 100 constraints on keys no node carries: refused, naming the missing label.
    absent = [constraint(topologyKey=f"example.com/k{i}") for i in range(100, 200)]
    core.create_namespaced_pod(namespace, pod_body("many-absent", APP, topologySpreadConstraints=absent))
    _failed(
        core,
        namespace,
        "many-absent",
        f"0/2 nodes are available: 2 {MISSING_LABEL}. {NO_CLAIMS}, {preemption_not_helpful(2)}",
    )
    _a_normal_pod_still_binds(core, namespace)


def test_node_with_500_labels_and_node_with_500_taints(
    core: client.CoreV1Api, scheduler: SchedulerProcess, namespace: str, nodes: Callable[..., str]
) -> None:
    labelled = nodes("labels", labels={f"example.com/l{i}": str(i) for i in range(500)})
    taints = [{"key": f"example.com/t{i}", "value": "v", "effect": "NoSchedule"} for i in range(500)]
    tainted = nodes("taints", labels={"pin": "tainted"}, taints=taints)
    core.create_namespaced_pod(namespace, pod_body("to-labels", nodeSelector={"example.com/l499": "499"}))
    assert _bound(core, namespace, "to-labels") == labelled
    core.create_namespaced_pod(namespace, pod_body("to-taints", nodeSelector={"pin": "tainted"}))
    _failed(
        core,
        namespace,
        "to-taints",
        f"0/2 nodes are available: 1 {AFFINITY_REASON}, 1 node(s) had untolerated taint(s). {NO_CLAIMS}, "
        + preemption_not_helpful(2),
    )
    tolerate_all = [{"operator": "Exists"}]
    core.create_namespaced_pod(
        namespace, pod_body("tolerant", nodeSelector={"pin": "tainted"}, tolerations=tolerate_all)
    )
    assert _bound(core, namespace, "tolerant") == tainted
    assert _a_normal_pod_still_binds(core, namespace) == labelled  # the only node without taints


def test_node_with_null_spec_and_no_status_fits_no_pod(
    core: client.CoreV1Api, scheduler: SchedulerProcess, namespace: str, nodes: Callable[..., str]
) -> None:
    """No allocatable means room for nothing, not even one pod (``Too many pods``), as upstream."""
    bare = f"bare-{uuid.uuid4().hex[:5]}"
    core.create_node({"apiVersion": "v1", "kind": "Node", "metadata": {"name": bare, "labels": None}, "spec": None})
    try:
        core.create_namespaced_pod(namespace, pod_body("to-bare"))
        # No pod there to preempt (the node holds none): no victims.
        message = f"0/1 nodes are available: 1 Too many pods. {NO_CLAIMS}, {preemption_not_helpful(1, no_victims=1)}"
        _failed(core, namespace, "to-bare", message)
        healthy = nodes("healthy")
        assert _a_normal_pod_still_binds(core, namespace) == healthy
    finally:
        core.delete_node(bare)


def test_shared_host_port_of_a_sidecar_and_a_container(
    core: client.CoreV1Api, scheduler: SchedulerProcess, namespace: str, two_zones: list[str]
) -> None:
    """The API accepts a sidecar and a container with the same hostPort; the port is taken once per node."""
    port = [{"containerPort": 80, "hostPort": 8080}]
    sidecar = {"name": "side", "image": "x", "restartPolicy": "Always", "ports": port}
    for i in range(2):
        body = pod_body(f"hp-{i}", initContainers=[sidecar], containers=[{"name": "c", "image": "x", "ports": port}])
        core.create_namespaced_pod(namespace, body)
    placed = {_bound(core, namespace, "hp-0"), _bound(core, namespace, "hp-1")}
    assert placed == set(two_zones)
    core.create_namespaced_pod(namespace, pod_body("hp-2", containers=[{"name": "c", "image": "x", "ports": port}]))
    _failed(
        core,
        namespace,
        "hp-2",
        f"0/2 nodes are available: 2 node(s) didn't have free ports for the requested pod ports. {NO_CLAIMS}, "
        + preemption_not_helpful(2, no_victims=2),  # the port holders have the same priority
    )
    _a_normal_pod_still_binds(core, namespace)


def test_service_selecting_every_pod_spreads_them_by_default(
    core: client.CoreV1Api, scheduler: SchedulerProcess, namespace: str, two_zones: list[str]
) -> None:
    """An empty selector is stored as none (selects nothing); one matching every pod drives default spreading."""
    everything = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "all"}, "spec": {"selector": {}}}
    everything["spec"]["ports"] = [{"port": 80}]
    stored = core.create_namespaced_service(namespace, everything)
    assert stored.spec.selector is None
    web = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"}}
    web["spec"] = {"selector": APP, "ports": [{"port": 80}]}
    core.create_namespaced_service(namespace, web)
    wait_for(lambda: len(core.list_namespaced_service(namespace).items) == 2, 10, "services")
    for i in range(6):
        core.create_namespaced_pod(namespace, pod_body(f"web-{i}", APP))
    placed = Counter(_bound(core, namespace, f"web-{i}") for i in range(6))
    assert sorted(placed.values()) == [3, 3], placed


# -- inter-pod affinity the API server accepts: both schedulers, the same outcome ---------------------

UPSTREAM = "bad-input-upstream"


def _nobody(i: int) -> dict[str, Any]:
    """A term no pod matches."""
    return {"labelSelector": {"matchLabels": {"app": f"nobody-{i}"}}, "topologyKey": HOSTNAME}


# case -> (spec.affinity, the outcome on both schedulers: "bound", or the Pending message). The app=web
# pods sit on both nodes; the pod itself has no labels, so it never matches its own terms.
ACCEPTED_AFFINITY: dict[str, tuple[dict[str, Any], str]] = {
    "anti-affinity-2000-terms": (pod_affinity("podAntiAffinity", required=[_nobody(i) for i in range(2000)]), "bound"),
    "affinity-1000-required-1000-preferred": (
        pod_affinity(
            required=[_nobody(i) for i in range(1000)],
            preferred=[{"weight": 1 + i % 100, "podAffinityTerm": _nobody(i)} for i in range(1000)],
        ),
        f"0/2 nodes are available: 2 {POD_AFFINITY_REASON}. {NO_CLAIMS}",
    ),
    # The web pods match, but on nodes without the key they count for no domain.
    "affinity-topology-key-no-node-has": (
        pod_affinity(required=[affinity_term("example.com/nobody-has-this")]),
        f"0/2 nodes are available: 2 {POD_AFFINITY_REASON}. {NO_CLAIMS}",
    ),
    # No labelSelector: the term selects nothing (nil), so affinity is never met, anti-affinity never bites.
    "affinity-nil-selector": (
        pod_affinity(required=[affinity_term(labelSelector=None)]),
        f"0/2 nodes are available: 2 {POD_AFFINITY_REASON}. {NO_CLAIMS}",
    ),
    "anti-affinity-nil-selector": (
        pod_affinity("podAntiAffinity", required=[affinity_term(labelSelector=None)]),
        "bound",
    ),
    # A namespace that does not exist: the web pods (in the test's namespace) are not seen.
    "anti-affinity-absent-namespace": (
        pod_affinity("podAntiAffinity", required=[affinity_term(namespaces=["nowhere"])]),
        "bound",
    ),
    # namespaceSelector {}: every namespace, the test's own included.
    "anti-affinity-every-namespace": (
        pod_affinity("podAntiAffinity", required=[affinity_term(namespaceSelector={})]),
        f"0/2 nodes are available: 2 {POD_ANTI_AFFINITY_REASON}. {NO_CLAIMS}",
    ),
    # Preferred, selecting every pod of every namespace: a score, never a refusal.
    "preferred-anti-affinity-everything": (
        pod_affinity(
            "podAntiAffinity",
            preferred=[{"weight": 100, "podAffinityTerm": affinity_term(labelSelector={}, namespaceSelector={})}],
        ),
        "bound",
    ),
}


def _fate(core: client.CoreV1Api, namespace: str, name: str) -> str | None:
    pod = core.read_namespaced_pod(name, namespace)
    if pod.spec.node_name:
        return "bound"
    cond = scheduled_condition(pod)
    if cond is not None and cond.status == "False" and cond.reason == "Unschedulable":
        return without_preemption(cond.message)
    return None


def test_pod_affinity_the_api_accepts_ends_as_on_kube_scheduler(
    core: client.CoreV1Api,
    scheduler: SchedulerProcess,
    kube_scheduler: Callable[[dict[str, Any]], Any],
    namespace: str,
    two_zones: list[str],
) -> None:
    """Thousands of terms, a topologyKey no node has, nil selectors, absent and all namespaces: each pod
    ends as on kube-scheduler v1.35.4 (default profile), and the scheduler keeps scheduling."""
    kube_scheduler({"schedulerName": UPSTREAM})
    for i, node in enumerate(two_zones):
        core.create_namespaced_pod(namespace, pod_body(f"web-{i}", APP, nodeName=node))
    for case, (affinity, _) in ACCEPTED_AFFINITY.items():
        for who, scheduler_name in (("up", UPSTREAM), ("ours", "spread-scheduler")):
            core.create_namespaced_pod(
                namespace, pod_body(f"{case}-{who}", scheduler=scheduler_name, affinity=affinity)
            )
    fates = {
        (case, who): wait_for(lambda c=case, w=who: _fate(core, namespace, f"{c}-{w}"), 60, f"{case}-{who} decided")
        for case in ACCEPTED_AFFINITY
        for who in ("up", "ours")
    }
    expected = {(case, who): outcome for case, (_, outcome) in ACCEPTED_AFFINITY.items() for who in ("up", "ours")}
    assert fates == expected
    assert scheduler.proc is not None and scheduler.proc.poll() is None
    _a_normal_pod_still_binds(core, namespace)


# -- priorities and PodDisruptionBudgets (issue #19) ------------------------------------------------

INT32_TEXT = "cannot unmarshal number {} into Go struct field PodSpec.spec.priority of type int32"


def _refused(create: Callable[[], object]) -> tuple[int, str]:
    with pytest.raises(client.ApiException) as refused:
        create()
    return refused.value.status, json.loads(refused.value.body)["message"]


def test_a_pod_naming_a_missing_priority_class_is_refused_as_simulate_refuses_it(
    core: client.CoreV1Api, namespace: str
) -> None:
    """The Priority admission plugin's 403; ``simulate`` gives the pod the same words, naming the field."""
    missing = f"absent-{uuid.uuid4().hex[:6]}"
    obj = pod_body("bad", priorityClassName=missing)
    status, message = _refused(lambda: core.create_namespaced_pod(namespace, obj))
    assert (status, message.split(": ", 1)[1]) == (403, f"no PriorityClass with name {missing} was found")
    assert _simulate(obj) == f"invalid pod: spec.priorityClassName: no PriorityClass with name {missing} was found"


@pytest.mark.parametrize("value", [2**31, -(2**31) - 1])
def test_a_priority_beyond_int32_is_refused_by_the_decoder_and_named_by_simulate(
    core: client.CoreV1Api, namespace: str, value: int
) -> None:
    obj = pod_body("bad", priority=value)
    status, message = _refused(lambda: core.create_namespaced_pod(namespace, obj))
    assert status == 400 and INT32_TEXT.format(value) in message, message
    assert _simulate(obj) == f"invalid pod: spec.priority: {INT32_TEXT.format(value)}"


@pytest.mark.parametrize(
    ("name", "value", "text"),
    [
        pytest.param(
            "user",
            1_000_000_001,
            "value: Forbidden: maximum allowed value of a user defined priority is 1000000000",
            id="user-class-above-one-billion",
        ),
        pytest.param(
            "system-node-critical",
            5,
            "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. "
            "error: value of system-node-critical PriorityClass must be 2000001000",
            id="system-class-wrong-value",
        ),
    ],
)
def test_a_priority_class_the_api_refuses_is_named_by_our_parser(
    api: client.ApiClient, name: str, value: int, text: str
) -> None:
    body = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}
    if name == "user":
        body["metadata"]["name"] = f"user-{uuid.uuid4().hex[:6]}"
    status, message = _refused(lambda: client.SchedulingV1Api(api).create_priority_class(body))
    assert status == 422 and text in message, message
    assert text in [str(e) for e in PriorityClass.from_dict(body).errors]


def test_a_pdb_with_a_malformed_selector_is_refused_and_named_by_our_parser(
    api: client.ApiClient, namespace: str
) -> None:
    """It never reaches the live scheduler; in a file, ``simulate`` warns that it covers no pod."""
    body = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "guard", "namespace": namespace},
        "spec": {"maxUnavailable": 0, "selector": {"matchExpressions": [{"key": "app", "operator": "Sometimes"}]}},
    }
    status, message = _refused(lambda: client.PolicyV1Api(api).create_namespaced_pod_disruption_budget(namespace, body))
    assert status == 422 and "spec.selector.matchExpressions[0].operator" in message, message
    errors = [str(e) for e in PodDisruptionBudget.from_dict(body).errors]
    assert any(e.startswith("spec.selector.matchExpressions[0].operator") for e in errors), errors


def test_a_negative_priority_class_is_admitted_and_its_pod_binds(
    api: client.ApiClient, core: client.CoreV1Api, scheduler: SchedulerProcess, namespace: str, two_zones: list[str]
) -> None:
    """A negative value is valid: admission gives it to the pod, which the live scheduler binds."""
    name = f"negative-{uuid.uuid4().hex[:6]}"
    scheduling = client.SchedulingV1Api(api)
    body = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": -10}
    scheduling.create_priority_class(body)
    try:
        core.create_namespaced_pod(namespace, pod_body("negative", priorityClassName=name))
        assert core.read_namespaced_pod("negative", namespace).spec.priority == -10
        assert _bound(core, namespace, "negative") in two_zones
        _a_normal_pod_still_binds(core, namespace)
    finally:
        scheduling.delete_priority_class(name)
