"""Typed policy parameters: each policy declares a frozen dataclass; values come as text or as Python values.

A field's help is its ``metadata["help"]``. Text (``KEY=VALUE`` from the command line) is
converted by the field's type: ``int``, ``float`` (``inf`` allowed), ``bool`` (true/false,
yes/no, 1/0), ``str``, ``tuple[float, ...]`` (comma-separated) and ``X | None`` (``none``).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from typing import Any

from schedlab.errors import ConfigError

_TRUE, _FALSE = {"true", "yes", "1", "on"}, {"false", "no", "0", "off"}


def help_field(default: Any, help: str) -> Any:
    """A dataclass field with a default and its one-line help."""
    return dataclasses.field(default=default, metadata={"help": help})


def parse(cls: type, policy: str, values: Mapping[str, Any]) -> Any:
    """An instance of the parameter dataclass ``cls`` of ``policy`` with ``values`` set."""
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - known)
    if unknown:
        listed = ", ".join(sorted(known)) or "none"
        raise ConfigError(f"policy '{policy}' has no parameter '{unknown[0]}' (its parameters: {listed})")
    hints = typing.get_type_hints(cls)
    converted = {key: _convert(policy, key, value, hints[key]) for key, value in values.items()}
    try:
        return cls(**converted)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"policy '{policy}': {exc}") from None


def describe(cls: type) -> list[tuple[str, str, str, str]]:
    """(name, type, default, help) of each parameter."""
    hints = typing.get_type_hints(cls)
    rows = []
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            raise ConfigError(f"parameter '{f.name}' of {cls.__name__} has no default")
        rows.append((f.name, _type_name(hints[f.name]), _text(default), f.metadata.get("help", "")))
    return rows


def as_dict(params: Any) -> dict[str, Any]:
    return dataclasses.asdict(params) if params is not None else {}


def _convert(policy: str, key: str, value: Any, hint: Any) -> Any:
    if not isinstance(value, str):
        return value
    text = value.strip()
    try:
        return _from_text(text, hint)
    except ValueError:
        raise ConfigError(f"policy '{policy}', parameter '{key}': expected {_type_name(hint)}, got '{value}'") from None


def _from_text(text: str, hint: Any) -> Any:
    args = typing.get_args(hint)
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        if text.lower() == "none" and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        return _from_text(text, inner[0])
    if typing.get_origin(hint) is tuple:
        return tuple(_from_text(part, args[0]) for part in text.split(",") if part.strip())
    if hint is bool:
        if text.lower() in _TRUE | _FALSE:
            return text.lower() in _TRUE
        raise ValueError(text)
    if hint in (int, float, str):
        return hint(text)
    raise ValueError(text)


def _type_name(hint: Any) -> str:
    args = typing.get_args(hint)
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return " or ".join(_type_name(a) for a in args if a is not type(None)) + " or none"
    if typing.get_origin(hint) is tuple:
        return f"{_type_name(args[0])},{_type_name(args[0])},..."
    return {int: "int", float: "float", bool: "true/false", str: "text"}.get(hint, str(hint))


def _text(value: Any) -> str:
    if isinstance(value, tuple):
        return ",".join(f"{v:g}" if isinstance(v, float) else str(v) for v in value)
    return str(value)
