"""Seeded random clusters that the API server accepts, for the differential test against upstream.

``scenario(seed, kube_version=...)`` gives the objects and a KubeSchedulerConfiguration; the same seed gives
the same cluster. Every object passes the validation and admission of the kube-apiserver of the
campaign's minor (issue #17; default 1.35): ``tests.differential.apiserver`` checks that by sending a
share of the clusters through a real one. A minor adds fields its API has and changes nothing else.

The distribution (probabilities are per cluster, per node or per pod as named):

Nodes: 1-60 (3% of clusters: 101-160, with ``percentageOfNodesToScore`` set top-level or per
profile: 100, or one of 0/5/30/50/70/100 with the feature ``nodesampling``). Labels
app/tier/team/disk/gen with values that include "" and "05"; hostname label on 92% (3% of those
name another host than the node), zone 85%, region 70%, rack 40%. Taints on 30% (1-2,
unique by key and effect, every effect), cordoned 7%. Allocatable mostly roomy, sometimes a few pods'
worth, 3% without memory, 20% with ``example.com/gpu``, unusual spellings ("1e3", "0.5Gi", "1Ki").

Namespaces: 1-3 of default/team-a/team-b, as Namespace objects (labels env/tier on half of them,
``kubernetes.io/metadata.name`` as the API server sets it). Per namespace one owner (ReplicaSet,
StatefulSet or ReplicationController, its template labels matching its selector, sometimes with a
matchExpressions part) and 0-3 Services whose selectors differ from the owner's (one in ten has none).
PriorityClasses ``prio-<value>`` for every priority used, RuntimeClasses ``rc-<cpu>-<mem>`` for
every pod overhead used (the Priority and RuntimeClass admission plugins require them).

Pods, existing (0-3 per node, 0-1 per node past 100 nodes) and pending (1-6): labels (app 70-80%),
half owned by their namespace's owner. Existing ones are Running/Pending/Succeeded/Failed, 8%
terminating. Pending ones: priority (30%, by class), nodeSelector 25%, required node affinity 35%
(matchFields 20% of terms), preferred 35% (matchFields 15%), tolerations 50% (every operator and
effect), 0-3 spread constraints using every field (1-3 expressions in a selector, matchLabelKeys),
terminating 3% (feature ``terminatingpods``), scheduling gates 4% (``schedulinggates``),
status.nominatedNodeName 5% (a node that does not exist; 90% of them an existing node with
``nominatednodes``).
Nominees (feature ``nominatednodes``, 30% of clusters): 1-2 pods nominated to one node that they
fill (its whole allocatable cpu, more than any node has so they stay pending and nominated, or a
hostPort), some by class at a priority above, equal to or below the others', a few gated or being
deleted; and 1-3 contenders pinned to that node half the time (matchFields), with small requests,
the same hostPort sometimes and spread constraints sometimes: whether a nominee counts for a
contender's Filter there decides whether it fits.
Containers: 1-2 (+ 20% init containers, 40% of those restartable sidecars), requests on 75%
(requests and limits 20% of those, limits only 10%), GPU always with equal limits, hostPorts 15%
(TCP/UDP/SCTP, hostIP sometimes, unique per pod as the API requires; sidecars too), overhead 8%
(through a RuntimeClass), pod-level requests 5% (never below the containers' sum).

Batches (8% of clusters): a profile with PodTopologySpread ``defaultingType: List`` and no default
constraints, and 4-10 identical pending replicas (preferred node affinity, a hostPort or a tight pods
limit, PreferNoSchedule taints on some nodes) that fill nodes one after another: the shape
opportunistic batching reuses results for.

Config: PodTopologySpread System (64%), List with 0-2 constraints (28%) or with none (the batches),
NodeResourcesFit args (30%:
every strategy, weights, ignored resources), NodeAffinity ``addedAffinity`` (10%).

Preemption (feature ``preemption``, its own stream; issue #19): priorities by class on 40% of existing
pods (0/10/100), ``status.startTime`` on 90% of running ones; pending pods with a priority get
``preemptionPolicy: Never`` through a ``prio-<value>-never`` class (15%) or PreemptLowerPriority
spelled out (10%); 0-2 policy/v1 PodDisruptionBudgets per namespace (selectors on app/tier,
minAvailable or maxUnavailable as an integer or a percentage, status as the disruption controller
writes it: healthy = running and not being deleted, ``disruptionsAllowed = max(0, healthy -
desired)``, a ``disruptedPods`` entry now and then); DefaultPreemptionArgs asking for 0-3 candidates
or 0-100% (20%). Full clusters (25%; every cluster with ``crowded(seed)``, ``runner --crowded``):
1-8 nodes whose whole cpu is taken by 1-4 lower-priority "filler" pods (most started, 5% terminating
with a PreemptionByScheduler DisruptionTarget condition), then 1-5 "preemptor" pods of priority
10-1000 that arrive after every other pod, ask for 1/4 to all of a filled node's cpu, some pinned to
it, some already nominated there.

Optional features (``FEATURES``); ``DEFAULT_FEATURES`` says which are on. Switching one on keeps the
rest of a seed's cluster as it was (they draw from their own stream, or their rolls are drawn anyway).
``ORACLE_FEATURES`` wait for the oracle to model upstream's queue and node sampling (see above);
``PLUGIN_FEATURES`` wait for spread-scheduler's plugins:
- ``interpodaffinity``: required/preferred podAffinity and podAntiAffinity on pending (40%) and
  existing (10%) pods: hostname/zone/region/rack topology keys, ``namespaces``, ``namespaceSelector``
  (empty: all; or by label), ``matchLabelKeys``/``mismatchLabelKeys``, self-affinity, weights 1-100.
- ``imagelocality``: ``node.status.images`` with sizes on 70% of nodes, containers using those images.
- ``balancedallocation``: 30% of pods with lopsided cpu/memory requests.
- ``disks`` (VolumeRestrictions and NodeVolumeLimits, issue #18; its own stream): in 30% of
  clusters 40% of the pods, existing and pending, attach 1-2 in-tree disks from a small pool:
  ``rbd`` or ``iscsi`` (monitors that overlap or not, the rbd pool spelled out as the API server
  defaults it) and ``gcePersistentDisk`` or ``awsElasticBlockStore`` (which CSI migration counts),
  read-only half the time, so pods meet the disks of pods already on a node, and preemption the pods
  holding them. Half the nodes get a CSINode: the EBS and/or GCE PD CSI drivers with an
  ``allocatable.count`` of 1-3 (or none), the in-tree plugins marked migrated or not; and some of
  those nodes VolumeAttachments of CSI PersistentVolumes, which count against the limit too.

- ``claims`` (VolumeBinding, VolumeZone, VolumeRestrictions' ReadWriteOncePod, NodeVolumeLimits;
  its own stream): in 30% of clusters a WaitForFirstConsumer and an Immediate StorageClass and, per
  namespace, claims in the states a pod can meet besides "to be bound by the scheduler": bound to a
  CSI PersistentVolume (node affinity on a zone or a host, zone labels, some ReadWriteOncePod),
  bound to a PV that does not exist, lost, being deleted, unbound with an Immediate class or none,
  or not created at all; 30% of the pods use 1-2 of them (existing pods too, so claims are in use).

- ``wffc`` (VolumeBinding's binding path; its own stream): in 30% of clusters claims waiting for
  their first consumer, of three WaitForFirstConsumer classes: one without a provisioner (static PVs
  only), one provisioned by a CSI driver (allowedTopologies on some zones half the time) and one
  whose driver publishes capacity (CSIStorageCapacities per zone, some too small). Static PVs of
  several sizes, access modes and volume modes, pinned to a host or a zone or not at all, labelled
  for selectors, Available, Released, bound to another claim or pre-bound to one of ours; claims
  with selectors, Block mode, a node already selected, or pre-bound to a PV. 35% of the pending pods
  use 1-2 of them, so later pods of a cluster meet the claims and PVs earlier ones bound (the
  oracle's stand-in PV controller and provisioner complete upstream's PreBind writes as
  ``simulate`` does).

- ``declaredfeatures``, ``imagevolumes``, ``resized`` (issue #47, the node and pod changes of 1.36 and
  1.37; each drawn in 60% of clusters from its own stream, ``node_pod_changes``): from 1.36 only,
  nodes with ``status.declaredFeatures`` (a third none, a fifth all, the rest a part) and 35% of the
  pending pods with a RestartAllContainers restart rule on a container or init container, which
  needs the node feature (now and then the plain Restart action, which does not); at every minor
  35% of the pods with 1-2 OCI image volumes of images the nodes hold or not (batch replicas in half
  the clusters: all the same volumes, or each its own, which upstream's batching signature leaves
  out); 40% of the assigned
  pods resized in place: container and init container statuses with ``allocatedResources`` and/or
  ``resources`` (limits only now and then), pod-level ``status.resources``/``allocatedResources``
  (with or without pod-level requests), PodResizePending (Deferred, Infeasible) and
  PodResizeInProgress conditions, sizes above and below the spec's.
- ``draextended`` (DRAExtendedResource, KEP-5004; only in clusters decided as a minor whose API
  server keeps ``spec.extendedResourceName``, 1.36 and 1.37; its own stream): in 35% of clusters 1-3
  DeviceClasses, each backing ``example.com/gpu``, ``example.com/fpga`` or only its implicit name
  ``deviceclass.resource.kubernetes.io/<class>`` (two classes may back one name, the newest wins);
  ``example.com/fpga`` in the allocatable of 30% of the nodes (0-2: a device plugin's, or none), and
  40% of the pods (existing too) asking for one of those names, or for a class that does not exist,
  so NodeResourcesFit counts the resource on nodes offering it and leaves it to DynamicResources on
  the others (the GPU requests of every cluster meet the class backing them too).

- ``dra`` (DynamicResources with structured parameters, issue #49; 30% of clusters from its own
  stream, or every one with ``scenario(..., always={"dra"})``; with ``draextended`` too, whose
  classes select these slices' devices for the extended resources): 2-5 DeviceClasses, with and
  without a CEL selector on the driver, an attribute
  or a capacity; GPU slices (model, index, health, a version; memory capacity) on 60% of the nodes,
  NIC slices on 30%, from 1.36 (DRAPartitionableDevices on) now and then a GPU offered whole or as two
  halves through a counter set in a slice of its own, and a pool of NICs for all nodes in 20% of the
  clusters. At 1.35 a node has one pool at most and no pool is for all nodes: v0.35's allocator
  searches a node's pools in Go map order, so with two it may take another device, or meet another
  selector's runtime error, from one run to the next. 0-3 claims allocated to a device of an assigned
  pod's node and reserved for it (some then used by pending pods as well), 0-2 claims per namespace
  that pods share by name, now and then one never created; 40% of the pending pods with 1-2
  ``spec.resourceClaims``, by name or through a ResourceClaimTemplate whose claim the generator makes
  as kube-controller-manager would (owned by the pod, named in ``status.resourceClaimStatuses``; 5%
  not made yet). Requests by count (1, 2) or All, with request selectors, ``firstAvailable`` lists of
  2-3, ``matchAttribute`` constraints, and now and then a class that does not exist; the API server's
  defaults (``allocationMode``, ``count``) are spelled out, as the oracle's fake API does not default.
  Then the allocator's gated parts, each only at a minor whose gate is on by default (a second
  pass from a stream of its own, so the objects above stay the seed's): admin access on 40% of the
  ``exactly`` requests of one namespace in 40% of the clusters (every minor; the namespace carries
  ``resource.kubernetes.io/admin-access=true``, without which the API server refuses the claim);
  from 1.36, device taints (NoSchedule, NoExecute; None too at 1.37) on 20% of the devices and
  1-2 tolerations on 30% of the requests in 60% of the clusters, a GPU several claims may share
  (``allowMultipleAllocations``, memory by a range with a step, a list of sizes or as asked) in
  half the GPU slices and memory ``capacity`` requests on 30% of the requests in 60% of the
  clusters, and in half the clusters binding conditions on 70% of the allocated claims (ready,
  failed, pending or without a device status; a pending one allocated long ago, so timed out),
  each then named by a pending pod of its namespace too; at 1.37 (DRADeviceTaintRules GA) 1-2
  DeviceTaintRules in 30% of the clusters, by driver, pool and/or device. In half the clusters the
  selectors on GPU attributes or capacity are guarded by the driver, so NICs fail them rather than
  end the cycle with a CEL runtime error.
  Not generated: binding conditions on a slice's devices (a fresh allocation of one makes
  upstream's PreBind poll for them up to the binding timeout, 10 minutes of the oracle's wall clock,
  as no driver ever sets them there), per-device node selection.

Not generated: other volume sources.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable
from typing import Any

from scheduler.api.quantity import milli_value, parse_quantity
from scheduler.config import upstream_config
from scheduler.features import DEFAULT_FEATURES as DEFAULT_KUBE_FEATURES
from scheduler.features import SUPPORTED, features_at

# Fields of plugins spread-scheduler does not run yet (InterPodAffinity, ImageLocality,
# NodeResourcesBalancedAllocation): until each lands, our side ignores or refuses them.
PLUGIN_FEATURES = frozenset(
    {"interpodaffinity", "imagelocality", "balancedallocation", "disks", "claims", "wffc", "draextended", "dra"}
)
# Shapes upstream decides in its queue or node sampling, which once waited for the oracle or for our
# side: gated pods (PreEnqueue), pending pods being deleted (skipPodSchedule), a nominated node that
# exists (evaluateNominatedNode, and the nominator's pods counted in Filter) and
# percentageOfNodesToScore below 100 on more than 100 nodes (numFeasibleNodesToFind).
ORACLE_FEATURES = frozenset({"schedulinggates", "terminatingpods", "nominatednodes", "nodesampling"})
# DefaultPreemption's inputs (issue #19): priorities everywhere, preemptionPolicy, PodDisruptionBudgets,
# status.startTime, DefaultPreemptionArgs and clusters filled by low-priority pods.
PREEMPTION_FEATURES = frozenset({"preemption"})
# Issue #47's node and pod changes of 1.36/1.37, each drawn per cluster (``DRAWN_FEATURES``): node
# ``status.declaredFeatures`` and pods that need one, image volumes, assigned pods resized in place.
NODE_POD_FEATURES = frozenset({"declaredfeatures", "imagevolumes", "resized"})
FEATURES = PLUGIN_FEATURES | ORACLE_FEATURES | PREEMPTION_FEATURES | NODE_POD_FEATURES
# THE SWITCH: add a feature's name here when its plugin (or the oracle's model) has merged.
# Every one has: the plugins, the oracle's gates, pods being deleted and node sampling, and nominated
# pods counted in Filter on our side (the queue's nominator).
DEFAULT_FEATURES: frozenset[str] = FEATURES

ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
HOSTNAME = "kubernetes.io/hostname"
NAMESPACE_NAME = "kubernetes.io/metadata.name"
LABEL_KEYS = ("app", "tier", "team", "disk", "gen")
LABEL_VALUES = ("a", "b", "c", "ssd", "1", "5", "05", "12", "1_0", "")
TOPOLOGY_KEYS = (ZONE, HOSTNAME, REGION, "rack")
NAMESPACES = ("default", "team-a", "team-b")
OWNER_KINDS = ("ReplicaSet", "StatefulSet", "ReplicationController")

GPU = "example.com/gpu"
CPUS = ("0", "50m", "100m", "250m", "500m", "1", "1500m", "2", "0.5", "1e-1", "2000m")
MEMORIES = ("0", "64Mi", "128Mi", "200Mi", "512Mi", "1Gi", "1500M", "0.5Gi", "100m", "1Ki", "1e3", "1e8")
PORTS = (80, 443, 8080)
PROTOCOLS = ("TCP", "TCP", "UDP", "SCTP")
PRIORITIES = (0, 10, 100, 1000)
OVERHEADS = (("10m", "10Mi"), ("250m", "120Mi"), ("100m", "0"))
IMAGES = (  # (name as pods spell it, names the node reports, size in bytes)
    ("registry.example/app-a:1", ("registry.example/app-a:1",), 250 * 2**20),
    ("registry.example/app-b", ("registry.example/app-b:latest",), 900 * 2**20),
    ("nginx:1.27", ("docker.io/library/nginx:1.27", "nginx:1.27"), 70 * 2**20),
    ("busybox", ("busybox:latest",), 4 * 2**20),
    ("registry.example/big:2", ("registry.example/big:2",), 3 * 2**30),
)


def _fit_args(rng: random.Random) -> dict[str, Any]:
    """NodeResourcesFitArgs: one of the three strategies, with or without ignored resources."""
    resources = [{"name": "cpu", "weight": rng.randint(1, 3)}, {"name": "memory", "weight": rng.randint(1, 3)}]
    if rng.random() < 0.3:
        resources.append({"name": GPU, "weight": rng.randint(1, 5)})
    strategy: dict[str, Any] = {"type": rng.choice(("LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"))}
    if rng.random() < 0.6:
        strategy["resources"] = resources
    if strategy["type"] == "RequestedToCapacityRatio":
        strategy["resources"] = resources
        points = sorted(rng.sample(range(0, 101), rng.randint(1, 3)))
        strategy["requestedToCapacityRatio"] = {
            "shape": [{"utilization": u, "score": rng.randint(0, 10)} for u in points]
        }
    args: dict[str, Any] = {"scoringStrategy": strategy}
    if rng.random() < 0.2:
        args["ignoredResources"] = [GPU]
    elif rng.random() < 0.2:
        args["ignoredResourceGroups"] = ["example.com"]
    return {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "NodeResourcesFitArgs", **args}


# Config validation parses Gt/Lt values as integers (nodeaffinity.NewNodeSelector): args keep to these.
SET_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


def _node_affinity_args(rng: random.Random) -> dict[str, Any]:
    """NodeAffinityArgs.addedAffinity: required terms, preferred terms or both, on node labels."""
    added: dict[str, Any] = {}
    if rng.random() < 0.6:
        added["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": [
                {"matchExpressions": [_requirement(rng, ops=SET_OPERATORS)]} for _ in range(rng.randint(1, 2))
            ]
        }
    if not added or rng.random() < 0.5:
        added["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": rng.randint(1, 100), "preference": {"matchExpressions": [_requirement(rng, ops=SET_OPERATORS)]}}
            for _ in range(rng.randint(1, 2))
        ]
    return {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "NodeAffinityArgs", "addedAffinity": added}


def config(
    rng: random.Random, *, batch: bool = False, many_nodes: bool = False, sampling: bool = False
) -> dict[str, Any]:
    """Our default profile spelled out for both sides, with System or List defaulting."""
    args: dict[str, Any] = {"defaultingType": "System"}
    if batch:
        args = {"defaultingType": "List", "defaultConstraints": []}  # every pod without constraints is signable
    elif rng.random() < 0.3:
        keys = rng.sample(TOPOLOGY_KEYS[:3], rng.randint(0, 2))
        args = {
            "defaultingType": "List",
            "defaultConstraints": [
                {
                    "maxSkew": rng.randint(1, 3),
                    "topologyKey": key,
                    "whenUnsatisfiable": rng.choice(("DoNotSchedule", "ScheduleAnyway")),
                }
                for key in keys
            ],
        }
    plugin_config = [
        {
            "name": "PodTopologySpread",
            "args": {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "PodTopologySpreadArgs", **args},
        }
    ]
    if rng.random() < 0.3:
        plugin_config.append({"name": "NodeResourcesFit", "args": _fit_args(rng)})
    if rng.random() < 0.1:
        plugin_config.append({"name": "NodeAffinity", "args": _node_affinity_args(rng)})
    out = upstream_config(plugin_config)
    if many_nodes:
        # Without "nodesampling", 100: every node is evaluated (the default would sample past 100 nodes).
        percentage = rng.choice((0, 5, 30, 50, 70, 100))
        if not sampling:
            percentage = 100
        if rng.random() < 0.5:
            out["percentageOfNodesToScore"] = percentage
        else:
            out["profiles"][0]["percentageOfNodesToScore"] = percentage
    return out


def _allocatable(rng: random.Random) -> dict[str, str]:
    """Mostly roomy, sometimes tight (a few pods fill it), now and then missing memory or holding GPUs."""
    alloc = {
        "cpu": rng.choice(("1", "2", "4", "3500m", "16", "1e1", "4.5")),
        "memory": rng.choice(("1Gi", "2Gi", "4Gi", "16Gi", "4000M", "0.5Gi", "2.5Gi")),
        "pods": rng.choice(("110", "110", "110", "2", "4", "8")),
    }
    if rng.random() < 0.2:
        alloc[GPU] = str(rng.randint(0, 4))
    if rng.random() < 0.2:
        alloc["ephemeral-storage"] = rng.choice(("1Gi", "10Gi"))
    if rng.random() < 0.03:
        del alloc["memory"]
    return alloc


def _requests(rng: random.Random, gpu: bool) -> dict[str, str]:
    out = {}
    if rng.random() < 0.8:
        out["cpu"] = rng.choice(CPUS)
    if rng.random() < 0.7:
        out["memory"] = rng.choice(MEMORIES)
    if gpu and rng.random() < 0.3:
        out[GPU] = str(rng.randint(1, 2))
    if rng.random() < 0.05:
        out["ephemeral-storage"] = "500Mi"
    return out


def _resources(rng: random.Random, gpu: bool) -> dict[str, Any] | None:
    """Requests (70%), requests and limits (20%, limits at least the requests) or limits only (10%).

    An extended resource is not overcommitted: its limit is required and equals its request.
    """
    requests = _requests(rng, gpu)
    if not requests:
        return None
    roll = rng.random()
    if roll < 0.1:
        return {"limits": requests}  # the API server copies limits into the missing requests
    out: dict[str, Any] = {"requests": requests}
    if roll < 0.3:
        # Each limit at least its request (every request here is below 16 cpus and 32Gi).
        out["limits"] = {
            name: rng.choice((quantity, "16" if name == "cpu" else "32Gi")) if name in ("cpu", "memory") else quantity
            for name, quantity in requests.items()
        }
    elif GPU in requests:
        out["limits"] = {GPU: requests[GPU]}
    return out


def _ports(rng: random.Random, used: set[tuple[str, str, int]]) -> list[dict[str, Any]]:
    """One hostPort, unique in the pod by (protocol, hostIP, port) as the API requires."""
    port: dict[str, Any] = {"containerPort": rng.choice(PORTS), "protocol": rng.choice(PROTOCOLS)}
    port["hostPort"] = port["containerPort"] if rng.random() < 0.8 else port["containerPort"] + 30000
    host_ip = rng.choice(("", "", "0.0.0.0", "10.0.0.1", "10.0.0.2"))
    if host_ip:
        port["hostIP"] = host_ip
    key = (port["protocol"], host_ip, port["hostPort"])
    if key in used:
        return []
    used.add(key)
    return [port]


def _container(
    rng: random.Random, name: str, gpu: bool, used_ports: set[tuple[str, str, int]] | None
) -> dict[str, Any]:
    container: dict[str, Any] = {"name": name, "image": "x"}
    if rng.random() < 0.75:
        resources = _resources(rng, gpu)
        if resources:
            container["resources"] = resources
    if used_ports is not None and rng.random() < 0.15:
        ports = _ports(rng, used_ports)
        if ports:
            container["ports"] = ports
    return container


def _sum_requests(containers: Iterable[dict[str, Any]], resource: str) -> int:
    """Requests of ``resource`` (limits where requests are missing, as the API defaults them), summed,
    in milli-units: an upper bound of what the API compares pod-level requests against."""
    total = 0
    for container in containers:
        resources = container.get("resources", {})
        quantity = resources.get("requests", {}).get(resource) or resources.get("limits", {}).get(resource)
        if quantity:
            total += milli_value(parse_quantity(quantity))
    return total


def pod_spec(rng: random.Random, gpu: bool = True) -> dict[str, Any]:
    """Containers (1-2), sometimes init containers and sidecars, overhead and pod-level requests."""
    used_ports: set[tuple[str, str, int]] = set()
    spec: dict[str, Any] = {
        "containers": [_container(rng, f"c{i}", gpu, used_ports) for i in range(rng.choice((1, 1, 2)))]
    }
    if rng.random() < 0.2:
        inits = []
        for i in range(rng.randint(1, 2)):
            sidecar = rng.random() < 0.4
            # The API checks an init container's hostPorts against itself only (they run one by one),
            # so a sidecar may repeat a container's.
            init = _container(rng, f"init{i}", gpu, set() if sidecar else None)
            if sidecar:
                init["restartPolicy"] = "Always"
            inits.append(init)
        spec["initContainers"] = inits
    if rng.random() < 0.08:
        cpu, memory = rng.choice(OVERHEADS)
        spec["runtimeClassName"] = runtime_class_name(cpu, memory)
        spec["overhead"] = {"cpu": cpu, "memory": memory}
    if rng.random() < 0.05:
        # Never below the containers' (API: "must be greater than or equal to aggregate container requests").
        everything = spec["containers"] + spec.get("initContainers", [])
        milli_cpu = _sum_requests(everything, "cpu") + 1000 * rng.choice((0, 1, 3))
        memory_bytes = -(-_sum_requests(everything, "memory") // 1000) + 2**30 * rng.choice((0, 1, 3))
        spec["resources"] = {"requests": {"cpu": f"{milli_cpu}m", "memory": str(memory_bytes)}}
    return spec


def runtime_class_name(cpu: str, memory: str) -> str:
    return f"rc-{cpu}-{memory}".lower()


def _labels(rng: random.Random, n: int = 3) -> dict[str, str]:
    return {k: rng.choice(LABEL_VALUES) for k in rng.sample(LABEL_KEYS, rng.randint(0, n))}


def _taints(rng: random.Random, count: int) -> list[dict[str, str]]:
    """``count`` taints at most, unique by key and effect (the API refuses duplicates)."""
    out: dict[tuple[str, str], dict[str, str]] = {}
    for _ in range(count):
        taint = {
            "key": rng.choice(("dedicated", "gpu", "spot")),
            "effect": rng.choice(("NoSchedule", "NoExecute", "PreferNoSchedule")),
        }
        if rng.random() < 0.6:
            taint["value"] = rng.choice(("a", "b", "infra"))
        out.setdefault((taint["key"], taint["effect"]), taint)
    return list(out.values())


def _node_images(rng: random.Random) -> list[dict[str, Any]]:
    return [
        {"names": list(names), "sizeBytes": size} for _, names, size in rng.sample(IMAGES, rng.randint(1, len(IMAGES)))
    ]


def nodes(
    rng: random.Random, count: int, features: frozenset[str] = frozenset(), frng: random.Random | None = None
) -> list[dict[str, Any]]:
    out = []
    frng = frng or random.Random(0)
    for i in range(count):
        name = f"node-{i}"
        labels = _labels(rng)
        if rng.random() < 0.92:
            labels[HOSTNAME] = name if rng.random() < 0.97 else rng.choice((f"host-{i}", f"host-{i // 2}"))
        if rng.random() < 0.85:
            labels[ZONE] = f"zone-{rng.randint(1, 4)}"
        if rng.random() < 0.7:
            labels[REGION] = f"region-{rng.randint(1, 2)}"
        if rng.random() < 0.4:
            labels["rack"] = f"r{rng.randint(1, 6)}"
        spec: dict[str, Any] = {}
        if rng.random() < 0.3:
            spec["taints"] = _taints(rng, rng.randint(1, 2))
        if rng.random() < 0.07:
            spec["unschedulable"] = True
        status: dict[str, Any] = {"allocatable": _allocatable(rng)}
        if "imagelocality" in features and frng.random() < 0.7:
            status["images"] = _node_images(frng)
        out.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name, "labels": labels},
                "spec": spec,
                "status": status,
            }
        )
    return out


def _expression(rng: random.Random, keys: tuple[str, ...] = ("tier", "team", "gen")) -> dict[str, Any]:
    op = rng.choice(("In", "NotIn", "Exists", "DoesNotExist"))
    expr: dict[str, Any] = {"key": rng.choice(keys), "operator": op}
    if op in ("In", "NotIn"):
        expr["values"] = rng.sample(("a", "b", "c", ""), rng.randint(1, 2))
    return expr


def _selector(rng: random.Random) -> dict[str, Any] | None:
    roll = rng.random()
    if roll < 0.05:
        return None
    if roll < 0.1:
        return {}
    sel: dict[str, Any] = {}
    if rng.random() < 0.8:
        sel["matchLabels"] = {"app": rng.choice(("a", "b"))}
    if rng.random() < 0.3:
        sel["matchExpressions"] = [_expression(rng) for _ in range(rng.choice((1, 1, 2, 3)))]
    return sel


def _selector_keys(sel: dict[str, Any]) -> set[str]:
    return set(sel.get("matchLabels", {})) | {e["key"] for e in sel.get("matchExpressions", [])}


def _requirement(
    rng: random.Random, ops: tuple[str, ...] = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
) -> dict[str, Any]:
    op = rng.choice(ops)
    key = rng.choice((*LABEL_KEYS, ZONE, HOSTNAME))
    expr: dict[str, Any] = {"key": key, "operator": op}
    if op in ("In", "NotIn"):
        values = (*LABEL_VALUES, "zone-1", "zone-2") if key == ZONE else LABEL_VALUES
        expr["values"] = rng.sample(values, rng.randint(1, 3))
    elif op in ("Gt", "Lt"):
        expr["values"] = [rng.choice(("3", "0", "10", "x"))]  # one label value; the API accepts a non-integer
    return expr


def _term(rng: random.Random, node_names: list[str], fields: float) -> dict[str, Any]:
    term: dict[str, Any] = {}
    if rng.random() < 0.85 or not node_names:
        term["matchExpressions"] = [_requirement(rng) for _ in range(rng.randint(1, 2))]
    if node_names and rng.random() < fields:
        # The API takes metadata.name only, In/NotIn only, and exactly one value.
        term["matchFields"] = [
            {"key": "metadata.name", "operator": rng.choice(("In", "In", "NotIn")), "values": [rng.choice(node_names)]}
        ]
    return term


def _toleration(rng: random.Random) -> dict[str, Any]:
    op = rng.choice(("Equal", "Exists", ""))
    tol: dict[str, Any] = {}
    if op == "Exists" and rng.random() < 0.2:
        tol["operator"] = "Exists"  # empty key: tolerates everything
    else:
        tol["key"] = rng.choice(("dedicated", "gpu", "spot", "node.kubernetes.io/unschedulable"))
        if op:
            tol["operator"] = op
        if op != "Exists":
            tol["value"] = rng.choice(("a", "b", "infra", ""))
    effect = rng.choice(("", "NoSchedule", "NoExecute", "PreferNoSchedule"))
    if effect:
        tol["effect"] = effect
        if effect == "NoExecute" and rng.random() < 0.3:
            tol["tolerationSeconds"] = 30
    return tol


def _constraints(rng: random.Random) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()
    for _ in range(rng.choice((0, 0, 1, 1, 2, 3))):
        key = rng.choice(TOPOLOGY_KEYS)
        when = rng.choice(("DoNotSchedule", "ScheduleAnyway"))
        if (key, when) in seen:  # the API refuses two constraints with one topologyKey and whenUnsatisfiable
            continue
        seen.add((key, when))
        c: dict[str, Any] = {"maxSkew": rng.randint(1, 3), "topologyKey": key, "whenUnsatisfiable": when}
        sel = _selector(rng)
        if sel is not None:
            c["labelSelector"] = sel
            # matchLabelKeys needs a labelSelector and must not repeat one of its keys.
            if rng.random() < 0.2 and "team" not in _selector_keys(sel):
                c["matchLabelKeys"] = ["team"]
        if when == "DoNotSchedule" and rng.random() < 0.25:
            c["minDomains"] = rng.randint(1, 6)
        if rng.random() < 0.25:
            c["nodeAffinityPolicy"] = rng.choice(("Honor", "Ignore"))
        if rng.random() < 0.25:
            c["nodeTaintsPolicy"] = rng.choice(("Honor", "Ignore"))
        out.append(c)
    return out


# -- InterPodAffinity (feature "interpodaffinity") ---------------------------------------------------


def _affinity_term(rng: random.Random, labels: dict[str, str], namespaces: tuple[str, ...]) -> dict[str, Any]:
    """A PodAffinityTerm using every field; with ``labels`` (the pod's own) it may select itself."""
    term: dict[str, Any] = {"topologyKey": rng.choice((HOSTNAME, HOSTNAME, ZONE, ZONE, REGION, "rack"))}
    roll = rng.random()
    if roll < 0.05:
        sel: dict[str, Any] | None = None  # selects no pod
    elif roll < 0.1:
        sel = {}  # selects every pod
    elif labels and roll < 0.35:
        key = rng.choice(sorted(labels))
        sel = {"matchLabels": {key: labels[key]}}  # self-matching: the first pod of a group
    else:
        sel = _selector(rng) or {"matchLabels": {"app": "a"}}
    if sel is not None:
        term["labelSelector"] = sel
        free = [k for k in ("team", "gen", "tier") if k not in _selector_keys(sel)]
        if free and rng.random() < 0.2:
            term["matchLabelKeys"] = [free.pop(rng.randrange(len(free)))]
        if free and rng.random() < 0.2:
            term["mismatchLabelKeys"] = [rng.choice(free)]
    roll = rng.random()
    if roll < 0.2:
        term["namespaces"] = rng.sample(namespaces, rng.randint(1, len(namespaces)))
    elif roll < 0.3:
        term["namespaceSelector"] = {}  # every namespace
    elif roll < 0.45:
        term["namespaceSelector"] = rng.choice(
            (
                {"matchLabels": {"env": rng.choice(("prod", "dev"))}},
                {"matchExpressions": [{"key": "env", "operator": "Exists"}]},
                {"matchLabels": {NAMESPACE_NAME: rng.choice(namespaces)}},
            )
        )
        if rng.random() < 0.3:
            term["namespaces"] = [rng.choice(namespaces)]
    return term


def pod_affinity(rng: random.Random, labels: dict[str, str], namespaces: tuple[str, ...]) -> dict[str, Any]:
    """podAffinity and/or podAntiAffinity, each with required and/or preferred terms."""
    out: dict[str, Any] = {}
    for kind in rng.sample(("podAffinity", "podAntiAffinity"), rng.randint(1, 2)):
        part: dict[str, Any] = {}
        if rng.random() < 0.5:
            part["requiredDuringSchedulingIgnoredDuringExecution"] = [
                _affinity_term(rng, labels, namespaces) for _ in range(rng.randint(1, 2))
            ]
        if not part or rng.random() < 0.5:
            part["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {
                    "weight": rng.choice((1, rng.randint(1, 100), 100)),
                    "podAffinityTerm": _affinity_term(rng, labels, namespaces),
                }
                for _ in range(rng.randint(1, 3))
            ]
        out[kind] = part
    return out


