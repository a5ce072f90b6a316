"""How each extension point runs its plugins (``pkg/scheduler/framework/runtime/framework.go``).

Pure: the only awaited calls are the Bind/PreBind plugins, and they reach the API solely through
the ``Binder`` they were given.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from itertools import compress, repeat
from operator import attrgetter, is_
from typing import cast

from scheduler.api.objects import NodeName, Pod
from scheduler.features import DEFAULT_FEATURES, Features
from scheduler.framework import signers
from scheduler.framework.batch import OpportunisticBatch
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, EventResource
from scheduler.framework.extender import EXTENDER_NAME, Extender
from scheduler.framework.interface import (
    BatchFilter,
    BatchScore,
    BindPlugin,
    EnqueueExtensions,
    FilterPlugin,
    Handle,
    NominatingInfo,
    NominatingMode,
    PermitPlugin,
    Plugin,
    PodSigner,
    PostBindPlugin,
    PostFilterPlugin,
    PreBindPlugin,
    PreBindPreFlightPlugin,
    PreEnqueuePlugin,
    PreFilterExtensions,
    PreFilterPlugin,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScoreExtensions,
    ScorePlugin,
    SignPlugin,
)
from scheduler.framework.node_results import NodeResults
from scheduler.framework.pods_in_pre_bind import PodInPreBind
from scheduler.framework.status import REJECTED_CODES, Code, Status, StatusError
from scheduler.framework.types import MAX_NODE_SCORE, MIN_NODE_SCORE, Diagnosis, NodeInfo, PreFilterResult

__all__ = ["EXTENSION_POINTS", "Framework", "NodeFilter", "PluginObserver", "PluginScores"]

PluginObserver = Callable[[str, str, str, float], None]
NodeFilter = Callable[[NodeInfo], "Status | None"]
"""``(plugin, extension point, status code name, seconds)``: for sampled cycles only."""

# Each extension point by its KubeSchedulerConfiguration name (``plugins.<point>``), and the interface a
# plugin enabled there must implement (upstream: frameworkImpl.getExtensionPoints). The one list of them:
# the config's parsing and its strict field tree read EXTENSION_POINTS.
_POINT_TYPES: dict[str, type] = {
    "queueSort": QueueSortPlugin,
    "preEnqueue": PreEnqueuePlugin,
    "preFilter": PreFilterPlugin,
    "filter": FilterPlugin,
    "postFilter": PostFilterPlugin,
    "preScore": PreScorePlugin,
    "score": ScorePlugin,
    "reserve": ReservePlugin,
    "permit": PermitPlugin,
    "preBind": PreBindPlugin,
    "bind": BindPlugin,
    "postBind": PostBindPlugin,
}
EXTENSION_POINTS = tuple(_POINT_TYPES)


def implements(plugin: object, point: str) -> bool:
    return isinstance(plugin, _POINT_TYPES[point])


@dataclass(slots=True)
class PluginScores:
    """One Score plugin's raw and normalized scores, aligned with the scored node list."""

    plugin: str
    weight: int
    raw: list[int]
    normalized: list[int] = field(default_factory=list)


