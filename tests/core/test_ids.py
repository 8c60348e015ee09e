from dataclaw.core.ids import canonical_json, child_id, root_id, slug, stable_hash


def test_ids_are_deterministic_and_read_as_lineage():
    stream = root_id("stream", "Episode 1.mp4", {"path": "/data/ep1.mp4"})
    assert stream == root_id("stream", "Episode 1.mp4", {"path": "/data/ep1.mp4"})
    assert stream.startswith("stream:episode-1.mp4-")
    cand = child_id(stream, "cand", {"at": 0.35}, label="fault")
    assert cand.startswith(stream + "/cand-fault-")
    assert cand != child_id(stream, "cand", {"at": 0.5}, label="fault")
    assert cand != child_id(
        root_id("stream", "Episode 1.mp4", {"path": "/x"}), "cand", {"at": 0.35}, label="fault"
    )


def test_canonical_json_ignores_key_order():
    assert canonical_json({"b": 1, "a": [1, 2]}) == canonical_json({"a": [1, 2], "b": 1})
    assert stable_hash({"b": 1, "a": 2}) == stable_hash({"a": 2, "b": 1})
    assert stable_hash("x") != stable_hash("y")


def test_slug_is_safe():
    assert slug("../../etc/passwd") == "etc-passwd"
    assert slug("") == "x"
