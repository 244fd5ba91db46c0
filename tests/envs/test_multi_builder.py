"""MultiBuilderEnv: PettingZoo api/seed tests, the two splits, rewards, episode end, determinism and pickling."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest

pytest.importorskip("pettingzoo")

from gymnasium.utils.env_checker import data_equivalence
from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test, seed_test

from brick_gym.core.colours import colour
from brick_gym.core.pieces import Placement
from brick_gym.core.rules import Inventory, Rules
from brick_gym.envs.episode import EnvConfig, EnvTask
from brick_gym.envs.multi_builder import MultiBuilderEnv, default_task, env, parallel_env, raw_env
from brick_gym.envs.palette import make_palette, target_slots

PALETTE = make_palette([("3001", "red"), ("3003", "blue"), ("3005", "yellow")])
CONFIG = EnvConfig(max_pieces=12, max_steps=24, max_targets=48, max_candidates=16, target_size=4)
RED, BLUE, YELLOW = colour("red").code, colour("blue").code, colour("yellow").code


def inventory_task(mapping: dict) -> EnvTask:
    """A free-setting task whose inventory also holds the 6×6 start plate (the start piece counts)."""
    inv = Inventory.from_mapping({"3958": {"light bluish gray": 1}, **mapping})
    return EnvTask("inv", Rules.for_setting("free", inv), PALETTE)


FREE_TASK = EnvTask("free", Rules.for_setting("free"), PALETTE)
STOCKED_TASK = inventory_task({"3001": {"red": 4}, "3003": {"blue": 4}, "3005": {"yellow": 4}})


def first_legal(mask: np.ndarray) -> int:
    """The first listed candidate (never STOP unless it is the only choice)."""
    legal = np.flatnonzero(mask[:-1])
    return int(legal[0]) if len(legal) else len(mask) - 1


def masked_rollout(e, rng: np.random.Generator, stop_p: float = 0.05) -> dict[str, dict]:
    """Play a whole episode with random masked actions; return each builder's info when it ended."""
    final: dict[str, dict] = {}
    for agent in e.agent_iter(10_000):
        obs, _, term, trunc, info = e.last()
        if term or trunc:
            final[agent] = info
            e.step(None)
            continue
        mask = obs["action_mask"]
        legal = np.flatnonzero(mask[:-1])
        e.step(int(rng.choice(legal)) if len(legal) and rng.random() > stop_p else len(mask) - 1)
    return final


# ----- PettingZoo's own checks -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("task", "split", "n"),
    [
        (STOCKED_TASK, "inventory", 2),
        (FREE_TASK, "inventory", 3),
        (FREE_TASK, "region", 2),
        (STOCKED_TASK, "region", 3),
    ],
)
def test_api_test(task: EnvTask, split: str, n: int) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # Dict observations: api_test's advisory warnings
        api_test(env(task, n, config=CONFIG, split=split), num_cycles=40)


@pytest.mark.parametrize("split", ["inventory", "region"])
def test_seed_test(split: str) -> None:
    seed_test(lambda: env(STOCKED_TASK, 2, config=CONFIG, split=split), num_cycles=100)


def test_default_factory_and_spaces() -> None:
    e = env()
    e.reset(seed=0)
    assert e.agents == ["builder_0", "builder_1"]
    obs = e.observe("builder_0")
    space = e.observation_space("builder_0")
    assert space.contains(obs)
    assert obs["action_mask"].dtype == np.int8
    assert e.action_space("builder_0").n == len(obs["action_mask"])
    assert e.observation_space("builder_0") is not e.observation_space("builder_1")  # seeded separately


def test_multi_builder_env_is_constructible_with_its_documented_defaults() -> None:
    """``MultiBuilderEnv()`` as the docs name it: two builders on default_task() under DEFAULT_MULTI_CONFIG."""
    e = MultiBuilderEnv()
    assert (e.n_builders, e.split, e.shared_reward, e.codec.name) == (2, "inventory", True, "candidates")
    assert e.task.name == default_task().name and e.config.max_pieces == 32
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        api_test(MultiBuilderEnv(config=CONFIG), num_cycles=40)


