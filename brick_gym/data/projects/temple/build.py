"""Reference of the project "temple": a Greek temple on three steps, 28 columns round a walled cella, a stepped roof."""

from brick_gym import Builder, Rules

STEP, COLUMN, CELLA, ROOF = "light bluish grey", "white", "tan", "reddish brown"


def slab(temple: Builder, x_half: int, z_half: int, top: int, colour: str) -> None:
    """A solid rectangle of 2x4 bricks (4 studs along x) from x = -x_half to x_half and z = -z_half to z_half (LDU),
    their tops at ``top``; a width that is not a multiple of 4 studs ends each row with a 2x2 brick."""
    for z in range(-z_half + 20, z_half, 40):
        x = -x_half
        while x < x_half:
            if x_half - x >= 80:
                temple.add("3001", colour, (x + 40, top, z))
                x += 80
            else:
                temple.add("3003", colour, (x + 20, top, z))
                x += 40


def cella_course(temple: Builder, top: int, course: int) -> None:
    """One course of the cella's walls (1 stud thick, 12 x 24 studs outside), 1x4 bricks from the corners, the
    long walls and the short walls taking the corners in turn; the door (2 studs wide, 7 courses high, dark brown
    bricks) stands in the middle of the front wall."""
    part = "3010" if course <= 10 else "3710"  # ten courses of bricks, then one of plates
    xs, zs = range(-110, 111, 20), range(-230, 231, 20)
    fronts = list(xs) if course % 2 else list(xs)[1:-1]
    sides = list(zs)[1:-1] if course % 2 else list(zs)
    for z in (-230, 230):
        door = z == -230 and course <= 7
        cells = [x for x in fronts if not (door and abs(x) < 20)]
        if door:
            temple.add("3004", "dark brown", (0, top, z))
        for run in runs(cells):
            for i in range(0, len(run), 4):
                chunk = run[i : i + 4]
                temple.add(PARTS[part][len(chunk)], CELLA, (sum(chunk) / len(chunk), top, z))
    for x in (-110, 110):
        for i in range(0, len(sides), 4):
            chunk = sides[i : i + 4]
            temple.add(PARTS[part][len(chunk)], CELLA, (x, top, sum(chunk) / len(chunk)), yaw=90)


PARTS = {"3010": {4: "3010", 3: "3622", 2: "3004", 1: "3005"}, "3710": {4: "3710", 3: "3623", 2: "3023", 1: "3024"}}


def runs(cells: list[int]) -> list[list[int]]:
    """Consecutive stud centres (20 LDU apart) grouped."""
    out: list[list[int]] = []
    for c in cells:
        if out and c - out[-1][-1] == 20:
            out[-1].append(c)
        else:
            out.append([c])
    return out


def build() -> Builder:
    """The model: six green 16x16 plates; three solid steps; 28 columns of 2x2 round bricks; the cella; a solid
    entablature of two courses; a roof of six courses stepping in 2 studs a side, its ridge from front to back."""
    temple = Builder(Rules.for_setting("set"), name="temple")
    for x in (-160, 160):
        for z in (-320, 0, 320):
            temple.add("91405", "green", (x, 0, z))  # 32 studs along x, 48 along z; top face y = 0
    for k, (x_half, z_half) in enumerate(((280, 440), (260, 420), (240, 400))):
        slab(temple, x_half, z_half, -24 * (k + 1), STEP)
    columns = [(x, z) for x in range(-200, 201, 80) for z in (-360, 360)]
    columns += [(x, z) for x in (-200, 200) for z in range(-280, 281, 80)]
    for x, z in columns:
        for k in range(1, 11):
            temple.add("3941", COLUMN, (x, -72 - 24 * k, z))
        temple.add("3022", COLUMN, (x, -320, z))  # the capital
    for course in range(1, 12):
        cella_course(temple, -72 - 24 * min(course, 10) - 8 * (course == 11), course)
    for k in range(2):
        slab(temple, 240, 400, -344 - 24 * k, COLUMN)
    for k, x_half in enumerate(range(240, 0, -40)):
        slab(temple, x_half, 400, -392 - 24 * k, ROOF)
    return temple
