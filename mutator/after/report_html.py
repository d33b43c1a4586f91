"""`run.py export-report RUN [--out FILE]`: one self-contained HTML file a researcher can hand over.

The run's optimisation curve, its round table with verdicts and reasons, its lineage (the champion chain and
every attempt's parent), its test reports with their per-task harm tables, and its spend. The figures are the
dashboard's own (mutator/server/queries.py reads them from the store; nothing is re-derived here), the data is
inlined (a JSON block no script reads), the charts are inline SVG, and a Content-Security-Policy forbids every
fetch: the file opens offline in any browser.
"""

from __future__ import annotations

import html
import json
import time
from pathlib import Path

from eval.errors import SkillMutatorError
from mutator.store.db import connect_readonly


class ReportError(SkillMutatorError, ValueError):
    """The run is not in the store (the message names the store and how to list its runs)."""


CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"
SERIES = (("champion", "champion (val)", "#1f6feb"), ("best", "best candidate (val)", "#8250df"),
          ("train", "train", "#2da44e"), ("test", "test", "#d1242f"))
STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 24px auto; max-width: 1100px; color: #1f2328; }
h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 28px; border-bottom: 1px solid #d0d7de; }
table { border-collapse: collapse; margin: 8px 0; } th, td { border: 1px solid #d0d7de; padding: 3px 7px;
  text-align: left; vertical-align: top; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.why { max-width: 420px; } .KEEP { color: #1a7f37; font-weight: 600; } .REJECT { color: #cf222e; }
.legend span { margin-right: 14px; } .legend i { display: inline-block; width: 12px; height: 3px;
  vertical-align: middle; margin-right: 4px; } small, .hint { color: #57606a; } .warn { color: #9a6700; }
svg text { font: 11px system-ui, sans-serif; fill: #57606a; }
"""


def _e(value) -> str:
    return html.escape("" if value is None else str(value))


def _num(value, digits: int = 4) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _signed(value, digits: int = 4) -> str:
    return "—" if value is None else f"{value:+.{digits}f}"


def _usd(value) -> str:
    return "—" if value is None else f"${value:.4f}"


def curve_svg(curve: dict, width: int = 900, height: int = 280) -> str:
    """The optimisation curve as inline SVG: x = round, y = composite, the champion as a line, the other
    series as points; each point carries its series, round and value (data-*), the axes fit the data."""
    rounds = curve["round"]
    values = [v for name, _, _ in SERIES for v in curve.get(name) or [] if v is not None]
    if not rounds or not values:
        return '<p class="hint">No round scored yet.</p>'
    left, right, top, bottom = 60, 20, 16, 34
    x0, x1 = min(rounds), max(rounds)
    y0, y1 = min(values), max(values)
    pad = (y1 - y0) * 0.08 or abs(y0) * 0.05 or 0.5
    y0, y1 = y0 - pad, y1 + pad

    def x(r: float) -> float:
        return left + (r - x0) / ((x1 - x0) or 1) * (width - left - right)

    def y(v: float) -> float:
        return top + (y1 - v) / (y1 - y0) * (height - top - bottom)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" id="curve" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img" aria-label="optimisation curve">',
             f'<line x1="{left}" y1="{height - bottom}" x2="{width - right}" y2="{height - bottom}" '
             'stroke="#8c959f"/>', f'<line x1="{left}" y1="{top}" x2="{left}" y2="{height - bottom}" '
             'stroke="#8c959f"/>']
    for i in range(5):   # y ticks over the data's own range
        v = y0 + (y1 - y0) * i / 4
        parts.append(f'<text x="{left - 6}" y="{y(v) + 4:.1f}" text-anchor="end">{v:.3f}</text>'
                     f'<line x1="{left}" y1="{y(v):.1f}" x2="{width - right}" y2="{y(v):.1f}" '
                     'stroke="#eaeef2"/>')
    step = max(1, round((x1 - x0) / 10) or 1)
    for r in range(x0, x1 + 1, step):
        parts.append(f'<text x="{x(r):.1f}" y="{height - bottom + 16}" text-anchor="middle">{r}</text>')
    parts.append(f'<text x="{(left + width - right) / 2}" y="{height - 4}" text-anchor="middle">round</text>')
    for name, _, colour in SERIES:
        points = [(r, v) for r, v in zip(rounds, curve.get(name) or [], strict=False) if v is not None]
        if name == "champion" and len(points) > 1:
            path = " ".join(f"{x(r):.1f},{y(v):.1f}" for r, v in points)
            parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{path}"/>')
        for r, v in points:
            parts.append(f'<circle class="pt" data-series="{name}" data-round="{r}" data-value="{v!r}" '
                         f'cx="{x(r):.1f}" cy="{y(v):.1f}" r="{5 if name == "test" else 3.5}" '
                         f'fill="{"#fff" if name == "test" else colour}" stroke="{colour}">'
                         f'<title>{name} round {r}: {v:.4f}</title></circle>')
    parts.append("</svg>")
    legend = "".join(f'<span><i style="background:{c}"></i>{_e(label)}: {_num(_last(curve.get(n)))}</span>'
                     for n, label, c in SERIES)
    return "".join(parts) + f'<p class="legend">{legend} <small>(last value of each)</small></p>'


def _key(a: dict) -> str:
    return f"{a['round']}.{a['sibling']}" if a["sibling"] else str(a["round"])


def _last(values) -> float | None:
    found = [v for v in values or [] if v is not None]
    return found[-1] if found else None


def round_table(attempts: list[dict]) -> str:
    rows = []
    for a in attempts:
        verdict = a.get("verdict") or a.get("stopped") or a.get("status")
        rows.append(
            f'<tr data-attempt="{a["id"]}"><td>{_key(a)}</td>'
            f'<td class="{_e(a.get("verdict"))}">{_e(verdict)}</td>'
            f'<td class="num">{_num(a.get("composite"))}</td><td class="num">{_signed(a.get("delta"))}</td>'
            f'<td class="num">{_signed(a.get("gate_threshold"))}</td>'
            f'<td class="why">{_e(a.get("reason"))}</td>'
            f'<td class="why">{_e(a.get("summary"))}</td>'
            f'<td><code>{_e((a.get("genome_hash") or "")[:12])}</code>'
            '</td></tr>')
    return ('<table id="rounds"><thead><tr><th>round</th><th>verdict</th><th>val composite</th><th>Δ</th>'
            '<th>threshold</th><th>reason</th><th>change</th><th>genome</th></tr></thead><tbody>'
            + "".join(rows) + "</tbody></table>")


def lineage_view(found: dict) -> str:
    chain = " → ".join(f'<code>{_e(n.get("genome_hash", n)[:12] if isinstance(n, dict) else str(n)[:12])}'
                       "</code>" for n in found.get("chain") or [])
    rows = "".join(
        f'<tr data-node="{n["attempt_id"]}"><td>r{_key(n)}</td>'
        f'<td>{_e(n.get("verdict"))}</td>'
        f'<td><code>{_e((n.get("genome_hash") or "")[:12])}</code></td>'
        f'<td><code>{_e((n.get("parent_hash") or "")[:12])}</code></td>'
        f'<td class="num">{_num(n.get("composite"))}</td></tr>' for n in found.get("nodes") or [])
    return (f'<p id="chain">champion chain (champion → seed): {chain or "—"}</p>'
            '<table id="lineage"><thead><tr><th>attempt</th><th>verdict</th><th>genome</th><th>parent</th>'
            f'<th>val composite</th></tr></thead><tbody>{rows}</tbody></table>')


def _split_rows(report: dict) -> str:
    rows = []
    for name in ("train", "val", "test"):
        s = (report.get("splits") or {}).get(name)
        if not s:
            rows.append(f'<tr data-split="{name}"><th>{name}</th><td colspan="5" class="hint">no stored '
                        "evaluation of both genomes</td></tr>")
            continue
        d = s["delta"]
        ci = "—" if d.get("ci_low") is None else f"[{_signed(d['ci_low'])}, {_signed(d['ci_high'])}]"
        rows.append(f'<tr data-split="{name}"><th>{name}</th><td class="num">{s["n_tasks"]}</td>'
                    f'<td class="num">{_num(s["seed_composite"])}</td>'
                    f'<td class="num">{_num(s["champion_composite"])}</td>'
                    f'<td class="num">{_signed(d["mean"])} ± {_num(d["se"])}</td>'
                    f'<td class="num">{ci}</td></tr>')
    return ('<table class="report"><thead><tr><th>split</th><th>tasks</th><th>seed</th><th>champion</th>'
            "<th>Δcomposite ± SE</th><th>95% CI</th></tr></thead><tbody>" + "".join(rows)
            + "</tbody></table>")


def _harm(found: dict | None, reference: str) -> str:
    if not found or not found.get("tasks"):
        return ""
    rc, rr = found["replicates"]
    rows = "".join(
        f'<tr data-task="{_e(r["task"])}" class="{"warn" if r["verdict"] == "worse" else ""}">'
        f'<th>{_e(r["task"])}</th>'
        f'<td>{_e(r["verdict"])}</td><td class="num">{_signed(r["delta"])}</td>'
        f'<td>{" ".join(_num(v, 3) for v in r["champion"])}</td>'
        f'<td>{" ".join(_num(v, 3) for v in r["reference"])}</td>'
        f'<td class="num">{_e(r.get("p_worse"))}</td></tr>' for r in found["tasks"])
    return (f'<h4>Per task vs {reference}: {len(found["flagged"])} flagged worse of {len(found["tasks"])} '
            f'({rc} vs {rr} replicates)</h4><table class="harm" data-harm="{reference}"><thead><tr>'
            f"<th>task</th><th>verdict</th><th>Δ</th><th>champion cells</th><th>{reference} cells</th>"
            "<th>p(worse)</th></tr>"
            f"</thead><tbody>{rows}</tbody></table>")


def tests_view(tests: list[dict]) -> str:
    if not tests:
        return '<p class="hint">No test run yet (run.py test RUN).</p>'
    out = []
    for t in tests:
        report = t.get("report")
        out.append(
            f'<section class="test" data-test="{t["id"]}"><h3>Test on {_e(t.get("suite"))} · round '
            f'{_e(t.get("round"))} · {_e(t.get("status"))}</h3><p>champion composite '
            f'<b class="test-composite">{_num(t.get("composite"))}</b> · train composite '
            f'{_num(t.get("train_composite"))}</p>{_split_rows(report) if report else ""}'
            + (_harm((report.get("harm") or {}).get("seed"), "the seed") if report else "")
            + (_harm((report.get("harm") or {}).get("none"), "no skill") if report else "") + "</section>")
    return "".join(out)


def cost_view(spend: dict) -> str:
    rows = "".join(f'<tr data-kind="{_e(kind)}"><td>{_e(kind)}</td><td class="num">{_usd(usd)}</td></tr>'
                   for kind, usd in spend["kinds"].items())
    return (f'<p>total <b id="spend-total">{_usd(spend["total"])}</b></p><table id="cost"><thead><tr>'
            f"<th>kind</th><th>USD</th></tr></thead><tbody>{rows}</tbody></table>")


def build(data_dir: Path, run_id: str) -> str:
    """The report's HTML: the dashboard's reads of the run (Home's detail over every round, the lineage)."""
    from mutator.server import queries as Q
    db_path = data_dir / "mutator.db"
    if not db_path.is_file():
        raise ReportError(f"{db_path}: no store here; pass --data-dir DIR, the folder holding mutator.db")
    db = connect_readonly(db_path)
    try:
        detail = Q.run_detail(db, run_id, data_dir, window=0)
        if detail is None:
            raise ReportError(f"no run {run_id!r} in {db_path}; pick one from the dashboard's run list "
                              f"(python run.py serve --data-dir {data_dir}) or pass the right --data-dir")
        lineage = Q.lineage(db, run_id) or {}
    finally:
        db.conn.close()
    run = detail["run"]
    data = {"run": {k: run.get(k) for k in ("id", "skill_name", "strategy", "status", "rounds_done",
                                            "rounds_target", "suite", "val", "holdout", "model", "gate_z",
                                            "replicates", "spend")},
            "curve": detail["curve"], "attempts": [{k: a.get(k) for k in (
                "id", "round", "sibling", "verdict", "composite", "delta", "gate_threshold", "reason",
                "summary", "genome_hash")} for a in detail["attempts"]],
            "tests": [{k: t.get(k) for k in ("id", "suite", "round", "status", "composite")}
                      for t in detail["tests"]]}
    inline = json.dumps(data, default=str).replace("</", "<\\/")
    made = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{CSP}">
<title>Skill Mutator report · {_e(run["id"])}</title><style>{STYLE}</style></head><body>
<h1>{_e(run["skill_name"])} · run <code id="run-id">{_e(run["id"])}</code></h1>
<p id="run-line">{_e(run["strategy"])} · {_e(run["status"])} · round
 {run["rounds_done"]}/{run["rounds_target"]}
 · train {_e(run["suite"])} · val {_e(run["val"])} · holdout {_e(run.get("holdout") or "—")} · model
 {_e(run["model"])} · {run["replicates"]} replicates · gateZ {_e(run.get("gate_z"))} · spend
 {_usd(run["spend"]["total"])}</p>
<p class="hint">Written {made} by <code>run.py export-report</code> from the run's store; every figure is the
dashboard's. Self-contained: no script, no fetch.</p>
<h2>Optimisation curve</h2><p class="hint">composite on val (champion after each round, best candidate),
train and test, each normalised to the seed on its split</p>{curve_svg(detail["curve"])}
<h2>Rounds</h2>{round_table(detail["attempts"])}
<h2>Lineage</h2>{lineage_view(lineage)}
<h2>Test reports</h2>{tests_view(detail["tests"])}
<h2>Cost</h2>{cost_view(run["spend"])}
<script type="application/json" id="report-data">{inline}</script>
</body></html>
"""


def write(data_dir: Path, run_id: str, out: Path | None) -> Path:
    target = out or data_dir / "exports" / f"{run_id}-report.html"
    text = build(data_dir, run_id)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    except OSError as err:
        raise ReportError(f"{target}: not writable ({err.strerror}); pass --out FILE.html in a writable "
                          "folder") from None
    return target
