"""Scheduler extenders: configuration, the filter merge, the scoring arithmetic, binding, the live loop.

Extenders here are in-memory fakes of the ``Extender`` Protocol; ``tests/kube/test_extender.py`` drives
the real HTTP client against a small server. Expected values follow upstream v1.35.4's
``findNodesThatPassExtenders`` / ``prioritizeNodes`` / ``extendersBinding``, spelled out by hand.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from scheduler.api.objects import Pod
from scheduler.config import ConfigError, load_config, parse_config
from scheduler.config.extenders import DEFAULT_EXTENDER_TIMEOUT, ExtenderConfig
from scheduler.framework.events import ASSIGNED_POD_ADD
from scheduler.framework.extender import (
    ExtenderError,
    ExtenderFilterResult,
    HostPriority,
    extenders_binding,
)
from scheduler.framework.status import Code
from scheduler.framework.types import NodeInfo
from scheduler.profile import build_frameworks
from scheduler.schedule_one import ExtendersNeedAsyncError, SchedulingAlgorithm
from scheduler.scheduler import Scheduler
from scheduler.testing import make_node, make_pod
from tests.fakes import Condition, FakeBinder, FakeClock, FakeRecorder
from tests.helpers import config_with, framework, make_cache

API = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}


@dataclass
class FakeExtender:
    """Answers from tables; ``error`` raises on every call; records what it was asked."""

    name: str = "http://fake"
    weight: int = 1
    ignorable: bool = False
    filter_verb: bool = True
    prioritize_verb: bool = False
    bind_verb: bool = False
    managed: frozenset[str] = frozenset()
    reject: dict[str, str] = field(default_factory=dict)
    reject_unresolvable: dict[str, str] = field(default_factory=dict)
    extra_names: tuple[str, ...] = ()
    scores: dict[str, int] = field(default_factory=dict)
    error: Exception | None = None
    prioritize_error: Exception | None = None
    calls: list[tuple[str, list[str]]] = field(default_factory=list)
    bound: list[tuple[str, str]] = field(default_factory=list)

    def is_ignorable(self) -> bool:
        return self.ignorable

    def is_filter(self) -> bool:
        return self.filter_verb

    def is_prioritizer(self) -> bool:
        return self.prioritize_verb

    def is_binder(self) -> bool:
        return self.bind_verb

    def is_interested(self, pod: Pod) -> bool:
        return not self.managed or bool(self.managed & set(pod.labels))  # labels stand in for resources

    async def filter(self, pod: Pod, nodes: Sequence[NodeInfo]) -> ExtenderFilterResult:
        self.calls.append(("filter", [n.name for n in nodes]))
        if self.error is not None:
            raise self.error
        rejected = set(self.reject) | set(self.reject_unresolvable)
        names = [n.name for n in nodes if n.name not in rejected] + list(self.extra_names)
        return ExtenderFilterResult(names, self.reject, self.reject_unresolvable)

    async def prioritize(self, pod: Pod, nodes: Sequence[NodeInfo]) -> list[HostPriority]:
        self.calls.append(("prioritize", [n.name for n in nodes]))
        if self.prioritize_error is not None:
            raise self.prioritize_error
        return [HostPriority(host, score) for host, score in self.scores.items()]

    async def bind(self, pod: Pod, node_name: str) -> None:
        if self.error is not None:
            raise self.error
        self.bound.append((pod.key, node_name))


NODES = [make_node(f"node{i}").zone("a" if i <= 2 else "b") for i in range(1, 5)]


def decide(*extenders: FakeExtender, pod: Any = None, config: dict[str, Any] | None = None, seed: int = 0) -> Any:
    cache = make_cache(NODES, [])
    base = framework(config)
    fwk = type(base)(
        base.profile_name,
        base.plugins,
        base.points,
        base.weights,
        base.handle,
        base.percentage_of_nodes_to_score,
        extenders=extenders,
    )
    incoming = (pod or make_pod("incoming").labels({"app": "web"})).build()
    return asyncio.run(SchedulingAlgorithm(random.Random(seed)).schedule_pod_async(fwk, cache, incoming))


class TestFilter:
    def test_narrows_and_reports_failed_nodes_in_the_fit_error(self) -> None:
        """Rejected nodes carry the extender's message; the FitError histogram counts them."""
        ext = FakeExtender(reject={"node1": "no gpu", "node2": "no gpu", "node3": "busy"}, reject_unresolvable={})
        ext.reject_unresolvable = {"node4": "wrong arch"}
        attempt = decide(ext)
        assert attempt.host is None
        assert attempt.status.code is Code.UNSCHEDULABLE
        assert attempt.message == "0/4 nodes are available: 1 busy, 1 wrong arch, 2 no gpu."
        statuses = attempt.diagnosis.node_to_status
        assert statuses["node4"].code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert statuses["node1"].code is Code.UNSCHEDULABLE
        assert statuses["node1"].plugin == "http://fake"
        assert "Extender" in attempt.diagnosis.unschedulable_plugins

    def test_unresolvable_wins_over_failed_for_the_same_node(self) -> None:
        ext = FakeExtender(reject={"node1": "soft"}, reject_unresolvable={"node1": "hard"})
        attempt = decide(ext)
        assert attempt.diagnosis.node_to_status["node1"].code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert attempt.diagnosis.node_to_status["node1"].message() == "hard"
        assert attempt.host in {"node2", "node3", "node4"}

    def test_extenders_filter_in_turn_on_what_is_left(self) -> None:
        first = FakeExtender(name="http://one", reject={"node1": "x"})
        second = FakeExtender(name="http://two", reject={"node2": "y"})
        attempt = decide(first, second)
        assert second.calls[0] == ("filter", ["node3", "node2", "node4"])  # node-tree order, zones interleaved
        assert sorted(attempt.feasible) == ["node3", "node4"]

    def test_all_nodes_passing_adds_no_extender_rejector(self) -> None:
        attempt = decide(FakeExtender())
        assert attempt.host is not None
        assert "Extender" not in attempt.diagnosis.unschedulable_plugins

    def test_non_ignorable_error_fails_the_attempt_with_its_message(self) -> None:
        attempt = decide(FakeExtender(error=ExtenderError("failed filter with extender at URL http://x/f, code 500")))
        assert attempt.host is None
        assert attempt.status.code is Code.ERROR
        assert attempt.message == "failed filter with extender at URL http://x/f, code 500"

    def test_ignorable_error_is_skipped(self) -> None:
        broken = FakeExtender(name="http://broken", ignorable=True, error=ExtenderError("timeout"))
        attempt = decide(broken, FakeExtender(reject={"node1": "x"}))
        assert attempt.status.is_success()
        assert sorted(attempt.feasible) == ["node2", "node3", "node4"]

    def test_claiming_an_unknown_node_is_an_error(self) -> None:
        attempt = decide(FakeExtender(extra_names=("ghost",)))
        assert attempt.status.code is Code.ERROR
        assert attempt.message == (
            "extender 'http://fake' claims a filtered node 'ghost' which is not found in the input node list"
        )

    def test_not_interested_extender_is_not_asked(self) -> None:
        ext = FakeExtender(managed=frozenset({"example.com/gpu"}), reject={"node1": "x"})
        attempt = decide(ext)
        assert ext.calls == []
        assert len(attempt.feasible) == 4

    def test_filter_only_extender_makes_filter_look_for_all_nodes(self) -> None:
        """With neither score plugins nor extenders one feasible node suffices; a filter extender needs all."""
        no_score = config_with(
            plugins={"score": {"disabled": [{"name": "*"}]}, "preScore": {"disabled": [{"name": "*"}]}}
        )
        ext = FakeExtender()
        decide(ext, config=no_score)
        assert ext.calls == [("filter", ["node1", "node3", "node2", "node4"])]

    def test_sync_schedule_pod_refuses_a_profile_that_needs_an_extender(self) -> None:
        cache = make_cache(NODES, [])
        base = framework()
        fwk = type(base)(
            base.profile_name, base.plugins, base.points, base.weights, base.handle, extenders=[FakeExtender()]
        )
        with pytest.raises(ExtendersNeedAsyncError):
            SchedulingAlgorithm().schedule_pod(fwk, cache, make_pod("p").build())


