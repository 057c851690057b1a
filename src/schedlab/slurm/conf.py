"""The sandbox's configuration: what to start (:class:`SandboxSpec`), the files it writes
(``slurm.conf``, ``gres.conf``, ``slurmdbd.conf``) and how a ``slurm.conf`` is read back.

Every path and port lives inside the sandbox's own directory and port range, so a sandbox
never touches the machine's ``/etc/slurm`` or ``/run/munge``.
"""

from __future__ import annotations

import hashlib
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from schedlab.errors import ConfigError

SCHEDULERS = ("backfill", "builtin")
NODE_PREFIX = "gpu-n"
MAX_NODES = 256
SHORT_ROOT = 50  # longer roots keep their Unix sockets elsewhere: a socket path has at most 107 bytes
DEFAULT_PARTITION = "gpu"


@dataclass(frozen=True)
class SandboxSpec:
    """A sandbox: ``nodes`` fake nodes of ``gpus_per_node`` GPUs each.

    ``partitions`` splits the nodes in order into named partitions of the given node counts
    (empty: one partition ``gpu`` with every node). ``extra`` holds further ``slurm.conf``
    lines as KEY=VALUE (e.g. ``PriorityWeightAge=1000``); ``scheduler_parameters`` is Slurm's
    ``SchedulerParameters``. Ports: slurmctld ``port_base``, slurmdbd ``+1``, MariaDB ``+2``,
    the slurmd of node i ``+10+i``. ``power_saving`` turns on Slurm's power saving: a node
    powered down (``scontrol update NodeName=... State=POWER_DOWN_ASAP``) has its slurmd stopped,
    and is started again when powered up or when a job needs it (:mod:`schedlab.slurm.power`).
    """

    nodes: int = 16
    gpus_per_node: int = 8
    gpu_type: str = "a100"
    cpus_per_node: int = 64
    memory_mb: int = 256_000
    partitions: tuple[tuple[str, int], ...] = ()
    accounting: bool = False
    scheduler: str = "backfill"
    scheduler_parameters: str = ""
    extra: tuple[tuple[str, str], ...] = ()
    port_base: int = 16900
    cluster_name: str = "sandbox"
    power_saving: bool = False

    def __post_init__(self) -> None:
        if not 1 <= self.nodes <= MAX_NODES:
            raise ConfigError(f"--nodes must be between 1 and {MAX_NODES} (got {self.nodes})")
        if not 1 <= self.gpus_per_node <= 64:
            raise ConfigError(f"--gpus-per-node must be between 1 and 64 (got {self.gpus_per_node})")
        if self.scheduler not in SCHEDULERS:
            raise ConfigError(f"--scheduler must be one of {', '.join(SCHEDULERS)} (got {self.scheduler!r})")
        if not re.fullmatch(r"[a-z][a-z0-9]*", self.gpu_type):
            raise ConfigError(f"--gpu-type must be lower-case letters and digits, e.g. a100 (got {self.gpu_type!r})")
        if self.partitions:
            total = sum(n for _, n in self.partitions)
            if total != self.nodes:
                raise ConfigError(f"--partitions give {total} nodes but --nodes is {self.nodes}")
        if not 1024 <= self.port_base <= 65535 - 10 - self.nodes:
            raise ConfigError(f"--port-base must leave room for {self.nodes + 10} ports below 65536")

    @property
    def node_names(self) -> list[str]:
        return [f"{NODE_PREFIX}{i}" for i in range(1, self.nodes + 1)]

    @property
    def ports(self) -> dict[str, int]:
        """Every TCP port the sandbox listens on, by daemon."""
        ports = {"slurmctld": self.port_base}
        if self.accounting:
            ports |= {"slurmdbd": self.port_base + 1, "mariadb": self.port_base + 2}
        for i, name in enumerate(self.node_names):
            ports[f"slurmd {name}"] = self.port_base + 10 + i
        return ports

    def partition_nodes(self) -> dict[str, list[str]]:
        """Partition name -> its node names, in order."""
        names = self.node_names
        if not self.partitions:
            return {DEFAULT_PARTITION: names}
        out, at = {}, 0
        for part, count in self.partitions:
            out[part] = names[at : at + count]
            at += count
        return out