# -- objects ----------------------------------------------------------------------------------------


def _owned_by(kind: str, ns: str, app: str) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "v1" if kind == "ReplicationController" else "apps/v1",
            "kind": kind,
            "name": f"{kind.lower()}-{app}",
            "uid": f"uid-{ns}-{kind.lower()}-{app}",
            "controller": True,
        }
    ]


def _owner(rng: random.Random, kind: str, ns: str, app: str) -> dict[str, Any]:
    """A workload whose template labels match its selector, as apps/v1 and core/v1 validation require."""
    template_labels = {"app": app}
    template = {"metadata": {"labels": template_labels}, "spec": {"containers": [{"name": "c", "image": "x"}]}}
    meta = {"name": f"{kind.lower()}-{app}", "namespace": ns}
    if kind == "ReplicationController":
        return {
            "apiVersion": "v1",
            "kind": kind,
            "metadata": meta,
            "spec": {"replicas": 1, "selector": {"app": app}, "template": template},
        }
    selector: dict[str, Any] = {"matchLabels": {"app": app}}
    if rng.random() < 0.3:
        selector["matchExpressions"] = [{"key": "tier", "operator": "NotIn", "values": ["c"]}]
    spec: dict[str, Any] = {"replicas": 1, "selector": selector, "template": template}
    if kind == "StatefulSet":
        spec["serviceName"] = f"svc-{app}"
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": meta, "spec": spec}