class TestPrioritize:
    def test_score_times_weight_times_ten_added_to_plugin_totals(self) -> None:
        """finalscore = score * weight * (MaxNodeScore / MaxExtenderPriority) = score * weight * 10."""
        ext = FakeExtender(filter_verb=False, prioritize_verb=True, weight=3, scores={"node3": 7, "node4": 2})
        attempt = decide(ext)
        row = next(s for s in attempt.scores if s.plugin == "http://fake")
        assert dict(zip(attempt.scored_nodes, row.raw, strict=True)) == {"node1": 0, "node2": 0, "node3": 7, "node4": 2}
        assert row.weight == 3
        # TaintToleration 100 x3 and PodTopologySpread (no selector) 0... on every node: the plugin part is equal.
        base = attempt.totals["node1"]
        assert attempt.totals["node3"] - base == 7 * 3 * 10
        assert attempt.totals["node4"] - base == 2 * 3 * 10
        assert attempt.host == "node3"

    def test_unscored_hosts_dropped_duplicates_added_no_range_check(self) -> None:
        ext = FakeExtender(filter_verb=False, prioritize_verb=True, scores={"ghost": 10, "node2": 50})
        attempt = decide(ext)
        row = next(s for s in attempt.scores if s.plugin == "http://fake")
        assert dict(zip(attempt.scored_nodes, row.normalized, strict=True))["node2"] == 500
        assert attempt.host == "node2"

    def test_errors_are_ignored_even_when_not_ignorable(self) -> None:
        """Upstream: "Prioritization errors from extender can be ignored"."""
        ext = FakeExtender(filter_verb=False, prioritize_verb=True, prioritize_error=ExtenderError("down"))
        attempt = decide(ext)
        assert attempt.status.is_success()
        assert [s.plugin for s in attempt.scores if s.plugin.startswith("http")] == []

    def test_extenders_alone_still_score(self) -> None:
        """No score plugin, a prioritizing extender: its scores decide (plugins contribute 0)."""
        no_score = config_with(
            plugins={"score": {"disabled": [{"name": "*"}]}, "preScore": {"disabled": [{"name": "*"}]}}
        )
        ext = FakeExtender(filter_verb=False, prioritize_verb=True, scores={"node4": 1})
        attempt = decide(ext, config=no_score)
        assert attempt.totals == {"node1": 0, "node2": 0, "node3": 0, "node4": 10}
        assert attempt.host == "node4"


