"""Skill Mutator: the merged config here, and one room per concept of a round beside it:
`round/` (the loop and everything a round runs), `scoring/` (composite, gate, its scale and critical value,
several models), `critic/` (the deterministic guards and --lint), `briefing/` (what the mutator is shown),
`store/` (the database), `validity/`, `after/`, `mining/` and `server/` (built on the round).

May import: `eval/`, `strategies/`, `sandbox/`. Arrows point down: round -> briefing, critic, scoring ->
store.
"""
