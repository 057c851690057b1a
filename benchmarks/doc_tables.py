"""Write a sweep's tables into a doc page: the Markdown between ``<!-- sweep-tables NAME -->``
and ``<!-- end sweep-tables -->`` is replaced by the spec's ``[[report.tables]]`` computed
from ``DIR/results.parquet`` (the same text as ``DIR/tables.md`` after ``schedlab report DIR``).

    schedlab sweep experiments/specs/helios-table3.toml --out runs/helios-table3
    python benchmarks/doc_tables.py runs/helios-table3 docs/helios-qssf.md
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pandas as pd

from schedlab.experiments.report_html import spec_table, to_markdown
from schedlab.experiments.spec import load_spec
from schedlab.experiments.sweep import RESULTS, SPEC_COPY


def replace_block(doc: Path, begin: str, end: str, text: str) -> None:
    """Put ``text`` between the lines ``begin`` and ``end`` of ``doc`` (both kept); exit
    naming the markers when the page lacks them."""
    page = doc.read_text()
    pattern = re.compile(rf"({re.escape(begin)}\n).*?({re.escape(end)})", re.S)
    if not pattern.search(page):
        raise SystemExit(f"{doc}: no '{begin}' ... '{end}' block")
    doc.write_text(pattern.sub(lambda m: m.group(1) + "\n" + text + "\n" + m.group(2), page))


def tables_markdown(run_dir: Path) -> tuple[str, str]:
    """(spec name, its tables as Markdown with ``###`` titles)."""
    spec = load_spec(run_dir / SPEC_COPY)
    results = pd.read_parquet(run_dir / RESULTS)
    return spec.name, "\n".join(f"### {t.title}\n\n{to_markdown(spec_table(results, t))}" for t in spec.tables)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", type=Path, help="a sweep directory (schedlab sweep ... --out DIR)")
    parser.add_argument("doc", type=Path, help="the Markdown page holding the markers")
    args = parser.parse_args()
    name, text = tables_markdown(args.run_dir)
    replace_block(args.doc, f"<!-- sweep-tables {name} -->", "<!-- end sweep-tables -->", text)
    print(f"wrote the tables of {name} into {args.doc}")


if __name__ == "__main__":
    main()
