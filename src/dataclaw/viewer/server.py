"""``dataclaw view``'s HTTP server: stdlib ThreadingHTTPServer, pages from :class:`Site`, files with
HTTP Range (so ``<video>`` seeks and plays), previews and thumbnails made on first request.

Bound to 127.0.0.1 by default. Only three kinds of bytes leave it: the packaged static assets, files
inside a run directory (checked after resolving symlinks), and previews/thumbnails it made itself. The
one thing it writes is a reviewer's verdict (``POST r/<run>/verdicts``, JSON only, same origin), appended
to the run's ``_viewer/verdicts.jsonl``; stage files are never touched.
"""

from __future__ import annotations

import json
import logging
import re
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from dataclaw.core.review import VerdictError
from dataclaw.viewer.markup import esc, page
from dataclaw.viewer.media import OutsideRun, contained, content_type
from dataclaw.viewer.site import NotFound, Site
from dataclaw.viewer.verdicts import REVIEWED_STAGES, next_unreviewed, save_verdict

log = logging.getLogger(__name__)
STATIC = resources.files("dataclaw.viewer") / "static"
CHUNK = 1 << 20
_FILE = re.compile(r"r/(\w+)/(file|preview)/(.+)")
_THUMB = re.compile(r"r/(\w+)/thumb/(\d+)/(\d+)/(\d+)\.jpg")
_RANGE = re.compile(r"bytes=(\d*)-(\d*)$")
_VERDICTS = re.compile(r"r/(\w+)/verdicts")
_UNREVIEWED = re.compile(r"r/(\w+)/([^/]+)/unreviewed")
MAX_POST = 64 * 1024


