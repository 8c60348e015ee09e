"""Importers: published benchmarks and environment collections → dataclaw task records and environments.

Each format is one module registering an :class:`~dataclaw.envcraft.importers.base.Importer` in
:data:`IMPORTERS` (other distributions add theirs through the ``dataclaw.importers`` entry point group).
``dataclaw tasks import FORMAT SRC -o RUN`` and ``dataclaw env import FORMAT SRC -o LIB`` run them through
:func:`run_import`: resumable, one reject (an :class:`ImportReason`) per bad item, ``FORMAT`` may be
``auto``.
"""

from dataclaw.envcraft.importers.base import (
    IMPORTERS,
    Detection,
    ImportContext,
    Importer,
    ImportReason,
    ImportReject,
    ImportSummary,
    Produces,
    SourceItem,
    detect,
    importers_for,
    resolve,
    run_import,
)

__all__ = [
    "IMPORTERS",
    "Detection",
    "ImportContext",
    "ImportReason",
    "ImportReject",
    "ImportSummary",
    "Importer",
    "Produces",
    "SourceItem",
    "detect",
    "importers_for",
    "resolve",
    "run_import",
]
