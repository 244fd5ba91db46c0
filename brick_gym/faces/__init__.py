"""BrickBench where LLM people already work: an Inspect AI task (:mod:`.inspect_task`) and a verifiers
environment (:mod:`.verifiers_env`), both thin faces over the episode core of :mod:`brick_gym.llm.adapter` (one
tool session, one prompt builder, one check). Each needs its extra: ``brick-gym[inspect]``, ``brick-gym[verifiers]``.
"""
