"""The project suite: build from plans, layers, one picture or a broken program, scored against a hidden reference.

:mod:`.suite` reads the projects; :mod:`.prepare` writes each project's inputs (plans with rulers, layer plans,
pixel plans, a perspective picture, the broken program); :mod:`.scoring` scores a model against its reference;
:mod:`.running` runs agents on the suite through the benchmark runner; :mod:`.cli` is ``brick-gym projects``.
"""
