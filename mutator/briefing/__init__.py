"""What the mutator is shown: the briefing rendered from rows (render), the read-only evidence staged beside
its skill (evidence), their assembly from the store (view) and the meta skill's distilled lessons (meta).

May import: `mutator/scoring/`, `mutator/critic/` (the caps it states), `mutator/store/`, `mutator.config`,
`eval/`, `strategies/`, and the round's agent call (`mutator/round/mutate`) for the meta skill.
"""
