"""``HeuristicClient``: the planner behind the :class:`~brick_gym.llm.messages.ChatClient` protocol.

Turn by turn it asks ``inventory_left`` (the setting's rules and stock), plans the build from the brief
(:func:`~brick_gym.llm.heuristic.planner.plan_build`), places the base plate with ``add_part``, then the rest in
the way the episode's tools allow, best first: programs for ``run_python`` (:func:`placement_program`: one loop
over a few hundred placements per call, as a coding agent writes), lists for ``place_parts``, or single
``attach_part`` calls; then ``check`` and ``finish``. The same tool calls an LLM would make, so the adapter runs it
like any model.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from brick_gym.core.rules import Inventory, Rules, setting
from brick_gym.llm.heuristic.planner import BuildPlan, plan_build
from brick_gym.llm.messages import AssistantTurn, Message, ToolCall

__all__ = ["HeuristicClient", "placement_program"]

PROGRAM_BATCH = 250
"""Placements per ``run_python`` program."""
BULK_BATCH = 100
"""Placements per ``place_parts`` call."""


def placement_program(calls: Sequence[tuple[str, Mapping[str, Any]]], part: int = 1, parts: int = 1) -> str:
    """A ``run_python`` program that places ``attach_part`` calls with one loop over a table, stopping at the
    first refusal (``model.attach(part, colour, to=..., by=..., yaw=...)``, the building API's signature)."""
    rows = []
    for name, args in calls:
        if name != "attach_part":
            raise ValueError(f"a placement program takes attach_part calls, not {name}")
        row = (args["part"], args["colour"], args["to"], args.get("by"), float(args.get("yaw", 0.0)))
        rows.append(f"    {row!r},")
    table = "\n".join(rows)
    return (
        f"# Heuristic build, program {part} of {parts}: {len(rows)} placements, each an exact connector fit.\n"
        f"PLACEMENTS = [\n{table}\n]\n"
        "placed = 0\n"
        "for part, colour, to, by, yaw in PLACEMENTS:\n"
        "    out = model.attach(part, colour, to=to, by=by, yaw=yaw)\n"
        "    if not out.ok:\n"
        '        raise RuntimeError(f"{part} on {to}: {out.message}")\n'
        "    placed += 1\n"
        'print(f"placed {placed} parts")\n'
    )


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
        self._parts = 0

    def __repr__(self) -> str:
        return "HeuristicClient()"

    def provenance(self) -> dict[str, Any]:
        """What produced the replies: the built-in builder (no model, no endpoint)."""
        return {"kind": "heuristic", "model": "brick_gym heuristic", "endpoint": None}

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
            self._parts = 0
            what = ", ".join(self.plan.blueprints) or "nothing"
            intro = f"Plan: {what}; {self.plan.pieces} pieces on a base plate, placed by connectors."
            return self._turn_of(self._next_batch({t.get("name") for t in tools}), intro)
        if self._stage == "build":
            failed = [m for m in _last_results(messages) if m.is_error]
            if failed:
                self._queue = []
                note = f"A placement was refused ({failed[0].text[:120]}); stopping here."
            else:
                note = f"{len(self._queue)} placement(s) to go."
            if self._queue:
                return self._turn_of(self._next_batch({t.get("name") for t in tools}), note)
            self._stage = "done"
            final = [("check", {})] if self.check_before_finish else []
            return self._turn_of([*final, ("finish", {})], "Done building; checking and delivering.")
        return AssistantTurn("The model is delivered.", [], {"prompt_tokens": 0, "completion_tokens": 0}, 0.0)

    def _next_batch(self, tools: set[Any]) -> list[tuple[str, dict[str, Any]]]:
        """The next calls: a leading non-attach call alone (the base), else the next placements as one program,
        one list or single calls, whichever the tools allow."""
        if self._queue and self._queue[0][0] != "attach_part":
            return [self._queue.pop(0)]
        run = next((i for i, c in enumerate(self._queue) if c[0] != "attach_part"), len(self._queue))
        if "run_python" in tools:
            size = min(run, PROGRAM_BATCH)
            batch, self._queue = self._queue[:size], self._queue[size:]
            self._parts += 1
            total = self._parts + -(-len(self._queue) // PROGRAM_BATCH)
            return [("run_python", {"code": placement_program(batch, self._parts, total)})]
        if "place_parts" in tools:
            size = min(run, BULK_BATCH)
            batch, self._queue = self._queue[:size], self._queue[size:]
            return [("place_parts", {"placements": [dict(a) for _, a in batch]})]
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