# ----- parallel API --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("task", "split", "n"), [(STOCKED_TASK, "inventory", 2), (FREE_TASK, "region", 3)])
def test_parallel_api_test(task: EnvTask, split: str, n: int) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # parallel_api_test warns about missing or extra keys
        parallel_api_test(parallel_env(task, n, config=CONFIG, split=split), num_cycles=40)


@pytest.mark.parametrize("split", ["inventory", "region"])
def test_parallel_seed_test(split: str) -> None:
    parallel_seed_test(lambda: parallel_env(STOCKED_TASK, 2, config=CONFIG, split=split), num_cycles=100)


def test_a_round_reads_each_action_against_what_its_builder_saw() -> None:
    """builder_0 and builder_1 both pick a brick on the same stud: builder_0 acts first and places it; builder_1's
    choice is read from its start-of-round list (not re-indexed into the new one) and refused as occupied."""
    par = parallel_env(STOCKED_TASK, 2, config=CONFIG)
    obs, _ = par.reset(seed=0)
    mine, theirs = par.aec.candidates("builder_0"), par.aec.candidates("builder_1")
    i0, i1 = next((i, j) for i, p in enumerate(mine) for j, q in enumerate(theirs) if p.target == q.target)
    assert obs["builder_0"]["action_mask"][i0] and obs["builder_1"]["action_mask"][i1]
    obs, rewards, terms, truncs, infos = par.step({"builder_0": i0, "builder_1": i1})
    assert infos["builder_0"]["invalid_reason"] is None and infos["builder_0"]["outcome"] == "placed"
    assert infos["builder_1"]["invalid_reason"].startswith(("occupied", "collision")), infos["builder_1"]
    assert len(par.aec.assembly) == 2 and set(obs) == set(rewards) == set(terms) == {"builder_0", "builder_1"}
    assert rewards["builder_0"] == rewards["builder_1"]  # shared reward: both are paid both turns
    assert par.agents == ["builder_0", "builder_1"] and not any(terms.values()) and not any(truncs.values())


def test_a_builder_that_stops_leaves_after_its_round_and_a_missing_action_is_a_penalised_no_op() -> None:
    par = parallel_env(STOCKED_TASK, 2, config=CONFIG)
    par.reset(seed=0)
    stop = par.action_space("builder_0").n - 1
    _, _, terms, _, infos = par.step({"builder_0": stop})  # builder_1 gives no action
    assert terms == {"builder_0": True, "builder_1": False} and par.agents == ["builder_1"]
    assert infos["builder_1"]["invalid_reason"].startswith("bad_action")
    _, _, terms, _, _ = par.step({"builder_1": stop})
    assert terms == {"builder_1": True} and par.agents == []
    assert par.aec.report is not None


# ----- inventory split -----------------------------------------------------------------------------------------------
def test_inventory_is_dealt_round_robin_across_slots() -> None:
    e = raw_env(inventory_task({"3001": {"red": 3}, "3003": {"blue": 2}}), 2, config=CONFIG)
    e.reset(seed=0)
    # red: b0 b1 b0, then the deal continues: blue: b1 b0; yellow is not in the inventory.
    assert e.stock_left("builder_0") == {("3001", RED): 2, ("3003", BLUE): 1, ("3005", YELLOW): 0}
    assert e.stock_left("builder_1") == {("3001", RED): 1, ("3003", BLUE): 1, ("3005", YELLOW): 0}


def test_without_inventory_each_builder_owns_alternate_slots() -> None:
    e = raw_env(FREE_TASK, 2, config=CONFIG)
    e.reset(seed=0)
    assert e.stock_left("builder_0") == {("3001", RED): None, ("3003", BLUE): 0, ("3005", YELLOW): None}
    assert e.stock_left("builder_1") == {("3001", RED): 0, ("3003", BLUE): None, ("3005", YELLOW): 0}
    assert {p.part for p in e.candidates("builder_0")} <= {"3001", "3005"}
    assert {p.part for p in e.candidates("builder_1")} == {"3003"}
    np.testing.assert_array_equal(e.observe("builder_1")["observation"]["inventory"], [0.0, 1.0, 0.0])


