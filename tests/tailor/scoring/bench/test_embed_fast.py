"""The direct MiniLM forward behind S_semantic: the vectors of sentence-transformers' ``encode`` to float
noise, the fallback for other stacks, and only the texts a cosine needs get embedded."""

from __future__ import annotations

import numpy as np
import pytest

from dataclaw.models import embed as E
from dataclaw.tailor.intents.registry import IntentCatalog
from dataclaw.tailor.scoring.bench import CachedEmbedder, Scorer
from dataclaw.tailor.scoring.bench.data import Prediction, Reference

TEXTS = [
    "A robot arm lifts the red cup from the table.",
    "A robot arm lifts the blue cup from the table.",  # same length as the one above: one batch
    "Why?",
    "",
    "  surrounding   whitespace\tand\ttabs  ",
    "line one\nline two\nline three",
    "Ünïcödé text — 東京 🙂 café",
    "kettle " * 400,  # past max_seq_length: truncated exactly as encode truncates
    *[f"Step {i}: the person {'slowly ' * (i % 7)}opens drawer {i}." for i in range(60)],
]


@pytest.fixture(scope="module")
def minilm() -> E.Embedder:
    return E.Embedder()


@pytest.mark.slow
def test_direct_forward_gives_the_sentence_transformers_vectors(minilm: E.Embedder) -> None:
    import torch

    assert minilm._forward() is not None  # MiniLM is the plain stack: the direct path is taken
    expected = minilm._model().encode(TEXTS, normalize_embeddings=True, convert_to_numpy=True)
    threads = torch.get_num_threads()
    got = minilm.encode(TEXTS)
    assert torch.get_num_threads() == threads  # the per-core workers leave the thread setting as found
    assert got.shape == expected.shape and got.dtype == np.float32
    assert np.abs(got - expected).max() < 1e-6
    assert np.abs(np.linalg.norm(got, axis=1) - 1).max() < 1e-6
    # one worker (no threads) and the sentence-transformers path agree too
    torch.set_num_threads(1)
    try:
        single = minilm.encode(TEXTS)
    finally:
        torch.set_num_threads(threads)
    assert np.abs(single - expected).max() < 1e-6
    plain = E.Embedder(fast=False).encode(TEXTS)
    assert np.array_equal(plain, expected.astype(np.float32))


@pytest.mark.slow
def test_token_ids_are_those_sentence_transformers_feeds_the_model(minilm: E.Embedder) -> None:
    model = minilm._model()
    feats = model.preprocess(TEXTS)
    pairs = zip(feats["input_ids"], feats["attention_mask"], strict=True)
    padded = [row[mask.bool()].tolist() for row, mask in pairs]
    direct = model.tokenizer(TEXTS, truncation=True, max_length=model.max_seq_length)["input_ids"]
    assert direct == padded and max(map(len, direct)) == model.max_seq_length


@pytest.mark.slow
def test_a_worker_error_reaches_the_caller(minilm: E.Embedder, monkeypatch: pytest.MonkeyPatch) -> None:
    forward = minilm._forward()
    assert forward is not None

    def broken(ids: object) -> object:
        raise RuntimeError("boom")

    monkeypatch.setattr(forward, "forward", broken)
    with pytest.raises(RuntimeError, match="boom"):
        forward.encode(minilm._model(), TEXTS)


def test_other_stacks_fall_back_to_encode() -> None:
    class Dense:  # a module the direct forward does not implement
        pass

    assert E._BertMeanForward.build([Dense(), Dense()]) is None


@pytest.mark.slow
def test_scorer_embeds_only_texts_a_cosine_needs(minilm: E.Embedder) -> None:
    out = {"question": "What is on the table?", "answer": "A kettle.", "reasoning": "It is seen at 12 s."}
    out |= {"key_frames": [1, 5, 9]}
    ref = Reference(id="r", intent="world_knowledge_qa", output=out, subset="daily_life")
    same = Prediction(id="p0", intent=ref.intent, output=dict(out))
    other = Prediction(id="p1", intent=ref.intent, output={**out, "answer": "A silver teapot."})
    cached = CachedEmbedder(embedder=minilm, cache=None)
    a, b = Scorer(IntentCatalog.builtin(), embedder=cached).score([(ref, same), (ref, other)])
    # identical question and reasoning score 1 without a vector; only the two answers are embedded
    assert cached.stats["model"] == 2 and set(cached._mem) == {"A kettle.", "A silver teapot."}
    assert a.sims == {"question": 1.0, "answer": 1.0, "cot": 1.0}
    assert b.sims["question"] == 1.0 and 0.0 < b.sims["answer"] < 1.0
