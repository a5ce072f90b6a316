"""Logging as kube-scheduler's: klog text and component-base JSON lines, ``-v`` levels, upstream's wording.

The format cases carry over from component-base's json_test.go/klog_test.go (what a line holds, in
which order); the scheduling lines are upstream's schedule_one.go messages with their keys.
"""

from __future__ import annotations

import io
import json
import logging
import re
from collections.abc import Iterator

import pytest
import structlog

from scheduler import logs
from scheduler.cli import main
from scheduler.testing import make_node, make_pod
from tests.test_scheduler_loop import Cluster, run

KLOG = re.compile(r'^(?P<sev>[IWE])\d{4} \d\d:\d\d:\d\d\.\d{6} +\d+ (?P<caller>[\w.]+:\d+)\] (?P<msg>".*?")(?P<kv>.*)$')


@pytest.fixture
def stream() -> Iterator[io.StringIO]:
    out = io.StringIO()
    yield out
    structlog.reset_defaults()
    root = logging.getLogger()
    for handler in list(root.handlers):
        if type(handler).__name__ == "_Handler":
            root.removeHandler(handler)
    root.setLevel(logging.WARNING)


def _lines(out: io.StringIO) -> list[str]:
    return out.getvalue().splitlines()


def test_text_line_is_klogs(stream: io.StringIO) -> None:
    logs.configure("text", 2, stream)
    log = structlog.get_logger("t")
    log.info("Successfully bound pod to node", v=2, pod=logs.kobj("ns/p"), node="n1", evaluatedNodes=3, feasibleNodes=2)
    (line,) = _lines(stream)
    match = KLOG.match(line)
    assert match, line
    assert match["sev"] == "I" and match["caller"].startswith("test_logs.py:")
    assert match["msg"] == '"Successfully bound pod to node"'
    assert match["kv"] == ' pod="ns/p" node="n1" evaluatedNodes=3 feasibleNodes=2'


def test_json_line_is_component_bases(stream: io.StringIO) -> None:
    logs.configure("json", 2, stream)
    log = structlog.get_logger("t")
    log.info("Successfully bound pod to node", v=2, pod=logs.kobj("ns/p"), node="n1", evaluatedNodes=3, feasibleNodes=2)
    log.error("Error scheduling pod; retrying", pod=logs.kobj("ns/p"), err="boom")
    info, error = (json.loads(line) for line in _lines(stream))
    assert list(info) == ["ts", "caller", "msg", "v", "pod", "node", "evaluatedNodes", "feasibleNodes"]
    assert info["pod"] == {"name": "p", "namespace": "ns"} and info["v"] == 2
    assert isinstance(info["ts"], float) and info["ts"] > 1e12  # epoch milliseconds
    # An error has no "v" and its cause last, as zapr writes it.
    assert list(error) == ["ts", "caller", "msg", "pod", "err"] and error["err"] == "boom"


@pytest.mark.parametrize("verbosity", [0, 1, 2, 3])
def test_v_levels_pass_up_to_the_verbosity_and_errors_always(stream: io.StringIO, verbosity: int) -> None:
    logs.configure("text", verbosity, stream)
    log = structlog.get_logger("t")
    for level in range(5):
        log.info(f"at {level}", v=level)
    log.warning("a warning", v=9)
    log.error("an error")
    shown = [KLOG.match(line)["msg"] for line in _lines(stream)]  # type: ignore[index]
    assert shown == [f'"at {level}"' for level in range(verbosity + 1)] + ['"a warning"', '"an error"']


def test_a_multi_line_value_is_klogs_block(stream: io.StringIO) -> None:
    logs.configure("text", 0, stream)
    structlog.get_logger("t").error("command failed", err="first\nsecond")
    assert stream.getvalue().endswith('] "command failed" err=<\n\tfirst\n\tsecond\n >\n')