def test_builder_cannot_place_another_builders_stock() -> None:
    task = inventory_task({"3001": {"red": 1}, "3003": {"blue": 1}})  # builder_0: the red brick, builder_1: blue
    cand = raw_env(task, 2, config=CONFIG)
    cand.reset(seed=0)
    assert cand.candidates("builder_0") and {(p.part, p.colour) for p in cand.candidates("builder_0")} == {
        ("3001", RED)
    }
    assert cand.candidates("builder_1") and {(p.part, p.colour) for p in cand.candidates("builder_1")} == {
        ("3003", BLUE)
    }
    np.testing.assert_array_equal(cand.observe("builder_0")["observation"]["inventory"], [1.0, 0.0, 0.0])
    np.testing.assert_array_equal(cand.observe("builder_1")["observation"]["inventory"], [0.0, 1.0, 0.0])

    fact = raw_env(task, 2, config=CONFIG, encoding="factored")
    fact.reset(seed=0)
    fact.step(np.array([99, 0, 0, 0]))  # builder_0 passes with an out-of-range action (a no-op)
    assert fact.agent_selection == "builder_1"
    palette_mask = fact.mask_tuple(fact.observe("builder_1")["action_mask"])[0]
    np.testing.assert_array_equal(palette_mask, [0, 1, 0, 1])  # red hidden, blue shown, yellow absent, STOP
    target = fact.targets("builder_1")[0]
    theirs = Placement("3001", RED, target, PALETTE[0].sources[0], 0.0)
    assert fact.assembly.evaluate(theirs).ok  # the shared stock would allow it: the split is what refuses
    before = len(fact.assembly)
    fact.step(np.array([0, 0, 0, 0]))
    info = fact.infos["builder_1"]
    assert info["invalid_reason"].startswith("out_of_stock") and "builder_0" in info["invalid_reason"]
    assert info["reward_terms"]["invalid_action"] == 1.0
    assert len(fact.assembly) == before
    fact.step(np.array([0, 0, 0, 0]))  # builder_0 may place its own red brick
    assert fact.infos["builder_0"]["invalid_reason"] is None and len(fact.assembly) == before + 1


# ----- region split --------------------------------------------------------------------------------------------------
def test_region_split_targets_lie_in_each_builders_band() -> None:
    e = raw_env(FREE_TASK, 3, config=CONFIG, split="region")
    e.reset(seed=0)
    edges = e.region_edges
    assert len(edges) == 2 and edges[0] < 0 < edges[1]
    rng = np.random.default_rng(5)
    checked = 0
    for _ in e.agent_iter(40):
        obs, _, term, trunc, _ = e.last()
        if term or trunc:
            e.step(None)
            continue
        seen: list = []
        for i, a in enumerate(e.agents):
            for t in e.targets(a):
                x = float(e.assembly.connector_frame(t)[0, 3])
                band = sum(x >= edge - 1e-6 for edge in edges)
                assert band == i, f"{a} got {t} at x={x}, which is in band {band}"
            assert {p.target for p in e.candidates(a)} <= set(e.targets(a))
            seen += e.targets(a)
            checked += len(e.targets(a))
        assert sorted(seen) == sorted(target_slots(e.assembly, PALETTE, 10_000))  # a partition of the free studs
        legal = np.flatnonzero(obs["action_mask"][:-1])
        e.step(int(rng.choice(legal)) if len(legal) else len(obs["action_mask"]) - 1)
    assert checked > 0
    # naming a connector in another builder's band is refused by the split
    e.reset(seed=0)
    other = e.targets("builder_0")[0]
    assert e.refusal("builder_2", Placement("3001", RED, other, PALETTE[0].sources[0], 0.0)).startswith("region")
    assert e.refusal("builder_0", Placement("3001", RED, other, PALETTE[0].sources[0], 0.0)) is None


