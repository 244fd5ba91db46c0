"""Reference of the project "garden-wall": a red running-bond wall on a grey footing, with dark red end piers."""

from brick_gym import Builder, Rules

STUD, BRICK = 20, 24


def build() -> Builder:
    """The model: a 2x16 footing, four red courses, two-course piers at both ends, grey tiles on top."""
    wall = Builder(Rules.for_setting("model"), name="garden-wall")
    wall.add("4282", "dark bluish grey")  # the footing, 16 studs along x; its top face is y = 0
    for course in range(4):
        y = -BRICK * (course + 1)
        if course % 2 == 0:  # four 2x4 bricks end to end
            for x in (-120, -40, 40, 120):
                wall.add("3001", "red", (x, y, 0))
        else:  # shifted by half a brick: a 2x2 at each end
            for x in (-140, 140):
                wall.add("3003", "red", (x, y, 0))
            for x in (-80, 0, 80):
                wall.add("3001", "red", (x, y, 0))
    for x in (-140, 140):  # the piers: two more courses on the end studs, then a cap
        for course in (4, 5):
            wall.add("3003", "dark red", (x, -BRICK * (course + 1), 0))
        wall.add("3068b", "light bluish grey", (x, -BRICK * 6 - 8, 0))
    for x in (-80, 0, 80):  # the coping between the piers
        wall.add("87079", "light bluish grey", (x, -BRICK * 4 - 8, 0))
    return wall
