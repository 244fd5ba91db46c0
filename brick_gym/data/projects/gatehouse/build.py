"""Reference of the project "gatehouse": a castle gate between two square towers, with battlements and side walls."""

from brick_gym import Builder, Rules

STONE, DARK = "light bluish grey", "dark bluish grey"


def lay(castle: Builder, cells: list[tuple[int, int]], y: int, colour: str, along_x: bool) -> None:
    """Bricks over a straight line of stud cells (x, z) with their tops at ``y``: 1x2 bricks, and a 1x1 brick
    where a single cell is left."""
    i = 0
    while i < len(cells):
        pair = cells[i : i + 2]
        (x0, z0), (x1, z1) = pair[0], pair[-1]
        part = "3004" if len(pair) == 2 else "3005"
        castle.add(part, colour, ((x0 + x1) / 2, y, (z0 + z1) / 2), yaw=0 if along_x else 90)
        i += len(pair)


def tower_course(castle: Builder, cx: int, cz: int, y: int, course: int) -> None:
    """One course of a 6x6 tower ring centred at (cx, cz): the front and back rows take the corners on odd
    courses, the sides on even ones; rows start half a brick later every other time, as masonry does."""
    odd = course % 2 == 1
    xs = [cx + d for d in range(-50, 51, 20)]
    zs = [cz + d for d in range(-50, 51, 20)]
    rows = xs if odd else xs[1:-1]
    cols = zs[1:-1] if odd else zs
    for z in (zs[0], zs[-1]):
        lay(castle, [(x, z) for x in rows], y, STONE, True)
    for x in (xs[0], xs[-1]):
        lay(castle, [(x, z) for z in cols], y, STONE, False)


def build() -> Builder:
    """The model: two green 16x16 plates; a front wall 2 studs thick and 6 courses high with a gate 4 studs wide and
    4 courses high; two 6x6 towers of 12 courses; side walls going back; battlements; flags."""
    castle = Builder(Rules.for_setting("set"), name="gatehouse")
    for x in (-160, 160):
        castle.add("91405", "green", (x, 0, 0))  # the ground: 32 studs along x, 16 along z; top face y = 0
    wall_x = [x for x in range(-170, 171, 20)]  # between the towers (which stand at x = +-240)
    for course in range(1, 7):
        y = -24 * course
        for z in (-110, -90):
            cells = [(x, z) for x in wall_x if course > 4 or abs(x) > 40]
            if course % 2 == 0 and len(cells) > 1:  # running bond: this course starts with a single brick
                castle.add("3005", STONE, (cells[0][0], y, z))
                cells = cells[1:]
            runs: list[list[tuple[int, int]]] = [[]]
            for cell in cells:
                if runs[-1] and cell[0] - runs[-1][-1][0] > 20:
                    runs.append([])
                runs[-1].append(cell)
            for run in runs:
                lay(castle, run, y, STONE, True)
    for cx in (-240, 240):
        for course in range(1, 13):
            tower_course(castle, cx, -100, -24 * course, course)
        castle.add("3958", DARK, (cx, -296, -100))  # the tower roof, with merlons on every other stud of its rim
        for x in range(cx - 50, cx + 51, 40):
            for z in (-150, -50):
                castle.add("3005", DARK, (x, -320, z))
        for z in (-110, -70):
            for x in (cx - 50, cx + 50):
                castle.add("3005", DARK, (x, -320, z))
        for y in (-320, -344, -368):  # the flag poles, in the middle of each tower
            castle.add("3005", "reddish brown", (cx + 10, y, -90))
        castle.add("3004", "red", (cx + 10, -392, -80), yaw=90)
    for x in range(-170, 171, 40):  # merlons along the front of the wall walk
        castle.add("3005", DARK, (x, -168, -110))
    for cx in (-280, 280):  # side walls from the towers to the back of the ground
        for course in range(1, 5):
            for x in (cx - 10, cx + 10):
                cells = [(x, z) for z in range(-30, 151, 20)]
                if (course + (x > cx)) % 2 == 0:
                    castle.add("3005", STONE, (x, -24 * course, cells[0][1]))
                    cells = cells[1:]
                lay(castle, cells, -24 * course, STONE, False)
    return castle
