"""Stream readers (paper A.3, B.2.1): raw sources -> `Stream` records (+ rejects), and frame/table access.

Every module in this package registers its readers; see :mod:`.base` for the registry and
:mod:`.source` for :class:`StreamSource`.
"""

from dataclaw.tailor.streams.base import (
    Camera,
    IngestIssue,
    Modality,
    Source,
    Stream,
    StreamReader,
    detect_reader,
    get_reader,
    open_source,
    read_streams,
    reader_names,
    register_reader,
)
from dataclaw.tailor.streams.source import StreamSource

__all__ = [
    "Camera",
    "IngestIssue",
    "Modality",
    "Source",
    "Stream",
    "StreamReader",
    "StreamSource",
    "detect_reader",
    "get_reader",
    "open_source",
    "read_streams",
    "reader_names",
    "register_reader",
]
