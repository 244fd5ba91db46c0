"""Fixtures shared by the environment tests."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

import pytest


@pytest.fixture
def random_states() -> Callable[..., Iterator[Any]]:
    """``random_states(env, seeds, steps, agent_seed)``: the unwrapped env before each step of seeded episodes
    played by a random masked agent (an episode ends early when it terminates)."""

    def states(env: Any, seeds: Iterable[int], steps: int, agent_seed: int) -> Iterator[Any]:
        from brick_gym.rl.baselines import RandomMaskedAgent

        agent = RandomMaskedAgent(agent_seed)
        for seed in seeds:
            env.reset(seed=seed)
            for _ in range(steps):
                yield env.unwrapped
                _, _, terminated, truncated, _ = env.step(agent.act(env))
                if terminated or truncated:
                    break

    return states


@pytest.fixture
def connector_order() -> Callable[..., list[Any]]:
    """``connector_order(assembly, palette, targets, stock)``: (palette slot, placement) pairs in the codec's
    order without a target, written out from its definition: each slot's in-stock palette rotated to start at its
    ``slot_rotation``, every part's (source, yaw) pairs depth by depth; the slots take turns, one pair each."""
    import bisect

    from brick_gym.core.pieces import Placement
    from brick_gym.envs.palette import mating_combos, slot_rotation

    def order(assembly: Any, palette: Any, targets: Any, stock: list[bool]) -> list[Any]:
        in_stock = [p for p, ok in enumerate(stock) if ok]
        per_slot = []
        for ref in targets:
            conn = assembly[ref.piece].part.connector(ref.group, ref.index)
            start = bisect.bisect_left(in_stock, slot_rotation(assembly, ref) % len(palette))
            rotated = in_stock[start:] + in_stock[:start]
            combos = {p: mating_combos(palette[p], conn) for p in rotated}
            deepest = max((len(c) for c in combos.values()), default=0)
            per_slot.append(
                [
                    (p, Placement(palette[p].stem, palette[p].colour, ref, palette[p].sources[s], yaw))
                    for depth in range(deepest)
                    for p in rotated
                    if depth < len(combos[p])
                    for s, yaw in [combos[p][depth]]
                ]
            )
        longest = max((len(x) for x in per_slot), default=0)
        return [items[k] for k in range(longest) for items in per_slot if k < len(items)]

    return order


@pytest.fixture
def lattice_replay() -> Callable[..., dict[str, Any]]:
    """``lattice_replay(env, exact, rng, probe)``: play one episode of a lattice one-env face (reset already)
    from the compiled sampler, mirrored on the exact ``Assembly`` ``exact``: before each step ``probe`` allowed
    actions are legal on the exact path, and each placement is made there with the same new joints. Returns the
    last step's info (the batch and the assembly hold the same joints then)."""
    import numpy as np

    def replay(env: Any, exact: Any, rng: Any, probe: int = 6) -> dict[str, Any]:
        done, info = False, {}
        while not done:
            allowed = np.flatnonzero(env.action_masks()[:-1])
            for a in rng.choice(allowed, size=min(probe, len(allowed)), replace=False):
                assert exact.evaluate(env.placement(int(a))).ok
            action = int(env.vector.sample_actions(rng)[0])
            placement = env.placement(action)
            _, _, terminated, truncated, info = env.step(action)
            done = terminated or truncated
            if placement is not None:
                outcome = exact.place(placement)
                assert outcome.ok and len(outcome.joints) == info["reward_terms"]["new_joints"]
        assert env.vector.batch.joint_count(0) == len(exact.joints) and info["pieces"] == len(exact)
        return info

    return replay