def parse_partitions(text: str) -> tuple[tuple[str, int], ...]:
    """``vc1:8,vc2:8`` -> ``(("vc1", 8), ("vc2", 8))``."""
    out: list[tuple[str, int]] = []
    for item in filter(None, (p.strip() for p in text.split(","))):
        name, _, count = item.partition(":")
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", name) or not count.isdigit() or int(count) < 1:
            raise ConfigError(f"--partitions: {item!r} is not NAME:NODES (e.g. vc1:8,vc2:8)")
        if any(name == n for n, _ in out):
            raise ConfigError(f"--partitions: partition {name!r} is given twice")
        out.append((name, int(count)))
    return tuple(out)


def parse_extra(items: list[str]) -> tuple[tuple[str, str], ...]:
    """``["PriorityWeightAge=1000"]`` -> ``(("PriorityWeightAge", "1000"),)``."""
    out = []
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not re.fullmatch(r"[A-Za-z][A-Za-z0-9]*", key.strip()):
            raise ConfigError(f"--conf: {item!r} is not KEY=VALUE (a slurm.conf line, e.g. PriorityWeightAge=1000)")
        out.append((key.strip(), value.strip()))
    return tuple(out)


@dataclass(frozen=True)
class Layout:
    """Where a sandbox keeps its files, all under ``root``."""

    root: Path

    @property
    def slurm_conf(self) -> Path:
        return self.root / "slurm.conf"

    @property
    def gres_conf(self) -> Path:
        return self.root / "gres.conf"

    @property
    def dbd_conf(self) -> Path:
        return self.root / "slurmdbd.conf"

    @property
    def sockets(self) -> Path:
        """Where the Unix sockets live: munged's, and slurmd's spool (job steps make sockets
        ``SPOOL/NODE/NODE_JOB.STEP`` there). The sandbox's own directory when its path is short;
        else a directory named after it in the machine's temporary folder."""
        if len(str(self.root)) <= SHORT_ROOT:
            return self.root
        digest = hashlib.sha1(str(self.root).encode()).hexdigest()[:12]
        return Path(tempfile.gettempdir()) / f"schedlab-slurm-{digest}"

    @property
    def spool(self) -> Path:
        return self.sockets / "spool"

    @property
    def munge_socket(self) -> Path:
        return self.sockets / "munge" / "munge.socket"

    @property
    def munge_key(self) -> Path:
        return self.root / "munge" / "munge.key"

    @property
    def db_socket(self) -> Path:
        return self.root / "db" / "mysql.sock"

    @property
    def logs(self) -> Path:
        return self.root / "log"

    @property
    def state_file(self) -> Path:
        return self.root / "sandbox.json"

    @property
    def devices(self) -> Path:
        return self.root / "dev"

    @property
    def requests(self) -> Path:
        """Requests to the supervisor (stop or start a daemon), one JSON file each."""
        return self.root / "requests"

    @property
    def supervisor_pid(self) -> Path:
        return self.root / "run" / "supervisor.pid"

    @property
    def suspend_program(self) -> Path:
        return self.root / "power" / "suspend"

    @property
    def resume_program(self) -> Path:
        return self.root / "power" / "resume"


