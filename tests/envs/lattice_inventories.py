"""Alt-Build inventories the lattice tests play: small part sets whose tables build in seconds (set 10698's take
minutes once per machine)."""

WIDE_SET = {
    stem: {"red": 20, "white": None}
    for stem in ("91405", "3001", "3002", "3003", "3004", "3005", "3009", "3010", "3020", "3021", "3022", "3023",
                 "3024", "3034", "3460", "3666", "3710", "3795", "3039", "3040b")
}  # fmt: skip
"""An Alt-Build inventory of 20 lattice parts: 80 palette shapes, two words of a shape bitmask."""

HOLE_COLUMNS_SET = {
    "3958": {"light bluish gray": 1},  # the first plate: the start piece
    "3001": {"red": 20},
    "3003": {"white": 30},
    "3659": {"red": 10},  # an arch: holes under its two end columns only
    "85080": {"white": 10},  # a corner round brick: holes under two of its four columns
    "87081": {"blue": 4},  # a 4 × 4 round brick: under 12 of 16
    "2458": {"yellow": 10},  # a 1 × 2 brick with a pin: its box wider than its holes
    "50950": {"red": 10},  # a 1 × 3 curved slope: holes under two columns, a raised one under the third
    "6091": {"white": 10},  # a 1 × 2 curved brick: one hole on its bottom, one raised
}
"""An Alt-Build inventory whose parts' holes sit under some of their footprint's columns (the summaries' patterns),
some of them raised (curved parts: only their bottom holes can meet a stud)."""

SMALL_SET = {
    "91405": {"light bluish gray": 2},  # the start plate, and one more
    "3001": {"red": 3, "blue": 2},
    "3004": {"red": 4},
    "6232": {"white": 1},  # its axle hole takes the 1 × 2 brick's bar: of the two, the fewer pieces go
    "3039": {"white": 2},  # a slope: a contained part
    "3024": {"yellow": 10, "black": None},
    "3062b": {"red": 3},  # a round brick off the lattice
}
"""A small Alt-Build inventory (its tables take seconds; set 10698's take minutes once, then come from disk)."""
