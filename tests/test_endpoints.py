"""brick_gym.endpoints: the retry policy, image encoding and the transformers dtype keyword, and a light import.

The OpenAI endpoint itself is exercised over loopback HTTP by the chat client (``tests/llm/test_clients.py``) and
the judge (``tests/judges/test_server.py``).
"""

from __future__ import annotations

import base64
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from brick_gym.endpoints import call_with_retries, dtype_kwargs, image_base64, image_data_url, is_transient

ROOT = Path(__file__).resolve().parents[1]


def test_import_does_not_pull_heavy_dependencies() -> None:
    code = (
        "import sys, brick_gym.endpoints\n"
        "bad = [m for m in ('numpy', 'openai', 'anthropic', 'PIL', 'transformers') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_retry_policy() -> None:
    class Status(Exception):
        def __init__(self, code: int) -> None:
            super().__init__(f"HTTP {code}")
            self.status_code = code

    assert is_transient(Status(429)) and is_transient(Status(503)) and is_transient(Status(408))
    assert not is_transient(Status(400)) and not is_transient(Status(401)) and not is_transient(ValueError("x"))
    assert is_transient(TimeoutError()) and is_transient(ConnectionResetError())
    attempts, waits = [], []

    def fn() -> str:
        attempts.append(1)
        if len(attempts) < 3:
            raise Status(502)
        return "ok"

    assert call_with_retries(fn, max_retries=5, base_delay=1.0, sleep=waits.append) == "ok"
    assert waits == [1.0, 2.0]
    with pytest.raises(Status):
        call_with_retries(lambda: (_ for _ in ()).throw(Status(500)), max_retries=2, sleep=waits.append)
    assert waits[2:] == [1.0, 2.0]


def test_retry_after_is_honoured_and_capped() -> None:
    class Limited(Exception):
        def __init__(self, retry_after: str) -> None:
            super().__init__("HTTP 429")
            self.status_code = 429
            self.response = type("Response", (), {"headers": {"retry-after": retry_after}})()

    errors = [Limited("120"), Limited("0.5")]

    def fn() -> str:
        if errors:
            raise errors.pop()
        return "ok"

    waits: list[float] = []
    assert call_with_retries(fn, base_delay=1.0, max_delay=60.0, sleep=waits.append) == "ok"
    assert waits == [0.5, 60.0]


def test_images_encode_arrays_as_png_and_files_as_they_are(tmp_path: Path) -> None:
    pytest.importorskip("PIL")
    img = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3)
    media, data = image_base64(img)
    assert media == "image/png" and base64.b64decode(data).startswith(b"\x89PNG")
    assert image_data_url(img) == f"data:image/png;base64,{data}"
    photo = tmp_path / "view.JPG"
    photo.write_bytes(b"not really a jpeg")
    assert image_base64(photo) == ("image/jpeg", base64.b64encode(b"not really a jpeg").decode("ascii"))
    assert image_data_url(str(photo)).startswith("data:image/jpeg;base64,")


def test_dtype_keyword_follows_the_transformers_version(monkeypatch: pytest.MonkeyPatch) -> None:
    transformers = pytest.importorskip("transformers")
    monkeypatch.setattr(transformers, "__version__", "4.55.2")
    assert dtype_kwargs("auto") == {"torch_dtype": "auto"}
    monkeypatch.setattr(transformers, "__version__", "4.56.0")
    assert dtype_kwargs("auto") == {"dtype": "auto"}


def test_an_endpoint_that_still_fails_is_named_and_told_from_the_model() -> None:
    from brick_gym.endpoints import EndpointError, is_infrastructure

    class Status(Exception):
        def __init__(self, code: int) -> None:
            super().__init__(f"HTTP {code}")
            self.status_code = code

    assert is_infrastructure(Status(401)) and is_infrastructure(Status(404)) and is_infrastructure(Status(503))
    assert not is_infrastructure(Status(400)) and not is_infrastructure(ValueError("bad"))
    waits: list[float] = []
    with pytest.raises(EndpointError, match=r"endpoint http://h/v1 failed after 3 attempt\(s\): HTTP 503") as info:
        call_with_retries(
            lambda: (_ for _ in ()).throw(Status(503)), max_retries=2, sleep=waits.append, endpoint="http://h/v1"
        )
    assert info.value.url == "http://h/v1" and info.value.status == 503 and waits == [1.0, 2.0]
    with pytest.raises(EndpointError, match="after 1 attempt"):  # a refused key is not retried, and is the endpoint's
        call_with_retries(lambda: (_ for _ in ()).throw(Status(401)), sleep=waits.append, endpoint="http://h/v1")
    with pytest.raises(Status):  # a request the server refused for its content stays the caller's error
        call_with_retries(lambda: (_ for _ in ()).throw(Status(400)), sleep=waits.append, endpoint="http://h/v1")
