"""Profiles share one queue, so they must share its order (upstream ``cfgValidator``, checked on reading the config)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from scheduler.api.objects import Pod
from scheduler.config import ConfigError, parse_config
from scheduler.config.parse import check_same_queue_sort
from scheduler.profile import build_frameworks, queue_sort_key
from scheduler.testing import make_pod

API = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}


def two_profiles(second: dict[str, Any]) -> dict[str, Any]:
    return {**API, "profiles": [{"schedulerName": "a"}, {"schedulerName": "b", **second}]}


def test_profiles_with_the_same_queue_sort_share_the_queue_order() -> None:
    frameworks = build_frameworks(parse_config(two_profiles({})))
    key = queue_sort_key(frameworks)
    high, low = Pod.from_dict(make_pod("high").priority(10).dict()), Pod.from_dict(make_pod("low").dict())
    assert key(high, 5.0) < key(low, 1.0)  # priority first, then the queue timestamp
    assert key(low, 1.0) < key(low, 2.0)


def test_different_queue_sort_args_are_refused_with_upstreams_message() -> None:
    """PrioritySort has no args type, so strict decoding lets only TypeMeta through; that still differs."""
    args = {"apiVersion": "kubescheduler.config.k8s.io/v1"}
    with pytest.raises(ConfigError, match=r'^different queue sort plugin args for profile "b"$'):
        parse_config(two_profiles({"pluginConfig": [{"name": "PrioritySort", "args": args}]}))


def test_different_queue_sort_plugins_are_refused_with_upstreams_message() -> None:
    """Only PrioritySort exists as a QueueSort plugin, so the second profile is edited by hand."""
    first, second = parse_config(two_profiles({})).profiles
    other = dataclasses.replace(second, points={**second.points, "queueSort": ["OtherSort"]})
    with pytest.raises(ConfigError) as error:
        check_same_queue_sort([first, other])
    assert str(error.value) == 'different queue sort plugins for profile "b": "OtherSort", first: "PrioritySort"'
