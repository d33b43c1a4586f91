"""The honest test report: champion vs seed on the same tasks, paired by task, for test — with train
and val beside it so an overfit gain (train ≫ test) is flagged, not hidden.

Reads finished evaluations from the store and returns JSON-ready data; never runs a cell and never
feeds anything back to the loop (test results never gate or steer the search).
"""

from __future__ import annotations

import math

import sqlite_utils

from mutator.round.summary import stored_cells
from mutator.scoring.models import stored_normalisers
from mutator.scoring.score import Normalisers, Weights, per_task, split_key
from mutator.store import cache
from mutator.store.attempt_reads import latest_evaluation_id, seed_evaluation_ids
from mutator.store.evaluation_reads import cell_tests
from mutator.store.triggers import stored_rates
from mutator.validity import harm
from mutator.validity.stats import is_pass_fail, mcnemar_exact, paired, paired_delta, sign_test

# train (or val) Δ above test Δ by more than this many SEs of the difference is flagged as a gap.
GAP_Z = 2.0


_cells = stored_cells


def _tests(db: sqlite_utils.Database, evaluation_id: int) -> dict[tuple[str, int], dict[str, float]]:
    """{(task, replicate): {test name: score}}; a failed cell with no test rows maps to {}. Several eval
    models: the task is 'task@model', as the composite pairs them."""
    out: dict[tuple[str, int], dict[str, float]] = {}
    parts = cache.member_ids(db, evaluation_id) or {"": evaluation_id}
    for model, member in parts.items():
        for r in cell_tests(db, member):
            scores = out.setdefault((r["task_id"] + (f"@{model}" if model else ""), r["replicate"]), {})
            if r["name"] is not None:
                scores[r["name"]] = 0.0 if r["status"] != "ok" else float(r["score"] or 0.0)
    return out


def mcnemar_by_test(champion: dict[tuple[str, int], dict[str, float]],
                    seed: dict[tuple[str, int], dict[str, float]]) -> dict[str, dict]:
    """McNemar's exact test per pass/fail test name; pairs are the (task, replicate) cells both have.

    A test absent from a cell (the cell failed before grading) counts as a fail, as in the composite.
    """
    cells = sorted(set(champion) & set(seed))
    names = sorted({name for side in (champion, seed) for scores in side.values() for name in scores})
    out = {}
    for name in names:
        seen = [side[c][name] for side in (champion, seed) for c in cells if name in side[c]]
        if not is_pass_fail(seen):
            continue
        pairs = [(champion[c].get(name, 0.0) == 1.0, seed[c].get(name, 0.0) == 1.0) for c in cells]
        out[name] = mcnemar_exact(pairs).to_json()
    return out


def compare_split(db: sqlite_utils.Database, champion_eval: int | None, seed_eval: int | None,
                  weights: Weights, norm: Normalisers) -> dict | None:
    """Champion − seed on one suite: paired Δcomposite and Δeval by task, sign test, McNemar per test."""
    if champion_eval is None or seed_eval is None:
        return None
    champ = per_task(_cells(db, champion_eval), weights, norm)
    seed = per_task(_cells(db, seed_eval), weights, norm)
    deltas = paired({t: f.composite for t, f in champ.items()}, {t: f.composite for t, f in seed.items()})
    if not deltas:
        return None
    shared = list(deltas)
    return {
        **({"by_model": by_model} if (by_model := _by_model(deltas, champ, seed)) else {}),
        "n_tasks": len(deltas),
        "champion_composite": sum(champ[t].composite for t in shared) / len(shared),
        "seed_composite": sum(seed[t].composite for t in shared) / len(shared),
        "deltas": deltas,
        "delta": paired_delta(deltas).to_json(),
        "delta_eval": paired_delta(paired({t: f.eval for t, f in champ.items()},
                                          {t: f.eval for t, f in seed.items()})).to_json(),
        **({"delta_trigger": paired_delta(paired({t: f.trigger_term for t, f in champ.items()},
                                                 {t: f.trigger_term for t, f in seed.items()})).to_json()}
           if weights.w_trigger else {}),   # score.wTrigger > 0: the trigger term's paired change, per task
        "sign": sign_test(deltas).to_json(),
        "mcnemar": mcnemar_by_test(_tests(db, champion_eval), _tests(db, seed_eval)),
        "champion_evaluation_id": champion_eval,
        "seed_evaluation_id": seed_eval,
    }


