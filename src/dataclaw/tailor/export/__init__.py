"""Corpus export (paper A.3 step 5, A.3.3): a run's ``samples.jsonl`` + ``artifacts.jsonl`` as files that
trainers load.

Exporters register by name: ``jsonl`` (normalised samples + artifacts + media), ``llamafactory``
(ShareGPT multimodal JSON + a ``dataset_info.json`` entry, as LLaMA-Factory's ``mllm_video_demo``),
``hf`` (Hugging Face ``datasets`` parquet shards: ``Image`` columns, videos as clip bytes, media embedded).
Each is ``export(run_dir, out_dir) -> ExportSummary``.

Every sample is checked before it is written; one that fails is left out with a reject (reason code +
message) in ``out_dir/rejects.jsonl``, and the export goes on: every media ref must name an artifact
record whose file exists with the recorded sha256, the number of ``<image>`` / ``<video>`` tokens must
equal the number of input images / videos (LLaMA-Factory refuses the sample otherwise), and the turns
must alternate user/assistant after an optional system turn. Target media (those with a paper
placeholder such as ``<video_gen>``) are not model inputs: the placeholder stays in the text and the
file is listed under ``targets`` (JSON) or ``target_images`` / ``target_videos`` (parquet).

Media tokens go where the trainer expects them. LLaMA-Factory's ShareGPT converter
(``llamafactory/data/converter.py``) takes a leading system message out of ``messages`` and
its multimodal plugin (``mm_plugin.py`` ``_validate_messages`` / ``process_messages``) counts and expands
every ``<image>`` / ``<video>`` in *all* remaining messages, the assistant's included — so an input
token in an answer would be expanded into image tokens inside the labels. Hence: an ``<image>`` /
``<video>`` in a user turn is a model input; one in an assistant turn is an image the model should
produce (a tutorial's step image), exported as a target (``<image_gen>`` / ``<video_gen>`` in the text,
the file under ``targets``); one in the system turn is a ``token_mismatch`` reject.

A run that produced no samples still gets the asked-for export, empty and valid, and the summary's
``note`` says so.
"""

from dataclaw.tailor.export.base import (
    EXPORTERS,
    REJECTS_FILE,
    RUN_MARKERS,
    TARGET_PLACEHOLDERS,
    Checked,
    Exporter,
    ExportIssue,
    ExportSummary,
    Placed,
    RunReader,
    export,
    exporter_names,
    get_exporter,
    place_media,
    place_tokens,
    register_exporter,
)
from dataclaw.tailor.export.hf import DATASET_CARD, HuggingFaceExporter
from dataclaw.tailor.export.jsonl import JsonlExporter
from dataclaw.tailor.export.llamafactory import SHAREGPT_TAGS, LlamaFactoryExporter, sharegpt_record

__all__ = [
    "DATASET_CARD",
    "EXPORTERS",
    "REJECTS_FILE",
    "RUN_MARKERS",
    "SHAREGPT_TAGS",
    "TARGET_PLACEHOLDERS",
    "Checked",
    "ExportIssue",
    "ExportSummary",
    "Exporter",
    "HuggingFaceExporter",
    "JsonlExporter",
    "LlamaFactoryExporter",
    "Placed",
    "RunReader",
    "export",
    "exporter_names",
    "get_exporter",
    "place_media",
    "place_tokens",
    "register_exporter",
    "sharegpt_record",
]
