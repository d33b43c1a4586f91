"""The end-of-run summary, rendered from the store alone (so it can be re-derived any time)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import sqlite_utils

from mutator.scoring.models import stored_normalisers
from mutator.scoring.score import CellFigures, Normalisers, Weights, by_model, summarise
from mutator.store import cache, triggers
from mutator.store.attempts import of_run
from mutator.store.db import loads
from mutator.store.liveness import mark_stale
from mutator.store.rows import AttemptRow
from mutator.store.runs import run_row
from mutator.store.summaries import FailedCells, cell_dirs, failed_evaluations
from strategies.verdicts import Verdict


def stored_cells(db: sqlite_utils.Database, evaluation_id: int) -> list[CellFigures]:
    """An evaluation's cells as the scorer sees them (a several-model one's tagged with each cell's model),
    each with whether it loaded the skill and whether its task should have (mutator/scoring/trigger.py)."""
    evaluation = cache.evaluation_row(db, evaluation_id)
    return cell_figures(cache.cell_rows(db, evaluation_id), triggers.no_trigger_ids(evaluation))


def cell_figures(rows: list[dict], no_trigger: frozenset[str]) -> list[CellFigures]:
    """Stored cell rows as CellFigures: the one place a cell row becomes a scored cell."""
    return [CellFigures(r["task_id"], r["replicate"], r["score"] or 0.0, r["cost_usd"] or 0.0,
                        r["steps"] or 0, r["status"] == "ok", r.get("model") or "", triggers.loaded(r),
                        r["task_id"] not in no_trigger)
            for r in rows]


def _figures(db: sqlite_utils.Database, evaluation_id: int | None, weights: Weights, norm: Normalisers,
             model: str | None = None):
    """The evaluation's summary (mean over models); with `model`, that eval model's own."""
    if evaluation_id is None:
        return None
    cells = stored_cells(db, evaluation_id)
    if model is not None:
        return by_model(cells, weights, norm).get(model)
    return summarise(cells, weights, norm) if cells else None


@dataclass(frozen=True)
class SeedVsChampion:
    """What both renderings of the summary show: every attempt, the champion's, and the four figures."""
    attempts: list[AttemptRow]
    champion: AttemptRow
    seed_val: object
    seed_train: object
    champion_val: object
    champion_train: object
    # several eval models: {model: (seed val, seed train, champion val, train)}
    models: dict = field(default_factory=dict)


def seed_vs_champion(db: sqlite_utils.Database, run: dict) -> SeedVsChampion:
    weights = Weights.of_run(run)
    val_norm, train_norm = stored_normalisers(run, "val"), stored_normalisers(run, "train")
    attempts = of_run(db, run["id"])
    seed = attempts[0]
    champion = [a for a in attempts if a.genome_hash == run["incumbent_hash"] and a.val_evaluation_id][-1]
    champ_train = [a.train_evaluation_id for a in attempts
                   if a.genome_hash == run["incumbent_hash"] and a.train_evaluation_id]
    ids = (seed.val_evaluation_id, seed.train_evaluation_id, champion.val_evaluation_id,
           champ_train[-1] if champ_train else None)
    norms = (val_norm, train_norm, val_norm, train_norm)
    models = {m: tuple(_figures(db, i, weights, n, m) for i, n in zip(ids, norms, strict=True))
              for m, _, _ in val_norm.by_model}
    return SeedVsChampion(attempts, champion,
                          *(_figures(db, i, weights, n) for i, n in zip(ids, norms, strict=True)),
                          models=models)


def model_deltas(a: AttemptRow) -> str:
    """Each eval model's own paired Δ of an attempt, from its stored gate ('' for one model)."""
    found = (loads(a.gate, {}) or {}).get("by_model") or {}
    return ", ".join(f"{m} {f['delta']:+.4f}" for m, f in found.items())


def attempt_label(a: AttemptRow | FailedCells) -> str:
    return f"{a.round}" + (f".{a.sibling}" if a.sibling else "")


def attempt_note(a: AttemptRow) -> str:
    """The attempt's summary, with the start of its error when it has one and the val cells its verdict used
    when val ran in waves."""
    note = a.summary or ""
    looks = loads(a.looks, None) or []
    if len(looks) > 1:
        last = looks[-1]
        when = "decided at" if last["decision"] else "all"
        note += f" ({last['cells']} val cells: {when} wave {last['look']})"
    return f"{note} [{a.error[:100]}]".strip() if a.error else note


def _line(label: str, val, train) -> str:
    def part(s) -> str:
        return "   —        —       —         —   " if s is None else \
            f"{s.composite:7.4f}  {s.eval:6.3f}  {s.cost:8.5f}  {s.steps:5.2f}"
    return f"  {label:<9} {part(val)}   │ {part(train)}"