class TestBinding:
    def test_first_interested_binder_binds(self) -> None:
        pod = make_pod("p").build()
        binder = FakeExtender(bind_verb=True)
        assert asyncio.run(extenders_binding([FakeExtender(), binder], pod, "node1")) == (True, None)
        assert binder.bound == [("default/p", "node1")]

    def test_ignorable_binder_failure_falls_through_to_the_plugins(self) -> None:
        pod = make_pod("p").build()
        broken = FakeExtender(bind_verb=True, ignorable=True, error=ExtenderError("down"))
        assert asyncio.run(extenders_binding([broken], pod, "node1")) == (False, None)

    def test_binder_failure_is_the_binding_error(self) -> None:
        pod = make_pod("p").build()
        broken = FakeExtender(bind_verb=True, error=ExtenderError("refused"))
        assert asyncio.run(extenders_binding([broken], pod, "node1")) == (True, "refused")

    def test_no_binder(self) -> None:
        assert asyncio.run(extenders_binding([FakeExtender()], make_pod("p").build(), "n")) == (False, None)


class TestQueueing:
    def test_extender_rejector_is_registered_for_every_event(self) -> None:
        base = framework()
        fwk = type(base)(
            base.profile_name, base.plugins, base.points, base.weights, base.handle, extenders=[FakeExtender()]
        )
        (registration,) = fwk.enqueue_extensions()["Extender"]
        assert registration.event.is_wildcard
        assert registration.hint(make_pod("p").build(), None, None).name == "QUEUE"
        assert "Extender" not in framework().enqueue_extensions()
        assert ASSIGNED_POD_ADD.resource.value == "AssignedPod"