def test_region_observation_lists_only_own_targets() -> None:
    e = raw_env(FREE_TASK, 2, config=CONFIG, split="region")
    e.reset(seed=0)
    for a in e.agents:
        present = e.observe(a)["observation"]["targets"][:, 0]
        assert int(present.sum()) == len(e.targets(a)) > 0


# ----- rewards ---------------------------------------------------------------------------------------------------
def _scripted(shared: bool) -> tuple[list[dict[str, float]], MultiBuilderEnv]:
    e = raw_env(FREE_TASK, 2, config=EnvConfig(**{**CONFIG.__dict__, "max_steps": 4}), shared_reward=shared)
    e.reset(seed=0)
    paid = []
    for _ in range(4):
        e.step(first_legal(e.observe(e.agent_selection)["action_mask"]))
        paid.append(dict(e.rewards))
    return paid, e


def test_shared_and_individual_rewards() -> None:
    shared, es = _scripted(True)
    indiv, ei = _scripted(False)
    assert es.report is not None and es.report.valid and ei.report is not None and ei.report.valid
    assert all(es.truncations.values()) and all(ei.truncations.values())
    # turn 1: builder_0 placed a piece (+0.05)
    assert shared[0] == pytest.approx({"builder_0": 0.05, "builder_1": 0.05})
    assert indiv[0] == pytest.approx({"builder_0": 0.05, "builder_1": 0.0})
    # turn 4 (builder_1, the last one): its placement plus the terminal validity (+1.0)
    assert shared[3] == pytest.approx({"builder_0": 1.05, "builder_1": 1.05})
    assert indiv[3] == pytest.approx({"builder_0": 1.0, "builder_1": 1.05})
    for e in (es, ei):  # last()'s reward is the weighted sum of the agent's info["reward_terms"]
        weights = {t.name: w for t, w in e.reward_spec.weights}
        for a in e.agents:
            terms = e.infos[a]["reward_terms"]
            assert e._cumulative_rewards[a] == pytest.approx(sum(weights[k] * v for k, v in terms.items()))
        assert "report" in e.infos["builder_0"]


# ----- turns, STOP, bad actions, episode end ------------------------------------------------------------------------
def test_stop_removes_only_that_builder() -> None:
    e = raw_env(FREE_TASK, 2, config=CONFIG)
    e.reset(seed=0)
    e.step(e.codec.stop_action)
    assert e.terminations == {"builder_0": True, "builder_1": False}
    assert e.agent_selection == "builder_0"  # its dead step comes first
    with pytest.raises(ValueError):
        e.step(0)  # PettingZoo's convention: a dead agent only takes None
    e.step(None)
    assert e.agents == ["builder_1"] and e.agent_selection == "builder_1"
    e.step(first_legal(e.observe("builder_1")["action_mask"]))
    assert e.agent_selection == "builder_1" and len(e.assembly) == 2
    e.step(e.codec.stop_action)  # the last builder stops: the episode ends
    assert e.terminations == {"builder_1": True} and e.report is not None
    assert e.infos["builder_1"]["episode_stats"]["stopped"] == ["builder_0", "builder_1"]


@pytest.mark.parametrize("action", [999, -1, 1.5, "junk", None, np.array([1, 2]), np.array([[0.5]])])
def test_bad_actions_are_penalised_no_ops(action: object) -> None:
    e = raw_env(FREE_TASK, 2, config=CONFIG)
    e.reset(seed=0)
    e.step(action)
    info = e.infos["builder_0"]
    assert info["invalid_reason"].startswith("bad_action")
    assert info["reward_terms"]["invalid_action"] == 1.0
    assert e.rewards["builder_0"] == pytest.approx(-0.1)
    assert len(e.assembly) == 1 and e.agent_selection == "builder_1"
    assert e.observe("builder_0")["observation"]["progress"][3] == 1.0  # its last action was illegal


