"""Omni vs Expert deployment (paper §3.4, B.2.2): which model answers which intent.

``omni``: one model for every intent (DataClaw0-O). ``expert``: a model per domain (DataClaw0-E), with an
optional default for domains without an expert. The choice is a config, recorded in every sample's
``route``:

    route:                      # YAML, or --model / --expert gui=http://gpu:8000/v1::gui-expert
      mode: expert
      default: local:smollm2-135m
      experts: {gui: "http://gpu:8000/v1::gui-expert", embodied: "openai:gpt-4o"}
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, Field, ValidationError, model_validator

from dataclaw.core.errors import ConfigError
from dataclaw.models import Model, ResponseCache, UsageLedger, get_model
from dataclaw.tailor.intents.base import Domain, Intent


class RouteMode(StrEnum):
    OMNI = "omni"
    EXPERT = "expert"


class RouteConfig(BaseModel):
    """How intents are routed to models."""

    mode: RouteMode = RouteMode.OMNI
    default: str | None = Field(default=None, description="omni: the model; expert: for domains without one")
    experts: dict[Domain, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _complete(self) -> RouteConfig:
        if self.mode is RouteMode.OMNI and not self.default:
            raise ValueError("omni routing needs a model (default)")
        if self.mode is RouteMode.OMNI and self.experts:
            raise ValueError("omni routing uses one model: drop 'experts' or use mode: expert")
        if self.mode is RouteMode.EXPERT and not self.experts:
            raise ValueError("expert routing needs at least one domain → model entry in 'experts'")
        return self

    @classmethod
    def omni(cls, model: str) -> RouteConfig:
        return cls(mode=RouteMode.OMNI, default=model)

    @classmethod
    def from_file(cls, path: str | Path) -> RouteConfig:
        """Read a routing config (YAML/JSON, optionally under a top-level ``route`` key)."""
        path = Path(path)
        if not path.is_file():
            raise ConfigError(f"routing config {path} does not exist")
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except yaml.YAMLError as exc:
            raise ConfigError(f"routing config {path} is not valid YAML: {exc}") from None
        data = data.get("route", data) if isinstance(data, dict) else data
        return cls.parse(data, str(path))

    @classmethod
    def parse(cls, data: Any, where: str = "routing config") -> RouteConfig:
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            err = exc.errors()[0]
            loc = ".".join(str(p) for p in err["loc"]) or "config"
            raise ConfigError(f"{where}: {loc}: {err['msg']}") from None

    @classmethod
    def from_cli(cls, model: str | None, experts: list[str] | None = None) -> RouteConfig:
        """``--model SPEC`` (omni, or the expert default) and ``--expert DOMAIN=SPEC`` options."""
        if not experts:
            if not model:
                raise ConfigError("give a model with --model (or experts with --expert DOMAIN=MODEL)")
            return cls.omni(model)
        table: dict[str, str] = {}
        for item in experts:
            domain, sep, spec = item.partition("=")
            if not sep or not spec:
                raise ConfigError(f"--expert {item!r}: expected DOMAIN=MODEL, e.g. gui=openai:gpt-4o")
            table[domain.strip()] = spec.strip()
        return cls.parse({"mode": "expert", "default": model, "experts": table}, "--expert")

    def spec_for(self, domain: Domain) -> str:
        """The model string that answers intents of ``domain``."""
        if self.mode is RouteMode.EXPERT and domain in self.experts:
            return self.experts[domain]
        if self.default:
            return self.default
        raise ConfigError(
            f"expert routing has no model for domain '{domain}' and no default: add experts.{domain} "
            "or a default model"
        )


class RouteDecision(BaseModel):
    """What the router chose for one request."""

    model: str
    router: RouteMode
    domain: Domain


class Router:
    """Builds each routed model once (shared ledger and cache) and picks one per intent."""

    def __init__(
        self,
        config: RouteConfig,
        *,
        ledger: UsageLedger | None = None,
        cache: ResponseCache | str | Path | bool | None = None,
        model_options: dict[str, Any] | None = None,
    ) -> None:
        self.config = config
        self.ledger = ledger if ledger is not None else UsageLedger()
        self.cache = cache
        self.model_options = dict(model_options or {})
        self._models: dict[str, Model] = {}

    def check(self, intents: list[Intent]) -> None:
        """Fail early when some intent's domain has no model."""
        for intent in intents:
            self.config.spec_for(intent.domain)

    def warm(self) -> None:
        """Build every configured model now (backend imports, clients), not on the first request."""
        for spec in {self.config.default, *self.config.experts.values()} - {None}:
            self.model(spec)

    def decide(self, intent: Intent) -> RouteDecision:
        return RouteDecision(
            model=self.config.spec_for(intent.domain), router=self.config.mode, domain=intent.domain
        )

    def model(self, spec: str) -> Model:
        if spec not in self._models:
            self._models[spec] = get_model(spec, ledger=self.ledger, cache=self.cache, **self.model_options)
        return self._models[spec]

    def route(self, intent: Intent) -> tuple[Model, RouteDecision]:
        decision = self.decide(intent)
        return self.model(decision.model), decision

    async def aclose(self) -> None:
        for model in self._models.values():
            await model.aclose()