def config(*extenders: dict[str, Any]) -> Any:
    return parse_config({**API, "extenders": list(extenders)})


class TestConfig:
    def test_defaults(self) -> None:
        (ext,) = config({"urlPrefix": "http://127.0.0.1:8888/scheduler", "filterVerb": "filter"}).extenders
        assert ext == ExtenderConfig(url_prefix="http://127.0.0.1:8888/scheduler", filter_verb="filter")
        assert ext.http_timeout == DEFAULT_EXTENDER_TIMEOUT == 5.0

    def test_every_field(self) -> None:
        (ext,) = config(
            {
                "urlPrefix": "https://ext:8443/",
                "filterVerb": "filter",
                "preemptVerb": "preempt",
                "prioritizeVerb": "prioritize",
                "bindVerb": "bind",
                "weight": 5,
                "enableHTTPS": True,
                "tlsConfig": {"insecure": True, "serverName": "ext"},
                "httpTimeout": "1m30s",
                "nodeCacheCapable": True,
                "managedResources": [{"name": "example.com/gpu", "ignoredByScheduler": True}],
                "ignorable": True,
            }
        ).extenders
        assert (ext.weight, ext.http_timeout, ext.node_cache_capable, ext.ignorable) == (5, 90.0, True, True)
        assert ext.tls_config is not None and ext.tls_config.server_name == "ext"
        assert ext.managed_resources[0].name == "example.com/gpu"

    @pytest.mark.parametrize(
        ("text", "seconds"),
        [("1m30s", 90.0), (".5s", 0.5), ("+2s", 2.0), ("250us", 0.00025), ("1h0m0.5s", 3600.5), ("0", 5.0)],
    )
    def test_http_timeout_reads_as_go_parses_it(self, text: str, seconds: float) -> None:
        """``time.ParseDuration``'s forms (a fraction without its 0, a sign, micro- and nanoseconds); 0 is 5 s."""
        (ext,) = config({"urlPrefix": "http://a", "filterVerb": "f", "httpTimeout": text}).extenders
        assert ext.http_timeout == seconds

    @pytest.mark.parametrize("text", ["-1s", "5", "5 s", "1m30", ".s", "", "9999999999h"])
    def test_http_timeout_refused(self, text: str) -> None:
        """Negative (an at-once timeout), unitless, spaced, overflowing: refused with the field's path."""
        with pytest.raises(ConfigError) as caught:
            config({"urlPrefix": "http://a", "filterVerb": "f", "httpTimeout": text})
        assert f'extenders[0].httpTimeout: Invalid value: "{text}": must be a duration such as 5s' in str(caught.value)

    @pytest.mark.parametrize(
        ("extenders", "message"),
        [
            pytest.param(
                [{"urlPrefix": "http://a", "prioritizeVerb": "p"}],
                "extenders[0].weight: Invalid value: 0: must have a positive weight applied to it",
                id="prioritize-without-weight",
            ),
            pytest.param(
                [{"urlPrefix": "http://a", "bindVerb": "b"}, {"urlPrefix": "http://b", "bindVerb": "b"}],
                'extenders: Invalid value: "found 2 extenders implementing bind": only one extender can implement bind',
                id="two-binders",
            ),
            pytest.param(
                [{"urlPrefix": "http://a", "managedResources": [{"name": "cpu"}]}],
                'extenders[0].managedResources[0].name: Invalid value: "cpu": is an invalid extended resource name',
                id="native-resource",
            ),
            pytest.param(
                [
                    {"urlPrefix": "http://a", "managedResources": [{"name": "example.com/gpu"}]},
                    {"urlPrefix": "http://b", "managedResources": [{"name": "example.com/gpu"}]},
                ],
                'extenders[1].managedResources[0].name: Invalid value: "example.com/gpu": '
                "duplicate extender managed resource name",
                id="duplicate-resource",
            ),
            pytest.param([{"filterVerb": "f"}], "extenders[0].urlPrefix: Required value", id="no-url"),
            pytest.param(
                [{"urlPrefix": "ftp://a"}],
                'extenders[0].urlPrefix: Invalid value: "ftp://a": must be an http:// or https:// URL',
                id="bad-url",
            ),
            pytest.param(
                [{"urlPrefix": "http://a", "filterverb": "f"}],
                'strict decoding error: unknown field "extenders[0].filterverb"',
                id="typo",
            ),
            pytest.param(
                [{"urlPrefix": "http://a", "httpTimeout": "soon"}],
                'extenders[0].httpTimeout: Invalid value: "soon": must be a duration such as 5s',
                id="bad-timeout",
            ),
            pytest.param(
                [{"urlPrefix": "http://a", "tlsConfig": {"caData": "%%%"}}],
                "extenders[0].tlsConfig.caData: Invalid value: must be base64-encoded PEM data",
                id="bad-ca-data",
            ),
            pytest.param(
                [{"urlPrefix": "https://a", "tlsConfig": {"caFile": "/nonexistent/ca.pem"}}],
                "extenders[0].tlsConfig.caFile: Invalid value: unable to load root certificates",
                id="missing-ca-file",
            ),
            pytest.param(
                [{"urlPrefix": "https://a", "tlsConfig": {"caData": "bm90IGEgY2VydGlmaWNhdGU="}}],
                "extenders[0].tlsConfig.caData: Invalid value: unable to load root certificates",
                id="ca-data-not-pem",
            ),
            pytest.param(
                [{"urlPrefix": "https://a", "tlsConfig": {"insecure": True, "caFile": "/nonexistent/ca.pem"}}],
                "extenders[0].tlsConfig: Invalid value: specifying a root certificates file with the insecure flag"
                " is not allowed",
                id="insecure-with-ca-refused-as-client-go",
            ),
            pytest.param([{"urlPrefix": "http://a", "ignorable": "yes"}], "extenders[0].ignorable", id="not-bool"),
        ],
    )
    def test_errors_name_the_field(self, extenders: list[dict[str, Any]], message: str) -> None:
        with pytest.raises(ConfigError) as info:
            config(*extenders)
        assert str(info.value).startswith(message)