def _services(rng: random.Random, ns: str, app: str) -> list[dict[str, Any]]:
    """0-3 Services, selecting the owner's pods, a subset of them, other pods, or none at all."""
    out = []
    for i in range(rng.choice((0, 0, 1, 1, 2, 3))):
        selector = rng.choice(
            (
                {"app": app},
                {"app": app, "tier": rng.choice(("a", "b"))},
                {"tier": rng.choice(("a", "b", "c"))},
                {"app": "b" if app == "a" else "a"},
                {"team": ""},
                None,
            )
        )
        spec: dict[str, Any] = {"ports": [{"port": rng.choice(PORTS), "protocol": rng.choice(PROTOCOLS)}]}
        if selector is not None:
            spec["selector"] = selector
        out.append(
            {"apiVersion": "v1", "kind": "Service", "metadata": {"name": f"svc-{i}", "namespace": ns}, "spec": spec}
        )
    return out


def _namespace(rng: random.Random, name: str) -> dict[str, Any]:
    labels = {NAMESPACE_NAME: name}  # the API server sets it on every Namespace
    if rng.random() < 0.5:
        labels["env"] = rng.choice(("prod", "dev"))
    if rng.random() < 0.3:
        labels["tier"] = rng.choice(("a", "b", ""))
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def _priority_class(value: int, never: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": f"prio-{value}-never" if never else f"prio-{value}"},
        "value": value,
    }
    if never:
        out["preemptionPolicy"] = "Never"
    return out


def _runtime_class(cpu: str, memory: str) -> dict[str, Any]:
    return {
        "apiVersion": "node.k8s.io/v1",
        "kind": "RuntimeClass",
        "metadata": {"name": runtime_class_name(cpu, memory)},
        "handler": "runc",
        "overhead": {"podFixed": {"cpu": cpu, "memory": memory}},
    }


def _set_priority(spec: dict[str, Any], value: int, never: bool = False) -> None:
    """By class, as the Priority admission plugin wants it (it refuses a bare spec.priority); a class
    with ``preemptionPolicy: Never`` gives the pod the same policy (admission refuses another)."""
    spec["priorityClassName"] = f"prio-{value}-never" if never else f"prio-{value}"
    spec["priority"] = value
    if never:
        spec["preemptionPolicy"] = "Never"


