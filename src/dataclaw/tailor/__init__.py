"""Tailor (DataClaw0): multimodal streams + an intent → schema-valid, evidence-grounded samples."""
