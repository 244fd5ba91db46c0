"""Reference of the project "cottage": a white cottage with a stepped red roof, a chimney, a path and a tree."""

from brick_gym import Builder, Rules

BRICKS = {4: "3010", 3: "3622", 2: "3004", 1: "3005"}  # 1xN bricks, long along x
WALL_X = range(-130, 11, 20)  # stud centres of the 8 x 6 walls
WALL_Z = range(-50, 51, 20)
DOOR = {(x, -50) for x in (-70, -50)}  # front wall (z = -50): the door fills courses 1-3
WINDOWS = {(-110, -50), (-90, -50), (-30, -50), (-10, -50), (-70, 50), (-50, 50)}
WINDOWS |= {(x, z) for x in (-130, 10) for z in (-10, 10)}  # and both side walls: courses 2 and 3


def wall_cells(course: int) -> list[list[tuple[int, int]]]:
    """The white cells of a course as straight runs: front and back rows run the full width on odd courses and
    the side columns on even ones, so the corners interlock; openings cut the runs."""
    openings = (DOOR if course <= 3 else set()) | (WINDOWS if course in (2, 3) else set())
    long_rows = course % 2 == 1
    xs = list(WALL_X) if long_rows else list(WALL_X)[1:-1]
    zs = list(WALL_Z)[1:-1] if long_rows else list(WALL_Z)
    lines = [[(x, z) for x in xs] for z in (WALL_Z[0], WALL_Z[-1])] + [
        [(x, z) for z in zs] for x in (WALL_X[0], WALL_X[-1])
    ]
    runs = []
    for line in lines:
        run: list[tuple[int, int]] = []
        for cell in [*line, None]:
            if cell is None or cell in openings:
                if run:
                    runs.append(run)
                run = []
            else:
                run.append(cell)
    return runs


def build() -> Builder:
    """The model: a green 8x16 base, 4 courses of walls with a door and windows, a roof of four stacked plates."""
    house = Builder(Rules.for_setting("model"), name="cottage")
    house.add("92438", "green")  # 16 studs along x, 8 along z; its top face is y = 0
    for course in range(1, 5):
        y = -24 * course
        for run in wall_cells(course):
            while run:
                n = max(k for k in BRICKS if k <= len(run) and (k < 4 or len(run) != 5))
                piece, run = run[:n], run[n:]
                (x0, z0), (x1, z1) = piece[0], piece[-1]
                house.add(BRICKS[n], "white", ((x0 + x1) / 2, y, (z0 + z1) / 2), yaw=0 if z0 == z1 else 90)
        if course <= 3:
            house.add("3004", "reddish brown", (-60, y, -50))
        if course in (2, 3):
            for x, z in ((-100, -50), (-20, -50), (-60, 50)):
                house.add("3004", "trans clear", (x, y, z))
            for x in (-130, 10):
                house.add("3004", "trans clear", (x, y, 0), yaw=90)
    roof = [("3030", (-60, 40)), ("3030", (-60, -40)), ("3036", (-60, 0)), ("3032", (-60, 0)), ("3020", (-60, 0))]
    for layer, (plate, (x, z)) in enumerate(roof):
        house.add(plate, "red", (x, -104 - 8 * max(layer - 1, 0), z))
    for course in range(3):  # the chimney stands on the second roof plate, beside the third
        house.add("3004", "dark bluish grey", (0, -136 - 24 * course, 50))
    house.add("3069b", "tan", (-60, -8, -70))  # the path to the door
    for y in (-24, -48):  # the tree: a trunk and a crown
        house.add("3062b", "reddish brown", (110, y, 10))
    for part, y in (("3031", -56), ("3003", -80), ("3022", -88)):
        house.add(part, "bright green", (100, y, 0))
    return house
