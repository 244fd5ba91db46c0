"""Any judge backend as an OpenAI-compatible HTTP API (:func:`serve_openai_compatible`), and its command line.

A model loaded once can then serve many clients (RL workers, scoring runs) through
:class:`~brick_gym.judges.backends.OpenAIChatJudge`, with requests that arrive together answered in one batch;
the HTTP path can be tested end to end on loopback. ``python -m brick_gym.judges.server --model DIR_OR_ID``
serves a transformers judge.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import io
import json
import logging
import queue
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

from brick_gym.io.files import parse_json
from brick_gym.judges.backends import (
    PAPER_JUDGE_MODEL,
    PAPER_JUDGE_REVISION,
    ScriptedJudge,
    TransformersJudge,
    yes_to_all,
)
from brick_gym.judges.requests import DEFAULT_MAX_NEW_TOKENS, JudgeBackend, JudgeReply, JudgeRequest

__all__ = ["JudgeHTTPServer", "RequestTooLarge", "decode_data_url", "request_from_chat", "serve_openai_compatible"]

logger = logging.getLogger(__name__)

MAX_REQUEST_BYTES = 64 * 1024 * 1024
"""Largest request body read (8 base64 PNG views at 1024² are ~20 MB; the pairwise tiles less)."""
MAX_IMAGES = 16
"""Most images in one request (a VQA request has 8 views, a pairwise one 2 tiles)."""
MAX_IMAGE_PIXELS = 4096 * 2048
"""Most pixels of one image, read from its header before it is decoded (a tile of 4 views at 1024² is 4096 x 1024)."""
MAX_REQUEST_PIXELS = 4 * MAX_IMAGE_PIXELS
"""Most pixels of all the images of one request together (8 views at 1024² are a quarter of it)."""


class RequestTooLarge(ValueError):
    """A request whose images are too many or too large to decode (answered 413, nothing decoded)."""


def _data_url_bytes(url: Any) -> bytes:
    """The bytes of a base64 image data URL (ValueError when it is not one)."""
    if not isinstance(url, str) or not url.startswith("data:"):
        raise ValueError("only data: image URLs are supported (no remote fetching)")
    header, sep, payload = url.partition(",")
    if not sep or not header.endswith(";base64"):
        raise ValueError("image data URL must be base64-encoded (data:image/...;base64,...)")
    try:
        return base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError(f"bad base64 in image data URL: {exc}") from exc


def _pixels(raw: bytes, what: str) -> int:
    """Width x height of an encoded image, read from its header only (nothing is decoded)."""
    from PIL import Image

    try:
        with Image.open(io.BytesIO(raw)) as img:
            width, height = img.size
    except Exception as exc:
        raise ValueError(f"unreadable image in {what}: {exc}") from exc
    if width * height > MAX_IMAGE_PIXELS:
        raise RequestTooLarge(f"{what} is {width} x {height} pixels; at most {MAX_IMAGE_PIXELS:,} are decoded")
    return width * height


def _decode(raw: bytes) -> np.ndarray:
    from PIL import Image

    try:
        with Image.open(io.BytesIO(raw)) as img:
            return np.asarray(img.convert("RGB"), dtype=np.uint8)
    except Exception as exc:
        raise ValueError(f"unreadable image in data URL: {exc}") from exc


def decode_data_url(url: str) -> np.ndarray:
    """A base64 image data URL (PNG, JPEG, ... anything Pillow reads) as an (H, W, 3) uint8 array; an image over
    :data:`MAX_IMAGE_PIXELS` (by its header) raises :class:`RequestTooLarge` without being decoded."""
    raw = _data_url_bytes(url)
    _pixels(raw, "the image")
    return _decode(raw)


def _decode_all(encoded: list[tuple[str, bytes]]) -> list[np.ndarray]:
    """Every image of a request, decoded only after all their headers fit the bounds (each, and together)."""
    total = sum(_pixels(raw, where) for where, raw in encoded)
    if total > MAX_REQUEST_PIXELS:
        raise RequestTooLarge(f"the images hold {total:,} pixels together; at most {MAX_REQUEST_PIXELS:,} are decoded")
    return [_decode(raw) for _, raw in encoded]


def request_from_chat(body: Mapping[str, Any]) -> JudgeRequest:
    """A chat-completions request body as a :class:`JudgeRequest` (ValueError when it can't be one).

    Images (``image_url`` parts, base64 data URLs only) are collected from all messages in order, texts joined
    with newlines; roles are not kept, images always come first. ``max_completion_tokens`` or ``max_tokens``
    give ``max_new_tokens``. Streaming and ``n > 1`` are refused. Sampling parameters are ignored: backends
    decide how they decode (all built-in ones are deterministic).
    """
    if not isinstance(body, Mapping):
        raise ValueError("request body must be a JSON object")
    if body.get("stream"):
        raise ValueError("streaming is not supported")
    if body.get("n", 1) not in (1, None):
        raise ValueError("only n=1 is supported")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ValueError("'messages' must be a non-empty list")
    images: list[tuple[str, bytes]] = []
    texts: list[str] = []
    for m, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise ValueError(f"messages[{m}] is not an object")
        content = message.get("content")
        if content is None:
            continue
        if isinstance(content, str):
            texts.append(content)
            continue
        if not isinstance(content, list):
            raise ValueError(f"messages[{m}].content must be a string or a list of parts")
        for p, part in enumerate(content):
            kind = part.get("type") if isinstance(part, Mapping) else None
            if kind == "text":
                if not isinstance(part.get("text"), str):
                    raise ValueError(f"messages[{m}].content[{p}].text must be a string")
                texts.append(part["text"])
            elif kind == "image_url":
                ref = part.get("image_url")
                url = ref.get("url") if isinstance(ref, Mapping) else ref
                images.append((f"messages[{m}].content[{p}]", _data_url_bytes(url)))
                if len(images) > MAX_IMAGES:
                    raise RequestTooLarge(f"more than {MAX_IMAGES} images in a request; at most {MAX_IMAGES} are read")
            else:
                raise ValueError(f"messages[{m}].content[{p}]: unsupported part type {kind!r}")
    max_new = body.get("max_completion_tokens") or body.get("max_tokens") or DEFAULT_MAX_NEW_TOKENS
    if isinstance(max_new, bool) or not isinstance(max_new, int) or max_new < 1:
        raise ValueError(f"max_tokens must be a positive integer, got {max_new!r}")
    return JudgeRequest(tuple(_decode_all(images)), "\n".join(texts), max_new)


class _Batcher:
    """One worker thread that answers queued requests, grouping those that arrive together into one call."""

    def __init__(self, backend: JudgeBackend, max_batch: int, wait_s: float) -> None:
        self.backend = backend
        self.max_batch = max(1, max_batch)
        self.wait_s = wait_s
        self._queue: queue.Queue[tuple[JudgeRequest, Future[JudgeReply]] | None] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="judge-batcher", daemon=True)
        self._thread.start()

    def submit(self, request: JudgeRequest) -> JudgeReply:
        future: Future[JudgeReply] = Future()
        self._queue.put((request, future))
        return future.result()

    def _run(self) -> None:
        stop = False
        while not stop:
            item = self._queue.get()
            if item is None:
                break
            batch = [item]
            deadline = time.monotonic() + self.wait_s
            while len(batch) < self.max_batch:
                remaining = deadline - time.monotonic()
                try:
                    nxt = self._queue.get(timeout=remaining) if remaining > 0 else self._queue.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    stop = True
                    break
                batch.append(nxt)
            try:
                replies = self.backend.judge([request for request, _ in batch])
                if len(replies) != len(batch):
                    raise RuntimeError(f"backend returned {len(replies)} replies for {len(batch)} requests")
            except BaseException as exc:
                for _, future in batch:
                    future.set_exception(exc)
            else:
                for (_, future), reply in zip(batch, replies, strict=True):
                    future.set_result(reply)
        while True:  # fail whatever is still queued
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is not None:
                item[1].set_exception(RuntimeError("judge server closed"))

    def close(self, timeout: float = 5.0) -> None:
        self._queue.put(None)
        self._thread.join(timeout)


class JudgeHTTPServer(ThreadingHTTPServer):
    """The server of :func:`serve_openai_compatible`; :meth:`stop` shuts it down and frees the port."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], backend: JudgeBackend, max_batch: int, batch_wait_s: float) -> None:
        self.backend = backend
        self.batcher = _Batcher(backend, max_batch, batch_wait_s)
        self.thread: threading.Thread | None = None
        super().__init__(address, _ChatHandler)

    @property
    def base_url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}/v1"

    def server_close(self) -> None:
        super().server_close()
        self.batcher.close()

    def stop(self) -> None:
        """Stop serving, close the socket and the batcher, join the serving thread."""
        self.shutdown()
        self.server_close()
        if self.thread is not None:
            self.thread.join(5.0)


