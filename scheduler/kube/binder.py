"""DefaultBinder's write: the Binding, through the one writer (``scheduler.kube.writes``)."""

from __future__ import annotations

from scheduler.api.objects import Pod
from scheduler.kube.writes import ApiWriter

__all__ = ["ApiBinder"]


class ApiBinder:
    """``POST pods/<name>/binding`` as DefaultBinder does it."""

    def __init__(self, writer: ApiWriter) -> None:
        self._writer = writer

    async def bind(self, pod: Pod, node_name: str) -> None:
        metadata = {"name": pod.name, "namespace": pod.namespace} | ({"uid": pod.uid} if pod.uid else {})
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": metadata,
            "target": {"kind": "Node", "name": node_name},
        }
        await self._writer.post_to_pod(f"binding {pod.key} to {node_name}", pod, "binding", body)
