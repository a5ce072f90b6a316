"""The Kubernetes minors we decide as, and each one's feature gates: one place per version.

kube-scheduler's decisions change between minors in two ways: a feature gate whose default moves
(``pkg/features/kube_features.go``, versioned specs: the default at a version is the last spec at or
before it) and a change made without a gate. Both are resolved here into ``Features``, the value the
plugins receive when a profile is composed (upstream's ``feature.Features``, handed to every plugin
factory); a plugin branches on a feature, never on a version number. The default profile of a minor
is ``scheduler.config.default_plugins``. Adding a minor is a column in ``_SPECS`` and
``_DEPENDENCIES``, its ungated changes in ``_CHANGES``, what its ``resource.k8s.io/v1`` lets the DRA
parsers read in ``DRA_API``, and its release in ``RELEASES``.

``--feature-gates`` is read with component-base's ``featuregate`` semantics and messages (an unknown
gate, a gate locked to its default, a dependency left off); a gate the scheduler reads that we do
not implement in the asked state is refused by our own message, never silently ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = [
    "DEFAULT_FEATURES",
    "DRA_ALLOCATOR_RELEASES",
    "DRA_API",
    "NEWEST",
    "OLDEST",
    "PER_CONTAINER_RULE",
    "RELEASES",
    "SUPPORTED",
    "DRAAPIFacts",
    "FeatureGateError",
    "Features",
    "PodRequestsRule",
    "dra_api",
    "features_at",
    "features_from_flags",
    "minor_for_server",
    "parse_feature_gates",
    "supported_minor",
]

# The patch release of each minor whose source was read (and whose oracle proves it).
RELEASES: Mapping[str, str] = {"1.35": "v1.35.4", "1.36": "v1.36.3", "1.37": "v1.37.2"}
SUPPORTED: tuple[str, ...] = tuple(RELEASES)
NEWEST = SUPPORTED[-1]
# ``run`` decides as 1.35 until it reads the API server's /version (kube-scheduler may be one minor
# older than the API server, never newer).
OLDEST = SUPPORTED[0]

ALPHA, BETA, GA, DEPRECATED = "ALPHA", "BETA", "", "DEPRECATED"  # component-base's prerelease strings


class FeatureGateError(ValueError):
    """A ``--feature-gates`` value kube-scheduler would refuse, or one we do not implement."""


@dataclass(frozen=True, slots=True)
class _G:
    """A gate's spec in force at one minor."""

    default: bool
    stage: str
    locked: bool = False


