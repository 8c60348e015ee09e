"""Prices, the response cache, the usage ledger and the backend registry on their own."""

from __future__ import annotations

import json
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dataclaw.core.errors import ConfigError
from dataclaw.models import (
    ChatRequest,
    Generation,
    PriceTable,
    ResponseCache,
    Usage,
    UsageLedger,
    register_backend,
)
from dataclaw.models.backends.base import parse_spec
from dataclaw.models.schema import parse_json_answer
from dataclaw.models.servers import register_server_kind


def test_price_lookup_matches_names_and_dated_snapshots_only():
    table = PriceTable.load()
    assert table.lookup("gpt-4o-mini").input == pytest.approx(0.15)
    assert table.lookup("gpt-4o-mini-2024-07-18") == table.lookup("gpt-4o-mini")
    assert table.lookup("gpt-4o-2024-08-06") == table.lookup("gpt-4o")
    assert table.lookup("gpt-4o-mini") != table.lookup("gpt-4o")
    assert table.lookup("gpt-4o-turbo-preview") is None
    assert table.lookup("Qwen/Qwen2.5-7B-Instruct") is None


def test_price_overrides_and_bad_prices(tmp_path):
    table = PriceTable.load({"gpt-4o": {"input": 1, "output": 2}, "mine": (0.5, 0.5)})
    assert table.lookup("gpt-4o").output == 2 and table.lookup("mine").input == 0.5
    assert table.lookup("gpt-4o-mini").input == pytest.approx(0.15)  # bundled prices stay
    cost = table.lookup("mine").cost(Usage(prompt_tokens=2_000_000, completion_tokens=1_000_000))
    assert cost == pytest.approx(1.5)
    with pytest.raises(ConfigError, match="price of 'x' must be"):
        PriceTable.load({"x": {"input": 1}})
    with pytest.raises(ConfigError, match="negative"):
        PriceTable.load({"x": [-1, 1]})
    bad = tmp_path / "p.yaml"
    bad.write_text("- just\n- a list\n")
    with pytest.raises(ConfigError, match="must map model names"):
        PriceTable.load(bad)
    with pytest.raises(ConfigError, match="does not exist"):
        PriceTable.load(tmp_path / "missing.yaml")


