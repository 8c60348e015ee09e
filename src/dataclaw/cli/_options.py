"""Typer options generated from config dataclasses, so each option is declared once (TRL's idea:
``HfArgumentParser`` builds a command line from a dataclass's fields, defaults and ``help`` metadata).

A field becomes ``--field-name`` (or the ``flags`` of its metadata) with the field's type and default and
the ``help`` of its metadata; a field with a ``default_factory`` shows no default on the command line
(None there means the factory's value). :func:`with_options` puts a group of such options where one
parameter of a command stands, and hands the command that parameter as a built dataclass or a dict::

    @app.command("ingest")
    @with_options(executor=ExecutorOptions, knobs=fields_of(TailorRunConfig, "seed", "workers"))
    def ingest(inputs: ..., knobs: dict[str, Any], executor: ExecutorOptions) -> None: ...
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

import typer

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class OptionGroup:
    """The options of ``cls``'s fields: all of them, or those ``names``. The command gets ``cls(**values)``
    when every field is an option, else the dict of values (to build its config with what else it knows)."""

    cls: type
    names: tuple[str, ...] = ()

    def fields(self) -> list[dataclasses.Field[Any]]:
        by_name = {f.name: f for f in dataclasses.fields(self.cls)}
        unknown = [n for n in self.names if n not in by_name]
        if unknown:
            raise TypeError(f"{self.cls.__name__} has no field {', '.join(unknown)}")
        return [by_name[n] for n in self.names] if self.names else list(by_name.values())

    def parameters(self) -> list[inspect.Parameter]:
        """One keyword parameter per field, annotated with its typer option."""
        out = []
        for f in self.fields():
            if "help" not in f.metadata:
                raise TypeError(f"{self.cls.__name__}.{f.name} has no help metadata: it cannot be an option")
            kind = _field_type(self.cls, f)
            default = f.default
            if default is dataclasses.MISSING:
                if f.default_factory is dataclasses.MISSING:
                    raise TypeError(f"{self.cls.__name__}.{f.name} has no default: it cannot be an option")
                default, kind = None, kind | None
            option = typer.Option(*f.metadata.get("flags", ()), help=f.metadata["help"])
            out.append(
                inspect.Parameter(
                    f.name,
                    inspect.Parameter.KEYWORD_ONLY,
                    default=default,
                    annotation=Annotated[kind, option],
                )
            )
        return out

    def collect(self, values: dict[str, Any]) -> Any:
        """Take this group's values out of a command's keyword arguments: the dataclass, or a dict."""
        mine: dict[str, Any] = {}
        for f in self.fields():
            value = values.pop(f.name)
            if value is None and f.default is dataclasses.MISSING:
                value = f.default_factory()  # type: ignore[misc]
            mine[f.name] = value
        return mine if self.names else self.cls(**mine)


def fields_of(cls: type, *names: str) -> OptionGroup:
    """Options for some fields of ``cls`` (the command gets a dict of their values)."""
    return OptionGroup(cls, names)


def _field_type(cls: type, f: dataclasses.Field[Any]) -> Any:
    """A field's type, evaluated in its class's module (annotations may be strings)."""
    if not isinstance(f.type, str):
        return f.type
    return eval(f.type, vars(sys.modules[cls.__module__]))  # the class's own annotation


def with_options(**groups: type | OptionGroup) -> Callable[[F], F]:
    """Replace each named parameter of the command by the options of its group (a dataclass, all fields,
    or :func:`fields_of`), in place; the command is called with that parameter built from them."""
    resolved = {name: g if isinstance(g, OptionGroup) else OptionGroup(g) for name, g in groups.items()}

    def decorate(func: F) -> F:
        params: list[inspect.Parameter] = []
        for p in inspect.signature(func, eval_str=True).parameters.values():
            group = resolved.get(p.name)
            params += group.parameters() if group else [p.replace(kind=inspect.Parameter.KEYWORD_ONLY)]
        names = [p.name for p in params]
        clash = {n for n in names if names.count(n) > 1}
        if clash:
            raise TypeError(f"{func.__name__}: options {', '.join(sorted(clash))} are declared twice")

        @functools.wraps(func)
        def command(**values: Any) -> Any:
            for name, group in resolved.items():
                values[name] = group.collect(values)
            return func(**values)

        command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in params}
        return command  # type: ignore[return-value]

    return decorate