# Every gate kube-scheduler reads (grep ``features.`` in ``pkg/scheduler``), the gates that depend on
# them and what they depend on; per minor, the spec in force at its release (None: no such gate).
_SPECS: Mapping[str, tuple[_G | None, _G | None, _G | None]] = {
    "CSIMigrationPortworx": (_G(True, GA, locked=True), None, None),
    "CompositePodGroup": (None, None, _G(False, ALPHA)),
    "ContainerRestartRules": (_G(True, BETA), _G(True, BETA), _G(True, BETA)),
    "DRAAdminAccess": (_G(True, BETA), _G(True, GA, locked=True), _G(True, GA, locked=True)),
    "DRAConsumableCapacity": (_G(False, ALPHA), _G(True, BETA), _G(True, BETA)),
    "DRADerivedAttributes": (None, None, _G(False, ALPHA)),
    "DRADeviceBindingConditions": (_G(False, ALPHA), _G(True, BETA), _G(True, BETA)),
    "DRADeviceCompatibilityGroups": (None, None, _G(False, ALPHA)),
    "DRADeviceTaintRules": (_G(False, ALPHA), _G(False, BETA), _G(True, GA)),
    "DRADeviceTaints": (_G(False, ALPHA), _G(True, BETA), _G(True, GA)),
    "DRAExtendedResource": (_G(False, ALPHA), _G(True, BETA), _G(True, GA, locked=True)),
    "DRAFractionalCapacityRange": (None, None, _G(True, BETA)),
    "DRAListTypeAttributes": (None, _G(False, ALPHA), _G(False, ALPHA)),
    "DRANodeAllocatableResources": (None, _G(False, ALPHA), _G(False, ALPHA)),
    "DRAOptionalNodeOperations": (None, None, _G(False, ALPHA)),
    "DRAPartitionableDevices": (_G(False, ALPHA), _G(True, BETA), _G(True, BETA)),
    "DRAPartitionableDevicesType": (None, None, _G(False, ALPHA)),
    "DRAPrioritizedList": (_G(True, BETA), _G(True, GA), _G(True, GA, locked=True)),
    "DRAResourceClaimDeviceStatus": (_G(True, BETA), _G(True, BETA), _G(True, GA, locked=True)),
    "DRAResourceClaimGranularStatusAuthorization": (None, _G(True, BETA), _G(True, BETA)),
    "DRAResourcePoolStatus": (None, _G(False, ALPHA), _G(False, ALPHA)),
    "DRASchedulerFilterTimeout": (_G(True, BETA), _G(True, BETA), _G(True, BETA)),
    "DRAWorkloadResourceClaims": (None, _G(False, ALPHA), _G(False, BETA)),
    "DynamicResourceAllocation": (_G(True, GA, locked=True), _G(True, GA, locked=True), _G(True, GA, locked=True)),
    "ExtendWebSocketsToKubelet": (None, _G(True, BETA), _G(True, BETA)),
    "GangScheduling": (_G(False, ALPHA), _G(False, ALPHA), None),
    "GenericWorkload": (_G(False, ALPHA), _G(False, ALPHA), _G(False, BETA)),
    "H2CContainerProbe": (None, None, _G(False, ALPHA)),
    "InPlacePodLevelResourcesVerticalScaling": (_G(False, ALPHA), _G(True, BETA), _G(True, BETA)),
    "InPlacePodVerticalScaling": (_G(True, GA, locked=True), _G(True, GA, locked=True), _G(True, GA, locked=True)),
    "InPlacePodVerticalScalingAllocatedStatus": (_G(False, DEPRECATED), None, None),
    "InPlacePodVerticalScalingExclusiveCPUs": (_G(False, ALPHA), _G(False, ALPHA), _G(False, ALPHA)),
    "InPlacePodVerticalScalingExclusiveMemory": (_G(False, ALPHA), _G(False, ALPHA), _G(False, ALPHA)),
    "InPlacePodVerticalScalingInitContainers": (None, _G(True, BETA), _G(True, GA, locked=True)),
    "InPlacePodVerticalScalingMemoryBackedVolumes": (None, None, _G(False, ALPHA)),
    "InPlacePodVerticalScalingSchedulerPreemption": (None, None, _G(False, ALPHA)),
    "InterPodAffinityHostnameFastPath": (None, None, _G(False, ALPHA)),
    "KubeletAllocatedPodsEndpoint": (None, None, _G(False, ALPHA)),
    "MatchLabelKeysInPodTopologySpread": (_G(True, BETA), _G(True, BETA), _G(True, BETA)),
    "MatchLabelKeysInPodTopologySpreadSelectorMerge": (_G(True, BETA), _G(True, BETA), _G(True, BETA)),
    "MemoryManager": (_G(True, GA, locked=True), None, None),
    "NodeDeclaredFeatures": (_G(False, ALPHA), _G(True, BETA), _G(True, GA, locked=True)),
    "NodeInclusionPolicyInPodTopologySpread": (
        _G(True, GA, locked=True),
        _G(True, GA, locked=True),
        _G(True, GA, locked=True),
    ),
    "NominatedNodeNameForExpectation": (_G(True, BETA), _G(True, BETA), _G(True, BETA)),
    "OpportunisticBatching": (_G(True, BETA), _G(True, BETA), _G(True, BETA)),
    "PodGroupPreemptionPolicy": (None, None, _G(False, ALPHA)),
    # Read through podutil (CalculatePodConditionObservedGeneration) for PodScheduled=False and
    # DisruptionTarget: locked on at every minor, so the conditions always carry the pod's generation.
    "PodObservedGenerationTracking": (_G(True, GA, locked=True), _G(True, GA, locked=True), _G(True, GA, locked=True)),
    "PodLevelResourceManagers": (None, _G(False, ALPHA), _G(False, BETA)),
    "PodLevelResources": (_G(True, BETA), _G(True, BETA), _G(True, BETA)),
    "PodLevelResourcesFixDefaulting": (None, None, _G(True, BETA)),
    "PodLevelResourcesFixKubeletQOSClass": (None, None, _G(True, BETA)),
    "ProcMountType": (_G(True, BETA), _G(True, GA, locked=True), _G(True, GA, locked=True)),
    "ResourceHealthStatus": (_G(False, ALPHA), _G(True, BETA), _G(True, BETA)),
    "ResourceHealthStatusMessage": (None, _G(True, BETA), _G(True, BETA)),
    "RestartAllContainersOnContainerExits": (_G(False, ALPHA), _G(True, BETA), _G(True, BETA)),
    "SchedulerAsyncAPICalls": (_G(False, BETA), _G(False, BETA), _G(False, BETA)),
    "SchedulerAsyncPreemption": (_G(True, BETA), _G(True, BETA), _G(True, BETA)),
    "SchedulerPopFromBackoffQ": (_G(True, BETA), _G(True, BETA), _G(True, BETA)),
    "SchedulerPreQueueingHints": (None, None, _G(False, ALPHA)),
    "SchedulerQueueingHints": (_G(True, GA, locked=True), _G(True, GA, locked=True), None),
    "SidecarContainers": (_G(True, GA, locked=True), _G(True, GA, locked=True), None),
    "StorageCapacityScoring": (_G(False, ALPHA), _G(False, ALPHA), _G(True, BETA)),
    "TaintTolerationComparisonOperators": (_G(False, ALPHA), _G(False, ALPHA), _G(False, ALPHA)),
    "TopologyAwareWorkloadScheduling": (None, _G(False, ALPHA), _G(False, ALPHA)),
    "UserNamespacesHostNetworkSupport": (_G(False, ALPHA), _G(False, ALPHA), _G(False, ALPHA)),
    "UserNamespacesSupport": (_G(True, BETA), _G(True, GA, locked=True), _G(True, GA, locked=True)),
    "VolumeAttributesClass": (_G(True, GA), _G(True, GA, locked=True), _G(True, GA, locked=True)),
    "VolumeLimitScaling": (_G(False, ALPHA), _G(False, ALPHA), _G(True, BETA)),
    "WindowsCPUAndMemoryAffinity": (_G(False, ALPHA), _G(False, ALPHA), _G(False, ALPHA)),
    "WorkloadAwarePreemption": (None, _G(False, ALPHA), None),
    "WorkloadWithJob": (None, _G(False, ALPHA), _G(False, ALPHA)),
}

