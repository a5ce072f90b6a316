"""``python -m bench.memory`` keeps measuring what it says: every generated node and pod reaches the
cache through the event path, and the figures are retained bytes, not constants."""

from __future__ import annotations

from bench.memory import kubelet_node, kubelet_pod, measure


def test_every_object_reaches_the_cache_and_more_objects_keep_more_bytes() -> None:
    small, large = measure(3, 20), measure(6, 60)
    for r in (small, large):
        assert 0 < r["bytes_per_node_api_object"] <= r["bytes_per_node"]
        assert 0 < r["bytes_per_pod_api_object"] <= r["bytes_per_pod"]
    assert large["bytes_per_pod"] * 60 > small["bytes_per_pod"] * 20


def test_the_objects_are_what_a_kubelet_reports() -> None:
    node, pod = kubelet_node(1), kubelet_pod(1, "node-00001")
    assert len(node["status"]["images"]) == 30 and len(node["status"]["conditions"]) == 5
    assert pod["spec"]["nodeName"] == "node-00001" and pod["status"]["phase"] == "Running"
    assert "managedFields" not in pod["metadata"]  # the watch drops it