def _classes(pods: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The PriorityClasses the pods name (``prio-<value>``, ``prio-<value>-never``)."""
    named = {(p["spec"]["priorityClassName"], p["spec"]["priority"]) for p in pods if "priorityClassName" in p["spec"]}
    return [_priority_class(value, never=name.endswith("-never")) for name, value in sorted(named)]


def _lopsided(rng: random.Random, spec: dict[str, Any]) -> None:
    """Feature "balancedallocation": the first container asks mostly for cpu or mostly for memory."""
    cpu, memory = rng.choice((("2", "64Mi"), ("1500m", "0"), ("50m", "3Gi"), ("0", "1500M"), ("1", "1Gi")))
    resources = spec["containers"][0].setdefault("resources", {})
    resources["requests"] = {"cpu": cpu, "memory": memory}
    resources.pop("limits", None)
    spec.pop("resources", None)  # pod-level requests must stay above the containers'


def _use_images(rng: random.Random, spec: dict[str, Any]) -> None:
    """Feature "imagelocality": containers run images that some nodes already hold."""
    for container in spec["containers"]:
        container["image"] = rng.choice(IMAGES)[0]


def _use_disks(rng: random.Random, spec: dict[str, Any]) -> None:
    """Feature "disks": 1-2 in-tree disks from a small pool, as VolumeRestrictions compares them."""
    volumes = spec.setdefault("volumes", [])
    for _ in range(rng.randint(1, 2)):
        if rng.random() < 0.5:
            # The pool spelled out, as the API server returns it (it defaults an unset one to "rbd";
            # the oracle decodes without defaulting).
            source: dict[str, Any] = {
                "monitors": rng.sample(["m1:6789", "m2:6789", "m3:6789"], rng.randint(1, 2)),
                "image": rng.choice(("img-a", "img-b")),
                "pool": rng.choice(("rbd", "rbd", "fast")),
            }
            kind = "rbd"
        elif rng.random() < 0.4:
            iqn = rng.choice(("iqn.2026-01.com.example:disk-a", "iqn.2026-01.com.example:disk-b"))
            source = {"targetPortal": "10.0.0.1:3260", "iqn": iqn, "lun": 0}
            kind = "iscsi"
        elif rng.random() < 0.5:
            source, kind = {"pdName": rng.choice(("pd-a", "pd-b", "pd-c"))}, "gcePersistentDisk"
        else:
            source, kind = {"volumeID": rng.choice(("vol-a", "vol-b", "vol-c"))}, "awsElasticBlockStore"
        if rng.random() < 0.5:
            source["readOnly"] = True
        volumes.append({"name": f"disk-{len(volumes)}", kind: source})


EBS_CSI, GCE_CSI = "ebs.csi.aws.com", "pd.csi.storage.gke.io"
MIGRATED_PLUGINS = ("kubernetes.io/aws-ebs", "kubernetes.io/gce-pd")


def _csi_objects(rng: random.Random, node_names: list[str]) -> list[dict[str, Any]]:
    """Feature "disks": CSINodes on half the nodes (drivers with or without a volume limit, in-tree
    plugins migrated or not) and VolumeAttachments of CSI PersistentVolumes to some of them."""
    out: list[dict[str, Any]] = []
    attached = 0
    for node in node_names:
        if rng.random() < 0.5:
            continue
        drivers = []
        for driver in rng.sample([EBS_CSI, GCE_CSI], rng.randint(1, 2)):
            entry: dict[str, Any] = {"name": driver, "nodeID": node}
            if rng.random() < 0.8:
                entry["allocatable"] = {"count": rng.randint(1, 3)}
            drivers.append(entry)
        meta: dict[str, Any] = {"name": node}
        migrated = [p for p in MIGRATED_PLUGINS if rng.random() < 0.7]
        if migrated:
            meta["annotations"] = {"storage.alpha.kubernetes.io/migrated-plugins": ",".join(migrated)}
        out.append(
            {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": meta, "spec": {"drivers": drivers}}
        )
        for _ in range(rng.choice((0, 0, 1, 2))):
            pv = f"pv-attached-{attached}"
            handle = rng.choice(("vol-a", "vol-b", f"vol-attached-{attached}"))
            out.append(
                {
                    "apiVersion": "v1",
                    "kind": "PersistentVolume",
                    "metadata": {"name": pv},
                    "spec": {
                        "capacity": {"storage": "1Gi"},
                        "accessModes": ["ReadWriteOnce"],
                        "csi": {"driver": EBS_CSI, "volumeHandle": handle},
                    },
                }
            )
            out.append(
                {
                    "apiVersion": "storage.k8s.io/v1",
                    "kind": "VolumeAttachment",
                    "metadata": {"name": f"va-{attached}"},
                    "spec": {"attacher": EBS_CSI, "nodeName": node, "source": {"persistentVolumeName": pv}},
                }
            )
            attached += 1
    return out


CLAIM_STATES = (
    "bound",
    "bound",
    "bound",
    "bound-rwop",
    "pv-missing",
    "lost",
    "deleting",
    "immediate",
    "no-class",
    "missing",
)


def _claims(
    rng: random.Random, pods: list[dict[str, Any]], node_objs: list[dict[str, Any]], namespaces: Iterable[str]
) -> list[dict[str, Any]]:
    """Feature "claims": StorageClasses, claims in every state but "waiting for its first consumer",
    their PersistentVolumes, and pods using them."""
    out: list[dict[str, Any]] = [
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": name},
            "provisioner": "csi.example.com",
            "volumeBindingMode": mode,
        }
        for name, mode in (("sc-wait", "WaitForFirstConsumer"), ("sc-now", "Immediate"))
    ]
    pool: dict[str, list[str]] = {}
    for ns in namespaces:
        names = pool.setdefault(ns, [])
        for i in range(rng.randint(1, 4)):
            name, state = f"claim-{i}", rng.choice(CLAIM_STATES)
            names.append(name)
            if state == "missing":
                continue
            out += _claim_objects(rng, ns, name, state, node_objs)
    for pod in pods:
        if pod["metadata"]["name"].startswith("batch-") or rng.random() >= 0.3:
            continue
        _use_claims(rng, pod, pool, "vol")
    return out


def _use_claims(rng: random.Random, pod: dict[str, Any], pool: dict[str, list[str]], prefix: str) -> None:
    """1-2 claims of the pod's namespace in ``pool`` as ``persistentVolumeClaim`` volumes."""
    names = pool[pod["metadata"]["namespace"]]
    volumes = pod["spec"].setdefault("volumes", [])
    for claim in rng.sample(names, min(len(names), rng.randint(1, 2))):
        volumes.append({"name": f"{prefix}-{claim}", "persistentVolumeClaim": {"claimName": claim}})


def _claim_objects(
    rng: random.Random, ns: str, name: str, state: str, node_objs: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """One claim in ``state`` and, when it is bound, its PersistentVolume."""
    out: list[dict[str, Any]] = []
    modes = ["ReadWriteOncePod"] if state == "bound-rwop" else ["ReadWriteOnce"]
    meta: dict[str, Any] = {"name": name, "namespace": ns}
    spec: dict[str, Any] = {"accessModes": modes, "resources": {"requests": {"storage": "1Gi"}}}
    status: dict[str, Any] = {"phase": "Pending"}
    if state != "no-class":
        spec["storageClassName"] = rng.choice(("sc-wait", "sc-now")) if state != "immediate" else "sc-now"
    if state in ("bound", "bound-rwop", "pv-missing", "lost", "deleting"):
        pv_name = f"pv-{ns}-{name}"
        spec["volumeName"] = pv_name
        meta["annotations"] = {"pv.kubernetes.io/bind-completed": "yes"}
        status = {"phase": "Lost" if state == "lost" else "Bound"}
        if state == "deleting":
            meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
            meta["finalizers"] = ["kubernetes.io/pvc-protection"]
        if state not in ("pv-missing", "lost"):
            out.append(_bound_pv(rng, pv_name, ns, name, modes, spec.get("storageClassName", ""), node_objs))
    out.append({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec, "status": status})
    return out


def _bound_pv(
    rng: random.Random,
    name: str,
    ns: str,
    claim: str,
    modes: list[str],
    class_name: str,
    node_objs: list[dict[str, Any]],
) -> dict[str, Any]:
    """A CSI PersistentVolume bound to ``ns/claim``: node affinity on a zone or a host (or none), zone
    labels sometimes, the EBS CSI driver half the time (NodeVolumeLimits counts it)."""
    node = rng.choice(node_objs)
    labels = node["metadata"]["labels"]
    spec: dict[str, Any] = {
        "capacity": {"storage": "1Gi"},
        "accessModes": modes,
        "storageClassName": class_name,
        "claimRef": {"namespace": ns, "name": claim},
        "csi": {"driver": rng.choice((EBS_CSI, "csi.example.com")), "volumeHandle": name},
    }
    meta: dict[str, Any] = {"name": name}
    roll = rng.random()
    if roll < 0.4 and ZONE in labels:
        expr = {"key": ZONE, "operator": "In", "values": [labels[ZONE]]}
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [expr]}]}}
    elif roll < 0.7 and HOSTNAME in labels:
        expr = {"key": HOSTNAME, "operator": "In", "values": [labels[HOSTNAME]]}
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [expr]}]}}
    if rng.random() < 0.3 and ZONE in labels:
        meta["labels"] = {ZONE: labels[ZONE]}
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": meta,
        "spec": spec,
        "status": {"phase": "Bound"},
    }


LOCAL_CLASS, CSI_CLASS, CAPACITY_CLASS = "local-wait", "csi-wait", "cap-wait"
CAPACITY_DRIVER = "cap.csi.example.com"
SIZES = ("500Mi", "1Gi", "2Gi", "5Gi")
ACCESS_MODES = (["ReadWriteOnce"], ["ReadWriteOnce"], ["ReadWriteOnce", "ReadWriteMany"], ["ReadWriteOncePod"])


def _waiting_claims(
    rng: random.Random, pods: list[dict[str, Any]], node_objs: list[dict[str, Any]], namespaces: Iterable[str]
) -> list[dict[str, Any]]:
    """Feature "wffc": WaitForFirstConsumer classes, static PVs, CSIStorageCapacities, claims
    waiting for a consumer, and pods using them."""
    zones = sorted({n["metadata"]["labels"][ZONE] for n in node_objs if ZONE in n["metadata"]["labels"]})
    csi_class: dict[str, Any] = {"metadata": {"name": CSI_CLASS}, "provisioner": "csi.example.com"}
    if zones and rng.random() < 0.5:
        allowed = rng.sample(zones, rng.randint(1, len(zones)))
        csi_class["allowedTopologies"] = [{"matchLabelExpressions": [{"key": ZONE, "values": sorted(allowed)}]}]
    out: list[dict[str, Any]] = [
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "volumeBindingMode": "WaitForFirstConsumer"} | c
        for c in (
            {"metadata": {"name": LOCAL_CLASS}, "provisioner": "kubernetes.io/no-provisioner"},
            csi_class,
            {"metadata": {"name": CAPACITY_CLASS}, "provisioner": CAPACITY_DRIVER},
        )
    ]
    out.append(
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSIDriver",
            "metadata": {"name": CAPACITY_DRIVER},
            "spec": {"storageCapacity": rng.random() < 0.8},
        }
    )
    for i, zone in enumerate(z for z in zones if rng.random() < 0.7):
        capacity: dict[str, Any] = {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSIStorageCapacity",
            "metadata": {"name": f"capacity-{i}", "namespace": "default"},
            "storageClassName": CAPACITY_CLASS,
            "nodeTopology": {"matchLabels": {ZONE: zone}},
            "capacity": rng.choice(("0", "1Gi", "2Gi", "10Gi")),
        }
        if rng.random() < 0.3:
            capacity["maximumVolumeSize"] = rng.choice(("1Gi", "3Gi"))
        out.append(capacity)
    pool: dict[str, list[str]] = {}
    claims: list[tuple[str, str]] = []
    for ns in namespaces:
        for i in range(rng.randint(1, 3)):
            pool.setdefault(ns, []).append(f"wait-{i}")
            claims.append((ns, f"wait-{i}"))
    unclaimed = list(claims)
    for i in range(rng.randint(2, 10)):
        out.append(_static_pv(rng, i, node_objs, unclaimed))
    pvs = [o["metadata"]["name"] for o in out if o["kind"] == "PersistentVolume"]
    for ns, name in claims:
        out.append(_waiting_claim(rng, ns, name, node_objs, pvs))
    for pod in pods:
        if pod["spec"].get("nodeName") or pod["metadata"]["name"].startswith("batch-") or rng.random() >= 0.35:
            continue
        _use_claims(rng, pod, pool, "data")
    return out


def _static_pv(
    rng: random.Random, i: int, node_objs: list[dict[str, Any]], claims: list[tuple[str, str]]
) -> dict[str, Any]:
    """A PV an administrator made for a WaitForFirstConsumer class: on a host, a zone or anywhere.

    Each one ``i`` MiB larger than its size class, so no two are the same size: of equal PVs upstream
    binds whichever its PV cache lists first, in Go map order, and with two claims to place that
    order can even decide whether a node fits (docs/differences.md)."""
    name = f"pv-static-{i}"
    labels = rng.choice(node_objs)["metadata"]["labels"]
    size = parse_quantity(rng.choice(SIZES)) // 2**20 + i
    spec: dict[str, Any] = {
        "capacity": {"storage": f"{size}Mi"},
        "accessModes": rng.choice(ACCESS_MODES),
        "storageClassName": rng.choice((LOCAL_CLASS, LOCAL_CLASS, CSI_CLASS)),
        "local": {"path": f"/mnt/{name}"},
    }
    roll = rng.random()
    key = HOSTNAME if roll < 0.55 else ZONE if roll < 0.9 else None
    if key is not None and key in labels:
        expr = {"key": key, "operator": "In", "values": [labels[key]]}
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [expr]}]}}
    else:
        del spec["local"]  # a local PV needs node affinity; this one is a CSI volume
        spec["csi"] = {"driver": "csi.example.com", "volumeHandle": name}
    if rng.random() < 0.1:
        spec["volumeMode"] = "Block"
    phase = "Available"
    roll = rng.random()
    if roll < 0.1:
        phase = "Released"
        spec["claimRef"] = {"namespace": "default", "name": "gone", "uid": "uid-gone"}
    elif roll < 0.2:
        phase = "Bound"
        spec["claimRef"] = {"namespace": "default", "name": "elsewhere", "uid": "uid-elsewhere"}
    elif roll < 0.3 and claims:
        # Pre-bound by an administrator, one PV per claim at most: of two PVs pre-bound to one claim
        # upstream takes whichever its PV cache lists first, in map order (docs/differences.md).
        ns, claim = claims.pop(rng.randrange(len(claims)))
        spec["claimRef"] = {"namespace": ns, "name": claim}
    meta: dict[str, Any] = {"name": name, "labels": {"tier": rng.choice(("a", "b"))}}
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": meta, "spec": spec, "status": {"phase": phase}}


def _waiting_claim(
    rng: random.Random, ns: str, name: str, node_objs: list[dict[str, Any]], pvs: list[str]
) -> dict[str, Any]:
    """A claim of a WaitForFirstConsumer class no pod has used yet (its UID set, as the API server
    would, so the PV bound to it names it)."""
    meta: dict[str, Any] = {"name": name, "namespace": ns, "uid": f"uid-{ns}-{name}"}
    spec: dict[str, Any] = {
        "accessModes": rng.choice(ACCESS_MODES),
        "resources": {"requests": {"storage": rng.choice(SIZES[:3])}},
        "storageClassName": rng.choice((LOCAL_CLASS, LOCAL_CLASS, CSI_CLASS, CSI_CLASS, CAPACITY_CLASS)),
    }
    roll = rng.random()
    if roll < 0.15:
        spec["selector"] = {"matchLabels": {"tier": rng.choice(("a", "b"))}}
    elif roll < 0.22:
        spec["volumeMode"] = "Block"
    elif roll < 0.27:
        meta["annotations"] = {"volume.kubernetes.io/selected-node": rng.choice(node_objs)["metadata"]["name"]}
    elif roll < 0.32 and pvs:
        spec["volumeName"] = rng.choice(pvs)  # pre-bound to a PV, the PV controller not done yet
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": meta,
        "spec": spec,
        "status": {"phase": "Pending"},
    }


def _batch(rng: random.Random, ns: str, app: str, node_names: list[str], first: int) -> list[dict[str, Any]]:
    """4-10 identical replicas (no constraints, preferred node affinity, half with a hostPort): each
    finds the node the one before it took fuller, until that node stops fitting (pods limit, port)."""
    spec: dict[str, Any] = {
        "schedulerName": "spread-scheduler",
        "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": rng.choice(CPUS[1:6])}}}],
        "affinity": {
            "nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": rng.randint(1, 100), "preference": _term(rng, node_names, 0.15)}
                ]
            }
        },
    }
    if rng.random() < 0.5:
        port = rng.choice(PORTS)
        spec["containers"][0]["ports"] = [{"containerPort": port, "hostPort": port, "protocol": "TCP"}]
    if rng.random() < 0.5:
        spec["tolerations"] = [{"key": "spot", "operator": "Exists", "effect": "PreferNoSchedule"}]
    out = []
    for j in range(rng.randint(4, 10)):
        meta = {
            "name": f"batch-{j}",
            "namespace": ns,
            "labels": {"app": app, "batch": "1"},
            "creationTimestamp": f"2026-01-01T00:00:{min(first + j, 59):02d}Z",
        }
        out.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": meta,
                "spec": json.loads(json.dumps(spec)),
                "status": {"phase": "Pending"},
            }
        )
    return out


