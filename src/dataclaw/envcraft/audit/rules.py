"""The rule registry of the static audit: each rule has a stable id, a short name, what it enforces and its
checker; ids and names are unique.

The built-in rules register with :func:`rule` in :mod:`.static` (artifacts, interfaces, tools),
:mod:`.purity` (what package code may call and mutate) and :mod:`.hostpaths` (paths only into the
package's data), imported on the first lookup. Out of tree, a ``dataclaw.audit_rules`` entry point
adds a :class:`Rule` whose id is the entry point's name
(``S900 = pkg.mod:MY_RULE``) or a module that registers its rules with :func:`rule` when imported.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from dataclaw.core.errors import ConfigError
from dataclaw.core.registry import Registry
from dataclaw.envcraft.audit.model import Finding
from dataclaw.envcraft.audit.package import PackageSource

Checker = Callable[[PackageSource], Iterator[Finding]]


@dataclass(frozen=True)
class Rule:
    """A static rule: stable id, short name, what it enforces and its checker."""

    id: str
    name: str
    summary: str
    check: Checker


class _RuleRegistry(Registry[Rule]):
    """Rules by id; a rule must be registered under its own id, and its name is refused twice too."""

    def register(self, name: str, obj: Rule) -> Rule:
        if not isinstance(obj, Rule) or obj.id != name:
            raise ConfigError(f"{self.kind} {name!r} must be a Rule with id {name!r}, not {obj!r}")
        clash = next((r for r in self._items.values() if r.name == obj.name and r.id != obj.id), None)
        if clash is not None:
            raise ConfigError(f"{self.kind} name '{obj.name}' of {obj.id} is already the name of {clash.id}")
        return super().register(name, obj)


RULES: Registry[Rule] = _RuleRegistry(
    "audit rule",
    builtins=[f"dataclaw.envcraft.audit.{m}" for m in ("static", "purity", "hostpaths")],
)


def rule(rule_id: str, name: str, summary: str) -> Callable[[Checker], Checker]:
    """Register a checker under ``rule_id`` (refuses a duplicate id or name)."""

    def wrap(fn: Checker) -> Checker:
        RULES.register(rule_id, Rule(rule_id, name, summary, fn))
        return fn

    return wrap


def finding(rule_id: str, file: str, line: int, message: str) -> Finding:
    """A finding of the rule ``rule_id`` at ``file``:``line``."""
    return Finding(rule=rule_id, name=RULES.get(rule_id).name, file=file, line=line, message=message)
