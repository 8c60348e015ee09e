"""Claw workspace tasks (EnvCraft C.5/C.6): the four-file protocol (:mod:`.workspace`: load, build, verify),
one-pass generation from a tool chain (:mod:`.generate`) and the code audit of the cross-artifact
invariants (:mod:`.audit`)."""
