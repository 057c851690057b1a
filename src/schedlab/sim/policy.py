"""The interface the engine owns: the callbacks a policy implements and the context it acts through.

The engine calls ``setup`` once, then ``on_arrival``, ``on_finish``, ``on_timer`` and
``on_node_on`` as events happen, and ``schedule`` once per timestamp after all events of that
instant. A policy reads the run through a :class:`Context` and changes it only through the
context's checked actions; an impossible action raises :class:`schedlab.errors.ActionError`.

:class:`Context` and :class:`ClusterView` are typing-only protocols: the engine's
:class:`~schedlab.sim.engine.Simulation` is the object passed in, and the protocols name what a
policy may use of it. Nothing in them reaches the future: a policy sees the jobs that have
arrived, and only how many are still to come (``arrivals_left``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence, Set as AbstractSet
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

from schedlab.sim.config import SimConfig

if TYPE_CHECKING:
    import pandas as pd

    from schedlab.cluster.spec import ClusterSpec
    from schedlab.cluster.state import Group, Held
    from schedlab.sim.job import Job
    from schedlab.sim.perf import PerfModel


class ClusterView(Protocol):
    """The cluster state a policy reads (:class:`schedlab.cluster.state.ClusterState`), read-only:
    every change goes through the context's actions, and a tentative one through ``what_if``."""

    @property
    def num_nodes(self) -> int: ...
    @property
    def node_gpus(self) -> Sequence[int]: ...
    @property
    def node_type(self) -> Sequence[str]: ...
    @property
    def node_pool(self) -> Sequence[str]: ...
    @property
    def node_group(self) -> Sequence[int]: ...
    @property
    def groups(self) -> Sequence[Group]: ...
    @property
    def free(self) -> Sequence[int]:
        """Whole free GPUs per node."""
        ...
    @property
    def on(self) -> Sequence[bool]: ...
    @property
    def booting(self) -> AbstractSet[int]: ...
    @property
    def nodes_on(self) -> int: ...
    @property
    def gpu_used(self) -> Sequence[Sequence[int]]:
        """Thousandths of each GPU in use, per node."""
        ...
    @property
    def gpu_jobs(self) -> Sequence[Sequence[int]]:
        """Jobs holding each GPU, per node."""
        ...
    @property
    def pool_gpus_on(self) -> Mapping[str, int]: ...
    @property
    def type_names(self) -> tuple[str, ...]: ...
    @property
    def type_gpus_on(self) -> Sequence[int]: ...
    @property
    def version(self) -> int:
        """Rises whenever an allocation or a node's power changes (a what-if check excepted)."""
        ...
    @property
    def pool_version(self) -> Mapping[str, int]:
        """Per node pool: rises whenever an allocation or a node's power changes in it (a what-if
        check may raise it too)."""
        ...

    def groups_for(self, pool: str, gpu_type: str) -> tuple[Group, ...]: ...
    def free_in(self, groups: tuple[Group, ...]) -> int: ...
    def free_total(self) -> int: ...
    def idle(self, node: int) -> bool: ...
    def fraction_room(self, node: int, milli: int) -> bool: ...

    def what_if(self) -> AbstractContextManager[Callable[[Held, int], None]]:
        """A what-if check: inside, ``release(alloc, milli)`` frees GPUs as if their job had
        stopped; on leaving, even by an exception, every release is undone."""
        ...


class Context(Protocol):
    """What a policy sees of the run and the actions it may take."""

    @property
    def now(self) -> float: ...
    @property
    def cluster(self) -> ClusterSpec: ...
    @property
    def state(self) -> ClusterView: ...
    @property
    def running(self) -> Mapping[int, Job]:
        """Running jobs by arrival index."""
        ...
    @property
    def active(self) -> Mapping[int, Job]:
        """Arrived, unfinished jobs (pending and running) by arrival index."""
        ...
    @property
    def pending_count(self) -> int: ...
    @property
    def arrived(self) -> int:
        """Jobs submitted so far."""
        ...
    @property
    def arrivals_left(self) -> int:
        """Jobs still to be submitted (their contents stay hidden until they arrive)."""
        ...
    @property
    def origin(self) -> pd.Timestamp | None:
        """The calendar time of simulated time 0, when the workload has one."""
        ...

    def remaining(self, job: Job) -> float:
        """Work left now, in reference-GPU seconds."""
        ...
    def attained(self, job: Job) -> float:
        """GPU-seconds of service so far (restore and migration stalls excluded)."""
        ...
    def executed(self, job: Job) -> float:
        """Wall seconds run so far outside stalls."""
        ...
    def migration_cost(self, job: Job) -> tuple[float, float]:
        """What migrating running ``job`` now would cost under the run's checkpoint model:
        (stall seconds on its new GPUs, reference-GPU seconds of work lost)."""
        ...
    @property
    def pause_kills(self) -> bool:
        """Whether a pause under the run's checkpoint model kills the job (``kill``: it loses
        the work since its last periodic checkpoint)."""
        ...

    def pool_of(self, job: Job) -> str:
        """The node pool the job may use: its tenant on a partitioned cluster, else ``""``."""
        ...
    def groups_of(self, job: Job) -> tuple[Group, ...]: ...

    def start(self, job: Job, alloc: Sequence[tuple[int, int]]) -> None:
        """Start (or resume) a pending job on (node, GPU count) pairs."""
        ...
    def preempt(self, job: Job) -> None:
        """Evict a running job: it loses the work since its last checkpoint."""
        ...
    def pause(self, job: Job) -> None:
        """Checkpoint and stop a running job; it keeps its work."""
        ...
    def fork(self, job: Job, copies: Sequence[Sequence[tuple[int, int]]], overhead_s: float = 0.0) -> None:
        """Start a pending job as copies on separate nodes; it progresses at their summed rate."""
        ...
    def migrate(self, job: Job, alloc: Sequence[tuple[int, int]]) -> None: ...
    def resize(self, job: Job, alloc: Sequence[tuple[int, int]]) -> None:
        """Start a pending job, or restart a running one (checkpoint, restore), on an allocation
        of any whole GPU count (elastic training)."""
        ...
    def colocate(self, job: Job, host: Job) -> None:
        """Start a pending job on the GPUs of running ``host``, time-sharing them."""
        ...
    def set_timer(self, at: float, payload: Any = None) -> None: ...
    def power_off(self, node: int) -> None: ...
    def power_on(self, node: int) -> None: ...


