"""Intents as data (paper §3.1, Table 5, A.4.1): what sample to build from a candidate, and how.

An :class:`Intent` is one YAML file: id, domain, description, which candidates it applies to, the output
JSON schema, the prompt template, the frame-sampling plan, per-request schema bounds, validators,
materialisers and the conversation template that turns a validated output into training turns. The
built-ins live in ``catalog/``; a user adds one by writing a file in the same form (``--intent
my_intent.yaml``) — no code, as long as the stock validators suffice.

Templates use ``{{ path.to.value }}`` (dotted lookups into the request context or ``output``); nothing
else is evaluated, so an intent file cannot run code.
"""

from __future__ import annotations

import copy
import re
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

from dataclaw.core.errors import ConfigError
from dataclaw.models.schema import check_schema

CATALOG = Path(__file__).with_name("catalog")


class Domain(StrEnum):
    """The paper's five domains (A.1)."""

    GUI = "gui"
    EMBODIED = "embodied"
    AIGC_WORLD = "aigc_world"
    DAILY_LIFE = "daily_life"
    EDUCATION = "education"


# ------------------------------------------------------------------------------------------------
# templates

_FIELD = re.compile(r"\{\{\s*([A-Za-z_][\w]*(?:\.[\w]+(?:\[\])?|\[\])*)\s*\}\}")
_EACH = re.compile(r"\{\{\s*each\s+([A-Za-z_][\w.\[\]]*)\s*\}\}(.*?)\{\{\s*end\s*\}\}", re.DOTALL)


class TemplateError(ConfigError):
    """A template names a value the context does not have."""


def lookup(ctx: Any, path: str) -> Any:
    """``ctx`` at dotted ``path`` (dict keys, list indices; ``a[]`` maps the rest over list ``a``)."""
    value = ctx
    parts = path.split(".")
    for n, part in enumerate(parts):
        many = part.endswith("[]")
        name = part[:-2] if many else part
        if isinstance(value, dict) and name in value:
            value = value[name]
        elif isinstance(value, list) and name.isdigit() and int(name) < len(value):
            value = value[int(name)]
        else:
            raise KeyError(path)
        if many:
            if not isinstance(value, list):
                raise KeyError(path)
            rest = ".".join(parts[n + 1 :])
            return [lookup(v, rest) for v in value] if rest else value
    return value


def _as_text(value: Any) -> str:
    if isinstance(value, list):
        return "\n".join(_as_text(v) for v in value)
    if value is None:
        return ""
    return str(value)


def render(template: str, ctx: dict[str, Any], where: str = "template") -> str:
    """Replace every ``{{ a.b }}`` in ``template`` by its value in ``ctx`` (lists: one item a line).

    ``{{ each a.list }}…{{ end }}`` repeats its body per item, with ``{{ item.x }}`` and ``{{ n }}``
    (1-based position) bound inside; blocks do not nest.
    """

    def each(m: re.Match[str]) -> str:
        try:
            items = lookup(ctx, m.group(1))
        except KeyError:
            raise TemplateError(
                f"{where}: '{{{{ each {m.group(1)} }}}}' is not in the request context"
            ) from None
        if not isinstance(items, list):
            raise TemplateError(f"{where}: '{m.group(1)}' is not a list")
        return "".join(_fields(m.group(2), {**ctx, "item": v, "n": i}, where) for i, v in enumerate(items, 1))

    return _fields(_EACH.sub(each, template), ctx, where)


def _fields(template: str, ctx: dict[str, Any], where: str) -> str:
    def sub(m: re.Match[str]) -> str:
        try:
            return _as_text(lookup(ctx, m.group(1)))
        except KeyError:
            raise TemplateError(f"{where}: '{{{{ {m.group(1)} }}}}' is not in the request context") from None

    return _FIELD.sub(sub, template)


# ------------------------------------------------------------------------------------------------
# the intent record


class AppliesTo(BaseModel):
    """Which candidates an intent can use: candidate kinds and (optionally) stream modalities."""

    candidate_kinds: list[str] = Field(min_length=1)
    modalities: list[str] = Field(default_factory=list, description="empty = any modality")


class PromptSpec(BaseModel):
    """System and user message templates."""

    system: str
    user: str


