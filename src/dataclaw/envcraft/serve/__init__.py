"""``dataclaw env serve``: an environment and its tasks as an OpenEnv server (the one network export).

The OpenEnv library (``openenv`` 0.10, with gradio and fastmcp) is an optional extra, checked only when
the server is built: ``pip install 'dataclaw[openenv]'`` — in a virtual environment of its own, since
openenv needs ``huggingface-hub >= 1.29`` and the ``[hf]``/``[embed]`` extras pin it below 1.
"""

from __future__ import annotations

from typing import Any

from dataclaw.core.errors import ConfigError
from dataclaw.envcraft.serve.catalogue import FINISH_TOOL, Catalogue, ScenarioHarness, load_catalogue

INSTALL_HINT = (
    "dataclaw env serve needs the OpenEnv library: pip install 'dataclaw[openenv]' (openenv 0.10). It pins "
    "huggingface-hub >= 1.29, which the [hf] and [embed] extras cannot share: give it its own virtual "
    "environment, e.g. python3.11 -m venv .venv-openenv && .venv-openenv/bin/pip install -e '.[openenv]'"
)


def require_openenv() -> None:
    """Raise a ConfigError with the install hint when ``openenv`` 0.10 is not importable."""
    try:
        import openenv.core.env_server  # noqa: F401
    except ImportError:
        raise ConfigError(INSTALL_HINT) from None


def build_app(
    catalogue: Catalogue, *, max_sessions: int = 64, max_steps: int = 64, idle_timeout_s: float | None = 600.0
) -> Any:
    """The OpenEnv FastAPI app serving ``catalogue`` (checks that openenv is installed first)."""
    require_openenv()
    from dataclaw.envcraft.serve.openenv_app import build_app as _build

    return _build(catalogue, max_sessions=max_sessions, max_steps=max_steps, idle_timeout_s=idle_timeout_s)


__all__ = [
    "FINISH_TOOL",
    "INSTALL_HINT",
    "Catalogue",
    "ScenarioHarness",
    "build_app",
    "load_catalogue",
    "require_openenv",
]
