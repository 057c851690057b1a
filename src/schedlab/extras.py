"""Optional dependencies. torch, lightgbm and rapidfuzz come with the ``forecast`` extra
(``pip install 'schedlab[forecast]'``) and are imported only through :func:`require`."""

from __future__ import annotations

import importlib
from types import ModuleType

from schedlab.errors import ConfigError


EXTRAS = {"forecast": "torch, lightgbm, rapidfuzz", "ray": "ray"}


def require(module: str, what: str, extra: str = "forecast") -> ModuleType:
    """Import and return ``module``; if it is not installed, a one-line :class:`ConfigError`
    saying that ``what`` needs the ``extra`` (``forecast`` or ``ray``)."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name != module:  # installed but broken: not a missing extra
            raise
        raise ConfigError(
            f"{what} needs the '{extra}' extra ({EXTRAS[extra]}): pip install 'schedlab[{extra}]'"
        ) from exc