def test_cache_round_trip_and_concurrent_writers(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    gen = Generation(text="hi", usage=Usage(prompt_tokens=3, completion_tokens=1), finish_reason="stop")
    cache.put("k", "m", gen, 0.5)
    assert cache.get("k") == (gen, 0.5)
    assert cache.get("other") is None

    def writer(i: int) -> None:
        for j in range(20):
            cache.put(f"{i}-{j}", "m2", Generation(text=str(j)), 0.0)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(cache) == 81
    reopened = ResponseCache(tmp_path / "c.sqlite")
    assert reopened.get("3-19")[0].text == "19"
    assert reopened.clear("m2") == 80 and len(reopened) == 1


def test_cache_in_an_unusable_place_is_a_config_error(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(ConfigError, match="cannot open the response cache"):
        ResponseCache(tmp_path / "file" / "c.sqlite")


def test_ledger_counts_hits_and_failures_separately():
    ledger = UsageLedger()
    u = Usage(prompt_tokens=10, completion_tokens=5)
    ledger.record("a", u, cost_usd=0.1, priced=True, cached=False, latency_s=1.0)
    ledger.record("a", u, cost_usd=0.0, priced=True, cached=True, latency_s=0.0)
    ledger.record("a", u, cost_usd=0.1, priced=True, cached=False, latency_s=1.0, failed=True)
    ledger.record("local", u, cost_usd=0.0, priced=False, cached=False, latency_s=2.0)
    a = ledger.models()["a"]
    assert (a.calls, a.cache_hits, a.failed, a.prompt_tokens, a.cost_usd) == (3, 1, 1, 20, pytest.approx(0.2))
    total = ledger.totals()
    assert (total.calls, total.prompt_tokens, total.completion_tokens) == (4, 30, 15)
    assert not total.priced
    lines = ledger.render().splitlines()
    assert lines[2].startswith("a ") and lines[3].startswith("local") and lines[4].startswith("TOTAL")


def test_registries_refuse_duplicate_names():
    import dataclaw.models.backends.openai_compat  # noqa: F401 - registers http/https/openai

    with pytest.raises(ConfigError, match="model backend name 'http' is already registered"):
        register_backend("http")(lambda scheme, rest, options: None)
    with pytest.raises(ConfigError, match="server kind name 'vllm' is already registered"):
        register_server_kind("vllm")(lambda schema, name: {})


def test_parse_spec_splits_options():
    assert parse_spec("http://h:1/v1::org/model?server=vllm&timeout=5") == (
        "http",
        "//h:1/v1::org/model",
        {"server": "vllm", "timeout": "5"},
    )
    assert parse_spec("local:smollm2-135m") == ("local", "smollm2-135m", {})


def test_get_model_builds_a_chat_model():
    from dataclaw.models import ChatModel, get_model

    model = get_model("http://127.0.0.1:9/v1::m?server=llamacpp&concurrency=2", cache=False)
    assert isinstance(model, ChatModel)
    assert model.model_id == "http://127.0.0.1:9/v1::m"
    assert (model.backend.server, model.backend.concurrency) == ("llamacpp", 2)


def test_option_values_in_the_spec_keep_their_escapes():
    from dataclaw.models import get_model

    model = get_model("http://127.0.0.1:9/v1::m?api_key=a%26b%3Dc&drop_images=1", cache=False)
    assert (model.backend.api_key, model.drop_images) == ("a&b=c", True)
    assert model.model_id == "http://127.0.0.1:9/v1::m"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=60, deadline=None)
@given(
    content=st.text(max_size=40),
    params=st.dictionaries(
        st.sampled_from(["temperature", "seed", "top_p", "stop"]), json_values, max_size=3
    ),
)
def test_cache_keys_ignore_dict_order_and_separate_models(content, params):
    messages = [{"role": "user", "content": content}]
    a = ChatRequest(messages=messages, params=params)
    b = ChatRequest(
        messages=[{"content": content, "role": "user"}], params=dict(reversed(list(params.items())))
    )
    assert a.cache_key("m1") == b.cache_key("m1")
    assert a.fingerprint() == b.fingerprint()
    assert a.cache_key("m1") != a.cache_key("m2")
    changed = ChatRequest(messages=messages, params={**params, "seed": "different"})
    assert changed.cache_key("m1") != a.cache_key("m1") or params.get("seed") == "different"


@settings(max_examples=60, deadline=None)
@given(value=json_values)
def test_any_json_answer_round_trips_under_the_empty_schema(value):
    assert parse_json_answer(json.dumps(value), {}, "m") == value


OUT_OF_TREE = """
from dataclaw.models.backends.base import refuse_unknown_options
from dataclaw.models.servers import ServerKind
from dataclaw.models.types import Backend, Generation


class Echo(Backend):
    free = True

    async def generate(self, request):
        return Generation(text=request.messages[-1]["content"])


def echo(scheme, rest, options):
    refuse_unknown_options(options, f"{scheme}:{rest}", [])
    return Echo(f"{scheme}:{rest}", rest)


TGI = ServerKind("tgi", lambda schema, name: {"grammar": {"type": "json", "value": schema}})
"""


def test_a_backend_and_a_server_kind_from_entry_points(tmp_path, monkeypatch, request):
    import sys

    from dataclaw.models import get_model
    from dataclaw.models.backends.base import BACKENDS
    from dataclaw.models.servers import SERVER_KINDS, schema_fields

    site = tmp_path / "site-packages"
    info = site / "dc_echo-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: dc_echo\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[dataclaw.model_backends]\necho = dc_echo:echo\n\n[dataclaw.server_kinds]\ntgi = dc_echo:TGI\n"
    )
    (info / "RECORD").write_text("")
    (site / "dc_echo.py").write_text(OUT_OF_TREE)
    monkeypatch.syspath_prepend(str(site))
    request.addfinalizer(lambda: sys.modules.pop("dc_echo", None))
    for registry in (BACKENDS, SERVER_KINDS):
        monkeypatch.setattr(registry, "_items", dict(registry._items))
        monkeypatch.setattr(registry, "_loaded", False)

    assert get_model("echo:parrot", cache=False).complete_sync("hello").text == "hello"
    schema = {"type": "object"}
    assert schema_fields("tgi", schema) == {"grammar": {"type": "json", "value": schema}}
    model = get_model("http://127.0.0.1:9/v1::m?server=tgi", cache=False)
    assert model.backend.server == "tgi"
