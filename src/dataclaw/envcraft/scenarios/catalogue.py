"""The scenario catalogue: the paper's 83 fine-grained scenarios (B.2, Tables 5-14) plus users' own.

A scenario is data (:class:`ScenarioSpec`): the skeletal domain profile that specification expansion
turns into E_spec/T_spec. The built-in ones live in ``data/catalogue.yaml``; users add theirs as YAML
files in the same format in a folder (``--scenarios DIR``): each file holds one scenario mapping or a
``scenarios:`` list of them. A duplicate id (against the built-ins or another file) and a bad file are
refused with one error naming the file and the problem.
"""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Iterable, Iterator, Sequence
from enum import StrEnum
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from dataclaw.core.errors import ConfigError

DATA_DIR = Path(__file__).resolve().parent / "data"
BUILTIN_FILE = DATA_DIR / "catalogue.yaml"
BUILTIN_SOURCE = "builtin"
ID_PATTERN = r"^[a-z][a-z0-9_]{0,63}$"
_ID_RE = re.compile(ID_PATTERN)


class Category(StrEnum):
    """The two halves of the paper's taxonomy: general tool-use (Tables 5-9) and Claw-specific (10-14)."""

    GENERAL = "general"
    CLAW = "claw"


class ScenarioSpec(BaseModel):
    """One fine-grained scenario: what an environment must model, in a sentence or two.

    ``paper_envs`` is the paper's "# Envs" column (environments it kept for the scenario); ``paper_table``
    and ``paper_number`` locate the row. ``archetypes`` optionally pins interaction archetypes (folder
    names under ``envcraft/archetypes``); the paper's tables pin none. ``source`` is set by the loader
    (``builtin`` or the file a user scenario came from), never read from a file.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=ID_PATTERN, description="snake_case slug, unique in the catalogue")
    category: Category
    name: str = Field(min_length=1)
    description: str = Field(min_length=1)
    paper_envs: int | None = Field(default=None, ge=0)
    paper_table: int | None = None
    paper_number: int | None = None
    archetypes: tuple[str, ...] = ()
    source: str = Field(default=BUILTIN_SOURCE, exclude=True)

    @field_validator("name", "description")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return " ".join(value.split())

    @field_validator("archetypes")
    @classmethod
    def _known_archetypes(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        from dataclaw.envcraft import archetypes

        known = archetypes.names()
        unknown = [a for a in value if a not in known]
        if unknown:
            raise ValueError(f"unknown archetype {unknown[0]!r}; known: {', '.join(known)}")
        return value

    def text(self) -> str:
        """Name and description as one line (what retrieval and prompts read)."""
        return f"{self.name}: {self.description}"


class ScenarioFileError(ConfigError):
    """A scenario file that cannot be read: the message names the file and the problem."""


class Catalogue:
    """Scenarios by id, in file order (built-ins first); refuses duplicate ids."""

    def __init__(self, scenarios: Iterable[ScenarioSpec] = ()) -> None:
        self._by_id: dict[str, ScenarioSpec] = {}
        for spec in scenarios:
            self.add(spec)

    def add(self, spec: ScenarioSpec) -> None:
        old = self._by_id.get(spec.id)
        if old is not None:
            raise ScenarioFileError(
                f"scenario file {spec.source}: scenario id {spec.id!r} is already defined in {old.source}"
            )
        self._by_id[spec.id] = spec

    def get(self, scenario_id: str) -> ScenarioSpec:
        """The scenario ``scenario_id``; an unknown id is a ConfigError suggesting close ids."""
        try:
            return self._by_id[scenario_id]
        except KeyError:
            close = difflib.get_close_matches(scenario_id, list(self._by_id), n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else " (list them: dataclaw env scenarios)"
            raise ConfigError(f"unknown scenario {scenario_id!r}{hint}") from None

    def filter(self, category: Category | str | None = None) -> list[ScenarioSpec]:
        """Scenarios of one category (all when None)."""
        if category is None:
            return list(self)
        return [s for s in self if s.category == Category(category)]

    def ids(self) -> list[str]:
        return list(self._by_id)

    def __contains__(self, scenario_id: object) -> bool:
        return scenario_id in self._by_id

    def __iter__(self) -> Iterator[ScenarioSpec]:
        return iter(self._by_id.values())

    def __len__(self) -> int:
        return len(self._by_id)


def _entries(raw: Any, source: str) -> list[Any]:
    """The scenario mappings of one parsed file: a single mapping or ``{"scenarios": [...]}``."""
    if raw is None:
        raise ScenarioFileError(f"scenario file {source}: the file is empty")
    if isinstance(raw, dict) and set(raw) == {"scenarios"}:
        entries = raw["scenarios"]
        if not isinstance(entries, list) or not entries:
            raise ScenarioFileError(f"scenario file {source}: 'scenarios' must be a non-empty list")
        return entries
    if isinstance(raw, dict):
        return [raw]
    raise ScenarioFileError(
        f"scenario file {source}: expected a scenario mapping or a 'scenarios:' list, "
        f"got {type(raw).__name__}"
    )


def _problem(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"]) or "scenario"
    return f"{where}: {err['msg']}"


def read_scenario_file(path: Path, source: str | None = None) -> list[ScenarioSpec]:
    """Parse and validate one YAML file of scenarios (``source`` names it in errors and records)."""
    source = source or str(path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ScenarioFileError(f"scenario file {source}: cannot read it ({exc})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise ScenarioFileError(f"scenario file {source}: not valid YAML{where}") from None
    out: list[ScenarioSpec] = []
    for i, entry in enumerate(_entries(raw, source)):
        if not isinstance(entry, dict):
            raise ScenarioFileError(f"scenario file {source}: entry {i} is not a mapping")
        if "source" in entry:
            raise ScenarioFileError(f"scenario file {source}: entry {i}: 'source' is set by dataclaw")
        label = entry.get("id", f"entry {i}")
        try:
            out.append(ScenarioSpec.model_validate({**entry, "source": source}))
        except ValidationError as exc:
            raise ScenarioFileError(f"scenario file {source}: scenario {label}: {_problem(exc)}") from None
    return out


@functools.cache
def builtin_scenarios() -> tuple[ScenarioSpec, ...]:
    """The paper's 83 scenarios (read once)."""
    return tuple(read_scenario_file(BUILTIN_FILE, BUILTIN_SOURCE))


def scenario_files(directory: Path) -> list[Path]:
    """The ``*.yaml``/``*.yml`` files of a user folder, sorted (other files are not scenarios)."""
    if not directory.is_dir():
        raise ConfigError(f"scenario folder {directory} does not exist or is not a folder")
    return sorted(p for p in directory.iterdir() if p.is_file() and p.suffix in (".yaml", ".yml"))


def load_catalogue(extra_dirs: Sequence[Path | str] = (), *, builtin: bool = True) -> Catalogue:
    """The built-in catalogue plus every scenario file in ``extra_dirs`` (duplicate ids refused)."""
    catalogue = Catalogue(builtin_scenarios() if builtin else ())
    for directory in extra_dirs:
        for path in scenario_files(Path(directory)):
            for spec in read_scenario_file(path):
                catalogue.add(spec)
    return catalogue


def is_scenario_id(value: str) -> bool:
    return bool(_ID_RE.match(value))