def slurm_conf_text(spec: SandboxSpec, layout: Layout) -> str:
    """The sandbox's ``slurm.conf``: Slurm's defaults except where a fake cluster needs otherwise."""
    root = layout.root
    lines = [
        f"ClusterName={spec.cluster_name}",
        "SlurmctldHost=localhost",
        f"SlurmctldPort={spec.port_base}",
        "SlurmUser=root",
        "SlurmdUser=root",
        "AuthType=auth/munge",
        f"AuthInfo=socket={layout.munge_socket}",
        f"StateSaveLocation={root / 'state'}",
        f"SlurmdSpoolDir={layout.spool / '%n'}",
        f"SlurmctldPidFile={root / 'run' / 'slurmctld.pid'}",
        f"SlurmdPidFile={root / 'run' / 'slurmd-%n.pid'}",
        f"SlurmctldLogFile={layout.logs / 'slurmctld.log'}",
        f"SlurmdLogFile={layout.logs / 'slurmd-%n.log'}",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "JobAcctGatherType=jobacct_gather/none",
        "JobCompType=jobcomp/none",
        "MpiDefault=none",
        "MailProg=/bin/true",
        f"SchedulerType=sched/{spec.scheduler}",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core",
        "GresTypes=gpu",
        "PriorityType=priority/multifactor",
        "ReturnToService=2",
        "SlurmdParameters=config_overrides",
        "MinJobAge=3600",  # ended jobs stay in squeue for an hour: a replay reads them back without accounting
        "MaxJobCount=100000",
    ]
    if spec.scheduler_parameters:
        lines.append(f"SchedulerParameters={spec.scheduler_parameters}")
    if spec.power_saving:
        lines += power_saving_lines(layout)
    if spec.accounting:
        lines += [
            "AccountingStorageType=accounting_storage/slurmdbd",
            "AccountingStorageHost=localhost",
            f"AccountingStoragePort={spec.port_base + 1}",
            f"AccountingStoragePass={layout.munge_socket}",
            f"AccountingStorageTRES=gres/gpu,gres/gpu:{spec.gpu_type}",
        ]
    else:
        lines.append("AccountingStorageType=accounting_storage/none")
    overridden = {k for k, _ in spec.extra}
    lines = [line for line in lines if line.split("=", 1)[0] not in overridden]
    for key, value in spec.extra:
        if key == "SlurmctldParameters" and spec.power_saving and "power_save_interval=" not in value:
            value = f"{value},{POWER_SAVE_INTERVAL}" if value else POWER_SAVE_INTERVAL
        lines.append(f"{key}={value}")
    first, last = spec.port_base + 10, spec.port_base + 9 + spec.nodes
    nodes = f"{NODE_PREFIX}[1-{spec.nodes}]" if spec.nodes > 1 else f"{NODE_PREFIX}1"
    ports = f"[{first}-{last}]" if spec.nodes > 1 else str(first)
    lines.append(
        f"NodeName={nodes} NodeHostname=localhost Port={ports} CPUs={spec.cpus_per_node} "
        f"RealMemory={spec.memory_mb} Gres=gpu:{spec.gpu_type}:{spec.gpus_per_node} State=UNKNOWN"
    )
    for i, (part, names) in enumerate(spec.partition_nodes().items()):
        default = " Default=YES" if i == 0 else ""
        lines.append(f"PartitionName={part} Nodes={','.join(names)}{default} MaxTime=INFINITE State=UP")
    return "\n".join(lines) + "\n"


POWER_SAVE_INTERVAL = "power_save_interval=1"


def power_saving_lines(layout: Layout) -> list[str]:
    """Slurm's power saving for fake nodes: nodes are powered down only when asked
    (``SuspendTime`` a year: ``INFINITE`` would turn power saving off), any number at once,
    powered down 5 s after the suspend program ran and given 30 s to come back."""
    return [
        f"SuspendProgram={layout.suspend_program}",
        f"ResumeProgram={layout.resume_program}",
        "SuspendTime=31536000",
        "SuspendTimeout=5",
        "ResumeTimeout=30",
        "SuspendRate=0",
        "ResumeRate=0",
        f"SlurmctldParameters={POWER_SAVE_INTERVAL}",  # look at power states every second, not every 10
    ]


