"""The judge server bounds decoded work (issue 34, finding 6): images too large, too many, or too many pixels
together are answered 413 from their headers, before anything is decoded; a highly compressible PNG bomb never
reaches the decoder."""

from __future__ import annotations

import base64
import json
import struct
import time
import urllib.error
import urllib.request
import zlib

import pytest

from brick_gym.judges import server as judge_server
from brick_gym.judges.backends import ScriptedJudge
from brick_gym.judges.server import MAX_IMAGE_PIXELS, MAX_IMAGES, serve_openai_compatible


def _png(width: int, height: int) -> bytes:
    """An all-black greyscale PNG, compressed row by row (a 9000 x 9000 one is about 80 KB)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    packer = zlib.compressobj(9)
    row = bytes(width + 1)
    body = b"".join(packer.compress(row) for _ in range(height)) + packer.flush()
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", body) + chunk(b"IEND", b"")


def _post(base_url: str, images: list[bytes]) -> tuple[int, str]:
    content = [{"type": "image_url", "image_url": {"url": _url(img)}} for img in images]
    body = {"model": "scripted", "messages": [{"role": "user", "content": [*content, {"type": "text", "text": "q"}]}]}
    req = urllib.request.Request(f"{base_url}/chat/completions", json.dumps(body).encode(), method="POST")
    req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _url(img: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(img).decode()


@pytest.fixture
def base_url(monkeypatch: pytest.MonkeyPatch):
    decoded: list[int] = []
    real = judge_server._decode
    monkeypatch.setattr(judge_server, "_decode", lambda raw: decoded.append(len(raw)) or real(raw))
    server, _, url = serve_openai_compatible(ScriptedJudge(lambda request: "yes"), port=0)
    try:
        yield url, decoded
    finally:
        server.stop()


@pytest.mark.parametrize(
    ("images", "why"),
    [
        ([_png(9000, 9000)], "9000 x 9000 pixels"),
        ([_png(8, 8)] * (MAX_IMAGES + 1), f"at most {MAX_IMAGES} are read"),
        ([_png(4096, 2048)] * 5, "pixels together"),
    ],
    ids=["one bomb", "too many", "too many pixels together"],
)
def test_oversized_images_are_refused_413_before_decoding(base_url, images: list[bytes], why: str) -> None:
    url, decoded = base_url
    assert 4096 * 2048 <= MAX_IMAGE_PIXELS < 9000 * 9000
    t0 = time.perf_counter()
    status, text = _post(url, images)
    assert status == 413 and why in text, (status, text[:300])
    assert decoded == [] and time.perf_counter() - t0 < 10


def test_images_within_the_bounds_are_answered(base_url) -> None:
    url, decoded = base_url
    status, text = _post(url, [_png(1024, 1024)] * 8)
    assert status == 200 and len(decoded) == 8, text[:300]
