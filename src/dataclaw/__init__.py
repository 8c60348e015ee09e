"""dataclaw: training data for agents — Tailor (multimodal streams → grounded samples) and EnvCraft
(scenarios → executable environments → verifiable RL tasks)."""

# The single source of the version (pyproject reads it through hatch): a constant, because
# importlib.metadata scans every installed distribution and doubles the start-up of each CLI call.
__version__ = "0.1.0"
