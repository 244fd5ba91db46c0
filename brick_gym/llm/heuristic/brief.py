"""Reading a design brief: the colour and object lexicon, and :func:`read_brief`.

A brief's colour words map to BrickNet colour names and its object nouns to blueprint names; which colour
describes which object is decided by where the words stand. This is all the heuristic understands of a brief.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["ANIMAL_COLOURS", "COLOUR_WORDS", "NOUNS", "Brief", "read_brief"]

COLOUR_WORDS: dict[str, str] = {
    "light blue": "medium azure",
    "sky blue": "medium azure",
    "dark blue": "dark blue",
    "navy": "dark blue",
    "dark red": "dark red",
    "dark green": "dark green",
    "light green": "bright green",
    "lime": "lime",
    "dark gray": "dark bluish gray",
    "dark grey": "dark bluish gray",
    "light gray": "light bluish gray",
    "light grey": "light bluish gray",
    "gray": "light bluish gray",
    "grey": "light bluish gray",
    "silver": "flat silver",
    "red": "red",
    "white": "white",
    "blue": "blue",
    "yellow": "yellow",
    "green": "green",
    "black": "black",
    "orange": "orange",
    "brown": "reddish brown",
    "wooden": "reddish brown",
    "wood": "reddish brown",
    "pink": "bright pink",
    "purple": "dark purple",
    "violet": "medium lavender",
    "lavender": "medium lavender",
    "magenta": "magenta",
    "tan": "tan",
    "beige": "tan",
    "sand": "tan",
    "cream": "bright light yellow",
    "gold": "pearl gold",
    "golden": "pearl gold",
    "teal": "dark turquoise",
    "turquoise": "dark turquoise",
    "azure": "medium azure",
    "maroon": "dark red",
    "glass": "trans clear",
    "transparent": "trans clear",
}
"""Colour words and phrases of briefs → BrickNet colour names (longest phrase wins)."""

NOUNS: dict[str, str] = {
    "lighthouse": "lighthouse",
    "locomotive": "train",
    "railway": "train",
    "tender": "train",
    "tram": "train",
    "townhouse": "townhouse",
    "bakery": "townhouse",
    "gatehouse": "gatehouse",
    "drawbridge": "gatehouse",
    "moat": "gatehouse",
    "dome": "dome",
    "habitat": "dome",
    "igloo": "dome",
    "mast": "mast",
    "antenna": "mast",
    "radio": "mast",
    "solar": "solar",
    "rover": "rover",
    "buggy": "rover",
    "pen": "pen",
    "paddock": "pen",
    "haystack": "haystack",
    "hay": "haystack",
    "tower": "tower",
    "skyscraper": "tower",
    "windmill": "tower",
    "wall": "wall",
    "fence": "wall",
    "house": "house",
    "home": "house",
    "cottage": "house",
    "cabin": "house",
    "hut": "house",
    "shop": "house",
    "barn": "house",
    "church": "house",
    "building": "house",
    "temple": "house",
    "tree": "tree",
    "forest": "tree",
    "palm": "tree",
    "car": "car",
    "truck": "car",
    "engine": "car",
    "lorry": "car",
    "bus": "car",
    "van": "car",
    "vehicle": "car",
    "tractor": "car",
    "train": "train",
    "bridge": "bridge",
    "boat": "boat",
    "ship": "boat",
    "sailboat": "boat",
    "yacht": "boat",
    "robot": "robot",
    "mech": "robot",
    "castle": "castle",
    "fortress": "castle",
    "fort": "castle",
    "palace": "castle",
    "pyramid": "pyramid",
    "rocket": "rocket",
    "spaceship": "rocket",
    "snowman": "snowman",
    "flower": "flower",
    "plant": "flower",
    "person": "figure",
    "man": "figure",
    "woman": "figure",
    "boy": "figure",
    "girl": "figure",
    "child": "figure",
    "knight": "figure",
    "king": "figure",
    "queen": "figure",
    "princess": "figure",
    "prince": "figure",
    "lord": "figure",
    "wizard": "figure",
    "pirate": "figure",
    "astronaut": "figure",
    "soldier": "figure",
    "figure": "figure",
    "statue": "figure",
    "animal": "animal",
    "dog": "animal",
    "puppy": "animal",
    "cat": "animal",
    "kitten": "animal",
    "horse": "animal",
    "pony": "animal",
    "cow": "animal",
    "pig": "animal",
    "sheep": "animal",
    "elephant": "animal",
    "giraffe": "animal",
    "lion": "animal",
    "tiger": "animal",
    "bear": "animal",
    "fox": "animal",
    "wolf": "animal",
    "rabbit": "animal",
    "bunny": "animal",
    "mouse": "animal",
    "dinosaur": "animal",
    "dragon": "animal",
    "frog": "animal",
    "turtle": "animal",
    "deer": "animal",
    "zebra": "animal",
    "panda": "animal",
}
"""Object nouns of briefs → blueprint names (plurals are matched too)."""

ANIMAL_COLOURS: dict[str, str] = {
    "dog": "tan",
    "puppy": "tan",
    "cat": "orange",
    "kitten": "orange",
    "horse": "reddish brown",
    "pony": "reddish brown",
    "cow": "white",
    "pig": "bright pink",
    "sheep": "white",
    "elephant": "light bluish gray",
    "giraffe": "yellow",
    "lion": "bright light orange",
    "tiger": "orange",
    "bear": "reddish brown",
    "fox": "orange",
    "wolf": "dark bluish gray",
    "rabbit": "white",
    "bunny": "white",
    "mouse": "light bluish gray",
    "dinosaur": "green",
    "dragon": "dark green",
    "frog": "bright green",
    "turtle": "green",
    "deer": "medium nougat",
    "zebra": "white",
    "panda": "white",
}
"""Animal nouns → the colour of their body when the brief gives none."""


NUMBER_WORDS = {"two": 2, "pair": 2, "twin": 2, "three": 3, "several": 3, "four": 4}
"""Number words that ask for more than one of the noun that follows (within two words)."""


@dataclass(frozen=True)
class Brief:
    """What the heuristic understood: blueprint names (first = main subject), colours in order, noun words, and
    the colours that describe each blueprint (a colour word goes to the next noun after it, else the last one)."""

    blueprints: tuple[str, ...]
    colours: tuple[str, ...]
    words: tuple[str, ...]
    by_blueprint: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    counts: Mapping[str, int] = field(default_factory=dict)
    """How many of a blueprint the brief asks for ("two white domes"), where it says more than one."""
    terrain: str = "grass"
    """The ground the scene stands on: ``grass``, ``moon`` (moon, lunar, crater...) or ``water``."""


def read_brief(text: str) -> Brief:
    """Colours (in order of appearance, deduplicated) and object nouns of a brief."""
    low = " " + re.sub(r"[^a-z]+", " ", text.lower()) + " "
    found: list[tuple[int, str]] = []
    taken = [False] * len(low)
    for phrase in sorted(COLOUR_WORDS, key=len, reverse=True):
        for m in re.finditer(rf"(?<= ){re.escape(phrase)}(?= )", low):
            if not any(taken[m.start() : m.end()]):
                found.append((m.start(), COLOUR_WORDS[phrase]))
                for i in range(m.start(), m.end()):
                    taken[i] = True
    found.sort()
    colours = tuple(dict.fromkeys(c for _, c in found))
    hits: list[tuple[int, str, str]] = []
    for m in re.finditer(r"[a-z]+", low):
        w = m.group(0)
        for cand in (w, w[:-1] if w.endswith("s") else None, w[:-2] if w.endswith("es") else None):
            if cand and cand in NOUNS:
                hits.append((m.start(), NOUNS[cand], cand))
                break
    names = tuple(dict.fromkeys(n for _, n, _ in hits))
    words = tuple(dict.fromkeys(w for _, _, w in hits))
    by: dict[str, list[str]] = {}
    for pos, col in found:
        owner = next((n for p, n, _ in hits if p > pos), hits[-1][1] if hits else None)
        if owner is not None and col not in by.setdefault(owner, []):
            by[owner].append(col)
    counts: dict[str, int] = {}
    tokens = re.findall(r"[a-z]+", low)
    for i, w in enumerate(tokens):
        n = NUMBER_WORDS.get(w)
        if n is None:
            continue
        for later in tokens[i + 1 : i + 3]:
            noun = next((c for c in (later, later[:-1], later[:-2]) if c in NOUNS), None)
            if noun is not None:
                counts[NOUNS[noun]] = max(counts.get(NOUNS[noun], 1), n)
                break
    terrain = "moon" if re.search(r" (moon|lunar|mars|martian|crater|cratered|planet|asteroid) ", low) else "grass"
    return Brief(names, colours, words, {k: tuple(v) for k, v in by.items()}, counts, terrain)