# ``defaultKubernetesFeatureGateDependencies`` restricted to the gates above, per minor.
_DEPENDENCIES: Mapping[str, Mapping[str, str]] = {
    "1.35": {
        "DRAAdminAccess": "DynamicResourceAllocation",
        "DRAConsumableCapacity": "DynamicResourceAllocation",
        "DRADeviceBindingConditions": "DynamicResourceAllocation DRAResourceClaimDeviceStatus",
        "DRADeviceTaintRules": "DRADeviceTaints",
        "DRADeviceTaints": "DynamicResourceAllocation",
        "DRAExtendedResource": "DynamicResourceAllocation",
        "DRAPartitionableDevices": "DynamicResourceAllocation",
        "DRAPrioritizedList": "DynamicResourceAllocation",
        "DRASchedulerFilterTimeout": "DynamicResourceAllocation",
        "GangScheduling": "GenericWorkload",
        "InPlacePodLevelResourcesVerticalScaling": "InPlacePodVerticalScaling PodLevelResources NodeDeclaredFeatures",
        "InPlacePodVerticalScalingAllocatedStatus": "InPlacePodVerticalScaling",
        "InPlacePodVerticalScalingExclusiveCPUs": "InPlacePodVerticalScaling",
        "InPlacePodVerticalScalingExclusiveMemory": "InPlacePodVerticalScaling MemoryManager",
        "MatchLabelKeysInPodTopologySpreadSelectorMerge": "MatchLabelKeysInPodTopologySpread",
        "ProcMountType": "UserNamespacesSupport",
        "ResourceHealthStatus": "DynamicResourceAllocation",
        "RestartAllContainersOnContainerExits": "ContainerRestartRules NodeDeclaredFeatures",
        "UserNamespacesHostNetworkSupport": "UserNamespacesSupport",
        "WindowsCPUAndMemoryAffinity": "MemoryManager",
    },
    "1.36": {
        "DRAAdminAccess": "DynamicResourceAllocation",
        "DRAConsumableCapacity": "DynamicResourceAllocation",
        "DRADeviceBindingConditions": "DynamicResourceAllocation DRAResourceClaimDeviceStatus",
        "DRADeviceTaintRules": "DRADeviceTaints",
        "DRADeviceTaints": "DynamicResourceAllocation",
        "DRAExtendedResource": "DynamicResourceAllocation",
        "DRAListTypeAttributes": "DynamicResourceAllocation",
        "DRANodeAllocatableResources": "DynamicResourceAllocation",
        "DRAPartitionableDevices": "DynamicResourceAllocation",
        "DRAPrioritizedList": "DynamicResourceAllocation",
        "DRAResourceClaimGranularStatusAuthorization": "DynamicResourceAllocation DRAResourceClaimDeviceStatus",
        "DRAResourcePoolStatus": "DynamicResourceAllocation",
        "DRASchedulerFilterTimeout": "DynamicResourceAllocation",
        "DRAWorkloadResourceClaims": "DynamicResourceAllocation GenericWorkload",
        "ExtendWebSocketsToKubelet": "NodeDeclaredFeatures",
        "GangScheduling": "GenericWorkload",
        "InPlacePodLevelResourcesVerticalScaling": "InPlacePodVerticalScaling PodLevelResources NodeDeclaredFeatures",
        "InPlacePodVerticalScalingExclusiveCPUs": "InPlacePodVerticalScaling",
        "InPlacePodVerticalScalingExclusiveMemory": "InPlacePodVerticalScaling",
        "InPlacePodVerticalScalingInitContainers": "InPlacePodVerticalScaling NodeDeclaredFeatures",
        "MatchLabelKeysInPodTopologySpreadSelectorMerge": "MatchLabelKeysInPodTopologySpread",
        "PodLevelResourceManagers": "PodLevelResources",
        "ProcMountType": "UserNamespacesSupport",
        "ResourceHealthStatus": "DynamicResourceAllocation",
        "ResourceHealthStatusMessage": "ResourceHealthStatus",
        "RestartAllContainersOnContainerExits": "ContainerRestartRules NodeDeclaredFeatures",
        "TopologyAwareWorkloadScheduling": "GenericWorkload",
        "UserNamespacesHostNetworkSupport": "UserNamespacesSupport NodeDeclaredFeatures",
        "WorkloadAwarePreemption": "GangScheduling",
        "WorkloadWithJob": "GenericWorkload",
    },
    "1.37": {
        "CompositePodGroup": "GenericWorkload TopologyAwareWorkloadScheduling",
        "DRAAdminAccess": "DynamicResourceAllocation",
        "DRAConsumableCapacity": "DynamicResourceAllocation",
        "DRADerivedAttributes": "DynamicResourceAllocation",
        "DRADeviceBindingConditions": "DynamicResourceAllocation DRAResourceClaimDeviceStatus",
        "DRADeviceCompatibilityGroups": "DynamicResourceAllocation DRAPartitionableDevices",
        "DRADeviceTaintRules": "DRADeviceTaints",
        "DRADeviceTaints": "DynamicResourceAllocation",
        "DRAExtendedResource": "DynamicResourceAllocation",
        "DRAFractionalCapacityRange": "DRAConsumableCapacity",
        "DRAListTypeAttributes": "DynamicResourceAllocation",
        "DRANodeAllocatableResources": "DynamicResourceAllocation",
        "DRAOptionalNodeOperations": "DynamicResourceAllocation NodeDeclaredFeatures",
        "DRAPartitionableDevices": "DynamicResourceAllocation",
        "DRAPartitionableDevicesType": "DynamicResourceAllocation DRAPartitionableDevices DRAResourcePoolStatus",
        "DRAPrioritizedList": "DynamicResourceAllocation",
        "DRAResourceClaimGranularStatusAuthorization": "DynamicResourceAllocation DRAResourceClaimDeviceStatus",
        "DRAResourcePoolStatus": "DynamicResourceAllocation",
        "DRASchedulerFilterTimeout": "DynamicResourceAllocation",
        "DRAWorkloadResourceClaims": "DynamicResourceAllocation GenericWorkload",
        "ExtendWebSocketsToKubelet": "NodeDeclaredFeatures",
        "H2CContainerProbe": "NodeDeclaredFeatures",
        "InPlacePodLevelResourcesVerticalScaling": "InPlacePodVerticalScaling PodLevelResources NodeDeclaredFeatures",
        "InPlacePodVerticalScalingExclusiveCPUs": "InPlacePodVerticalScaling",
        "InPlacePodVerticalScalingExclusiveMemory": "InPlacePodVerticalScaling",
        "InPlacePodVerticalScalingInitContainers": "InPlacePodVerticalScaling NodeDeclaredFeatures",
        "InPlacePodVerticalScalingMemoryBackedVolumes": "InPlacePodVerticalScaling NodeDeclaredFeatures",
        "InPlacePodVerticalScalingSchedulerPreemption": "InPlacePodVerticalScaling",
        "KubeletAllocatedPodsEndpoint": "InPlacePodVerticalScaling",
        "MatchLabelKeysInPodTopologySpreadSelectorMerge": "MatchLabelKeysInPodTopologySpread",
        "PodGroupPreemptionPolicy": "GenericWorkload",
        "PodLevelResourceManagers": "PodLevelResources",
        "PodLevelResourcesFixDefaulting": "PodLevelResources",
        "PodLevelResourcesFixKubeletQOSClass": "PodLevelResources",
        "ProcMountType": "UserNamespacesSupport",
        "ResourceHealthStatus": "DynamicResourceAllocation",
        "ResourceHealthStatusMessage": "ResourceHealthStatus",
        "RestartAllContainersOnContainerExits": "ContainerRestartRules NodeDeclaredFeatures",
        "TopologyAwareWorkloadScheduling": "GenericWorkload",
        "UserNamespacesHostNetworkSupport": "UserNamespacesSupport NodeDeclaredFeatures",
        "WorkloadWithJob": "GenericWorkload",
    },
}

