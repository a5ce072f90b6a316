"""``simulate`` for real cluster dumps: stdin, ``--pod``, ``--top``, warnings, ``--scheduler-name``,
``--fail-on-unschedulable``, the exit codes of empty input, and ``--version`` (issue #20).

Exit codes (docs/simulate.md): 0 decided, 1 nothing to decide, 2 bad input or usage, 3 a reported pod
not placed with ``--fail-on-unschedulable``. Only the result goes to stdout.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from scheduler.cli import main
from scheduler.simulate.json_output import rank_nodes
from scheduler.testing import make_node, make_pod

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "two-zones.yaml"
CPU1 = {"cpu": "1", "memory": "4Gi", "pods": "110"}


def write(tmp_path: Path, *objects: Any) -> str:
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump_all(list(objects)))
    return str(path)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["simulate", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def results(stdout: str) -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads(stdout)["results"]
    return data


class TestStdin:
    def test_dash_reads_stdin_like_the_file(
        self, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        _, from_file, _ = run(capsys, str(EXAMPLE), "-o", "json", "--seed", "3")
        monkeypatch.setattr("sys.stdin", io.StringIO(EXAMPLE.read_text()))
        code, from_stdin, err = run(capsys, "-", "-o", "json", "--seed", "3")
        assert (code, err) == (0, "")
        assert from_stdin == from_file
        assert len(results(from_stdin)) == 2

    def test_empty_stdin_exits_1(self, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr("sys.stdin", io.StringIO(""))
        assert run(capsys, "-", "-o", "json") == (1, "", "spread-scheduler: no objects in stdin: nothing to simulate\n")

    def test_bad_yaml_on_stdin_names_stdin(
        self, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr("sys.stdin", io.StringIO("items: [\n"))
        code, out, err = run(capsys, "-")
        assert (code, out) == (2, "")
        assert err.startswith("spread-scheduler: cannot read stdin: ")


class TestPod:
    """``--pod``: that pod alone is decided, on the bound pods, as ``explain`` decides it."""

    def objects(self) -> list[dict[str, Any]]:
        # one node with room for one 1-CPU pod; "first" is ahead of "target" in the queue (priority)
        return [
            make_node("n1").capacity(**CPU1).dict(),
            make_pod("first").priority(100).requests(cpu="1").dict(),
            make_pod("target").requests(cpu="1").dict(),
        ]

    def test_other_pending_pods_hold_no_room(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        path = write(tmp_path, *self.objects())
        _, out, _ = run(capsys, path, "-o", "json")
        assert [(r["pod"], r["node"]) for r in results(out)] == [("default/first", "n1"), ("default/target", None)]
        code, out, err = run(capsys, path, "-o", "json", "--pod", "default/target")
        assert (code, err) == (0, "")
        assert [(r["pod"], r["node"]) for r in results(out)] == [("default/target", "n1")]

    def test_bound_pod_is_redecided_and_others_still_count(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A bound pod leaves its own node for the replay; the other bound pods keep their room."""
        objects = [
            make_node("n1").capacity(**CPU1).dict(),
            make_node("n2").capacity(**CPU1).dict(),
            make_pod("placed").node("n1").requests(cpu="1").dict(),
            make_pod("other").node("n2").requests(cpu="1").dict(),
        ]
        code, out, _ = run(capsys, write(tmp_path, *objects), "-o", "json", "--pod", "placed")  # default namespace
        assert code == 0
        (result,) = results(out)
        assert (result["pod"], result["node"]) == ("default/placed", "n1")
        assert result["nodes"]["n2"]["filter"]["reason"] == "Insufficient cpu"

    def test_unknown_pod_exits_1(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        path = write(tmp_path, *self.objects())
        assert run(capsys, path, "--pod", "default/nope") == (
            1,
            "",
            f"spread-scheduler: pod default/nope not found in {path}\n",
        )


class TestTop:
    def test_json_keeps_the_best_nodes_best_first(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """n-busy is feasible but scores lower (less free CPU); n-small cannot fit (Unschedulable);
        n-tainted is refused by TaintToleration (UnschedulableAndUnresolvable)."""
        objects = [
            make_node("n-tainted").taint("k", "v").dict(),
            make_node("n-small").capacity(cpu="1", memory="4Gi", pods="110").dict(),
            make_node("n-busy").dict(),
            make_node("n-free").dict(),
            make_pod("busy").node("n-busy").requests(cpu="6").dict(),
            make_pod("p").requests(cpu="2").dict(),
        ]
        path = write(tmp_path, *objects)
        _, out, _ = run(capsys, path, "-o", "json", "--top", "3")
        (result,) = results(out)
        assert result["node"] == "n-free"
        assert list(result["nodes"]) == ["n-free", "n-busy", "n-small"]
        assert result["omittedNodes"] == 1
        _, out, _ = run(capsys, path, "-o", "json", "--top", "10")
        (result,) = results(out)
        assert list(result["nodes"]) == ["n-free", "n-busy", "n-small", "n-tainted"]
        assert result["omittedNodes"] == 0
        _, out, _ = run(capsys, path, "-o", "json")
        assert "omittedNodes" not in results(out)[0]

    def test_table_counts_the_rest(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        _, out, _ = run(capsys, str(EXAMPLE), "--top", "1", "--seed", "1")
        blocks = [block.splitlines() for block in out.strip().split("\n\n")]
        assert len(blocks) == 2
        for block in blocks:
            assert len(block) == 4  # decision, header, one node, the count
            assert block[2].split()[1] == "*"  # the chosen node
            assert block[3] == "  ... 3 more node(s) not shown (--top 1)"

    def test_zero_is_a_usage_error(self, capsys: pytest.CaptureFixture[str]) -> None:
        with pytest.raises(SystemExit) as info:
            main(["simulate", str(EXAMPLE), "--top", "0"])
        assert info.value.code == 2
        assert "--top: must be at least 1, got 0" in capsys.readouterr().err

    def test_rank_ties_and_unreached_nodes(self) -> None:
        def entry(total: int | None, code: str | None = None, evaluated: bool = True) -> dict[str, Any]:
            filt = None if code is None else {"plugin": "X", "reason": "r", "code": code}
            out: dict[str, Any] = {"filter": filt, "scores": {}, "total": total}
            if not evaluated:
                out["evaluated"] = False
            return out

        nodes = {
            "unreached": entry(None, evaluated=False),
            "hard": entry(None, "UnschedulableAndUnresolvable"),
            "soft": entry(None, "Unschedulable"),
            "b-tie": entry(50),
            "a-tie": entry(50),
            "best": entry(90),
            "chosen": entry(50),
        }
        assert rank_nodes(nodes, "chosen") == ["chosen", "best", "a-tie", "b-tie", "soft", "hard", "unreached"]


class TestWarnings:
    def test_unused_kinds_and_unmatched_pods_warn_on_stderr_and_json_stays_clean(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        objects = [
            make_node("n1").dict(),
            make_pod("ours").dict(),
            make_pod("theirs").scheduler("default-scheduler").dict(),
            make_pod("theirs-bound").scheduler("default-scheduler").node("n1").dict(),
            {"kind": "Deployment", "metadata": {"name": "d"}},
            {"kind": "ConfigMap", "metadata": {"name": "a"}},
            {"kind": "ConfigMap", "metadata": {"name": "b"}},
            {"metadata": {"name": "kindless"}},
        ]
        code, out, err = run(capsys, write(tmp_path, *objects), "-o", "json")
        assert code == 0
        assert [r["pod"] for r in results(out)] == ["default/ours"]
        assert err.splitlines() == [
            "warning: skipped 1 (no kind) object(s): a kind simulate does not read",
            "warning: skipped 2 ConfigMap object(s): a kind simulate does not read",
            "warning: skipped 1 Deployment object(s): a kind simulate does not read",
            'warning: skipped pending pod default/theirs: schedulerName "default-scheduler" names no profile '
            "(spread-scheduler); --scheduler-name default-scheduler schedules it with ours",
        ]

    def test_only_unmatched_pods_exits_1(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        path = write(tmp_path, make_node("n1").dict(), make_pod("theirs").scheduler("other").dict())
        code, out, err = run(capsys, path, "-o", "json")
        assert (code, out) == (1, "")
        assert err.splitlines()[-1] == f"spread-scheduler: no pending pod in {path} names a profile (spread-scheduler)"
        assert 'schedulerName "other" names no profile' in err


class TestSchedulerName:
    def test_pending_pods_naming_it_are_scheduled_with_our_profile(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        objects = [
            make_node("n1").capacity(**CPU1).dict(),
            make_node("n2").capacity(**CPU1).dict(),
            make_pod("bound").scheduler("default-scheduler").node("n1").requests(cpu="1").dict(),
            make_pod("theirs").scheduler("default-scheduler").requests(cpu="1").dict(),
            make_pod("third").scheduler("third-scheduler").dict(),
        ]
        code, out, err = run(capsys, write(tmp_path, *objects), "-o", "json", "--scheduler-name", "default-scheduler")
        assert code == 0
        # the bound pod keeps its room on n1 whatever its schedulerName says
        assert [(r["pod"], r["node"]) for r in results(out)] == [("default/theirs", "n2")]
        assert err.splitlines() == [
            'warning: skipped pending pod default/third: schedulerName "third-scheduler" names no profile '
            "(spread-scheduler); --scheduler-name third-scheduler schedules it with ours"
        ]

    def test_repeatable(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        objects = [make_node("n1").dict(), make_pod("a").scheduler("x").dict(), make_pod("b").scheduler("y").dict()]
        code, out, err = run(
            capsys, write(tmp_path, *objects), "-o", "json", "--scheduler-name", "x", "--scheduler-name", "y"
        )
        assert (code, err) == (0, "")
        assert sorted(r["pod"] for r in results(out)) == ["default/a", "default/b"]


class TestFailOnUnschedulable:
    def objects(self) -> list[dict[str, Any]]:
        return [
            make_node("n1").capacity(**CPU1).dict(),
            make_pod("fits").requests(cpu="1").dict(),
            make_pod("too-big").requests(cpu="2").dict(),
        ]

    def test_exit_3_with_the_result_printed(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        code, out, _ = run(capsys, write(tmp_path, *self.objects()), "-o", "json", "--fail-on-unschedulable")
        assert code == 3
        assert [r["node"] for r in results(out)] == ["n1", None]

    def test_exit_0_when_every_reported_pod_is_placed(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        path = write(tmp_path, *self.objects())
        assert run(capsys, path, "--fail-on-unschedulable", "--pod", "default/fits")[0] == 0
        assert run(capsys, path, "--pod", "default/too-big")[0] == 0  # without the flag, unschedulable is 0
        assert run(capsys, path, "--fail-on-unschedulable", "--pod", "default/too-big")[0] == 3


def test_version_flag_prints_what_the_subcommand_prints(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["version"]) == 0
    subcommand = capsys.readouterr().out
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out == subcommand
    assert subcommand.startswith("spread-scheduler ") and "(kube-scheduler v1.35.4)" in subcommand


def test_json_stays_parseable_when_an_ignorable_extender_is_down(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The skipped extender is logged on stderr; stdout holds only the JSON (a log line used to come first)."""
    config = tmp_path / "config.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "extenders:\n- {urlPrefix: 'http://127.0.0.1:1/scheduler', filterVerb: filter, ignorable: true}\n"
    )
    example = Path(__file__).resolve().parent.parent / "examples" / "two-zones.yaml"
    assert main(["simulate", str(example), "--config", str(config), "-o", "json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["results"]
    assert "Skipping extender as it returned error and has ignorable flag set" in err
