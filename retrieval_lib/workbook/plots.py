"""Figure kinds the notebooks share: each function takes plain data and returns a matplotlib Figure.

A notebook (or a check's figure helper) builds the figure here and hands it to
:meth:`~retrieval_lib.workbook.report.NotebookReport.figure`, which shows, saves and
closes it. Nothing here reads a store, a report or a check: the data comes in
as lists and mappings, so any notebook can draw any of these.

Only the pyplot calls that work under the non-interactive Agg backend are used
(``plt.subplots``, no ``plt.show``), so papermill, nbval and the test suite can
draw figures without a display.

=========================== ===========================================================
:func:`score_histograms`    overlaid histograms of scores per group, a threshold marked
:func:`share_curves`        share of each group kept per threshold, a threshold marked
:func:`horizontal_bars`     one bar per label (files, fields, queries), coloured, annotated
:func:`annotated_heatmap`   a labelled matrix with a text in each cell
:func:`threshold_bars`      stacked panels of bars, each bar against its own threshold mark
:func:`latency_boxes`       per-call times as box plots, and percentiles against a target
:func:`count_histogram`     a histogram of counts on a log count axis, with marked values
=========================== ===========================================================
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple, TypeVar

__all__ = ["plain_text", "plain_figure", "score_histograms", "share_curves", "horizontal_bars", "annotated_heatmap",
           "BarPanel", "threshold_bars", "latency_boxes", "count_histogram"]

#: Colours of the groups a figure compares, in order (in-domain, out-of-domain, ...).
GROUP_COLOURS: tuple[str, ...] = ("tab:blue", "tab:orange", "tab:green", "tab:purple", "tab:brown")
_THRESHOLD_COLOUR = "tab:red"


def plain_text(fig: Any) -> Any:
    """Show every text of ``fig`` as written: no mathtext, no TeX. Returns ``fig``.

    Labels come from the team's collection (titles, file names, chunk text, queries drafted from them), and a
    book about code is full of ``$``: ``mass="${mass}" ixx="${ixx}"`` in a URDF block. Matplotlib reads a label
    with two dollar signs as mathtext and raises ``ValueError: ... Expected end of text, found '$'`` when it draws
    it. :meth:`~retrieval_lib.workbook.report.NotebookReport.figure` calls this before it shows or saves a figure;
    :func:`plain_figure` keeps a builder's own drawing (``tight_layout``) plain as well.
    """
    from matplotlib.text import Text

    for text in fig.findobj(Text):
        text.set_parse_math(False)
        text.set_usetex(False)
    return fig


F = TypeVar("F", bound=Callable[..., Any])


def plain_figure(build: F) -> F:
    """Decorate a function that builds a figure: every text it creates is drawn as written (see
    :func:`plain_text`), also when the builder lays the figure out itself. Every figure builder of the package
    carries it (``tests/workbook/test_plain_text.py`` finds them all)."""

    @functools.wraps(build)
    def plain(*args: Any, **kwargs: Any) -> Any:
        import matplotlib

        with matplotlib.rc_context({"text.parse_math": False, "text.usetex": False}):
            return plain_text(build(*args, **kwargs))

    plain.plain_figure = True  # type: ignore[attr-defined]
    return plain  # type: ignore[return-value]


def _finite(values: Sequence[float]) -> list[float]:
    # NaN (a query without results) has no place on a score axis; it is counted in the legend's n.
    return [float(v) for v in values if v is not None and v == v]


@plain_figure
def score_histograms(panels: Sequence[tuple[str, Mapping[str, Sequence[float]]]], *, threshold: float | None = None,
                     threshold_label: str = "threshold", bins: int = 40,
                     xlabel: str = "similarity score (cosine, clipped to [0, 1])") -> Any:
    """Side-by-side panels of overlaid score histograms over [0, 1].

    Args:
        panels: ``(title, {group label: scores})`` per panel; groups keep their order and colour
            across panels. NaN scores are left out of the bars.
        threshold: drawn as a dashed vertical line on every panel (None: no line).
        threshold_label: the line's legend label (its value is appended).
        bins: number of equal-width bins over [0, 1].
        xlabel: label of the score axis.
    """
    import matplotlib.pyplot as plt
    import numpy as np

    edges = np.linspace(0.0, 1.0, bins + 1)
    fig, axes = plt.subplots(1, max(1, len(panels)), figsize=(6 * max(1, len(panels)), 4), sharex=True, squeeze=False)
    for ax, (title, groups) in zip(axes[0], panels):
        for colour, (label, values) in zip(GROUP_COLOURS, groups.items()):
            ax.hist(_finite(values), bins=edges, alpha=0.65, color=colour, label=f"{label} (n={len(values)})")
        if threshold is not None:
            ax.axvline(threshold, color=_THRESHOLD_COLOUR, linestyle="--", label=f"{threshold_label} = {threshold:g}")
        ax.set(title=title, xlabel=xlabel, ylabel="count", xlim=(0, 1))
        ax.legend(loc="upper left", fontsize=8)
    return fig


@plain_figure
def share_curves(thresholds: Sequence[float], shares: Mapping[str, Sequence[float]], *,
                 threshold: float | None = None, threshold_label: str = "threshold",
                 band: tuple[float, float] | None = None, band_label: str = "gap",
                 marker: float | None = None, marker_label: str = "recommended",
                 title: str = "", xlabel: str = "threshold", ylabel: str = "share") -> Any:
    """One curve per group: the share (0-1) of the group that is kept at each threshold.

    Args:
        thresholds: the x values.
        shares: group label to its share at each threshold.
        threshold: the threshold in use, a dashed red line.
        band: ``(low, high)`` shaded in green, e.g. the gap between two groups.
        marker: a dotted green line, e.g. a recommended threshold (its value is shown to 3 decimals).
        title, xlabel, ylabel: axis texts.
    """
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5))
    for colour, mark, (label, values) in zip(GROUP_COLOURS, "osd^v", shares.items()):
        ax.plot(list(thresholds), list(values), marker=mark, color=colour, label=label)
    if threshold is not None:
        ax.axvline(threshold, color=_THRESHOLD_COLOUR, linestyle="--", label=f"{threshold_label} = {threshold:g}")
    if band is not None:
        ax.axvspan(band[0], band[1], color="tab:green", alpha=0.12, label=band_label)
    if marker is not None:
        ax.axvline(marker, color="tab:green", linestyle=":", label=f"{marker_label} = {marker:.3f}")
    ax.set(title=title, xlabel=xlabel, ylabel=ylabel, xlim=(0, 1), ylim=(-0.03, 1.03))
    ax.legend(loc="center right", fontsize=8)
    return fig


@plain_figure
def horizontal_bars(labels: Sequence[str], values: Sequence[float], *, colours: Sequence[str] | str = "tab:blue",
                    notes: Sequence[str] | None = None, xlabel: str = "", title: str = "",
                    xlim: tuple[float, float] | None = None, reference: float | None = None,
                    reference_label: str = "", label_size: int = 8) -> Any:
    """One horizontal bar per label, first label on top.

    Args:
        labels, values: bar names and lengths, in display order.
        colours: one colour for all bars, or one per bar (e.g. red for a failing one).
        notes: a short text printed just right of each bar (e.g. ``"4/6"``).
        xlabel, title: axis texts.
        xlim: the value axis range (default: matplotlib's).
        reference: a dashed vertical line, e.g. a minimum to reach.
        reference_label: its legend label.
        label_size: font size of the bar names (long file paths need a small one).

    Returns:
        The matplotlib Figure (its height grows with the number of bars).
    """
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 0.32 * max(1, len(labels)) + 1.2))
    ys = list(range(len(labels)))
    ax.barh(ys, list(values), color=colours)
    ax.set_yticks(ys, list(labels))
    if notes is not None:
        right = xlim[1] if xlim else max(list(values), default=1.0)
        for y, (value, note) in zip(ys, zip(values, notes)):
            ax.text(min(float(value), right) + 0.01 * right, y, note, va="center", fontsize=7)
    if reference is not None:
        ax.axvline(reference, color="black", linestyle="--", label=reference_label or None)
        if reference_label:
            ax.legend(loc="lower right", fontsize=8)
    ax.invert_yaxis()
    ax.set(xlabel=xlabel, title=title)
    if xlim is not None:
        ax.set_xlim(*xlim)
    ax.tick_params(axis="y", labelsize=label_size)
    return fig


@plain_figure
def annotated_heatmap(values: Sequence[Sequence[float]], rows: Sequence[str], columns: Sequence[str], *,
                      texts: Sequence[Sequence[str]] | None = None, cmap: str = "RdYlGn", vmin: float = 0.0,
                      vmax: float = 1.0, title: str = "", colorbar_label: str = "") -> Any:
    """A matrix of values as coloured cells, each with a text (default: the value to 2 decimals).

    Args:
        values: ``len(rows)`` lists of ``len(columns)`` numbers (NaN: an empty cell).
        rows, columns: the labels.
        texts: what each cell shows instead of its value (e.g. ``"="`` for identical).
        cmap, vmin, vmax: the colour scale.
        title, colorbar_label: texts.
    """
    import matplotlib.pyplot as plt
    import numpy as np

    matrix = np.array(values, dtype=float).reshape(len(rows), len(columns))
    fig, ax = plt.subplots(figsize=(1.0 * len(columns) + 4, 0.45 * len(rows) + 1.8))
    image = ax.imshow(matrix, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
    for i in range(len(rows)):
        for j in range(len(columns)):
            text = texts[i][j] if texts is not None else ("" if np.isnan(matrix[i, j]) else f"{matrix[i, j]:.2f}")
            ax.text(j, i, text, ha="center", va="center", fontsize=11)
    ax.set_xticks(range(len(columns)), list(columns), rotation=40, ha="right", fontsize=8)
    ax.set_yticks(range(len(rows)), list(rows), fontsize=8)
    ax.set_title(title)
    fig.colorbar(image, ax=ax, label=colorbar_label)
    return fig


class BarPanel(NamedTuple):
    """One panel of :func:`threshold_bars`: a bar per label, each with its own threshold.

    Attributes:
        title: the panel's title.
        labels, values: bar names and lengths, first on top.
        thresholds: one mark per bar (e.g. each query's ``min_score``).
        passed: per bar, green when True, red when False.
        mark_label: the marks' legend label.
    """

    title: str
    labels: Sequence[str]
    values: Sequence[float]
    thresholds: Sequence[float]
    passed: Sequence[bool]
    mark_label: str = "threshold"


@plain_figure
def threshold_bars(panels: Sequence[BarPanel], *, xlabel: str = "similarity score (0-1)",
                   xlim: tuple[float, float] = (0.0, 1.0)) -> Any:
    """Panels stacked on one value axis; each bar is green (passed) or red, with a dashed mark at its threshold.

    Args:
        panels: the panels, top to bottom; each is as tall as its number of bars (at least one).
        xlabel: label of the shared value axis (under the last panel).
        xlim: the value axis range.
    """
    import matplotlib.pyplot as plt

    heights = [max(1, len(p.labels)) for p in panels] or [1]
    fig, axes = plt.subplots(len(heights), 1, figsize=(9, 0.45 * sum(heights) + 2.5), sharex=True, squeeze=False,
                             gridspec_kw={"height_ratios": heights})
    for ax, panel in zip(axes[:, 0], panels):
        ys = list(range(len(panel.labels)))
        ax.barh(ys, [float(v) for v in panel.values], alpha=0.8,
                color=["tab:green" if ok else "tab:red" for ok in panel.passed])
        for y, mark in zip(ys, panel.thresholds):
            ax.plot([mark, mark], [y - 0.4, y + 0.4], color="black", linestyle="--", linewidth=1.5,
                    label=panel.mark_label if y == 0 else None)
        ax.set_yticks(ys, list(panel.labels))
        ax.invert_yaxis()
        ax.set_xlim(*xlim)
        ax.set_title(panel.title)
        if ys:
            ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))
    axes[-1, 0].set_xlabel(xlabel)
    fig.tight_layout()
    return fig


@plain_figure
def latency_boxes(series: Mapping[str, Sequence[float]], percentiles: Mapping[str, float], *, target: float,
                  target_label: str = "target", title: str = "latency per call", unit: str = "ms") -> Any:
    """Left: each series' per-call times as a box plot; right: the percentiles as bars; both on a log scale.

    Args:
        series: label to per-call times (e.g. embedding, search, whole call); empty series are left out.
        percentiles: name to value (e.g. ``{"p50": ..., "p95": ..., "p99": ...}``), shown as bars.
        target: a dashed red line on both panels (e.g. the p95 target).
        target_label: its legend label (the value and unit are appended).
        title: the left panel's title.
        unit: the unit of every value, for the axis labels and the bar annotations.
    """
    import matplotlib.pyplot as plt

    kept = {label: list(values) for label, values in series.items() if len(values)}
    line = f"{target_label} {target:g} {unit}"
    fig, (box, bars) = plt.subplots(1, 2, figsize=(13, 4.5), gridspec_kw={"width_ratios": [3, 2]})
    if kept:
        box.boxplot(list(kept.values()), tick_labels=list(kept), showfliers=True)
    box.set_yscale("log")
    box.set(ylabel=f"{unit} (log scale)", title=title)
    box.axhline(target, color=_THRESHOLD_COLOUR, linestyle="--", label=line)
    box.legend(loc="lower right")
    names, values = list(percentiles), [float(v) for v in percentiles.values()]
    bars.bar(names, values, color=list(GROUP_COLOURS[:len(names)]))
    bars.axhline(target, color=_THRESHOLD_COLOUR, linestyle="--", label=line)
    for x, v in enumerate(values):
        bars.annotate(f"{v:.0f} {unit}", (x, v), ha="center", va="bottom")
    bars.set_yscale("log")
    if values:
        bars.set_ylim(min(min(values), target) / 2, max(max(values), target) * 3)
    bars.set(ylabel=f"{unit} (log scale)", title="percentiles against the target")
    bars.legend(loc="upper left")
    fig.tight_layout()
    return fig


@plain_figure
def count_histogram(values: Sequence[float], *, marks: Mapping[str, float] | None = None, bins: int = 40,
                    xlabel: str = "", title: str = "") -> Any:
    """A histogram of counts (e.g. how often each chunk is retrieved) with a log-scaled count axis.

    Args:
        values: one value per item (NaN left out).
        marks: label to value, each a dashed vertical line (e.g. a mean and a hub threshold).
        bins: number of equal-width bins over the values' range.
        xlabel, title: axis texts.

    Returns:
        The matplotlib Figure. The log axis keeps a handful of extreme items visible beside thousands.
    """
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5))
    ax.hist(_finite(values), bins=bins, color=GROUP_COLOURS[0], alpha=0.8, log=True)
    for colour, (label, value) in zip((_THRESHOLD_COLOUR, "black", "tab:green"), (marks or {}).items()):
        ax.axvline(value, color=colour, linestyle="--", label=f"{label} = {value:.1f}")
    if marks:
        ax.legend(loc="upper right", fontsize=8)
    ax.set(xlabel=xlabel, ylabel="items (log scale)", title=title)
    return fig