def _nominees(
    rng: random.Random, node_objs: list[dict[str, Any]], owners: list[tuple[str, str, str]]
) -> list[dict[str, Any]]:
    """Feature "nominatednodes": pods nominated to one node that they fill, and pods that may want it.

    A nominee counts in a contender's Filter on that node when its priority is at least the
    contender's; the contender then fits only if it also fits with the nominee there.
    """
    node = rng.choice(node_objs)
    name = node["metadata"]["name"]
    port = rng.choice(PORTS)
    out = []

    def pod(kind: str, i: int, container: dict[str, Any]) -> dict[str, Any]:
        ns, _, app = rng.choice(owners)
        labels = {"app": app} if rng.random() < 0.7 else {}
        meta = {
            "name": f"{kind}-{i}",
            "namespace": ns,
            "labels": labels,
            "creationTimestamp": f"2026-01-01T00:00:{rng.randint(0, 59):02d}Z",
        }
        spec: dict[str, Any] = {"schedulerName": "spread-scheduler", "containers": [container]}
        if rng.random() < 0.7:
            _set_priority(spec, rng.choice(PRIORITIES))
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": {"phase": "Pending"}}

    for i in range(rng.randint(1, 2)):
        container: dict[str, Any] = {"name": "c", "image": "x"}
        roll = rng.random()
        if roll < 0.5:
            container["resources"] = {"requests": {"cpu": node["status"]["allocatable"]["cpu"]}}
        elif roll < 0.75:
            container["resources"] = {"requests": {"cpu": "64"}}  # fits nowhere: stays pending, nominated
        else:
            container["ports"] = [{"containerPort": port, "hostPort": port, "protocol": "TCP"}]
        nominee = pod("nominee", i, container)
        nominee["status"]["nominatedNodeName"] = name
        if rng.random() < 0.1:
            nominee["spec"]["schedulingGates"] = [{"name": "example.com/gate"}]
        elif rng.random() < 0.1:
            nominee["metadata"]["deletionTimestamp"] = "2026-01-01T00:02:00Z"
        out.append(nominee)
    for j in range(rng.randint(1, 3)):
        container = {"name": "c", "image": "x", "resources": {"requests": {"cpu": rng.choice(("100m", "500m", "1"))}}}
        if rng.random() < 0.3:
            container["ports"] = [{"containerPort": port, "hostPort": port, "protocol": "TCP"}]
        contender = pod("contender", j, container)
        if rng.random() < 0.5:
            term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [name]}]}
            contender["spec"]["affinity"] = {
                "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
            }
        if rng.random() < 0.3 and (constraints := _constraints(rng)):
            contender["spec"]["topologySpreadConstraints"] = constraints
        out.append(contender)
    return out


# -- DefaultPreemption's inputs (feature "preemption") --------------------------------------------

FILLER_PRIORITIES = (0, 10, 100)
PREEMPTOR_PRIORITIES = (10, 100, 1000, 1000)


def _start_time(rng: random.Random) -> str:
    """A kubelet's status.startTime (second precision, like every API timestamp), before any pod's creation here."""
    return f"2025-12-31T23:{rng.randint(0, 59):02d}:{rng.choice((0, 0, 30, rng.randint(0, 59))):02d}Z"


def _preemption_args(rng: random.Random) -> dict[str, Any]:
    """DefaultPreemptionArgs asking for fewer candidates than there are nodes, so the offset matters."""
    percentage, absolute = rng.choice(((0, 1), (0, 2), (10, 1), (20, 0), (5, 3), (100, 0)))
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "DefaultPreemptionArgs",
        "minCandidateNodesPercentage": percentage,
        "minCandidateNodesAbsolute": absolute,
    }


def _pdb(rng: random.Random, ns: str, i: int, pods: list[dict[str, Any]]) -> dict[str, Any]:
    """A policy/v1 PodDisruptionBudget with the status the disruption controller would write: the
    matching pods (running, not being deleted: healthy), minAvailable or maxUnavailable (an integer or
    a percentage), ``disruptionsAllowed = max(0, healthy - desired)``, now and then a pod in
    ``disruptedPods`` (evicted, not yet gone)."""
    selector = rng.choice(
        (
            {"matchLabels": {"app": rng.choice(("a", "b"))}},
            {"matchLabels": {"tier": rng.choice(("a", "b"))}},
            {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}]},
            {"matchLabels": {"app": rng.choice(("a", "b")), "tier": "a"}},
        )
    )
    matching = [
        p for p in pods if p["metadata"]["namespace"] == ns and _selects(selector, p["metadata"].get("labels", {}))
    ]
    healthy = [
        p for p in matching if p["status"].get("phase") == "Running" and "deletionTimestamp" not in p["metadata"]
    ]
    expected = len(matching)
    spec: dict[str, Any] = {"selector": selector}
    roll = rng.random()
    if roll < 0.4:
        spec["minAvailable"] = rng.randint(0, max(expected, 1))
        desired = spec["minAvailable"]
    elif roll < 0.6:
        percent = rng.choice((0, 50, 100))
        spec["minAvailable"] = f"{percent}%"
        desired = -(-expected * percent // 100)
    elif roll < 0.85:
        spec["maxUnavailable"] = rng.randint(0, 2)
        desired = max(expected - spec["maxUnavailable"], 0)
    else:
        percent = rng.choice((0, 50))
        spec["maxUnavailable"] = f"{percent}%"
        desired = expected - (-(-expected * percent // 100))
    status: dict[str, Any] = {
        "observedGeneration": 1,
        "disruptionsAllowed": max(len(healthy) - desired, 0),
        "currentHealthy": len(healthy),
        "desiredHealthy": desired,
        "expectedPods": expected,
    }
    if healthy and rng.random() < 0.15:
        status["disruptedPods"] = {rng.choice(healthy)["metadata"]["name"]: "2026-01-01T00:00:00Z"}
    meta = {"name": f"pdb-{i}", "namespace": ns}
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": meta, "spec": spec, "status": status}


def _selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    """matchLabels and In expressions, the only forms ``_pdb`` writes."""
    if any(labels.get(k) != v for k, v in selector.get("matchLabels", {}).items()):
        return False
    return all(labels.get(e["key"]) in e["values"] for e in selector.get("matchExpressions", []))


def _fill(
    rng: random.Random, node_objs: list[dict[str, Any]], owners: list[tuple[str, str, str]]
) -> list[dict[str, Any]]:
    """Low-priority pods that take each chosen node's whole cpu (1-4 of them, most started, a few
    preempted earlier and terminating), then 1-5 higher-priority pods that arrive after them and fit
    only where some leave: the shape DefaultPreemption acts on."""
    chosen = rng.sample(node_objs, rng.randint(1, min(len(node_objs), 8)))
    out = []
    for node in chosen:
        cpu = milli_value(parse_quantity(node["status"]["allocatable"]["cpu"]))
        count = rng.randint(1, 4)
        cuts = sorted(rng.sample(range(1, cpu), count - 1)) if cpu > count else []
        shares = [b - a for a, b in zip([0, *cuts], [*cuts, cpu], strict=True)]
        for share in shares:
            ns, kind, app = rng.choice(owners)
            labels = {"app": app, "tier": rng.choice(("a", "b"))}
            meta: dict[str, Any] = {"name": f"filler-{len(out)}", "namespace": ns, "labels": labels}
            if rng.random() < 0.5:
                meta["ownerReferences"] = _owned_by(kind, ns, app)
            container = {"name": "c", "image": "x", "resources": {"requests": {"cpu": f"{share}m"}}}
            spec: dict[str, Any] = {"nodeName": node["metadata"]["name"], "containers": [container]}
            if rng.random() < 0.8:
                _set_priority(spec, rng.choice(FILLER_PRIORITIES))
            status: dict[str, Any] = {"phase": "Running"}
            if rng.random() < 0.85:
                status["startTime"] = _start_time(rng)
            else:
                status["phase"] = rng.choice(("Running", "Pending"))
            if rng.random() < 0.05:
                meta["deletionTimestamp"] = "2026-01-01T00:00:30Z"
                status["conditions"] = [
                    {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}
                ]
            out.append({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status})
    for i in range(rng.randint(1, 5)):
        ns, _, app = rng.choice(owners)
        node = rng.choice(chosen)
        cpu = milli_value(parse_quantity(node["status"]["allocatable"]["cpu"]))
        request = max(cpu * rng.choice((1, 2, 3, 4)) // 4, 1)
        container = {"name": "c", "image": "x", "resources": {"requests": {"cpu": f"{request}m"}}}
        meta = {
            "name": f"preemptor-{i}",
            "namespace": ns,
            "labels": {"app": app},
            "creationTimestamp": f"2026-01-01T00:01:{i:02d}Z",  # after every other pending pod
        }
        spec = {"schedulerName": "spread-scheduler", "containers": [container]}
        _set_priority(spec, rng.choice(PREEMPTOR_PRIORITIES), never=rng.random() < 0.1)
        if rng.random() < 0.3:
            term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node["metadata"]["name"]]}]}
            spec["affinity"] = {
                "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
            }
        if rng.random() < 0.5:
            spec["tolerations"] = [{"operator": "Exists"}]  # taints do not hide the filled nodes
        status = {"phase": "Pending"}
        if rng.random() < 0.1:
            status["nominatedNodeName"] = node["metadata"]["name"]  # an earlier preemption's
        out.append({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status})
    return out


def preemption_inputs(
    rng: random.Random,
    pods: list[dict[str, Any]],
    node_objs: list[dict[str, Any]],
    owners: list[tuple[str, str, str]],
    *,
    full: bool | None = None,
) -> list[dict[str, Any]]:
    """Feature "preemption": priorities on existing pods (40%, by class), status.startTime on running
    ones (90%), ``preemptionPolicy`` on pending pods with a priority (Never 15%, through its class;
    PreemptLowerPriority spelled out 10%), filled nodes and late preemptors (25% of clusters, or as
    ``full`` says; appended to ``pods``) and 0-2 PDBs per namespace (returned)."""
    for pod in pods:
        spec, status = pod["spec"], pod["status"]
        if spec.get("nodeName"):
            if rng.random() < 0.4:
                _set_priority(spec, rng.choice(FILLER_PRIORITIES))
            if status.get("phase") == "Running" and rng.random() < 0.9:
                status["startTime"] = _start_time(rng)
        elif "priorityClassName" in spec:
            roll = rng.random()
            if roll < 0.15:
                _set_priority(spec, spec["priority"], never=True)
            elif roll < 0.25:
                spec["preemptionPolicy"] = "PreemptLowerPriority"
    if full if full is not None else rng.random() < 0.25:
        pods += _fill(rng, node_objs, owners)
    namespaces = sorted({ns for ns, _, _ in owners})
    return [_pdb(rng, ns, i, pods) for ns in namespaces for i in range(rng.choice((0, 1, 1, 2)))]


def crowded(seed: int, kube_version: str = DEFAULT_KUBE_FEATURES.minor) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """``scenario(seed)`` with filled nodes and late higher-priority pods always: preemption-heavy."""
    return scenario(seed, full=True, kube_version=kube_version)


