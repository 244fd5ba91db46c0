"""Bradley–Terry ELO: MM vs a scipy MLE, invariances, frozen core, bootstrap coverage, I/O errors."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest

from brick_gym.bench.elo import (
    ELO_SCALE,
    JudgmentFileError,
    bootstrap_bt,
    combine_elo,
    fit_bt,
    format_table,
    leaderboard,
    load_judgments,
    plot_leaderboard,
    tabulate,
)

NAMES = [f"sys{i}" for i in range(8)]


def simulate(rng: np.random.Generator, true: np.ndarray, n_tasks: int, games: int = 1) -> list[dict[str, str]]:
    """Every ordered pair (both presentation orders) on every task, ``games`` times; BT outcomes from ``true`` Elo."""
    n = len(true)
    pairs = np.array(list(itertools.permutations(range(n), 2)))
    first = np.tile(np.repeat(pairs[:, 0], games), n_tasks)
    second = np.tile(np.repeat(pairs[:, 1], games), n_tasks)
    task = np.repeat(np.arange(n_tasks), len(pairs) * games)
    p_first = 1.0 / (1.0 + 10.0 ** ((true[second] - true[first]) / 400.0))
    first_wins = rng.random(first.size) < p_first
    return [
        {"task": f"t{t}", "first": NAMES[a], "second": NAMES[b], "winner": NAMES[a] if w else NAMES[b]}
        for t, a, b, w in zip(task.tolist(), first.tolist(), second.tolist(), first_wins.tolist(), strict=True)
    ]


def scipy_mle(wins: np.ndarray, fixed: dict[int, float] | None = None) -> np.ndarray:
    """Maximum-likelihood log-strengths of a BT model by scipy (independent of the MM code under test)."""
    from scipy.optimize import minimize

    n = wins.shape[0]
    fixed = fixed or {}
    free = [i for i in range(n) if i not in fixed]

    def full(x: np.ndarray) -> np.ndarray:
        theta = np.zeros(n)
        theta[free] = x
        for i, v in fixed.items():
            theta[i] = v
        return theta

    def nll(x: np.ndarray) -> tuple[float, np.ndarray]:
        theta = full(x)
        diff = theta[:, None] - theta[None, :]
        # -sum_ij w_ij log sigmoid(theta_i - theta_j)
        value = float(np.sum(wins * np.logaddexp(0.0, -diff)))
        sig = 1.0 / (1.0 + np.exp(diff))  # = 1 - sigmoid(diff)
        grad = -(wins * sig).sum(axis=1) + (wins * sig).sum(axis=0)
        if not fixed:
            value += 0.5 * float(np.sum(theta)) ** 2  # pin the free scale (does not move the optimum's shape)
            grad = grad + np.sum(theta)
        return value, grad[free]

    res = minimize(nll, np.zeros(len(free)), jac=True, method="BFGS", options={"gtol": 1e-11, "maxiter": 10_000})
    return full(res.x)


def to_elo(theta: np.ndarray, core: np.ndarray) -> np.ndarray:
    return 1000.0 + ELO_SCALE * (theta - theta[core].mean())


def random_judgments(rng: np.random.Generator, n: int, n_tasks: int) -> list[dict[str, str]]:
    true = rng.normal(0.0, 200.0, size=n)
    return simulate(rng, true, n_tasks)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_mm_without_prior_matches_scipy_mle(seed: int) -> None:
    rng = np.random.default_rng(seed)
    judgments = random_judgments(rng, 5, 12)
    table = tabulate(judgments)
    ours = fit_bt(judgments, prior=False)
    ref = to_elo(scipy_mle(table.wins.sum(axis=0)), np.ones(5, dtype=bool))
    got = np.array([ours[s] for s in table.systems])
    assert np.max(np.abs(got - ref)) < 1e-3


def test_prior_is_one_virtual_tie_per_pair_that_met() -> None:
    rng = np.random.default_rng(3)
    judgments = [j for j in random_judgments(rng, 5, 4) if {j["first"], j["second"]} != {"sys0", "sys1"}]
    table = tabulate(judgments)
    w = table.wins.sum(axis=0)
    met = (w + w.T) > 0
    assert not met[0, 1]
    ref = to_elo(scipy_mle(w + 0.5 * met), np.ones(5, dtype=bool))
    ours = fit_bt(judgments, prior=True)
    assert np.max(np.abs(np.array([ours[s] for s in table.systems]) - ref)) < 1e-3
    assert np.max(np.abs(np.array(list(fit_bt(judgments, prior=False).values())) - ref)) > 0.1


def test_prior_keeps_a_sweep_finite_and_no_prior_refuses() -> None:
    judgments = [
        {"task": f"t{k}", "first": a, "second": b, "winner": "best"}
        for k in range(3)
        for a, b in (("best", "mid"), ("low", "best"))
    ] + [{"task": "t0", "first": "mid", "second": "low", "winner": "mid"}]
    judgments.append({"task": "t1", "first": "mid", "second": "low", "winner": "low"})
    elo = fit_bt(judgments)
    assert all(math.isfinite(v) for v in elo.values())
    assert elo["best"] > elo["mid"]
    with pytest.raises(ValueError, match="prior=False"):
        fit_bt(judgments, prior=False)


def test_presentation_order_changes_nothing() -> None:
    rng = np.random.default_rng(4)
    judgments = random_judgments(rng, 5, 6)
    swapped = [{**j, "first": j["second"], "second": j["first"]} for j in judgments]
    assert fit_bt(judgments) == fit_bt(swapped)
    assert fit_bt(judgments, core=["sys0", "sys1", "sys2"]) == fit_bt(swapped, core=["sys0", "sys1", "sys2"])


def test_core_mean_is_1000() -> None:
    rng = np.random.default_rng(5)
    judgments = random_judgments(rng, 6, 5)
    elo = fit_bt(judgments)
    assert np.mean(list(elo.values())) == pytest.approx(1000.0, abs=1e-9)
    core = ["sys1", "sys3", "sys4"]
    elo = fit_bt(judgments, core=core)
    assert np.mean([elo[s] for s in core]) == pytest.approx(1000.0, abs=1e-9)
    assert np.mean(list(elo.values())) != pytest.approx(1000.0, abs=1e-3)


def test_frozen_core_is_not_moved_by_new_systems() -> None:
    rng = np.random.default_rng(6)
    true = np.array([0.0, 120.0, -90.0, 300.0, -250.0])
    judgments = simulate(rng, true, 8)
    core = ["sys0", "sys1", "sys2"]
    core_only = [j for j in judgments if j["first"] in core and j["second"] in core]
    reference = fit_bt(core_only)
    with_new = fit_bt(judgments, core=core)
    for s in core:
        assert with_new[s] == pytest.approx(reference[s], abs=1e-9)
    # without freezing, the newcomers do move the old systems: the test above is not vacuous
    unfrozen = fit_bt(judgments)
    assert max(abs(unfrozen[s] - reference[s]) for s in core) > 0.01
    # the newcomers are the MLE (plus prior) given the frozen core, using their games with each other too
    table = tabulate(judgments)
    w = table.wins.sum(axis=0)
    w = w + 0.5 * ((w + w.T) > 0)
    idx = {s: i for i, s in enumerate(table.systems)}
    fixed = {idx[s]: (reference[s] - 1000.0) / ELO_SCALE for s in core}
    ref = 1000.0 + ELO_SCALE * scipy_mle(w, fixed=fixed)
    for s in ("sys3", "sys4"):
        assert with_new[s] == pytest.approx(ref[idx[s]], abs=1e-3)


def test_disconnected_systems_are_an_error() -> None:
    judgments = [
        {"task": "t", "first": "a", "second": "b", "winner": "a"},
        {"task": "t", "first": "c", "second": "d", "winner": "d"},
    ]
    with pytest.raises(ValueError, match="no chain of games"):
        fit_bt(judgments)
    with pytest.raises(ValueError, match="frozen core"):
        fit_bt(judgments, core=["a", "b"])


def test_bootstrap_interval_covers_truth_at_about_nominal_rate() -> None:
    rng = np.random.default_rng(7)
    hits = total = 0
    widths = []
    for _ in range(40):
        n = 5
        true = rng.normal(0.0, 150.0, size=n)
        true_elo = 1000.0 + true - true.mean()
        judgments = simulate(rng, true, 25)
        ci = bootstrap_bt(judgments, boot=200, seed=0)
        for i in range(n):
            lo, hi = ci[NAMES[i]]
            widths.append(hi - lo)
            hits += lo <= true_elo[i] <= hi
            total += 1
    coverage = hits / total
    assert coverage >= 0.85, coverage
    assert coverage < 1.0 or np.median(widths) < 150  # intervals are informative, not just wide


def test_bootstrap_is_seeded_and_brackets_the_point() -> None:
    rng = np.random.default_rng(8)
    judgments = random_judgments(rng, 4, 20)
    a = bootstrap_bt(judgments, boot=100, seed=3)
    assert a == bootstrap_bt(judgments, boot=100, seed=3)
    assert a != bootstrap_bt(judgments, boot=100, seed=4)
    point = fit_bt(judgments)
    for s, (lo, hi) in a.items():
        assert lo < point[s] < hi


def test_leaderboard_keys_combination_and_table(tmp_path) -> None:
    rng = np.random.default_rng(9)
    true_a = np.array([0.0, 200.0, -100.0, 50.0])
    true_d = np.array([0.0, 50.0, 20.0, -300.0])
    align, design = simulate(rng, true_a, 15), simulate(rng, true_d, 15)
    board = leaderboard(align, design, boot=100)
    keys = {f"{p}elo{s}" for p in ("align_", "design_", "") for s in ("", "_lo", "_hi")}
    assert set(board) == set(NAMES[:4])
    for row in board.values():
        assert set(row) == keys
        for p in ("align_", "design_", ""):
            assert row[f"{p}elo_lo"] <= row[f"{p}elo"] <= row[f"{p}elo_hi"]
    a, d = fit_bt(align), fit_bt(design)
    sa, sd = np.std(list(a.values()), ddof=1), np.std(list(d.values()), ddof=1)
    target = (sa + sd) / 2
    for s in board:
        assert board[s]["align_elo"] == pytest.approx(a[s], abs=1e-9)
        expected = 1000 + 0.5 * (target / sa * (a[s] - 1000) + target / sd * (d[s] - 1000))
        assert board[s]["elo"] == pytest.approx(expected, abs=1e-9)
    assert combine_elo(a, d) == pytest.approx({s: row["elo"] for s, row in board.items()})
    assert np.mean([row["elo"] for row in board.values()]) == pytest.approx(1000.0)

    table = format_table(board)
    lines = table.splitlines()
    order = [line.split()[1] for line in lines[2:]]
    assert order == sorted(board, key=lambda s: -board[s]["elo"])
    assert len(lines) == 2 + len(board)


def test_leaderboard_with_core_and_mismatched_systems() -> None:
    rng = np.random.default_rng(10)
    true = np.array([0.0, 100.0, -100.0, 30.0])
    align, design = simulate(rng, true, 6), simulate(rng, true, 6)
    board = leaderboard(align, design, core=["sys0", "sys1", "sys2"], boot=50)
    assert np.mean([board[s]["elo"] for s in ("sys0", "sys1", "sys2")]) == pytest.approx(1000.0)
    design_missing = [j for j in design if "sys3" not in (j["first"], j["second"])]
    with pytest.raises(ValueError, match="different systems"):
        leaderboard(align, design_missing, boot=10)


def test_plot_leaderboard(tmp_path) -> None:
    pytest.importorskip("matplotlib")
    rng = np.random.default_rng(11)
    true = np.array([0.0, 100.0, -100.0])
    board = leaderboard(simulate(rng, true, 5), simulate(rng, true, 5), boot=20)
    out = plot_leaderboard(board, tmp_path / "board.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_load_judgments_round_trip_and_line_errors(tmp_path) -> None:
    good = {"task": "t1", "first": "a", "second": "b", "winner": "b"}
    path = tmp_path / "j.jsonl"
    path.write_text(json.dumps(good) + "\n\n" + json.dumps({**good, "winner": "a"}) + "\n")
    assert load_judgments(path) == [good, {**good, "winner": "a"}]

    cases = {
        "{not json": "not valid JSON",
        json.dumps([1, 2]): "expected an object",
        json.dumps({k: v for k, v in good.items() if k != "task"}): "missing field 'task'",
        json.dumps({**good, "winner": "c"}): "neither first",
        json.dumps({**good, "second": "a", "winner": "a"}): "against itself",
        json.dumps({**good, "task": 3}): "non-empty string",
    }
    for bad, message in cases.items():
        path.write_text(json.dumps(good) + "\n" + json.dumps(good) + "\n" + bad + "\n")
        with pytest.raises(JudgmentFileError, match=message) as info:
            load_judgments(path)
        assert f"{path}:3:" in str(info.value)
    with pytest.raises(JudgmentFileError, match="judgment #1"):
        fit_bt([good, {**good, "winner": "zzz"}])
