"""dataclaw: training data for agents — Tailor (multimodal streams → grounded samples) and EnvCraft
(scenarios → executable environments → verifiable RL tasks)."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("dataclaw")
except PackageNotFoundError:  # running from a source tree without an install
    __version__ = "0.0.0+src"
