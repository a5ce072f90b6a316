"""``python -m bench.memory`` keeps measuring what it says: every generated node and pod reaches the
cache through the event path, and the figures are retained bytes, not constants."""

from __future__ import annotations

from bench.memory import kubelet_node, kubelet_pod, measure


def test_every_object_reaches_the_cache_and_more_objects_keep_more_bytes() -> None:
    small, large = measure(3, 20), measure(6, 60)
    for r in (small, large):
        for kind in ("node", "pod"):
            assert 0 < r[f"bytes_per_{kind}_parsed"] <= r[f"bytes_per_{kind}"]
    assert large["bytes_per_pod"] * 60 > small["bytes_per_pod"] * 20


def test_a_bound_pod_and_a_node_are_kept_without_what_nothing_reads() -> None:
    """Red if the cache keeps a bound pod's or a node's API object whole again."""
    r = measure(6, 60)
    assert r["bytes_per_pod_parsed"] < 0.6 * r["bytes_per_pod_api_object"]
    assert r["bytes_per_node_parsed"] < 0.6 * r["bytes_per_node_api_object"]


def test_the_objects_are_what_a_kubelet_reports() -> None:
    node, pod = kubelet_node(1), kubelet_pod(1, "node-00001")
    assert len(node["status"]["images"]) == 30 and len(node["status"]["conditions"]) == 5
    assert pod["spec"]["nodeName"] == "node-00001" and pod["status"]["phase"] == "Running"
    assert "managedFields" not in pod["metadata"]  # the watch drops it