def test_unlisted_candidate_is_a_no_op() -> None:
    e = raw_env(inventory_task({"3001": {"red": 1}}), 2, config=CONFIG)  # builder_1's share is empty
    e.reset(seed=0)
    mask = e.observe("builder_1")["action_mask"]
    assert mask[:-1].sum() == 0 and mask[-1] == 1  # only STOP
    e.step(999)
    e.step(0)
    assert "does not exist" in e.infos["builder_1"]["invalid_reason"]
    assert len(e.assembly) == 1


def test_random_masked_episode_ends_with_a_report() -> None:
    e = env(STOCKED_TASK, 3, config=CONFIG)
    e.reset(seed=7)
    final = masked_rollout(e, np.random.default_rng(7))
    assert not e.agents
    assert set(final) == {"builder_0", "builder_1", "builder_2"}
    ended = [info for info in final.values() if "report" in info]
    assert ended, "the builders present at the end get the report"
    report = ended[0]["report"]
    assert isinstance(report["valid"], bool) and "timings_s" not in report
    stats = ended[0]["episode_stats"]
    assert stats["turns"] <= CONFIG.max_steps and stats["pieces"] == report["pieces"]
    assert sum(stats["pieces_by_builder"].values()) == stats["pieces"] - 1  # all but the start plate
    text = e.unwrapped.episode_stats()
    assert text["valid"] == report["valid"]


def test_factored_encoding_episode() -> None:
    e = raw_env(STOCKED_TASK, 2, config=CONFIG, encoding="factored", split="region")
    e.reset(seed=0)
    for a in e.possible_agents:
        e.action_space(a).seed(3)
    steps = 0
    for agent in e.agent_iter(200):
        obs, _, term, trunc, _info = e.last()
        assert e.observation_space(agent).contains(obs)
        if term or trunc:
            e.step(None)
            continue
        e.step(e.action_space(agent).sample(e.mask_tuple(obs["action_mask"])))
        steps += 1
    assert not e.agents and 0 < steps <= CONFIG.max_steps


def test_ansi_render_and_close() -> None:
    e = raw_env(FREE_TASK, 2, config=CONFIG, render_mode="ansi")
    e.reset(seed=0)
    e.step(first_legal(e.observe("builder_0")["action_mask"]))
    text = e.render()
    assert isinstance(text, str) and "builder_0" in text and "by builder_0" in text and "by start" in text
    assert e.close() is None


def test_constructor_validation() -> None:
    with pytest.raises(ValueError, match="split"):
        MultiBuilderEnv(FREE_TASK, 2, split="diagonal")
    with pytest.raises(ValueError, match="encoding"):
        MultiBuilderEnv(FREE_TASK, 2, encoding="joint")
    with pytest.raises(ValueError, match="n_builders"):
        MultiBuilderEnv(FREE_TASK, 0)
    with pytest.raises(ValueError, match="palette"):
        MultiBuilderEnv(FREE_TASK, 4)  # three palette slots cannot be dealt to four builders
    assert MultiBuilderEnv(FREE_TASK, 4, split="region").possible_agents[-1] == "builder_3"


# ----- determinism and pickling --------------------------------------------------------------------------------------
def test_same_seed_same_actions_same_observations_and_pickle_round_trip() -> None:
    def make() -> MultiBuilderEnv:
        return raw_env(default_task(), 2, config=CONFIG, split="region")

    a, b = make(), make()
    a.reset(seed=11)
    b.reset(seed=11)
    rng = np.random.default_rng(11)
    clone = None
    for turn in range(10):
        if not a.agents:
            break
        if turn == 5:
            clone = pickle.loads(pickle.dumps(a))
        if a.terminations[a.agent_selection] or a.truncations[a.agent_selection]:
            action = None
        else:
            legal = np.flatnonzero(a.observe(a.agent_selection)["action_mask"][:-1])
            action = int(rng.choice(legal)) if len(legal) else CONFIG.max_candidates
        assert a.agent_selection == b.agent_selection
        assert data_equivalence(a.observe(a.agent_selection), b.observe(b.agent_selection), exact=True)
        a.step(action)
        b.step(action)
        if clone is not None and turn >= 5:
            clone.step(action)
            assert clone.assembly == a.assembly
            assert data_equivalence(clone.infos, a.infos, exact=True)
    assert clone is not None and a.assembly == b.assembly and len(a.assembly) > 1
    wrapped = pickle.loads(pickle.dumps(env(default_task(), 2, config=CONFIG)))
    wrapped.reset(seed=0)
    assert wrapped.agents == ["builder_0", "builder_1"]


