"""Renaming a trace's tenants to a cluster's: a prefix to strip and a CSV of name pairs.

A Chronus trace names its Philly VCs ``vc_0e4a51`` where the ``philly`` preset names them
``0e4a51``; ``--tenant-prefix vc_`` or a ``--tenant-map`` file makes the names meet.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping
from pathlib import Path

from schedlab.errors import InputError

MAP_COLUMNS = ("trace_tenant", "cluster_tenant")


def load_tenant_map(path: Path | str) -> dict[str, str]:
    """Trace tenant → cluster tenant from a CSV with the columns ``trace_tenant,cluster_tenant``."""
    source = str(path)
    try:
        with Path(path).open(newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            header = [c.strip() for c in reader.fieldnames or []]
            reader.fieldnames = header
            rows = list(reader)
    except FileNotFoundError:
        raise InputError("file not found", file=source) from None
    except UnicodeDecodeError:
        raise InputError("not UTF-8 text", file=source) from None
    for col in MAP_COLUMNS:
        if col not in header:
            raise InputError(f"required column is missing (the file has {header})", file=source, field=col)
    mapping: dict[str, str] = {}
    for number, row in enumerate(rows, start=1):
        old, new = ((row.get(c) or "").strip() for c in MAP_COLUMNS)
        if not old or old in mapping:
            raise InputError(f"empty or repeated tenant {old!r}", file=source, row=number, field=MAP_COLUMNS[0])
        if not new:
            raise InputError(f"empty tenant for {old!r}", file=source, row=number, field=MAP_COLUMNS[1])
        mapping[old] = new
    return mapping


def renamed(name: str, mapping: Mapping[str, str], prefix: str) -> str:
    """``name`` as the map gives it; otherwise without ``prefix`` (when it starts with it and more follows)."""
    if name in mapping:
        return mapping[name]
    if prefix and name.startswith(prefix) and len(name) > len(prefix):
        return name[len(prefix) :]
    return name
