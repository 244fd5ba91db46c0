"""The seccomp filter's bytes: one 8-byte instruction per entry, every jump inside the program, and the tables
cover every refused call; refusing an unknown machine rather than running unfiltered."""

from __future__ import annotations

import struct

import pytest

from brick_gym.llm.seccomp import _TABLES, DENIED, SeccompUnsupported, filter_program


@pytest.mark.parametrize("machine", sorted(_TABLES))
def test_the_filter_is_well_formed(machine: str) -> None:
    program = filter_program(machine)
    assert len(program) % 8 == 0
    ops = [struct.unpack("=HBBI", program[i : i + 8]) for i in range(0, len(program), 8)]
    for i, (code, jt, jf, _k) in enumerate(ops):
        if code & 0x07 == 0x05:  # a jump: both targets inside the program
            assert i + 1 + max(jt, jf) < len(ops)
    assert ops[-1][0] == 0x06  # it ends with a return
    refused = {k for code, _jt, _jf, k in ops if code == 0x15}
    assert {_TABLES[machine][1][name] for name in DENIED} <= refused
    assert set(DENIED) | {"clone", "clone3"} == set(_TABLES[machine][1])


def test_an_unknown_machine_is_refused() -> None:
    with pytest.raises(SeccompUnsupported, match="no syscall table"):
        filter_program("sparc64")