# Gates pkg/scheduler reads, at any of our minors (the rest of ``_SPECS`` is there for dependencies).
_SCHEDULER_READS = frozenset(
    {
        "CompositePodGroup",
        "CSIMigrationPortworx",
        "DRAAdminAccess",
        "DRAConsumableCapacity",
        "DRADerivedAttributes",
        "DRADeviceBindingConditions",
        "DRADeviceCompatibilityGroups",
        "DRADeviceTaintRules",
        "DRADeviceTaints",
        "DRAExtendedResource",
        "DRAFractionalCapacityRange",
        "DRAListTypeAttributes",
        "DRANodeAllocatableResources",
        "DRAOptionalNodeOperations",
        "DRAPartitionableDevices",
        "DRAPrioritizedList",
        "DRAResourceClaimDeviceStatus",
        "DRASchedulerFilterTimeout",
        "DRAWorkloadResourceClaims",
        "DynamicResourceAllocation",
        "GangScheduling",
        "GenericWorkload",
        "InPlacePodLevelResourcesVerticalScaling",
        "InPlacePodVerticalScaling",
        "InPlacePodVerticalScalingSchedulerPreemption",
        "InterPodAffinityHostnameFastPath",
        "MatchLabelKeysInPodTopologySpread",
        "NodeDeclaredFeatures",
        "NodeInclusionPolicyInPodTopologySpread",
        "NominatedNodeNameForExpectation",
        "OpportunisticBatching",
        "PodGroupPreemptionPolicy",
        "PodLevelResources",
        "PodObservedGenerationTracking",
        "SchedulerAsyncAPICalls",
        "SchedulerAsyncPreemption",
        "SchedulerPopFromBackoffQ",
        "SchedulerPreQueueingHints",
        "SchedulerQueueingHints",
        "SidecarContainers",
        "StorageCapacityScoring",
        "TaintTolerationComparisonOperators",
        "TopologyAwareWorkloadScheduling",
        "VolumeAttributesClass",
        "VolumeLimitScaling",
        "WorkloadAwarePreemption",
    }
)

# Scheduler gates whose non-default state we implement too, per minor: only these may be set away
# from their default. (A locked gate cannot be set away at all.)
_SETTABLE: Mapping[str, frozenset[str]] = {
    "1.35": frozenset(),
    "1.36": frozenset({"NodeDeclaredFeatures", "VolumeLimitScaling", "InPlacePodLevelResourcesVerticalScaling"}),
    "1.37": frozenset({"VolumeLimitScaling", "StorageCapacityScoring"}),
}