def _by_model(deltas: dict[str, float], champ: dict, seed: dict) -> dict[str, dict]:
    """Several eval models: each model's own paired Δ (its 'task@model' pairs) and composites ({} for one)."""
    groups: dict[str, list[str]] = {}
    for key in deltas:
        groups.setdefault(split_key(key)[1], []).append(key)
    if len(groups) < 2:
        return {}
    return {m: {"n_tasks": len(keys), "delta": paired_delta({k: deltas[k] for k in keys}).to_json(),
                "champion_composite": sum(champ[k].composite for k in keys) / len(keys),
                "seed_composite": sum(seed[k].composite for k in keys) / len(keys)} for m,
            keys in groups.items()}


def gap(split: dict | None, test: dict | None) -> dict | None:
    """How far a split's Δ exceeds test's, in SEs of the difference (independent task sets)."""
    if not split or not test:
        return None
    diff = split["delta"]["mean"] - test["delta"]["mean"]
    se = math.hypot(split["delta"]["se"] or 0.0, test["delta"]["se"] or 0.0)
    z = diff / se if se > 0 else (math.inf if diff > 0 else 0.0 if diff == 0 else -math.inf)
    return {"diff": diff, "se": se, "z": z if math.isfinite(z) else None, "flag": bool(z > GAP_Z)}


def _latest(db: sqlite_utils.Database, run_id: str, genome_hash: str, column: str) -> int | None:
    return latest_evaluation_id(db, run_id, genome_hash, column)


def against_none(db: sqlite_utils.Database, skill_eval: int, none_eval: int | None, weights: Weights,
                 norm: Normalisers) -> dict | None:
    """A skill − no skill on the test suite, paired by task like champion − seed (skill_* / none_*
    figures)."""
    split = compare_split(db, skill_eval, none_eval, weights, norm)
    if split is None:
        return None
    names = {"champion_composite": "skill_composite", "seed_composite": "none_composite",
             "champion_evaluation_id": "skill_evaluation_id", "seed_evaluation_id": "none_evaluation_id"}
    return {names.get(k, k): v for k, v in split.items()}


def control(db: sqlite_utils.Database, *, champion_eval: int, seed_eval: int, none_eval: int | None,
            weights: Weights, norm: Normalisers) -> dict | None:
    """The no-skill control: seed vs none and champion vs none (None when it was not measured)."""
    if none_eval is None:
        return None
    return {"evaluation_id": none_eval, "seed": against_none(db, seed_eval, none_eval, weights, norm),
            "champion": against_none(db, champion_eval, none_eval, weights, norm)}


def among_others(db: sqlite_utils.Database, beside: dict | None, champion_eval: int, weights: Weights,
                 norm: Normalisers) -> dict | None:
    """A run evaluated among other skills (--with-skills): which they were and, when the champion was also
    measured alone on the suite, among − alone paired by task, with both evaluations' stored trigger rates."""
    if not beside:
        return None
    alone_eval = beside.get("alone_evaluation_id")
    split = compare_split(db, champion_eval, alone_eval, weights, norm) if alone_eval else None
    names = {"champion_composite": "among_composite", "seed_composite": "alone_composite",
             "champion_evaluation_id": "among_evaluation_id", "seed_evaluation_id": "alone_evaluation_id"}
    return {**beside, "alone": {names.get(k, k): v for k, v in split.items()} if split else None,
            "triggers": {"among": stored_rates(db, champion_eval), "alone": stored_rates(db, alone_eval)}}


