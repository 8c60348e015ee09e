"""EnvCraft: scenarios → executable, sandboxed, stateful tool environments → verifiable RL tasks."""
