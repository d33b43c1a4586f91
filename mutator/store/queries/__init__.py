"""The dashboard's reads: every SQL statement `mutator/server` runs, one module per subject (runs, attempts,
evaluations, cells, the gate, test runs, the watch, the spend axis, the live stream's signatures), each a
function from a read-only connection and plain parameters to rows as the pages use them, or small frozen
records.

May import: `mutator/store/` and `eval/` only, never `mutator/server` or another upper room. Never writes.
"""
