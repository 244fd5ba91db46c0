"""Reference of the project "jetty": a timber jetty from a sandy bank over the water, with a railing and a lamp."""

from brick_gym import Builder, Rules


def build() -> Builder:
    """The model: water, a bank, three pairs of posts, two stringers, eight planks, a lamp post and a railing."""
    model = Builder(Rules.for_setting("model"), name="jetty")
    model.add("92438", "blue")  # the water: 16 studs along x, 8 along z; its top face is y = 0
    model.add("3035", "tan", (-120, -8, 0), yaw=90)  # the bank: a 4x8 plate, then two courses of bricks
    for y in (-32, -56):
        for x in (-140, -100):
            for z in (-40, 40):
                model.add("3001", "tan", (x, y, z), yaw=90)
    posts = [(x, z) for x in (-50, 10, 70) for z in (-30, 30)]
    course_1 = [model.add("3062b", "dark brown", (x, -24, z)).piece for x, z in posts]
    course_2 = [model.attach("3062b", "dark brown", to=f"{p}.open[0]", by="tube[0]").piece for p in course_1]
    for p in course_2:  # the posts' caps
        model.attach("6141", "dark brown", to=f"{p}.open[0]", by="tube[0]")
    end_post = model.add("3062b", "dark brown", (90, -24, -10)).piece  # the lamp post stands in the water
    for _ in range(3):
        end_post = model.attach("3062b", "dark brown", to=f"{end_post}.open[0]", by="tube[0]").piece
    for z in (-30, 30):  # the stringers, from the bank over the posts' caps
        model.add("4477", "dark brown", (-20, -64, z))
    # planks across the stringers, from the bank to the end
    planks = [model.add("3710", "reddish brown", (-70 + 20 * i, -72, 0), yaw=90).piece for i in range(8)]
    lamp = model.attach("3062b", "black", to=f"{end_post}.open[0]", by="tube[0]").piece
    light = model.attach("3062b", "trans yellow", to=f"{lamp}.open[0]", by="tube[0]").piece
    model.attach("4589", "black", to=f"{light}.open[0]", by="tube[0]")
    ends = [f"{planks[i]}.stud[{j}]" for i in (0, 4, 7) for j in (0, 3)]  # both ends of three planks
    rail_low = [model.attach("3005", "light bluish grey", to=end, by="hole[0]").piece for end in ends]
    rail_high = [model.attach("3005", "light bluish grey", to=f"{p}.stud[0]", by="hole[0]").piece for p in rail_low]
    for post in rail_high[:2]:  # the handrails: 1x8 plates from the first posts to the last, turned along x
        model.attach("3460", "light bluish grey", to=f"{post}.stud[0]", by="hole[0]", yaw=270)
    return model
