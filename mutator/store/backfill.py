"""The dashboard's derivation of verdict reasons and per-round incumbents as it
stood before the loop stored them.

Kept only for migration _v14, which fills `attempts.reason` and `attempts.incumbent_after` of stores written
before that, once, with exactly these words; nothing else may call it (the loop stores its decisions, the
dashboard reads them). Frozen: never change its words. Pure functions over attempt rows, plus `fill`, the
migration's write.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

import sqlite_utils

POOL_DEFAULT = 4


def _loads(value: Any, default: Any = None) -> Any:
    """Parsed JSON, read-only: a round's siblings carry the same pool snapshot
    text, so each is parsed once."""
    if isinstance(value, (list, dict)) or value is None:
        return default if value is None else value
    found = _parse(value)
    return default if found is _BAD else found


_BAD = object()


try:   # a faster decoder when installed (a dependency of the dashboard); same values out
    from orjson import loads as _decode
except ImportError:  # pragma: no cover
    _decode = json.loads


@lru_cache(maxsize=4096)
def _parse(text: str) -> Any:
    try:
        return _decode(text)
    except ValueError:
        return _BAD


def overturned(row: dict) -> bool:
    return bool(row.get("error")) and str(row["error"]).startswith("keep overturned")


def genome_composites(rows: Iterable[dict]) -> dict[str, float]:
    """Val composite per genome: the first scored row of it (the seed row first, so an A/A run's copies,
    which share the seed's hash but score differently, never replace the seed's own figure)."""
    found: dict[str, float] = {}
    for r in rows:
        if r.get("genome_hash") and r.get("composite") is not None:
            found.setdefault(r["genome_hash"], r["composite"])
    return found


def incumbents(run: dict, rows: Sequence[dict]) -> dict[int, str | None]:
    """round -> the incumbent genome once that round was integrated. `rows` are the run's attempts ordered
    by round, sibling, with genome_hash, verdict, composite, status, error,
    val_evaluation_id, pool_snapshot."""
    strategy = run.get("strategy")
    current = None
    scored: dict[str, tuple[float, int]] = {}   # pareto: genome -> (composite, first seen)
    out: dict[int, str | None] = {}
    by_round: dict[int, list[dict]] = {}
    for r in rows:
        by_round.setdefault(r["round"], []).append(r)
    for rnd in sorted(by_round):
        at = by_round[rnd]
        for r in at:
            if r["verdict"] == "SEED":
                current = r["genome_hash"]
        if strategy == "population":
            kept_back = any(overturned(r) for r in at)
            snapshot = next((_loads(r.get("pool_snapshot"), []) for r in at if r.get("pool_snapshot")), [])
            if snapshot and not kept_back:
                current = snapshot[0]
        elif strategy == "pareto":
            fresh = []
            for r in at:
                if (r.get("val_evaluation_id") and r.get("composite") is not None and r["status"] != "failed"
                        and r["genome_hash"] not in scored):
                    scored[r["genome_hash"]] = (r["composite"], len(scored))
                    fresh.append(r)
            if any(r["verdict"] in ("KEEP", "REJECT") for r in at) and fresh:
                # the strategy's rule: the round's best new genome (earliest sibling on a tie) takes over when
                # it beats the incumbent's composite and passed the gate against it
                best = max(fresh, key=lambda r: (r["composite"], -r.get("sibling", 0)))
                mine = scored.get(current or "", (float("-inf"), 0))[0]
                if best["composite"] > mine + 1e-12 and _passes(best):
                    current = best["genome_hash"]
        else:
            for r in at:
                if r["verdict"] == "KEEP" and r.get("genome_hash"):
                    current = r["genome_hash"]
        out[rnd] = current
    return out


def _critic_reason(a: dict) -> str:
    checks = _loads(a.get("critic"), []) or []
    failed = [c for c in checks if isinstance(c, dict) and c.get("verdict") == "fail"]
    if failed:
        names = ", ".join(f"'{c.get('gate')}'" for c in failed)
        return f"not evaluated: critic gate {names} failed — {failed[0].get('reason') or ''}".rstrip(" —")
    return "not evaluated: rejected by the critic" + (f" — {a['error']}" if a.get("error") else "")


def _f(value: float | None) -> str:
    return "—" if value is None else f"{value:+.4f}"


def _passes(a: dict) -> bool | None:
    if a.get("delta") is None or a.get("gate_threshold") is None:
        return None
    if a.get("gate_keep") is not None:
        # the stored verdict: it differs from Δ ≥ threshold only where the sign-flip gate's coin decided a Δ
        # on its threshold, or the tie rule rejected a tie that adds cost (mutator/scoring/ties.py)
        return bool(a["gate_keep"])
    return not a["delta"] < a["gate_threshold"]


def _costly_tie(a: dict) -> bool:
    """Rejected above the threshold: only the tie rule does that (a tie the gate kept, but it adds cost)."""
    return (a.get("gate_keep") is not None and not a["gate_keep"] and a.get("delta") is not None
            and a.get("gate_threshold") is not None and a["delta"] > a["gate_threshold"] + 1e-9)


def _on_threshold(a: dict) -> bool:
    """Δ exactly on a sign-flip gate's threshold: the comparison's stored coin made the call
    (mutator/scoring/signflip.py)."""
    return (a.get("gate_keep") is not None and a.get("delta") is not None
            and a.get("gate_threshold") is not None
            and abs(a["delta"] - a["gate_threshold"]) <= 1e-9)


def _side(a: dict, kept: bool) -> str:
    if _on_threshold(a):
        return "(Δ exactly on it: the gate's stored coin decided, as its sign-flip rule prescribes)"
    if not kept and _costly_tie(a):
        return ("(Δ above it but below minImprovement: a tie, and it adds cost, so the tie rule "
                "'noAddedCost' rejects it)")
    return "(Δ at or above it)" if kept else "(Δ below it)"


def reason(a: dict, run: dict, siblings: Sequence[dict], composites: dict[str, float],
           already: Iterable[str] = ()) -> str:
    """One line saying why attempt `a` has its verdict. `siblings` are the attempts of its round (itself
    included), `composites` the val composite per genome, `already` the genomes that were in the pool
    (population) or already scored (pareto) before this round."""
    verdict = a.get("verdict")
    if verdict == "SCREENED":
        # the kill-only train screen (mutator/round/waves.py): its words are on the row
        return "screened out before val: " + (str(a.get("error") or "").splitlines() or [""])[0].removeprefix(
            "screened out on ")
    if verdict in ("SEED", "CRITIC", "FAILED"):   # the common verdicts that need no gate figures
        return ("seed: the baseline the first candidates are compared with" if verdict == "SEED" else
                _critic_reason(a) if verdict == "CRITIC" else
                "failed: " + (str(a.get("error") or "no reason recorded").splitlines() or [""])[0])
    gate = f"Δ {_f(a.get('delta'))} vs gate threshold {_f(a.get('gate_threshold'))}"
    if verdict is None:
        if a.get("status") == "scored":
            return "scored: waiting for the round's other candidates before the verdict"
        return f"in progress ({a.get('status') or 'pending'})"
    if verdict == "SEED":
        return "seed: the baseline the first candidates are compared with"
    if verdict == "CRITIC":
        return _critic_reason(a)
    if verdict == "FAILED":
        return "failed: " + (str(a.get("error") or "no reason recorded").splitlines() or [""])[0]
    if run.get("kind") == "aa":
        if verdict == "REJECT":
            return f"rejected: {gate} — a false call, the copy is byte-identical to the seed"
        false_gain = (a.get("delta") is not None and a.get("gate_threshold") is not None
                      and a["delta"] > 2 * (run.get("min_improvement") or 0.0) - a["gate_threshold"])
        return f"kept: {gate}" + (" — but Δ beats +t·SE: a false improvement" if false_gain else
                                  " — no difference called between identical copies")
    if verdict == "KEEP":
        return _keep_reason(a, run, siblings, gate)
    if verdict == "REJECT":
        return _reject_reason(a, run, siblings, composites, set(already), gate)
    # a verdict this page does not know yet (e.g. a newer loop's): its name and the recorded error
    error = str(a.get("error") or "").splitlines()
    return f"{str(verdict).lower()}: {error[0] if error else 'no reason recorded'}"


def _confirmed(a: dict) -> str:
    record = _loads(a.get("confirm"), None)
    stands = isinstance(record, dict) and record.get("stands")
    return "; the keep stands on fresh val replicates" if stands else ""


def _keep_reason(a: dict, run: dict, siblings: Sequence[dict], gate: str) -> str:
    strategy = run.get("strategy")
    if strategy == "population":
        pool = _loads(a.get("pool_snapshot"), []) or []
        size = len(pool) or POOL_DEFAULT
        if a.get("genome_hash") in pool:
            rank = pool.index(a["genome_hash"]) + 1
            where = "as its leader (the new incumbent)" if rank == 1 else f"at rank {rank} of {size}"
            return f"kept: entered the pool {where}{_confirmed(a)}"
        return f"kept: entered the pool{_confirmed(a)}"
    if strategy == "pareto":
        if _passes(a) and (a.get("delta") or 0) > 0:
            # pareto plans one candidate a round: it is the round's best
            return (f"kept: the new champion — it beat the champion's val composite and passed the gate "
                    f"({gate}){_confirmed(a)}")
        return ("kept: a new genome on the per-task Pareto front (the champion stays unless a new best "
                f"passes the gate){_confirmed(a)}")
    evaluated = [s for s in siblings if s.get("delta") is not None]
    if strategy == "branching" and len(evaluated) > 1:
        return f"kept: best of {len(evaluated)} siblings and {gate} {_side(a, True)}{_confirmed(a)}"
    return f"kept: {gate} {_side(a, True)}{_confirmed(a)}"


def _reject_reason(a: dict, run: dict, siblings: Sequence[dict], composites: dict[str, float],
                   already: set[str], gate: str) -> str:
    strategy = run.get("strategy")
    if overturned(a):
        return "rejected: " + str(a["error"])
    if strategy in ("population", "pareto"):
        twin = next((s for s in siblings if s.get("genome_hash") == a.get("genome_hash")
                     and s.get("sibling", 0) < a.get("sibling", 0) and s.get("delta") is not None), None)
        if twin is not None:
            return f"rejected: sibling {twin['sibling']} produced the same genome first"
        if a.get("genome_hash") in already:
            where = "in the pool" if strategy == "population" else "scored in an earlier round"
            return f"rejected: this genome was already {where} (it adds nothing new)"
        if strategy == "pareto":
            return "rejected: not on the per-task Pareto front (another genome leads each of its tasks)"
        pool = _loads(a.get("pool_snapshot"), []) or []
        size = int((run.get("strategy_opts") or {}).get("pool", len(pool) or POOL_DEFAULT))
        last = composites.get(pool[-1]) if pool else None
        mine = a.get("composite")
        cut = (f" (composite {mine:.4f} < {last:.4f}, the pool's last)"
               if mine is not None and last is not None else "")
        return f"rejected: did not make the pool's top {size}{cut}"
    passed = _passes(a)
    if passed is False:
        return f"rejected: {gate} {_side(a, False)}"
    evaluated = [s for s in siblings if s.get("delta") is not None and s.get("composite") is not None]
    if strategy == "branching" and len(evaluated) > 1:
        best = max(evaluated, key=lambda s: (s["composite"], -s.get("sibling", 0)))
        if best.get("sibling") != a.get("sibling"):
            if _passes(best) is False:
                return (f"rejected: sibling {best['sibling']} had the best composite but failed the gate, so "
                        "the round kept nothing")
            return (f"rejected: sibling {best['sibling']} was better (composite {best['composite']:.4f} vs "
                    f"{a['composite']:.4f}); {gate}")
    return f"rejected: {gate}"


def annotate(run: dict, rows: Sequence[dict], targets: Iterable[dict], *,
             composites: dict[str, float] | None = None) -> None:
    """Set `reason` on each target attempt. `rows` are every attempt of the run (round, sibling order) with at
    least the fields incumbents() reads plus delta and gate_threshold; targets carry critic/confirm too.
    `composites` is genome_composites(rows) when the caller has it already."""
    by_round: dict[int, list[dict]] = {}
    for r in rows:
        by_round.setdefault(r["round"], []).append(r)
    composites = genome_composites(rows) if composites is None else composites
    already: dict[int, set[str]] = {}   # only population and pareto reasons read what came before a round
    if run.get("strategy") == "population":   # what the pool held before the round
        pool: list[str] = []
        held: set[str] = set()
        for rnd in sorted(by_round):
            already[rnd] = held
            for r in by_round[rnd]:
                if r["verdict"] == "SEED" and r.get("genome_hash"):
                    pool = pool or [r["genome_hash"]]
            snapshot = next((r["pool_snapshot"] for r in by_round[rnd] if r.get("pool_snapshot")), None)
            pool = (_loads(snapshot, []) if snapshot else []) or pool
            if len(pool) != len(held) or not held.issuperset(pool):
                held = set(pool)      # rounds with the same pool share one set
    elif run.get("strategy") == "pareto":   # every genome scored before the round
        seen: set[str] = set()
        for rnd in sorted(by_round):
            already[rnd] = set(seen)
            seen.update(r["genome_hash"] for r in by_round[rnd]
                        if r.get("val_evaluation_id") and r.get("genome_hash"))
    by_key = {(r["round"], r.get("sibling", 0)): r for r in rows}
    none: set[str] = set()
    for a in targets:
        # light fields a target may lack (a run detail's attempts carry no pool snapshot)
        full = a if "pool_snapshot" in a else {**by_key.get((a["round"], a.get("sibling", 0)), {}), **a}
        a["reason"] = reason(full, run, by_round.get(a["round"], [full]), composites,
                             already.get(a["round"], none))


FILL_COLUMNS = ("id, round, sibling, genome_hash, verdict, status, composite, delta, gate_threshold, "
                "val_evaluation_id, pool_snapshot, error, critic, "
                "confirm, json_extract(gate, '$.keep') as gate_keep")


def fill(db: sqlite_utils.Database) -> None:
    """Store every decided attempt's reason and each decided round's incumbent, as
    the dashboard derived them."""
    for run in [dict(r) for r in db["runs"].rows]:
        run["strategy_opts"] = _loads(run.get("strategy_opts"), {}) or {}
        cursor = db.conn.execute(f"select {FILL_COLUMNS} from attempts "
                                 "where run_id = ? order by round, sibling",
                                 [run["id"]])
        names = [d[0] for d in cursor.description]
        rows = [dict(zip(names, r)) for r in cursor.fetchall()]
        decided = [dict(r) for r in rows if r["verdict"] is not None]
        annotate(run, rows, decided)
        for r in decided:
            db.conn.execute("update attempts set reason = ? where id = ?", [r["reason"], r["id"]])
        done = run.get("rounds_done") or 0
        for rnd, incumbent in incumbents(run, rows).items():
            if rnd <= done:
                # an unfinished round's incumbent is stored by the loop when it integrates the round
                db.conn.execute("update attempts set incumbent_after = ? where run_id = ? and round = ?",
                                [incumbent, run["id"], rnd])