class FramePlan(BaseModel):
    """Which frames to send as images (vision models) and to list as text (every model).

    ``sources`` are candidate fields holding frame indices (``observation_frames``, ``future_frames``,
    ``frames``), or ``fragments`` (one frame at the start of each GUI fragment) or ``slide`` (the slide
    a lecture segment is aligned to). At most ``max_frames`` are kept, spread evenly.
    """

    sources: list[Literal["observation_frames", "future_frames", "frames", "fragments", "slide"]]
    max_frames: int = Field(default=12, ge=0, le=64)
    max_side: int = Field(default=512, ge=64, le=2048, description="images are resized to fit this")


class Perception(StrEnum):
    """An input a model may have to perceive for an intent's sample to be true to its evidence.

    ``text`` (prompt, anchors, events, transcripts) reaches every model. ``frames`` (frames sampled from
    a video or screen recording), ``images`` (stills such as a slide) and ``video`` (motion over time)
    reach a model only as images, so they need a model that takes images — video is sent as its sampled
    frames, since no OpenAI-compatible request carries a video."""

    TEXT = "text"
    FRAMES = "frames"
    IMAGES = "images"
    VIDEO = "video"


VISUAL = frozenset({Perception.FRAMES, Perception.IMAGES, Perception.VIDEO})
"""What only a model that takes images perceives."""


class Bound(BaseModel):
    """Per-request schema bounds: each value is a number or a dotted path into the request context."""

    minimum: float | str | None = None
    maximum: float | str | None = None
    enum: str | list[Any] | None = None
    maxItems: int | str | None = None
    minItems: int | str | None = None


class Step(BaseModel):
    """A named validator or materialiser with its parameters."""

    name: str
    params: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _from_name(cls, value: Any) -> Any:
        return {"name": value} if isinstance(value, str) else value


class TurnTemplate(BaseModel):
    role: Literal["system", "user", "assistant"]
    content: str


class RequestOptions(BaseModel):
    """How the request is packaged beyond frames: GUI fragment shuffling and distractors."""

    shuffle_fragments: bool = False
    distractors: int = Field(default=0, ge=0, le=8)
    max_anchors: int = Field(default=40, ge=0, le=400)
    temperature: float = 0.0
    max_tokens: int = Field(default=700, ge=16, le=16384)


class Intent(BaseModel):
    """One tailoring intent: the target data type, its schema and how to build and check it."""

    id: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    domain: Domain
    title: str
    description: str
    applies_to: AppliesTo
    output_schema: dict[str, Any] = Field(alias="schema")
    prompt: PromptSpec
    frames: FramePlan
    perceive: list[Perception] = Field(
        default_factory=list,
        description="what the model must perceive (text, frames, images, video); omitted: frames when the "
        "frame plan sends any, else text",
    )
    bounds: dict[str, Bound] = Field(default_factory=dict)
    request: RequestOptions = Field(default_factory=RequestOptions)
    validators: list[Step] = Field(default_factory=list)
    materialisers: list[Step] = Field(default_factory=list)
    conversation: list[TurnTemplate] = Field(min_length=2)
    source: str = Field(default="builtin", description="file it was loaded from")

    model_config = {"populate_by_name": True}

    @field_validator("output_schema")
    @classmethod
    def _schema_ok(cls, schema: dict[str, Any]) -> dict[str, Any]:
        check_schema(schema)
        if schema.get("type") != "object":
            raise ValueError("an intent's schema must describe a JSON object")
        return schema

    @model_validator(mode="after")
    def _perceivable(self) -> Intent:
        sends = bool(self.frames.sources) and self.frames.max_frames > 0
        if not self.perceive:  # a file without the field: what its frame plan shows must be seen
            self.perceive = [Perception.FRAMES if sends else Perception.TEXT]
        self.perceive = list(dict.fromkeys(self.perceive))
        if self.needs_vision and not sends:
            raise ValueError(
                f"perceive {[str(p) for p in self.seen]} needs frames to show, but frames.sources is empty "
                "or frames.max_frames is 0"
            )
        return self

    @property
    def seen(self) -> list[Perception]:
        """The visual inputs the model must perceive (empty: text suffices)."""
        return [p for p in self.perceive if p in VISUAL]

    @property
    def needs_vision(self) -> bool:
        """Whether only a model that takes images can make this intent's samples from their evidence."""
        return bool(self.seen)

    def applies(self, candidate_kind: str, modality: str | None = None) -> bool:
        """Whether a candidate of ``candidate_kind`` from a stream of ``modality`` suits this intent."""
        if candidate_kind not in self.applies_to.candidate_kinds:
            return False
        return not self.applies_to.modalities or modality is None or modality in self.applies_to.modalities

    def schema_for(self, ctx: dict[str, Any]) -> dict[str, Any]:
        """The schema specialised to one request: bounds resolved from ``ctx`` (see :func:`specialise`)."""
        return specialise(self.output_schema, self.bounds, ctx, self.id)


