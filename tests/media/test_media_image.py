"""Image utilities on a real screenshot."""

from __future__ import annotations

import base64
from pathlib import Path

import numpy as np
import pytest

from dataclaw.media import (
    MediaError,
    encode_image,
    frame_hash,
    load_image,
    resize_for_model,
    save_image,
    to_data_url,
)
from dataclaw.media.image import image_size


def test_png_roundtrip_is_lossless(shared_data: Path, tmp_path: Path) -> None:
    shot = load_image(shared_data / "opencua/cot_example/images/0.png")
    assert shot.dtype == np.uint8 and shot.ndim == 3 and shot.shape[2] == 3
    out = save_image(shot, tmp_path / "sub" / "copy.png")
    assert frame_hash(load_image(out)) == frame_hash(shot)
    assert image_size(out) == (shot.shape[1], shot.shape[0])


def test_resize_and_encode(shared_data: Path) -> None:
    shot = load_image(shared_data / "opencua/cot_example/images/0.png")
    small = resize_for_model(shot, max_side=320)
    assert max(small.shape[:2]) == 320
    assert small.shape[1] / small.shape[0] == pytest.approx(shot.shape[1] / shot.shape[0], rel=0.01)
    assert resize_for_model(small, max_side=4096) is small  # never upscales
    assert resize_for_model(shot, max_pixels=10_000).size // 3 <= 10_000
    jpeg = encode_image(small, "jpeg", quality=80)
    assert jpeg[:2] == b"\xff\xd8"
    url = to_data_url(small, "png")
    assert url.startswith("data:image/png;base64,")
    assert base64.b64decode(url.split(",", 1)[1])[:4] == b"\x89PNG"


def test_bad_images(tmp_path: Path) -> None:
    (tmp_path / "broken.png").write_bytes(b"\x89PNG not really")
    with pytest.raises(MediaError):
        load_image(tmp_path / "broken.png")
    with pytest.raises(MediaError):
        load_image(tmp_path / "absent.png")
    with pytest.raises(ValueError):
        encode_image(np.zeros((4, 4), dtype=np.uint8))
