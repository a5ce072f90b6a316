"""The generator's promises that need no API server: one cluster per seed, features that add without
reshuffling, and the API rules it is easiest to break (e2e/test_generator_valid.py checks the rest
against a real kube-apiserver)."""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

import pytest

from scheduler.api.quantity import milli_value, parse_quantity
from tests.differential import generator

SEEDS = range(9_100_000, 9_100_150)


def _pods(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] == "Pod"]


def test_a_seed_is_one_cluster() -> None:
    """Two calls with one seed give the same objects and config, byte for byte."""
    for seed in SEEDS[:20]:
        assert json.dumps(generator.scenario(seed)) == json.dumps(generator.scenario(seed))


def test_features_add_to_a_cluster_without_reshuffling_it() -> None:
    """Switching every feature on keeps the objects' names and the nodes' labels and taints."""
    for seed in SEEDS[:50]:
        plain, _ = generator.scenario(seed)
        full, _ = generator.scenario(seed, generator.FEATURES)
        assert [(o["kind"], o["metadata"]["name"]) for o in plain] == [(o["kind"], o["metadata"]["name"]) for o in full]
        for before, after in zip(plain, full, strict=True):
            if before["kind"] == "Node":
                assert before["metadata"] == after["metadata"]
                assert before["spec"] == after["spec"]


def test_an_unknown_feature_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown generator features"):
        generator.scenario(0, frozenset({"interpodafinity"}))


def test_default_features_are_all_of_them() -> None:
    """On by default: pod affinity, node images, gates, pending pods being deleted, and nominated
    nodes that exist, with nominees of a higher, equal and lower priority than a contender."""
    seen: set[str] = set()
    for seed in SEEDS:
        objects, _ = generator.scenario(seed)
        nodes = {o["metadata"]["name"] for o in objects if o["kind"] == "Node"}
        pending = [o for o in objects if o["kind"] == "Pod" and not o.get("spec", {}).get("nodeName")]
        for obj in objects:
            spec = obj.get("spec", {})
            if "images" in obj.get("status", {}):
                seen.add("images")
            if {"podAffinity", "podAntiAffinity"} & set(spec.get("affinity", {})):
                seen.add("affinity")
            if "schedulingGates" in spec:
                seen.add("gates")
            if obj in pending and "deletionTimestamp" in obj["metadata"]:
                seen.add("terminating")
            if obj in pending and obj.get("status", {}).get("nominatedNodeName") in nodes:
                seen.add("nominated")
        nominees = [
            p.get("spec", {}).get("priority", 0) for p in pending if p["metadata"]["name"].startswith("nominee")
        ]
        contenders = [
            p.get("spec", {}).get("priority", 0) for p in pending if p["metadata"]["name"].startswith("contender")
        ]
        for nominee in nominees:
            for contender in contenders:
                seen.add("higher" if nominee > contender else "equal" if nominee == contender else "lower")
    assert seen == {"images", "affinity", "gates", "terminating", "nominated", "higher", "equal", "lower"}


def test_taints_are_unique_by_key_and_effect() -> None:
    for seed in SEEDS:
        for node in (o for o in generator.scenario(seed)[0] if o["kind"] == "Node"):
            pairs = [(t["key"], t["effect"]) for t in node["spec"].get("taints", [])]
            assert len(pairs) == len(set(pairs)), node


def test_host_ports_are_unique_per_pod_and_extended_resources_have_equal_limits() -> None:
    for seed in SEEDS:
        for pod in _pods(generator.scenario(seed, generator.FEATURES)[0]):
            ports = [
                (p["protocol"], p.get("hostIP", ""), p["hostPort"])
                for c in pod["spec"]["containers"]
                for p in c.get("ports", [])
            ]
            assert len(ports) == len(set(ports)), pod
            for c in pod["spec"]["containers"] + pod["spec"].get("initContainers", []):
                resources = c.get("resources", {})
                if generator.GPU in resources.get("requests", {}):
                    assert resources["limits"][generator.GPU] == resources["requests"][generator.GPU]