# Changes a minor made without a gate (each names where upstream made it); cumulative.
BALANCED_ALLOCATION_SCORES_CHANGE = "BalancedAllocationScoresChange"  # balanced_allocation.go, 1.36
NODE_NAME_FIRST = "NodeNameFirst"  # default_plugins.go and nodename PreFilter, 1.37
PREEMPTION_PLACEMENT_MESSAGE = "PreemptionPlacementMessage"  # preemption.go Preempt, 1.37 (#140180)
IMAGE_VOLUMES_SCORED = "ImageVolumesScored"  # image_locality.go sumImageScores, 1.36 (#130231)
IMAGE_VOLUMES_COUNTED = "ImageVolumesCounted"  # image_locality.go calculatePriority, 1.37 (#138951)
DRA_POST_FILTER_SILENT = "DRAPostFilterSilent"  # dynamicresources.go PostFilter, 1.37
DRA_SCORE_ALLOCATED_CLAIMS = "DRAScoreAllocatedClaims"  # dynamicresources.go computeScore, 1.36
DRA_FILTER_TIMEOUT_ERROR = "DRAFilterTimeoutError"  # dynamicresources.go Filter, 1.36
DRA_CLAIM_DELETE_EVENTS = "DRAClaimDeleteEvents"  # dynamicresources.go EventsToRegister, 1.37
BATCH_RESCORES_LAST_NODE = "BatchRescoresLastNode"  # runtime/batch.go GetNodeHint, 1.37 (#140289)
GATED_POD_NOMINATED = "GatedPodNominated"  # backend/queue/scheduling_queue.go addPod, 1.37
VICTIM_START_READ_ONCE = "VictimStartReadOnce"  # preemption/types.go NewVictim, preemption/util.go, 1.37
PRE_BIND_VICTIMS_REQUEUED = "PreBindVictimsRequeued"  # preemption/executor.go, schedule_one.go, 1.36 (#135502)
IN_MEMORY_VICTIM_ACTIVATES = "InMemoryVictimActivates"  # preemption/executor.go prepareCandidateAsync, 1.37
HINTS_COUNT_NOMINATED_PODS = "HintsCountNominatedPods"  # podtopologyspread, interpodaffinity plugin.go, 1.36
AFFINITY_HINTS_BOTH_WAYS = "AffinityHintsBothWays"  # interpodaffinity/plugin.go isSchedulableAfterPodChange, 1.36
TARGET_POD_EVENTS = "TargetPodEvents"  # framework/events.go, backend/queue Update, plugins' EventsToRegister, 1.37
ANTI_AFFINITY_HINTS_ANY_TERM = "AntiAffinityHintsAnyTerm"  # interpodaffinity/plugin.go, 1.37
NODE_TAINT_FALLBACK_REMOVED = "NodeTaintFallbackRemoved"  # scheduler.go buildQueueingHintMap, 1.37
# The API server's: pkg/apis/resource/v1 zz_generated.validations.go, 1.37 (ResourceClaimStatus.reservedFor's
# declarative uniqueness check, beta and so authoritative, names a duplicate by the whole entry).
DUPLICATE_RESERVATION_AS_JSON = "DuplicateReservationAsJSON"
# component-helpers resource/helpers.go AggregateContainerRequests, 1.37 (v0.37.2): an assigned pod's
# requests are the max of the summed spec, actuated and allocated requests (the pod-level status in
# place of the last two when it has both), no longer the sum of each container's max.
POD_REQUESTS_MAX_OF_SUMS = "PodRequestsMaxOfSums"
_1_36 = frozenset(
    {
        BALANCED_ALLOCATION_SCORES_CHANGE,
        IMAGE_VOLUMES_SCORED,
        PRE_BIND_VICTIMS_REQUEUED,
        HINTS_COUNT_NOMINATED_PODS,
        AFFINITY_HINTS_BOTH_WAYS,
        DRA_SCORE_ALLOCATED_CLAIMS,
        DRA_FILTER_TIMEOUT_ERROR,
    }
)
_CHANGES: Mapping[str, frozenset[str]] = {
    "1.35": frozenset(),
    "1.36": _1_36,
    "1.37": _1_36
    | {
        NODE_NAME_FIRST,
        PREEMPTION_PLACEMENT_MESSAGE,
        IMAGE_VOLUMES_COUNTED,
        DRA_POST_FILTER_SILENT,
        DRA_CLAIM_DELETE_EVENTS,
        BATCH_RESCORES_LAST_NODE,
        GATED_POD_NOMINATED,
        VICTIM_START_READ_ONCE,
        IN_MEMORY_VICTIM_ACTIVATES,
        TARGET_POD_EVENTS,
        ANTI_AFFINITY_HINTS_ANY_TERM,
        NODE_TAINT_FALLBACK_REMOVED,
        POD_REQUESTS_MAX_OF_SUMS,
        DUPLICATE_RESERVATION_AS_JSON,
    },
}

# component-helpers ``nodedeclaredfeatures/features.AllFeatures`` at each minor's own go.mod
# version: the features a pod's spec can require (``InferForScheduling`` not constantly false).
_DECLARED_FEATURES_INFERRED: Mapping[str, frozenset[str]] = {
    "1.35": frozenset(),
    "1.36": frozenset({"RestartAllContainersOnContainerExits", "UserNamespacesHostNetworkSupport"}),
    "1.37": frozenset(
        {"RestartAllContainersOnContainerExits", "UserNamespacesHostNetworkSupport", "VolumeBindMountOptions"}
    ),
}


@dataclass(frozen=True, slots=True)
class DRAAPIFacts:
    """What a minor's ``k8s.io/api`` (``resource/v1/types.go`` of the release ``RELEASES`` names, as
    ``v0.MINOR.PATCH``) lets the DRA parsers read, where it differs between our minors: the bounds all
    of them share stay beside the parsers (``scheduler.api.resourceslice``)."""

    # ``DeviceAttribute``'s list kinds ``ints``, ``bools``, ``strings`` and ``versions`` (``IntValues``...);
    # a minor without them ignores them as its JSON decoder ignores unknown fields.
    list_attributes: bool
    # ``ResourceSliceMaxAttributeValuesPerDevice``: a device's attribute values, a list counting its
    # length (None: the minor has no such bound).
    max_attribute_values_per_device: int | None
    # The devices a slice may hold when one of them uses an "advanced" feature: taints or counter
    # consumption (``ResourceSliceMaxDevicesWithTaintsOrConsumesCounters``), and list attributes too
    # where the minor has them (``ResourceSliceMaxDevicesWithAdvancedFeatures``).
    max_devices_with_advanced_features: int


