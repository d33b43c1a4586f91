"""The dashboard: the aiohttp app, its read-only queries, the response cache, the store picker, files,
launches, and the after-the-run API.

May import: `mutator/config`, `mutator/store/`, `mutator/after/` (read models), `strategies/` (option
checks), and the pure `mutator/score` and `mutator/validity/stats` (Compare's paired test Δ). Reads the store read-only and starts runs as separate processes; never drives the loop.
"""
