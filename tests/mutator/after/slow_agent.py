"""Test build agent: hangs on the tasks named in HANG_TASKS (comma list, or `*` for every task), otherwise
behaves exactly as fakes/fake_agent.py. Lets a test cancel a check with some cells scored and some not."""

import os
import runpy
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
hang = [t for t in os.environ.get("HANG_TASKS", "").split(",") if t]
if "*" in hang or any(f"{task}__r" in os.getcwd() for task in hang):
    print('{"type": "system", "subtype": "init"}', file=open(os.environ["SM_STREAM"], "a"), flush=True)
    while True:
        time.sleep(3600)
sys.argv = [str(ROOT / "fakes" / "fake_agent.py")]
runpy.run_path(str(ROOT / "fakes" / "fake_agent.py"), run_name="__main__")
