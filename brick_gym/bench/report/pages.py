"""The report's pages: ``index.html`` (leaderboard, notes, a task × system matrix) and one page per task and
system (views, 3D view, verdict, VQA, pairwise tiles and votes, episode numbers, transcript).

Images from the folders are never linked in place: each is opened as a regular file, bounded, decoded, and written
again as PNG inside the report, so the report holds only what it shows and opens anywhere.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path
from typing import Any

from brick_gym.bench.report import html as h
from brick_gym.bench.report.collect import Entry, ReportData, SystemRow, safe_file
from brick_gym.bench.report.transcript import transcript_html
from brick_gym.io.files import open_regular

__all__ = ["MAX_IMAGE_BYTES", "Site"]

MAX_IMAGE_BYTES = 32 * 1024 * 1024
"""Largest image file copied into a report."""

MAX_IMAGE_PIXELS = 4096 * 4096 * 4
"""Largest image (pixels) decoded; a pairwise tile at 1024 has 4096 × 1024."""

_VIEWER_SCRIPTS = ("three-modules.js", "viewer.js")


class Site:
    """Writes one report into ``out`` from collected :class:`ReportData`."""

    def __init__(self, data: ReportData, out: Path, *, viewer: bool = True) -> None:
        self.data = data
        self.out = out
        self.viewer = viewer

    # -- files -----------------------------------------------------------------------------------------------

    def image(self, src: Path | None, rel: str, max_side: int | None = None) -> str | None:
        """Copy an image into the report at ``rel`` (checked, decoded, re-encoded as PNG); ``rel`` or None."""
        if src is None:
            return None
        from PIL import Image

        try:
            with open_regular(src) as fh:
                raw = fh.read(MAX_IMAGE_BYTES + 1)
            if len(raw) > MAX_IMAGE_BYTES:
                return None
            import io

            with Image.open(io.BytesIO(raw)) as img:
                if img.width * img.height > MAX_IMAGE_PIXELS:
                    return None
                pic = img.convert("RGBA" if "A" in img.getbands() else "RGB")
            if max_side and max(pic.size) > max_side:
                pic.thumbnail((max_side, max_side), Image.Resampling.LANCZOS)
            path = self.out / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            pic.save(path, format="PNG")
        except (OSError, ValueError, Image.DecompressionBombError, SyntaxError):
            return None
        return rel

    def entry_dir(self, entry: Entry) -> str:
        from brick_gym.bench.scoring import system_folder

        return f"tasks/{entry.task}/{system_folder(entry.system)}"

    # -- index -----------------------------------------------------------------------------------------------

    def write_index(self) -> None:
        d = self.data
        scores = d.scores or {}
        body = [f"<p>Source: {h.text(str(d.source))} · setting: {h.text(d.setting or 'unknown')}</p>"]
        judge = scores.get("judge") if isinstance(scores.get("judge"), dict) else None
        if judge:
            body.append(f"<p>Judge: {h.text(judge.get('backend'))} / {h.text(judge.get('model'))}</p>")
        body.append("<h2>Leaderboard</h2>")
        body.append(self._leaderboard())
        png = self.image(d.leaderboard_png, "leaderboard.png")
        if png:
            body.append(f'<p><img src="{png}" alt="leaderboard plot" style="max-width:100%"></p>')
        notes = [*(scores.get("notes") or []), *d.notes]
        if notes:
            body.append("<h2>Notes</h2><ul>" + "".join(f"<li>{h.text(n, 2000)}</li>" for n in notes) + "</ul>")
        body.append("<h2>Tasks</h2>")
        body.append(self._matrix())
        title = f"brick_gym report — {d.setting or 'runs'}"
        (self.out / "index.html").write_text(h.page(title, "".join(body), root="."), encoding="utf-8")

    def _leaderboard(self) -> str:
        head = ("System", "Protocol", "Valid", "VQA", "VQA flat", "ELO [lo, hi]", "Align ELO", "Design ELO")
        head += ("Parts", "Tokens", "Cost/task", "Errors")
        rows = [self._row(r) for r in self.data.systems]
        return h.table(head, rows, "leaderboard")

    def _row(self, row: SystemRow) -> list[str]:
        s = row.score
        entries = [self.data.entries[(row.name, t.id)] for t in self.data.tasks]
        n = len(entries)
        valid = sum(e.status == "valid" for e in entries)
        elo = s.get("elo") if isinstance(s.get("elo"), dict) else {}

        def rating(prefix: str, interval: bool) -> str:
            v = elo.get(f"{prefix}elo")
            if not isinstance(v, int | float):
                return "—"
            lo, hi = elo.get(f"{prefix}elo_lo"), elo.get(f"{prefix}elo_hi")
            if interval and isinstance(lo, int | float) and isinstance(hi, int | float):
                return h.text(f"{v:.0f} [{lo:.0f}, {hi:.0f}]")
            return h.text(f"{v:.0f}")

        pieces = [e.check.get("pieces") for e in entries if e.check and isinstance(e.check.get("pieces"), int)]
        parts = s.get("mean_pieces", sum(pieces) / len(pieces) if pieces else None)
        errors = ", ".join(row.errors) if row.errors else "0"
        return [
            h.text(row.name),
            h.text(s.get("protocol") or "—"),
            h.text(f"{valid / n:.3f} ({valid}/{n})" if n else "—"),
            h.fmt(s.get("vqa")),
            h.fmt(s.get("vqa_flat")),
            rating("", True),
            rating("align_", False),
            rating("design_", False),
            h.fmt(float(parts) if isinstance(parts, int | float) else None, 1),
            h.fmt(row.tokens),
            h.text(f"${s['cost_usd_per_task']:.4f}") if isinstance(s.get("cost_usd_per_task"), int | float) else "—",
            h.text(errors, 500),
        ]

    def _matrix(self) -> str:
        systems = self.data.systems
        rows = []
        for task in self.data.tasks:
            cells = [h.text(task.id)]
            for row in systems:
                e = self.data.entries[(row.name, task.id)]
                vqa = e.scored.get("vqa")
                label = e.status + (f" · VQA {vqa:.2f}" if isinstance(vqa, int | float) else "")
                cells.append(
                    f'<span class="{h.text(e.status)}">{h.link(self.entry_dir(e) + "/index.html", label)}</span>'
                )
            rows.append(cells)
        return h.table(["Task", *(r.name for r in systems)], rows, "matrix")

    # -- task pages ------------------------------------------------------------------------------------------

    def write_entry(self, entry: Entry, task: Any) -> None:
        rel = self.entry_dir(entry)
        folder = self.out / rel
        folder.mkdir(parents=True, exist_ok=True)
        root = "../../.."
        others = [
            h.link(f"../{self.entry_dir(self.data.entries[(r.name, entry.task)]).rsplit('/', 1)[1]}/index.html", r.name)
            for r in self.data.systems
            if r.name != entry.system
        ]
        body = [f"<p>{h.text(task.prompt, 5000)}</p>" if task.prompt else ""]
        body.append(f'<p>Status: <span class="{h.text(entry.status)}">{h.text(entry.status)}</span>')
        if others:
            body.append(" · other systems on this task: " + ", ".join(others))
        body.append("</p>")
        body.append(self._views(entry, rel))
        scripts: tuple[str, ...] = ()
        if self.viewer and entry.folder is not None:
            block = self._model(entry, folder)
            if block:
                body.append("<h2>3D view</h2>" + block)
                scripts = (f"{root}/assets/three-modules.js", "model.js", f"{root}/assets/viewer.js")
        body.append(self._verdict(entry))
        body.append(self._vqa(entry, task))
        body.append(self._pairwise(entry, rel))
        body.append(self._episode(entry))
        body.append("<h2>Transcript</h2>")
        body.append(transcript_html(entry.transcript, lambda p: self._shot(entry, rel, p)))
        if entry.notes:
            body.append("<ul>" + "".join(f"<li>{h.text(n, 1000)}</li>" for n in entry.notes) + "</ul>")
        crumbs = ((f"{root}/index.html", "report"),)
        title = f"{entry.task} — {entry.system}"
        page = h.page(title, "".join(body), root=root, scripts=scripts, crumbs=crumbs)
        (folder / "index.html").write_text(page, encoding="utf-8")

    def _shot(self, entry: Entry, rel: str, path: str) -> str | None:
        if entry.folder is None or not path.lower().endswith(".png"):
            return None
        parts = Path(path).parts
        name = re.sub(r"[^A-Za-z0-9._-]", "_", "shot_" + "_".join(parts))
        if len(name) > 150:
            return None
        return self.image(safe_file(entry.folder, *parts), f"{rel}/{name}", 1024) and name

    def _views(self, entry: Entry, rel: str) -> str:
        from brick_gym.render.scene import VIEW_NAMES

        if not entry.views:
            return '<h2>Views</h2><p class="muted">No views.</p>'
        figs = []
        for i, (src, name) in enumerate(zip(entry.views, VIEW_NAMES, strict=False)):
            got = self.image(src, f"{rel}/view_{i}.png", 512)
            pic = f'<img src="view_{i}.png" alt="{name}">' if got else h.text("[not readable]")
            figs.append(f"<figure>{pic}<figcaption>{name.replace('_', ' ')}</figcaption></figure>")
        return '<h2>Views</h2><div class="views">' + "".join(figs) + "</div>"

    def _model(self, entry: Entry, folder: Path) -> str:
        from brick_gym.bench.report.viewer import model_script, viewer_block
        from brick_gym.core.ldraw import LDrawError, read_ldraw_file
        from brick_gym.core.modelfile import part_bound
        from brick_gym.render.gltf import glb_bytes

        model = safe_file(entry.folder, "model.mpd") if entry.folder is not None else None
        if model is None:
            return ""
        try:
            limit, note = part_bound(None)
            parsed = read_ldraw_file(model, max_parts=limit, limit_note=note)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # parts without a mesh: left out, as in the views
                glb = glb_bytes(parsed, name=f"{entry.task} {entry.system}", extras={"task": entry.task})
        except (LDrawError, OSError, ValueError) as exc:
            return f'<p class="muted">No 3D view: {h.text(str(exc), 500)}</p>'
        (folder / "model.glb").write_bytes(glb)
        (folder / "model.js").write_text(model_script(glb), encoding="utf-8")
        return viewer_block()

    def _verdict(self, entry: Entry) -> str:
        check = entry.check
        if check is None:
            return '<h2>Verdict</h2><p class="muted">Not re-checked.</p>'
        report = check.get("report") if isinstance(check.get("report"), dict) else check
        facts = [(k, report.get(k)) for k in ("valid", "setting", "pieces", "components", "joints") if k in report]
        out = "<h2>Verdict</h2>" + h.table(("", "re-checked"), [(h.text(k), h.fmt(v)) for k, v in facts])
        issues = check.get("issues") or report.get("issues") or []
        if issues:
            rows = [
                (h.text(i.get("kind")), h.text(i.get("message"), 2000)) for i in issues[:500] if isinstance(i, dict)
            ]
            out += h.table(("issue", "message"), rows)
        return out

    def _vqa(self, entry: Entry, task: Any) -> str:
        from brick_gym.judges.vqa import parse_vqa_reply, score_vqa

        graph = task.graph
        if not len(graph):
            return ""
        out = "<h2>VQA</h2>"
        rec = entry.vqa
        if rec is None:
            why = "not asked (the build is not valid, or has no views)" if entry.status != "valid" else "no record"
            return out + f'<p class="muted">{h.text(why)}; scores 0.</p>'
        reply = rec.get("reply") if isinstance(rec.get("reply"), str) else None
        answers = parse_vqa_reply(reply, len(graph))
        passed: dict[str, bool] = score_vqa(graph, answers).passed if answers is not None else {}
        rows = []
        for i, q in enumerate(graph, start=1):
            answer = None if answers is None else answers.get(i)
            said = "—" if answer is None else ("yes" if answer else "no")
            ok = passed.get(q.key)
            gate = "—" if ok is None else ("pass" if ok else ("gated" if answer else "fail"))
            cls = {"pass": "yes", "fail": "no", "gated": "gated"}.get(gate, "muted")
            deps = ", ".join(q.dependencies) or "—"
            rows.append(
                [h.text(q.key), h.text(q.question, 1000), h.text(deps), f'<span class="{cls}">{said}</span>', gate]
            )
        out += h.table(("key", "question", "depends on", "answer", "gated result"), rows)
        if answers is not None:
            s = score_vqa(graph, answers)
            out += f"<p>Gated {s.gated:.3f} · flat {s.flat:.3f} (re-scored from the reply)</p>"
        else:
            out += '<p class="no">The reply did not parse: scores 0.</p>'
        return out + h.details("judge reply", h.pre(reply or ""))

    def _pairwise(self, entry: Entry, rel: str) -> str:
        if not entry.votes and not entry.tiles:
            return ""
        from brick_gym.bench.scoring import system_folder

        out = ["<h2>Pairwise</h2>"]
        for name, src in entry.tiles.items():
            got = self.image(src, f"{rel}/tile_{system_folder(name)}.png", 2048)
            if got:
                out.append(f'<figure class="tile"><img src="tile_{system_folder(name)}.png" alt="tile">')
                out.append(f"<figcaption>what the judge saw of {h.text(name)}</figcaption></figure>")
        rows = []
        for v in entry.votes:
            won = v.get("winner") == entry.system
            how = v.get("auto") or (v.get("reply") if isinstance(v.get("reply"), str) else "")
            rows.append(
                [
                    h.text(v.get("question")),
                    h.text(v.get("first")),
                    h.text(v.get("second")),
                    f'<span class="{"yes" if won else "no"}">{h.text(v.get("winner"))}</span>',
                    h.text(how, 600),
                ]
            )
        if rows:
            out.append(h.table(("question", "shown first", "shown second", "winner", "reply / why"), rows))
        return "".join(out)

    def _episode(self, entry: Entry) -> str:
        done = entry.done
        if not done:
            return ""
        keys = ("stop_reason", "turns", "tool_calls", "seconds", "cost_usd", "pieces", "valid")
        rows = [(h.text(k), h.fmt(done.get(k))) for k in keys if k in done]
        tokens = done.get("tokens")
        if isinstance(tokens, dict):
            rows += [(h.text(k), h.fmt(v)) for k, v in tokens.items()]
        if done.get("error"):
            rows.append((h.text("error"), h.text(done.get("error"), 2000)))
        return "<h2>Episode</h2>" + h.table(("", "as the run recorded it"), rows)
