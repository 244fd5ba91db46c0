"""Reference of the project "windmill": a white tower windmill with a red cap and a cross of sails on the front."""

from brick_gym import Builder, Rules

LONG = {6: "3009", 4: "3010", 2: "3004"}  # 1xN bricks, long along x


def course(mill: Builder, y: int, width: int, odd: bool, colour: str, gaps: dict) -> None:
    """One course of a square ring of walls ``width`` studs wide with its top at ``y``: odd courses run the front
    and back rows the full width, even ones the sides, so that the corners interlock. ``gaps`` replaces the brick
    of a row by other bricks: {(x, z): [(part, colour, x)]}."""
    far = 10 * width - 10
    rows = [(0, -far, 0), (0, far, 0), (-far, 0, 90), (far, 0, 90)]
    for x, z, yaw in rows:
        n = width if (yaw == 0) == odd else width - 2
        if (x, z) in gaps:
            for part, shade, at in gaps[(x, z)]:
                mill.add(part, shade, (at, y, z))
            continue
        mill.add(LONG[n], colour, (x, y, z), yaw=yaw)


def build() -> Builder:
    """The model: a green 8x8 base; a 6x6 tower of 4 courses with a door; a red gallery plate; a 4x4 tower of 4
    courses with a window; a cap plate overhanging the front with a gable of slopes; sails hanging from it."""
    mill = Builder(Rules.for_setting("model"), name="windmill")
    mill.add("41539", "green")  # 8 x 8 studs; its top face is y = 0
    door = {
        1: {(0, -50): [("3004", "white", -40), ("3004", "dark brown", 0), ("3004", "white", 40)]},
        2: {(0, -50): [("3005", "white", -30), ("3004", "dark brown", 0), ("3005", "white", 30)]},
    }
    for c in range(1, 5):
        course(mill, -24 * c, 6, c % 2 == 1, "white", door.get(c, {}))
    mill.add("3958", "red", (0, -104, 0))  # the gallery
    window = {(0, -30): [("3004", "trans clear", 0)]}
    for c in range(1, 5):
        course(mill, -104 - 24 * c, 4, c % 2 == 1, "white", window if c == 2 else {})
    mill.add("3032", "red", (0, -208, -20), yaw=90)  # the cap plate: 4 studs along x, 6 along z, 2 over the front
    for x in (-20, 20):  # the gable: two slopes facing the front, two the back, the ridge along x
        mill.add("3039", "red", (x, -232, -10))
        mill.add("3039", "red", (x, -232, 10), yaw=180)
    mill.add("3020", "red", (0, -240, 0))  # the ridge
    for y in (-232, -256):  # the upper sail, standing on the overhang
        mill.add("3004", "reddish brown", (0, y, -70))
    for y in (-200, -176):  # hanging under the overhang down to the hub
        mill.add("3004", "reddish brown", (0, y, -70))
    mill.add("6112", "reddish brown", (0, -152, -70))  # the crossing sails
    for y in (-128, -104, -80):  # the lower sail
        mill.add("3004", "reddish brown", (0, y, -70))
    return mill
