"""VQA protocol: question graphs, prompt, reply parsing, dependency gating, soft score, task files."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brick_gym.judges.vqa import (
    REPLY_LINE,
    Question,
    QuestionGraph,
    QuestionGraphError,
    TaskFileError,
    build_vqa_prompt,
    check_tasks,
    gated_pass,
    load_tasks,
    parse_tasks,
    parse_vqa_reply,
    score_vqa,
    soft_gated,
    soft_pass,
)

DATA = Path(__file__).parents[3] / "shared" / "data" / "brickbench"


def q(key: str, *deps: str, kind: str = "entity", subtype: str = "whole") -> Question:
    return Question(key=key, question=f"Is there {key}?", kind=kind, subtype=subtype, dependencies=deps)


# --------------------------------------------------------------------------------------------------- parsing
def test_parse_accepts_separators_and_case() -> None:
    reply = "Looking at the views...\n1. Yes\n2) no\n  3 : YES, clearly\n4:no"
    assert parse_vqa_reply(reply, 4) == {1: True, 2: False, 3: True, 4: False}


def test_parse_later_line_overrides() -> None:
    reply = "1: yes\n2: yes\nOn reflection:\n2: no\n"
    assert parse_vqa_reply(reply, 2) == {1: True, 2: False}


def test_parse_missing_number_is_unparsed_not_no() -> None:
    assert parse_vqa_reply("1: yes\n3: no", 3) is None
    assert parse_vqa_reply("1: yes\n2: no", 3) is None


@pytest.mark.parametrize("garbage", ["", "I cannot tell.", "yes\nno", "1 - yes\n2 - no", "1: maybe\n2: yesno", None])
def test_parse_garbage_is_none(garbage: str | None) -> None:
    assert parse_vqa_reply(garbage, 2) is None


def test_parse_ten_is_not_one() -> None:
    lines = [f"{i}: {'yes' if i == 10 else 'no'}" for i in range(1, 11)]
    parsed = parse_vqa_reply("\n".join(lines), 10)
    assert parsed is not None
    assert parsed[10] is True and parsed[1] is False
    # "10: yes" alone must not answer question 1
    assert parse_vqa_reply("10: yes\n2: no", 2) is None


def test_parse_ignores_numbers_outside_range_and_needs_line_start() -> None:
    reply = "0: yes\n1: no\n2: yes\n7: yes\nnote 1: yes"
    assert parse_vqa_reply(reply, 2) == {1: False, 2: True}
    assert REPLY_LINE.search("answer 1: yes") is None


def test_parse_word_boundary() -> None:
    assert parse_vqa_reply("1: yesterday\n2: no", 2) is None
    assert parse_vqa_reply("1: yes.\n2: no!", 2) == {1: True, 2: False}


def test_parse_rejects_bad_n() -> None:
    with pytest.raises(ValueError):
        parse_vqa_reply("1: yes", 0)


# ---------------------------------------------------------------------------------------------------- prompt
def test_prompt_numbers_questions_and_states_format() -> None:
    graph = QuestionGraph([q("a"), q("b", "a"), q("c")])
    text = build_vqa_prompt("A red castle.", graph)
    assert "A red castle." in text
    assert "1. Is there a?" in text and "3. Is there c?" in text and "4." not in text
    assert "exactly 3 lines" in text and "<number>: <yes|no>" in text
    assert "yes or no" in text and "see" in text
    # the prompt's own question lines are not mistaken for answers
    assert parse_vqa_reply(text, 3) is None
    assert build_vqa_prompt("x", ["Is it red?"]).count("1. Is it red?") == 1
    with pytest.raises(ValueError):
        build_vqa_prompt("x", [])


# ------------------------------------------------------------------------------------------------ validation
def test_strict_graph_errors_name_keys() -> None:
    with pytest.raises(QuestionGraphError, match="'a'") as info:
        QuestionGraph([q("a"), q("a")])
    assert info.value.keys == ("a",)
    with pytest.raises(QuestionGraphError, match="'ghost'") as info:
        QuestionGraph([q("a"), q("b", "ghost")])
    assert "b" in info.value.keys
    with pytest.raises(QuestionGraphError, match="cycle") as info:
        QuestionGraph([q("root"), q("x", "y"), q("y", "z"), q("z", "x")])
    assert set(info.value.keys) == {"x", "y", "z"}
    with pytest.raises(QuestionGraphError, match="cycle"):
        QuestionGraph([q("self", "self")])
    with pytest.raises(QuestionGraphError, match="vocabulary"):
        QuestionGraph([q("a", kind="object")])
    with pytest.raises(QuestionGraphError, match="vocabulary"):
        QuestionGraph([q("a", subtype="colour")])
    with pytest.raises(QuestionGraphError):
        QuestionGraph([])
    with pytest.raises(QuestionGraphError, match="duplicate"):
        QuestionGraph([q("a"), q("a")], strict=False)


def test_lenient_graph_records_issues() -> None:
    graph = QuestionGraph([q("a", kind="object"), q("b", "ghost"), q("c", "d"), q("d", "c"), q("e", "c")], strict=False)
    assert len(graph.issues) == 3
    assert graph.broken == {"b", "c", "d", "e"}


# ---------------------------------------------------------------------------------------------------- gating
def test_gating_deep_chain() -> None:
    graph = QuestionGraph([q("a"), q("b", "a"), q("c", "b"), q("d", "c"), q("e")])
    yes = {"a": True, "b": False, "c": True, "d": True, "e": True}
    assert gated_pass(graph, yes) == {"a": True, "b": False, "c": False, "d": False, "e": True}
    # answers by number (as parsed) give the same result
    assert gated_pass(graph, {1: True, 2: False, 3: True, 4: True, 5: True}) == gated_pass(graph, yes)
    assert all(gated_pass(graph, dict.fromkeys(graph.keys, True)).values())
    score = score_vqa(graph, yes)
    assert score.gated == pytest.approx(2 / 5)
    assert score.flat == pytest.approx(4 / 5)


def test_gating_dependency_declared_later_and_diamond() -> None:
    graph = QuestionGraph([q("top", "left", "right"), q("left", "base"), q("right", "base"), q("base")])
    all_yes = dict.fromkeys(graph.keys, True)
    assert all(gated_pass(graph, all_yes).values())
    assert gated_pass(graph, {**all_yes, "right": False}) == {
        "top": False,
        "left": True,
        "right": False,
        "base": True,
    }
    assert not any(gated_pass(graph, {**all_yes, "base": False}).values())


def test_gating_lenient_cycles_and_unknown_keys_fail_dependents() -> None:
    graph = QuestionGraph(
        [q("ok"), q("x", "y"), q("y", "x"), q("after", "x"), q("lost", "ghost"), q("later", "lost"), q("fine", "ok")],
        strict=False,
    )
    passed = gated_pass(graph, dict.fromkeys(graph.keys, True))
    assert passed == {
        "ok": True,
        "x": False,
        "y": False,
        "after": False,
        "lost": False,
        "later": False,
        "fine": True,
    }
    assert score_vqa(graph, dict.fromkeys(graph.keys, True)).flat == 1.0


def test_gating_requires_every_answer() -> None:
    graph = QuestionGraph([q("a"), q("b")])
    with pytest.raises(ValueError, match="'b'"):
        gated_pass(graph, {"a": True})
    with pytest.raises(ValueError, match="unknown"):
        gated_pass(graph, {"a": True, "b": True, "c": True})
    with pytest.raises(ValueError, match="outside"):
        gated_pass(graph, {1: True, 2: True, 3: True})


def test_soft_gated_is_expected_gated_score() -> None:
    graph = QuestionGraph(
        [q("base"), q("left", "base"), q("right", "base"), q("top", "left", "right"), q("solo"), q("loop", "loop")],
        strict=False,
    )
    p = {"base": 0.9, "left": 0.7, "right": 0.4, "top": 0.8, "solo": 0.3, "loop": 0.99}
    expected = 0.0
    for bits in itertools.product([False, True], repeat=len(graph)):
        answers = dict(zip(graph.keys, bits, strict=True))
        prob = 1.0
        for k, b in answers.items():
            prob *= p[k] if b else 1 - p[k]
        expected += prob * score_vqa(graph, answers).gated
    assert soft_gated(graph, p) == pytest.approx(expected, abs=1e-12)
    assert soft_pass(graph, p)["top"] == pytest.approx(0.9 * 0.7 * 0.4 * 0.8)
    hard = {k: 1.0 if k != "right" else 0.0 for k in graph.keys}
    assert soft_gated(graph, hard) == pytest.approx(score_vqa(graph, {k: v > 0.5 for k, v in hard.items()}).gated)
    with pytest.raises(ValueError, match="probability"):
        soft_gated(graph, {**p, "solo": 1.5})


# ------------------------------------------------------------------------------------------------ task files
def sample_files() -> list[Path]:
    files = sorted(DATA.glob("sample-*-tasks.json")) if DATA.is_dir() else []
    if not files:
        pytest.skip(f"no BrickBench sample task files under {DATA}")
    return files


def test_sample_task_files_load_and_validate() -> None:
    for path in sample_files():
        tasks = load_tasks(path)
        raw = json.loads(path.read_text(encoding="utf-8"))
        assert [t.id for t in tasks] == [r["id"] for r in raw]
        for task, r in zip(tasks, raw, strict=True):
            assert task.prompt == r["prompt"]
            assert task.graph.keys == tuple(x["key"] for x in r["questions"])
            assert not task.graph.broken and not task.graph.issues
            assert 9 <= len(task.graph) <= 30
            n = len(task.graph)
            reply = "\n".join(f"{i}: yes" for i in range(1, n + 1))
            parsed = parse_vqa_reply(reply, n)
            assert parsed is not None
            assert score_vqa(task.graph, parsed).gated == 1.0
            text = build_vqa_prompt(task.prompt, task.graph)
            assert f"exactly {n} lines" in text


def task_json(**overrides: object) -> list[dict[str, object]]:
    task: dict[str, object] = {
        "id": "model-777",
        "prompt": "A red car.",
        "questions": [
            {"key": "car", "question": "Is there a car?", "kind": "entity", "subtype": "whole", "dependencies": []},
            {
                "key": "car.color",
                "question": "Is the car red?",
                "kind": "attribute",
                "subtype": "color",
                "dependencies": ["car"],
            },
        ],
    }
    task.update(overrides)
    return [task]


def test_task_file_errors_name_task_and_field(tmp_path: Path) -> None:
    assert len(parse_tasks(task_json())) == 1
    good_q = task_json()[0]["questions"]
    cases = [
        ({"id": 5}, "'id'"),
        ({"prompt": None}, "model-777.*'prompt'"),
        ({"questions": []}, "model-777.*'questions'"),
        ({"questions": [{**good_q[0], "kind": 3}]}, r"model-777.*questions\[0\]\.kind"),
        ({"questions": [{k: v for k, v in good_q[0].items() if k != "subtype"}]}, "model-777.*'subtype'"),
        ({"questions": [good_q[0], {**good_q[1], "dependencies": ["cat"]}]}, "model-777.*'cat'"),
        ({"questions": [good_q[0], {**good_q[1], "dependencies": "car"}]}, r"questions\[1\]\.dependencies"),
        ({"questions": [good_q[0], {**good_q[1], "dependencies": [1]}]}, "non-string"),
    ]
    for override, message in cases:
        with pytest.raises(TaskFileError, match=message):
            parse_tasks(task_json(**override))
    with pytest.raises(TaskFileError, match="duplicate task id"):
        parse_tasks(task_json() + task_json())
    with pytest.raises(TaskFileError, match="list"):
        parse_tasks({"id": "x"})
    # lenient loading keeps a task with an unknown dependency; that question just fails
    tasks = parse_tasks(task_json(questions=[good_q[0], {**good_q[1], "dependencies": ["cat"]}]), strict=False)
    assert tasks[0].graph.broken == {"car.color"}

    path = tmp_path / "tasks.json"
    path.write_text('[{"id": "a",\n "prompt": }]')
    with pytest.raises(TaskFileError, match="line 2"):
        load_tasks(path)
    path.write_text(json.dumps(task_json(prompt="")))
    with pytest.raises(TaskFileError, match=f"{path.name}.*model-777.*'prompt'"):
        load_tasks(path)


def test_inputs_and_images_are_read_and_images_stay_next_to_the_task_file(tmp_path: Path) -> None:
    (tmp_path / "plans").mkdir()
    (tmp_path / "plans" / "front.png").write_bytes(b"\x89PNG")
    path = tmp_path / "tasks.json"
    path.write_text(json.dumps(task_json(inputs="Footprint 8x8.", images=["plans/front.png"])))
    (task,) = load_tasks(path)
    assert task.inputs == "Footprint 8x8." and task.images == (str(tmp_path / "plans" / "front.png"),)
    entry = task.to_json()
    assert entry["inputs"] == "Footprint 8x8." and entry["images"] == list(task.images)
    assert [q["key"] for q in entry["questions"]] == ["car", "car.color"]
    assert parse_tasks([entry])[0].to_json() == entry  # the entry reads back as itself
    path.write_text(json.dumps(task_json()))
    assert load_tasks(path)[0].images == () and load_tasks(path)[0].inputs == ""
    outside = tmp_path.parent / "secret.png"
    outside.write_bytes(b"x")
    (tmp_path / "link.png").symlink_to(outside)
    cases = [
        ({"images": ["../secret.png"]}, r"images\[0\]"),
        ({"images": [str(outside)]}, r"images\[0\]"),
        ({"images": ["link.png"]}, r"images\[0\].*outside"),
        ({"images": ["plans/side.png"]}, r"images\[0\]: no file 'plans/side.png'"),
        ({"images": "plans/front.png"}, "'images'"),
        ({"images": [3]}, "'images'"),
        ({"inputs": ["a"]}, "'inputs'"),
    ]
    for override, message in cases:
        path.write_text(json.dumps(task_json(**override)))
        with pytest.raises(TaskFileError, match=f"{path.name}.*model-777.*{message}"):
            load_tasks(path)
    with pytest.raises(TaskFileError, match=r"nope\.json: cannot read task file"):
        load_tasks(tmp_path / "nope.json")


def test_tasks_given_in_code_are_checked_like_file_entries_but_may_have_no_questions() -> None:
    """A project's runner tasks carry their own keys and may have no VQA questions."""
    project = {"id": "tram-r1", "prompt": "A tram.", "setting": "free", "repeat": 1, "images": ["/abs/plan.png"]}
    (checked,) = check_tasks([project])
    assert checked == {**project, "questions": [], "inputs": ""}
    (entry,) = check_tasks(task_json(inputs="x"))
    assert entry["questions"] == task_json()[0]["questions"] and entry["inputs"] == "x" and entry["images"] == []
    for bad, message in (
        ({**project, "id": "../up"}, "task #0"),
        ({**project, "questions": "none"}, "tram-r1.*'questions'"),
        ({**project, "images": [1]}, "tram-r1.*'images'"),
        ({**project, "prompt": ""}, "tram-r1.*'prompt'"),
    ):
        with pytest.raises(TaskFileError, match=message):
            check_tasks([bad], source="suite")
    with pytest.raises(TaskFileError, match="non-empty list"):
        parse_tasks([project])  # a task file's entries need questions


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
_FIELDS = ("id", "prompt", "questions", "inputs", "images")


