"""The bundled examples read as documented in examples/SOURCES.md (and agree with the originals)."""

from __future__ import annotations

from pathlib import Path

from dataclaw.core.errors import Reject
from dataclaw.media import VideoReader, frame_hash
from dataclaw.tailor.streams import IngestIssue, Stream, StreamSource, open_source

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def test_example_lerobot_keeps_the_listed_but_missing_situation() -> None:
    items = list(open_source(EXAMPLES / "lerobot_g1"))
    streams = [i for i in items if isinstance(i, Stream)]
    rejects = [i for i in items if isinstance(i, Reject)]
    assert [s.metadata["episode_index"] for s in streams] == [4] and streams[0].frame_count == 357
    assert len(rejects) == 99 and {r.reason for r in rejects} == {IngestIssue.MISSING_FILE}


def test_example_recording_cut_is_consistent_with_the_original(shared_data: Path) -> None:
    [stream] = list(open_source(EXAMPLES / "opencua_recording"))
    assert isinstance(stream, Stream) and stream.frame_count == 1039
    actions = [e for e in stream.events if e["type"] == "action"]
    assert len(actions) == 8 and stream.metadata["events_outside_video"] == 0
    [original] = list(open_source(shared_data / "opencua/raw_recording"))
    assert isinstance(original, Stream)
    assert actions == [e for e in original.events if e["type"] == "action"][:8]
    with StreamSource(stream) as cut, VideoReader(original.cameras["screen"].path) as full:
        for action in actions:
            index = cut.index_at_time(action["t"])
            assert frame_hash(cut.frame(index)) == frame_hash(full.frame_at(index))
