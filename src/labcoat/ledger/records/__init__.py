"""The ledger's records: entries (hypotheses), runs, findings and events.

Each module holds a plain dataclass, the functions that append it inside a write transaction,
and the query that reads it back through :func:`labcoat.ledger.store.select.rows_where`.
"""