class GatedExtender(FakeExtender):
    """Filter waits for ``release``: a cycle stays in flight while the test delivers watch events."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.entered = asyncio.Event()
        self.release = asyncio.Event()

    async def filter(self, pod: Pod, nodes: Sequence[NodeInfo]) -> ExtenderFilterResult:
        self.entered.set()
        await self.release.wait()
        return await super().filter(pod, nodes)


def live(*extenders: FakeExtender) -> tuple[Scheduler, FakeBinder, FakeRecorder]:
    binder, recorder = FakeBinder(), FakeRecorder()
    sched = Scheduler(load_config(None), binder, recorder, clock=FakeClock(), extenders=list(extenders))
    for node in NODES:
        sched.on_object("ADDED", node.dict())
    return sched, binder, recorder


class TestLiveLoop:
    def test_filtered_and_preferred_nodes_decide_the_binding(self) -> None:
        async def body() -> None:
            ext = FakeExtender(prioritize_verb=True, weight=1, reject={"node1": "no"}, scores={"node2": 10})
            sched, binder, _ = live(ext)
            sched.on_object("ADDED", make_pod("web").dict())
            assert await sched.schedule_one_async()
            await sched.drain()
            assert binder.binds == [("default/web", "node2")]

        asyncio.run(body())

    def test_non_ignorable_error_reports_scheduler_error_and_backs_off(self) -> None:
        async def body() -> None:
            sched, binder, recorder = live(FakeExtender(error=ExtenderError('Post "http://x/filter": refused')))
            sched.on_object("ADDED", make_pod("web").dict())
            assert await sched.schedule_one_async()
            await sched.drain()
            assert binder.calls == []
            assert recorder.conditions == [
                Condition("default/web", "SchedulerError", 'Post "http://x/filter": refused')
            ]
            assert sched.queue.location("default/web") == "error"  # the error backoff queue, retried after backoff

        asyncio.run(body())

    def test_extender_binder_binds_instead_of_the_default_binder(self) -> None:
        async def body() -> None:
            ext = FakeExtender(filter_verb=False, bind_verb=True)
            sched, binder, recorder = live(ext)
            sched.on_object("ADDED", make_pod("web").dict())
            assert await sched.schedule_one_async()
            await sched.drain()
            assert binder.calls == []
            assert [key for key, _ in ext.bound] == ["default/web"]
            assert [e.reason for e in recorder.events] == ["Scheduled"]

        asyncio.run(body())

    def test_watch_events_wait_until_the_cycle_ends(self) -> None:
        """A node added while an extender answers is not in that cycle's snapshot, but counts after it."""

        async def body() -> None:
            ext = GatedExtender()
            sched, binder, _ = live(ext)
            sched.on_object("ADDED", make_pod("web").dict())
            cycle = asyncio.ensure_future(sched.schedule_one_async())
            await asyncio.wait_for(ext.entered.wait(), timeout=5)
            sched.on_object("ADDED", make_node("node5").dict())
            assert sched.cache.get("node5") is None  # held back: the cycle's snapshot does not move
            ext.release.set()
            assert await asyncio.wait_for(cycle, timeout=5)
            assert sched.cache.get("node5") is not None
            await sched.drain()
            assert len(binder.binds) == 1 and binder.binds[0][1] != "node5"

        asyncio.run(body())


