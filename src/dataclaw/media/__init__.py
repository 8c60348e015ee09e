"""Video decode, seek and sampling (PyAV); image utilities; clip, freeze-frame and still writers."""

from dataclaw.media.errors import MediaError, MediaIssue
from dataclaw.media.image import (
    encode_image,
    frame_hash,
    load_image,
    resize_for_model,
    save_image,
    to_data_url,
)
from dataclaw.media.video import VideoInfo, VideoReader, probe, sample_indices

__all__ = [
    "MediaError",
    "MediaIssue",
    "VideoInfo",
    "VideoReader",
    "encode_image",
    "frame_hash",
    "load_image",
    "probe",
    "resize_for_model",
    "sample_indices",
    "save_image",
    "to_data_url",
]
