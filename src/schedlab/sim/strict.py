"""A guarded context: what a policy may touch, checked at run time.

A policy reads the run only through the members of :class:`~schedlab.sim.policy.Context` and
of the cluster view it returns (:class:`~schedlab.sim.policy.ClusterView`), and changes it only
through the context's actions; a tentative change is made only inside ``state.what_if()``,
which undoes it on exit. The type checker holds policies to that statically;
:class:`StrictContext` holds them to it at run time: any other attribute, any private
(``_``-prefixed) one, any assignment and any write into a list, set or mapping it hands out
raises :class:`StrictContextError`. ``Simulation(..., strict=True)`` hands it to the policy.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from types import BuiltinMethodType, MappingProxyType, MethodType
from typing import Any

from schedlab.cluster.state import Group
from schedlab.sim.policy import ClusterView, Context


class StrictContextError(AttributeError):
    """A policy touched what its context does not offer, or tried to write through it."""


def _members(protocol: type) -> frozenset[str]:
    return frozenset(name for name in vars(protocol) if not name.startswith("_"))


_CONTEXT = _members(Context)
_VIEW = _members(ClusterView)
_GROUP = frozenset(("pool", "gpu_type", "max_gpus", "nodes", "buckets", "free_total", "partial", "first_with"))


class _Freezer:
    """Values as a policy may hold them: containers read-only, all the way down. A node group is
    always handed out as the same guard, so that identity (``is``, ``id``) means what it means
    on the plain context."""

    __slots__ = ("_groups",)

    def __init__(self) -> None:
        self._groups: dict[int, _Guard] = {}

    def __call__(self, value: Any) -> Any:
        if isinstance(value, list):
            return _ReadOnlyList(value, self)
        if isinstance(value, dict):
            return _ReadOnlyMapping(value, self)
        if isinstance(value, (set, frozenset)):
            return frozenset(value)
        if isinstance(value, tuple):
            return tuple(self(v) for v in value)
        if isinstance(value, Group):
            guard = self._groups.get(id(value))
            if guard is None:
                guard = self._groups[id(value)] = _Guard(value, _GROUP, "a node group", self)
            return guard
        if isinstance(value, (MethodType, BuiltinMethodType)):  # the latter: a method of a compiled class
            return self._calls(value)
        return value

    def _calls(self, method: Callable[..., Any]) -> Callable[..., Any]:
        """``method`` whose results are frozen (e.g. the node groups ``groups_of`` returns) and
        which gets the objects behind the guards a policy hands back (a compiled method checks
        its arguments' types)."""

        def call(*args: Any, **kwargs: Any) -> Any:
            return self(method(*map(_unguarded, args), **{k: _unguarded(v) for k, v in kwargs.items()}))

        return call


def _unguarded(value: Any) -> Any:
    """The object behind a guard, or a tuple of them, that a policy passes back to the run."""
    if isinstance(value, _Guard):
        return object.__getattribute__(value, "_target")
    if isinstance(value, tuple):
        return tuple(map(_unguarded, value))
    return value


class _ReadOnlyList(Sequence[Any]):
    """A list a policy may read but not change (``free[0] = 1`` raises)."""

    __slots__ = ("_items", "_freeze")

    def __init__(self, items: list[Any], freeze: _Freezer) -> None:
        self._items = items
        self._freeze = freeze

    def __getitem__(self, index: Any) -> Any:
        item = self._items[index]
        return [self._freeze(v) for v in item] if isinstance(index, slice) else self._freeze(item)

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[Any]:
        return (self._freeze(v) for v in self._items)

    def __eq__(self, other: object) -> bool:
        return list(self) == list(other) if isinstance(other, (list, tuple, _ReadOnlyList)) else NotImplemented

    __hash__ = None  # type: ignore[assignment]  # a view of a mutable list is unhashable, as the list is

    def __setitem__(self, index: Any, value: Any) -> None:
        raise StrictContextError(f"a policy may not write into the cluster state (item {index!r})")


class _ReadOnlyMapping(Mapping[Any, Any]):
    """A dict a policy may read but not change."""

    __slots__ = ("_items", "_freeze")

    def __init__(self, items: dict[Any, Any], freeze: _Freezer) -> None:
        self._items = MappingProxyType(items)
        self._freeze = freeze

    def __getitem__(self, key: Any) -> Any:
        return self._freeze(self._items[key])

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._items)

    def __setitem__(self, key: Any, value: Any) -> None:
        raise StrictContextError(f"a policy may not write into a mapping of its context (key {key!r})")

    def __delitem__(self, key: Any) -> None:
        raise StrictContextError(f"a policy may not delete from a mapping of its context (key {key!r})")


class _Guard:
    """Reads of the allowed ``names`` of ``target``, frozen; everything else raises."""

    __slots__ = ("_target", "_names", "_what", "_freeze")

    def __init__(self, target: Any, names: frozenset[str], what: str, freeze: _Freezer) -> None:
        object.__setattr__(self, "_target", target)
        object.__setattr__(self, "_names", names)
        object.__setattr__(self, "_what", what)
        object.__setattr__(self, "_freeze", freeze)

    def __getattribute__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            return object.__getattribute__(self, name)
        if name not in object.__getattribute__(self, "_names"):
            what = object.__getattribute__(self, "_what")
            raise StrictContextError(f"{what} offers no '{name}' to a policy")
        return object.__getattribute__(self, "_read")(name)

    def _read(self, name: str) -> Any:
        freeze = object.__getattribute__(self, "_freeze")
        return freeze(getattr(object.__getattribute__(self, "_target"), name))

    def __setattr__(self, name: str, value: Any) -> None:
        what = object.__getattribute__(self, "_what")
        raise StrictContextError(f"a policy may not assign '{name}' on {what}")

    def __delattr__(self, name: str) -> None:
        self.__setattr__(name, None)

    def __eq__(self, other: object) -> bool:
        target = object.__getattribute__(self, "_target")
        if isinstance(other, _Guard):
            return bool(target is object.__getattribute__(other, "_target"))
        return bool(target is other)

    def __hash__(self) -> int:
        return id(object.__getattribute__(self, "_target"))


class _StrictView(_Guard):
    """The cluster state through :class:`ClusterView`, read-only."""

    __slots__ = ()

    def __init__(self, state: Any, freeze: _Freezer) -> None:
        super().__init__(state, _VIEW, "the cluster view", freeze)


class StrictContext(_Guard):
    """The :class:`Context` of ``sim``, guarded (module docstring)."""

    __slots__ = ("_view",)

    def __init__(self, sim: Any) -> None:
        freeze = _Freezer()
        super().__init__(sim, _CONTEXT, "the context", freeze)
        object.__setattr__(self, "_view", _StrictView(sim.state, freeze))

    def _read(self, name: str) -> Any:
        if name == "state":
            return object.__getattribute__(self, "_view")
        return super()._read(name)