class Framework:
    """One profile: its plugins per extension point, in configured order, with score weights."""

    def __init__(
        self,
        profile_name: str,
        plugins: Mapping[str, Plugin],
        points: Mapping[str, Sequence[str]],
        weights: Mapping[str, int],
        handle: Handle,
        percentage_of_nodes_to_score: int | None = None,
        extenders: Sequence[Extender] = (),
        features: Features = DEFAULT_FEATURES,
    ) -> None:
        self.profile_name = profile_name
        self.features = features
        self.extenders: tuple[Extender, ...] = tuple(extenders)
        self.handle = handle
        self.plugins = dict(plugins)
        self.percentage_of_nodes_to_score = percentage_of_nodes_to_score
        self.points = {p: list(points.get(p, ())) for p in EXTENSION_POINTS}
        self.weights = {name: weights.get(name, 1) or 1 for name in self.points["score"]}
        self.queue_sort: QueueSortPlugin | None = next(
            (p for p in self._of("queueSort") if isinstance(p, QueueSortPlugin)), None
        )
        self.pre_enqueue = [p for p in self._of("preEnqueue") if isinstance(p, PreEnqueuePlugin)]
        self.pre_filter = [p for p in self._of("preFilter") if isinstance(p, PreFilterPlugin)]
        self.filter = [p for p in self._of("filter") if isinstance(p, FilterPlugin)]
        self.post_filter = [p for p in self._of("postFilter") if isinstance(p, PostFilterPlugin)]
        self.pre_score = [p for p in self._of("preScore") if isinstance(p, PreScorePlugin)]
        self.score = [p for p in self._of("score") if isinstance(p, ScorePlugin)]
        self.reserve = [p for p in self._of("reserve") if isinstance(p, ReservePlugin)]
        self.permit = [p for p in self._of("permit") if isinstance(p, PermitPlugin)]
        self.pre_bind = [p for p in self._of("preBind") if isinstance(p, PreBindPlugin)]
        self.bind = [p for p in self._of("bind") if isinstance(p, BindPlugin)]
        self.post_bind = [p for p in self._of("postBind") if isinstance(p, PostBindPlugin)]
        self.plugin_observer: PluginObserver | None = None
        # Results of signed plugins are reused per pod signature (scheduler.framework.node_results).
        # Only a leading run of signed Filter plugins qualifies: the first rejecting plugin must stay
        # the one reported.
        leading = 0
        while leading < len(self.filter) and isinstance(self.filter[leading], SignPlugin):
            leading += 1
        self._signed_filters, self._unsigned_filters = self.filter[:leading], self.filter[leading:]
        self._signed_scores = frozenset(p.NAME for p in self.score if isinstance(p, SignPlugin))
        # Decided once: isinstance against a runtime-checkable Protocol walks its members every time
        # (a dozen such checks a cycle were 5 % of the cycle's time).
        self._batch_scores = frozenset(p.NAME for p in self.score if isinstance(p, BatchScore))
        self._normalizers = frozenset(p.NAME for p in self.score if isinstance(p, ScoreExtensions))
        reused = {p.NAME for p in self._signed_filters} | self._signed_scores
        self._signers = [p for p in self.plugins.values() if isinstance(p, SignPlugin) and p.NAME in reused]
        self.node_results = NodeResults()
        self._last_signed: tuple[Pod | None, Hashable | None] = (None, None)
        self.reuse_node_results = True  # off only in tests that compare both ways
        self.batchable_plugins, self.enable_signatures = self._compute_batchable_plugins()
        # Opportunistic batching's state between this profile's cycles; set by whoever runs
        # consecutive cycles with a clock (``ScheduleOne``). None: every pod is computed afresh.
        self.batch: OpportunisticBatch | None = None
        # Filter passes that counted nominated pods on a node (tests and the differential runner).
        self.nominated_pod_passes = 0
        # Plugins that run the other plugins (preemption's dry runs) reach them through the handle.
        handle.framework = self

    def _compute_batchable_plugins(self) -> tuple[list[PodSigner], bool]:
        """``computeBatchablePlugins``: the PreFilter, Filter, PreScore and Score plugins (each once,
        in that order), and whether they all sign pods and no extender is configured."""
        enabled = not self.extenders
        signing: list[PodSigner] = []
        seen: set[str] = set()
        for plugin in (*self.pre_filter, *self.filter, *self.pre_score, *self.score):
            if plugin.NAME in seen:
                continue
            seen.add(plugin.NAME)
            if isinstance(plugin, PodSigner):
                signing.append(plugin)
            else:
                enabled = False
        return signing, enabled

    def sign_pod(self, pod: Pod) -> bytes | None:
        """``SignPod``: the pod's batching signature, or None when some plugin cannot sign it (or the
        profile cannot sign at all: extenders, or a plugin without ``sign_fragments``)."""
        if not self.enable_signatures:
            return None
        fragments: list[signers.SignFragment] = []
        for plugin in self.batchable_plugins:
            signed, status = plugin.sign_fragments(pod)
            if status is not None and not status.is_success():
                return None
            fragments.extend(signed)
        return signers.sign(fragments, pod.scheduler_name)

    def _of(self, point: str) -> list[Plugin]:
        return [self.plugins[name] for name in self.points[point]]

    def has_score_plugins(self) -> bool:
        return bool(self.score)

    def enqueue_extensions(self) -> dict[str, list[ClusterEventWithHint]]:
        """Registered events per plugin name, for every plugin that can reject a pod."""
        out: dict[str, list[ClusterEventWithHint]] = {}
        for name, plugin in self.plugins.items():
            if isinstance(plugin, EnqueueExtensions):
                out[name] = plugin.events_to_register()
        if self.extenders:
            # Extenders have no hints: a pod they rejected is retried on any cluster event (#122019).
            out[EXTENDER_NAME] = [ClusterEventWithHint(ClusterEvent(EventResource.WILDCARD, ActionType.ALL))]
        return out

    def has_extender_filters_or_scoring(self) -> bool:
        """Whether Filter must look for more than one feasible node (``hasExtenderFilters || hasScoring``)."""
        return self.has_score_plugins() or any(e.is_filter() or e.is_prioritizer() for e in self.extenders)

    # -- PreEnqueue ---------------------------------------------------------------------------

    def run_pre_enqueue_plugins(self, pod: Pod) -> Status | None:
        for plugin in self.pre_enqueue:
            status = plugin.pre_enqueue(pod)
            if status is not None and not status.is_success():
                return status.with_plugin(plugin.NAME)
        return None

    # -- PreFilter ----------------------------------------------------------------------------

    def run_pre_filter_plugins(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None, set[str]]:
        """Result (None = all nodes), the rejecting status, and the plugins that narrowed the nodes.

        An Unschedulable PreFilter does not stop the loop (so later plugins still fill the state,
        issue #119770); UnschedulableAndUnresolvable and Error do. The caller adds the rejecting
        status's own plugin to the diagnosis.
        """
        result: PreFilterResult | None = None
        with_nodes: set[str] = set()
        unschedulable: Status | None = None
        for plugin in self.pre_filter:
            started = time.perf_counter()
            res, status = plugin.pre_filter(state, pod, nodes)
            self.observe(state, plugin.NAME, "PreFilter", status, started)
            if status is not None and status.is_skip():
                state.skip_filter_plugins.add(plugin.NAME)
                continue
            if status is not None and not status.is_success():
                status = status.with_plugin(plugin.NAME)
                if status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                    return None, status, set()
                if status.code is Code.UNSCHEDULABLE:
                    unschedulable = status  # the last one wins, as upstream's returnStatus
                    continue
                return None, Status.as_error(f'running PreFilter plugin "{plugin.NAME}": {status.message()}'), set()
            if res is None or res.all_nodes():
                continue
            with_nodes.add(plugin.NAME)
            result = res if result is None else result.merge(res)
            if not result.node_names:
                names = sorted(with_nodes)
                if len(names) == 1:
                    msg = f"node(s) didn't satisfy plugin {names[0]}"
                else:
                    msg = f"node(s) didn't satisfy plugin(s) [{' '.join(names)}] simultaneously"
                # Like upstream, this status names no plugin; the narrowing plugins are returned instead.
                return result, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (msg,)), with_nodes
        return result, unschedulable, with_nodes

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod: Pod, pod_to_add: Pod, node_info: NodeInfo
    ) -> Status | None:
        """``RunPreFilterExtensionAddPod``: every PreFilter plugin with AddPod (and not skipped)
        counts ``pod_to_add`` on ``node_info`` in ``state``; the first failure is an Error."""
        skip = state.skip_filter_plugins
        for plugin in self.pre_filter:
            if not isinstance(plugin, PreFilterExtensions) or plugin.NAME in skip:
                continue
            status = plugin.add_pod(state, pod, pod_to_add, node_info)
            if status is not None and not status.is_success():
                return Status.as_error(f'running AddPod on PreFilter plugin "{plugin.NAME}": {status.message()}')
        return None

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod: Pod, pod_to_remove: Pod, node_info: NodeInfo
    ) -> Status | None:
        """``RunPreFilterExtensionRemovePod``: every PreFilter plugin with RemovePod (and not skipped)
        forgets ``pod_to_remove`` on ``node_info`` in ``state``; the first failure is an Error."""
        skip = state.skip_filter_plugins
        for plugin in self.pre_filter:
            if not isinstance(plugin, PreFilterExtensions) or plugin.NAME in skip:
                continue
            status = plugin.remove_pod(state, pod, pod_to_remove, node_info)
            if status is not None and not status.is_success():
                return Status.as_error(f'running RemovePod on PreFilter plugin "{plugin.NAME}": {status.message()}')
        return None

    # -- Filter -------------------------------------------------------------------------------

    def run_filter_plugins(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """The first non-Success filter decides the node (only that plugin is recorded)."""
        skip = state.skip_filter_plugins
        plugins = [p for p in self.filter if p.NAME not in skip] if skip else self.filter
        return _first_rejection(plugins, state, pod, node_info, self._sampled(state))

    def run_filter_plugins_with_nominated_pods(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """``RunFilterPluginsWithNominatedPods``: Filter as if the pods nominated to the node with at
        least the pod's priority were there (the pod must not take room opened for them), then, if
        any were and the node passed, again without them (they may still go elsewhere, and
        affinity may need them absent). The node fits only if both pass."""
        return self._with_nominated_pods(state, pod, node_info, partial(self.run_filter_plugins, state, pod))

    def _with_nominated_pods(
        self, state: CycleState, pod: Pod, node_info: NodeInfo, without: NodeFilter
    ) -> Status | None:
        """The two passes; ``without`` is the plain Filter of this cycle (the second pass)."""
        added = self._add_ge_nominated_pods(state, pod, node_info)
        if added is None:
            return without(node_info)
        if isinstance(added, Status):
            return added
        self.nominated_pod_passes += 1
        status = self.run_filter_plugins(added[0], pod, added[1])
        if status is not None:
            return status
        return without(node_info)

    def _add_ge_nominated_pods(
        self, state: CycleState, pod: Pod, node_info: NodeInfo
    ) -> tuple[CycleState, NodeInfo] | Status | None:
        """``addGENominatedPods``: a copy of the state and the node with the nominated pods of equal
        or higher priority added (the pod itself excepted); None when there is none; an Error when
        an AddPod failed."""
        nominator = self.handle.nominator
        if nominator is None:
            return None
        nominated = nominator.nominated_pods_for_node(node_info.name)
        if not nominated:
            return None
        info_out: NodeInfo | None = None
        state_out = state
        for other in nominated:
            if other.priority < pod.priority or other.key == pod.key:
                continue
            if info_out is None:
                info_out, state_out = node_info.snapshot(), state.clone()
            info_out.add_pod(other)
            status = self.run_pre_filter_extension_add_pod(state_out, pod, other, info_out)
            if status is not None:
                return status
        return None if info_out is None else (state_out, info_out)

    def _sampled(self, state: CycleState) -> PluginObserver | None:
        """The observer when this cycle's plugin calls are timed (a sample of cycles), else None."""
        return self.plugin_observer if state.record_plugin_metrics else None

    def node_filter(self, state: CycleState, pod: Pod, node_count: int) -> NodeFilter:
        """``run_filter_plugins_with_nominated_pods`` for one cycle. Without nominated pods anywhere
        (checked once per cycle), it is ``run_filter_plugins`` answering signed plugins from earlier
        pods' results on nodes that have not changed since; a node with nominated pods to count runs
        its first pass in full (a copy of the node, never remembered) and its second one as
        any other node. A sampled cycle times the calls it makes (a reused result is no plugin
        call, so it is not observed)."""
        return self._node_filter(state, pod, self._remembered_filters(state, pod, node_count))

    def _node_filter(self, state: CycleState, pod: Pod, plan: _FilterPlan | None) -> NodeFilter:
        without = self._node_filter_without_nominated_pods(state, pod, plan)
        if not self._any_nominated_pods():
            return without
        return partial(self._with_nominated_pods, state, pod, without=without)

    def _any_nominated_pods(self) -> bool:
        nominator = self.handle.nominator
        return nominator is not None and nominator.has_nominated_pods()

    def _node_filter_without_nominated_pods(self, state: CycleState, pod: Pod, plan: _FilterPlan | None) -> NodeFilter:
        if plan is None:
            return partial(self.run_filter_plugins, state, pod)
        table, signed, unsigned, observe = plan.table, plan.signed, plan.unsigned, plan.observe
        last_name, last_filter = plan.last_name, plan.last_filter

        def run(info: NodeInfo) -> Status | None:
            status: Status | None = table.get(info.generation, _UNKNOWN)  # type: ignore[assignment]
            if status is _UNKNOWN:
                status = _first_rejection(signed, state, pod, info, observe)
                if status is None or status.code is not Code.ERROR:
                    table[info.generation] = status
            if status is not None or not unsigned:
                return status
            if last_filter is None:
                return _first_rejection(unsigned, state, pod, info, observe)
            status = last_filter(info)
            if status is None or status.code is Code.SUCCESS:
                return None
            return _filter_verdict(last_name, status)

        return run

    def _remembered_filters(self, state: CycleState, pod: Pod, node_count: int) -> _FilterPlan | None:
        """How this cycle's Filter reuses earlier results: None when it cannot (no signed plugin, an
        unhashable signature), and every node runs ``run_filter_plugins``."""
        if not self._signed_filters:
            return None
        signature = self._signature(pod) if self.reuse_node_results else None
        if signature is None:
            return None
        skip = state.skip_filter_plugins
        signed = [p for p in self._signed_filters if p.NAME not in skip]
        unsigned = [p for p in self._unsigned_filters if p.NAME not in skip]
        table = self.node_results.table(("Filter", frozenset(skip), signature), node_count)
        observe = self._sampled(state)
        last_name, last_filter = "", None
        if len(unsigned) == 1 and observe is None:
            # The default profile's case: one unsigned plugin (PodTopologySpread) after the signed
            # ones, called directly with its cycle state bound once (this runs for every examined
            # node of every cycle).
            last = unsigned[0]
            last_name = last.NAME
            last_filter = (
                last.filter_for(state, pod) if isinstance(last, BatchFilter) else partial(last.filter, state, pod)
            )
        return _FilterPlan(table, signed, unsigned, observe, last_name, last_filter)

    def filter_in_turn(
        self,
        state: CycleState,
        pod: Pod,
        node_count: int,
        nodes: Iterable[NodeInfo],
        to_find: int,
        feasible: list[NodeInfo],
        diagnosis: Diagnosis,
    ) -> tuple[int, Status | None]:
        """Filter ``nodes`` in their order until ``to_find`` fit (upstream's ``findNodesThatPassFilters``
        on one goroutine): the feasible ones go to ``feasible``, each rejected node's status to the
        diagnosis (a distinct status object once to its plugins). Returns how many nodes were examined
        and the first Error, which ends the search.

        In the default profile's case (no nominated pods, signed results reused, PodTopologySpread the
        only plugin to call, an unsampled cycle) the loop is the node filter written out, without a
        call per node for it: at 2,000 nodes a cycle examines about 1,200 nodes."""
        plan = self._remembered_filters(state, pod, node_count)
        run = None
        if plan is None or plan.last_filter is None or self._any_nominated_pods():
            run = self._node_filter(state, pod, plan)
        else:
            table, signed, last_name, last_filter = plan.table, plan.signed, plan.last_name, plan.last_filter
            remembered = table.get
        statuses = diagnosis.node_to_status
        recorded: Status | None = None
        processed = 0
        for info in nodes:
            processed += 1
            if run is not None:
                status = run(info)
            else:  # the node filter, written out
                status = remembered(info.generation, _UNKNOWN)  # type: ignore[assignment]  # (no cast(): a call per node)
                if status is _UNKNOWN:
                    status = _first_rejection(signed, state, pod, info, None)
                    if status is None or status.code is not Code.ERROR:
                        table[info.generation] = status
                if status is None:
                    status = last_filter(info)
                    if status is not None:
                        if status.code is Code.SUCCESS:
                            status = None
                        elif status.plugin != last_name or status.code not in REJECTED_CODES:
                            status = _filter_verdict(last_name, status)
            if status is None:
                feasible.append(info)
                if len(feasible) >= to_find:
                    break
                continue
            if status.code is Code.ERROR:
                return processed, status
            statuses[info.name] = status
            if status is not recorded:  # plugins reuse status objects; adding one twice is a no-op
                diagnosis.add_plugin_status(status)
                recorded = status
        return processed, None

    def _signature(self, pod: Pod) -> Hashable | None:
        """The signed plugins' fragments for ``pod`` (upstream's ``SignPod``), or None if unhashable.

        Filter and Score both ask within one cycle; pods are immutable, so the last answer is kept.
        """
        if self._last_signed[0] is pod:
            return self._last_signed[1]
        signature: Hashable | None = tuple(p.sign_pod(pod) for p in self._signers)
        try:
            hash(signature)
        except TypeError:
            signature = None
        self._last_signed = (pod, signature)
        return signature

    def observe(self, state: CycleState, plugin: str, point: str, status: Status | None, started: float) -> None:
        """Record one plugin call of a sampled cycle (PreFilter, PreScore, Score, NormalizeScore)."""
        if state.record_plugin_metrics and self.plugin_observer is not None:
            self.plugin_observer(plugin, point, _code(status), time.perf_counter() - started)

    # -- Score --------------------------------------------------------------------------------

    def run_pre_score_plugins(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        for plugin in self.pre_score:
            started = time.perf_counter()
            status = plugin.pre_score(state, pod, nodes)
            self.observe(state, plugin.NAME, "PreScore", status, started)
            if status is None or status.is_success():
                continue
            if status.is_skip():
                state.skip_score_plugins.add(plugin.NAME)
                continue
            return Status.as_error(f'running PreScore plugin "{plugin.NAME}": {status.message()}')
        return None

    def run_score_plugins(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[list[PluginScores], Status | None]:
        """Raw, normalized and range-checked scores of every non-skipped Score plugin.

        Three passes as upstream's ``RunScorePlugins``: every plugin scores, then every plugin
        normalizes, then the range check while applying weights; the first failing pass decides
        the error.
        """
        out: list[PluginScores] = []
        plugins = [p for p in self.score if p.NAME not in state.skip_score_plugins]
        remembered = self._remembered_scores(state, pod, nodes, plugins)
        for plugin in plugins:
            raw = remembered.get(plugin.NAME)
            try:
                if raw is None:
                    started = time.perf_counter()
                    if plugin.NAME in self._batch_scores:
                        raw = cast(BatchScore, plugin).score_nodes(state, pod, nodes)
                    else:
                        raw = [plugin.score(state, pod, n) for n in nodes]
                    self.observe(state, plugin.NAME, "Score", None, started)
            except StatusError as exc:
                return out, Status.as_error(f'running Score plugins: plugin "{plugin.NAME}" failed with: {exc}')
            out.append(PluginScores(plugin.NAME, self.weights[plugin.NAME], raw, list(raw)))
        return out, self._normalize(state, pod, nodes, plugins, out)

    def run_raw_score_plugins(
        self, state: CycleState, pod: Pod, node_info: NodeInfo
    ) -> tuple[dict[str, int], Status | None]:
        """``RunRawScorePlugins``: one node's raw score per non-skipped Score plugin, not normalized
        (1.37 batching rescores the node it placed the last pod on)."""
        out: dict[str, int] = {}
        for plugin in self.score:
            if plugin.NAME in state.skip_score_plugins:
                continue
            try:
                out[plugin.NAME] = plugin.score(state, pod, node_info)
            except StatusError as exc:
                return out, Status.as_error(f'plugin "{plugin.NAME}" failed with: {exc}')
        return out, None

    def normalize_scores(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo], raw: Sequence[Mapping[str, int]]
    ) -> tuple[list[PluginScores], Status | None]:
        """``NormalizeScores``: raw scores kept from earlier (``raw[i]`` of ``nodes[i]``, by plugin; a
        missing one counts 0) normalized and range-checked again over ``nodes``."""
        plugins = [p for p in self.score if p.NAME not in state.skip_score_plugins]
        out = []
        for plugin in plugins:
            column = [row.get(plugin.NAME, 0) for row in raw]
            out.append(PluginScores(plugin.NAME, self.weights[plugin.NAME], column, list(column)))
        return out, self._normalize(state, pod, nodes, plugins, out)

    def _normalize(
        self,
        state: CycleState,
        pod: Pod,
        nodes: Sequence[NodeInfo],
        plugins: Sequence[ScorePlugin],
        out: list[PluginScores],
    ) -> Status | None:
        """Every plugin normalizes its column of ``out`` in place, then the range check."""
        for plugin, scores in zip(plugins, out, strict=True):
            if plugin.NAME in self._normalizers:
                started = time.perf_counter()
                status = cast(ScoreExtensions, plugin).normalize_score(state, pod, scores.normalized, nodes)
                self.observe(state, plugin.NAME, "NormalizeScore", status, started)
                if status is not None and not status.is_success():
                    return Status.as_error(
                        f'running Normalize on Score plugins: plugin "{plugin.NAME}" failed with: {status.message()}'
                    )
        for scores in out:
            normalized = scores.normalized
            # max/min first: one pass in C over every scored node; the loop names the first bad value.
            if normalized and (max(normalized) > MAX_NODE_SCORE or min(normalized) < MIN_NODE_SCORE):
                value = next(v for v in normalized if v > MAX_NODE_SCORE or v < MIN_NODE_SCORE)
                return Status.as_error(
                    f'applying score defaultWeights on Score plugins: plugin "{scores.plugin}" returns an '
                    f"invalid score {value}, it should in the range of [{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] "
                    "after normalizing"
                )
        return None

    def _remembered_scores(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo], plugins: Sequence[ScorePlugin]
    ) -> dict[str, list[int]]:
        """Raw scores of the signed Score plugins, reused on unchanged nodes; {} when nothing can
        be reused (a sampled cycle, an unsignable pod) or a plugin failed (the caller's own pass then
        reports the failure plugin by plugin, as always)."""
        signed = [p for p in plugins if p.NAME in self._signed_scores]
        if not signed:
            return {}
        signature = self._signature(pod) if self.reuse_node_results else None
        if signature is None:
            return {}
        snapshot = self.handle.snapshot
        node_count = len(snapshot.node_infos()) if snapshot is not None else len(nodes)
        table = self.node_results.table(("Score", frozenset(state.skip_score_plugins), signature), node_count)
        observe = self._sampled(state)
        try:
            rows = cast(list[tuple[int, ...] | None], list(map(table.get, map(_GENERATION, nodes), repeat(None))))
            for i in list(compress(range(len(rows)), map(is_, rows, repeat(None)))):  # nodes changed since
                info = nodes[i]
                row = tuple(_score(p, state, pod, info, observe) for p in signed)
                table[info.generation] = row
                rows[i] = row
        except StatusError:
            return {}
        filled = cast(list[tuple[int, ...]], rows)
        columns = list(zip(*filled, strict=True)) if filled else [() for _ in signed]
        return {p.NAME: list(column) for p, column in zip(signed, columns, strict=True)}

    # -- PostFilter --------------------------------------------------------------------------

    def run_post_filter_plugins(
        self, state: CycleState, pod: Pod, statuses: Mapping[NodeName, Status]
    ) -> tuple[NominatingInfo | None, Status]:
        """``RunPostFilterPlugins``: the first Success, UnschedulableAndUnresolvable or Error answers;
        otherwise every plugin's reasons, joined, under the first plugin that rejected, with the last
        nomination that was not a Noop.

        The message of the returned status becomes the FitError's ``PostFilterMsg``; the nomination
        goes to the failure handler (None: Noop).
        """
        result: NominatingInfo | None = None
        reasons: list[str] = []
        rejector = ""
        for plugin in self.post_filter:
            nominating, status = plugin.post_filter(state, pod, statuses)
            if status.is_success() or status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return nominating, status.with_plugin(plugin.NAME)
            if not status.is_rejected():
                return None, Status.as_error(status.message()).with_plugin(plugin.NAME)
            if nominating is not None and nominating.mode is not NominatingMode.NOOP:
                result = nominating
            reasons.extend(status.reasons)
            rejector = rejector or plugin.NAME
        return result, Status(Code.UNSCHEDULABLE, tuple(reasons), rejector)

    # -- Reserve / Permit ---------------------------------------------------------------------

    def run_reserve_plugins_reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        for plugin in self.reserve:
            status = plugin.reserve(state, pod, node_name)
            if status is not None and not status.is_success():
                if status.is_rejected():
                    return status.with_plugin(plugin.NAME)
                return Status.as_error(f'running Reserve plugin "{plugin.NAME}": {status.message()}')
        return None

    def run_reserve_plugins_unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        for plugin in reversed(self.reserve):
            plugin.unreserve(state, pod, node_name)

    def run_permit_plugins(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """No plugin of ours waits, so Wait is refused rather than half supported."""
        for plugin in self.permit:
            status, _timeout = plugin.permit(state, pod, node_name)
            if status is None or status.is_success():
                continue
            if status.is_rejected():
                return status.with_plugin(plugin.NAME)
            return Status.as_error(f'running Permit plugin "{plugin.NAME}": {status.message()}')
        return None

    # -- Binding cycle ------------------------------------------------------------------------

    def run_pre_bind_pre_flights(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        """Success when some PreBind plugin has work for the pod, Skip when none has, or the first error
        (upstream's ``RunPreBindPreFlights``)."""
        result = Status(Code.SKIP)
        for plugin in self.pre_bind:
            status = (
                plugin.pre_bind_pre_flight(state, pod, node_name)
                if isinstance(plugin, PreBindPreFlightPlugin)
                else None
            )
            if status is None or status.is_success():
                result = Status(Code.SUCCESS)
            elif not status.is_skip():
                return Status.as_error(f'running PreBindPreFlight "{plugin.NAME}": {status.message()}')
        return result

    async def run_pre_bind_plugins(
        self, state: CycleState, pod: Pod, node_name: str, in_pre_bind: PodInPreBind | None = None
    ) -> Status | None:
        """``in_pre_bind``: the pod's entry among the pods in PreBind. When a preemption cancels it, the
        running plugin's await is cancelled and the plugin fails with the preemption's cause (upstream
        puts the context's cause in place of ``context canceled``)."""
        for plugin in self.pre_bind:
            try:
                status = await plugin.pre_bind(state, pod, node_name)
            except asyncio.CancelledError:
                if in_pre_bind is None or not in_pre_bind.canceled:
                    raise
                task = asyncio.current_task()
                if task is not None:
                    task.uncancel()  # ours: the binding cycle goes on to fail the pod
                return Status.as_error(f'running PreBind plugin "{plugin.NAME}": {in_pre_bind.cause}')
            if status is not None and not status.is_success() and not status.is_skip():
                return Status.as_error(f'running PreBind plugin "{plugin.NAME}": {status.message()}')
        return None

    async def run_bind_plugins(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        for plugin in self.bind:
            status = await plugin.bind(state, pod, node_name)
            if status is not None and status.is_skip():
                continue
            if status is not None and not status.is_success():
                return Status.as_error(f'running Bind plugin "{plugin.NAME}": {status.message()}')
            return Status(Code.SUCCESS)
        return Status(Code.SKIP)

    def run_post_bind_plugins(self, state: CycleState, pod: Pod, node_name: str) -> None:
        for plugin in self.post_bind:
            plugin.post_bind(state, pod, node_name)


@dataclass(frozen=True, slots=True)
class _FilterPlan:
    """One cycle's reuse of signed Filter results: the table, the plugins to run on a miss, the
    unsigned ones, the sampled cycle's observer, and the single unsigned plugin's bound filter."""

    table: dict[int, object]
    signed: list[FilterPlugin]
    unsigned: list[FilterPlugin]
    observe: PluginObserver | None
    last_name: str
    last_filter: Callable[[NodeInfo], Status | None] | None


# A signed result not computed yet for a node's generation (None is a result: the node fits).
_UNKNOWN: object = object()
_GENERATION = attrgetter("generation")


def _code(status: Status | None) -> str:
    return "Success" if status is None else str(status.code)


def _first_rejection(
    plugins: Sequence[FilterPlugin], state: CycleState, pod: Pod, info: NodeInfo, observe: PluginObserver | None
) -> Status | None:
    """``run_filter_plugins`` over ``plugins`` (skipped ones already left out), each call timed
    when ``observe`` is given."""
    for plugin in plugins:
        if observe is None:
            status = plugin.filter(state, pod, info)
        else:
            started = time.perf_counter()
            status = plugin.filter(state, pod, info)
            observe(plugin.NAME, "Filter", _code(status), time.perf_counter() - started)
        if status is not None and status.code is not Code.SUCCESS:
            return _filter_verdict(plugin.NAME, status)
    return None


def _filter_verdict(plugin: str, status: Status) -> Status:
    """A non-Success Filter status as the node's verdict: rejections name their plugin, anything
    else becomes an Error that does."""
    if not status.is_rejected():
        return Status.as_error(f'running "{plugin}" filter plugin: {status.message()}').with_plugin(plugin)
    return status if status.plugin == plugin else status.with_plugin(plugin)


def _score(plugin: ScorePlugin, state: CycleState, pod: Pod, info: NodeInfo, observe: PluginObserver | None) -> int:
    """One Score call, timed when ``observe`` is given (a remembered score is no call)."""
    if observe is None:
        return plugin.score(state, pod, info)
    started = time.perf_counter()
    value = plugin.score(state, pod, info)
    observe(plugin.NAME, "Score", "Success", time.perf_counter() - started)
    return value
