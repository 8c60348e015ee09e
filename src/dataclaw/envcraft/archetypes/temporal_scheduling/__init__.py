"""Multi-resource temporal scheduling (EnvCraft B.3, archetype 6): calendars with timezones and working
hours, prioritised events with eager overlap detection, four conflict-resolution strategies and
cursor-based availability search."""

from dataclaw.envcraft.archetypes.temporal_scheduling.env import TemporalSchedulingEnv

ENVIRONMENT = TemporalSchedulingEnv

__all__ = ["ENVIRONMENT", "TemporalSchedulingEnv"]
