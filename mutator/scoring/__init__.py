"""Scoring: the composite (score), paired per-task deltas and the noise gate (gate), the gate's robust scale
(mad), its sign-flip critical value (signflip) and the per-model composite of several eval models (models).

May import: `mutator/store/` and `eval/` only; pure functions over rows, never an agent or a verdict store.
"""
