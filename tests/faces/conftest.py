"""One scripted model for every face: a list of turns, each a list of (tool, arguments), played by Inspect's
``mockllm/model`` (``inspect_model``), by the loopback OpenAI-compatible server (``scripted_server``, which
``brick-gym bench run``, Inspect's ``openai-api`` provider and verifiers all talk to) and by nothing else.

The turn a request is in is the number of assistant messages it carries plus one, so the same script serves any
number of samples or rollouts at once, in any order."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pytest

from brick_gym.llm.sandbox import sandbox_problem

Turn = Sequence[tuple[str, dict[str, Any]]]


def build_script() -> list[list[tuple[str, dict[str, Any]]]]:
    """A small valid model built the way agents build: a base plate, an exact joint, a refused placement (the
    connector is taken), a bulk placement, a program in the sandbox (where it can run), a check and finish."""
    script: list[list[tuple[str, dict[str, Any]]]] = [
        [("add_part", {"part": "3958", "colour": "green"})],
        [
            ("attach_part", {"part": "3001", "colour": "red", "to": "0.stud[0]"}),
            ("attach_part", {"part": "3001", "colour": "blue", "to": "0.stud[0]"}),
        ],
        [("place_parts", {"placements": [{"part": "3003", "colour": "yellow", "to": "0.stud[34]"}]})],
    ]
    if sandbox_problem() is None:
        script.append(
            [("run_python", {"code": "r = model.attach('3005', 'white', to='0.stud[17]')\nprint(r.message)"})]
        )
    script += [[("check", {})], [("finish", {})]]
    return script


def turn_of(messages: Sequence[Any], is_assistant: Callable[[Any], bool]) -> int:
    """The 0-based turn a request is in: how many assistant messages it already carries."""
    return sum(1 for m in messages if is_assistant(m))


@pytest.fixture
def script() -> list[list[tuple[str, dict[str, Any]]]]:
    return build_script()


@pytest.fixture
def inspect_model() -> Callable[[Sequence[Turn]], Any]:
    """``inspect_model(script)`` -- Inspect's ``mockllm/model`` answering with the script's tool calls (text only
    once it runs out)."""
    pytest.importorskip("inspect_ai")
    from inspect_ai.model import ChatMessageAssistant, ModelOutput, ModelUsage, ToolCall, get_model

    def make(turns: Sequence[Turn]) -> Any:
        def policy(messages: list[Any], tools: Any, tool_choice: Any, config: Any) -> ModelOutput:
            turn = turn_of(messages, lambda m: isinstance(m, ChatMessageAssistant))
            calls = list(turns[turn]) if turn < len(turns) else []
            if calls:
                output = ModelOutput.for_tool_call("mockllm/model", calls[0][0], calls[0][1], tool_call_id=f"t{turn}_0")
                output.message.tool_calls = [
                    ToolCall(id=f"t{turn}_{i}", function=name, arguments=args) for i, (name, args) in enumerate(calls)
                ]
            else:
                output = ModelOutput.from_content("mockllm/model", "I am done.")
            # scripted usage: mockllm would otherwise count tokens with tiktoken, which downloads its tables
            output.usage = ModelUsage(input_tokens=100 + turn, output_tokens=10, total_tokens=110 + turn)
            return output

        return get_model("mockllm/model", custom_outputs=policy)

    return make


@pytest.fixture
def scripted_server(loopback, completion) -> Callable[[Sequence[Turn]], Any]:
    """``with scripted_server(script) as (url, received):`` -- the loopback chat-completions server replaying the
    script; ``url`` ends in ``/v1``."""

    @contextmanager
    def serve(turns: Sequence[Turn]) -> Iterator[tuple[str, list[dict[str, Any]]]]:
        def reply(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
            turn = turn_of(body.get("messages", []), lambda m: m.get("role") == "assistant")
            calls = list(turns[turn]) if turn < len(turns) else []
            return 200, completion(
                [(name, json.dumps(args)) for name, args in calls], turn + 1, text="" if calls else "done"
            )

        with loopback(reply) as (url, received):
            yield f"{url}/v1", received

    return serve


@pytest.fixture
def brick_check(capsys) -> Callable[..., tuple[int, dict[str, Any]]]:
    """``brick_check(path, setting, inventory=None)`` -- ``brick-gym check --json`` on a file: (exit code, report)."""
    from brick_gym.cli import main

    def check(path: Any, setting: str, inventory: Any = None) -> tuple[int, dict[str, Any]]:
        capsys.readouterr()
        argv = ["check", str(path), "--setting", setting, "--json"]
        code = main([*argv, *(["--inventory", str(inventory)] if inventory is not None else [])])
        return code, json.loads(capsys.readouterr().out)

    return check