def test_every_class_a_pod_names_is_in_the_cluster() -> None:
    """The Priority and RuntimeClass admission plugins refuse a pod whose class does not exist."""
    for seed in SEEDS:
        objects, _ = generator.scenario(seed)
        names = {(o["kind"], o["metadata"]["name"]) for o in objects}
        for pod in _pods(objects):
            if "priorityClassName" in pod["spec"]:
                assert ("PriorityClass", pod["spec"]["priorityClassName"]) in names
            if "runtimeClassName" in pod["spec"]:
                assert ("RuntimeClass", pod["spec"]["runtimeClassName"]) in names


def _without_volumes(spec: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in spec.items() if key != "volumes"}


def test_batch_replicas_are_identical_under_a_list_profile_without_default_constraints() -> None:
    """The shape opportunistic batching is for: every feature on, the replicas' specs stay equal
    (image volumes aside, which upstream's signature leaves out)."""
    batches = 0
    for seed in SEEDS:
        objects, config = generator.scenario(seed, generator.FEATURES)
        replicas = [p for p in _pods(objects) if p["metadata"]["name"].startswith("batch-")]
        if not replicas:
            continue
        batches += 1
        # Alike but for image volumes, which upstream's batching signature leaves out (ImageLocality).
        volumes = [v for p in replicas for v in p["spec"].get("volumes", [])]
        assert all("image" in v for v in volumes)
        assert all(_without_volumes(p["spec"]) == _without_volumes(replicas[0]["spec"]) for p in replicas)
        (spread,) = [c for c in config["profiles"][0]["pluginConfig"] if c["name"] == "PodTopologySpread"]
        assert spread["args"]["defaultingType"] == "List"
        assert spread["args"]["defaultConstraints"] == []
    assert batches


def test_preemption_inputs_are_what_the_api_and_the_disruption_controller_would_hold() -> None:
    """Feature "preemption" (``crowded``): fillers take exactly their node's cpu; preemptors arrive
    after every other pending pod; each class a pod names exists with the pod's policy; each PDB's
    disruptionsAllowed is its healthy matching pods minus the desired count, never below 0."""
    seen: set[str] = set()
    for seed in SEEDS[:60]:
        objects, config = generator.crowded(seed)
        pods = _pods(objects)
        classes = {o["metadata"]["name"]: o for o in objects if o["kind"] == "PriorityClass"}
        for pod in pods:
            spec = pod["spec"]
            if "priorityClassName" in spec:
                cls = classes[spec["priorityClassName"]]
                assert cls["value"] == spec["priority"]
                assert cls.get("preemptionPolicy", "PreemptLowerPriority") == spec.get(
                    "preemptionPolicy", "PreemptLowerPriority"
                )
                seen.add(spec.get("preemptionPolicy", "class"))
        nodes = {o["metadata"]["name"]: o for o in objects if o["kind"] == "Node"}
        fillers: dict[str, int] = {}
        for pod in pods:
            if pod["metadata"]["name"].startswith("filler-"):
                request = generator.milli_value(
                    generator.parse_quantity(pod["spec"]["containers"][0]["resources"]["requests"]["cpu"])
                )
                fillers[pod["spec"]["nodeName"]] = fillers.get(pod["spec"]["nodeName"], 0) + request
        for node, total in fillers.items():
            assert total == milli_value(parse_quantity(nodes[node]["status"]["allocatable"]["cpu"]))
        pending = [p for p in pods if not p["spec"].get("nodeName")]
        late = [p["metadata"]["creationTimestamp"] for p in pending if p["metadata"]["name"].startswith("preemptor-")]
        early = [
            p["metadata"]["creationTimestamp"] for p in pending if not p["metadata"]["name"].startswith("preemptor-")
        ]
        assert late and (not early or min(late) > max(early))
        for pdb in (o for o in objects if o["kind"] == "PodDisruptionBudget"):
            status, ns = pdb["status"], pdb["metadata"]["namespace"]
            assert ("minAvailable" in pdb["spec"]) != ("maxUnavailable" in pdb["spec"])
            healthy = [
                p
                for p in pods
                if p["metadata"]["namespace"] == ns
                and generator._selects(pdb["spec"]["selector"], p["metadata"].get("labels", {}))
                and p["status"].get("phase") == "Running"
                and "deletionTimestamp" not in p["metadata"]
            ]
            assert status["currentHealthy"] == len(healthy)
            assert status["disruptionsAllowed"] == max(len(healthy) - status["desiredHealthy"], 0)
            seen.add("pdb allows" if status["disruptionsAllowed"] else "pdb blocks")
        if any(pc["name"] == "DefaultPreemption" for pc in config["profiles"][0].get("pluginConfig", [])):
            seen.add("args")
        if any("startTime" in p["status"] for p in pods):
            seen.add("startTime")
    assert seen >= {"Never", "PreemptLowerPriority", "class", "pdb allows", "pdb blocks", "args", "startTime"}


