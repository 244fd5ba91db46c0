"""The generic tool layer on a toy tool box that knows nothing of LEGO: specifications read from signatures,
calls validated against them with errors that say how to call, provider formats, and name suggestions."""

from __future__ import annotations

from typing import Annotated

import pytest

from brick_gym.llm.toolkit import (
    MAX_ARGUMENT_DEPTH,
    Arg,
    ToolResult,
    anthropic_format,
    number_text,
    openai_format,
    parse_arguments,
    spec_of,
    specs_of,
    suggest,
    tool,
    tool_error,
)


class Kitchen:
    """Two tools with every kind of argument the layer reads."""

    @tool
    def boil(
        self,
        minutes: Annotated[int, Arg("How long.", 1, 30)],
        salt: Annotated[float, Arg("Grams of salt.", 0, 50)] = 0.0,
        lid: Annotated[bool, Arg("Cover the pot.")] = False,
    ) -> ToolResult:
        """Boil water.

        Everything after the first paragraph stays out of the description."""
        return ToolResult(f"boiled {minutes} min")

    @tool(group="extra")
    def season(
        self,
        herbs: Annotated[list[float], Arg("Grams of each herb.", max_items=3)],
        note: Annotated[str | None, Arg("A note.", max_length=5)] = None,
    ) -> ToolResult:
        """Season the dish."""
        return ToolResult("seasoned")


SPECS = {s.name: s for s in specs_of(Kitchen)}


def test_specs_come_from_signatures_and_docstrings_in_definition_order() -> None:
    assert list(SPECS) == ["boil", "season"]
    boil = SPECS["boil"]
    assert (boil.description, boil.group, SPECS["season"].group) == ("Boil water.", "basic", "extra")
    schema = boil.parameters_schema()
    assert schema["required"] == ["minutes"] and schema["additionalProperties"] is False
    assert schema["properties"]["minutes"] == {
        "type": "integer",
        "description": "How long.",
        "minimum": 1,
        "maximum": 30,
    }
    assert schema["properties"]["lid"]["default"] is False
    herbs = SPECS["season"].parameters_schema()["properties"]["herbs"]
    assert (herbs["items"], herbs["maxItems"]) == ({"type": "number"}, 3)
    assert SPECS["season"].parameters_schema()["properties"]["note"]["maxLength"] == 5
    assert boil.usage() == "boil(minutes: integer, salt: number = 0.0, lid: boolean = false)"


def test_a_tool_without_annotations_or_docstring_is_refused_at_definition() -> None:
    def bare(self, minutes: int) -> ToolResult:
        """Doc."""
        return ToolResult("")

    def undocumented(self, minutes: Annotated[int, Arg("How long.")]) -> ToolResult:
        return ToolResult("")

    with pytest.raises(TypeError, match="needs Annotated"):
        spec_of(bare)
    with pytest.raises(TypeError, match="needs a docstring"):
        spec_of(undocumented)


def test_provider_formats_wrap_the_same_definition() -> None:
    definitions = [s.definition() for s in SPECS.values()]
    assert definitions[0] == {
        "name": "boil",
        "description": "Boil water.",
        "parameters": SPECS["boil"].parameters_schema(),
    }
    assert openai_format(definitions)[1] == {"type": "function", "function": definitions[1]}
    assert anthropic_format(definitions)[0] == {
        "name": "boil",
        "description": "Boil water.",
        "input_schema": definitions[0]["parameters"],
    }


def test_valid_arguments_come_back_clean() -> None:
    assert parse_arguments(SPECS["boil"], '{"minutes": 3.0}') == {"minutes": 3}
    assert parse_arguments(SPECS["boil"], {"minutes": 2, "salt": 1}) == {"minutes": 2, "salt": 1.0}
    assert parse_arguments(SPECS["season"], {"herbs": [1, 2], "note": None}) == {"herbs": [1.0, 2.0]}


@pytest.mark.parametrize(
    ("name", "arguments", "kind", "said"),
    [
        ("boil", '{"minutes": 3', "malformed_json", "not valid JSON"),
        ("boil", "[1]", "malformed_json", "must be a JSON object"),
        ("boil", {}, "missing_argument", "needs the argument 'minutes'"),
        ("boil", {"minutes": 3, "pepper": 1}, "unexpected_argument", "no argument(s) 'pepper'"),
        ("boil", {"minutes": "3"}, "wrong_type", "must be an integer, got string"),
        ("boil", {"minutes": 31}, "out_of_range", "between 1 and 30, got 31"),
        ("boil", {"minutes": 10**400}, "out_of_range", "too large to use"),
        ("season", {"herbs": [1, 2, 3, 4]}, "out_of_range", "at most 3 entries"),
        ("season", {"herbs": [], "note": "toolong"}, "out_of_range", "at most 5 characters"),
    ],
)
def test_each_problem_is_a_result_that_says_how_to_call(name: str, arguments: object, kind: str, said: str) -> None:
    result = parse_arguments(SPECS[name], arguments)
    assert isinstance(result, ToolResult) and not result.ok and result.error_kind == kind
    assert said in result.text and f"Usage: {SPECS[name].usage()}" in result.text


def test_arguments_nested_too_deep_are_refused() -> None:
    deep = "[" * (MAX_ARGUMENT_DEPTH + 1) + "]" * (MAX_ARGUMENT_DEPTH + 1)
    result = parse_arguments(SPECS["season"], '{"herbs": ' + deep + "}")
    assert isinstance(result, ToolResult) and result.error_kind == "malformed_json"


def test_suggestions_follow_the_words_given_then_spelling() -> None:
    names = ["boil", "season"]
    assert suggest("functions.Boil", names, {}) == ["boil"]
    assert suggest("add_salt", names, {"salt": ("season",)}) == ["season", "boil"]
    assert suggest("seasn", names, {}, limit=1) == ["season"]


def test_results_and_numbers_as_messages_write_them() -> None:
    refused = tool_error("wrong_type", "no", label="REFUSED", pieces=[1])
    assert (refused.text, refused.ok, refused.error_kind, refused.data) == (
        "REFUSED (wrong_type): no",
        False,
        "wrong_type",
        {"pieces": [1]},
    )
    assert [number_text(v) for v in (1.23456, 2.0, -0.0)] == ["1.235", "2", "0"]
    assert number_text(10**400) == "<an integer of about 401 digits>"  # never 400 digits in a message
