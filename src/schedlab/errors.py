"""Errors that schedlab raises on purpose: each names what is wrong and where."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class SchedlabError(Exception):
    """Base class of every error schedlab raises deliberately."""


class InputError(SchedlabError):
    """Bad input data: names the file, the row (1-based data row) and the field, on one line."""

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        row: int | None = None,
        field: str | None = None,
    ) -> None:
        self.file = file
        self.row = row
        self.field = field
        self.reason = " ".join(message.split())
        where = []
        if file is not None:
            where.append(str(file))
        if row is not None:
            where.append(f"row {row}")
        if field is not None:
            where.append(f"field '{field}'")
        prefix = ", ".join(where)
        super().__init__(f"{prefix}: {self.reason}" if prefix else self.reason)


class ConfigError(SchedlabError):
    """A bad option: unknown policy, preset or profile, inconsistent settings."""


class ActionError(SchedlabError):
    """A policy asked the engine for something impossible; names the policy and the job."""

    def __init__(self, policy: str, job_id: str | None, message: str) -> None:
        self.policy = policy
        self.job_id = job_id
        who = f"policy '{policy}'" + (f", job '{job_id}'" if job_id is not None else "")
        super().__init__(f"{who}: {message}")


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """`` (did you mean 'X'?)`` for the closest of ``choices`` to a mistyped ``name``, else ''."""
    close = difflib.get_close_matches(name, list(choices), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""