DRA_API: Mapping[str, DRAAPIFacts] = {
    # k8s.io/api v0.35.4
    "1.35": DRAAPIFacts(
        list_attributes=False, max_attribute_values_per_device=None, max_devices_with_advanced_features=64
    ),
    # k8s.io/api v0.36.3: DRAListTypeAttributes adds the list kinds and their bound.
    "1.36": DRAAPIFacts(
        list_attributes=True, max_attribute_values_per_device=48, max_devices_with_advanced_features=64
    ),
    # k8s.io/api v0.37.2
    "1.37": DRAAPIFacts(
        list_attributes=True, max_attribute_values_per_device=48, max_devices_with_advanced_features=64
    ),
}


def dra_api(minor: str) -> DRAAPIFacts:
    """The DRA parser facts of a supported ``minor``; one we do not support is a bug (``ValueError``)."""
    facts = DRA_API.get(minor)
    if facts is None:
        raise ValueError(f"unsupported minor {minor!r}: one of {', '.join(SUPPORTED)}")
    return facts


@dataclass(frozen=True, slots=True)
class PodRequestsRule:
    """How an assigned pod's in-place resize counts in what a node has requested (component-helpers'
    ``PodResourcesOptions`` as a NodeInfo passes them, per minor): ``Features.pod_requests_rule``."""

    # InPlacePodLevelResourcesVerticalScaling: the pod-level status (``status.resources``,
    # ``status.allocatedResources``) counts as well.
    pod_level_status: bool = False
    # 1.37: the max of the summed spec, actuated and allocated requests, not the sum of per-container maxima.
    max_of_sums: bool = False


# 1.35's rule (and 1.36's with InPlacePodLevelResourcesVerticalScaling off): each container's own max.
PER_CONTAINER_RULE = PodRequestsRule()


