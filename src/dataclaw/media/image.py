"""Image utilities: load/save PNG and JPEG, resize for model input, encode to bytes, hash frames.

Images are RGB ``uint8`` numpy arrays of shape ``(H, W, 3)``, the same as decoded video frames.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
from pathlib import Path
from typing import Any

import numpy as np

from dataclaw.core.errors import require
from dataclaw.media.errors import MediaError, MediaIssue

_FORMATS = {".png": "PNG", ".jpg": "JPEG", ".jpeg": "JPEG", ".webp": "WEBP", ".bmp": "BMP"}
IMAGE_SUFFIXES = frozenset(_FORMATS)


def _pil() -> Any:
    return require("PIL.Image", "image utilities", "media")


def _as_rgb(image: np.ndarray) -> np.ndarray:
    if image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] != 3:
        raise ValueError(f"expected an RGB uint8 array (H, W, 3), got {image.dtype} {image.shape}")
    return image


def load_image(path: str | os.PathLike[str]) -> np.ndarray:
    """Read an image file as RGB uint8 (H, W, 3); alpha is dropped, greyscale expanded."""
    image_mod = _pil()
    path = Path(path)
    if not path.is_file():
        raise MediaError(MediaIssue.NOT_FOUND, f"{path}: no such image file")
    try:
        with image_mod.open(path) as img:
            return np.asarray(img.convert("RGB"), dtype=np.uint8).copy()
    except (OSError, SyntaxError, ValueError) as exc:
        raise MediaError(MediaIssue.CORRUPT, f"{path}: not a readable image ({exc})") from exc


def image_size(path: str | os.PathLike[str]) -> tuple[int, int]:
    """(width, height) of an image file without decoding its pixels."""
    image_mod = _pil()
    try:
        with image_mod.open(path) as img:
            return int(img.width), int(img.height)
    except (OSError, SyntaxError, ValueError) as exc:
        raise MediaError(MediaIssue.CORRUPT, f"{path}: not a readable image ({exc})") from exc


def _format_of(path: Path | None, fmt: str | None) -> str:
    if fmt:
        return fmt.upper().replace("JPG", "JPEG")
    if path is not None and path.suffix.lower() in _FORMATS:
        return _FORMATS[path.suffix.lower()]
    raise ValueError(f"cannot tell the image format of {path}: use one of {', '.join(sorted(_FORMATS))}")


def encode_image(image: np.ndarray, fmt: str = "JPEG", quality: int = 90) -> bytes:
    """Encode an RGB array as PNG/JPEG/WEBP bytes (e.g. for a model request)."""
    image_mod = _pil()
    fmt = _format_of(None, fmt)
    buf = io.BytesIO()
    kwargs: dict[str, Any] = {"quality": quality} if fmt in ("JPEG", "WEBP") else {}
    image_mod.fromarray(_as_rgb(image)).save(buf, format=fmt, **kwargs)
    return buf.getvalue()


def to_data_url(image: np.ndarray, fmt: str = "JPEG", quality: int = 90) -> str:
    """``data:image/...;base64,...`` URL of an RGB array, the form OpenAI-compatible APIs accept."""
    fmt = _format_of(None, fmt)
    data = base64.b64encode(encode_image(image, fmt, quality)).decode("ascii")
    return f"data:image/{fmt.lower()};base64,{data}"


def save_image(image: np.ndarray, path: str | os.PathLike[str], quality: int = 95) -> Path:
    """Write an RGB array to ``path`` (format from the suffix), creating parent folders."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(encode_image(image, _format_of(path, None), quality))
    return path


def resize_for_model(image: np.ndarray, max_side: int = 1024, max_pixels: int | None = None) -> np.ndarray:
    """Downscale (never upscale) keeping the aspect ratio so the long side <= ``max_side`` and
    ``H*W <= max_pixels``; a model's image budget is set by these two numbers."""
    image_mod = _pil()
    h, w = _as_rgb(image).shape[:2]
    scale = min(1.0, max_side / max(h, w))
    if max_pixels is not None:
        scale = min(scale, (max_pixels / (h * w)) ** 0.5)
    if scale >= 1.0:
        return image
    size = (max(1, round(w * scale)), max(1, round(h * scale)))
    return np.asarray(image_mod.fromarray(image).resize(size, image_mod.Resampling.LANCZOS))


def frame_hash(image: np.ndarray) -> str:
    """sha256 of an array's shape and pixels: equal frames give equal hashes (frame-exactness checks)."""
    digest = hashlib.sha256(str(image.shape).encode())
    digest.update(np.ascontiguousarray(image).tobytes())
    return digest.hexdigest()