def test_waiting_claims_come_with_their_classes_one_pre_bound_pv_and_unique_sizes() -> None:
    seeds = [seed for seed in range(3000) if generator.drawn(seed, "wffc")]
    assert 700 < len(seeds) < 1100  # 30% of clusters
    used = 0
    for seed in seeds[:200]:
        objects, _ = generator.scenario(seed)
        classes = {o["metadata"]["name"] for o in objects if o["kind"] == "StorageClass"}
        waiting = {
            (o["metadata"]["namespace"], o["metadata"]["name"]): o
            for o in objects
            if o["kind"] == "PersistentVolumeClaim" and o["metadata"]["name"].startswith("wait-")
        }
        assert waiting and all(c["spec"]["storageClassName"] in classes for c in waiting.values())
        assert all(c["metadata"]["uid"] for c in waiting.values())  # a PV bound to it names it
        pre_bound = Counter(
            (o["spec"]["claimRef"]["namespace"], o["spec"]["claimRef"]["name"])
            for o in objects
            if o["kind"] == "PersistentVolume" and "claimRef" in o["spec"]
        )
        assert all(pre_bound[key] <= 1 for key in waiting)
        sizes = [o["spec"]["capacity"]["storage"] for o in objects if o["metadata"]["name"].startswith("pv-static-")]
        assert len(sizes) == len(set(sizes)), "two static PVs of one size: upstream picks between them in map order"
        for pod in (o for o in objects if o["kind"] == "Pod"):
            names = {
                v["persistentVolumeClaim"]["claimName"]
                for v in pod["spec"].get("volumes", [])
                if "persistentVolumeClaim" in v
            }
            mine = {n for n in names if n.startswith("wait-")}
            assert not mine or not pod["spec"].get("nodeName"), "only pending pods use claims still to bind"
            assert all((pod["metadata"]["namespace"], n) in waiting for n in mine)
            used += bool(mine)
    assert used > 100


