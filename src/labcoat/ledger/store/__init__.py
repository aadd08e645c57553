"""The ledger's storage: connections (SQLite or PostgreSQL), schema and migrations, hash chains,
blobs, the generic select, verification and read-only SQL. It knows nothing of the records."""
