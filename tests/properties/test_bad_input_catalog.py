"""Bad input, catalogued: objects the API server refuses, fed through ``simulate`` files and the cache.

kube-apiserver v1.35.4 refuses every pod below (with 422 naming the field, or 400 for a quantity
it cannot decode; ``e2e/test_bad_input.py`` checks that on the real server), so the scheduler only
ever sees them in a ``simulate`` file or a hand-made object. Each case pins the exact
``<field path>: <message>`` our parser produces, checks that ``simulate`` reports the pod as
``invalid pod: ...`` while a good pod in the same file is still bound, and that the cache takes the
object (add, update, remove) without raising or leaking it.

Kinds in this catalog (62):

- topology spread (15): maxSkew 0, negative, a string; minDomains 0, negative, with ScheduleAnyway;
  unknown whenUnsatisfiable; empty topologyKey; duplicate {topologyKey, whenUnsatisfiable}; unknown
  nodeAffinityPolicy; selector operator ``Gt``; invalid selector value; ``In`` without values;
  64-character matchLabels value; matchLabelKeys without a labelSelector
- node affinity and selector (4): unknown operator; ``Gt`` with two values; preferred weight 0;
  invalid nodeSelector key
- tolerations (3): unknown effect; unknown operator; tolerationSeconds without NoExecute
- metadata (3): 64-character label value; invalid label key; no name
- resources (7): request "1.5.5", "-1", "abc", a list; init container request; pod-level
  request "1Qi"; overhead "abc"
- host ports (4): 70000; -1; init container 65536; a string
- wrong types (4): labels a list; tolerations an object; priority a string; constraints an object
- nodes (6): allocatable "1.5.5", "abc"; taint with an unknown effect; labels a list; no name;
  negative allocatable (not refused by the scheduler, which never validates nodes: it just fits nothing)
- accepted by our parser like upstream's scheduler although the API refuses it (2): duplicate
  hostPorts in one container; the same hostPort in two containers (NodePorts then counts it once)
- selecting objects (3): Service selector a list; ReplicaSet selector with a bad operator; a
  Service whose map selector holds an int
- configuration (11): apiVersion, kind, percentageOfNodesToScore 101, duplicate schedulerName,
  unknown plugin, leaseDuration 0s, leaseDuration "soon", podInitialBackoffSeconds 0,
  PodTopologySpread defaultConstraints maxSkew 0, unknown scoringStrategy.type, negative score weight:
  ``spread-scheduler run --config`` exits 2 naming the field before it connects anywhere.

``tests/api/test_validation.py`` pins more refusals one parser at
a time; this file is the end-to-end view (file → CLI → message) of the kinds issue #7 lists.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from scheduler import cli
from scheduler.api.objects import Node, Pod, parse_selecting_object
from scheduler.api.resources import HostPort
from scheduler.backend.cache.cache import Cache
from scheduler.testing import PodBuilder, make_node, make_pod, spread_constraint
from tests.helpers import command_failed, preemption_not_helpful

ZONE = "topology.kubernetes.io/zone"
APP = {"app": "web"}
C0 = "spec.topologySpreadConstraints[0]"
REQ = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
PREF = "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution"
NAME_RULE = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
)
QUANTITY = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
V64 = "v" * 64
SPREAD_CLI = str(Path(sys.executable).parent / "spread-scheduler")


def constraint(**fields: Any) -> dict[str, Any]:
    """A valid hard zone constraint selecting app=web; a field set to None is left out."""
    return spread_constraint(APP, **fields)


def spread(*constraints: dict[str, Any]) -> PodBuilder:
    return make_pod("bad").labels(APP).set("spec.topologySpreadConstraints", list(constraints))


def expression(operator: str, *values: str, key: str = "app") -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        out["values"] = list(values)
    return out


def required(*expressions: dict[str, Any]) -> PodBuilder:
    return make_pod("bad").required_terms({"matchExpressions": list(expressions)})


def container_ports(key: str, *ports: dict[str, Any]) -> PodBuilder:
    return make_pod("bad").set(f"spec.{key}", [{"name": "c", "image": "pause", "ports": list(ports)}])


POD_CASES = [
    # -- topology spread constraints
    pytest.param(spread(constraint(maxSkew=0)), [f"{C0}.maxSkew: must be greater than zero"], id="max-skew-zero"),
    pytest.param(spread(constraint(maxSkew=-1)), [f"{C0}.maxSkew: must be greater than zero"], id="max-skew-negative"),
    pytest.param(
        spread(constraint(maxSkew="1")),
        [f"{C0}.maxSkew: must be an integer, got '1'", f"{C0}.maxSkew: must be greater than zero"],
        id="max-skew-string",
    ),
    pytest.param(
        spread(constraint(minDomains=0)), [f"{C0}.minDomains: must be greater than zero"], id="min-domains-zero"
    ),
    pytest.param(
        spread(constraint(minDomains=-2)), [f"{C0}.minDomains: must be greater than zero"], id="min-domains-negative"
    ),
    pytest.param(
        spread(constraint(minDomains=2, whenUnsatisfiable="ScheduleAnyway")),
        [
            f"{C0}.minDomains: Invalid value: 2: can only use minDomains if "
            "whenUnsatisfiable=DoNotSchedule, not ScheduleAnyway"
        ],
        id="min-domains-with-schedule-anyway",
    ),
    pytest.param(
        spread(constraint(whenUnsatisfiable="Sometimes")),
        [
            f'{C0}.whenUnsatisfiable: Unsupported value: "Sometimes": '
            'supported values: "DoNotSchedule", "ScheduleAnyway"'
        ],
        id="when-unsatisfiable-unknown",
    ),
    pytest.param(spread(constraint(topologyKey="")), [f"{C0}.topologyKey: can not be empty"], id="topology-key-empty"),
    pytest.param(
        spread(constraint(), constraint(maxSkew=2)),
        [
            "spec.topologySpreadConstraints[1].{topologyKey, whenUnsatisfiable}: "
            f'Duplicate value: "{{{ZONE}, DoNotSchedule}}"'
        ],
        id="duplicate-key-and-policy",
    ),
    pytest.param(
        spread(constraint(nodeAffinityPolicy="Always")),
        [f'{C0}.nodeAffinityPolicy: Unsupported value: "Always": supported values: "Honor", "Ignore"'],
        id="node-affinity-policy-unknown",
    ),
    pytest.param(
        spread(constraint(labelSelector={"matchExpressions": [expression("Gt", "1")]})),
        [
            f'{C0}.labelSelector.matchExpressions[0].operator: Unsupported value: "Gt": '
            'supported values: "DoesNotExist", "Exists", "In", "NotIn"'
        ],
        id="selector-operator-gt",
    ),
    pytest.param(
        spread(constraint(labelSelector={"matchExpressions": [expression("In", "a b")]})),
        [f'{C0}.labelSelector.matchExpressions[0].values[0]: Invalid value: "a b": a valid label {NAME_RULE}'],
        id="selector-value-invalid",
    ),
    pytest.param(
        spread(constraint(labelSelector={"matchExpressions": [expression("In")]})),
        [f"{C0}.labelSelector.matchExpressions[0].values: must be specified when `operator` is 'In' or 'NotIn'"],
        id="selector-in-without-values",
    ),
    pytest.param(
        spread(constraint(labelSelector={"matchLabels": {"app": V64}})),
        [f'{C0}.labelSelector.matchLabels: Invalid value: "{V64}": must be no more than 63 characters'],
        id="selector-match-labels-value-64-chars",
    ),
    pytest.param(
        spread(constraint(labelSelector=None, matchLabelKeys=["app"])),
        [f"{C0}.matchLabelKeys[0]: Forbidden: must not be specified when labelSelector is not set"],
        id="match-label-keys-without-selector",
    ),
    # -- node affinity and nodeSelector
    pytest.param(
        required(expression("Like", "1", key="cores")),
        [
            f'{REQ}.matchExpressions[0].operator: Unsupported value: "Like": '
            'supported values: "DoesNotExist", "Exists", "Gt", "In", "Lt", "NotIn"'
        ],
        id="affinity-operator-unknown",
    ),
    pytest.param(
        required(expression("Gt", "1", "2", key="cores")),
        [f"{REQ}.matchExpressions[0].values: must be specified single value when `operator` is 'Lt' or 'Gt'"],
        id="affinity-gt-with-two-values",
    ),
    pytest.param(
        make_pod("bad").preferred_term(0, {"matchExpressions": [expression("Exists", key="disk")]}),
        [f"{PREF}[0].weight: must be in the range 1-100"],
        id="affinity-preferred-weight-0",
    ),
    pytest.param(
        make_pod("bad").node_selector({"bad key!": "v"}),
        [f'spec.nodeSelector: Invalid value: "bad key!": name part {NAME_RULE}'],
        id="node-selector-key-invalid",
    ),
    # -- tolerations
    pytest.param(
        make_pod("bad").toleration("k", "Exists", effect="Sometimes"),
        [
            'spec.tolerations[0].effect: Unsupported value: "Sometimes": '
            'supported values: "NoExecute", "NoSchedule", "PreferNoSchedule"'
        ],
        id="toleration-effect-unknown",
    ),
    pytest.param(
        make_pod("bad").toleration("k", "Like", "v"),
        ['spec.tolerations[0].operator: Unsupported value: "Like": supported values: "Equal", "Exists"'],
        id="toleration-operator-unknown",
    ),
    pytest.param(
        make_pod("bad").toleration("k", "Exists", effect="NoSchedule", tolerationSeconds=5),
        [
            'spec.tolerations[0].effect: Invalid value: "NoSchedule": '
            "effect must be 'NoExecute' when `tolerationSeconds` is set"
        ],
        id="toleration-seconds-without-no-execute",
    ),
    # -- metadata
    pytest.param(
        make_pod("bad").label("app", V64),
        [f'metadata.labels: Invalid value: "{V64}": must be no more than 63 characters'],
        id="label-value-64-chars",
    ),
    pytest.param(
        make_pod("bad").label("-app", "x"),
        [f'metadata.labels: Invalid value: "-app": name part {NAME_RULE}'],
        id="label-key-invalid",
    ),
    pytest.param(
        make_pod("bad").set("metadata.name", None),
        ["metadata.name: Required value: name or generateName is required"],
        id="name-missing",
    ),
    # -- resources (NodeResourcesFit's input)
    pytest.param(
        make_pod("bad").requests(cpu="1.5.5"),
        [f'spec.containers[0].resources.requests[cpu]: Invalid value: "1.5.5": {QUANTITY}'],
        id="request-two-dots",
    ),
    pytest.param(
        make_pod("bad").requests(cpu="-1"),
        ['spec.containers[0].resources.requests[cpu]: Invalid value: "-1": must be greater than or equal to 0'],
        id="request-negative",
    ),
    pytest.param(
        make_pod("bad").requests(memory="abc"),
        [f'spec.containers[0].resources.requests[memory]: Invalid value: "abc": {QUANTITY}'],
        id="request-not-a-number",
    ),
    pytest.param(
        make_pod("bad").set("spec.containers", [{"name": "c", "resources": {"requests": {"cpu": [1]}}}]),
        [f'spec.containers[0].resources.requests[cpu]: Invalid value: "[1]": {QUANTITY}'],
        id="request-a-list",
    ),
    pytest.param(
        make_pod("bad").init_container("i", cpu="1.5.5"),
        [f'spec.initContainers[0].resources.requests[cpu]: Invalid value: "1.5.5": {QUANTITY}'],
        id="init-container-request-two-dots",
    ),
    pytest.param(
        make_pod("bad").set("spec.resources", {"requests": {"memory": "1Qi"}}),
        [f'spec.resources.requests[memory]: Invalid value: "1Qi": {QUANTITY}'],
        id="pod-level-request-unknown-suffix",
    ),
    pytest.param(
        make_pod("bad").overhead(cpu="abc"),
        [f'spec.overhead[cpu]: Invalid value: "abc": {QUANTITY}'],
        id="overhead-not-a-number",
    ),
    # -- host ports (NodePorts' input)
    pytest.param(
        make_pod("bad").host_port(70000),
        ["spec.containers[0].ports[0].hostPort: Invalid value: 70000: must be between 1 and 65535, inclusive"],
        id="host-port-too-big",
    ),
    pytest.param(
        container_ports("containers", {"containerPort": 80, "hostPort": -1}),
        ["spec.containers[0].ports[0].hostPort: Invalid value: -1: must be between 1 and 65535, inclusive"],
        id="host-port-negative",
    ),
    pytest.param(
        container_ports("initContainers", {"containerPort": 80, "hostPort": 65536}),
        ["spec.initContainers[0].ports[0].hostPort: Invalid value: 65536: must be between 1 and 65535, inclusive"],
        id="init-container-host-port-too-big",
    ),
    pytest.param(
        container_ports("containers", {"containerPort": 80, "hostPort": "80"}),
        ["spec.containers[0].ports[0].hostPort: must be an integer, got '80'"],
        id="host-port-a-string",
    ),
    # -- wrong types (the API server's decoder refuses these with 400)
    pytest.param(
        make_pod("bad").set("metadata.labels", ["app"]),
        ["metadata.labels: must be an object, got list"],
        id="labels-list",
    ),
    pytest.param(
        make_pod("bad").set("spec.tolerations", {"key": "k"}),
        ["spec.tolerations: must be a list, got dict"],
        id="tolerations-object",
    ),
    pytest.param(
        make_pod("bad").set("spec.priority", "high"),
        ["spec.priority: must be an integer, got 'high'"],
        id="priority-str",
    ),
    pytest.param(
        make_pod("bad").set("spec.topologySpreadConstraints", {"maxSkew": 1}),
        ["spec.topologySpreadConstraints: must be a list, got dict"],
        id="constraints-object",
    ),
]


def simulate_file(tmp_path: Path, objects: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    """``spread-scheduler simulate FILE -o json`` in-process: {pod name: result}."""
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(objects))
    assert cli.main(["simulate", str(path), "-o", "json", "--seed", "1"]) == 0
    results = json.loads(capsys.readouterr().out)["results"]
    return {r["pod"].split("/", 1)[1]: r for r in results}


@pytest.mark.parametrize(("pod", "expected"), POD_CASES)
def test_refused_pod_is_reported_naming_the_field_and_the_others_still_schedule(
    pod: PodBuilder, expected: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The parser names each field; simulate says ``invalid pod: ...`` and still binds the good pod."""
    assert [str(e) for e in pod.build().errors] == expected
    bad = pod.dict()
    if not bad["metadata"].get("name"):
        bad["metadata"]["generateName"] = "bad-"  # the file still needs a way to find it in the output
    objects = [make_node("n1").zone("a").dict(), bad, make_pod("good").labels(APP).dict()]
    results = simulate_file(tmp_path, objects, capsys)
    assert results["good"]["node"] == "n1"
    bad_result = results.get("bad") or results[""]
    assert bad_result["node"] is None
    assert bad_result["message"] == "invalid pod: " + "; ".join(expected)


