"""Media errors with a machine-readable reason, so readers can turn them into rejects."""

from __future__ import annotations

from enum import StrEnum

from dataclaw.core.errors import DataclawError


class MediaIssue(StrEnum):
    """Why a media file cannot be used."""

    NOT_FOUND = "not_found"
    """The file does not exist."""
    CORRUPT = "corrupt"
    """The container or bitstream cannot be parsed or decoded."""
    TRUNCATED = "truncated"
    """The container announces more frames than the file holds."""
    EMPTY = "empty"
    """Zero bytes, or no frames in the video stream."""
    NO_VIDEO = "no_video"
    """The container has no video stream."""
    UNSUPPORTED_CODEC = "unsupported_codec"
    """No decoder for the stream's codec in this FFmpeg build."""
    OUT_OF_RANGE = "out_of_range"
    """A frame index or time outside the video."""


class MediaError(DataclawError):
    """A media file that cannot be read as asked; ``reason`` says why in one word."""

    def __init__(self, reason: MediaIssue, message: str) -> None:
        super().__init__(message)
        self.reason = reason
