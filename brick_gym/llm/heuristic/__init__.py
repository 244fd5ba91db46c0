"""``HeuristicClient``: a built-in, rule-based builder that speaks the same tool-call protocol as an LLM.

It is the baseline every LLM run can be compared with, and a way to exercise the whole adapter without a model.
From the brief it reads colour words (a small lexicon mapped to BrickNet colour names) and object nouns (tower,
lighthouse, wall, house, tree, car, bridge, boat, robot, animals, castle, pyramid, rocket, snowman, flower...).
Each noun has a blueprint: stud-grid layers of cells with colours and a part kind (bricks, plates, slopes, round
bricks...). A tiler covers each layer with the largest parts that fit, each placed by an exact connector fit onto
a stud of the layer below (``attach_part``), after a base plate placed with ``add_part``.

Turn by turn it calls ``inventory_left`` (to learn the setting's part rule and, for alt-build, the stock), then
the placements in batches, then ``check`` and ``finish``. Every placement is first tried on a private copy of
the rules (same :class:`~brick_gym.core.assembly.Assembly` checks: collisions, stock, part limit), so only placements
that succeed are sent and the delivered model is valid by construction: one rigid component on a flat base.
Settings: ``model`` builds at scale 1 on a 16x16 baseplate (well under 400 parts), ``set`` at scale 2 on a
32x32 baseplate (the subjects at scales up to 5 until they make half of the model) and tops the scene up
with trees and flowers to at least 400 parts, ``alt-build`` builds on the
largest plate in the inventory and substitutes the nearest available colour (then smaller parts) when the
stock runs out. Deterministic: the same brief and setting always give the same calls.

The package, bottom up: :mod:`~brick_gym.llm.heuristic.brief` (lexicon, reading a brief),
:mod:`~brick_gym.llm.heuristic.shapes` (parts on the stud grid), :mod:`~brick_gym.llm.heuristic.blueprints`
(layers per subject, palettes), :mod:`~brick_gym.llm.heuristic.planner` (tiling the layers into verified calls)
and :mod:`~brick_gym.llm.heuristic.client` (the turn-by-turn client).
"""

from __future__ import annotations

from brick_gym.llm.heuristic.brief import COLOUR_WORDS, NOUNS, Brief, read_brief
from brick_gym.llm.heuristic.client import HeuristicClient
from brick_gym.llm.heuristic.planner import BuildPlan, plan_build

__all__ = ["COLOUR_WORDS", "NOUNS", "Brief", "BuildPlan", "HeuristicClient", "plan_build", "read_brief"]
