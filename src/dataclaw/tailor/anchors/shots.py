"""Shot-boundary anchors (paper §3.2: "shot-boundary detection … for video streams").

The detector is a choice, one of PySceneDetect's three (same names and parameters as PySceneDetect):

- ``content`` (``ContentDetector``): scores each frame by its HSV change from the previous one and cuts
  where the score passes ``threshold`` (at most one cut per ``min_scene_len`` frames). Hard cuts.
- ``adaptive`` (``AdaptiveDetector``): the same score divided by its mean over ``window_width`` frames on
  either side; cuts where that ratio passes ``adaptive_threshold`` and the score ``min_content_val``.
  Fewer false cuts on fast camera motion.
- ``threshold`` (``ThresholdDetector``): cuts where the mean brightness crosses ``fade_threshold`` (fades
  to and from black), placed by ``fade_bias``.

We keep every frame's score as the detector computes it, so each boundary anchor says how sure it is: a
cut just over the threshold is a coin toss, one at several times the threshold is not (the threshold
detector has no per-cut score: its cuts get confidence 0.5). Every shot anchor records the detector and
its parameters, so anchors of different settings never share an id.

Defaults are data-juicer's (content detector, threshold 27, min scene length 15 frames), which
reproduce its expected scene counts on its own test videos.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from dataclaw.core.errors import ConfigError, require
from dataclaw.media.errors import MediaError, MediaIssue
from dataclaw.tailor.anchors._video import main_video
from dataclaw.tailor.anchors.base import Anchor, AnchorExtractor, make_anchor, register_extractor

if TYPE_CHECKING:
    from dataclaw.tailor.streams import Stream, StreamSource


DETECTORS = ("content", "adaptive", "threshold")
"""PySceneDetect detectors a shot extractor may use (``ContentDetector``, ``AdaptiveDetector``,
``ThresholdDetector``)."""


@dataclass(frozen=True)
class ShotParams:
    """Detector choice and settings (PySceneDetect names; ``fade_threshold`` is ThresholdDetector's
    ``threshold``, kept apart so each detector's default stays its own).

    ``threading`` is PyAV's decoder threading mode; the default (none) keeps every frame: with frame
    threading scenedetect's PyAV backend loses the frames still inside the decoder at the end.
    """

    threshold: float = 27.0
    min_scene_len: int = 15
    luma_only: bool = False
    threading: str | None = None
    detector: str = "content"
    adaptive_threshold: float = 3.0
    window_width: int = 2
    min_content_val: float = 15.0
    fade_threshold: float = 12.0
    fade_bias: float = 0.0

    def __post_init__(self) -> None:
        if self.detector not in DETECTORS:
            raise ConfigError(f"shot detector must be one of {', '.join(DETECTORS)}, got '{self.detector}'")
        if self.threshold <= 0:
            raise ConfigError(f"shot threshold must be > 0, got {self.threshold}")
        if self.min_scene_len < 1:
            raise ConfigError(f"min_scene_len must be >= 1 frame, got {self.min_scene_len}")
        if self.adaptive_threshold <= 0 or self.window_width < 1 or self.min_content_val < 0:
            raise ConfigError(
                "adaptive detector needs adaptive_threshold > 0, window_width >= 1 and min_content_val >= 0"
            )
        if not 0 <= self.fade_threshold <= 255 or not -1.0 <= self.fade_bias <= 1.0:
            raise ConfigError(
                f"threshold detector needs 0 <= fade_threshold <= 255 and -1 <= fade_bias <= 1, got "
                f"{self.fade_threshold}, {self.fade_bias}"
            )

    def settings(self) -> dict[str, Any]:
        """The chosen detector's own parameters (what a shot anchor records)."""
        common = {"detector": self.detector, "min_scene_len": self.min_scene_len}
        if self.detector == "content":
            return {**common, "threshold": self.threshold, "luma_only": self.luma_only}
        if self.detector == "adaptive":
            return {
                **common, "adaptive_threshold": self.adaptive_threshold, "window_width": self.window_width,
                "min_content_val": self.min_content_val, "luma_only": self.luma_only,
            }  # fmt: skip
        return {**common, "threshold": self.fade_threshold, "fade_bias": self.fade_bias}

    @property
    def cut_threshold(self) -> float:
        """What a cut's score is compared with (confidence 0.5 there)."""
        return {"content": self.threshold, "adaptive": self.adaptive_threshold}.get(
            self.detector, self.fade_threshold
        )


@dataclass(frozen=True)
class Shot:
    """One shot: frames ``[start_frame, end_frame)`` and seconds ``[start_s, end_s)``.

    ``boundary_score`` is the detector's content score at ``start_frame`` (None for the first shot,
    which starts at the start of the video); ``confidence`` is that of the weaker of its two boundaries.
    """

    index: int
    start_frame: int
    end_frame: int
    start_s: float
    end_s: float
    boundary_score: float | None
    boundary_confidence: float
    confidence: float


def boundary_confidence(score: float, threshold: float) -> float:
    """Confidence of a cut whose content score is ``score``: 0.5 at the threshold, → 1 far above it.

    ``1 - threshold / (2 * score)``: a cut exactly at the threshold could as well not be one; a cut
    at twice the threshold is 0.75, at four times 0.875. Scores below the threshold (never cut) map to
    less than 0.5, clipped at 0.
    """
    if score <= 0:
        return 0.0
    return max(0.0, min(1.0, 1.0 - threshold / (2.0 * score)))


def detect_shots(
    path: str | Path,
    params: ShotParams | None = None,
    start_s: float = 0.0,
    end_s: float | None = None,
    frame_count: int | None = None,
) -> list[Shot]:
    """Shots of the video at ``path`` (at least one for a readable, non-empty video).

    ``start_s``/``end_s`` restrict detection to part of the file (a stream that is a range of a larger
    file); frames and times in the result are then relative to ``start_s``. ``frame_count`` (exact,
    e.g. from the stream's packet index) ends the last shot: scenedetect's PyAV backend does not drain
    the decoder at the end of the file and stops a frame or two short.

    Raises :class:`~dataclaw.media.errors.MediaError` when the file cannot be opened or has no frames.
    """
    params = params or ShotParams()
    scenedetect = require("scenedetect", "shot-boundary anchors", "media")
    # scenedetect logs progress at INFO through a handler of its own; our CLI shows warnings and up
    logging.getLogger("pyscenedetect").setLevel(logging.WARNING)
    path = Path(path)
    if not path.is_file():
        raise MediaError(MediaIssue.NOT_FOUND, f"{path.name}: video file not found")
    if path.stat().st_size == 0:
        raise MediaError(MediaIssue.EMPTY, f"{path.name}: video file is empty (0 bytes)")
    try:
        video = scenedetect.open_video(str(path), backend="pyav", threading_mode=params.threading)
    except Exception as exc:  # noqa: BLE001 - PyAV and scenedetect raise many types for one cause
        raise MediaError(
            MediaIssue.CORRUPT, f"{path.name}: cannot open video ({type(exc).__name__}: {exc})"
        ) from None
    detector = _scored_detector(scenedetect, params)
    manager = scenedetect.SceneManager()
    manager.add_detector(detector)
    try:
        if start_s > 0:
            video.seek(start_s)
        end = None if end_s is None or end_s == float("inf") else end_s
        decoded = manager.detect_scenes(video, end_time=end, show_progress=False)
    except Exception as exc:  # noqa: BLE001 - PyAV and scenedetect raise many types for one cause
        raise MediaError(
            MediaIssue.CORRUPT, f"{path.name}: video cannot be decoded ({type(exc).__name__}: {exc})"
        ) from None
    if decoded <= 0:
        raise MediaError(MediaIssue.EMPTY, f"{path.name}: video has no decodable frames")
    scenes = manager.get_scene_list(start_in_scene=True)
    fps = float(video.frame_rate)
    scores = detector.cut_scores(params)
    shots = _rebase(_shots_from_scenes(scenes, scores, params.cut_threshold, fps), fps)
    if frame_count and shots and frame_count > shots[-1].end_frame:
        shots[-1] = replace(shots[-1], end_frame=frame_count, end_s=round(frame_count / fps, 6))
    return shots


def _rebase(shots: list[Shot], fps: float) -> list[Shot]:
    """Shift shots so the first starts at frame 0 / 0 s (for streams that are a range of a file)."""
    if not shots or shots[0].start_frame == 0:
        return shots
    f0 = shots[0].start_frame
    return [
        replace(
            s,
            start_frame=s.start_frame - f0,
            end_frame=s.end_frame - f0,
            start_s=round((s.start_frame - f0) / fps, 6),
            end_s=round((s.end_frame - f0) / fps, 6),
        )
        for s in shots
    ]


def detector_kwargs(params: ShotParams) -> dict[str, Any]:
    """Keyword arguments of the PySceneDetect detector ``params.detector`` (its own names)."""
    if params.detector == "content":
        return {
            "threshold": params.threshold,
            "min_scene_len": params.min_scene_len,
            "luma_only": params.luma_only,
        }
    if params.detector == "adaptive":
        return {
            "adaptive_threshold": params.adaptive_threshold, "min_scene_len": params.min_scene_len,
            "window_width": params.window_width, "min_content_val": params.min_content_val,
            "luma_only": params.luma_only,
        }  # fmt: skip
    return {
        "threshold": params.fade_threshold,
        "min_scene_len": params.min_scene_len,
        "fade_bias": params.fade_bias,
    }


def make_detector(scenedetect: Any, params: ShotParams) -> Any:
    """PySceneDetect's own detector for ``params`` (what ``scenedetect.detect()`` would be given)."""
    cls = {
        "content": scenedetect.ContentDetector,
        "adaptive": scenedetect.AdaptiveDetector,
        "threshold": scenedetect.ThresholdDetector,
    }[params.detector]
    return cls(**detector_kwargs(params))


def _scored_detector(scenedetect: Any, params: ShotParams) -> Any:
    """The chosen detector, subclassed to keep each frame's content score (content and adaptive).

    Attaching a StatsManager would record the scores too, but it also makes the detector compute Canny
    edges on every frame (a fifth of the run time) for a component whose weight is 0. The adaptive
    detector's cut score is its ratio: the frame's content score over the mean of its neighbours'.
    """
    base = type(make_detector(scenedetect, params))

    class Scored(base):  # type: ignore[misc, valid-type]
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.scores: dict[int, float] = {}

        def _calculate_frame_score(self, frame_num: int, frame_img: Any) -> float:
            score = float(super()._calculate_frame_score(frame_num, frame_img))
            self.scores[int(frame_num)] = score
            return score

        def cut_scores(self, p: ShotParams) -> dict[int, float]:
            if p.detector != "adaptive":
                return self.scores  # empty for the threshold detector (it never calls the method)
            out: dict[int, float] = {}
            for frame, score in self.scores.items():
                around = [
                    self.scores[f]
                    for f in range(frame - p.window_width, frame + p.window_width + 1)
                    if f != frame and f in self.scores
                ]
                mean = sum(around) / len(around) if around else 0.0
                out[frame] = min(score / mean, 255.0) if mean > 1e-5 else 255.0
            return out

    return Scored(**detector_kwargs(params))


def _shots_from_scenes(
    scenes: list[Any], scores: dict[int, float], threshold: float, fps: float
) -> list[Shot]:
    """Shots with boundary scores and confidences from scenedetect's scene list and frame scores."""
    starts: list[tuple[int, float, float | None, float]] = []
    for i, (start, _end) in enumerate(scenes):
        frame = start.get_frames()
        if i == 0:
            starts.append((frame, start.get_seconds(), None, 1.0))
            continue
        score = scores.get(frame)
        conf = 0.5 if score is None else boundary_confidence(score, threshold)
        starts.append((frame, start.get_seconds(), score, conf))
    shots: list[Shot] = []
    for i, (_start, end) in enumerate(scenes):
        frame, secs, score, conf = starts[i]
        next_conf = starts[i + 1][3] if i + 1 < len(starts) else 1.0
        shots.append(
            Shot(
                index=i,
                start_frame=frame,
                end_frame=end.get_frames(),
                start_s=round(secs, 6),
                end_s=round(end.get_frames() / fps if fps > 0 else end.get_seconds(), 6),
                boundary_score=None if score is None else round(score, 4),
                boundary_confidence=round(conf, 4),
                confidence=round(min(conf, next_conf), 4),
            )
        )
    return shots


def shot_anchors(
    stream_id: str, shots: list[Shot], params: ShotParams, camera: str | None = None
) -> list[Anchor]:
    """One ``shot`` interval anchor per shot and one ``shot_boundary`` point anchor per cut."""
    anchors: list[Anchor] = []
    for shot in shots:
        payload: dict[str, Any] = {k: v for k, v in asdict(shot).items() if k not in ("start_s", "end_s")}
        payload["detector"] = params.settings()
        if camera:
            payload["camera"] = camera
        anchors.append(
            make_anchor(
                stream_id,
                shot.start_s,
                "shot",
                ShotBoundaries.name,
                payload,
                confidence=shot.confidence,
                t_end=shot.end_s,
            )
        )
        if shot.index > 0:
            cut = {
                "frame": shot.start_frame, "score": shot.boundary_score, "threshold": params.cut_threshold,
                "detector": params.detector,
            }  # fmt: skip
            if camera:
                cut["camera"] = camera
            anchors.append(
                make_anchor(
                    stream_id,
                    shot.start_s,
                    "shot_boundary",
                    ShotBoundaries.name,
                    cut,
                    confidence=shot.boundary_confidence,
                )
            )
    return anchors


@register_extractor
class ShotBoundaries(AnchorExtractor):
    """Shot boundaries of a stream's main video (everyday/AIGC video and GUI screen recordings), by the
    chosen PySceneDetect detector (``content``, ``adaptive`` or ``threshold``; see :class:`ShotParams`)."""

    name: ClassVar[str] = "shots"

    def __init__(
        self,
        detector: str = ShotParams.detector,
        threshold: float = ShotParams.threshold,
        min_scene_len: int = ShotParams.min_scene_len,
        luma_only: bool = ShotParams.luma_only,
        adaptive_threshold: float = ShotParams.adaptive_threshold,
        window_width: int = ShotParams.window_width,
        min_content_val: float = ShotParams.min_content_val,
        fade_threshold: float = ShotParams.fade_threshold,
        fade_bias: float = ShotParams.fade_bias,
    ) -> None:
        """The settings are :class:`ShotParams`'s, with its defaults (declared there only)."""
        self.params = ShotParams(
            detector=detector, threshold=threshold, min_scene_len=min_scene_len, luma_only=luma_only,
            adaptive_threshold=adaptive_threshold, window_width=window_width,
            min_content_val=min_content_val, fade_threshold=fade_threshold, fade_bias=fade_bias,
        )  # fmt: skip

    def applies_to(self, stream: Stream) -> bool:
        return main_video(stream) is not None

    def extract(self, stream: Stream, source: StreamSource) -> list[Anchor]:
        video = main_video(stream)
        if video is None:
            return []
        count = stream.cameras[video.camera].frame_count or None
        shots = detect_shots(video.path, self.params, video.time_start, video.time_end, frame_count=count)
        return shot_anchors(stream.id, shots, self.params, video.camera)