def replicated(
    seed: int, kube_version: str = DEFAULT_KUBE_FEATURES.minor
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """``scenario(seed)`` plus 3-12 replicas of one of its pending pods (a Deployment's pods share a
    signature, so this is where results reused across pods would show a difference)."""
    objects, config = scenario(seed, kube_version=kube_version)
    rng = random.Random(seed ^ 0x5EED)
    pending = [o for o in objects if o["kind"] == "Pod" and o["metadata"]["name"].startswith("pending-")]
    template = rng.choice(pending)
    for j in range(rng.randint(3, 12)):
        copy = json.loads(json.dumps(template))
        copy["metadata"]["name"] = f"replica-{j}"
        copy["metadata"]["creationTimestamp"] = f"2026-01-01T00:01:{j:02d}Z"  # after every pending-* pod
        if "uid" in copy["metadata"]:  # feature "dra" names its pods' UIDs: each replica its own
            copy["metadata"]["uid"] += f"-replica-{j}"
        objects.append(copy)
    return objects, config


# -- node and pod changes of 1.36/1.37 (features "declaredfeatures", "imagevolumes", "resized") ----

# Names a kubelet of 1.36/1.37 may declare (component-helpers' registry) and one it never would.
DECLARED_FEATURES = (
    "ExtendWebSocketsToKubelet",
    "InPlacePodLevelResourcesVerticalScaling",
    "InPlacePodVerticalScalingInitContainers",
    "RestartAllContainersOnContainerExits",
    "UserNamespacesHostNetworkSupport",
    "Vendor/example",
)
RESTART_ALL = "RestartAllContainersOnContainerExits"


def has_declared_features(minor: str) -> bool:
    """``node.status.declaredFeatures`` and the RestartAllContainers action exist (API types,
    validation with the gate on) from 1.36: at 1.35 the API server drops or refuses them."""
    return SUPPORTED.index(minor) >= SUPPORTED.index("1.36")


def _declared_features(rng: random.Random, node_objs: list[dict[str, Any]]) -> None:
    """Feature "declaredfeatures": a third of the nodes declare nothing, a fifth every feature, the
    rest a part (with RestartAllContainersOnContainerExits half the time); sorted and unique, as
    validation wants them."""
    for node in node_objs:
        roll = rng.random()
        if roll < 0.35:
            continue
        if roll < 0.55:
            names = list(DECLARED_FEATURES)
        else:
            names = [n for n in DECLARED_FEATURES if n != RESTART_ALL and rng.random() < 0.4]
            if rng.random() < 0.5:
                names.append(RESTART_ALL)
        if names:
            node["status"]["declaredFeatures"] = sorted(names)


def _restart_rules(rng: random.Random, spec: dict[str, Any]) -> None:
    """Feature "declaredfeatures": a container (or a regular init container) restarts them all on
    some exit codes, which needs the node feature; now and then the plain Restart action, which
    needs nothing."""
    kinds = ["containers", "containers"] + (["initContainers"] if spec.get("initContainers") else [])
    containers = spec[rng.choice(kinds)]
    container = rng.choice(containers)
    if container.get("restartPolicy") == "Always":
        return  # a sidecar: rules need the RestartAllContainers action's own validation path
    action = "RestartAllContainers" if rng.random() < 0.85 else "Restart"
    container["restartPolicy"] = rng.choice(("Never", "OnFailure"))  # Always would make an init container a sidecar
    exit_codes = {"operator": rng.choice(("In", "NotIn")), "values": sorted(rng.sample((1, 2, 42, 137), 2))}
    container["restartPolicyRules"] = [{"action": action, "exitCodes": exit_codes}]


IMAGE_VOLUME_REFERENCES = (*(image for image, _, _ in IMAGES), "registry.example/absent:1")


def _image_volumes(rng: random.Random, spec: dict[str, Any]) -> None:
    """Feature "imagevolumes": 1-2 OCI image volumes (ImageVolume is on in every minor we decide
    as), of images some nodes hold or none does; ImageLocality counts them from 1.36."""
    volumes = spec.setdefault("volumes", [])
    for i, reference in enumerate(rng.sample(IMAGE_VOLUME_REFERENCES, rng.randint(1, 2))):
        image: dict[str, Any] = {"reference": reference}
        if rng.random() < 0.5:
            image["pullPolicy"] = rng.choice(("IfNotPresent", "Always", "Never"))
        volumes.append({"name": f"image-{i}", "image": image})


def _replica_image_volumes(rng: random.Random, replicas: list[dict[str, Any]]) -> None:
    """Feature "imagevolumes" on batch replicas: the same image volumes on every one, or each its
    own (some none). Upstream's batching signature leaves image volumes out (ImageLocality signs
    container images only), so replicas that differ only there still share a signature, while from
    1.36 their ImageLocality scores differ."""
    if rng.random() < 0.5:
        spec: dict[str, Any] = {}
        _image_volumes(rng, spec)
        for replica in replicas:
            replica["spec"]["volumes"] = json.loads(json.dumps(spec["volumes"]))
        return
    for replica in replicas:
        if rng.random() < 0.7:
            _image_volumes(rng, replica["spec"])


def _scaled(rng: random.Random, requests: dict[str, str]) -> dict[str, str]:
    """Requests a resize moved: each kept, replaced by another size, or dropped; sometimes one more."""
    out = {}
    for name, quantity in requests.items():
        if name not in ("cpu", "memory"):
            out[name] = quantity
            continue
        roll = rng.random()
        if roll < 0.3:
            out[name] = quantity
        elif roll < 0.9:
            out[name] = rng.choice(CPUS if name == "cpu" else MEMORIES)
    if rng.random() < 0.2:
        name = rng.choice(("cpu", "memory"))
        out.setdefault(name, rng.choice(CPUS if name == "cpu" else MEMORIES))
    return out


def _container_status(rng: random.Random, container: dict[str, Any]) -> dict[str, Any]:
    """What the kubelet reports of a resized container: ``allocatedResources`` and/or the runtime's
    ``resources`` (limits only now and then, so its requests are missing)."""
    requests = dict(container.get("resources", {}).get("requests", {}))
    status: dict[str, Any] = {"name": container["name"], "image": container["image"], "imageID": "", "ready": True}
    status["restartCount"] = 0
    if rng.random() < 0.7:
        status["allocatedResources"] = _scaled(rng, requests)
    roll = rng.random()
    if roll < 0.6:
        status["resources"] = {"requests": _scaled(rng, requests)}
    elif roll < 0.75:
        status["resources"] = {"limits": {"cpu": "16", "memory": "32Gi"}}
    return status


def _resized(rng: random.Random, pod: dict[str, Any]) -> None:
    """Feature "resized": an assigned pod resized in place, as the kubelet reports it: container
    statuses (sidecars and init containers too), pod-level ``status.resources`` and
    ``allocatedResources`` (with or without pod-level requests in the spec), a PodResizePending
    (Deferred or Infeasible) and/or PodResizeInProgress condition. The spec, status and allocated
    sizes differ up and down, so which of them counts (per container or summed, by minor) matters."""
    spec, status = pod["spec"], pod["status"]
    for key, status_key in (("containers", "containerStatuses"), ("initContainers", "initContainerStatuses")):
        statuses = [_container_status(rng, c) for c in spec.get(key, []) if rng.random() < 0.85]
        if statuses:
            status[status_key] = statuses
    pod_level = dict(spec.get("resources", {}).get("requests", {}))
    if pod_level or rng.random() < 0.4:
        pod_level = pod_level or {"cpu": rng.choice(CPUS), "memory": rng.choice(MEMORIES)}
        if rng.random() < 0.6:
            status["allocatedResources"] = _scaled(rng, pod_level)
        if rng.random() < 0.6:
            status["resources"] = {"requests": _scaled(rng, pod_level)}
    conditions = []
    roll = rng.random()
    if roll < 0.2:
        conditions.append({"type": "PodResizePending", "status": "True", "reason": "Infeasible", "message": "x"})
    elif roll < 0.35:
        conditions.append({"type": "PodResizePending", "status": "True", "reason": "Deferred", "message": "x"})
    if rng.random() < 0.25:
        conditions.append({"type": "PodResizeInProgress", "status": "True"})
    if conditions:
        status["conditions"] = conditions


def node_pod_changes(
    seed: int, features: frozenset[str], minor: str, node_objs: list[dict[str, Any]], pods: list[dict[str, Any]]
) -> None:
    """Features "declaredfeatures", "imagevolumes" and "resized" (issue #47), each drawn per cluster
    from its own stream: 60% of clusters. Pending pods need a declared feature (35%) and use image
    volumes (35%, existing pods too; batch replicas half the time, alike or not); assigned pods are
    resized (40%)."""
    streams = {name: random.Random(seed * 1_000_003 + DRAWN_FEATURES[name][0]) for name in NODE_POD_FEATURES}
    on = {name for name, rng in streams.items() if name in features and rng.random() < DRAWN_FEATURES[name][1]}
    if "declaredfeatures" in on and not has_declared_features(minor):
        on.discard("declaredfeatures")
    if "declaredfeatures" in on:
        _declared_features(streams["declaredfeatures"], node_objs)
    for pod in pods:
        name, spec = pod["metadata"]["name"], pod["spec"]
        if name.startswith("batch-"):
            continue
        assigned = bool(spec.get("nodeName"))
        if "declaredfeatures" in on and not assigned and streams["declaredfeatures"].random() < 0.35:
            _restart_rules(streams["declaredfeatures"], spec)
        if "imagevolumes" in on and streams["imagevolumes"].random() < 0.35:
            _image_volumes(streams["imagevolumes"], spec)
        if "resized" in on and assigned and streams["resized"].random() < 0.4:
            _resized(streams["resized"], pod)
    replicas = [pod for pod in pods if pod["metadata"]["name"].startswith("batch-")]
    if "imagevolumes" in on and replicas and streams["imagevolumes"].random() < 0.5:
        _replica_image_volumes(streams["imagevolumes"], replicas)


# Features drawn per cluster, each from its own stream's first roll: (stream offset, share of clusters).
DRAWN_FEATURES = {
    "disks": (3, 0.3),
    "claims": (4, 0.3),
    "wffc": (5, 0.3),
    "draextended": (6, 0.35),
    "dra": (7, 0.3),
    # Issue #47's node and pod changes (``node_pod_changes``).
    "declaredfeatures": (11, 0.6),
    "imagevolumes": (12, 0.6),
    "resized": (13, 0.6),
}


# Drawn features ``scenario`` can force on (``always``): each one's draw decides nothing else.
ALWAYS_FEATURES = frozenset({"dra", "draextended"})


def drawn(seed: int, feature: str) -> bool:
    """Whether ``scenario(seed)`` has ``feature`` (one of ``DRAWN_FEATURES``), without building it."""
    offset, share = DRAWN_FEATURES[feature]
    return random.Random(seed * 1_000_003 + offset).random() < share


def scenario(
    seed: int,
    features: frozenset[str] = DEFAULT_FEATURES,
    *,
    full: bool | None = None,
    kube_version: str = DEFAULT_KUBE_FEATURES.minor,
    always: frozenset[str] = frozenset(),
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Objects (namespaces, classes, nodes, workloads, services, existing and pending pods) and the
    config, from one seed; ``features`` adds fields of plugins that are optional (``FEATURES``);
    ``full`` forces (or forbids) the filled nodes and late preemptors of feature "preemption";
    ``kube_version``: the minor the cluster is decided as (its API server accepts what that minor's does);
    ``always``: drawn features (of ``ALWAYS_FEATURES``) each cluster has whatever its draw, for a
    campaign on one feature (the draw is still made, so the rest of the cluster is the seed's own)."""
    unknown = set(features) - FEATURES
    if unknown:
        raise ValueError(f"unknown generator features {sorted(unknown)}; known: {sorted(FEATURES)}")
    if not always <= ALWAYS_FEATURES:
        raise ValueError(f"features that cannot be forced: {sorted(always - ALWAYS_FEATURES)}")
    if kube_version not in SUPPORTED:
        raise ValueError(f"unknown Kubernetes minor {kube_version!r}; known: {', '.join(SUPPORTED)}")
    rng = random.Random(seed)
    frng = random.Random(seed * 1_000_003 + 1)  # the optional features' own stream
    prng = random.Random(seed * 1_000_003 + 2)  # feature "preemption"'s own stream
    # Features "disks", "claims" and "wffc": each its own stream, whose first roll draws it (``drawn``).
    drng, crng, wrng = (random.Random(seed * 1_000_003 + DRAWN_FEATURES[f][0]) for f in ("disks", "claims", "wffc"))
    disks = "disks" in features and drng.random() < DRAWN_FEATURES["disks"][1]
    claims = "claims" in features and crng.random() < DRAWN_FEATURES["claims"][1]
    wffc = "wffc" in features and wrng.random() < DRAWN_FEATURES["wffc"][1]
    ipa = "interpodaffinity" in features
    many_nodes = rng.random() < 0.03
    batch = rng.random() < 0.08
    node_objs = nodes(rng, rng.randint(101, 160) if many_nodes else rng.randint(1, 60), features, frng)
    names = [n["metadata"]["name"] for n in node_objs]
    if batch:
        for node in rng.sample(node_objs, max(1, len(node_objs) // 4)):
            node["spec"]["taints"] = [t for t in node["spec"].get("taints", []) if t["key"] != "spot"]
            node["spec"]["taints"].append({"key": "spot", "effect": "PreferNoSchedule"})
    namespaces = NAMESPACES[: rng.randint(1, 3)]
    objects: list[dict[str, Any]] = [_namespace(rng, ns) for ns in namespaces]
    objects += node_objs
    owners: list[tuple[str, str, str]] = []
    for ns in namespaces:
        app = rng.choice(("a", "b"))
        kind = rng.choice(OWNER_KINDS)
        objects.append(_owner(rng, kind, ns, app))
        objects += _services(rng, ns, app)
        owners.append((ns, kind, app))
    pods: list[dict[str, Any]] = []
    for i in range(rng.randint(0, len(names) if many_nodes else 3 * len(names))):
        ns, kind, app = rng.choice(owners)
        labels = _labels(rng) | ({"app": app} if rng.random() < 0.7 else {})
        meta: dict[str, Any] = {"name": f"existing-{i}", "namespace": ns, "labels": labels}
        if rng.random() < 0.5:
            meta["ownerReferences"] = _owned_by(kind, ns, app)
        if rng.random() < 0.08:
            meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        spec = {"nodeName": rng.choice(names), **pod_spec(rng)}
        if ipa and frng.random() < 0.1:
            spec["affinity"] = pod_affinity(frng, labels, namespaces)
        pods.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": meta,
                "spec": spec,
                "status": {"phase": rng.choice(("Running", "Running", "Pending", "Succeeded", "Failed"))},
            }
        )
    for i in range(rng.randint(1, 6)):
        ns, kind, app = rng.choice(owners)
        labels = _labels(rng) | ({"app": app} if rng.random() < 0.8 else {})
        meta = {
            "name": f"pending-{i}",
            "namespace": ns,
            "labels": labels,
            "creationTimestamp": f"2026-01-01T00:00:{rng.randint(0, 59):02d}Z",
        }
        if rng.random() < 0.5:
            meta["ownerReferences"] = _owned_by(kind, ns, app)
        # Each roll is drawn whether its feature is on or not, so a feature leaves the rest as it was.
        if rng.random() < 0.03 and "terminatingpods" in features:
            meta["deletionTimestamp"] = "2026-01-01T00:02:00Z"
        spec = {"schedulerName": "spread-scheduler", **pod_spec(rng)}
        status: dict[str, Any] = {"phase": "Pending"}
        if rng.random() < 0.3:
            _set_priority(spec, rng.choice(PRIORITIES))
        if rng.random() < 0.04 and "schedulinggates" in features:
            spec["schedulingGates"] = [{"name": "example.com/gate"}]
        if rng.random() < 0.05:
            # A node that does not exist is ignored by upstream (it falls back to every node).
            nominated = rng.choice(names) if rng.random() < 0.9 else "gone"
            status["nominatedNodeName"] = nominated if "nominatednodes" in features else "gone"
        if rng.random() < 0.25:
            spec["nodeSelector"] = _labels(rng, 1) or {"disk": "ssd"}
        affinity: dict[str, Any] = {}
        if rng.random() < 0.35:
            affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {
                "nodeSelectorTerms": [_term(rng, names, 0.2) for _ in range(rng.randint(1, 3))]
            }
        if rng.random() < 0.35:
            affinity["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": rng.randint(1, 100), "preference": _term(rng, names, 0.15)} for _ in range(rng.randint(1, 3))
            ]
        if affinity:
            spec["affinity"] = {"nodeAffinity": affinity}
        if ipa and frng.random() < 0.4:
            spec.setdefault("affinity", {}).update(pod_affinity(frng, labels, namespaces))
        if rng.random() < 0.5:
            spec["tolerations"] = [_toleration(rng) for _ in range(rng.randint(1, 3))]
        constraints = _constraints(rng)
        if constraints:
            spec["topologySpreadConstraints"] = constraints
        pods.append({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status})
    if "nominatednodes" in features and frng.random() < 0.3:
        pods += _nominees(frng, node_objs, owners)
    if batch:
        ns, _, app = rng.choice(owners)
        pods += _batch(rng, ns, app, names, rng.randint(0, 50))
    for pod in pods:
        if pod["metadata"]["name"].startswith("batch-"):
            continue  # the replicas stay identical
        if "balancedallocation" in features and frng.random() < 0.3:
            _lopsided(frng, pod["spec"])
        if "imagelocality" in features and frng.random() < 0.6:
            _use_images(frng, pod["spec"])
        if disks and drng.random() < 0.4:
            _use_disks(drng, pod["spec"])
    node_pod_changes(seed, features, kube_version, node_objs, pods)
    if disks:
        objects += _csi_objects(drng, names)
    if claims:
        objects += _claims(crng, pods, node_objs, namespaces)
    if wffc:
        objects += _waiting_claims(wrng, pods, node_objs, namespaces)
    if "preemption" in features:
        objects += preemption_inputs(prng, pods, node_objs, owners, full=full)
    if _dra_extended(seed, features, kube_version, always):
        objects += dra_extended_inputs(
            random.Random(seed * 1_000_003 + DRAWN_FEATURES["draextended"][0]), pods, node_objs
        )
        for pod in pods:
            # As the API server gives every pod: the claim PreBind creates for a pod's extended
            # resources is its pod's by UID (an earlier cycle's is found so), and two pods without
            # one would share it.
            meta = pod["metadata"]
            meta.setdefault("uid", f"uid-{meta['namespace']}-{meta['name']}")
    if _dra(seed, features, always):
        dra = dra_inputs(random.Random(seed * 1_000_003 + DRAWN_FEATURES["dra"][0]), kube_version, pods, node_objs)
        objects += dra
        namespace_objs = [o for o in objects if o["kind"] == "Namespace"]
        objects += dra_extras(
            random.Random(seed * 1_000_003 + DRA_EXTRAS_STREAM), kube_version, dra, pods, namespace_objs
        )
    objects += _classes(pods)
    overheads = sorted({tuple(p["spec"]["overhead"].values()) for p in pods if "overhead" in p["spec"]})
    objects += [_runtime_class(cpu, memory) for cpu, memory in overheads]
    objects += pods
    out = config(rng, batch=batch, many_nodes=many_nodes, sampling="nodesampling" in features)
    if "preemption" in features and prng.random() < 0.2:
        out["profiles"][0].setdefault("pluginConfig", []).append(
            {"name": "DefaultPreemption", "args": _preemption_args(prng)}
        )
    if "balancedallocation" in features and frng.random() < 0.25:
        out["profiles"][0].setdefault("pluginConfig", []).append(
            {"name": "NodeResourcesBalancedAllocation", "args": _balanced_allocation_args(frng)}
        )
    return objects, out


def _balanced_allocation_args(rng: random.Random) -> dict[str, Any]:
    """Feature "balancedallocation": its resources, sometimes with the extended GPU as a third (weights are 1)."""
    resources = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
    if rng.random() < 0.6:
        resources.append({"name": GPU, "weight": 1})
    rng.shuffle(resources)
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "NodeResourcesBalancedAllocationArgs",
        "resources": resources,
    }


# -- feature "draextended": DeviceClasses backing extended resources (DRAExtendedResource) ----------

FPGA = "example.com/fpga"
DEVICE_CLASS_PREFIX = "deviceclass.resource.kubernetes.io/"
DEVICE_CLASSES = ("gpu.example.com", "fpga.example.com", "nic")


def _dra_extended(seed: int, features: frozenset[str], kube_version: str, always: frozenset[str] = frozenset()) -> bool:
    """Whether the cluster has feature "draextended": drawn, and decided as a minor whose API server
    keeps ``spec.extendedResourceName`` (it drops the field while DRAExtendedResource is off, 1.35)."""
    return (
        "draextended" in features
        and features_at(kube_version).enable_dra_extended_resource
        and (drawn(seed, "draextended") or "draextended" in always)
    )


def _device_class(rng: random.Random, name: str) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    roll = rng.random()
    if roll < 0.45:
        spec["extendedResourceName"] = GPU
    elif roll < 0.75:
        spec["extendedResourceName"] = FPGA
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        # Distinct ages: of two classes backing one name the newest wins (both sides' caches).
        "metadata": {
            "name": name,
            "creationTimestamp": f"2026-01-01T00:0{rng.randint(0, 9)}:{rng.randint(0, 59):02d}Z",
        },
        "spec": spec,
    }


def _ask_for(spec: dict[str, Any], resource: str, quantity: str) -> None:
    """``resource`` on the pod's first container, limit equal to request (an extended resource is
    not overcommitted)."""
    resources = spec["containers"][0].setdefault("resources", {})
    resources.setdefault("limits", {})[resource] = quantity
    if "requests" in resources:
        resources["requests"][resource] = quantity  # else the API server copies the limit


def dra_extended_inputs(
    rng: random.Random, pods: list[dict[str, Any]], node_objs: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Feature "draextended": the DeviceClasses, an FPGA device plugin on some nodes, pods asking for
    the classes' resources (see the module docstring)."""
    rng.random()  # the draw (``drawn``) is this stream's first roll
    classes = [_device_class(rng, name) for name in rng.sample(DEVICE_CLASSES, rng.randint(1, 3))]
    for node in node_objs:
        if rng.random() < 0.3:
            node["status"]["allocatable"][FPGA] = str(rng.randint(0, 2))
    names = [GPU, FPGA, *(DEVICE_CLASS_PREFIX + c["metadata"]["name"] for c in classes), DEVICE_CLASS_PREFIX + "gone"]
    for pod in pods:
        if pod["metadata"]["name"].startswith("batch-") or rng.random() >= 0.4:
            continue  # the replicas stay identical
        _ask_for(pod["spec"], rng.choice(names), str(rng.randint(1, 2)))
    return classes


# -- feature "dra": DynamicResources with slices, classes, claims and templates (issue #49) ---------

DRA_GPU = "gpu.example.com"
DRA_NIC = "nic.example.com"
GPU_MODELS = ("a100", "h100", "l4")
GPU_MEMORIES = ("8Gi", "16Gi", "40Gi")
# (name, driver, CEL selector or None): classes with and without selectors on driver, attributes, capacity.
DRA_CLASSES = (
    ("dra-gpu", DRA_GPU, f'device.driver == "{DRA_GPU}"'),
    ("dra-any", DRA_GPU, None),
    ("dra-big", DRA_GPU, f'device.capacity["{DRA_GPU}"].memory.compareTo(quantity("16Gi")) >= 0'),
    ("dra-h100", DRA_GPU, f'device.attributes["{DRA_GPU}"].model == "h100"'),
    ("dra-nic", DRA_NIC, f'device.driver == "{DRA_NIC}" && device.attributes["{DRA_NIC}"].speed >= 10'),
)
# Request selectors (CEL) on the devices of either driver.
DRA_REQUEST_SELECTORS = (
    f'device.attributes["{DRA_GPU}"].index < 2',
    f'device.attributes["{DRA_GPU}"].model != "l4"',
    f'device.capacity["{DRA_GPU}"].memory.compareTo(quantity("40Gi")) < 0',
    f'"{DRA_GPU}" in device.attributes && device.attributes["{DRA_GPU}"].healthy',
)
DELETE_PROTECTION = "resource.kubernetes.io/delete-protection"


def _dra(seed: int, features: frozenset[str], always: frozenset[str] = frozenset()) -> bool:
    """Whether the cluster has feature "dra": drawn (or always on, ``scenario``'s ``always``). With
    "draextended" as well, the classes backing extended resources select these slices' devices too."""
    return "dra" in features and (drawn(seed, "dra") or "dra" in always)


def _gpu_device(rng: random.Random, name: str, index: int) -> dict[str, Any]:
    return {
        "name": name,
        "attributes": {
            "model": {"string": rng.choice(GPU_MODELS)},
            "index": {"int": index},
            "healthy": {"bool": rng.random() < 0.85},
            "driverVersion": {"version": rng.choice(("1.0.0", "1.2.3", "2.0.0-rc1"))},
        },
        "capacity": {"memory": {"value": rng.choice(GPU_MEMORIES)}},
    }


def _slice(
    name: str, driver: str, pool: str, count: int, where: dict[str, Any], spec: dict[str, Any]
) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": {
            "driver": driver,
            "pool": {"name": pool, "generation": 1, "resourceSliceCount": count},
            **where,
            **spec,
        },
    }


