"""What the ``schedlab`` command shows: progress bars, and one error boundary for every command.

The boundary turns a deliberate error (bad input, a bad option, an unwritable path) into one
line on stderr and exit code 2, Ctrl-C into exit 130 and SIGTERM into exit 143; anything else
is a bug in schedlab and shows its traceback with a line asking to report it.
"""

from __future__ import annotations

import inspect
import math
import re
import signal
import threading
import traceback
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console
from rich.markup import escape
from typer._coercion import RuntimeParam, build_runtime_param
from typer._param_types import coerce_cli_path
from typer.core import TyperGroup, _TyperParameter

from schedlab.errors import SchedlabError

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID
    from typer._click import Command, Context, HelpFormatter, Parameter

    from schedlab.sim.engine import RunProgress

EXIT_USAGE, EXIT_BUG, EXIT_INTERRUPTED, EXIT_TERMINATED = 2, 1, 130, 143


class Terminated(Exception):
    """SIGTERM arrived."""


def error_line(console: Console, message: str) -> None:
    console.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)


def keep_indented(text: str) -> str:
    """Help text whose indented paragraphs (examples, commands to type) are kept line by line
    instead of rewrapped, by click's ``\\b`` marker."""
    paragraphs = inspect.cleandoc(text).split("\n\n")
    kept = [f"\b\n{p}" if p.strip() and all(line.startswith(" ") for line in p.splitlines() if line.strip())
            else p for p in paragraphs]  # fmt: skip
    return "\n\n".join(kept)


