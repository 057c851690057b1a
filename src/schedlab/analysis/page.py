"""The characterisation report as one self-contained HTML page."""

from __future__ import annotations

import html
from typing import Any

from schedlab.analysis.sections import Section


def html_page(summary: dict[str, Any], sections: list[Section]) -> str:
    """A self-contained page: the key figures, then each analysis with its text and image."""
    esc = html.escape
    facts = [
        f"{summary['jobs']:,} GPU jobs over {summary['span_days']:.1f} days, {summary['gpu_hours']:,.0f} GPU-hours",
        f"time zero: {summary['origin'] or 'unknown (no dates)'}",
        *(f"skipped by the loader: {n:,} {reason}" for reason, n in sorted(summary["skipped"].items())),
        f"running intervals: {summary['running_basis']}",
    ]
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>Workload characterisation: {esc(summary['source'])}</title>",
        "<style>body{font-family:sans-serif;max-width:960px;margin:2em auto;line-height:1.4}"
        "img{max-width:100%;border:1px solid #ddd}.skipped{color:#777;font-style:italic}</style>",
        "</head><body>",
        f"<h1>Workload characterisation: {esc(summary['source'])}</h1>",
        "<p>Analyses after Hu et al., <i>Characterization and Prediction of Deep Learning Workloads in "
        "Large-Scale GPU Datacenters</i> (SC '21), section 3.</p>",
        "<ul>" + "".join(f"<li>{esc(f)}</li>" for f in facts) + "</ul>",
        "<h2>Key figures</h2><ul>" + "".join(f"<li>{esc(f)}</li>" for f in summary["key_figures"]) + "</ul>",
    ]
    for s in sections:
        parts.append(f'<h2 id="{s.key}">{esc(s.title)}</h2>')
        if s.figure is None:
            parts.append(f'<p class="skipped">{esc(s.text)}</p>')
        else:
            parts.append(f"<p>{esc(s.text)}</p>")
            parts.append(f'<img src="{s.png}" alt="{esc(s.title)}">')
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
