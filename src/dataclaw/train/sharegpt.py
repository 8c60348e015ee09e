"""A LLaMA-Factory ShareGPT export read as chat messages, for ``dataclaw train sft``.

The folder holds ``dataset_info.json`` and the JSON file(s) it names (``dataclaw tailor export RUN -f
llamafactory`` writes both). Each entry with ``"formatting": "sharegpt"`` is read with its own
``columns`` and ``tags``, and LLaMA-Factory's defaults where it gives none: ``conversations`` of
``{"from", "value"}`` turns with roles ``human`` / ``gpt`` / ``system`` (our exporter writes
``messages`` of ``{"role", "content"}`` with ``user`` / ``assistant`` and says so in its tags), plus an
optional ``system`` column. Turns become ``{"role": "user" | "assistant" | "system", "content"}``.

The ``images`` / ``videos`` columns are kept per conversation (paths as written, relative to the export
folder) and counted; the reader loads no media. Whether the policy can read them is
:func:`dataclaw.train.sft.prepare_sft`'s question. Tool turns (``function_call`` / ``observation``) are
refused: this recipe is plain chat SFT.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dataclaw.core.errors import ConfigError

INFO = "dataset_info.json"
# LLaMA-Factory's defaults for a sharegpt entry (data/README.md, DatasetAttr)
DEFAULT_COLUMNS = {"messages": "conversations", "system": None, "images": "images", "videos": "videos"}
DEFAULT_TAGS = {
    "role_tag": "from",
    "content_tag": "value",
    "user_tag": "human",
    "assistant_tag": "gpt",
    "system_tag": "system",
}


@dataclass
class ShareGPTData:
    """The conversations of one dataset entry, as chat messages."""

    name: str
    file: Path
    conversations: list[list[dict[str, str]]]
    media: dict[str, int] = field(default_factory=dict)
    """How many ``images`` / ``videos`` the samples list."""
    media_lists: list[dict[str, list[str]]] = field(default_factory=list)
    """Per conversation, its ``images`` / ``videos`` paths as the export lists them."""
    entry: dict[str, Any] = field(default_factory=dict)
    """The entry of ``dataset_info.json`` it was read with."""


def read_sharegpt(export_dir: Path, dataset: str | None = None) -> ShareGPTData:
    """The entry ``dataset`` (default: the only sharegpt entry) of the ShareGPT export ``export_dir``."""
    root = Path(export_dir)
    if not root.is_dir():
        raise ConfigError(
            f"{root}: no such folder (a ShareGPT export: `dataclaw tailor export RUN -f llamafactory`)"
        )
    info_path = root / INFO
    if not info_path.is_file():
        raise ConfigError(
            f"{root} is not a ShareGPT export: it has no {INFO} (make one with "
            "`dataclaw tailor export RUN -f llamafactory -o DIR`)"
        )
    try:
        info = json.loads(info_path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ConfigError(f"{info_path} is not valid JSON ({exc})") from None
    if not isinstance(info, dict):
        raise ConfigError(f"{info_path} is not a JSON object of dataset entries")
    entries = {k: v for k, v in info.items() if isinstance(v, dict) and v.get("formatting") == "sharegpt"}
    if not entries:
        raise ConfigError(
            f'{info_path} lists no dataset with "formatting": "sharegpt" (found {sorted(info)})'
        )
    if dataset is None:
        if len(entries) > 1:
            raise ConfigError(
                f"{info_path} lists several ShareGPT datasets {sorted(entries)}: pick one with --dataset"
            )
        dataset = next(iter(entries))
    if dataset not in entries:
        raise ConfigError(f"--dataset {dataset!r}: {info_path} has ShareGPT datasets {sorted(entries)}")
    entry = entries[dataset]
    columns = {**DEFAULT_COLUMNS, **(entry.get("columns") or {})}
    tags = {**DEFAULT_TAGS, **(entry.get("tags") or {})}
    file_name = entry.get("file_name")
    if not isinstance(file_name, str) or not (root / file_name).is_file():
        raise ConfigError(f"dataset {dataset!r} of {info_path}: its file_name {file_name!r} is not in {root}")
    path = root / file_name
    try:
        records = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ConfigError(f"{path} is not valid JSON ({exc}); ShareGPT data is one JSON list") from None
    if not isinstance(records, list):
        raise ConfigError(f"{path} is not a JSON list of ShareGPT samples")
    if not records:
        raise ConfigError(
            f"{path} holds no samples: nothing to train on (did every sample go to rejects.jsonl?)"
        )
    roles = {tags["user_tag"]: "user", tags["assistant_tag"]: "assistant", tags["system_tag"]: "system"}
    media = {"images": 0, "videos": 0}
    conversations = [
        _conversation(rec, n, columns, tags, roles, media, path) for n, rec in enumerate(records, 1)
    ]
    lists = [_media_lists(rec, columns) for rec in records]
    return ShareGPTData(dataset, path, conversations, media, lists, dict(entry))


def _media_lists(rec: dict[str, Any], columns: dict[str, Any]) -> dict[str, list[str]]:
    out = {}
    for key in ("images", "videos"):
        listed = rec.get(columns.get(key) or key)
        out[key] = [str(x) for x in listed] if isinstance(listed, list) else []
    return out


def _conversation(
    rec: Any,
    n: int,
    columns: dict[str, Any],
    tags: dict[str, str],
    roles: dict[str, str],
    media: dict[str, int],
    path: Path,
) -> list[dict[str, str]]:
    where = f"{path.name} sample {n}"
    turns = rec.get(columns["messages"]) if isinstance(rec, dict) else None
    if not isinstance(turns, list) or not turns:
        raise ConfigError(
            f"{where}: no {columns['messages']!r} list of turns (not ShareGPT as {INFO} describes)"
        )
    out: list[dict[str, str]] = []
    system = rec.get(columns["system"]) if columns.get("system") else None
    if isinstance(system, str) and system:
        out.append({"role": "system", "content": system})
    for i, turn in enumerate(turns):
        if not isinstance(turn, dict) or not isinstance(turn.get(tags["content_tag"]), str):
            raise ConfigError(
                f"{where}, turn {i}: not a {{{tags['role_tag']!r}, {tags['content_tag']!r}}} turn"
            )
        tag = turn.get(tags["role_tag"])
        if tag not in roles:
            raise ConfigError(
                f"{where}, turn {i}: role {tag!r} is not {sorted(roles)} (train sft is plain chat SFT: "
                "no tool turns)"
            )
        out.append({"role": roles[tag], "content": turn[tags["content_tag"]]})
    if out[-1]["role"] != "assistant":
        raise ConfigError(
            f"{where}: the last turn is {out[-1]['role']!r}, not the assistant's: nothing to learn"
        )
    for key in ("images", "videos"):
        listed = rec.get(columns.get(key) or key)
        if isinstance(listed, list):
            media[key] += len(listed)
    return out
