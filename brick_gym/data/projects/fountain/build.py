"""Reference of the project "fountain": a town fountain with an octagonal basin, a two-tier column and four lamps."""

from brick_gym import Builder, Rules

RING = [(x, z) for x in range(-70, 71, 20) for z in range(-70, 71, 20) if 70 in (abs(x), abs(z))]
CORNERS = [(x, z) for x in (-70, 70) for z in (-70, 70)]


def build() -> Builder:
    """The model: an 8x8 base, a two-course basin wall cut at the corners, water, a column, a bowl and a jet."""
    fountain = Builder(Rules.for_setting("model"), name="fountain")
    fountain.add("41539", "light bluish grey")  # 8 x 8 studs; its top face is y = 0
    wall = [cell for cell in RING if cell not in CORNERS]
    for course, shift in ((1, 0), (2, 1)):
        cells = wall[shift:] + wall[:shift]
        for k in range(0, len(cells), 2):  # 1x1 bricks in pairs around the ring: each pair a 1x2 brick
            (x0, z0), (x1, z1) = cells[k], cells[(k + 1) % len(cells)]
            if abs(x0 - x1) + abs(z0 - z1) == 20:
                fountain.add("3004", "tan", ((x0 + x1) / 2, -24 * course, (z0 + z1) / 2), yaw=90 if x0 == x1 else 0)
            else:
                for x, z in ((x0, z0), (x1, z1)):
                    fountain.add("3005", "tan", (x, -24 * course, z))
    for x in (-40, 0, 40):  # the water: trans light blue tiles around the column
        for z in (-40, 0, 40):
            if (x, z) != (0, 0):
                fountain.add("3068b", "trans light blue", (x, -8, z))
    for course in range(1, 4):  # the column
        fountain.add("3941", "sand blue", (0, -24 * course, 0))
    fountain.add("3031", "white", (0, -80, 0))  # the bowl: a 4x4 plate, a rim of plates, water inside
    for x, z, yaw, part in ((0, -30, 0, "3710"), (0, 30, 0, "3710"), (-30, 0, 90, "3023"), (30, 0, 90, "3023")):
        fountain.add(part, "white", (x, -88, z), yaw=yaw)
    fountain.add("3022", "trans light blue", (0, -88, 0))
    for y in (-112, -136):  # the jet
        fountain.add("3941", "trans clear", (0, y, 0))
    for x, z in CORNERS:  # a lamp on each corner
        for y in (-24, -48):
            fountain.add("3062b", "black", (x, y, z))
        fountain.add("3062b", "trans yellow", (x, -72, z))
        fountain.add("4589", "black", (x, -96, z))
    return fountain
