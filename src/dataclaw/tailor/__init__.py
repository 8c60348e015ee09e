"""Tailor (DataClaw0): multimodal streams + an intent → schema-valid, evidence-grounded samples."""

from dataclaw.core.moved import keep_old_paths

keep_old_paths(
    {
        "dataclaw.tailor.bench": "dataclaw.tailor.scoring.bench",
        "dataclaw.tailor.bench.config": "dataclaw.tailor.scoring.bench.config",
        "dataclaw.tailor.bench.data": "dataclaw.tailor.scoring.bench.data",
        "dataclaw.tailor.bench.embeddings": "dataclaw.tailor.scoring.bench.embeddings",
        "dataclaw.tailor.bench.fastschema": "dataclaw.tailor.scoring.bench.fastschema",
        "dataclaw.tailor.bench.fields": "dataclaw.tailor.scoring.bench.fields",
        "dataclaw.tailor.bench.metric": "dataclaw.tailor.scoring.bench.metric",
        "dataclaw.tailor.bench.trajectory": "dataclaw.tailor.scoring.bench.trajectory",
        "dataclaw.tailor.cost": "dataclaw.tailor.scoring.cost",
        "dataclaw.tailor.ingest": (
            "dataclaw.tailor.pipeline",
            "dataclaw.tailor.mining.stage",
            "dataclaw.tailor.anchors.stage",
        ),
        "dataclaw.tailor.mine": "dataclaw.tailor.mining",
        "dataclaw.tailor.mine_gui": (
            "dataclaw.tailor.mining.gui",
            "dataclaw.tailor.synthesis.fragments",
            "dataclaw.tailor.anchors.gui",
        ),
        "dataclaw.tailor.mine_lecture": "dataclaw.tailor.mining.lecture",
        "dataclaw.tailor.quality": "dataclaw.tailor.validation.quality",
        "dataclaw.tailor.rewards": "dataclaw.tailor.scoring.rewards",
        "dataclaw.tailor.route": "dataclaw.tailor.synthesis.route",
        "dataclaw.tailor.run": "dataclaw.tailor.pipeline",
        "dataclaw.tailor.synthesize": "dataclaw.tailor.synthesis",
        "dataclaw.tailor.validate": "dataclaw.tailor.validation",
    }
)
