"""Trainer-side pieces shared by ``dataclaw train``'s recipes, whichever data they train on (EnvCraft
tasks, Tailor samples): the policy checkpoint helper the recipe scripts import in the trainer's venv,
and the reader that turns a ShareGPT export into chat messages. Nothing here imports a trainer at
import time."""
