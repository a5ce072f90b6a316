"""``skew --plot FILE.png``: a bar chart of pods per domain, one panel per workload and constraint.

matplotlib is an optional extra (``pip install 'spread-scheduler[plot]'``), imported only here and
only when a plot is asked for; without it the caller gets ``PlotUnavailableError`` naming the extra.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from scheduler.skew.report import WorkloadReport

__all__ = ["MAX_BARS", "PLOT_EXTRA_MESSAGE", "PlotUnavailableError", "plot"]

PLOT_EXTRA_MESSAGE = "--plot needs matplotlib: pip install 'spread-scheduler[plot]'"
MAX_BARS = 40  # per panel, the fullest domains; a hostname constraint over 5,000 nodes stays readable


class PlotUnavailableError(RuntimeError):
    """matplotlib is not installed."""


def plot(workloads: Sequence[WorkloadReport], out: str | Path) -> int:
    """Write the chart to ``out``; returns the number of panels (0: nothing to draw, no file written).

    Each bar is a domain's count (red where some pod of the workload violates the constraint there);
    the dashed line is the most a domain may hold before its pods violate: global minimum + maxSkew.
    """
    panels = [(w, c) for w in workloads for c in w.constraints]
    if not panels:
        return 0
    try:
        import matplotlib  # noqa: PLC0415 - optional extra, only for --plot

        matplotlib.use("Agg")  # files only, no display
        import matplotlib.pyplot as plt  # noqa: PLC0415
    except ImportError as exc:
        raise PlotUnavailableError(PLOT_EXTRA_MESSAGE) from exc
    cols = min(3, len(panels))
    rows = math.ceil(len(panels) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.2 * rows), squeeze=False)
    for ax in axes.flat[len(panels) :]:
        ax.set_visible(False)
    for ax, (w, c) in zip(axes.flat, panels, strict=False):
        fullest = sorted(c.domains.items(), key=lambda item: (-item[1], item[0]))[:MAX_BARS]
        shown = sorted(fullest)
        limit = c.global_minimum + c.max_skew
        hard = c.violated is not None
        colors = ["tab:red" if hard and n > limit else "tab:blue" for _, n in shown]
        ax.bar([d or '""' for d, _ in shown], [n for _, n in shown], color=colors)
        if hard:
            ax.axhline(limit, color="black", linestyle="--", linewidth=1, label=f"min {c.global_minimum} + maxSkew")
            ax.legend(fontsize=7, loc="upper right")
        more = f" ({len(c.domains) - len(shown)} more not shown)" if len(c.domains) > len(shown) else ""
        ax.set_title(
            f"{w.namespace}/{w.kind}/{w.name}\n{c.topology_key} maxSkew={c.max_skew} {c.when_unsatisfiable}{more}",
            fontsize=8,
        )
        ax.set_ylabel("matching pods", fontsize=8)
        ax.tick_params(axis="x", labelrotation=45, labelsize=7)
        ax.tick_params(axis="y", labelsize=7)
        ax.yaxis.get_major_locator().set_params(integer=True)
    fig.tight_layout()
    fig.savefig(out, dpi=80)
    plt.close(fig)
    return len(panels)
