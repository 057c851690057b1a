"""Optional dependencies. torch, lightgbm and rapidfuzz come with the ``forecast`` extra
(``pip install 'schedlab[forecast]'``) and are imported only through :func:`require`."""

from __future__ import annotations

import importlib
from types import ModuleType

from schedlab.errors import ConfigError


def require(module: str, what: str) -> ModuleType:
    """Import and return ``module``; if it is not installed, a one-line :class:`ConfigError`
    saying that ``what`` needs the ``forecast`` extra."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name != module:  # installed but broken: not a missing extra
            raise
        raise ConfigError(
            f"{what} needs the 'forecast' extra (torch, lightgbm, rapidfuzz): pip install 'schedlab[forecast]'"
        ) from exc
