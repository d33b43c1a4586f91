"""The dry run's fake build agent and its implementation id, one place for run.py (mutator/cli/agents.py)
and the dashboard's launch estimate (mutator/server/launch.py): the id hashes the script's bytes and, for the
noisy agent, its fitted parameters (never a path), so both name the same cells."""

from __future__ import annotations

import hashlib
from pathlib import Path

from mutator.config import ROOT


def fake_id(script: Path, tail: tuple[str, ...] = ()) -> str:
    extra = ("\n" + " ".join(tail)).encode() if tail else b""
    return f"fake@{hashlib.sha256(script.read_bytes() + extra).hexdigest()[:10]}"


def fake_builder(noise: str) -> tuple[Path, tuple[str, ...]]:
    """The build agent's script and command-line tail at this --fake-noise (off: fake_agent.py, no tail;
    realistic: noisy_agent.py with its parameters fitted in mutator/validity/rehearsal.py)."""
    if noise != "realistic":
        return ROOT / "fakes" / "fake_agent.py", ()
    from mutator.validity.rehearsal import realistic
    return ROOT / "fakes" / "noisy_agent.py", realistic().argv()
