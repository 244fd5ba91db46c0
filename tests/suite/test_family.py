"""Task families compare and hash by their class and parameters (the task caches key on them)."""

from __future__ import annotations

import itertools
import pickle

from brick_gym.suite.bridge import BridgeFamily
from brick_gym.suite.cantilever import CantileverFamily
from brick_gym.suite.prompts import PromptFamily
from brick_gym.suite.tasks import TaskFamily


def test_same_parameters_same_family_across_classes_never() -> None:
    pairs = [
        (TaskFamily("fidelity", {"size": "small"}), TaskFamily("fidelity", {"size": "small"})),
        (CantileverFamily({"reach": [8, 12]}), CantileverFamily({"reach": [8, 12]})),
        (BridgeFamily({"gap": [16, 24]}), BridgeFamily({"gap": [16, 24]})),
        (PromptFamily({"parts": ["3001"], "colours": [4]}), PromptFamily({"parts": ["3001"], "colours": [4]})),
    ]
    for a, b in pairs:
        assert a == b and hash(a) == hash(b) and a is not b
        assert pickle.loads(pickle.dumps(a)) == a
    assert TaskFamily("fidelity", {"size": "small"}) != TaskFamily("fidelity", {"size": "medium"})
    assert CantileverFamily({"reach": [8, 12]}) != CantileverFamily({"reach": [8, 14]})
    assert len({a for a, _ in pairs}) == 4
    assert all(a != b for (a, _), (b, _) in itertools.pairwise(pairs))
