"""Transactional workspace (EnvCraft B.3, archetype 1): a service-desk ticket queue with authentication,
permissions, a unidirectional status lifecycle and an audit log. The reference package for archetypes."""

from dataclaw.envcraft.archetypes.transactional_workspace.env import TransactionalWorkspace

ENVIRONMENT = TransactionalWorkspace

__all__ = ["ENVIRONMENT", "TransactionalWorkspace"]