def _resolve(value: Any, ctx: dict[str, Any], where: str) -> Any:
    if isinstance(value, str):
        try:
            return lookup(ctx, value)
        except KeyError:
            raise TemplateError(f"{where}: bound '{value}' is not in the request context") from None
    return value


def _node(schema: dict[str, Any], path: str, where: str) -> dict[str, Any]:
    """The sub-schema at ``path``: ``a.b`` walks properties, a trailing ``[]`` on a part walks items."""
    node = schema
    for part in path.split("."):
        items = part.endswith("[]")
        name = part[:-2] if items else part
        if name:
            props = node.get("properties", {})
            if name not in props:
                raise ConfigError(f"{where}: bound path '{path}' names no property '{name}' of the schema")
            node = props[name]
        if items:
            if "items" not in node:
                raise ConfigError(f"{where}: bound path '{path}': '{name}' is not an array")
            node = node["items"]
    return node


def specialise(
    schema: dict[str, Any], bounds: dict[str, Bound], ctx: dict[str, Any], where: str = "intent"
) -> dict[str, Any]:
    """A copy of ``schema`` with per-request bounds (e.g. the freeze frame limited to the observation
    range, fragment labels as an enum). Tight schemas let weak models with constrained decoding produce
    valid output; validators still check everything afterwards."""
    out = copy.deepcopy(schema)
    for path, bound in bounds.items():
        node = _node(out, path, where)
        for key, raw in bound.model_dump(exclude_none=True).items():
            value = _resolve(raw, ctx, f"{where}.bounds.{path}")
            if key == "enum":
                value = list(dict.fromkeys(value))
                if not value:
                    raise TemplateError(f"{where}: bound '{path}' resolves to an empty enum")
                node.pop("minimum", None)
                node.pop("maximum", None)
            elif key in ("minimum", "maximum") and node.get("type") == "integer":
                value = int(value)
            node[key] = value
        _enumerate_small_range(node)
    return out


ENUM_RANGE_LIMIT = 512


def _enumerate_small_range(node: dict[str, Any]) -> None:
    """Spell a small integer range out as an ``enum`` as well: grammar-constrained decoders (llama.cpp)
    enforce enums but not ``minimum``/``maximum``, and the two say the same thing to every other server."""
    lo, hi = node.get("minimum"), node.get("maximum")
    if node.get("type") == "integer" and "enum" not in node and isinstance(lo, int) and isinstance(hi, int):
        if 0 <= hi - lo < ENUM_RANGE_LIMIT:
            node["enum"] = list(range(lo, hi + 1))


# ------------------------------------------------------------------------------------------------
# loading


def load_intent(path: str | Path) -> Intent:
    """Read one intent file (YAML or JSON); errors name the file and the field."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"intent file {path} does not exist")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ConfigError(f"intent file {path} is not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"intent file {path} must hold a mapping (id, domain, schema, prompt, …)")
    data.setdefault("source", str(path))
    try:
        intent = Intent.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "file"
        raise ConfigError(f"intent file {path}: {where}: {err['msg']}") from None
    except ConfigError as exc:
        raise ConfigError(f"intent file {path}: {exc}") from None
    _check_names(intent)
    return intent


def _check_names(intent: Intent) -> None:
    """Validators must be registered names (materialisers are checked by the materialise stage)."""
    from dataclaw.tailor.validation.base import validator_names

    known = set(validator_names())
    for step in intent.validators:
        if step.name not in known:
            raise ConfigError(
                f"intent {intent.id} ({intent.source}): unknown validator '{step.name}' "
                f"(known: {', '.join(sorted(known))})"
            )
