"""A persistent JSONL cache in front of any judge backend (:class:`CachedJudge`).

Judging is the slow, costly part of scoring and of judge rewards; the same pixels and prompt asked again, by a
re-run, a resumed run or another episode reaching the same assembly, are answered from the file instead.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import threading
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from brick_gym.io.files import open_regular, parse_json
from brick_gym.judges.requests import JudgeBackend, JudgeReply, JudgeRequest, chunks, request_key

__all__ = ["CachedJudge"]


class CachedJudge:
    """A backend wrapped with a persistent JSONL cache; only requests not in the file reach ``inner``.

    Keys (:func:`request_key`) cover the inner backend's name, model and revision, the text, ``max_new_tokens``
    and each image's sha256 (bytes + shape), so a one-pixel change is a new request. Each new reply is appended
    as one line (flushed and fsynced), so a crash loses at most the batch in flight; a new ``CachedJudge`` on the
    same file resumes without asking anything twice. Undecodable lines (typically a torn last line from a
    crash) are skipped with a :class:`RuntimeWarning`, never fatal; the next append starts on a fresh line.

    Every reply is cached, parsed or not. To ask again, pass ``refresh``, a predicate ``(request, cached_reply)
    -> bool``, to the constructor or to :meth:`judge`, e.g. ``lambda req, rep: parse_vqa_reply(rep.text, n) is
    None`` to retry unparsed VQA replies; the new reply is appended and, on load, the last line of a key wins.
    (Greedy backends usually repeat themselves: retrying pays off with sampling or a different model.)

    Identical requests within one call are asked once. Misses go to ``inner`` in chunks of ``chunk_size``
    (default: all at once), each chunk written before the next is asked. One writer per file at a time.
    """

    def __init__(
        self,
        inner: JudgeBackend,
        path: str | os.PathLike[str],
        *,
        refresh: Callable[[JudgeRequest, JudgeReply], bool] | None = None,
        chunk_size: int | None = None,
    ) -> None:
        if chunk_size is not None and chunk_size < 1:
            raise ValueError(f"chunk_size must be at least 1, got {chunk_size}")
        self.inner = inner
        self.path = Path(path)
        self.refresh = refresh
        self.chunk_size = chunk_size
        self.hits = 0
        self.misses = 0
        self._entries: dict[str, dict[str, Any]] = {}
        self._needs_newline = False
        self._lock = threading.RLock()
        self._load()

    @property
    def name(self) -> str:  # type: ignore[override]
        return self.inner.name

    @property
    def model(self) -> str:  # type: ignore[override]
        return self.inner.model

    @property
    def revision(self) -> str | None:  # type: ignore[override]
        return self.inner.revision

    def __repr__(self) -> str:
        return f"CachedJudge({self.inner!r}, {str(self.path)!r}, {len(self)} entries)"

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, request: object) -> bool:
        return isinstance(request, JudgeRequest) and self.key(request) in self._entries

    def key(self, request: JudgeRequest) -> str:
        """This request's cache key for the inner backend."""
        return request_key(request, self.name, self.model, self.revision)

    def get(self, request: JudgeRequest) -> JudgeReply | None:
        """The cached reply of a request, or None; never asks the inner backend."""
        record = self._entries.get(self.key(request))
        return None if record is None else self._reply(record)

    # -- file --------------------------------------------------------------------------------------------------
    def _load(self) -> None:
        if not self.path.exists():
            return
        with open_regular(self.path) as fh:  # a FIFO (or a folder) under the cache's name is refused, not waited on
            data = fh.read()
        lines = data.split(b"\n")
        for lineno, raw in enumerate(lines, start=1):
            if not raw.strip():
                continue
            try:
                record = parse_json(raw, f"{self.path}:{lineno}")
                if not isinstance(record, dict) or not isinstance(record["key"], str):
                    raise ValueError("not a cache record")
                if not isinstance(record["text"], str):
                    raise ValueError("reply text is not a string")
                if not all(isinstance(record.get(k, ""), str) for k in ("backend", "model")):
                    raise ValueError("backend or model is not a string")
                if not isinstance(record.get("revision"), str | None):
                    raise ValueError("revision is not a string")
                self._reply(record)  # every field the reply is made of converts (p_yes: {int: float}) or it is skipped
            except (ValueError, KeyError, TypeError, AttributeError, OverflowError, UnicodeDecodeError) as exc:
                torn = lineno == len(lines)  # the last line without its newline: an interrupted append
                what = "torn last line (interrupted write?)" if torn else f"unreadable line ({exc})"
                warnings.warn(f"{self.path}:{lineno}: {what} ignored", RuntimeWarning, stacklevel=3)
                continue
            self._entries[record["key"]] = record
        self._needs_newline = bool(data) and not data.endswith(b"\n")

    def _append(self, records: list[dict[str, Any]]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as f:
            if self._needs_newline:
                f.write("\n")  # never glue a record onto a torn line
                self._needs_newline = False
            for record in records:
                f.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")
                f.flush()
                os.fsync(f.fileno())
                self._entries[record["key"]] = record

    def _record(self, key: str, request: JudgeRequest, reply: JudgeReply) -> dict[str, Any]:
        return {
            "key": key,
            "backend": reply.backend,
            "model": reply.model,
            "revision": reply.revision,
            "text": reply.text,
            "p_yes": None if reply.p_yes is None else {str(k): v for k, v in reply.p_yes.items()},
            "max_new_tokens": request.max_new_tokens,
            "text_sha256": hashlib.sha256(request.text.encode("utf-8")).hexdigest(),
            "images": list(request.image_digests),
            "time": round(time.time(), 3),
        }

    @staticmethod
    def _reply(record: Mapping[str, Any]) -> JudgeReply:
        p_yes = record.get("p_yes")
        return JudgeReply(
            text=record["text"],
            backend=record.get("backend", ""),
            model=record.get("model", ""),
            revision=record.get("revision"),
            cached=True,
            p_yes=None if p_yes is None else {int(k): float(v) for k, v in p_yes.items()},
        )

    # -- judging -----------------------------------------------------------------------------------------------
    def judge(
        self,
        requests: Sequence[JudgeRequest],
        *,
        refresh: Callable[[JudgeRequest, JudgeReply], bool] | None = None,
    ) -> list[JudgeReply]:
        refresh = refresh if refresh is not None else self.refresh
        out: list[JudgeReply | None] = [None] * len(requests)
        with self._lock:
            todo: dict[str, list[int]] = {}
            for i, request in enumerate(requests):
                key = self.key(request)
                record = self._entries.get(key)
                if record is not None and key not in todo:
                    reply = self._reply(record)
                    if refresh is None or not refresh(request, reply):
                        out[i] = reply
                        self.hits += 1
                        continue
                todo.setdefault(key, []).append(i)
            keys = list(todo)
            for chunk in chunks(keys, self.chunk_size or max(len(keys), 1)):
                batch = [requests[todo[k][0]] for k in chunk]
                replies = self.inner.judge(batch)
                if len(replies) != len(batch):
                    raise RuntimeError(f"{self.inner!r} returned {len(replies)} replies for {len(batch)} requests")
                self.misses += len(batch)
                self._append([self._record(k, r, rep) for k, r, rep in zip(chunk, batch, replies, strict=True)])
                for k, reply in zip(chunk, replies, strict=True):
                    for i in todo[k]:
                        out[i] = dataclasses.replace(reply, cached=False)
        return [r for r in out if r is not None]