def _dra_slices(rng: random.Random, node_names: list[str], counters: bool, one_pool: bool) -> list[dict[str, Any]]:
    """GPUs on 60% of the nodes (with partitions drawing from shared counters where the minor has
    them on), NICs on 30%, and now and then a pool of NICs every node reaches. ``one_pool``: at most
    one pool per node (v0.35's allocator searches a node's pools in Go map order, so with two it may
    pick another device, or meet a selector's runtime error, from one run to the next)."""
    slices = []
    for node in node_names:
        gpus = rng.random() < 0.6
        if gpus:
            devices = [_gpu_device(rng, f"gpu-{i}", i) for i in range(rng.randint(1, 4))]
            if counters and rng.random() < 0.3:
                # One physical GPU as a whole or as two halves, through a counter set of its memory.
                memory, half = rng.choice((("8Gi", "4Gi"), ("16Gi", "8Gi"), ("40Gi", "20Gi")))
                for part, value in (("whole", memory), ("half-a", half), ("half-b", half)):
                    device = _gpu_device(rng, f"gpu-p-{part}", 9)
                    device["consumesCounters"] = [{"counterSet": "gpu-p", "counters": {"memory": {"value": value}}}]
                    devices.append(device)
                shared = {"sharedCounters": [{"name": "gpu-p", "counters": {"memory": {"value": memory}}}]}
                slices.append(_slice(f"{node}-gpu-counters", DRA_GPU, node, 2, {"nodeName": node}, shared))
                slices.append(_slice(f"{node}-gpu", DRA_GPU, node, 2, {"nodeName": node}, {"devices": devices}))
            else:
                slices.append(_slice(f"{node}-gpu", DRA_GPU, node, 1, {"nodeName": node}, {"devices": devices}))
        if rng.random() < 0.3 and not (one_pool and gpus):
            nics = [
                {"name": f"nic-{i}", "attributes": {"speed": {"int": rng.choice((1, 10, 100))}}}
                for i in range(rng.randint(1, 2))
            ]
            slices.append(_slice(f"{node}-nic", DRA_NIC, node, 1, {"nodeName": node}, {"devices": nics}))
    if rng.random() < 0.2 and not one_pool:
        nics = [{"name": f"shared-{i}", "attributes": {"speed": {"int": 10}}} for i in range(rng.randint(1, 2))]
        slices.append(_slice("shared-nics", DRA_NIC, "shared-nics", 1, {"allNodes": True}, {"devices": nics}))
    return slices


def _exact(rng: random.Random, class_name: str) -> dict[str, Any]:
    """A request's ``exactly`` (or one alternative), with the API server's defaults spelled out (the
    oracle's fake API does not default)."""
    exact: dict[str, Any] = {"deviceClassName": class_name}
    roll = rng.random()
    if roll < 0.1:
        exact["allocationMode"] = "All"
    else:
        exact["allocationMode"] = "ExactCount"
        exact["count"] = 2 if roll < 0.35 else 1
    if rng.random() < 0.25:
        exact["selectors"] = [{"cel": {"expression": rng.choice(DRA_REQUEST_SELECTORS)}}]
    return exact


def _claim_spec(rng: random.Random, class_names: list[str]) -> dict[str, Any]:
    """1-2 requests (by count, All, or a ``firstAvailable`` list), sometimes a ``matchAttribute``."""
    requests = []
    for i in range(1 if rng.random() < 0.75 else 2):
        if rng.random() < 0.2:
            alternatives = [
                {"name": f"alt{j}", **_exact(rng, rng.choice(class_names))} for j in range(rng.randint(2, 3))
            ]
            requests.append({"name": f"req{i}", "firstAvailable": alternatives})
        else:
            requests.append({"name": f"req{i}", "exactly": _exact(rng, rng.choice(class_names))})
    devices: dict[str, Any] = {"requests": requests}
    if rng.random() < 0.2:
        constraint: dict[str, Any] = {"matchAttribute": f"{DRA_GPU}/{rng.choice(('model', 'driverVersion'))}"}
        if len(requests) > 1 and rng.random() < 0.5:
            constraint["requests"] = [requests[0]["name"]]
        devices["constraints"] = [constraint]
    return {"devices": devices}


def _claim(name: str, ns: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": ns},
        "spec": spec,
    }


def _allocated_elsewhere(
    rng: random.Random, name: str, ns: str, slices: list[dict[str, Any]], holder: dict[str, Any]
) -> dict[str, Any] | None:
    """A claim allocated to one device of a node's GPU slice and reserved for an assigned pod there."""
    node = holder["spec"]["nodeName"]
    on_node = [s for s in slices if s["spec"].get("nodeName") == node and "devices" in s["spec"]]
    gpus = [s for s in on_node if s["spec"]["driver"] == DRA_GPU]
    if not gpus:
        return None
    device = rng.choice(gpus[0]["spec"]["devices"])
    claim = _claim(
        name,
        ns,
        {
            "devices": {
                "requests": [
                    {
                        "name": "req0",
                        "exactly": {"deviceClassName": "dra-any", "allocationMode": "ExactCount", "count": 1},
                    }
                ]
            }
        },
    )
    claim["metadata"]["finalizers"] = [DELETE_PROTECTION]
    claim["status"] = {
        "allocation": {
            "devices": {"results": [{"request": "req0", "driver": DRA_GPU, "pool": node, "device": device["name"]}]},
            "nodeSelector": {
                "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]
            },
        },
        "reservedFor": [{"resource": "pods", "name": holder["metadata"]["name"], "uid": holder["metadata"]["uid"]}],
    }
    return claim


