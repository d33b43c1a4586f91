"""Fixtures for after-the-run tests: a hand-built store (a run whose champion differs from its seed) and
the session's real dry run of the demo made by run.py (it proposes its champion when it finishes)."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from mutator.store.db import connect, now
from mutator.store.genome import GenomeStore

ROOT = Path(__file__).resolve().parents[3]
SEED = ROOT / "suites" / "csv-clean"


@pytest.fixture
def built(tmp_path: Path) -> dict:
    """data dir + a run `run-000000aaaaaa` (seed csv-clean, champion = seed + one line) + a deployed copy
    of the seed at skills/csv-clean with an extra non-genome file and an unusual file mode."""
    data = tmp_path / "data"
    db = connect(data / "mutator.db")
    genomes = GenomeStore(data, db)
    seed = genomes.put(SEED, parent_hash=None, skill_name="csv-clean")
    changed = tmp_path / "changed"
    shutil.copytree(SEED, changed)
    (changed / "SKILL.md").write_text((SEED / "SKILL.md").read_text() + "\nAlways keep the header row.\n")
    champion = genomes.put(changed, parent_hash=seed, skill_name="csv-clean")
    db["runs"].insert({"id": "run-000000aaaaaa", "kind": "evolve", "status": "finished", "seed_hash": seed,
                       "incumbent_hash": champion, "skill_name": "csv-clean", "val": "clean-val", "suite": "clean-train",
                       "cost_usd": 0.0, "created_at": now(), "updated_at": now()})
    db["attempts"].insert_all([
        {"run_id": "run-000000aaaaaa", "round": 0, "sibling": 0, "genome_hash": seed, "status": "seed",
         "verdict": "SEED", "val_evaluation_id": None, "composite": 0.40, "eval": 0.5},
        {"run_id": "run-000000aaaaaa", "round": 1, "sibling": 0, "genome_hash": champion, "parent_hash": seed,
         "status": "kept", "verdict": "KEEP", "composite": 0.55, "eval": 0.62, "delta": 0.15,
         "critic": '[{"gate": "changed", "verdict": "pass", "reason": ""}]'}])
    db.execute("update attempts set val_evaluation_id = 0")  # figures are read off attempts that were evaluated
    db.conn.commit()
    skills = tmp_path / "skills"
    skills.mkdir()
    target = skills / "csv-clean"
    shutil.copytree(SEED, target)
    (target / "notes.local").write_bytes(b"\x00\x01 not part of any genome\n")
    (target / "notes.local").chmod(0o600)
    return {"data": data, "db": db, "genomes": genomes, "seed": seed, "champion": champion, "target": target,
            "run_id": "run-000000aaaaaa"}


def snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under folder (junk included) -> (bytes, mode): what byte-identical means here."""
    return {p.relative_to(folder).as_posix(): (p.read_bytes(), p.stat().st_mode)
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="session")
def dry_run(demo_store) -> dict:
    """The session's real run.py dry run of the demo (tests/conftest.py: 6 rounds x 2 replicates, built once),
    which proposes its champion at the end. Tests only read it; one that writes takes a copy_store."""
    data, result = demo_store
    with sqlite3.connect(f"file:{data / 'mutator.db'}?mode=ro", uri=True) as conn:
        run_id = conn.execute("select id from runs").fetchone()[0]
    return {"data": data, "run_id": run_id, "stdout": result.stdout}
