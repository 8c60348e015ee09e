"""Multi-criteria bilateral matching (EnvCraft B.3, archetype 7): pools with weighted criteria and a
top-K cap, supply and demand candidates with typed attributes, type-dispatched scoring, and persistent
match records with a pending → accepted | rejected lifecycle (resume-to-job matching)."""

from dataclaw.envcraft.archetypes.bilateral_matching.env import BilateralMatchingEnv

ENVIRONMENT = BilateralMatchingEnv

__all__ = ["ENVIRONMENT", "BilateralMatchingEnv"]
