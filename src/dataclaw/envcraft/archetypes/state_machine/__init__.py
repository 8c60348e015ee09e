"""Constraint-guided state machine (EnvCraft B.3, archetype 5): declared finite state machines
S × A → S′ with guarded, labelled edges and on-enter/on-exit hooks, and entities (loan applications)
walked through them by a runtime interpreter."""

from dataclaw.envcraft.archetypes.state_machine.env import StateMachineEnv

ENVIRONMENT = StateMachineEnv

__all__ = ["ENVIRONMENT", "StateMachineEnv"]
