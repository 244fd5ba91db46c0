"""The 3D viewer's files: every import of the vendored three.js modules linked, the model script quoted safely,
and ``brick-gym view`` writing a page that carries its own model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from brick_gym.bench.report.viewer import ASSETS, THREE_MODULES, import_specifiers, model_script
from brick_gym.cli import main

TOWER = "1 4 0 0 0 1 0 0 0 1 0 0 0 1 3958.dat\n1 15 0 -24 0 1 0 0 0 1 0 0 0 1 3001.dat\n"


def test_every_import_of_the_vendored_modules_is_linked_to_an_earlier_module() -> None:
    seen: set[str] = set()
    for name, rel, imports in THREE_MODULES:
        source = (ASSETS / "vendor" / "three" / rel).read_text(encoding="utf-8")
        assert import_specifiers(source) == set(imports), name
        assert set(imports.values()) <= seen, f"{name} imports a module linked after it"
        seen.add(name)
    assert (ASSETS / "vendor" / "three" / "LICENSE").read_text().startswith("The MIT License")


def test_import_specifiers_finds_multi_line_imports_and_re_exports() -> None:
    source = (
        "import {\n  A,\n  B\n} from 'three';\nexport { C } from \"./core.js\";\nimport './side.js';\n// from 'x'\n"
    )
    assert import_specifiers(source) == {"three", "./core.js", "./side.js"}


def test_model_script_keys_are_json_quoted() -> None:
    script = model_script(b"\x00glb", key='a"];alert(1);//')
    assert 'window.BRICK_GLB["a\\"];alert(1);//"]' in script
    assert json.loads(script.split(" = ", 2)[2].rstrip(";\n")) == "AGdsYg=="


def test_view_command_writes_a_page_with_its_model(tmp_path: Path, capsys) -> None:
    model = tmp_path / "tower.ldr"
    model.write_text(TOWER)
    assert main(["view", str(model), "--out", str(tmp_path / "v")]) == 0
    page = (tmp_path / "v" / "index.html").read_text()
    assert 'data-model="model"' in page and "assets/three-modules.js" in page and "CC BY" in page
    assert (tmp_path / "v" / "model.glb").read_bytes()[:4] == b"glTF"
    assert (tmp_path / "v" / "assets" / "vendor" / "three" / "LICENSE").is_file()


@pytest.mark.parametrize("text", ["", "0 only a comment\n"])
def test_view_command_refuses_a_model_without_parts(tmp_path: Path, capsys, text: str) -> None:
    model = tmp_path / "empty.ldr"
    model.write_text(text)
    assert main(["view", str(model), "--out", str(tmp_path / "v")]) == 2
    assert "nothing to show" in capsys.readouterr().err
