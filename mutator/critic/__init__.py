"""The critic: deterministic guards a candidate must pass before any evaluation is spent (guards), what they
read in a skill's files (text), and `run.py --lint` over them (lint).

May import: `mutator.config`, `eval/` only. No LLM, no spend, no store.
"""
