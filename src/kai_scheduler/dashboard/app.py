"""The dashboard's web application (Starlette): the page, its static files, the document and its stream.

Read-only: every route is a GET. Routes:
- `/`: the page; `/static/…`: its script and style, served from the package (no CDN);
- `/api/state`: the current document (JSON; 503 with the reason before the first one);
- `/api/stream`: server-sent events, one `state` event with the whole document per new version, checked
  every STREAM_TICK seconds against the feed in memory (never against the API server);
- `/api/timeline`: a simulation's recorded frames (204 No Content when the dashboard shows no simulation: the
  page asks on every load, and a 404 would be an error in the browser's console).
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import AsyncIterator
from importlib import resources
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from kai_scheduler.dashboard.feed import Feed

STREAM_TICK = 0.1  # seconds between two looks at the feed's version by each open stream
KEEPALIVE = 15.0  # seconds of silence after which a stream sends a comment, so proxies keep it open
GRACE = 1  # seconds open connections get to end when the server stops
STATIC = Path(str(resources.files("kai_scheduler.dashboard") / "static"))


def create(feed: Feed, *, timeline: bytes | None = None) -> Starlette:
    async def page(request: Request) -> Response:
        return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-cache"})

    async def state(request: Request) -> Response:
        version, body = feed.current()
        if not version:
            return JSONResponse({"error": feed.error or "the first picture is being built"}, status_code=503)
        return Response(body, media_type="application/json", headers={"Cache-Control": "no-store"})

    async def stream(request: Request) -> Response:
        return StreamingResponse(
            _events(request, feed),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )

    async def recorded(request: Request) -> Response:
        if timeline is None:
            return Response(status_code=204)  # no simulation: a live page, not an error
        return Response(timeline, media_type="application/json")

    return Starlette(
        routes=[
            Route("/", page),
            Route("/api/state", state),
            Route("/api/stream", stream),
            Route("/api/timeline", recorded),
            Mount("/static", app=StaticFiles(directory=STATIC), name="static"),
        ]
    )


async def _events(request: Request, feed: Feed) -> AsyncIterator[bytes]:
    sent, error, quiet = 0, "", 0.0
    while not await request.is_disconnected():
        version, body = feed.current()
        if version != sent:
            sent = version
            quiet = 0.0
            yield b"event: state\ndata: " + body + b"\n\n"
        if feed.error != error:
            error = feed.error
            yield b"event: problem\ndata: " + error.replace("\n", " ").encode() + b"\n\n"
        if quiet >= KEEPALIVE:
            quiet = 0.0
            yield b": keepalive\n\n"
        await asyncio.sleep(STREAM_TICK)
        quiet += STREAM_TICK


class Server:
    """Uvicorn serving an app in a daemon thread, on a socket bound here first: an address that cannot be
    bound is an OSError in the caller, before any thread starts."""

    def __init__(self, app: Any, host: str, port: int) -> None:
        import uvicorn

        self.host = host
        self._socket = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
        # Open event streams never end by themselves: on stop, they get GRACE seconds, then are closed.
        config = uvicorn.Config(
            app, log_level="warning", access_log=False, lifespan="off", timeout_graceful_shutdown=GRACE
        )
        self._server = uvicorn.Server(config)
        self._port = port
        self._thread: threading.Thread | None = None

    def start(self, timeout: float = 10.0) -> None:
        """Bind, listen and serve in a daemon thread; return once serving. OSError if it cannot bind."""
        try:
            self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self._socket.bind((self.host, self._port))
            self._socket.listen(128)
        except OSError:
            self._socket.close()
            raise
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._socket]}, name="kai-dashboard-http", daemon=True
        )
        self._thread.start()
        waited = 0.0
        while not self._server.started and self._thread.is_alive() and waited < timeout:
            time.sleep(0.01)
            waited += 0.01
        if not self._server.started:
            self.stop()
            raise OSError(f"cannot serve on {self.host}:{self._port}")

    @property
    def port(self) -> int:
        """The bound port (the system's choice when asked for port 0)."""
        return int(self._socket.getsockname()[1])

    def stop(self) -> None:
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=GRACE + 5.0)
        self._socket.close()