def gres_conf_text(spec: SandboxSpec, layout: Layout) -> str:
    """``gres.conf``: each fake node's GPUs are character devices in the sandbox (no autodetection)."""
    nodes = f"{NODE_PREFIX}[1-{spec.nodes}]" if spec.nodes > 1 else f"{NODE_PREFIX}1"
    last = spec.gpus_per_node - 1
    files = f"{layout.devices}/nvidia[0-{last}]" if last else f"{layout.devices}/nvidia0"
    return f"AutoDetect=off\nNodeName={nodes} Name=gpu Type={spec.gpu_type} File={files}\n"


def dbd_conf_text(spec: SandboxSpec, layout: Layout, password: str) -> str:
    """``slurmdbd.conf``: slurmdbd on MariaDB over loopback, with the sandbox's munge."""
    return "\n".join([
        "AuthType=auth/munge",
        f"AuthInfo=socket={layout.munge_socket}",
        "DbdHost=localhost",
        f"DbdPort={spec.port_base + 1}",
        "SlurmUser=root",
        f"PidFile={layout.root / 'run' / 'slurmdbd.pid'}",
        f"LogFile={layout.logs / 'slurmdbd.log'}",
        "StorageType=accounting_storage/mysql",
        "StorageHost=127.0.0.1",
        f"StoragePort={spec.port_base + 2}",
        "StorageUser=slurm",
        f"StoragePass={password}",
        "StorageLoc=slurm_acct_db",
    ]) + "\n"  # fmt: skip


@dataclass
class SlurmConf:
    """A ``slurm.conf`` read back: its KEY=VALUE settings (last one wins, keys as written),
    nodes with their GPU counts and type, and partitions with their nodes."""

    settings: dict[str, str] = field(default_factory=dict)
    nodes: dict[str, tuple[int, str]] = field(default_factory=dict)
    partitions: dict[str, list[str]] = field(default_factory=dict)
    default_partition: str = ""

    def partition_gpus(self, partition: str) -> list[int]:
        """GPUs of each node of ``partition``."""
        return [self.nodes.get(n, (0, ""))[0] for n in self.partitions[partition]]


def read_slurm_conf(path: Path) -> SlurmConf:
    """Parse the subset of ``slurm.conf`` a sandbox writes (and most sites use)."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read ({exc.strerror})") from exc
    conf = SlurmConf()
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line or "=" not in line:
            continue
        words = dict(w.split("=", 1) for w in line.split() if "=" in w)
        key = line.split("=", 1)[0]
        if key == "NodeName":
            gres = words.get("Gres", "")
            m = re.search(r"gpu(?::([A-Za-z0-9_]+))?:(\d+)", gres)
            count, gtype = (int(m.group(2)), m.group(1) or "") if m else (0, "")
            for name in expand_hostlist(words["NodeName"]):
                conf.nodes[name] = (count, gtype)
        elif key == "PartitionName":
            conf.partitions[words["PartitionName"]] = expand_hostlist(words.get("Nodes", ""))
            if words.get("Default", "").upper() == "YES" or not conf.default_partition:
                conf.default_partition = words["PartitionName"]
        else:
            conf.settings[key] = line.split("=", 1)[1].strip()
    return conf


def expand_hostlist(text: str) -> list[str]:
    """Slurm's host list syntax: ``gpu-n[1-3,5],cpu1`` -> ``["gpu-n1", "gpu-n2", "gpu-n3", "gpu-n5", "cpu1"]``."""
    out: list[str] = []
    for m in re.finditer(r"([^,\[]+)(?:\[([^\]]+)\])?", text):
        stem, ranges = m.group(1), m.group(2)
        if ranges is None:
            out.append(stem)
            continue
        for part in ranges.split(","):
            lo, _, hi = part.partition("-")
            width = len(lo)
            for i in range(int(lo), int(hi or lo) + 1):
                out.append(f"{stem}{i:0{width}d}")
    return out
