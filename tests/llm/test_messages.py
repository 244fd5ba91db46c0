"""The neutral chat format: JSON forms of messages and tool calls, and the client protocol."""

from __future__ import annotations

import numpy as np

from brick_gym.llm.clients import ScriptedClient
from brick_gym.llm.heuristic import HeuristicClient
from brick_gym.llm.messages import AssistantTurn, ChatClient, Message, ToolCall


def test_message_json_describes_arrays_and_keeps_paths() -> None:
    call = ToolCall("c1", "add_part", '{"part": "3001"')
    assert call.to_json() == {"id": "c1", "name": "add_part", "arguments": '{"part": "3001"'}
    assistant = Message("assistant", "placing", tool_calls=[call])
    assert assistant.to_json() == {"role": "assistant", "text": "placing", "tool_calls": [call.to_json()]}
    result = Message(
        "tool", "ERROR", [np.zeros((4, 6, 3), np.uint8), "views/v0.png"], tool_call_id="c1", name="add_part"
    )
    result.is_error = True
    assert result.to_json() == {
        "role": "tool",
        "text": "ERROR",
        "images": ["<array 4x6x3>", "views/v0.png"],
        "tool_call_id": "c1",
        "name": "add_part",
        "is_error": True,
    }
    assert Message("user").to_json() == {"role": "user", "text": ""}


def test_clients_satisfy_the_protocol() -> None:
    assert isinstance(ScriptedClient([]), ChatClient) and isinstance(HeuristicClient(), ChatClient)
    assert not isinstance(object(), ChatClient)
    turn = AssistantTurn()
    assert (turn.text, turn.tool_calls, turn.cost_usd) == ("", [], None)
    assert turn.usage == {"prompt_tokens": 0, "completion_tokens": 0}