def _containers(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return [*spec.get("containers", []), *spec.get("initContainers", [])]


DRA_KINDS = frozenset({"DeviceClass", "ResourceSlice", "ResourceClaim", "ResourceClaimTemplate", "DeviceTaintRule"})


def test_node_pod_changes_follow_the_campaigns_minor() -> None:
    """Issue #47's features: node ``declaredFeatures`` (sorted, unique, valid names) and the
    RestartAllContainers rule only from 1.36, whose API has them; image volumes with unique names at
    every minor; resize status only on assigned pods. A minor changes no object's name or order
    (the DRA objects of features "draextended" and "dra" aside: which of the two a cluster has, and
    its pools, follow the minor)."""
    seen: Counter[str] = Counter()
    name_pattern = re.compile(r"^[A-Z][A-Za-z0-9]*(/[A-Za-z0-9]+)*$")
    for seed in SEEDS[:80]:
        by_minor = {minor: generator.scenario(seed, kube_version=minor)[0] for minor in ("1.35", "1.36", "1.37")}
        names = {
            m: [(o["kind"], o["metadata"]["name"]) for o in objects if o["kind"] not in DRA_KINDS]
            for m, objects in by_minor.items()
        }
        assert names["1.35"] == names["1.36"] == names["1.37"]
        for minor, objects in by_minor.items():
            for node in (o for o in objects if o["kind"] == "Node"):
                declared = node["status"].get("declaredFeatures")
                if declared is not None:
                    assert minor != "1.35"
                    assert declared == sorted(set(declared)) and declared
                    assert all(name_pattern.match(name) for name in declared), declared
                    seen["declared"] += 1
            for pod in _pods(objects):
                spec, status = pod["spec"], pod["status"]
                for container in _containers(spec):
                    for rule in container.get("restartPolicyRules", []):
                        assert minor != "1.35" and not spec.get("nodeName")
                        assert container["restartPolicy"] in ("Never", "OnFailure") and rule["exitCodes"]["values"]
                        seen[rule["action"]] += 1
                volumes = [v["name"] for v in spec.get("volumes", [])]
                assert len(volumes) == len(set(volumes)), volumes
                seen["image volume"] += sum("image" in v for v in spec.get("volumes", []))
                if {"containerStatuses", "initContainerStatuses", "allocatedResources", "resources"} & set(status):
                    assert spec.get("nodeName"), "only assigned pods are resized"
                    names_in_spec = {c["name"] for c in _containers(spec)}
                    for cs in [*status.get("containerStatuses", []), *status.get("initContainerStatuses", [])]:
                        assert cs["name"] in names_in_spec
                        for quantity in [*cs.get("allocatedResources", {}).values()]:
                            parse_quantity(quantity)
                    seen["resized"] += 1
    assert {"declared", "RestartAllContainers", "Restart", "image volume", "resized"} <= set(seen)


NO_DRA = generator.FEATURES - {"dra"}


def test_device_classes_only_where_the_api_server_keeps_their_extended_resource_name() -> None:
    """Feature "draextended": DeviceClasses with and without ``extendedResourceName`` at 1.36 and
    1.37, nodes offering the FPGA or not, pods asking for a backed name; none at 1.35, whose API
    server drops the field (DRAExtendedResource alpha, off), and the rest of the cluster unchanged
    (without feature "dra", whose classes are at every minor)."""
    seen: Counter[str] = Counter()
    for seed in SEEDS:
        at_35, _ = generator.scenario(seed, NO_DRA, kube_version="1.35")
        assert not [o for o in at_35 if o["kind"] == "DeviceClass"]
        for minor in ("1.36", "1.37"):
            objects, _ = generator.scenario(seed, NO_DRA, kube_version=minor)
            classes = [o for o in objects if o["kind"] == "DeviceClass"]
            assert bool(classes) == generator.drawn(seed, "draextended")
            assert [(o["kind"], o["metadata"]["name"]) for o in objects if o["kind"] != "DeviceClass"] == [
                (o["kind"], o["metadata"]["name"]) for o in at_35
            ]
            for c in classes:
                seen[c["spec"].get("extendedResourceName", "implicit")] += 1
            for node in (o for o in objects if o["kind"] == "Node"):
                if generator.FPGA in node["status"]["allocatable"]:
                    seen["fpga " + ("offered" if node["status"]["allocatable"][generator.FPGA] != "0" else "0")] += 1
            for pod in (o for o in objects if o["kind"] == "Pod"):
                for name in pod["spec"]["containers"][0].get("resources", {}).get("limits", {}):
                    if name.startswith(generator.DEVICE_CLASS_PREFIX) or name == generator.FPGA:
                        seen["asks " + name.split("/")[0]] += 1
    assert set(seen) == {
        generator.GPU,
        generator.FPGA,
        "implicit",
        "fpga offered",
        "fpga 0",
        "asks example.com",
        "asks deviceclass.resource.kubernetes.io",
    }, seen


def test_dra_objects_per_minor() -> None:
    """Feature "dra": classes, slices, claims and templates in the drawn clusters (with
    "draextended" too); at 1.35 one pool per node and no pool for all nodes (v0.35 searches a node's
    pools in map order), counters only from 1.36; requests with the API server's defaults spelled
    out; a template's claim owned by its pod and named in the pod's status, as the controller does.
    The allocator's gated parts only at a minor whose gate is on by default: admin access (in a
    namespace labelled for it) at every minor, device taints and tolerations, shared devices and
    capacity requests, binding conditions from 1.36, DeviceTaintRules at 1.37."""
    seen: Counter[str] = Counter()
    for seed in SEEDS:
        for minor in ("1.35", "1.36", "1.37"):
            objects, _ = generator.scenario(seed, kube_version=minor)
            slices = [o for o in objects if o["kind"] == "ResourceSlice"]
            has_dra = bool(slices) or any(o["kind"] == "ResourceClaim" for o in objects)
            assert not has_dra or generator.drawn(seed, "dra")
            parts = _dra_parts(objects)
            assert minor != "1.35" or not parts & {"taints", "tolerations", "allowMultipleAllocations", "capacity"}
            assert minor != "1.35" or not parts & {"bindingConditions"}
            assert minor == "1.37" or "DeviceTaintRule" not in parts
            if "adminAccess" in parts:
                labelled = {
                    o["metadata"]["name"]
                    for o in objects
                    if o["kind"] == "Namespace" and o["metadata"]["labels"].get(generator.ADMIN_ACCESS_LABEL) == "true"
                }
                assert labelled
                for o in objects:
                    if o["kind"] in ("ResourceClaim", "ResourceClaimTemplate") and "adminAccess" in _dra_parts([o]):
                        assert o["metadata"]["namespace"] in labelled
            seen.update(f"{part} at {minor}" for part in parts)
            pools: Counter[str] = Counter()
            for s in slices:
                spec = s["spec"]
                seen["allNodes"] += bool(spec.get("allNodes"))
                seen["counters"] += "sharedCounters" in spec
                assert minor != "1.35" or not ("sharedCounters" in spec or spec.get("allNodes"))
                if minor == "1.35" and spec.get("nodeName"):
                    pools[spec["nodeName"]] += 1
            assert all(count == 1 for count in pools.values())
            claims = {
                (o["metadata"]["namespace"], o["metadata"]["name"]): o for o in objects if o["kind"] == "ResourceClaim"
            }
            for claim in claims.values():
                for request in claim["spec"]["devices"]["requests"]:
                    for exact in [request.get("exactly"), *request.get("firstAvailable", [])]:
                        if exact is not None:
                            assert exact["allocationMode"] in ("ExactCount", "All")
                            seen[exact["allocationMode"]] += 1
                    seen["firstAvailable"] += "firstAvailable" in request
                seen["allocated"] += "status" in claim
            for pod in (o for o in objects if o["kind"] == "Pod" and o["spec"].get("resourceClaims")):
                refs = [r["name"] for r in pod["spec"]["resourceClaims"]]
                assert len(set(refs)) == len(refs), refs  # the API server refuses a name twice
                ns, uid = pod["metadata"]["namespace"], pod["metadata"]["uid"]
                for status in pod["status"].get("resourceClaimStatuses", []):
                    owner = claims[(ns, status["resourceClaimName"])]["metadata"]["ownerReferences"][0]
                    assert owner["uid"] == uid and owner["controller"] is True
                    seen["template"] += 1
    assert (
        min(seen[k] for k in ("allNodes", "counters", "ExactCount", "All", "firstAvailable", "allocated", "template"))
        > 0
    )
    expected = {"adminAccess": ("1.35", "1.36", "1.37"), "DeviceTaintRule": ("1.37",)}
    for part in ("taints", "tolerations", "allowMultipleAllocations", "capacity", "bindingConditions"):
        expected[part] = ("1.36", "1.37")
    assert {f"{part} at {minor}" for part, minors in expected.items() for minor in minors} <= set(seen), seen


def _dra_parts(obj: object) -> set[str]:
    """The allocator's gated fields anywhere in ``obj`` (DeviceTaintRule for one of those)."""
    found: set[str] = set()
    if isinstance(obj, dict):
        if obj.get("kind") == "DeviceTaintRule":
            found.add("DeviceTaintRule")
        if obj.get("kind") in ("Pod", "Node"):
            return found  # their tolerations and taints are the core API's
        found.update(
            k
            for k in ("adminAccess", "taints", "tolerations", "allowMultipleAllocations", "bindingConditions")
            if obj.get(k)
        )
        if isinstance(obj.get("capacity"), dict) and "requests" in obj["capacity"]:
            found.add("capacity")
        for value in obj.values():
            found |= _dra_parts(value)
    elif isinstance(obj, list):
        for value in obj:
            found |= _dra_parts(value)
    return found


def test_always_gives_every_cluster_dra_and_leaves_the_rest_as_drawn() -> None:
    """``always={"dra"}`` (a campaign on DRA): every cluster has it; a cluster that drew it is the
    same cluster, and one that did not differs only by what feature "dra" adds or labels."""
    for seed in SEEDS[:40]:
        forced, _ = generator.scenario(seed, kube_version="1.37", always=frozenset({"dra"}))
        plain, _ = generator.scenario(seed, kube_version="1.37")
        assert any(o["kind"] == "ResourceSlice" for o in forced)
        if generator.drawn(seed, "dra"):
            assert forced == plain
        else:
            names = [(o["kind"], o["metadata"]["name"]) for o in forced if o["kind"] not in DRA_KINDS]
            assert names == [(o["kind"], o["metadata"]["name"]) for o in plain if o["kind"] not in DRA_KINDS]