def make_handler(site: Site) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "dataclaw-view"

        def log_message(self, format: str, *args: Any) -> None:
            log.debug("%s " + format, self.address_string(), *args)

        def do_HEAD(self) -> None:
            self.do_GET(head=True)

        def do_GET(self, head: bool = False) -> None:
            url = urlsplit(self.path)
            path = unquote(url.path).lstrip("/")
            query = dict(parse_qsl(url.query))
            try:
                if path.startswith("static/"):
                    self._static(path[len("static/") :], head)
                elif m := _FILE.fullmatch(path):
                    self._run_file(*m.groups(), head=head)
                elif m := _THUMB.fullmatch(path):
                    self._thumb(*m.groups(), head=head)
                elif m := _UNREVIEWED.fullmatch(path):
                    self._unreviewed(*m.groups(), query.get("after", "-1"), head=head)
                else:
                    self._html(site.render(path, query), head=head)
            except NotFound as exc:
                self._error(HTTPStatus.NOT_FOUND, str(exc), head)
            except OutsideRun as exc:
                self._error(HTTPStatus.FORBIDDEN, str(exc), head)
            except (BrokenPipeError, ConnectionResetError):
                pass
            except Exception as exc:
                log.exception("page %s failed", path)
                self._error(HTTPStatus.INTERNAL_SERVER_ERROR, f"{type(exc).__name__}: {exc}", head)

        def do_POST(self) -> None:
            path = unquote(urlsplit(self.path).path).lstrip("/")
            m = _VERDICTS.fullmatch(path)
            if m is None:
                return self._json({"error": "nothing to post here"}, HTTPStatus.NOT_FOUND)
            if self.headers.get_content_type() != "application/json":  # no cross-site form posts
                return self._json(
                    {"error": "send the verdict as application/json"}, HTTPStatus.UNSUPPORTED_MEDIA_TYPE
                )
            origin, host = self.headers.get("Origin"), self.headers.get("Host")
            if origin and urlsplit(origin).netloc != host:
                return self._json(
                    {"error": "verdicts are saved from this viewer's pages only"}, HTTPStatus.FORBIDDEN
                )
            length = self.headers.get("Content-Length") or "0"
            size = int(length) if length.isdigit() else 0
            if not 0 < size <= MAX_POST:
                return self._json({"error": f"a verdict is 1 to {MAX_POST} bytes"}, HTTPStatus.BAD_REQUEST)
            try:
                raw = json.loads(self.rfile.read(size))
                verdict, review = save_verdict(site.run(m.group(1)), raw)
            except NotFound as exc:
                return self._json({"error": str(exc)}, HTTPStatus.NOT_FOUND)
            except ValueError:
                return self._json({"error": "the body is not JSON"}, HTTPStatus.BAD_REQUEST)
            except VerdictError as exc:
                return self._json({"error": str(exc)}, HTTPStatus.BAD_REQUEST)
            except Exception as exc:
                log.exception("saving a verdict failed")
                return self._json(
                    {"error": f"not saved ({type(exc).__name__})"}, HTTPStatus.INTERNAL_SERVER_ERROR
                )
            return self._json(
                {"saved": verdict.to_dict(), "decision": review.decision, "notes": len(review.notes)}
            )

        def _json(self, obj: dict[str, Any], status: HTTPStatus = HTTPStatus.OK) -> None:
            data = json.dumps(obj).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(data)

        def _unreviewed(self, key: str, stage: str, after: str, head: bool) -> None:
            """303 to the next record of ``stage`` nobody decided on (after position ``after``)."""
            run = site.run(key)
            if stage not in REVIEWED_STAGES or stage not in run.indexes:
                raise NotFound(f"run {run.name} has no reviewed stage {stage}")
            run.refresh()
            pos = next_unreviewed(run, stage, int(after) if after.lstrip("-").isdigit() else -1)
            if pos is None:
                body = page(
                    "Nothing left to review",
                    f"<p>every record of {esc(stage)}.jsonl has a verdict.</p>"
                    f'<p><a href="/r/{esc(key)}/index.html">back to the run</a></p>',
                    "/",
                )
                return self._html(body, head=head)
            self.send_response(HTTPStatus.SEE_OTHER)
            self.send_header("Location", f"/r/{key}/{stage}/{pos}.html")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return None

        def _html(self, text: str, status: HTTPStatus = HTTPStatus.OK, head: bool = False) -> None:
            data = text.encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            if not head:
                self.wfile.write(data)

        def _error(self, status: HTTPStatus, message: str, head: bool) -> None:
            body = page(
                f"{status.value} {status.phrase}", f'<p class="bad" role=alert>{esc(message)}</p>', "/"
            )
            self._html(body, status, head)

        def _static(self, name: str, head: bool) -> None:
            if "/" in name or name.startswith("."):
                raise NotFound(f"no static file {name}")
            res = STATIC / name
            if not res.is_file():
                raise NotFound(f"no static file {name}")
            data = res.read_bytes()
            self.send_response(HTTPStatus.OK)
            self.send_header("Content-Type", content_type(Path(name)))
            self.send_header("Content-Length", str(len(data)))
            # packaged with this dataclaw: a page switch need not fetch them again (a review is many)
            self.send_header("Cache-Control", "max-age=600")
            self.end_headers()
            if not head:
                self.wfile.write(data)

        def _run_file(self, key: str, what: str, rel: str, head: bool) -> None:
            run = site.run(key)
            target = contained(run.root, rel)
            if not target.is_file():
                raise NotFound(f"no file {rel} in run {run.name}")
            if what == "preview":
                play = site.cache.playability(target)
                target = target if play.playable else site.cache.preview(target)
            self._send_file(target, head)

        def _thumb(self, key: str, stream: str, cam: str, frame: str, head: bool) -> None:
            run = site.run(key)
            idx = run.indexes.get("streams")
            if idx is None or int(stream) >= len(idx):
                raise NotFound("no such stream")
            cams = idx.get(int(stream)).get("cameras") or {}
            names = list(cams)
            if int(cam) >= len(names) or not isinstance(cams[names[int(cam)]].get("path"), str):
                raise NotFound("no such camera")
            video = Path(cams[names[int(cam)]]["path"])
            if not video.is_file():
                raise NotFound("the stream's video is not on this machine")
            self._send_file(site.cache.thumbnail(video, int(frame)), head)

        def _send_file(self, path: Path, head: bool) -> None:
            size = path.stat().st_size
            start, end = 0, size - 1
            status = HTTPStatus.OK
            rng = self.headers.get("Range")
            if rng:
                m = _RANGE.match(rng.strip())
                if m is None or (not m.group(1) and not m.group(2)):
                    return self._unsatisfiable(size)
                if m.group(1):
                    start = int(m.group(1))
                    end = min(int(m.group(2)), size - 1) if m.group(2) else size - 1
                else:  # suffix range: the last N bytes
                    start = max(0, size - int(m.group(2)))
                if start >= size or start > end:
                    return self._unsatisfiable(size)
                status = HTTPStatus.PARTIAL_CONTENT
            self.send_response(status)
            self.send_header("Content-Type", content_type(path))
            self.send_header("Accept-Ranges", "bytes")
            self.send_header("Content-Length", str(end - start + 1))
            if status == HTTPStatus.PARTIAL_CONTENT:
                self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
            self.end_headers()
            if head:
                return None
            with path.open("rb") as fh:
                fh.seek(start)
                left = end - start + 1
                while left > 0:
                    chunk = fh.read(min(CHUNK, left))
                    if not chunk:
                        break
                    self.wfile.write(chunk)
                    left -= len(chunk)
            return None

        def _unsatisfiable(self, size: int) -> None:
            self.send_response(HTTPStatus.REQUESTED_RANGE_NOT_SATISFIABLE)
            self.send_header("Content-Range", f"bytes */{size}")
            self.send_header("Content-Length", "0")
            self.end_headers()

    return Handler


def make_server(site: Site, host: str = "127.0.0.1", port: int = 0) -> ThreadingHTTPServer:
    """A server for ``site`` (port 0: any free port; read it from ``server.server_address``)."""
    server = ThreadingHTTPServer((host, port), make_handler(site))
    server.daemon_threads = True
    return server