def dra_inputs(
    rng: random.Random, kube_version: str, pods: list[dict[str, Any]], node_objs: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Feature "dra": DeviceClasses, ResourceSlices, claims (some allocated to assigned pods),
    templates, and 40% of the pending pods with 1-2 ``spec.resourceClaims`` (see the module docstring)."""
    rng.random()  # the draw (``drawn``) is this stream's first roll
    counters = features_at(kube_version).enabled("DRAPartitionableDevices")
    node_names = [n["metadata"]["name"] for n in node_objs]
    chosen = rng.sample(DRA_CLASSES, rng.randint(2, len(DRA_CLASSES)))
    classes = []
    for name, _driver, selector in chosen:
        spec = {"selectors": [{"cel": {"expression": selector}}]} if selector else {}
        classes.append(
            {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name}, "spec": spec}
        )
    class_names = [c[0] for c in chosen] + (["dra-gone"] if rng.random() < 0.05 else [])
    slices = _dra_slices(rng, node_names, counters, one_pool=kube_version == "1.35")
    objects: list[dict[str, Any]] = [*classes, *slices]
    assigned = [
        p
        for p in pods
        if p["spec"].get("nodeName")
        and p["status"]["phase"] in ("Running", "Pending")
        and "deletionTimestamp" not in p["metadata"]
    ]
    shared: dict[str, list[str]] = {}  # per namespace, the claims pods use by name
    for i, holder in enumerate(rng.sample(assigned, min(len(assigned), rng.randint(0, 3)))):
        ns = holder["metadata"]["namespace"]
        holder["metadata"]["uid"] = f"uid-{ns}-{holder['metadata']['name']}"
        claim = _allocated_elsewhere(rng, f"taken-{i}", ns, slices, holder)
        if claim is not None:
            objects.append(claim)
            holder["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": claim["metadata"]["name"]}]
            if rng.random() < 0.5:
                shared.setdefault(ns, []).append(claim["metadata"]["name"])
    for ns in sorted({p["metadata"]["namespace"] for p in pods}):
        for i in range(rng.randint(0, 2)):
            objects.append(_claim(f"shared-{i}", ns, _claim_spec(rng, class_names)))
            shared.setdefault(ns, []).append(f"shared-{i}")
        if rng.random() < 0.2:
            shared.setdefault(ns, []).append("missing")  # never created: PreEnqueue holds the pod back
    templates: set[tuple[str, str]] = set()
    for pod in pods:
        meta, spec = pod["metadata"], pod["spec"]
        if spec.get("nodeName") or meta["name"].startswith("batch-") or rng.random() >= 0.4:
            continue
        ns = meta["namespace"]
        meta["uid"] = f"uid-{ns}-{meta['name']}"
        refs, statuses = [], []
        for i in range(1 if rng.random() < 0.7 else 2):
            ref = f"c{i}"
            if shared.get(ns) and rng.random() < 0.35:
                name = rng.choice(shared[ns])
                # A claim named twice by one pod fails upstream's PreBind on a real API server (the
                # second write conflicts, and the claim read again is "allocated elsewhere"): not made.
                if name not in [r.get("resourceClaimName") for r in refs]:
                    refs.append({"name": ref, "resourceClaimName": name})
                    continue
            template = f"tmpl-{meta['name']}-{i}"
            claim_spec = _claim_spec(rng, class_names)
            templates.add((ns, template))
            objects.append(
                {
                    "apiVersion": "resource.k8s.io/v1",
                    "kind": "ResourceClaimTemplate",
                    "metadata": {"name": template, "namespace": ns},
                    "spec": {"spec": claim_spec},
                }
            )
            refs.append({"name": ref, "resourceClaimTemplateName": template})
            if rng.random() < 0.05:
                continue  # the controller has not made the claim yet: PreEnqueue holds the pod back
            # What kube-controller-manager's resourceclaim controller makes from the template.
            generated = _claim(f"{meta['name']}-{ref}-{rng.randrange(36**5):05x}", ns, claim_spec)
            generated["metadata"]["annotations"] = {"resource.kubernetes.io/pod-claim-name": ref}
            generated["metadata"]["ownerReferences"] = [
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": meta["name"],
                    "uid": meta["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ]
            objects.append(generated)
            statuses.append({"name": ref, "resourceClaimName": generated["metadata"]["name"]})
        spec["resourceClaims"] = refs
        if statuses:
            pod["status"]["resourceClaimStatuses"] = statuses
    return objects


# -- feature "dra", the allocator's gated parts: a second pass from a stream of its own -------------

DRA_EXTRAS_STREAM = 17
ADMIN_ACCESS_LABEL = "resource.kubernetes.io/admin-access"
BINDING_CONDITION = "example.com/attached"
BINDING_FAILURE = "example.com/failed"
DEVICE_TAINT_KEYS = ("example.com/maintenance", "example.com/degraded")
# A binding condition pending (or absent) from long before now: timed out on both sides' wall clocks.
LONG_AGO = "2026-01-01T00:00:00Z"


def _device_taint(rng: random.Random, effects: tuple[str, ...]) -> dict[str, Any]:
    taint = {"key": rng.choice(DEVICE_TAINT_KEYS), "effect": rng.choice(effects)}
    if rng.random() < 0.5:
        taint["value"] = rng.choice(("a", "b"))
    return taint


def _device_toleration(rng: random.Random, effects: tuple[str, ...]) -> dict[str, Any]:
    toleration: dict[str, Any] = {"operator": "Exists"}
    roll = rng.random()
    if roll < 0.7:
        toleration["key"] = rng.choice(DEVICE_TAINT_KEYS)
        if roll < 0.4:
            toleration = {"key": toleration["key"], "operator": "Equal", "value": rng.choice(("a", "b"))}
    if rng.random() < 0.4:
        toleration["effect"] = rng.choice(effects)
    return toleration


def _shared_gpu(rng: random.Random) -> dict[str, Any]:
    """A GPU that several claims may share (DRAConsumableCapacity), its memory handed out by a
    request policy: a range with a step, a list of sizes, or whatever is asked."""
    device = _gpu_device(rng, "gpu-shared", 7)
    device["allowMultipleAllocations"] = True
    memory: dict[str, Any] = {"value": "40Gi"}
    roll = rng.random()
    if roll < 0.4:
        memory["requestPolicy"] = {"default": "8Gi", "validRange": {"min": "4Gi", "step": "4Gi"}}
    elif roll < 0.8:
        memory["requestPolicy"] = {"default": "8Gi", "validValues": ["8Gi", "16Gi", "40Gi"]}
    device["capacity"] = {"memory": memory}
    return device


def _requests_of(spec: dict[str, Any]) -> Iterable[tuple[dict[str, Any], bool]]:
    """Each exact request of a claim spec and its alternatives, with whether it is an ``exactly``."""
    for request in spec["devices"]["requests"]:
        if "exactly" in request:
            yield request["exactly"], True
        for sub in request.get("firstAvailable", ()):
            yield sub, False


def _with_binding_conditions(rng: random.Random, claim: dict[str, Any], kube_version: str) -> None:
    """An allocated claim whose devices wait for binding conditions (DRADeviceBindingConditions):
    ready, failed, pending or without a device status; pending ones allocated long ago (timed out:
    one still waiting would hold upstream's PreBind for the binding timeout, 10 minutes)."""
    allocation = claim["status"]["allocation"]
    state = rng.choice(("ready", "failed", "pending", "absent"))
    if state != "ready" or rng.random() < 0.5:
        allocation["allocationTimestamp"] = LONG_AGO
    statuses = []
    for result in allocation["devices"]["results"]:
        result["bindingConditions"] = [BINDING_CONDITION]
        result["bindingFailureConditions"] = [BINDING_FAILURE]
        if state == "absent":
            continue
        conditions = [
            {
                "type": BINDING_CONDITION,
                "status": "True" if state == "ready" else "False",
                "reason": "Attached" if state == "ready" else "Attaching",
                "message": "",
                "lastTransitionTime": LONG_AGO,
            }
        ]
        if state == "failed":
            conditions.append(
                {
                    "type": BINDING_FAILURE,
                    "status": "True",
                    "reason": "AttachFailed",
                    "message": "the fabric refused",
                    "lastTransitionTime": LONG_AGO,
                }
            )
        statuses.append(
            {"driver": result["driver"], "pool": result["pool"], "device": result["device"], "conditions": conditions}
        )
    if statuses:
        claim["status"]["devices"] = statuses


def dra_extras(
    rng: random.Random,
    kube_version: str,
    dra: list[dict[str, Any]],
    pods: list[dict[str, Any]],
    namespace_objs: list[dict[str, Any]],
) -> list[dict[str, Any]]:
    """Feature "dra", the allocator's gated parts where the minor has them on by default (see the
    module docstring), over what ``dra_inputs`` made (``dra``, changed in place); the DeviceTaintRules
    it adds are returned."""
    on = features_at(kube_version)
    taints, capacity = on.enabled("DRADeviceTaints"), on.enabled("DRAConsumableCapacity")
    binding = on.enabled("DRADeviceBindingConditions") and on.enabled("DRAResourceClaimDeviceStatus")
    effects = ("NoSchedule", "NoExecute") if kube_version == "1.36" else ("NoSchedule", "NoExecute", "None")
    slices = [o for o in dra if o["kind"] == "ResourceSlice" and "devices" in o["spec"]]
    # Claim specs to change: the unallocated claims' and the templates' (a claim made from a
    # template shares the template's spec), each once.
    specs: dict[int, tuple[str, dict[str, Any]]] = {}
    for obj in dra:
        if obj["kind"] == "ResourceClaim" and "status" not in obj:
            specs.setdefault(id(obj["spec"]), (obj["metadata"]["namespace"], obj["spec"]))
        elif obj["kind"] == "ResourceClaimTemplate":
            specs.setdefault(id(obj["spec"]["spec"]), (obj["metadata"]["namespace"], obj["spec"]["spec"]))
    rolls = [rng.random() for _ in range(4)]  # per cluster: admin access, taints, capacity, binding
    if capacity and rolls[2] < 0.6:
        for slice_ in slices:
            if slice_["spec"]["driver"] == DRA_GPU and rng.random() < 0.5:
                slice_["spec"]["devices"].append(_shared_gpu(rng))
    if taints and rolls[1] < 0.6:
        for slice_ in slices:
            for device in slice_["spec"]["devices"]:
                if rng.random() < 0.2:
                    device["taints"] = [_device_taint(rng, effects)]
    admin_ns = None
    namespaces = sorted({ns for ns, _ in specs.values()})
    if namespaces and rolls[0] < 0.4:
        admin_ns = rng.choice(namespaces)
        for ns_obj in namespace_objs:
            if ns_obj["metadata"]["name"] == admin_ns:
                ns_obj["metadata"]["labels"][ADMIN_ACCESS_LABEL] = "true"
    for ns, spec in specs.values():
        for request, exactly in _requests_of(spec):
            if exactly and ns == admin_ns and rng.random() < 0.4:
                request["adminAccess"] = True
            if taints and rolls[1] < 0.6 and rng.random() < 0.3:
                request["tolerations"] = [_device_toleration(rng, effects) for _ in range(rng.randint(1, 2))]
            if capacity and rolls[2] < 0.6 and rng.random() < 0.3:
                request["capacity"] = {"requests": {"memory": rng.choice(("4Gi", "6Gi", "8Gi", "16Gi", "48Gi"))}}
    if binding and rolls[3] < 0.5:
        pending = [p for p in pods if not p["spec"].get("nodeName") and not p["metadata"]["name"].startswith("batch-")]
        for claim in (o for o in dra if o["kind"] == "ResourceClaim" and "status" in o):
            if rng.random() < 0.7:
                _with_binding_conditions(rng, claim, kube_version)
                ns, name = claim["metadata"]["namespace"], claim["metadata"]["name"]
                users = [p for p in pending if p["metadata"]["namespace"] == ns]
                if users:
                    _use_claim(rng.choice(users), name)
    rules: list[dict[str, Any]] = []
    if on.enabled("DRADeviceTaintRules") and slices and rng.random() < 0.3:
        for i in range(rng.randint(1, 2)):
            target = rng.choice(slices)
            selector: dict[str, Any] = {}
            if rng.random() < 0.8:
                selector["driver"] = target["spec"]["driver"]
            if rng.random() < 0.7:
                selector["pool"] = target["spec"]["pool"]["name"]
            if rng.random() < 0.5:
                selector["device"] = rng.choice(target["spec"]["devices"])["name"]
            rules.append(
                {
                    "apiVersion": "resource.k8s.io/v1",
                    "kind": "DeviceTaintRule",
                    "metadata": {"name": f"rule-{i}"},
                    "spec": {"deviceSelector": selector, "taint": _device_taint(rng, effects)},
                }
            )
    if rng.random() < 0.5:
        _guard_selectors(dra, specs.values())
    return rules


GPU_GUARD = f'device.driver == "{DRA_GPU}" && '


def _guard_selectors(dra: list[dict[str, Any]], specs: Iterable[tuple[str, dict[str, Any]]]) -> None:
    """The selectors on GPU attributes or capacity guarded by the driver, in half the clusters: a NIC
    then fails them instead of ending the cycle with a CEL runtime error (the other half keep those
    errors), so more pods get devices and their allocation is compared."""

    def guarded(expression: str) -> str:
        unguarded = f'["{DRA_GPU}"]' in expression and not expression.startswith(("device.driver", f'"{DRA_GPU}" in'))
        return GPU_GUARD + expression if unguarded else expression

    for obj in dra:
        if obj["kind"] == "DeviceClass":
            for selector in obj["spec"].get("selectors", ()):
                selector["cel"]["expression"] = guarded(selector["cel"]["expression"])
    for _, spec in specs:
        for request, _exactly in _requests_of(spec):
            for selector in request.get("selectors", ()):
                selector["cel"]["expression"] = guarded(selector["cel"]["expression"])


def _use_claim(pod: dict[str, Any], name: str) -> None:
    """``pod`` names the claim ``name`` too (unless it does already)."""
    meta, spec = pod["metadata"], pod["spec"]
    refs = spec.setdefault("resourceClaims", [])
    if any(r.get("resourceClaimName") == name for r in refs):
        return
    meta["uid"] = f"uid-{meta['namespace']}-{meta['name']}"
    refs.append({"name": f"bound-{len(refs)}", "resourceClaimName": name})
