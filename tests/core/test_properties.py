"""Property tests: random placement sequences keep the state valid; undo restores exactly; pickling is exact."""

from __future__ import annotations

import pickle

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brick_gym.core.assembly import Assembly
from brick_gym.core.rules import Inventory, Rules, Setting
from brick_gym.core.validity import consistency_errors

PALETTE = ("3001", "3003", "3005", "3023", "3034", "3062b", "3700", "2780", "3040", "no-such-part")
GROUPS = ("hole", "stud", "tube", "pin", "socket", "open", "post", "axle", "bogus")

action = st.one_of(
    st.tuples(
        st.just("attach"),
        st.sampled_from(PALETTE),
        st.integers(-2, 40),  # target piece (out of range on purpose)
        st.sampled_from(GROUPS),
        st.integers(-3, 20),  # target index
        st.sampled_from(GROUPS),
        st.integers(-1, 8),  # source index
        st.sampled_from([0.0, 90.0, 180.0, 270.0, 45.0]),
        st.sampled_from(["red", "blue", "black", "nonsense"]),
    ),
    st.tuples(st.just("remove"), st.integers(-1, 40)),
    st.tuples(st.just("undo")),
)

RULES = Rules(
    Setting("tiny", 0, 12, uses_inventory=True),
    Inventory.from_mapping(
        {
            "3001": {"red": 4, "blue": None},
            "3003": {"red": 3},
            "3005": {"red": 5, "black": 2},
            "3023": {"blue": 6},
            "3034": {"red": 1},
            "3062b": {"red": 2},
            "3700": {"red": 2},
            "2780": {"black": 4},
            "3040": {"red": 2},
        }
    ),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(action, min_size=1, max_size=20))
def test_random_sequences_never_raise_and_keep_state_consistent(actions) -> None:
    a = Assembly(RULES)
    a.add("3001", "red")
    for act in actions:
        before = pickle.dumps(a)
        if act[0] == "attach":
            _, stem, piece, tgroup, tindex, sgroup, sindex, yaw, colour = act
            out = a.attach(stem, colour, to=(piece, tgroup, tindex), by=(sgroup, sindex), yaw=yaw)
        elif act[0] == "remove":
            out = a.remove(act[1])
        else:
            out = a.undo()
        if not out.ok:
            assert out.reason and out.message
            assert pickle.dumps(a) == before, f"refused {act} changed the assembly"
        assert len(a) <= 12
        for (stem, code), n in a.usage.items():
            cap = RULES.inventory.limit(stem, code)
            assert n >= 0 and (cap is None or n <= cap)
    assert consistency_errors(a) == []


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, 30), st.integers(0, 7), st.sampled_from([0.0, 90.0])), max_size=12))
def test_undo_restores_every_previous_state(steps) -> None:
    a = Assembly()
    a.add("3001", "red")
    states = [pickle.dumps(a)]
    for piece, stud, yaw in steps:
        out = a.attach("3001", "red", to=(piece, "stud", stud), by=("hole", 0), yaw=yaw)
        if out.ok:
            states.append(pickle.dumps(a))
    while len(states) > 1:
        states.pop()
        assert a.undo().ok
        restored = pickle.loads(states[-1])
        assert a == restored
    assert consistency_errors(a) == []


def test_pickle_round_trip_preserves_behaviour() -> None:
    from brick_gym.core.examples import random_assembly

    a = random_assembly(11, 60)
    b = pickle.loads(pickle.dumps(a))
    assert a == b
    for target in a.free_connectors()[:20]:
        oa = a.attach("3005", "blue", to=target)
        ob = b.attach("3005", "blue", to=target)
        assert (oa.ok, oa.reason, oa.joints) == (ob.ok, ob.reason, ob.joints)
    assert a == b