@pytest.mark.parametrize(("pod", "expected"), POD_CASES)
def test_the_cache_takes_a_refused_pod_without_raising_or_leaking_it(pod: PodBuilder, expected: list[str]) -> None:
    """An assigned copy of the pod goes through add, update and remove; the node's count follows."""
    del expected
    placed = copy.deepcopy(pod).node("n1")  # the cases are shared: never change them
    cache = Cache()
    cache.add_node(make_node("n1").zone("a").build())
    bad = Pod.from_dict(placed.dict())
    cache.add_pod(bad)
    cache.update_pod(Pod.from_dict(placed.set("metadata.resourceVersion", "2").dict()))
    info = cache.get("n1")
    assert info is not None and len(info.pods) == 1 and cache.pod_count == 1
    cache.remove_pod(bad)
    assert len(info.pods) == 0 and cache.pod_count == 0
    assert (info.requested_milli_cpu, info.requested_memory, info.non0_cpu, info.non0_mem) == (0, 0, 0, 0)
    assert not any(info.requested_scalar.values()) and not info.used_ports


NODE_CASES = [
    pytest.param(
        make_node("n0").capacity(cpu="1.5.5", memory="8Gi", pods="110").dict(),
        [f'status.allocatable[cpu]: Invalid value: "1.5.5": {QUANTITY}'],
        "n1",
        id="node-allocatable-two-dots",
    ),
    pytest.param(
        make_node("n0").capacity(cpu="4", memory="abc", pods="110").dict(),
        [f'status.allocatable[memory]: Invalid value: "abc": {QUANTITY}'],
        "n1",
        id="node-allocatable-not-a-number",
    ),
    pytest.param(
        make_node("n0").taint("k", "v", "Sometimes").dict(),
        [
            'spec.taints[0].effect: Unsupported value: "Sometimes": '
            'supported values: "NoExecute", "NoSchedule", "PreferNoSchedule"'
        ],
        None,  # TaintToleration filters NoSchedule/NoExecute only: the unknown effect keeps n0 feasible
        id="node-taint-effect-unknown",
    ),
    pytest.param(
        {"kind": "Node", "metadata": {"name": "n0", "labels": ["zone"]}},
        ["metadata.labels: must be an object, got list"],
        "n1",
        id="node-labels-list",
    ),
    pytest.param(
        {"kind": "Node", "metadata": {"labels": {}}, "spec": None, "status": None},
        ["metadata.name: Required value"],
        "n1",
        id="node-without-name",
    ),
]