class Policy:
    """Base class of every policy: override the callbacks you need."""

    name = "policy"
    jobs_per_gpu = 1  # jobs a GPU may hold at once; above the cluster's, the run allows that sharing

    def perf_model(self, cluster: ClusterSpec, config: SimConfig) -> PerfModel | None:
        """The rates this policy's run uses (None: the engine's :class:`PerfModel` from ``config``);
        a policy that colocates jobs may model their interference here."""
        return None

    def setup(self, ctx: Context) -> None:
        """Called once before the first event."""

    def on_arrival(self, ctx: Context, job: Job) -> None:
        """A job was submitted; it is pending."""

    def on_finish(self, ctx: Context, job: Job) -> None:
        """A job completed; its GPUs are free."""

    def on_timer(self, ctx: Context, payload: object) -> bool | None:
        """A timer set with ``ctx.set_timer`` fired. Return False when it changed nothing
        (a stale timer): the engine then skips the scheduling round it would trigger."""

    def on_node_on(self, ctx: Context, node: int) -> None:
        """A node finished booting."""

    def on_migrated(self, ctx: Context, job: Job) -> None:
        """A running job was moved (``ctx.migrate``, by this policy or a wrapper around it); under
        the ``kill`` checkpoint model it lost the work since its last checkpoint."""

    def on_stopped(self, ctx: Context, job: Job) -> None:
        """A running job was paused or evicted (by this policy or a wrapper around it); it is
        pending again."""

    def schedule(self, ctx: Context) -> None:
        """Decide: start, preempt, migrate... through ``ctx``."""

    def report(self, jobs: Mapping[str, Any]) -> dict[str, Any]:
        """Extra entries for the run's summary (e.g. a predictor's accuracy), given its jobs table
        (column name to values: ``np.asarray(jobs[name])`` reads one)."""
        return {}

    def artifacts(self, out_dir: Any) -> Iterator[Any]:
        """Write extra files of the run into ``out_dir`` (a :class:`pathlib.Path`); yield their paths."""
        return iter(())


class WrappedPolicy(Policy):
    """A policy around another (``inner``): every callback, ``jobs_per_gpu``, the perf model and
    any other attribute (e.g. a predictor's) are the inner policy's until a subclass overrides
    them. The CES service and the ``+defrag`` wrappers are built on it."""

    def __init__(self, inner: Policy) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    @property
    def jobs_per_gpu(self) -> int:  # type: ignore[override]  # the inner policy's, read at run time
        return self.inner.jobs_per_gpu

    def perf_model(self, cluster: ClusterSpec, config: SimConfig) -> PerfModel | None:
        return self.inner.perf_model(cluster, config)

    def setup(self, ctx: Context) -> None:
        self.inner.setup(ctx)

    def on_arrival(self, ctx: Context, job: Job) -> None:
        self.inner.on_arrival(ctx, job)

    def on_finish(self, ctx: Context, job: Job) -> None:
        self.inner.on_finish(ctx, job)

    def on_timer(self, ctx: Context, payload: object) -> bool | None:
        return self.inner.on_timer(ctx, payload)

    def on_node_on(self, ctx: Context, node: int) -> None:
        self.inner.on_node_on(ctx, node)

    def on_migrated(self, ctx: Context, job: Job) -> None:
        self.inner.on_migrated(ctx, job)

    def on_stopped(self, ctx: Context, job: Job) -> None:
        self.inner.on_stopped(ctx, job)

    def schedule(self, ctx: Context) -> None:
        self.inner.schedule(ctx)

    def report(self, jobs: Mapping[str, Any]) -> dict[str, Any]:
        return self.inner.report(jobs)

    def artifacts(self, out_dir: Any) -> Iterator[Any]:
        return self.inner.artifacts(out_dir)
