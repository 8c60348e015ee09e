"""EnvCraft environment quality auditing (§3.3): static AST rules + a dynamic run in the sandbox."""
