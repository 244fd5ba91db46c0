"""Reading briefs: every colour word names a BrickNet colour; colours go to the nouns they describe."""

from __future__ import annotations

from brick_gym.core.colours import colour
from brick_gym.llm.heuristic import COLOUR_WORDS, read_brief


def test_brief_lexicon() -> None:
    for name in set(COLOUR_WORDS.values()):
        colour(name)  # every target is a BrickNet colour
    b = read_brief("A red and white lighthouse on a rocky island, with two dark blue boats.")
    assert b.colours == ("red", "white", "dark blue") and b.blueprints == ("lighthouse", "boat")
    assert b.by_blueprint == {"lighthouse": ("red", "white"), "boat": ("dark blue",)}
    assert read_brief("Three grey elephants").blueprints == ("animal",)
    assert read_brief("an abstract idea").blueprints == ()
