"""The compiled stud-grid core (numba): lattice parts' placement tables (:mod:`.tables`), a batch of assemblies
in flat arrays (:mod:`.state`) and the kernels that decide placements, joints, components and fidelity counts
(:mod:`.kernels`). It imports the core only (never gymnasium); the exact path (``Assembly.place``) stays the
authority, and every verdict here is tested against it."""

from brick_gym.lattice.state import LatticeBatch
from brick_gym.lattice.tables import LatticeParts, NotLattice, build_tables, is_lattice_part

__all__ = ["LatticeBatch", "LatticeParts", "NotLattice", "build_tables", "is_lattice_part"]