class _ChatHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: JudgeHTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("%s - " + format, self.address_string(), *args)

    def _send_json(self, status: int, payload: Any) -> None:
        body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _error(self, status: int, message: str, kind: str, code: str | None = None) -> None:
        self._send_json(status, {"error": {"message": message, "type": kind, "param": None, "code": code}})

    def _route(self) -> str:
        path = self.path.split("?", 1)[0].rstrip("/")
        return path[3:] if path.startswith("/v1/") else path

    def do_GET(self) -> None:
        route = self._route()
        if route == "/models":
            model = {"id": self.server.backend.model, "object": "model", "created": 0, "owned_by": "brick_gym"}
            self._send_json(200, {"object": "list", "data": [model]})
        elif route == "/health":
            self._send_json(200, {"status": "ok"})
        else:
            self._error(404, f"no route GET {self.path}", "not_found_error")

    def do_POST(self) -> None:
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if not 0 <= length <= MAX_REQUEST_BYTES:
            self.close_connection = True  # the body is not read: the connection cannot be reused
            self._error(413, f"Content-Length must be 0..{MAX_REQUEST_BYTES:,} bytes", "invalid_request_error")
            return
        raw = self.rfile.read(length) if length > 0 else b""
        if self._route() != "/chat/completions":
            self._error(404, f"no route POST {self.path}", "not_found_error")
            return
        backend = self.server.backend
        try:
            body = parse_json(raw, "request body", max_bytes=MAX_REQUEST_BYTES)
            if not isinstance(body, dict):
                raise ValueError("the request body must be a JSON object")
            request = request_from_chat(body)
        except RequestTooLarge as exc:
            self._error(413, str(exc), "invalid_request_error")
            return
        except (ValueError, UnicodeDecodeError, TypeError) as exc:
            self._error(400, str(exc), "invalid_request_error")
            return
        model = body.get("model")
        if model is not None and model != backend.model:
            self._error(
                404,
                f"model {model!r} is not served here (serving {backend.model!r})",
                "not_found_error",
                "model_not_found",
            )
            return
        try:
            reply = self.server.batcher.submit(request)
        except Exception as exc:
            logger.exception("judge backend failed")
            self._error(500, f"judge backend failed: {type(exc).__name__}: {exc}", "server_error")
            return
        self._send_json(
            200,
            {
                "id": f"chatcmpl-{uuid.uuid4().hex}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": backend.model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": reply.text},
                        "finish_reason": "stop",
                        "logprobs": None,
                    }
                ],
                "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
            },
        )