def build(db: sqlite_utils.Database, run: dict, *, suite: str, champion_eval: int, seed_eval: int,
          test_norm: Normalisers, control_eval: int | None = None, beside: dict | None = None) -> dict:
    """The whole report for one test run; train and val come from the run's stored evaluations. With
    `control_eval` (the suite measured with no skill) it adds seed vs none and champion vs none; with `beside`
    (the other skills installed in every cell, and the champion's evaluation alone) the champion among them vs
    alone."""
    weights = Weights.of_run(run)
    seed_hash, champion = run["seed_hash"], run["incumbent_hash"]
    seed_row = seed_evaluation_ids(db, run["id"]) or {"val_evaluation_id": None, "train_evaluation_id": None}
    splits = {
        "train": compare_split(db, _latest(db, run["id"], champion, "train_evaluation_id"),
                               seed_row["train_evaluation_id"], weights, stored_normalisers(run, "train")),
        "val": compare_split(db, _latest(db, run["id"], champion, "val_evaluation_id"),
                             seed_row["val_evaluation_id"], weights, stored_normalisers(run, "val")),
        "test": compare_split(db, champion_eval, seed_eval, weights, test_norm),
    }
    return {"suite": suite, "champion": champion, "seed": seed_hash, "splits": splits,
            "gap": {"train": gap(splits["train"], splits["test"]), "val": gap(splits["val"], splits["test"])},
            "gap_z": GAP_Z, "control": control(db, champion_eval=champion_eval, seed_eval=seed_eval,
                                               none_eval=control_eval, weights=weights, norm=test_norm),
            "harm": task_harm(db, champion_eval, {"seed": seed_eval, "none": control_eval}, weights,
                              test_norm),
            "with_skills": among_others(db, beside, champion_eval, weights, test_norm)}


def task_harm(db: sqlite_utils.Database, champion_eval: int, references: dict[str, int | None],
              weights: Weights, norm: Normalisers) -> dict:
    """Per task, the champion against each measured reference over replicate cells
    (mutator/validity/harm.py)."""
    mine = harm.cell_composites(_cells(db, champion_eval), weights, norm)
    return {name: harm.harm(mine, harm.cell_composites(_cells(db, ref), weights,
                                                       norm)) if ref is not None else None
            for name, ref in references.items()}


def look_lines(suite: str, look: dict | None) -> list[str]:
    """"Look k of n at this test suite for this skill" (mutator/store/looks.py); [] for a report made
    before."""
    if not look:
        return []
    repeat = f", a repeat of test #{look['repeat_of']} (its cells served from the cache, not a new look)" \
        if look.get("repeat_of") else ""
    return [f"  Look {look['k']} of {look['looks']} at test suite {suite} for this skill{repeat}"
            + ("; sealed: this run's first champion test here is final" if look.get("sealed") else "")]


def _fmt(value: float | None, spec: str = "+.4f") -> str:
    return "—" if value is None else format(value, spec)


def render(report: dict) -> str:
    lines = [f"Honest test report · champion {report['champion'][:12]} vs seed {report['seed'][:12]} · "
             "paired by task (Δ = champion − seed)", *look_lines(report.get("suite", ""), report.get("look")),
             "  split   tasks   seed     champion   Δcomposite ± SE      95% CI (t)            Δeval     "
             "sign test W/L/T   p"]
    for name in ("train", "val", "test"):
        s = report["splits"][name]
        if s is None:
            lines.append(f"  {name:<6}  —  (no stored evaluation of both genomes)")
            continue
        d, sign = s["delta"], s["sign"]
        ci = _ci(d)
        lines.append(f"  {name:<6} {s['n_tasks']:>5}   {s['seed_composite']:.4f}   "
                     f"{s['champion_composite']:.4f}    {d['mean']:+.4f} ± {_fmt(d['se'], '.4f'):<7}  "
                     f"{ci:<21} {s['delta_eval']['mean']:+.4f}   "
                     f"{sign['wins']:>2}/{sign['losses']}/{sign['ties']:<8}   {sign['p_value']:.3g}")
        lines += _model_lines(s, "    ", "seed", "champion", with_ci=True)
    names = sorted({n for s in report["splits"].values() if s for n in s["mcnemar"]})
    if names:
        lines.append("  McNemar exact, pass/fail tests (cells paired by task × replicate; "
                     "+champion-only/−seed-only passes, p):")
        for n in names:
            parts = []
            for split in ("train", "val", "test"):
                m = (report["splits"][split] or {}).get("mcnemar", {}).get(n)
                parts.append(f"{split} " + ("—" if m is None else f"+{m['only_a']}/−{m['only_b']} "
                                                                  f"p={m['p_value']:.3g}"))
            lines.append(f"    {n:<16} " + "   ".join(parts))
    lines += render_control(report.get("control")) + render_control_failed(report.get("control_failed")) \
        + render_among(report.get("with_skills"))
    found = report.get("harm") or {}
    lines += harm.render(found.get("seed"), "the seed") + harm.render(found.get("none"), "no skill")
    for split in ("train", "val"):
        g = report["gap"][split]
        if g and g["flag"]:
            z = "∞" if g["z"] is None else f"{g['z']:.1f}"
            lines.append(f"  ⚠ GAP: {split} Δ exceeds test Δ by {g['diff']:+.4f} ({z} SE > "
                         f"{report['gap_z']:g}) — the {split} gain does not carry to held-out tasks")
    lines.append("  (val Δ is the champion's selection score: it is biased up by the choice itself; test is "
                 "not.)")
    return "\n".join(lines)


