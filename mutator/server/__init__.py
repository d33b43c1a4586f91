"""The dashboard: the aiohttp app, its pages laid out from the store's reads (every statement lives in
`mutator/store/queries/`; no SQL here), the response cache, the store picker, files, launches, and the
after-the-run API.

May import: `mutator/config`, `mutator/store/`, `mutator/after/` (read models), `strategies/` (option checks),
and the pure `mutator/score`, `mutator/validity/stats` and the read-only `mutator/validity/pairs` (Compare's
paired test Δ, shared with `run.py --compare`). Reads the store read-only and starts runs as separate
processes; never drives the loop.
"""