def test_the_docs_parallel_example_runs() -> None:
    """The code block of docs/reference/multi-builder.md plays a random masked episode to its end."""
    import contextlib
    import io
    from pathlib import Path

    page = Path(__file__).resolve().parents[2] / "docs" / "reference" / "multi-builder.md"
    code = page.read_text(encoding="utf-8").split("```python\n", 1)[1].split("```", 1)[0]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(page), "exec"), {})
    assert out.getvalue().strip() in ("True", "False")


# ----- the staged encoding (where, what, how): a turn is one placement ------------------------------------------------
@pytest.mark.parametrize(("task", "split"), [(STOCKED_TASK, "inventory"), (FREE_TASK, "region")])
def test_staged_api_and_seed_tests(task: EnvTask, split: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        api_test(env(task, 2, config=CONFIG, split=split, encoding="staged"), num_cycles=40)
    seed_test(lambda: env(task, 2, config=CONFIG, split=split, encoding="staged"), num_cycles=40)


def test_a_staged_builder_keeps_the_turn_until_it_places() -> None:
    e = raw_env(FREE_TASK, 2, config=CONFIG, split="region", encoding="staged")
    e.reset(seed=0)
    turns = []
    for _ in range(12):
        agent = e.agent_selection
        turns.append((agent, e._views[agent].stage))
        e.step(first_legal(e.action_masks()))
    assert turns == [(f"builder_{i}", s) for i in (0, 1, 0, 1) for s in (0, 1, 2)]
    assert len(e.assembly) == 5 and e.episode_stats()["pieces_by_builder"] == {"builder_0": 2, "builder_1": 2}


def test_an_illegal_staged_sub_step_passes_the_turn_and_keeps_the_choice() -> None:
    e = raw_env(FREE_TASK, 2, config=CONFIG, split="region", encoding="staged")
    e.reset(seed=0)
    e.step(first_legal(e.action_masks()))  # builder_0: where
    chosen = e._views["builder_0"].choice
    forbidden = int(np.flatnonzero(e.action_masks()[:-1] == 0)[0])
    e.step(forbidden)  # builder_0: an illegal what, a penalised no-op that ends its turn
    assert e.infos["builder_0"]["invalid_reason"].startswith("bad_action") and e.agent_selection == "builder_1"
    for _ in range(3):  # builder_1 places a piece on its own band
        e.step(first_legal(e.action_masks()))
    assert e.agent_selection == "builder_0" and e._views["builder_0"].choice == chosen
    assert e._views["builder_0"].stage == 1  # it resumes at its what sub-step


def test_staged_encode_placement_walks_the_three_sub_steps_for_the_selected_builder() -> None:
    e = raw_env(FREE_TASK, 2, config=CONFIG, split="region", encoding="staged")
    e.reset(seed=0)
    target = e.targets("builder_0")[0]
    placement = Placement("3003", BLUE, target, ("hole", 0), 0.0)
    assert e.encode_placement(placement, "builder_1") is None  # not on builder_1's band: it cannot name it
    for _ in range(3):
        e.step(e.encode_placement(placement))
    assert e.infos["builder_0"]["outcome"] == "placed" and e.agent_selection == "builder_1"


def test_the_parallel_api_refuses_the_staged_encoding() -> None:
    with pytest.raises(ValueError, match="staged placement is three"):
        parallel_env(FREE_TASK, 2, config=CONFIG, encoding="staged")