def test_stdlib_loggers_are_routed_as_ours_with_their_levels_mapped(stream: io.StringIO) -> None:
    """kopf's and aiohttp's stdlib records: warnings always, INFO at -v 4, DEBUG at -v 6, exceptions as one ``err``."""
    logs.configure("json", 4, stream)
    logging.getLogger("kopf.objects").warning("kopf says %s", "hi")
    logging.getLogger("aiohttp.access").info("GET /healthz 200")
    logging.getLogger("kubernetes.client.rest").debug("response body")
    try:
        raise ConnectionError("refused")
    except ConnectionError:
        logging.getLogger("kopf.reactor").exception("watcher failed")
    lines = [json.loads(line) for line in _lines(stream)]
    assert [(e["msg"], e.get("v"), e["logger"]) for e in lines] == [
        ("kopf says hi", 0, "kopf.objects"),
        ("GET /healthz 200", 4, "aiohttp.access"),
        ("watcher failed", None, "kopf.reactor"),
    ]
    assert lines[2]["err"] == "ConnectionError: refused"
    assert "Traceback" not in stream.getvalue()


def test_every_subcommand_takes_the_flags_and_logs_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["version", "--logging-format", "json", "-v", "3"]) == 0
    assert main(["version", "--v=2"]) == 0
    out, err = capsys.readouterr()
    assert out.count("spread-scheduler") == 2 and err == ""
    with pytest.raises(SystemExit):
        main(["version", "--logging-format", "yaml"])
    assert "invalid choice: 'yaml'" in capsys.readouterr().err
    structlog.reset_defaults()


def _scheduler_lines(stream: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in _lines(stream)]


def test_upstream_lines_for_a_bound_and_an_unschedulable_pod(stream: io.StringIO) -> None:
    """schedule_one.go: "Attempting to schedule pod" V(3), DefaultBinder's "Attempting to bind pod to
    node" V(3), "Successfully bound pod to node" V(2) with the counts, "Unable to schedule pod; no fit;
    waiting" V(2) with the FailedScheduling message as err."""

    async def body() -> None:
        logs.configure("json", 3, stream)
        c = Cluster()
        c.add(make_node("n1"), make_node("n2"), make_pod("fits"), make_pod("pinned").node_selector({"x": "y"}))
        await c.settle()

    run(body)
    pod = {"name": "fits", "namespace": "default"}
    entries = _scheduler_lines(stream)
    mine = [(e["msg"], e["v"]) for e in entries if e.get("pod") == pod]
    assert mine == [
        ("Attempting to schedule pod", 3),
        ("Attempting to bind pod to node", 3),
        ("Successfully bound pod to node", 2),
    ]
    (bound,) = [e for e in entries if e["msg"] == "Successfully bound pod to node"]
    assert (bound["evaluatedNodes"], bound["feasibleNodes"]) == (2, 2) and bound["node"] in ("n1", "n2")
    (waiting,) = [e for e in entries if e["msg"] == "Unable to schedule pod; no fit; waiting"]
    assert waiting["pod"] == {"name": "pinned", "namespace": "default"} and waiting["v"] == 2
    assert str(waiting["err"]).startswith("0/2 nodes are available: 2 node(s) didn't match Pod's node affinity")


def test_a_refused_binding_is_logged_with_the_apis_status(stream: io.StringIO) -> None:
    """A 403 on the Binding: "Failed to bind pod" V(1), then "Error scheduling pod; retrying" with the
    API's words, as upstream's finishBinding and handleSchedulingFailure log it; never "Successfully bound"."""
    refusal = 'binding default/p to n1: HTTP 403 Forbidden: pods "p" is forbidden: cannot create pods/binding'

    async def body() -> None:
        logs.configure("json", 2, stream)
        c = Cluster()
        c.binder.fail("default/p", RuntimeError(refusal))
        c.add(make_node("n1"), make_pod("p"))
        await c.settle()

    run(body)
    entries = _scheduler_lines(stream)
    assert [e["msg"] for e in entries] == ["Failed to bind pod", "Error scheduling pod; retrying"]
    assert entries[1]["err"] == f"binding rejected: {refusal}" and "v" not in entries[1]


def test_at_the_default_verbosity_a_bound_pod_logs_nothing(stream: io.StringIO) -> None:
    """-v 0 is kube-scheduler's default: no line per pod (what keeps a 10,000-pod burst cheap to log)."""

    async def body() -> None:
        logs.configure("text", 0, stream)
        c = Cluster()
        c.add(make_node("n1"), *(make_pod(f"p{i}") for i in range(20)))
        await c.settle()
        assert len(c.binder.binds) == 20

    run(body)
    assert stream.getvalue() == ""