@settings(max_examples=150, deadline=None)
@given(
    whole=_json,
    field=st.sampled_from(_FIELDS),
    value=_json,
    question_field=st.sampled_from(("key", "question", "kind", "subtype", "dependencies")),
    question_value=_json,
)
def test_malformed_task_json_is_a_clear_value_error_never_a_crash(
    whole: object, field: str, value: object, question_field: str, question_value: object
) -> None:
    """Any JSON (a whole file, one task field, one question field replaced) loads or raises TaskFileError (a
    ValueError) naming the source; it never raises anything else."""
    good = task_json()[0]
    broken_question = {**good["questions"][0], question_field: question_value}  # type: ignore[index]
    for data in (whole, [whole], [{**good, field: value}], [{**good, "questions": [broken_question]}]):
        try:
            tasks = parse_tasks(data, source="tasks.json", strict=False)
        except TaskFileError as exc:
            assert isinstance(exc, ValueError) and str(exc).startswith("tasks.json: "), exc
        else:
            assert all(isinstance(t.id, str) and isinstance(t.inputs, str) for t in tasks)
        try:
            checked = check_tasks(data, source="tasks.json")
        except TaskFileError as exc:
            assert str(exc).startswith("tasks.json: "), exc
        else:
            assert all(isinstance(t["questions"], list) and isinstance(t["inputs"], str) for t in checked)


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=64) | _json.map(lambda v: json.dumps(v).encode()))
def test_any_task_file_bytes_load_or_name_the_file(tmp_path_factory: pytest.TempPathFactory, raw: bytes) -> None:
    path = tmp_path_factory.mktemp("tasks") / "tasks.json"
    path.write_bytes(raw)
    try:
        load_tasks(path, strict=False)
    except TaskFileError as exc:
        assert str(exc).startswith(str(path)), exc
