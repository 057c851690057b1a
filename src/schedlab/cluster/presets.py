"""Ready-made clusters: uniform, Helios (Venus / Earth VCs), Philly VCs, the GFS inventory and A100 cluster.

Presets built from a public file take that file's path; each also has a built-in form
(the published totals), so the product works without the data folder.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from schedlab.cluster.spec import GPU_CATALOG, ClusterSpec, NodeSpec, TenantSpec, gpu_type
from schedlab.errors import ConfigError, InputError, did_you_mean
from schedlab.workload.schema import shown

if TYPE_CHECKING:
    import pandas as pd

# DGX-1-class server idle power (Helios §4.3 uses ~800 W per idle node).
DGX_IDLE_W = 800.0

# Venus VC sizes in 8-GPU nodes on 2020-09-01, the first day of the QSSF evaluation month
# (HeliosData Venus/cluster_gpu_number.csv; the 16 non-empty VCs, 1,064 GPUs).
VENUS_SEPT_NODES = {
    "vcEwI": 9, "vcWoR": 8, "vcHvQ": 8, "vcvGl": 20, "vc8Gr": 6, "vcKeu": 12, "vcKrE": 4, "vcYVn": 11,
    "vchbv": 4, "vcLTP": 8, "vcJLV": 2, "vchA3": 3, "vcJsw": 25, "vcefl": 10, "vcvlY": 2, "vcgkz": 1,
}  # fmt: skip
# Philly VC sizes in nodes used by the Helios QSSF Philly simulation (philly_vc.csv).
PHILLY_VC_NODES = {
    "6214e9": 64, "7f04ca": 32, "11cb48": 16, "b436b2": 64, "ee9e8c": 64, "e13805": 16,
    "6c71a0": 32, "2869ce": 16, "ed69ec": 8, "103959": 8, "0e4a51": 32,
}  # fmt: skip
# GFS spot-trace inventory (node_info_df.csv): (gpu model, GPUs per node) -> nodes.
GFS_INVENTORY = {
    ("A10", 1): 2494, ("A100-SXM4-80GB", 8): 432, ("A800-SXM4-80GB", 8): 22, ("GPU-series-1", 1): 902,
    ("GPU-series-1", 4): 10, ("GPU-series-1", 8): 77, ("GPU-series-2", 8): 122, ("H800", 8): 219,
}  # fmt: skip
GFS_A100_NODES = 287  # GFS paper §4.1: "1 cluster with 2,296 A100 GPUs (287 8-card nodes)"


def uniform(num_nodes: int = 16, gpus_per_node: int = 8, gpu: str = "V100", name: str | None = None) -> ClusterSpec:
    """``num_nodes`` identical servers in one shared pool, 4 nodes per rack."""
    if num_nodes <= 0 or gpus_per_node <= 0:
        raise ConfigError("a uniform cluster needs at least one node and one GPU per node")
    nodes = tuple(
        NodeSpec(f"n{i}", gpu, gpus_per_node, rack=f"r{i // 4}", idle_power_w=DGX_IDLE_W) for i in range(num_nodes)
    )
    return ClusterSpec(name or f"uniform-{num_nodes}x{gpus_per_node}", {gpu: gpu_type(gpu)}, nodes)


def hadar_60() -> ClusterSpec:
    """The Hadar §IV / Gavel simulation cluster: 15 nodes of 4 GPUs, 20 each V100, P100, K80
    (5 nodes per type, one rack per type), one shared pool."""
    nodes = tuple(
        NodeSpec(f"{gpu.lower()}-n{i}", gpu, 4, rack=gpu, idle_power_w=_idle_w(4))
        for gpu in ("V100", "P100", "K80")
        for i in range(5)
    )
    return ClusterSpec("hadar-60", {g: gpu_type(g) for g in ("V100", "P100", "K80")}, nodes)


def partitioned(vc_nodes: dict[str, int], *, name: str, gpus_per_node: int = 8, gpu: str = "V100") -> ClusterSpec:
    """A statically partitioned cluster: each VC owns its nodes (Helios, Philly)."""
    nodes: list[NodeSpec] = []
    for vc, count in vc_nodes.items():
        nodes.extend(
            NodeSpec(f"{vc}-n{i}", gpu, gpus_per_node, rack=vc, pool=vc, idle_power_w=DGX_IDLE_W)
            for i in range(int(count))
        )
    tenants = {vc: TenantSpec(vc, quota_gpus=float(c * gpus_per_node)) for vc, c in vc_nodes.items() if c > 0}
    return ClusterSpec(name, {gpu: gpu_type(gpu)}, tuple(nodes), tenants, partitioned=True)


def helios_from_gpu_numbers(path: str | Path, date: str | None = None, *, name: str | None = None) -> ClusterSpec:
    """A Helios cluster from HeliosData ``cluster_gpu_number.csv`` (date, one column per VC, total).

    Uses the row of ``date`` (default: the last row); VCs with 0 GPUs are left out.
    """
    path = Path(path)
    table = _read_table(path, "cluster GPU numbers")
    if "date" not in table.columns:
        raise InputError("required column is missing", file=str(path), field="date")
    if date is None:
        row_idx = len(table) - 1
    else:
        hits = table.index[table["date"].astype(str) == date]
        if len(hits) == 0:
            raise InputError(f"no row for date {date!r}", file=str(path), field="date")
        row_idx = int(hits[0])
    row = table.iloc[row_idx]
    import pandas as pd

    vcs: dict[str, int] = {}
    for col in table.columns:
        if col in ("date", "total"):
            continue
        value = pd.to_numeric(row[col], errors="coerce")
        if pd.isna(value) or value < 0 or value % 8:
            raise InputError(f"GPU count must be a non-negative multiple of 8, got {shown(row[col])}",
                             file=str(path), row=row_idx + 1, field=col)  # fmt: skip
        if value > 0:
            vcs[col] = int(value) // 8
    return partitioned(vcs, name=name or f"helios-{path.stem}-{row['date']}")


def gfs_from_inventory(path: str | Path) -> ClusterSpec:
    """The GFS cluster from ``node_info_df.csv`` (gpu_model, gpu_capacity_num, cpu_num, node_name)."""
    path = Path(path)
    table = _read_table(path, "the node inventory")
    for col in ("gpu_model", "gpu_capacity_num", "node_name"):
        if col not in table.columns:
            raise InputError("required column is missing", file=str(path), field=col)
    gpus = _whole(table, "gpu_capacity_num", path, positive=True)
    cpus = _whole(table, "cpu_num", path) if "cpu_num" in table.columns else [0] * len(table)
    nodes = tuple(
        NodeSpec(str(n), str(m), int(g), rack=str(m), num_cpus=int(c), idle_power_w=_idle_w(int(g)))
        for n, m, g, c in zip(table["node_name"], table["gpu_model"], gpus, cpus, strict=True)
    )
    return _gfs_spec(nodes)


def _read_table(path: Path, what: str) -> pd.DataFrame:
    """A cluster CSV file; one that cannot be read is an :class:`InputError` naming it."""
    import pandas as pd  # imported on use: the built-in presets need no file

    try:
        return pd.read_csv(path)
    except (OSError, ValueError) as exc:  # ValueError: pandas' parse errors, bytes that are not UTF-8
        raise InputError(f"cannot read {what}: {exc}", file=str(path)) from None


def _whole(table: pd.DataFrame, col: str, path: Path, *, positive: bool = False) -> list[int]:
    """A column of whole numbers, positive or else non-negative with blanks as 0; raises at another value."""
    import pandas as pd

    values = pd.to_numeric(table[col], errors="coerce")
    if not positive:
        values = values.where(table[col].notna(), 0)
    bad = np.flatnonzero((values.isna() | (values % 1 != 0) | (values < 1 if positive else values < 0)).to_numpy())
    if bad.size:
        i = int(bad[0])
        what = "a positive" if positive else "a non-negative"
        raise InputError(f"must be {what} whole number, got {shown(table[col].iloc[i])}", file=str(path), row=i + 1,
                         field=col)  # fmt: skip
    return [int(v) for v in values]


def gfs_builtin() -> ClusterSpec:
    """The GFS inventory from its published per-model node counts (same shape as the file)."""
    nodes: list[NodeSpec] = []
    for (model, size), count in GFS_INVENTORY.items():
        nodes.extend(
            NodeSpec(f"{model}-{size}-{i}", model, size, rack=model, idle_power_w=_idle_w(size)) for i in range(count)
        )
    return _gfs_spec(tuple(nodes))


def gfs_a100() -> ClusterSpec:
    """The GFS paper's simulated cluster (§4.1): 287 eight-GPU A100 nodes (2,296 GPUs) in one
    shared pool, the GPU named as in the GFS inventory so the ``gfs-a100`` jobs run at speed 1."""
    from schedlab.workload.synthetic import GFS_A100_GPU  # imported on use: the generators' module

    return uniform(GFS_A100_NODES, 8, GFS_A100_GPU, name="gfs-a100")


def _gfs_spec(nodes: tuple[NodeSpec, ...]) -> ClusterSpec:
    types = {n.gpu_type: gpu_type(n.gpu_type) for n in nodes}
    return ClusterSpec("gfs", types, nodes)


def _idle_w(gpus: int) -> float:
    return DGX_IDLE_W * gpus / 8


PRESETS: dict[str, tuple[str, Callable[[], ClusterSpec]]] = {
    "uniform": ("16 nodes x 8 V100 in one shared pool", lambda: uniform()),
    "uniform-800x8": ("800 nodes x 8 GPUs = 6,400 GPUs (benchmark scale)", lambda: uniform(800, 8)),
    "venus": ("Helios Venus, 16 VCs of 8-GPU nodes, 2020-09-01 (1,064 GPUs, partitioned)",
              lambda: partitioned(VENUS_SEPT_NODES, name="venus")),
    "philly": ("Philly, 11 VCs of 8-GPU nodes as in the Helios QSSF simulation (2,816 GPUs, partitioned)",
               lambda: partitioned(PHILLY_VC_NODES, name="philly")),
    "hadar-60": ("Hadar/Gavel simulation cluster: 15 nodes x 4 GPUs, 20 each V100, P100, K80 (shared pool)",
                 lambda: hadar_60()),
    "gfs": ("GFS spot-trace inventory: 4,278 nodes, 10,412 GPUs, 6 GPU models, shared pool",
            lambda: gfs_builtin()),
    "gfs-a100": ("GFS paper's simulated cluster (§4.1): 287 nodes x 8 A100 = 2,296 GPUs, shared pool",
                 lambda: gfs_a100()),
}  # fmt: skip


def preset_names() -> list[str]:
    return list(PRESETS)


MAX_UNIFORM_NODES = 100_000  # far beyond any public trace's cluster (a few thousand nodes); more only exhausts memory
MAX_GPUS_PER_NODE = 64


def load_cluster(spec: str) -> ClusterSpec:
    """Resolve a cluster option: a preset name, ``uniform:NxG[:TYPE]``,
    ``helios:PATH[@DATE]`` (a cluster_gpu_number.csv) or ``gfs:PATH`` (a node_info_df.csv).

    ``helios-vcs[@LOAD]`` is sized to the jobs of a run (:mod:`schedlab.cluster.sizing`), so it
    is built where the workload is known, not here."""
    if spec in PRESETS:
        return PRESETS[spec][1]()
    kind, _, arg = spec.partition(":")
    if kind == "uniform" and arg:
        shape, _, gpu = arg.partition(":")
        try:
            n, g = (int(x) for x in shape.lower().split("x"))
        except ValueError as exc:
            raise ConfigError(f"cluster '{spec}': expected uniform:NxG, e.g. uniform:800x8") from exc
        if not (1 <= n <= MAX_UNIFORM_NODES and 1 <= g <= MAX_GPUS_PER_NODE):
            raise ConfigError(f"cluster '{spec}': N must be 1-{MAX_UNIFORM_NODES:,} nodes and G 1-{MAX_GPUS_PER_NODE} "
                              "GPUs per node")  # fmt: skip
        if gpu and gpu.lower() not in {k.lower() for k in GPU_CATALOG}:
            raise ConfigError(f"cluster '{spec}': unknown GPU type {gpu!r}; known (any case, e.g. Slurm's a100): "
                              f"{', '.join(GPU_CATALOG)}")  # fmt: skip
        return uniform(n, g, gpu or "V100")
    if kind == "helios" and arg:
        path, _, date = arg.partition("@")
        return helios_from_gpu_numbers(path, date or None)
    if kind == "gfs" and arg:
        return gfs_from_inventory(arg)
    if spec.partition("@")[0] == "helios-vcs":
        raise ConfigError(f"cluster '{spec}' is sized to the jobs of a run: use it with simulate or compare")
    raise ConfigError(
        f"unknown cluster '{spec}'{did_you_mean(spec, PRESETS)}. Presets: {', '.join(PRESETS)}; or uniform:NxG[:TYPE], "
        "helios:PATH[@DATE], gfs:PATH, helios-vcs[@LOAD] (VCs sized to the run's jobs)"
    )
