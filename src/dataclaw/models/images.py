"""Images for vision models: paths, bytes, PIL images or numpy arrays → OpenAI ``image_url`` data URIs."""

from __future__ import annotations

import base64
import io
import os
from pathlib import Path
from typing import Any

from dataclaw.core.errors import ConfigError, require
from dataclaw.models.types import Message

_MAGIC: list[tuple[bytes, str]] = [
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"BM", "image/bmp"),
]


def sniff_mime(data: bytes) -> str | None:
    """The image MIME type from the first bytes, or None when the bytes are not a known image format."""
    for magic, mime in _MAGIC:
        if data.startswith(magic):
            return mime
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def _encode_pil(img: Any) -> bytes:
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def _array_to_png(arr: Any) -> bytes:
    import numpy as np

    image_mod = require("PIL.Image", "image inputs given as numpy arrays", "media")
    a = np.asarray(arr)
    if a.dtype != np.uint8:
        if np.issubdtype(a.dtype, np.floating) and a.size and float(a.max()) <= 1.0:
            a = a * 255.0
        a = np.clip(a, 0, 255).astype(np.uint8)
    if a.ndim == 3 and a.shape[2] == 1:
        a = a[:, :, 0]
    if a.ndim not in (2, 3) or (a.ndim == 3 and a.shape[2] not in (3, 4)):
        raise ConfigError(f"image array must be HxW, HxWx3 or HxWx4, got shape {a.shape}")
    return _encode_pil(image_mod.fromarray(a))


def image_bytes(image: Any) -> tuple[bytes, str]:
    """Encoded bytes and MIME type of one image given as a path, bytes, PIL image or numpy array."""
    if isinstance(image, str | os.PathLike):
        path = Path(image)
        if not path.is_file():
            raise ConfigError(f"image {path} does not exist or is not a file")
        data = path.read_bytes()
        mime = sniff_mime(data)
        if mime is None:
            raise ConfigError(f"image {path} is not a PNG, JPEG, GIF, BMP or WebP file")
        return data, mime
    if isinstance(image, bytes | bytearray | memoryview):
        data = bytes(image)
        mime = sniff_mime(data)
        if mime is None:
            raise ConfigError("image bytes are not a PNG, JPEG, GIF, BMP or WebP file")
        return data, mime
    if hasattr(image, "save") and hasattr(image, "mode"):  # a PIL image
        return _encode_pil(image), "image/png"
    if hasattr(image, "__array__"):
        return _array_to_png(image), "image/png"
    raise ConfigError(
        f"cannot use a {type(image).__name__} as an image: give a path, bytes, PIL image or array"
    )


def image_part(image: Any) -> dict[str, Any]:
    """One OpenAI ``image_url`` content part holding ``image`` as a base64 data URI."""
    data, mime = image_bytes(image)
    uri = f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"
    return {"type": "image_url", "image_url": {"url": uri}}


def attach_images(messages: list[Message], images: list[Any]) -> list[Message]:
    """Copy of ``messages`` with ``images`` appended as content parts of the last user message."""
    if not images:
        return messages
    out = [dict(m) for m in messages]
    for msg in reversed(out):
        if msg.get("role") == "user":
            content = msg.get("content")
            parts = [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])
            msg["content"] = parts + [image_part(img) for img in images]
            return out
    raise ConfigError("images were given but there is no user message to attach them to")


def has_images(messages: list[Message]) -> bool:
    """Whether any message carries an image content part."""
    return any(
        isinstance(m.get("content"), list) and any(p.get("type") == "image_url" for p in m["content"])
        for m in messages
    )


def count_images(messages: list[Message]) -> int:
    """How many image content parts ``messages`` carry: what a request actually sends."""
    return sum(
        sum(1 for p in m["content"] if isinstance(p, dict) and p.get("type") == "image_url")
        for m in messages
        if isinstance(m.get("content"), list)
    )


def drop_images(messages: list[Message]) -> list[Message]:
    """Copy of ``messages`` without image parts; text parts are joined back into plain strings."""
    out: list[Message] = []
    for m in messages:
        content = m.get("content")
        if isinstance(content, list):
            texts = [p.get("text", "") for p in content if p.get("type") == "text"]
            m = {**m, "content": "\n".join(texts)}
        out.append(m)
    return out