def summary(db: sqlite_utils.Database, run_id: str, *, val_query_warn: int | None = None,
            data_dir: Path | None = None, spend: dict | None = None) -> str:
    """`spend`: the run's {total, kinds} from mutator/after/spend.py run_spend (the figure Home and the Cost
    page show); without it, its total alone (runs.cost_usd, written with every charge)."""
    run = mark_stale(db.conn, [run_row(db, run_id)])[0]  # a dead writer's run shows as `stale`
    figures = seed_vs_champion(db, run)
    attempts, champion = figures.attempts, figures.champion
    lines = [f"Run {run_id} · {run['strategy']} · {run['rounds_done']}/{run['rounds_target']} rounds · "
             f"model {run['model']} · {run['replicates']} replicates · status {run['status']}"
             + (f" ({run['stale_note']})" if run.get("stale_note") else ""),
             "                 val: composite  eval   cost/cell  steps │ train: composite  eval   cost/cell  "
             "steps",
             _line("seed", figures.seed_val, figures.seed_train),
             _line("champion", figures.champion_val, figures.champion_train),
             *(line for m, (sv, st, cv, ct) in figures.models.items()
               for line in (f"  · {m}", _line(" seed", sv, st), _line(" champion", cv, ct))),
             f"  champion genome {run['incumbent_hash'][:12]} (round {champion.round})", "",
             "  round  verdict  Δcomposite  gate threshold   summary"]
    for a in attempts[1:]:
        delta = "—" if a.delta is None else f"{a.delta:+.4f}"
        threshold = "—" if a.gate_threshold is None else f"{a.gate_threshold:+.4f}"
        lines.append(f"  {attempt_label(a):<6} {a.verdict or a.status:<8} {delta:>10}  {threshold:>14}   "
                     f"{attempt_note(a)}")
        if model_deltas(a):
            lines.append(f"  {'':<6} {'':<8} per model Δ: {model_deltas(a)}")
    counts = {v: sum(1 for a in attempts[1:] if a.verdict == v)
              for v in (Verdict.KEEP, Verdict.REJECT, Verdict.SCREENED, Verdict.CRITIC, Verdict.FAILED)}
    lines += ["", "  " + " · ".join(f"{k} {n}" for k, n in counts.items()) +
              f" · spend this run {spend_words(spend or {'total': run['cost_usd'] or 0.0, 'kinds': {}})} "
              f"({spend_basis(run['agent'])})"]
    for f in failed_evaluations(db, run_id):
        kinds = ", ".join(f"{n} {k}" for k, n in sorted((loads(f.failures, {}) or {}).items()))
        of = f"{f.n_cells}" if f.n_done == f.n_cells else f"{f.n_done} run"
        lines.append(f"  failed cells, round {attempt_label(f)} on {f.suite}: {f.n_failed} of {of} ({kinds})")
    confirmed = [loads(a.confirm) for a in attempts if a.confirm]
    if confirmed:
        overturned = sum(1 for c in confirmed if not c["stands"])
        lines.append(f"  winner's-curse guard: {len(confirmed)} keep(s) re-checked on fresh val replicates, "
                     f"{overturned} overturned")
    queries = run["val_queries"] or 0
    warn = f" — WARNING: past {val_query_warn}, a val set queried this often is a training set" \
        if val_query_warn is not None and queries > val_query_warn else ""
    lines.append(f"  val queried by {queries} candidate evaluations{warn}")
    if data_dir is not None:
        size, cells = cell_disk_use(db, run_id)
        lines.append(f"  disk: {size / 1e6:.1f} MB in {cells} cell dirs of this run "
                     f"({size / max(cells, 1) / 1e3:.1f} KB per cell after pruning)")
    return "\n".join(lines)


def spend_words(spend: dict) -> str:
    """$total (kind $usd · ...)."""
    kinds = " · ".join(f"{kind} ${usd:.4f}" for kind, usd in spend["kinds"].items())
    return f"${spend['total']:.4f}" + (f" ({kinds})" if kinds else "")


def spend_basis(agent: str | None) -> str:
    """How a run's spend figure was made, in words that are true for this run's build agent."""
    if (agent or "").startswith("fake"):
        return "a dry run: priced from config.json as if a real model had used the fake agents' tokens; " \
               "nothing real was spent"
    if (agent or "").startswith("command@"):
        return "your agent's own total_cost_usd where it reports one, else priced from config.json"
    return "priced from config.json pricing"


def cell_disk_use(db: sqlite_utils.Database, run_id: str) -> tuple[int, int]:
    """Bytes on disk of the cell dirs of every evaluation this run's attempts used, and their count."""
    dirs = cell_dirs(db, run_id)
    total = 0
    for cell_dir in dirs:
        for path in Path(cell_dir).rglob("*"):
            if path.is_file():
                total += path.stat().st_size
    return total, len(dirs)


def count_val_queries(total: int, warn: int, say) -> int:
    """`total` (Session.val_queries); past `warn`, say so."""
    if total > warn:
        say(f"  warning: val has been queried by {total} candidate evaluations (> {warn}); a val set queried "
            f"this often is a training set")
    return total