class HelpGroup(TyperGroup):
    """A command group whose help reads well in 80 columns: click's plain layout, examples kept
    line by line, and each command listed with its whole first paragraph (not cut at 45 characters)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.help:
            self.help = keep_indented(self.help)
        for command in self.commands.values():
            if command.help and not isinstance(command, HelpGroup):
                command.help = keep_indented(command.help)

    def parse_args(self, ctx: Context, args: list[str]) -> list[str]:
        _coerce_plainly(self.get_params(ctx))
        return super().parse_args(ctx, args)

    def resolve_command(self, ctx: Context, args: list[str]) -> tuple[str | None, Command | None, list[str]]:
        name, command, rest = super().resolve_command(ctx, args)
        if command is not None and not isinstance(command, HelpGroup):  # a group sees to its own
            # Its help option is made (once) with this context's names, unless it has its own.
            _coerce_plainly(command.params if "help_option_names" in command.context_settings else command.get_params(ctx))
        return name, command, rest

    def format_commands(self, ctx: Context, formatter: HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                first = (command.short_help or command.help or "").replace("\b\n", "").split("\n\n")[0]
                rows.append((name, " ".join(first.split())))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


class BoundaryGroup(HelpGroup):
    """The command group with the error boundary around every subcommand."""

    def invoke(self, ctx: Context) -> Any:
        err = Console(stderr=True)
        in_main = threading.current_thread() is threading.main_thread()
        previous = signal.signal(signal.SIGTERM, _raise_terminated) if in_main else None
        try:
            return super().invoke(ctx)
        except (typer.Exit, typer.Abort):
            raise
        except typer.TyperException as exc:
            usage_ctx = getattr(exc, "ctx", None)
            where = usage_ctx.command_path.split()[1:] if usage_ctx else []
            hint = f" (see 'schedlab {' '.join(where)} --help')" if where else ""
            error_line(err, exc.format_message().replace("\n", " ") + hint)
            raise typer.Exit(EXIT_USAGE) from None
        except SchedlabError as exc:
            error_line(err, str(exc))
            raise typer.Exit(EXIT_USAGE) from None
        except OSError as exc:
            error_line(err, _os_message(exc))
            raise typer.Exit(EXIT_USAGE) from None
        except MemoryError:
            error_line(err, "out of memory: try a smaller workload (--jobs, --window, --sample)")
            raise typer.Exit(EXIT_USAGE) from None
        except KeyboardInterrupt:
            error_line(err, "interrupted; no results were written")
            raise typer.Exit(EXIT_INTERRUPTED) from None
        except Terminated:
            error_line(err, "terminated; no results were written")
            raise typer.Exit(EXIT_TERMINATED) from None
        except Exception:
            err.print(traceback.format_exc(), markup=False, highlight=False)
            error_line(err, "this is a bug in schedlab; please report it with the command and the traceback above")
            raise typer.Exit(EXIT_BUG) from None
        finally:
            if in_main:
                signal.signal(signal.SIGTERM, previous)


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    raise Terminated


def _os_message(exc: OSError) -> str:
    where = f"{exc.filename}: " if exc.filename else ""
    return f"{where}{exc.strerror or exc}"


_NUMBER = {int: re.compile(r"-?[0-9]{1,18}"), float: re.compile(r"-?[0-9]{1,18}(?:\.[0-9]{1,18})?")}


class PlainCoercion(RuntimeParam):
    """typer's coercion of an option, without pydantic when the value is plain.

    typer checks every option with a pydantic adapter; importing pydantic and building them is
    about a fifth of a small run's CPU. A value that plainly is of the option's type (a str, a
    path, a list of str, a decimal int or float within the option's min and max) is converted
    here as the adapter would; any other goes to typer's own coercion, its checks and messages."""

    def _coerce_value(self, value: Any, param: _TyperParameter, ctx: Context) -> Any:
        plain = _plain_value(self.annotation, value, self.parameter_info.min, self.parameter_info.max)
        if plain is None:
            return build_runtime_param(param.type_descriptor)._coerce_value(value, param=param, ctx=ctx)
        if self.annotation is Path:
            return coerce_cli_path(plain, self.parameter_info, path_type=Path, param=param, ctx=ctx)
        return plain


def _coerce_plainly(params: list[Parameter]) -> None:
    """Give the parameters whose type and settings :class:`PlainCoercion` knows that coercion."""
    for param in params:
        if not isinstance(param, _TyperParameter) or param._runtime_param is not None:
            continue
        descriptor = param.type_descriptor
        info = descriptor.parameter_info
        if descriptor.file_annotation is not None or info.parser is not None or info.path_type is not None:
            continue
        if descriptor.annotation in (bool, str, Path, list[str]) or (descriptor.annotation in _NUMBER and not info.clamp):
            param._runtime_param = PlainCoercion(info, descriptor.annotation)


def _plain_value(annotation: Any, value: Any, low: float | None, high: float | None) -> Any:
    """``value`` converted to ``annotation`` when it plainly is one, else None (a bool option
    reaches coercion only with a value that is not a bool: always None)."""
    if annotation is bool:
        return None
    if annotation is str:
        return value if type(value) is str else None
    if annotation is Path:
        return Path(value) if type(value) is str and value else value if isinstance(value, Path) else None
    if annotation == list[str]:
        return list(value) if isinstance(value, (list, tuple)) and all(type(v) is str for v in value) else None
    numbers = (int, float) if annotation is float else (int,)
    if type(value) is str and _NUMBER[annotation].fullmatch(value) or type(value) in numbers:
        number = annotation(value)
        if math.isfinite(number) and (low is None or number >= low) and (high is None or number <= high):
            return number
    return None


class RunBars:
    """One progress bar per run, fed with :class:`RunProgress`; drawn only when stderr is a terminal.

    The bar moves with simulated time over the horizon, or finished jobs over all jobs, so it
    advances through the whole run; :meth:`done` prints a finished run's line above the bars."""

    def __init__(self, labels: list[str], *, enabled: bool) -> None:
        self.console = Console(stderr=True)
        self.enabled = enabled and self.console.is_terminal
        self.labels = labels
        self.bar: Progress | None = None
        if self.enabled:  # rich.progress is imported only to draw
            from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn

            self.bar = Progress(
                TextColumn("[bold]{task.description}"), BarColumn(), TaskProgressColumn(),
                TextColumn("{task.fields[status]}"), TimeElapsedColumn(), TimeRemainingColumn(),
                console=self.console, transient=True,
            )  # fmt: skip
        self.tasks: list[TaskID] = []

    def __enter__(self) -> RunBars:
        if self.bar is not None:
            self.bar.__enter__()
            self.tasks = [self.bar.add_task(label, total=1.0, status="starting") for label in self.labels]
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.bar is not None:
            self.bar.__exit__(*exc)

    def update(self, i: int, progress: RunProgress) -> None:
        if self.bar is None:
            return
        status = (f"day {progress.now / 86400:,.1f} · {progress.finished:,}/{progress.total:,} jobs done"
                  if progress.total else "")  # fmt: skip
        self.bar.update(self.tasks[i], completed=progress.fraction, status=status)

    def tick(self, i: int = 0) -> Callable[[RunProgress], None]:
        """The engine's progress callback for run ``i``."""
        return lambda progress: self.update(i, progress)

    def done(self, i: int, line: str) -> None:
        if self.bar is not None:
            self.bar.update(self.tasks[i], completed=1.0, status="done")
        self.console.print(f"[green]✓[/] [bold]{escape(self.labels[i])}[/] {escape(line)}", highlight=False)
