"""Tailor (DataClaw0): multimodal streams + an intent → schema-valid, evidence-grounded samples."""

from dataclaw.core.moved import keep_old_paths

keep_old_paths(
    {
        "dataclaw.tailor.ingest": "dataclaw.tailor.pipeline",
        "dataclaw.tailor.mine": "dataclaw.tailor.mining",
        "dataclaw.tailor.mine_gui": "dataclaw.tailor.mining.gui",
        "dataclaw.tailor.mine_lecture": "dataclaw.tailor.mining.lecture",
        "dataclaw.tailor.quality": "dataclaw.tailor.validation.quality",
        "dataclaw.tailor.route": "dataclaw.tailor.synthesis.route",
        "dataclaw.tailor.run": "dataclaw.tailor.pipeline",
        "dataclaw.tailor.synthesize": "dataclaw.tailor.synthesis",
        "dataclaw.tailor.validate": "dataclaw.tailor.validation",
    }
)
