"""The lean trainer's factored action head: its (column, shape, colour) steps map one to one onto the env's flat
action ids, every action it chooses is allowed (random masks of a small layout and random states of the lattice
env), an action's log-probability is the sum of its three factors' (each weighted by its options' allowed-action
counts) and the probabilities of all allowed flat actions sum to 1, equal logits make them uniform, its memo is
what :meth:`FactoredColumnPolicy.memo_for` derives, and a seed fixes its samples."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from brick_gym.envs.lattice_env import FidelityLatticeVectorEnv
from brick_gym.rl.lean import FactoredColumnPolicy
from brick_gym.rl.lean.ppo import _tensors, make_policy

COLUMNS, HEIGHT, PARTS, COLOURS = (2, 3), 2, 2, 3
ACTIONS = PARTS * 4 * COLUMNS[0] * COLUMNS[1] * COLOURS + 1


def small_policy(seed: int = 0) -> FactoredColumnPolicy:
    torch.manual_seed(seed)
    return FactoredColumnPolicy(COLUMNS, HEIGHT, PARTS, COLOURS, width=4)


def small_observations(batch: int, seed: int) -> tuple[torch.Tensor, ...]:
    gen = torch.Generator().manual_seed(seed)
    x, z = COLUMNS
    built = torch.randint(0, COLOURS + 1, (batch, x, HEIGHT, z), generator=gen)
    target = torch.randint(0, COLOURS + 1, (batch, x, HEIGHT, z), generator=gen)
    return built, target, torch.rand(batch, 4, generator=gen)


masks = st.lists(st.booleans(), min_size=ACTIONS, max_size=ACTIONS).filter(any)


def manual_log_prob(policy: FactoredColumnPolicy, obs: tuple[torch.Tensor, ...], mask: torch.Tensor, a: int) -> float:
    """log p(column) + log p(shape | column) + log p(colour | column, shape), each a softmax over the head's logits
    plus the log of how many allowed flat actions each option leads to, over the options that lead to any."""

    def log_prob(logits: torch.Tensor, counts: torch.Tensor, option: int) -> torch.Tensor:
        ok = counts > 0
        return torch.log_softmax(logits[ok] + counts[ok].float().log(), 0)[int(ok[:option].sum())]

    cells, colours = policy.cells, policy.colours
    grid = mask[0, :-1].view(policy.shapes, cells, colours).long()
    with torch.no_grad():
        h, stop, _ = policy.body(*obs)
        column_logits = torch.cat([policy.column_head(h).flatten(1)[0], stop])
        if a == policy.stop_action:
            return float(log_prob(column_logits, torch.cat([grid.sum(dim=(0, 2)), mask[0, -1:].long()]), cells))
        shape, column, colour = a // colours // cells, a // colours % cells, a % colours
        features = h.flatten(2)[0, :, column]
        colour_logits = policy.colour_head(features).view(policy.shapes, colours)[shape]
        return float(
            log_prob(column_logits, torch.cat([grid.sum(dim=(0, 2)), mask[0, -1:].long()]), column)
            + log_prob(policy.shape_head(features), grid[:, column].sum(dim=1), shape)
            + log_prob(colour_logits, grid[shape, column], colour)
        )


@settings(max_examples=60, deadline=None)
@given(flags=masks, seed=st.integers(0, 2**16))
def test_chosen_actions_are_allowed_and_score_as_their_factors(flags: list[bool], seed: int) -> None:
    policy = small_policy()
    mask = torch.tensor(flags)[None].expand(8, -1)
    obs = small_observations(8, seed)
    torch.manual_seed(seed)
    with torch.no_grad():
        action, logp, _, memo = policy.act(*obs, mask, greedy=False)
        greedy = policy.act(*obs, mask, greedy=True)[0]
        again, entropy, _ = policy.evaluate(*obs, memo, action)
    assert bool(mask[torch.arange(8), action].all()) and bool(mask[torch.arange(8), greedy].all())
    assert torch.equal(policy.join(*policy.split(action)), action)
    derived = policy.memo_for(mask, action)
    assert memo.keys() == derived.keys() and all(torch.equal(memo[k], derived[k]) for k in memo)
    assert torch.allclose(logp, again, atol=1e-5) and bool((entropy >= -1e-6).all())
    assert logp.shape == (8,) and all(v.dtype in (torch.int16, torch.uint8) for v in memo.values())
    for e in range(2):
        assert float(logp[e]) == pytest.approx(
            manual_log_prob(policy, [o[e : e + 1] for o in obs], mask, int(action[e])), abs=1e-5
        )


@settings(max_examples=40, deadline=None)
@given(flags=masks, seed=st.integers(0, 2**16))
def test_the_allowed_flat_actions_probabilities_sum_to_one(flags: list[bool], seed: int) -> None:
    policy = small_policy(seed)
    allowed = torch.tensor(flags).nonzero()[:, 0]
    mask = torch.tensor(flags)[None].expand(len(allowed), -1)
    obs = [o.expand(len(allowed), *o.shape[1:]) for o in small_observations(1, seed)]
    with torch.no_grad():
        logp, _, _ = policy.evaluate(*obs, policy.memo_for(mask, allowed), allowed)
    assert float(logp.exp().sum()) == pytest.approx(1.0, abs=1e-5)


def test_one_allowed_action_is_certain() -> None:
    policy = small_policy()
    for only in (0, 17, ACTIONS - 1):
        mask = torch.zeros(1, ACTIONS, dtype=torch.bool)
        mask[0, only] = True
        with torch.no_grad():
            action, logp, _, memo = policy.act(*small_observations(1, only), mask, greedy=False)
            _, entropy, _ = policy.evaluate(*small_observations(1, only), memo, action)
        assert int(action[0]) == only and float(logp[0]) == pytest.approx(0.0, abs=1e-6)
        assert float(entropy[0]) == pytest.approx(0.0, abs=1e-6)


def test_split_and_join_follow_the_env_action_ids() -> None:
    env = FidelityLatticeVectorEnv(1)
    policy = make_policy(env, width=4)
    assert isinstance(policy, FactoredColumnPolicy) and policy.stop_action == env.stop_action
    x, _, z = env.batch.region
    colours = len(env.batch.colours)
    part, quarter, cx, cz, colour = 3, 2, 5, 1, 6
    env_id = (((part * 4 + quarter) * x + cx) * z + cz) * colours + colour
    column, shape, col = (int(t[0]) for t in policy.split(torch.tensor([env_id])))
    assert (column, shape, col) == (cx * z + cz, part * 4 + quarter, colour)
    assert [int(t[0]) for t in policy.split(torch.tensor([env.stop_action]))] == [x * z, 0, 0]
    every = torch.arange(env.single_action_space.n)
    assert torch.equal(policy.join(*policy.split(every)), every)


def test_sampled_actions_are_allowed_along_random_episodes_of_the_lattice_env() -> None:
    env = FidelityLatticeVectorEnv(8, pool=4)
    policy = make_policy(env, width=4)
    torch.manual_seed(1)
    obs, _ = env.reset(seed=1)
    rng = np.random.default_rng(1)
    for step in range(40):
        mask = env.action_masks()
        with torch.no_grad():
            action = policy.act(*_tensors(obs, mask), greedy=step % 5 == 0)[0].numpy()
        assert mask[np.arange(8), action].all()
        # half the envs follow the policy, half the compiled random sampler: more varied states
        chosen = np.where(np.arange(8) % 2 == 0, action, env.sample_actions(rng))
        obs, *_ = env.step(chosen)


def test_a_seed_fixes_the_samples() -> None:
    mask = torch.ones(16, ACTIONS, dtype=torch.bool)

    def draw() -> torch.Tensor:
        policy = small_policy(3)
        torch.manual_seed(9)
        with torch.no_grad():
            return policy.act(*small_observations(16, 4), mask, greedy=False)[0]

    assert torch.equal(draw(), draw())


def test_equal_logits_give_every_allowed_flat_action_the_same_probability() -> None:
    """The count prior: with the head's last layers zeroed the factored policy is uniform over allowed actions."""
    policy = small_policy()
    for layer in (policy.column_head, policy.shape_head, policy.colour_head, policy.stop_value[2]):
        torch.nn.init.zeros_(layer.weight)
        torch.nn.init.zeros_(layer.bias)
    flags = torch.rand(ACTIONS, generator=torch.Generator().manual_seed(2)) < 0.3
    flags[-1] = True
    allowed = flags.nonzero()[:, 0]
    mask = flags[None].expand(len(allowed), -1)
    obs = [o.expand(len(allowed), *o.shape[1:]) for o in small_observations(1, 0)]
    with torch.no_grad():
        logp, _, _ = policy.evaluate(*obs, policy.memo_for(mask, allowed), allowed)
    assert torch.allclose(logp.exp(), torch.full_like(logp, 1 / len(allowed)), atol=1e-6)
