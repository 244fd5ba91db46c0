"""The episode core under both faces: one viewer hand-off, one reset path (``options["assembly"]`` in both), one
codec interface (no face asks which codec it holds), and a clear refusal of pickles from before the core."""

from __future__ import annotations

import ast
import pickle
from pathlib import Path

import numpy as np
import pytest

import brick_gym
from brick_gym.core.assembly import Assembly
from brick_gym.core.rules import Rules
from brick_gym.envs.assembly_env import BrickAssemblyEnv
from brick_gym.envs.encodings import ENCODINGS, make_codec
from brick_gym.envs.episode import EnvConfig, EnvTask, Episode
from brick_gym.envs.palette import make_palette

PALETTE = make_palette([("3001", "red"), ("3003", "blue"), ("3005", "yellow")])
TASK = EnvTask("free", Rules.for_setting("free"), PALETTE)
CONFIG = EnvConfig(max_pieces=12, max_steps=16, max_targets=32, max_candidates=16, target_size=4)


class RecordingViewer:
    """A viewer that remembers what it was asked to draw."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, str, tuple[str, ...]]] = []

    def __call__(self, assembly, mode, *, header=(), label=None):
        self.calls.append((len(assembly), mode, tuple(header)))
        return f"drawn {len(assembly)} in {mode}"


def _faces(viewer=None, encoding: str = "candidates"):
    pytest.importorskip("pettingzoo")
    from brick_gym.envs.multi_builder import MultiBuilderEnv

    single = BrickAssemblyEnv(
        TASK, config=EnvConfig(**{**CONFIG.__dict__, "encoding": encoding}), render_mode="ansi", viewer=viewer
    )
    multi = MultiBuilderEnv(TASK, 2, config=CONFIG, encoding=encoding, render_mode="ansi", viewer=viewer)
    return single, multi


def test_both_faces_hand_render_to_the_injected_viewer() -> None:
    viewer = RecordingViewer()
    single, multi = _faces(viewer)
    single.reset(seed=0)
    multi.reset(seed=0)
    assert single.render() == "drawn 1 in ansi"
    assert multi.render() == "drawn 1 in ansi"
    assert viewer.calls[0][2][0].startswith("free: 1 pieces, step 0/16")
    assert viewer.calls[1][2][0].startswith("free: 1 pieces, turn 0/16")


def test_the_default_viewer_lists_pieces_with_who_placed_them() -> None:
    single, multi = _faces()
    single.reset(seed=0)
    multi.reset(seed=0)
    multi.step(0)
    text = multi.render()
    assert "by start" in text and "by builder_0" in text
    assert "plate 6x6" in single.render() and "by " not in single.render()


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_both_faces_continue_a_given_assembly(encoding: str) -> None:
    given = Assembly(TASK.rules)
    base = given.add("3958", "light bluish gray").piece
    given.attach("3001", "red", to=given[base].stud[0])
    single, multi = _faces(encoding=encoding)
    single.reset(seed=0, options={"assembly": given})
    multi.reset(seed=0, options={"assembly": given})
    assert len(single.assembly) == len(multi.assembly) == 2
    assert single.assembly is not given and multi.assembly is not given  # copies: the given one is untouched
    with pytest.raises(ValueError, match="non-empty"):
        multi.reset(options={"assembly": Assembly(TASK.rules)})


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_codec_sample_builds_whenever_it_can(encoding: str) -> None:
    episode = Episode(TASK, EnvConfig(**{**CONFIG.__dict__, "encoding": encoding}))
    episode.start(TASK)
    view = episode.view(episode.targets())
    rng = np.random.default_rng(0)
    for _ in range(20):
        attempt = episode.attempt(episode.codec.sample(rng, episode.codec.masks(view)), view)
        assert not attempt.stop
        if attempt.outcome is not None and attempt.outcome.ok:
            episode.assembly.undo()
    pieces = sum(len(m) for m in episode.codec.split_mask(view.mask))
    assert pieces == episode.codec.mask_size


def test_codec_sample_stops_when_nothing_is_offered() -> None:
    codec = make_codec("candidates", PALETTE, 8, 4)
    assert codec.sample(np.random.default_rng(0), np.array([0, 0, 0, 0, 1], dtype=np.int8)) == codec.stop_action


def test_an_env_pickled_before_the_episode_core_is_refused_clearly() -> None:
    env = BrickAssemblyEnv(TASK, config=CONFIG)
    env.reset(seed=0)
    state = env.__dict__.copy()
    state.pop("_format")
    old = BrickAssemblyEnv.__new__(BrickAssemblyEnv)
    with pytest.raises(ValueError, match=r"pickled by brick_gym 0\.1"):
        old.__setstate__(state)
    assert len(pickle.loads(pickle.dumps(env)).assembly) == 1


def test_no_module_outside_the_codecs_asks_which_codec_it_holds() -> None:
    package = Path(brick_gym.__file__).resolve().parent
    offenders = []
    for path in package.rglob("*.py"):
        if path.name == "codecs.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "isinstance":
                names = {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)}
                names |= {n.attr for n in ast.walk(node.args[1]) if isinstance(n, ast.Attribute)}
                if names & {"FactoredCodec", "CandidateCodec"}:
                    offenders.append(f"{path.name}:{node.lineno}")
    assert offenders == []