@pytest.mark.parametrize(("node", "expected", "host"), NODE_CASES)
def test_refused_node_is_named_and_never_stops_a_pod_from_binding(
    node: dict[str, Any], expected: list[str], host: str | None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Node errors name the field; the bad node takes part (or is skipped) and the pod still binds.

    ``host`` is n1 where the bad node cannot fit a pod with requests (no allocatable, no name).
    """
    assert [str(e) for e in Node.from_dict(node).errors] == expected
    pod = make_pod("good").requests(cpu="100m", memory="64Mi").dict()
    results = simulate_file(tmp_path, [node, make_node("n1").zone("a").dict(), pod], capsys)
    assert results["good"]["node"] is not None, results["good"]
    if host is not None:
        assert results["good"]["node"] == host
    else:
        assert results["good"]["nodes"]["n0"]["filter"] is None
    cache = Cache()
    cache.add_node(Node.from_dict(node))
    cache.update_node(Node.from_dict(node), Node.from_dict(node))
    cache.remove_node(Node.from_dict(node).name)
    assert list(cache.node_infos()) == []


def test_node_without_a_name_is_skipped_with_a_warning(tmp_path: Path) -> None:
    """The CLI prints the field on stderr and still schedules on the good node."""
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all([{"kind": "Node"}, make_node("n1").dict(), make_pod("p").dict()]))
    out = subprocess.run([SPREAD_CLI, "simulate", str(path), "-o", "json"], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stderr == "warning: skipped Node: metadata.name: Required value\n"
    assert json.loads(out.stdout)["results"][0]["node"] == "n1"


def test_negative_allocatable_fits_nothing_that_requests_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The API refuses ``-1`` allocatable; the scheduler (like upstream's) does not validate nodes: nothing fits."""
    node = make_node("n1").capacity(cpu="-1", memory="8Gi", pods="110").dict()
    assert Node.from_dict(node).errors == ()
    results = simulate_file(tmp_path, [node, make_pod("p").requests(cpu="100m").dict()], capsys)
    # More than the node's allocatable: UnschedulableAndUnresolvable, so preemption cannot help either.
    assert (
        results["p"]["message"]
        == f"0/1 nodes are available: 1 Insufficient cpu. {preemption_not_helpful(1)}"  # 1.37: no NO_CLAIMS
    )


@pytest.mark.parametrize(
    "ports",
    [
        pytest.param([[8080, 8080]], id="duplicate-host-ports-in-one-container"),
        pytest.param([[8080], [8080]], id="same-host-port-in-two-containers"),
    ],
)
def test_duplicate_host_ports_count_once_as_upstream_scheduler_counts_them(
    ports: list[list[int]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The API refuses these (``hostPort: Duplicate value: "TCP//8080"``); upstream's scheduler does not
    validate them and neither do we (the differential tests pin that). The pod binds, its port is taken
    on that node, and removing it frees the port exactly once."""
    containers = [
        {"name": f"c{i}", "image": "pause", "ports": [{"containerPort": p, "hostPort": p} for p in ps]}
        for i, ps in enumerate(ports)
    ]
    first = make_pod("first").set("spec.containers", containers)
    second = make_pod("second").host_port(8080)
    assert first.build().errors == ()
    results = simulate_file(tmp_path, [make_node("n1").dict(), first.dict(), second.dict()], capsys)
    assert results["first"]["node"] == "n1"
    assert results["second"]["message"] == (
        "0/1 nodes are available: 1 node(s) didn't have free ports for the requested pod ports. "
        + preemption_not_helpful(1, no_victims=1)  # "first" has the same priority: no victim
    )
    cache = Cache()
    cache.add_node(make_node("n1").build())
    placed = first.node("n1").build()
    cache.add_pod(placed)
    info = cache.get("n1")
    assert info is not None and info.used_ports == {HostPort("0.0.0.0", "TCP", 8080)}
    cache.remove_pod(placed)
    assert not info.used_ports


@pytest.mark.parametrize(
    "obj",
    [
        pytest.param({"kind": "Service", "metadata": {"name": "s"}, "spec": {"selector": ["app"]}}, id="service-list"),
        pytest.param(
            {
                "kind": "ReplicaSet",
                "metadata": {"name": "r"},
                "spec": {"selector": {"matchExpressions": [{"key": "a"}]}},
            },
            id="replicaset-bad-operator",
        ),
        pytest.param(
            {"kind": "Service", "metadata": {"name": "s"}, "spec": {"selector": {"app": 5}}}, id="service-int"
        ),
    ],
)
def test_a_refused_selecting_object_selects_nothing(obj: dict[str, Any]) -> None:
    """A broken selector must not become ``everything`` (that would spread against every pod)."""
    parsed = parse_selecting_object(obj)
    assert parsed is not None and parsed.selector.nothing


def test_one_file_of_every_refused_pod_through_the_real_cli(tmp_path: Path) -> None:
    """The installed ``spread-scheduler simulate``: exit 0, each pod's message, the good pod bound."""
    objects: list[dict[str, Any]] = [make_node("n1").zone("a").dict()]
    expected: dict[str, str] = {}
    for i, case in enumerate(POD_CASES):
        builder, errors = case.values
        assert isinstance(builder, PodBuilder) and isinstance(errors, list)
        obj = builder.dict()
        obj["metadata"]["name"] = f"bad-{i}"
        obj["metadata"]["uid"] = f"uid-{i}"
        objects.append(obj)
        expected[f"default/bad-{i}"] = "invalid pod: " + "; ".join(errors).replace("metadata.name: Required", "")
    objects.append(make_pod("good").dict())
    path = tmp_path / "all-bad.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": objects}))
    out = subprocess.run([SPREAD_CLI, "simulate", str(path), "-o", "json"], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stderr == ""
    results = {r["pod"]: r for r in json.loads(out.stdout)["results"]}
    assert results.pop("default/good")["node"] == "n1"
    named = {key: r["message"] for key, r in results.items()}
    # "name-missing" got a name here, so it is valid: every other case keeps its exact message.
    missing = next(i for i, case in enumerate(POD_CASES) if case.id == "name-missing")
    assert named.pop(f"default/bad-{missing}") == "Successfully assigned default/bad-{missing} to n1".replace(
        "{missing}", str(missing)
    )
    del expected[f"default/bad-{missing}"]
    assert named == expected
    assert all(r["node"] is None for r in results.values() if r["pod"] != f"default/bad-{missing}")


API = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
PROFILE = "profiles:\n- schedulerName: a\n"
CONFIG_CASES = [
    pytest.param(
        "apiVersion: kubescheduler.config.k8s.io/v1beta9\nkind: KubeSchedulerConfiguration\n",
        'apiVersion: Unsupported value: "kubescheduler.config.k8s.io/v1beta9": '
        'supported values: "kubescheduler.config.k8s.io/v1"',
        id="api-version",
    ),
    pytest.param(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: Nope\n",
        'kind: Unsupported value: "Nope": supported values: "KubeSchedulerConfiguration"',
        id="kind",
    ),
    pytest.param(
        API + "percentageOfNodesToScore: 101\n",
        "percentageOfNodesToScore: Invalid value: 101: must be an integer in [0, 100]",
        id="percentage-of-nodes-to-score-101",
    ),
    pytest.param(
        API + "profiles: [{schedulerName: a}, {schedulerName: a}]\n",
        'profiles[1].schedulerName: Duplicate value: "a"',
        id="duplicate-scheduler-name",
    ),
    pytest.param(
        API + PROFILE + "  plugins: {filter: {enabled: [{name: Nope}]}}\n",
        'profiles[0].plugins.filter.enabled[0].name: Invalid value: "Nope": plugin does not exist (known: '
        "DefaultBinder, DefaultPreemption, DynamicResources, ImageLocality, InterPodAffinity, NodeAffinity, "
        "NodeDeclaredFeatures, NodeName, NodePorts, NodeResourcesBalancedAllocation, NodeResourcesFit, "
        "NodeUnschedulable, NodeVolumeLimits, "
        "PodTopologySpread, PrioritySort, SchedulingGates, SelectorSpread, TaintToleration, VolumeBinding, "
        "VolumeRestrictions, VolumeZone)",
        id="unknown-plugin",
    ),
    pytest.param(
        API + "leaderElection: {leaseDuration: 0s}\n",
        "leaderElection.leaseDuration: Invalid value: 0.0s: must be greater than zero",
        id="lease-duration-zero",
    ),
    pytest.param(
        API + "leaderElection: {leaseDuration: soon}\n",
        'leaderElection.leaseDuration: Invalid value: "soon": must be a duration such as 15s',
        id="lease-duration-not-a-duration",
    ),
    pytest.param(
        API + "podInitialBackoffSeconds: 0\n",
        "podInitialBackoffSeconds: Invalid value: 0: must be an integer in [1, 2147483647]",
        id="initial-backoff-zero",
    ),
    pytest.param(
        API
        + PROFILE
        + "  pluginConfig:\n  - name: PodTopologySpread\n    args:\n      defaultingType: List\n"
        + "      defaultConstraints: [{maxSkew: 0, topologyKey: z, whenUnsatisfiable: DoNotSchedule}]\n",
        "profiles[0].pluginConfig[PodTopologySpread].args: defaultConstraints[0].maxSkew: "
        "Invalid value: 0: not in valid range [1, 2147483647]",
        id="default-constraint-max-skew-zero",
    ),
    pytest.param(
        API + PROFILE + "  pluginConfig: [{name: NodeResourcesFit, args: {scoringStrategy: {type: Nope}}}]\n",
        "profiles[0].pluginConfig[NodeResourcesFit].args: scoringStrategy.type: Unsupported value: "
        '"Nope": supported values: "LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"',
        id="scoring-strategy-unknown",
    ),
    pytest.param(
        API + PROFILE + "  plugins: {score: {enabled: [{name: TaintToleration, weight: -1}]}}\n",
        "profiles[0].plugins.score.enabled[0].weight: Invalid value: -1: must be an integer in [0, 2147483647]",
        id="score-weight-negative",
    ),
]


@pytest.mark.parametrize(("text", "message"), CONFIG_CASES)
def test_bad_configuration_stops_run_at_start_up_naming_the_field(text: str, message: str, tmp_path: Path) -> None:
    """``spread-scheduler run --config bad.yaml`` exits 2 with the field on stderr, before any connection.

    The kubeconfig does not exist: reaching the API (or even reading it) would be a different error.
    """
    config = tmp_path / "bad.yaml"
    config.write_text(text)
    out = subprocess.run(
        [SPREAD_CLI, "run", "--config", str(config), "--kubeconfig", str(tmp_path / "absent.kubeconfig")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 2, (out.returncode, out.stderr)
    assert command_failed(out.stderr).endswith(message), out.stderr
    assert "Traceback" not in out.stderr
