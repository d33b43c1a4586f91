"""A build agent that waits at a gate: it says it started (FAKE_GATE/started-<seed>-<pid>), waits until the test
opens its gate (go-<seed>) or every gate (go-all), then becomes the fake build agent. Lets a test know, without
timing, which cells are running at a moment (e.g. to kill a node while a cell runs on it)."""

import os
import sys
import time
from pathlib import Path

gate = Path(os.environ["FAKE_GATE"])
seed = os.environ["SM_CELL_SEED"]
(gate / f"started-{seed}-{os.getpid()}").touch()
while not ((gate / "go-all").exists() or (gate / f"go-{seed}").exists()):
    time.sleep(0.05)
fake = Path(__file__).resolve().parents[3] / "fakes" / "fake_agent.py"
os.execv(sys.executable, [sys.executable, str(fake)])
