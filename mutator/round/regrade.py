"""A suite change names itself before anything is spent, and a grader change re-grades the run's cells.

What the agent sees names the run (mutator/round/session.py): a grader-only change resumes the same run.
Its decided attempts keep their evaluations and figures (graded by the grader of their day, each still
re-derivable); before the next round every evaluation the run's genomes are scored by is made again
under the current grader from the agents' kept work (eval/kept.py), so no later figure mixes graders.
A change to what the agent sees starts a new run, and says so, naming the files.
"""

from __future__ import annotations

import itertools
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

from eval.kept import regradable
from eval.suite import Suite
from eval.suite_parts import changes, manifest
from mutator.round.eras import Decisions, as_stored, older
from mutator.round.session import Session, run_id_for
from mutator.round.waves import Evaluate
from mutator.store import cache
from mutator.store.attempts import scored
from mutator.store.db import loads
from mutator.store.runs import evolve_runs, runs_with_id, runs_with_identity


def manifests(suites) -> dict:
    """{role: manifest} of the run's train and val suites (`suites`: mutator.round.session.Suites)."""
    return {role: manifest(suite.path, suite.name, dict(suite.meta))
            for role, suite in (("suite", suites.train), ("val", suites.val))}


def changed_since(conn: sqlite3.Connection, run: dict | None, identity: dict, now: dict) -> list[str]:
    """What changed in the suites since `run` last ran (a resumed run), or since an earlier run of these
    settings (a new run, `run` None): one line per changed suite, said before anything is spent."""
    return _since_last(run, now) if run else [f"warning: {line}" for line in _since_new(conn, identity, now)]


def _since_last(run: dict, now: dict) -> list[str]:
    """A resumed run: its suites' files changed since it last ran (what the agent sees is the same, or it
    would be another run), so only grading changed. One line per changed suite; [] when none or unknown."""
    before = loads(run.get("suites"), {}) or {}
    said = []
    for role, after in now.items():
        if role in before and before[role].get("files") != after["files"]:
            said.append(f"suite {after['name']} changed since {run['id']} last ran: "
                        f"{', '.join(changes(before[role], after)) or 'its files'}. Grading only (what the "
                        f"agent sees is unchanged): the run resumes, and its cells are re-graded from their "
                        f"agents' kept work with no agent run again; decided rounds keep the figures of "
                        f"their grader")
    return said


def _since_new(conn: sqlite3.Connection, identity: dict, now: dict) -> list[str]:
    """A new run: an earlier run with these very settings and suite names but other suite contents means a
    suite changed since. One line per changed suite, naming its files; [] when there is no such run."""
    rest = json.dumps({k: v for k, v in identity.items() if k not in now}, sort_keys=True, default=str)
    for run_id, _seed, config, stored in evolve_runs(conn):
        earlier = json.loads(config or "{}")
        same_rest = json.dumps({k: v for k, v in earlier.items() if k not in now}, sort_keys=True,
                               default=str)
        if same_rest != rest or any((earlier.get(role) or [None])[0] != identity[role][0] for role in now):
            continue
        before = json.loads(stored or "{}")
        said = []
        for role, after in now.items():
            if earlier.get(role) == identity[role]:
                continue
            if role in before:
                files = ", ".join(changes(before[role], after)) or "its files"
                why = "what the agent sees changed, so this starts a new run"
            else:
                files = "(which files is not recorded: that run was stored before suites were)"
                why = "that run keyed its cells on the whole suite, so this starts a new run"
            said.append(f"suite {after['name']} changed since {run_id}: {files}; {why}. Restore the suite to "
                        f"resume {run_id}")
        if said:
            return said
    return []


def regrade_decided(session: Session, evaluate: Evaluate, suites) -> int:
    """Before the next round: every evaluation of the run's scored genomes that another grader graded is made
    again under the current one (the same cells; the agents' kept work re-graded, through the run's budget, by
    `evaluate`: the round's evaluator). `suites`: the run's Suites. Returns how many evaluations were
    re-made."""
    by_name: dict[str, Suite] = {suites.val.name: suites.val, suites.train.name: suites.train}
    seen: set[tuple[str, str]] = set()
    for a in scored(session.db, session.run_id):
        for evaluation_id in (a.val_evaluation_id, a.train_evaluation_id):
            row = cache.evaluation_row(session.db, evaluation_id) if evaluation_id is not None else None
            suite = by_name.get(row["suite"]) if row else None
            if suite is None or row["suite_hash"] == suite.content_hash \
                    or (a.genome_hash, suite.name) in seen \
                    or loads(row["contract"]) != session.contract.to_json():
                continue   # graded by today's grader, done already, or a confirmation's fresh replicates
            seen.add((a.genome_hash, suite.name))
            stored = cache.cell_rows(session.db, evaluation_id)
            cells = frozenset((c["task_id"], c["replicate"]) for c in stored)
            if not cells:
                continue
            lost = sum(c["status"] in ("ok", "grader_error")
                       and not regradable(Path(c["cell_dir"] or "/nowhere")) for c in stored)
            if lost:
                session.progress.say(f"  {a.genome_hash[:12]} on {suite.name}: {lost} of its cells kept no "
                                     f"agent outputs to grade again (stored by an older version), so they "
                                     f"run again")
            evaluate(a.genome_hash, suite, f"re-grade · round {a.round} · {a.genome_hash[:12]} on "
                     f"{suite.split}", None if row["status"] == "done" else cells)
    return len(seen)


def stored_run(session: Session, run_id: str, decisions: Decisions,
               identity: Callable[[Decisions, bool], dict]) -> tuple[list[dict], Decisions]:
    """The stored run a run whose id today (`run_id`) finds none resumes: by the id its identity gave it when
    last resumed (`identity_id`), or by an old id (`identity(decisions, by_content)`: one that hashed each
    suite's whole folder, or made before the run's decision settings existed: mutator/round/eras.py). Returns
    the run found ([] or one row) and the decisions it resumes with (those it was made with)."""
    found = runs_with_identity(session.db, run_id)
    for then, by_content in () if found else itertools.product((decisions, *older(decisions)), (False, True)):
        old = run_id_for(identity(then, by_content))
        found = found or ([] if old == run_id else runs_with_id(session.db, old))
    then = as_stored(decisions, loads(found[0]["config"], {})) if found else decisions
    if then is not decisions:
        session.progress.say(f"{found[0]['id']} was stored before {then.lacked}: it resumes as it was made "
                             f"({then.how})")
    return found, then
