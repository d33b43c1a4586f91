"""Trigger suite grader: every finished cell scores 1; only whether the skill was loaded (score.wTrigger) counts.

Usage: python run-eval.py <cell_dir> <task_id>   (cwd = the suite dir). Stdlib only.
"""
import json

print(json.dumps({"finished": 1.0}))