def test_a_reconcile_during_an_extender_call_waits_for_the_cycle() -> None:
    """A re-list that finds a node gone is applied after the cycle that is asking an extender."""

    async def body() -> None:
        ext = GatedExtender()
        sched, _binder, _ = live(ext)
        node9 = make_node("node9").dict()
        node9["metadata"]["resourceVersion"] = "5"
        sched.on_object("ADDED", node9)
        sched.on_object("ADDED", make_pod("web").dict())
        cycle = asyncio.ensure_future(sched.schedule_one_async())
        await asyncio.wait_for(ext.entered.wait(), timeout=5)
        listed = {n.dict()["metadata"]["name"]: "" for n in NODES}
        sched.reconcile("Node", listed, "10")  # node9 (version 5) is gone
        assert sched.cache.get("node9") is not None
        ext.release.set()
        assert await asyncio.wait_for(cycle, timeout=5)
        assert sched.cache.get("node9") is None
        await sched.drain()

    asyncio.run(body())


class TestBuildExtenders:
    """Upstream's ``buildExtenders``: what configuring extenders changes in every profile."""

    def test_ignorable_extenders_move_to_the_tail(self) -> None:
        first = FakeExtender(name="http://ignorable", ignorable=True)
        second = FakeExtender(name="http://strict")
        fwk = build_frameworks(load_config(None), extenders=[first, second])["spread-scheduler"]
        assert [e.name for e in fwk.extenders] == ["http://strict", "http://ignorable"]

    def test_ignored_by_scheduler_resources_replace_fit_ignored_resources(self) -> None:
        cfg = parse_config(
            {
                **API,
                "profiles": [
                    {
                        "schedulerName": "spread-scheduler",
                        "pluginConfig": [{"name": "NodeResourcesFit", "args": {"ignoredResources": ["example.com/a"]}}],
                    }
                ],
                "extenders": [
                    {
                        "urlPrefix": "http://x",
                        "managedResources": [
                            {"name": "example.com/gpu", "ignoredByScheduler": True},
                            {"name": "example.com/fpga"},
                        ],
                    }
                ],
            }
        )
        fit = build_frameworks(cfg)["spread-scheduler"].plugins["NodeResourcesFit"]
        assert fit.ignored_resources == frozenset({"example.com/gpu"})  # type: ignore[attr-defined]
