"""One way to build an ``openai.OpenAI`` client, for the LLM agent client and the VLM judge alike."""

from __future__ import annotations

import os
from typing import Any


def openai_client(base_url: str | None, api_key: str | None, *, timeout: float, max_retries: int) -> Any:
    """An ``openai.OpenAI`` client (imported on demand); the key defaults to ``$OPENAI_API_KEY``, else ``"EMPTY"``
    (what vLLM, llama.cpp and other local servers accept)."""
    import openai

    key = api_key or os.environ.get("OPENAI_API_KEY") or "EMPTY"
    return openai.OpenAI(base_url=base_url, api_key=key, timeout=timeout, max_retries=max_retries)