def serve_openai_compatible(
    backend: JudgeBackend,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    max_batch: int | None = None,
    batch_wait_s: float = 0.01,
) -> tuple[JudgeHTTPServer, threading.Thread, str]:
    """Serve ``backend`` as an OpenAI-compatible API in a background thread; returns (server, thread, base_url).

    Routes: ``POST /v1/chat/completions`` (body → :func:`request_from_chat` → backend; usage counts are 0,
    finish_reason is always ``"stop"``), ``GET /v1/models`` (the backend's model) and ``GET /health``. A body
    naming another model gets 404; a backend error gets 500. Requests arriving within ``batch_wait_s`` of each
    other are answered in one ``backend.judge`` call of up to ``max_batch`` (default: the backend's
    ``batch_size``, else 8); the backend is only ever called from one thread. ``port=0`` picks a free port.
    Stop with ``server.stop()``.
    """
    if max_batch is None:
        max_batch = int(getattr(backend, "batch_size", 8))
    server = JudgeHTTPServer((host, port), backend, max_batch, batch_wait_s)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.1}, name="judge-http", daemon=True
    )
    server.thread = thread
    thread.start()
    return server, thread, server.base_url


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m brick_gym.judges.server --model DIR_OR_ID [--port 8000]``: serve a transformers judge over HTTP."""
    parser = argparse.ArgumentParser(description="Serve a judge backend as an OpenAI-compatible API.")
    parser.add_argument("--model", default=PAPER_JUDGE_MODEL, help="model id or local directory")
    parser.add_argument("--revision", default=None, help=f"model revision (paper: {PAPER_JUDGE_REVISION})")
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--scripted-yes", action="store_true", help="serve yes_to_all instead of a model")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO)
    backend: JudgeBackend
    if args.scripted_yes:
        backend = ScriptedJudge(yes_to_all)
    else:
        revision = args.revision
        if revision is None and args.model == PAPER_JUDGE_MODEL:
            revision = PAPER_JUDGE_REVISION
        backend = TransformersJudge(args.model, revision, batch_size=args.batch_size).load()
    server, thread, base_url = serve_openai_compatible(backend, args.host, args.port)
    print(f"serving {backend.model} at {base_url}", flush=True)
    try:
        thread.join()
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()
