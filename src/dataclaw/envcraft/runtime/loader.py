"""Load an environment package (an importable module or a folder on disk) and check its layout."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from dataclaw.envcraft.runtime.environment import Environment

SKILL_MAX_LINES = 50


def ConfigError(message: str) -> Exception:
    """:class:`dataclaw.core.errors.ConfigError`, imported lazily: the env CLI must start fast."""
    from dataclaw.core.errors import ConfigError as _ConfigError

    return _ConfigError(message)


@dataclass(frozen=True)
class EnvPackage:
    """A loaded environment package: its ``ENVIRONMENT`` class, import name and folder."""

    name: str
    module: str  # import name, e.g. dataclaw.envcraft.archetypes.transactional_workspace
    path: Path  # the package folder (holds data/, README.md, SKILL.md)
    import_root: Path  # folder to put on PYTHONPATH so ``python -m <module>`` works
    env_cls: type[Environment]

    def cli_command(self) -> list[str]:
        """argv prefix that runs the package's CLI in a fresh interpreter."""
        return [sys.executable, "-m", self.module]

    def layout_problems(self) -> list[str]:
        """Missing or malformed required artifacts (C.1): README.md, SKILL.md < 50 lines, data/, scenarios."""
        problems = []
        for name in ("README.md", "SKILL.md", "__main__.py"):
            if not (self.path / name).is_file():
                problems.append(f"missing {name}")
        skill = self.path / "SKILL.md"
        if skill.is_file() and len(skill.read_text(encoding="utf-8").splitlines()) >= SKILL_MAX_LINES:
            problems.append(f"SKILL.md must have fewer than {SKILL_MAX_LINES} lines")
        if not (self.path / "data").is_dir():
            problems.append("missing data/ (immutable world data)")
        try:
            if not self.env_cls.scenarios():
                problems.append("no scenarios under data/scenarios/")
        except (ValueError, OSError) as exc:
            problems.append(f"bad scenario: {exc}")
        return problems


def _env_class(module: ModuleType) -> type[Environment]:
    env_cls = getattr(module, "ENVIRONMENT", None)
    if not (isinstance(env_cls, type) and issubclass(env_cls, Environment)):
        raise ConfigError(
            f"environment package {module.__name__} must define ENVIRONMENT = <Environment subclass>"
        )
    return env_cls


def load_env_package(ref: str | Path | ModuleType | type[Environment] | EnvPackage) -> EnvPackage:
    """Load from an import name, a package folder, a module, an Environment class or an EnvPackage."""
    if isinstance(ref, EnvPackage):
        return ref
    if isinstance(ref, type) and issubclass(ref, Environment):
        ref = sys.modules[ref.__module__.rsplit(".", 1)[0]]  # the package around the class's module
    if isinstance(ref, ModuleType):
        module = ref
    elif isinstance(ref, Path) or (isinstance(ref, str) and ("/" in ref or ref.endswith(".py"))):
        module = _import_folder(Path(ref))
    else:
        try:
            module = importlib.import_module(str(ref))
        except ImportError as exc:
            raise ConfigError(f"cannot import environment package {ref!r}: {exc}") from exc
    if module.__file__ is None:
        raise ConfigError(f"environment package {module.__name__} has no __init__.py")
    path = Path(module.__file__).resolve().parent
    depth = module.__name__.count(".") + 1
    import_root = path.parents[depth - 1]
    env_cls = _env_class(module)
    return EnvPackage(env_cls.name, module.__name__, path, import_root, env_cls)


def _import_folder(folder: Path) -> ModuleType:
    folder = folder.resolve()
    init = folder / "__init__.py"
    if not init.is_file():
        raise ConfigError(f"{folder} is not an environment package (no __init__.py)")
    name = folder.name
    if name in sys.modules and getattr(sys.modules[name], "__file__", None) == str(init):
        return sys.modules[name]
    # another folder's package of the same name was loaded before: drop its submodules too, or this
    # package's ``from .env import ...`` would silently bind the other folder's code
    for stale in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[stale]
    spec = importlib.util.spec_from_file_location(name, init, submodule_search_locations=[str(folder)])
    if spec is None or spec.loader is None:
        raise ConfigError(f"cannot load environment package from {folder}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception:
        del sys.modules[name]
        raise
    return module
