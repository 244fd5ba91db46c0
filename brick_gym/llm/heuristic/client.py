"""``HeuristicClient``: the planner behind the :class:`~brick_gym.llm.messages.ChatClient` protocol.

Turn by turn it asks ``inventory_left`` (the setting's rules and stock), plans the build from the brief
(:func:`~brick_gym.llm.heuristic.planner.plan_build`), sends the placements in batches, then ``check`` and
``finish``: the same tool calls an LLM would make, so the adapter runs it like any model.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from brick_gym.core.rules import Inventory, Rules, setting
from brick_gym.llm.heuristic.planner import BuildPlan, plan_build
from brick_gym.llm.messages import AssistantTurn, Message, ToolCall

__all__ = ["HeuristicClient"]


def _brief_of(messages: Sequence[Message]) -> str:
    for m in messages:
        if m.role == "user":
            match = re.search(r"brief:\s*(.*?)(?:\n\s*\n|$)", m.text, re.IGNORECASE | re.DOTALL)
            return match.group(1).strip() if match else m.text
    return ""


class HeuristicClient:
    """A deterministic rule-based builder behind the :class:`~brick_gym.llm.messages.ChatClient` protocol.

    ``batch`` placements per turn (so that 400+ parts fit well inside BrickBench's 300 turns); ``check`` before
    ``finish`` unless ``check_before_finish`` is False. A new conversation (no assistant message yet) restarts.
    """

    def __init__(self, batch: int = 40, check_before_finish: bool = True) -> None:
        self.batch = batch
        self.check_before_finish = check_before_finish
        self.plan: BuildPlan | None = None
        self._queue: list[tuple[str, dict[str, Any]]] = []
        self._turn = 0
        self._stage = "start"

    def __repr__(self) -> str:
        return "HeuristicClient()"

    def _turn_of(self, calls: list[tuple[str, dict[str, Any]]], text: str) -> AssistantTurn:
        self._turn += 1
        tool_calls = [ToolCall(f"h{self._turn}_{i}", n, json.dumps(a)) for i, (n, a) in enumerate(calls)]
        return AssistantTurn(text, tool_calls, {"prompt_tokens": 0, "completion_tokens": 0}, 0.0, "tool_calls")

    def complete(self, messages: Sequence[Message], tools: Sequence[Mapping[str, Any]]) -> AssistantTurn:
        """The next batch of calls for this conversation."""
        if not any(m.role == "assistant" for m in messages):
            self.plan, self._queue, self._turn, self._stage = None, [], 0, "start"
        if self._stage == "start":
            self._stage = "plan"
            return self._turn_of([("inventory_left", {})], "Checking the setting's rules and stock.")
        if self._stage == "plan":
            info = self._inventory_info(messages)
            rules = self._rules_from(info)
            self.plan = plan_build(_brief_of(messages), rules)
            self._queue = list(self.plan.calls)
            self._stage = "build"
            what = ", ".join(self.plan.blueprints) or "nothing"
            intro = f"Plan: {what}; {self.plan.pieces} pieces on a base plate, placed by connectors."
            return self._turn_of(self._next_batch(), intro)
        if self._stage == "build":
            failed = [m for m in _last_results(messages) if m.is_error]
            if failed:
                self._queue = []
                note = f"A placement was refused ({failed[0].text[:120]}); stopping here."
            else:
                note = f"{len(self._queue)} placement(s) to go."
            if self._queue:
                return self._turn_of(self._next_batch(), note)
            self._stage = "done"
            final = [("check", {})] if self.check_before_finish else []
            return self._turn_of([*final, ("finish", {})], "Done building; checking and delivering.")
        return AssistantTurn("The model is delivered.", [], {"prompt_tokens": 0, "completion_tokens": 0}, 0.0)

    def _next_batch(self) -> list[tuple[str, dict[str, Any]]]:
        batch, self._queue = self._queue[: self.batch], self._queue[self.batch :]
        return batch

    @staticmethod
    def _inventory_info(messages: Sequence[Message]) -> dict[str, Any]:
        for m in reversed(messages):
            if m.role == "tool" and m.name == "inventory_left" and not m.is_error:
                try:  # the JSON object, then the adapter's budget line
                    data, _ = json.JSONDecoder().raw_decode(m.text)
                except json.JSONDecodeError:
                    continue
                if isinstance(data, dict):
                    return data
        return {}

    @staticmethod
    def _rules_from(info: Mapping[str, Any]) -> Rules:
        s = setting(str(info.get("setting") or "model"))
        inv = info.get("inventory_left")
        inventory = Inventory.from_mapping(inv, "inventory_left") if isinstance(inv, dict) and inv else None
        if inventory is None and s.uses_inventory:
            inventory = Inventory({}, "inventory_left")
        return Rules(s, inventory)


def _last_results(messages: Sequence[Message]) -> list[Message]:
    out: list[Message] = []
    for m in reversed(messages):
        if m.role == "tool":
            out.append(m)
        elif m.role == "assistant":
            break
    return out[::-1]