@dataclass(frozen=True, slots=True)
class Features:
    """The gates and ungated changes in force: what plugins branch on (upstream ``feature.Features``)."""

    minor: str
    gates: Mapping[str, bool] = field(repr=False)
    changes: frozenset[str] = frozenset()

    @property
    def release(self) -> str:
        """The kube-scheduler release these features are (e.g. ``v1.37.2``)."""
        return RELEASES[self.minor]

    def enabled(self, gate: str) -> bool:
        """The gate's state; a gate the minor does not have is off."""
        return self.gates.get(gate, False)

    @property
    def enable_node_declared_features(self) -> bool:
        return self.enabled("NodeDeclaredFeatures")

    @property
    def enable_dra_extended_resource(self) -> bool:
        return self.enabled("DRAExtendedResource")

    @property
    def balanced_allocation_scores_change(self) -> bool:
        """1.36: BalancedAllocation scores the change in balance the pod makes, not the balance after."""
        return BALANCED_ALLOCATION_SCORES_CHANGE in self.changes

    @property
    def node_name_first(self) -> bool:
        """1.37: NodeName runs before NodeUnschedulable and has a PreFilter."""
        return NODE_NAME_FIRST in self.changes

    @property
    def image_volumes_scored(self) -> bool:
        """1.36: ImageLocality sums the images of image volumes too."""
        return IMAGE_VOLUMES_SCORED in self.changes

    @property
    def image_volumes_counted(self) -> bool:
        """1.37: ...and counts them with the containers in the upper threshold."""
        return IMAGE_VOLUMES_COUNTED in self.changes

    @property
    def preemption_placement_message(self) -> bool:
        """1.37: a successful preemption says where and how many victims, at the end of the FitError."""
        return PREEMPTION_PLACEMENT_MESSAGE in self.changes

    @property
    def dra_post_filter_silent(self) -> bool:
        """1.37: DynamicResources' PostFilter answers a pod without claims with a bare Unschedulable."""
        return DRA_POST_FILTER_SILENT in self.changes

    @property
    def dra_score_allocated_claims(self) -> bool:
        """1.36: DynamicResources' Score reads an allocated claim's own allocation (before, the node's
        results were indexed by the claim's position among all claims, an Error past the last)."""
        return DRA_SCORE_ALLOCATED_CLAIMS in self.changes

    @property
    def dra_filter_timeout_error(self) -> bool:
        """1.36: a Filter whose allocation ran out of DRASchedulerFilterTimeout is an Error naming the
        node (before, UnschedulableAndUnresolvable)."""
        return DRA_FILTER_TIMEOUT_ERROR in self.changes

    @property
    def dra_claim_delete_events(self) -> bool:
        """1.37: DynamicResources registers ResourceClaim deletes too (a deleted allocated claim frees
        its devices)."""
        return DRA_CLAIM_DELETE_EVENTS in self.changes

    @property
    def batch_rescores_last_node(self) -> bool:
        """1.37: opportunistic batching rescores the last chosen node when the pod still fits it (instead
        of giving up), and a pod with a nominated node gets no hint."""
        return BATCH_RESCORES_LAST_NODE in self.changes

    @property
    def gated_pod_nominated(self) -> bool:
        """1.37: a pod added to the queue has its nominatedNodeName recorded even while a PreEnqueue
        plugin holds it back (before, only a pod that entered activeQ was)."""
        return GATED_POD_NOMINATED in self.changes

    @property
    def victim_start_read_once(self) -> bool:
        """1.37: a preemption victim's start time ("now" when it has none) is read once, when the victim
        is made, so unstarted victims of equal priority keep the node's order (before, "now" was read
        at each comparison and they came out last first)."""
        return VICTIM_START_READ_ONCE in self.changes

    @property
    def pod_requests_rule(self) -> PodRequestsRule:
        """How an assigned pod's resize status counts on its node (``PodRequestsRule``)."""
        return PodRequestsRule(
            pod_level_status=self.enabled("InPlacePodLevelResourcesVerticalScaling"),
            max_of_sums=POD_REQUESTS_MAX_OF_SUMS in self.changes,
        )

    @property
    def pre_bind_victims_requeued(self) -> bool:
        """1.36: a preemption victim whose PreBind is still running in this scheduler is not deleted:
        its binding cycle is cancelled and it goes back to the queue (the "in kube-scheduler memory"
        preemption upstream already made of a pod waiting on Permit)."""
        return PRE_BIND_VICTIMS_REQUEUED in self.changes

    @property
    def in_memory_victim_activates(self) -> bool:
        """1.37: when the last victim was preempted in memory (no deletion event will come), the
        preemptor is activated once its preemption is over (before, it waited for another event)."""
        return IN_MEMORY_VICTIM_ACTIVATES in self.changes

    @property
    def hints_count_nominated_pods(self) -> bool:
        """1.36: PodTopologySpread's and InterPodAffinity's pod hints count a pod with a
        ``status.nominatedNodeName`` as they count an assigned one (Filter counts it on its node)."""
        return HINTS_COUNT_NOMINATED_PODS in self.changes

    @property
    def affinity_hints_both_ways(self) -> bool:
        """1.36: InterPodAffinity requeues a pod whose own labels changed, and one that matches the
        anti-affinity of a deleted pod (before, only the pod's own terms were read)."""
        return AFFINITY_HINTS_BOTH_WAYS in self.changes

    @property
    def target_pod_events(self) -> bool:
        """1.37: a pending pod's own update is a ``TargetPod`` event (before, ``UnschedulablePod``, the
        resource of every unscheduled pod), and the plugins register ``AssignedPod`` and ``TargetPod``
        events with a hint each instead of ``Pod`` events whose hint tells the two apart (#135905)."""
        return TARGET_POD_EVENTS in self.changes

    @property
    def anti_affinity_hints_any_term(self) -> bool:
        """1.37: InterPodAffinity's hints take a pod that matches any of a pod's required anti-affinity
        terms as one it conflicts with (before: all of them, the test of affinity)."""
        return ANTI_AFFINITY_HINTS_ANY_TERM in self.changes

    @property
    def node_taint_fallback_removed(self) -> bool:
        """1.37: a plugin registered for Node/Add is no longer also woken by every Node/UpdateNodeTaint
        (the #109437 fallback for preCheck, which queueing hints made moot)."""
        return NODE_TAINT_FALLBACK_REMOVED in self.changes

    @property
    def duplicate_reservation_as_json(self) -> bool:
        """1.37: the API server refuses a claim's second ``reservedFor`` entry for one pod showing the
        entry as JSON (before, its uid): what a dry run's claim writes answer (``simulate``)."""
        return DUPLICATE_RESERVATION_AS_JSON in self.changes

    @property
    def dra_api(self) -> DRAAPIFacts:
        """What this minor's ``resource.k8s.io/v1`` lets the DRA parsers read (``DRAAPIFacts``)."""
        return DRA_API[self.minor]

    @property
    def declared_features_inferred(self) -> frozenset[str]:
        """The node-declared features a pod's spec can require at this minor."""
        return _DECLARED_FEATURES_INFERRED[self.minor]

    # DRA's structured allocator (the block ``_DRA_ALLOCATOR_FEATURES`` below).

    @property
    def dra_device_taint_rules(self) -> bool:
        """Whether DeviceTaintRules' taints go onto the slices' devices (the ResourceSlice tracker's
        ``EnableDeviceTaints``): at 1.37 only, where DRADeviceTaintRules is GA."""
        return self.enabled("DRADeviceTaints") and self.enabled("DRADeviceTaintRules")

    @property
    def dra_allocator_release(self) -> str:
        """The ``k8s.io/dynamic-resource-allocation`` release this minor's kube-scheduler runs."""
        return DRA_ALLOCATOR_RELEASES[self.minor]

    @property
    def dra_allocator_features(self) -> frozenset[str]:
        """``AllocatorFeatures``: the ``structured.Features`` fields (snake case) the gates turn on."""
        return frozenset(
            name
            for name, gates in _DRA_ALLOCATOR_FEATURES[self.minor].items()
            if all(self.enabled(gate) for gate in gates)
        )


# --- DRA's structured allocator (docs/dra-allocator.md) ------------------------------------------------
# Kept apart from the gate tables above, so that edits there and here do not meet.

# The ``k8s.io/dynamic-resource-allocation`` release each minor vendors (staging, same patch).
DRA_ALLOCATOR_RELEASES: Mapping[str, str] = {"1.35": "v0.35.4", "1.36": "v0.36.3", "1.37": "v0.37.2"}

# ``AllocatorFeatures`` (pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go) per minor:
# each ``structured.Features`` field it sets and the gates that must all be on for it (read through
# ``feature.NewSchedulerFeaturesFromGates``). 1.36 has DRAListTypeAttributes but does not pass it on.
_DRA_ALLOCATOR_1_35: Mapping[str, tuple[str, ...]] = {
    "admin_access": ("DRAAdminAccess",),
    "prioritized_list": ("DRAPrioritizedList",),
    "partitionable_devices": ("DRAPartitionableDevices",),
    "device_taints": ("DRADeviceTaints",),
    "device_binding_and_status": ("DRADeviceBindingConditions", "DRAResourceClaimDeviceStatus"),
    "consumable_capacity": ("DRAConsumableCapacity",),
}
_DRA_ALLOCATOR_FEATURES: Mapping[str, Mapping[str, tuple[str, ...]]] = {
    "1.35": _DRA_ALLOCATOR_1_35,
    "1.36": _DRA_ALLOCATOR_1_35,
    "1.37": {
        **_DRA_ALLOCATOR_1_35,
        "fractional_capacity_range": ("DRAFractionalCapacityRange",),
        "list_type_attributes": ("DRAListTypeAttributes",),
        "optional_node_operations": ("DRAOptionalNodeOperations",),
        "derived_attributes": ("DRADerivedAttributes",),
        "compatibility_groups": ("DRADeviceCompatibilityGroups",),
    },
}


