"""Pods nominated to nodes (upstream ``pkg/scheduler/backend/queue/nominator.go``). Pure.

A pending pod with ``status.nominatedNodeName`` (set by a preemption, ours or by
another scheduler before) waits for room on that node; Filter counts it there for every pod of no
higher priority (``Framework.run_filter_plugins_with_nominated_pods``). The queue feeds this from
its events and the failure handler from a PostFilter's ``NominatingInfo``; the pod leaves when it is
assumed, bound or deleted. Only references are kept: the queue looks the pod up when Filter asks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from scheduler.api.objects import Pod, PodKey
from scheduler.framework.interface import NominatingInfo, NominatingMode, nominating_mode

__all__ = ["Nominator", "PodRef"]


@dataclass(frozen=True, slots=True)
class PodRef:
    """What the nominator keeps of a pod (upstream's ``podRef``); ``bare_pod`` is all a pod the queue
    no longer holds still is (upstream's ``toPod``: no spec, priority 0)."""

    namespace: str
    name: str
    uid: str

    @property
    def key(self) -> PodKey:
        return PodKey(f"{self.namespace}/{self.name}")

    def bare_pod(self) -> Pod:
        return Pod.from_dict({"metadata": {"namespace": self.namespace, "name": self.name, "uid": self.uid}})


class Nominator:
    """node name -> the pods nominated there, in nomination order; and pod -> its node.

    Pods are known by their namespace/name (upstream: by UID; a pod's key names one pod at a time).
    ``pod_lister`` gives the latest version of an unbound pod (None: deleted or bound); upstream's
    ``podLister`` check that a pod nominated now still exists unbound. Without it (tests), no check.
    """

    def __init__(self, pod_lister: Callable[[PodKey], Pod | None] | None = None) -> None:
        self.pod_lister = pod_lister
        self._nominated_pods: dict[str, list[PodRef]] = {}
        self._nominated_pod_to_node: dict[PodKey, str] = {}

    def __bool__(self) -> bool:
        return bool(self._nominated_pods)

    def add_nominated_pod(self, pod: Pod, nominating_info: NominatingInfo | None) -> None:
        """Nominate ``pod`` where ``nominating_info`` says (Override), or to its own
        ``status.nominatedNodeName`` (Noop; none: it is only forgotten)."""
        self.delete_nominated_pod_if_exists(pod)
        mode = nominating_mode(nominating_info)
        if mode is NominatingMode.OVERRIDE:
            assert nominating_info is not None
            node_name = nominating_info.nominated_node_name
        else:
            node_name = pod.nominated_node_name
        # Upstream also records a pod nominated to "" (a cleared nomination, Override ""): no node has
        # that name and it changes nothing later, so nothing is kept.
        if not node_name:
            return
        if self.pod_lister is not None:
            # A pod deleted or bound meanwhile is not nominated.
            latest = self.pod_lister(pod.key)
            if latest is None or latest.node_name:
                return
        self._nominated_pod_to_node[pod.key] = node_name
        self._nominated_pods.setdefault(node_name, []).append(PodRef(pod.namespace, pod.name, pod.uid))

    def update_nominated_pod(self, old: Pod, new: Pod) -> None:
        """A pod of the queue changed (upstream's ``UpdateNominatedPod``): it is nominated again from
        the new version, except that an update without a nominated node on either side keeps the
        node held in memory (a nomination made just now, whose status patch is not back yet)."""
        info = None
        if not old.nominated_node_name and not new.nominated_node_name:
            held = self._nominated_pod_to_node.get(old.key)
            if held is not None:
                info = NominatingInfo(held, NominatingMode.OVERRIDE)
        self.delete_nominated_pod_if_exists(old)
        self.add_nominated_pod(new, info)

    def delete_nominated_pod_if_exists(self, pod: Pod) -> None:
        self.forget(pod.key)

    def forget(self, key: PodKey) -> None:
        node_name = self._nominated_pod_to_node.pop(key, None)
        if node_name is None:
            return
        refs = self._nominated_pods[node_name]
        for i, ref in enumerate(refs):
            if ref.key == key:
                del refs[i]
                break
        if not refs:
            del self._nominated_pods[node_name]

    def nominated_node(self, key: PodKey) -> str | None:
        return self._nominated_pod_to_node.get(key)

    def nominated_pods_for_node(self, node_name: str) -> list[PodRef]:
        """A copy of the references, in the order they were nominated."""
        return list(self._nominated_pods.get(node_name, ()))
