"""Reference of the project "sailboat-mosaic": a 12 x 12 pixel picture of a sailing boat, laid flat on a white base."""

from brick_gym import Builder, Rules

PICTURE = (  # seen from above, the model's back (+z) at the top; one letter per stud
    "ssssssssssss",
    "sssssrsssyys",
    "sssssmsssyys",
    "sssswmssssss",
    "sssswmwsssss",
    "ssswwmwwssss",
    "sswwwmwwwsss",
    "sssssmssssss",
    "shhhhhhhhhss",
    "bbhhhhhhhbbb",
    "bbbbbbbbbbbb",
    "ddbbbbddbbbd",
)
COLOURS = {
    "s": "medium azure",
    "r": "red",
    "y": "yellow",
    "m": "reddish brown",
    "w": "white",
    "h": "dark red",
    "b": "blue",
    "d": "dark blue",
}
PLATES = {8: "3460", 6: "3666", 4: "3710", 3: "3623", 2: "3023", 1: "3024"}  # 1xN plates, long along x


def runs(row: str) -> list[tuple[int, int, str]]:
    """(first column, length, letter) of each stretch of one letter in a row, cut into plate lengths."""
    out, col = [], 0
    while col < len(row):
        end = col
        while end < len(row) and row[end] == row[col]:
            end += 1
        left = end - col
        while left:
            n = max(k for k in PLATES if k <= left)
            out.append((col, n, row[col]))
            col, left = col + n, left - n
    return out


def build() -> Builder:
    """The model: two white 6x12 plates side by side (12 x 12 studs), one plate per run of a colour on top."""
    mosaic = Builder(Rules.for_setting("model"), name="sailboat-mosaic")
    for x in (-60, 60):  # 6 studs along x, 12 along z
        mosaic.add("3028", "white", (x, 0, 0), yaw=90)
    for r, row in enumerate(PICTURE):
        z = 110 - 20 * r
        for col, n, letter in runs(row):
            x = -120 + 20 * col + 10 * n
            mosaic.add(PLATES[n], COLOURS[letter], (x, -8, z))
    return mosaic