def supported_minor(text: str) -> str:
    """``1.37``, ``v1.37`` or ``v1.37.2`` as a supported minor; raises ``ValueError`` naming the supported."""
    parts = text.strip().removeprefix("v").split(".")
    minor = ".".join(parts[:2])
    if len(parts) < 2 or minor not in RELEASES or not all(p.isdigit() for p in parts[:3]):
        raise ValueError(
            f"unsupported Kubernetes version {text!r}: spread-scheduler decides as kube-scheduler "
            + ", ".join(f"{m} ({r})" for m, r in RELEASES.items())
        )
    return minor


def minor_for_server(major: str, minor: str) -> str:
    """The minor to decide as for an API server's ``/version`` (``major``, ``minor``; ``"37+"`` as some
    providers write it): its own, or the newest we have when it is one minor newer (the version skew
    policy lets kube-scheduler be one minor older than the API server, never newer). Raises
    ``ValueError`` naming the supported minors otherwise."""
    digits = "".join(ch for ch in minor if ch.isdigit())
    server = f"{major.strip()}.{digits}"
    if server in RELEASES:
        return server
    newest_major, newest_minor = NEWEST.split(".")
    if major.strip() == newest_major and digits and int(digits) == int(newest_minor) + 1:
        return NEWEST
    raise ValueError(
        f"the API server is Kubernetes {major}.{minor}: spread-scheduler decides as kube-scheduler "
        + ", ".join(f"{m} ({r})" for m, r in RELEASES.items())
        + " and may be at most one minor older than the API server, never newer"
    )


def _parse_bool(text: str) -> bool | None:
    """Go's ``strconv.ParseBool``."""
    if text in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if text in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    return None


def parse_feature_gates(value: str) -> dict[str, bool]:
    """``key1=value1,key2=value2`` as component-base's ``featureGate.Set`` splits it (no gate is looked up)."""
    out: dict[str, bool] = {}
    for item in value.split(","):
        if not item:
            continue
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep:
            raise FeatureGateError(f"missing bool value for {key}")
        raw = raw.strip()
        parsed = _parse_bool(raw)
        if parsed is None:
            raise FeatureGateError(
                f'invalid value of {key}={raw}, err: strconv.ParseBool: parsing "{raw}": invalid syntax'
            )
        out[key] = parsed
    return out


def _aggregate(errors: list[str]) -> str:
    """apimachinery's ``utilerrors.NewAggregate(...).Error()``."""
    return errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"


def features_at(minor: str, overrides: Mapping[str, bool] | None = None) -> Features:
    """The features of ``minor`` with ``overrides`` set, checked as kube-scheduler checks them.

    component-base first (``unsafeSetFromMap``: an unknown gate stops at once; a locked gate set away
    from its default; then the dependencies of every enabled gate), then ours: a gate the scheduler
    reads that we implement only in its default state.
    """
    index = SUPPORTED.index(minor)
    specs: dict[str, _G] = {}
    for name, row in _SPECS.items():
        spec = row[index]
        if spec is not None:
            specs[name] = spec
    asked = dict(overrides or {})
    errors: list[str] = []
    for name, value in asked.items():
        spec = specs.get(name)
        if spec is None:
            raise FeatureGateError(f"unrecognized feature gate: {name}")
        if spec.locked and spec.default != value:
            errors.append(
                f"cannot set feature gate {name} to {str(value).lower()}, "
                f"feature is locked to {str(spec.default).lower()}"
            )
    if errors:
        raise FeatureGateError(_aggregate(errors))
    gates = {name: asked.get(name, spec.default) for name, spec in specs.items()}
    for name, deps in sorted(_DEPENDENCIES[minor].items()):
        if not gates.get(name):
            continue
        off = [dep for dep in deps.split() if not gates.get(dep, False)]
        if off:
            errors.append(f"{name} is enabled, but depends on features that are disabled: [{' '.join(off)}]")
    if errors:
        raise FeatureGateError(_aggregate(errors))
    for name, value in sorted(asked.items()):
        if name in _SCHEDULER_READS and value != specs[name].default and name not in _SETTABLE[minor]:
            settable = ", ".join(sorted(_SETTABLE[minor])) or "none"
            raise FeatureGateError(
                f"feature gate {name}={str(value).lower()}: kube-scheduler {RELEASES[minor]} reads it, and "
                f"spread-scheduler decides only with its default ({str(specs[name].default).lower()}); the gates "
                f"it can set away from their defaults at {minor}: {settable}"
            )
    return Features(minor, gates, _CHANGES[minor])


def features_from_flags(kube_version: str, feature_gates: str = "") -> Features:
    """``--kube-version`` and ``--feature-gates`` as one value; raises ``ValueError`` with the reason."""
    return features_at(supported_minor(kube_version), parse_feature_gates(feature_gates))


DEFAULT_FEATURES = features_at(OLDEST)
"""1.35's defaults: what every caller that names no version decides as (``run``, until /version)."""
