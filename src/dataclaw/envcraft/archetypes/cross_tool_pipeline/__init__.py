"""Cross-tool data pipelines (EnvCraft B.3, archetype 2): a media-monitoring ETL desk with a four-phase
engine — multi-format ingestion, type-dispatched processing, deduplicating aggregation, format strategies."""

from dataclaw.envcraft.archetypes.cross_tool_pipeline.env import CrossToolPipeline

ENVIRONMENT = CrossToolPipeline

__all__ = ["ENVIRONMENT", "CrossToolPipeline"]
