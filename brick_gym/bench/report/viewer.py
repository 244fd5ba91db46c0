"""The interactive 3D view of a model, as files that open from disk: the vendored three.js linked at run time,
the model as GLB carried by a classic script, and ``brick-gym view``'s one-model page.

Why scripts and not modules or ``fetch``: a page opened from ``file://`` may not fetch ES modules or files in
Chromium, but it may load classic scripts. So ``assets/three-modules.js`` carries the vendored modules' sources
(unchanged files of the npm package, see ``assets/vendor/three/README.md``) and the import specifiers each one
uses; ``assets/viewer.js`` turns them into blob-URL modules; ``model.js`` beside a page carries its GLB in base64.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

from brick_gym.bench.report import html as h

__all__ = [
    "ASSETS",
    "THREE_MODULES",
    "THREE_VERSION",
    "import_specifiers",
    "model_script",
    "viewer_block",
    "write_assets",
    "write_viewer",
]

ASSETS = Path(__file__).resolve().parent / "assets"
"""The report's static files in the package: style, viewer script, vendored three.js."""

THREE_VERSION = "0.187.0"

THREE_MODULES: tuple[tuple[str, str, dict[str, str]], ...] = (
    ("three.core.js", "build/three.core.js", {}),
    ("three.module.js", "build/three.module.js", {"./three.core.js": "three.core.js"}),
    ("BufferGeometryUtils.js", "examples/jsm/utils/BufferGeometryUtils.js", {"three": "three.module.js"}),
    ("SkeletonUtils.js", "examples/jsm/utils/SkeletonUtils.js", {"three": "three.module.js"}),
    (
        "GLTFLoader.js",
        "examples/jsm/loaders/GLTFLoader.js",
        {
            "three": "three.module.js",
            "../utils/BufferGeometryUtils.js": "BufferGeometryUtils.js",
            "../utils/SkeletonUtils.js": "SkeletonUtils.js",
        },
    ),
    ("OrbitControls.js", "examples/jsm/controls/OrbitControls.js", {"three": "three.module.js"}),
)
"""(module name, file under ``assets/vendor/three``, {import specifier: module name}) in dependency order."""

_SPECIFIER = re.compile(
    r"""^\s*(?:import|export)\b[^'";]*?\bfrom\s*(['"])([^'"]+)\1|^\s*import\s*(['"])([^'"]+)\3""", re.M
)


def import_specifiers(source: str) -> set[str]:
    """The module specifiers a vendored file's ``import``/``export ... from`` statements name."""
    return {m.group(2) or m.group(4) for m in _SPECIFIER.finditer(source)}


def _three_bundle() -> str:
    modules = []
    for name, rel, imports in THREE_MODULES:
        source = (ASSETS / "vendor" / "three" / rel).read_text(encoding="utf-8")
        modules.append({"name": name, "source": source, "imports": imports})
    payload = json.dumps({"version": THREE_VERSION, "modules": modules}, ensure_ascii=True)
    head = f"// three.js {THREE_VERSION} (MIT, see vendor/three/LICENSE), unchanged sources\n"
    return f"{head}window.BRICK_THREE = {payload};\n"


def write_assets(out: str | os.PathLike[str]) -> Path:
    """Write ``out/assets/``: style sheet, viewer script, the three.js module bundle and its licence."""
    folder = Path(out) / "assets"
    (folder / "vendor" / "three").mkdir(parents=True, exist_ok=True)
    for name in ("style.css", "viewer.js"):
        shutil.copyfile(ASSETS / name, folder / name)
    for name in ("LICENSE", "README.md"):
        shutil.copyfile(ASSETS / "vendor" / "three" / name, folder / "vendor" / "three" / name)
    (folder / "three-modules.js").write_text(_three_bundle(), encoding="utf-8")
    return folder


def model_script(glb: bytes, key: str = "model") -> str:
    """A classic script that hands ``glb`` to the viewer under ``key`` (base64; ``key`` is JSON-quoted)."""
    data = base64.b64encode(glb).decode("ascii")
    return f'window.BRICK_GLB = window.BRICK_GLB || {{}};\nwindow.BRICK_GLB[{json.dumps(key)}] = "{data}";\n'


def viewer_block(key: str = "model", glb_href: str = "model.glb") -> str:
    """The HTML of one 3D view (drag to orbit, wheel to zoom, a menu of the 8 fixed views, the GLB to download)."""
    from brick_gym.render.gltf import ATTRIBUTION
    from brick_gym.render.scene import VIEW_NAMES

    options = "".join(f'<option value="{n}">{n.replace("_", " ")}</option>' for n in VIEW_NAMES)
    return (
        '<div class="viewer-wrap">'
        f'<div class="viewer" data-model="{h.text(key, 100)}"></div>'
        f'<p class="viewer-bar">Drag to orbit, right-drag to pan, wheel to zoom. View: <select class="viewer-views">'
        f"{options}</select> · {h.link(glb_href, 'model.glb')}</p>"
        f'<p class="attribution">{h.text(ATTRIBUTION)}</p></div>'
    )


def write_viewer(pieces: Any, out: str | os.PathLike[str], *, title: str = "model") -> Path:
    """``brick-gym view``: ``out/index.html`` with the 3D view of ``pieces``, ``out/model.glb``, ``out/model.js``
    and ``out/assets/``. Returns the page's path."""
    from brick_gym.render.gltf import glb_bytes

    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    glb = glb_bytes(pieces, name=title)
    (folder / "model.glb").write_bytes(glb)
    (folder / "model.js").write_text(model_script(glb), encoding="utf-8")
    write_assets(folder)
    body = viewer_block()
    page = h.page(title, body, root=".", scripts=("assets/three-modules.js", "model.js", "assets/viewer.js"))
    (folder / "index.html").write_text(page, encoding="utf-8")
    return folder / "index.html"
