"""Figure helpers shared by the plotting modules; importing this module loads matplotlib.

Figures are plain :class:`matplotlib.figure.Figure` objects, not pyplot ones: no backend to
select, no display and no global figure list to close them from; ``savefig`` renders with Agg.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from matplotlib.axes import Axes
from matplotlib.figure import Figure

FIGSIZE = (8.0, 4.5)
DPI = 110


def new_figure(figsize: tuple[float, float] = FIGSIZE, *,
               layout: Literal["constrained", "compressed", "tight"] | None = "constrained") -> Figure:
    """An empty off-screen figure."""
    return Figure(figsize=figsize, layout=layout)


def titled_axes(title: str) -> tuple[Figure, Axes]:
    """A new figure with one gridded axes titled ``title``."""
    figure = new_figure()
    axes = figure.add_subplot()
    axes.set_title(title)
    grid(axes)
    return figure, axes


def grid(axes: Axes) -> None:
    """The light background grid of the project's plots."""
    axes.grid(True, alpha=0.3)


def save(figure: Figure, path: Path, **options: Any) -> Path:
    """Write ``figure`` to ``path`` at :data:`DPI` (further ``savefig`` options pass through)."""
    figure.savefig(path, dpi=DPI, **options)
    return path