def _model_lines(split: dict, indent: str, base: str, other: str, *, with_ci: bool = False) -> list[str]:
    """One line per eval model of a paired comparison (by_model; its 'seed' side is `base`, 'champion'
    `other`)."""
    out = []
    for model, m in (split.get("by_model") or {}).items():
        md = m["delta"]
        out.append(f"{indent}· {model}: {m['n_tasks']} tasks, {base} {m['seed_composite']:.4f}, {other} "
                   f"{m['champion_composite']:.4f}, Δ {md['mean']:+.4f} ± {_fmt(md['se'], '.4f')}"
                   + (f"   95% CI {_ci(md)}" if with_ci else ""))
    return out


def _ci(d: dict) -> str:
    return "—" if d["ci_low"] is None else f"[{d['ci_low']:+.4f}, {d['ci_high']:+.4f}]"


def render_control(found: dict | None) -> list[str]:
    """The no-skill control lines (test suite, Δ = with the skill − with none); [] when it was skipped."""
    if not found:
        return []
    lines = ["  No-skill control on test (the suite measured with no skill installed; Δ = skill − none):"]
    for name in ("seed", "champion"):
        s = found.get(name)
        if s is None:
            lines.append(f"    {name:<8} vs none  —  (no paired tasks)")
            continue
        d, sign = s["delta"], s["sign"]
        ci = _ci(d)
        lines.append(f"    {name:<8} vs none {s['n_tasks']:>3} tasks   none {s['none_composite']:.4f}   "
                     f"{name} {s['skill_composite']:.4f}   Δ {d['mean']:+.4f} ± {_fmt(d['se'], '.4f')}   95% "
                     f"CI {ci}   sign {sign['wins']}/{sign['losses']}/{sign['ties']} p={sign['p_value']:.3g}")
        lines += _model_lines(s, "      ", "none", name, with_ci=True)   # does the skill help, on each model
    return lines


def render_control_failed(failed: dict | None) -> list[str]:
    """The no-skill control that failed (its cells are not results): its cells by status; [] otherwise. The
    champion-vs-seed figures above stand without it."""
    if not failed:
        return []
    counts = ", ".join(f"{n} {status}" for status, n in sorted((failed.get("failures") or {}).items()))
    return [f"  No-skill control on test: FAILED — {counts or 'no result'} of its {failed.get('cells')} "
            f"cells (evaluation {failed.get('evaluation_id')}); no seed-vs-none or champion-vs-none figures. "
            "Champion vs seed above does not rest on it."]


def render_among(found: dict | None) -> list[str]:
    """The other skills installed beside it and, when measured, the champion among them vs alone; [] when
    alone."""
    if not found:
        return []
    lines = [f"  Evaluated among other skills (--with-skills {found['dir']}): {', '.join(found['skills'])} "
             f"installed beside it in every cell (digest {found['digest']})"]
    s = found.get("alone")
    if s is None:
        return lines + ["    champion alone: not measured (--no-control)"]
    d, sign = s["delta"], s["sign"]
    lines.append(f"    champion among them vs alone {s['n_tasks']:>3} tasks   alone "
                 f"{s['alone_composite']:.4f}   among {s['among_composite']:.4f}   Δ {d['mean']:+.4f} ± "
                 f"{_fmt(d['se'], '.4f')}   95% CI {_ci(d)}   sign "
                 f"{sign['wins']}/{sign['losses']}/{sign['ties']} p={sign['p_value']:.3g}")
    rates = found.get("triggers") or {}
    if rates.get("among") or rates.get("alone"):
        def pair(key: str) -> str:
            return " · ".join(f"{side} {_fmt((rates.get(side) or {}).get(key), '.3f')}"
                              for side in ("among", "alone"))
        lines.append(f"    trigger recall {pair('recall')}; false-trigger rate {pair('false_trigger_rate')}")
    return lines

