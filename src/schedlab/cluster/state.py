"""The mutable cluster: free GPUs per node, indexed so that placement never scans every node.

Nodes are grouped by (pool, GPU type). Each group keeps, for every possible count of whole free
GPUs, the sorted ids of the powered-on nodes with exactly that many free (``buckets``), and the
group's total of free GPUs. A placer asks for "a node with at least g free" by walking at most
``max_gpus`` buckets. Per GPU the state keeps how many jobs hold it and how much of it
(in thousandths) they use, which covers fractional requests and time-shared GPUs. Busy and
powered-on GPUs are also kept per GPU model (``type_busy``, ``type_gpus_on``, indexed like
``type_names``), updated wherever the totals change.

Only :class:`schedlab.sim.engine.Simulation` mutates this object; policies read it.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from schedlab.cluster.spec import ClusterSpec

FULL = 1000  # one whole GPU, in thousandths
Held = tuple[tuple[int, tuple[int, ...]], ...]  # the (node, GPU ids) pairs a job holds


def _drop(bucket: list[int], node: int) -> None:
    """Remove ``node`` from a sorted bucket (plain lists: cheaper than a SortedList up to
    about 5,000 nodes per group; docs/decisions.md)."""
    i = bisect_left(bucket, node)
    if i == len(bucket) or bucket[i] != node:
        raise ValueError(f"node {node} is not in its free-count bucket")
    del bucket[i]


@dataclass(slots=True)
class Group:
    """Powered-on nodes of one pool and GPU type, bucketed by whole free GPUs."""

    pool: str
    gpu_type: str
    max_gpus: int
    nodes: list[int]
    buckets: list[list[int]] = field(default_factory=list)  # sorted node ids per count of free GPUs
    free_total: int = 0
    partial: dict[int, None] = field(default_factory=dict)  # nodes holding a partly used GPU

    def first_with(self, gpus: int) -> int | None:
        """Lowest-id node with exactly the fewest free GPUs that are >= ``gpus`` (best fit)."""
        for k in range(max(gpus, 1), self.max_gpus + 1):
            bucket = self.buckets[k]
            if bucket:
                return bucket[0]
        return None


class ClusterState:
    """Free capacity of a :class:`ClusterSpec`, with per-group indexes."""

    def __init__(self, spec: ClusterSpec) -> None:
        self.spec = spec
        nodes = spec.nodes
        self.num_nodes = len(nodes)
        self.node_gpus: list[int] = [n.num_gpus for n in nodes]
        self.node_type: list[str] = [n.gpu_type for n in nodes]
        self.node_pool: list[str] = [n.pool for n in nodes]
        self.free: list[int] = list(self.node_gpus)
        self.free_ids: list[list[int]] = [list(range(g - 1, -1, -1)) for g in self.node_gpus]
        self.gpu_used: list[list[int]] = [[0] * g for g in self.node_gpus]
        self.gpu_jobs: list[list[int]] = [[0] * g for g in self.node_gpus]
        self.on: list[bool] = [True] * self.num_nodes
        self.booting: set[int] = set()
        self.busy_gpus = 0.0
        self.gpus_on = sum(self.node_gpus)
        self.nodes_on = self.num_nodes
        self.type_names: tuple[str, ...] = tuple(dict.fromkeys(self.node_type))
        type_index = {name: i for i, name in enumerate(self.type_names)}
        self.node_tid: list[int] = [type_index[t] for t in self.node_type]
        self.type_busy: list[float] = [0.0] * len(self.type_names)
        self.type_gpus_on: list[int] = [0] * len(self.type_names)
        for tid, gpus in zip(self.node_tid, self.node_gpus):
            self.type_gpus_on[tid] += gpus
        self.pool_gpus_on: dict[str, int] = {}
        for n in nodes:
            self.pool_gpus_on[n.pool] = self.pool_gpus_on.get(n.pool, 0) + n.num_gpus
        self.groups: list[Group] = []
        self.node_group: list[int] = [0] * self.num_nodes
        index: dict[tuple[str, str], int] = {}
        for i, n in enumerate(nodes):
            key = (n.pool, n.gpu_type)
            if key not in index:
                index[key] = len(self.groups)
                self.groups.append(Group(n.pool, n.gpu_type, 0, []))
            g = self.groups[index[key]]
            g.nodes.append(i)
            g.max_gpus = max(g.max_gpus, n.num_gpus)
            self.node_group[i] = index[key]
        for g in self.groups:
            g.buckets = [[] for _ in range(g.max_gpus + 1)]
            for i in g.nodes:
                insort(g.buckets[self.node_gpus[i]], i)
                g.free_total += self.node_gpus[i]
        self._eligible: dict[tuple[str, str], tuple[Group, ...]] = {}
        self.version = 0  # rises with every change of allocation or power; a what-if leaves it as it was
        self.pool_version = dict.fromkeys(self.node_pool, 0)  # per pool, rises with every change there

    # ----- queries -------------------------------------------------------------------------
    def groups_for(self, pool: str, gpu_type: str) -> tuple[Group, ...]:
        """Groups a job of this pool ("" = shared) and type ("" = any) may run on."""
        key = (pool, gpu_type)
        found = self._eligible.get(key)
        if found is None:
            found = tuple(g for g in self.groups if g.pool == pool and (gpu_type == "" or g.gpu_type == gpu_type))
            self._eligible[key] = found
        return found

    def free_in(self, groups: tuple[Group, ...]) -> int:
        """Whole free GPUs on powered-on nodes of these groups."""
        return groups[0].free_total if len(groups) == 1 else sum(g.free_total for g in groups)

    def free_total(self) -> int:
        return sum(g.free_total for g in self.groups)

    def idle(self, node: int) -> bool:
        return self.free[node] == self.node_gpus[node]

    # ----- mutation (engine only) ---------------------------------------------------------------
    def _move(self, node: int, old_free: int, new_free: int) -> None:
        if self.on[node]:
            g = self.groups[self.node_group[node]]
            bucket = g.buckets[old_free]
            i = bisect_left(bucket, node)
            if i == len(bucket) or bucket[i] != node:
                raise ValueError(f"node {node} is not in its free-count bucket")
            del bucket[i]
            insort(g.buckets[new_free], node)
            g.free_total += new_free - old_free

    def take_whole(self, node: int, count: int) -> tuple[int, ...]:
        """Claim ``count`` whole free GPUs of ``node``; returns their indices."""
        self.version += 1
        self.pool_version[self.node_pool[node]] += 1
        old = self.free[node]
        ids = self.free_ids[node]
        keep = len(ids) - count
        taken = tuple(reversed(ids[keep:]))  # the last ``count`` free ids, last first
        del ids[keep:]
        used = self.gpu_used[node]
        holders = self.gpu_jobs[node]
        for gid in taken:
            used[gid] = FULL
            holders[gid] = 1
        self.free[node] = old - count
        self.busy_gpus += count
        self.type_busy[self.node_tid[node]] += count
        self._move(node, old, old - count)
        return taken

    def take_fraction(self, node: int, milli: int) -> int:
        """Put a fractional request on the fullest GPU of ``node`` that still has room,
        else on a whole free GPU; returns the GPU index."""
        self.version += 1
        self.pool_version[self.node_pool[node]] += 1
        used = self.gpu_used[node]
        best, best_used = -1, -1
        for gid, u in enumerate(used):
            if 0 < u and u + milli <= FULL and self.gpu_jobs[node][gid] > 0 and u > best_used:
                best, best_used = gid, u
        if best < 0:
            best = self.take_whole(node, 1)[0]
            self.busy_gpus -= 1
            self.type_busy[self.node_tid[node]] -= 1
            used[best] = 0
            self.gpu_jobs[node][best] = 0
        self._add_use(node, best, milli)
        return best

    def fraction_room(self, node: int, milli: int) -> bool:
        """Whether ``node`` can take a fractional request of ``milli`` thousandths."""
        if self.free[node] > 0:
            return True
        return any(0 < u <= FULL - milli for u in self.gpu_used[node])

    def share(self, node: int, gids: tuple[int, ...], milli: int) -> None:
        """Add one more job to GPUs that are already held (time-sharing)."""
        self.version += 1
        self.pool_version[self.node_pool[node]] += 1
        for gid in gids:
            self._add_use(node, gid, milli)

    def _add_use(self, node: int, gid: int, milli: int) -> None:
        used = self.gpu_used[node]
        before = min(used[gid], FULL)
        used[gid] += milli
        self.gpu_jobs[node][gid] += 1
        delta = (min(used[gid], FULL) - before) / FULL
        self.busy_gpus += delta
        self.type_busy[self.node_tid[node]] += delta
        self._update_partial(node)

    def release(self, node: int, gids: tuple[int, ...], milli: int) -> None:
        """A job holding ``milli`` of each GPU in ``gids`` on ``node`` leaves."""
        self.version += 1
        self.pool_version[self.node_pool[node]] += 1
        used = self.gpu_used[node]
        holders = self.gpu_jobs[node]
        if milli == FULL:
            for gid in gids:
                if used[gid] != FULL or holders[gid] != 1:
                    break
            else:  # the common case, GPUs a job held alone: each becomes free, without share arithmetic
                for gid in gids:
                    used[gid] = 0
                    holders[gid] = 0
                self.free_ids[node].extend(gids)
                n = len(gids)
                self.busy_gpus -= float(n)
                self.type_busy[self.node_tid[node]] -= float(n)
                old = self.free[node]
                self.free[node] = old + n
                self._move(node, old, old + n)
                return
        freed = 0
        delta = 0.0
        for gid in gids:
            before = min(used[gid], FULL)
            used[gid] -= milli
            holders[gid] -= 1
            if holders[gid] == 0:
                used[gid] = 0
                self.free_ids[node].append(gid)
                freed += 1
            delta += (before - min(used[gid], FULL)) / FULL
        self.busy_gpus -= delta
        self.type_busy[self.node_tid[node]] -= delta
        if freed:
            old = self.free[node]
            self.free[node] = old + freed
            self._move(node, old, old + freed)
        if milli < FULL:
            self._update_partial(node)

    def reclaim(self, node: int, gids: tuple[int, ...], milli: int) -> None:
        """Exact inverse of :meth:`release`: the job holding ``milli`` of ``gids`` comes back
        (used by what-if checks that release GPUs and then restore them)."""
        self.version += 1
        self.pool_version[self.node_pool[node]] += 1
        used = self.gpu_used[node]
        holders = self.gpu_jobs[node]
        taken = 0
        delta = 0.0
        for gid in gids:
            if holders[gid] == 0:
                self.free_ids[node].remove(gid)
                taken += 1
            before = min(used[gid], FULL)
            used[gid] += milli
            holders[gid] += 1
            delta += (min(used[gid], FULL) - before) / FULL
        self.busy_gpus += delta
        self.type_busy[self.node_tid[node]] += delta
        if taken:
            old = self.free[node]
            self.free[node] = old - taken
            self._move(node, old, old - taken)
        if milli < FULL:
            self._update_partial(node)

    @contextmanager
    def what_if(self) -> Iterator[Callable[[Held, int], None]]:
        """A what-if check: inside, ``release(alloc, milli)`` frees a job's GPUs as if it had
        stopped; on leaving, even by an exception, they are taken back in the order released."""
        released: list[tuple[Held, int]] = []
        version = self.version

        def release(alloc: Held, milli: int) -> None:
            for node, gids in alloc:
                self.release(node, gids, milli)
            released.append((alloc, milli))

        try:
            yield release
        finally:
            for alloc, milli in released:
                for node, gids in alloc:
                    self.reclaim(node, gids, milli)
            self.version = version

    def _update_partial(self, node: int) -> None:
        partial = self.groups[self.node_group[node]].partial
        if any(0 < u < FULL for u in self.gpu_used[node]):
            partial[node] = None
        else:
            partial.pop(node, None)

    def power_off(self, node: int) -> None:
        self.version += 1
        self.pool_version[self.node_pool[node]] += 1
        g = self.groups[self.node_group[node]]
        _drop(g.buckets[self.free[node]], node)
        g.free_total -= self.free[node]
        g.partial.pop(node, None)
        self.on[node] = False
        self.gpus_on -= self.node_gpus[node]
        self.type_gpus_on[self.node_tid[node]] -= self.node_gpus[node]
        self.pool_gpus_on[self.node_pool[node]] -= self.node_gpus[node]
        self.nodes_on -= 1

    def power_on(self, node: int) -> None:
        self.version += 1
        self.pool_version[self.node_pool[node]] += 1
        g = self.groups[self.node_group[node]]
        self.on[node] = True
        insort(g.buckets[self.free[node]], node)
        g.free_total += self.free[node]
        self.gpus_on += self.node_gpus[node]
        self.type_gpus_on[self.node_tid[node]] += self.node_gpus[node]
        self.pool_gpus_on[self.node_pool[node]] += self.node_gpus[node]
        self.nodes_on += 1
