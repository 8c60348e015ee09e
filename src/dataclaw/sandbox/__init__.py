"""Run untrusted code: bubblewrap, rlimits, timeouts, classified outcomes."""
