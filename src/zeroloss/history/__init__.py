"""The results history (issue 40): every run of every node in one database (SQLite by default, PostgreSQL for a lab),
and the trend of each series found by FD.io CSIT's jumpavg. `zeroloss history` (cli/history.py) reads and writes it.

- models.py: the tables (SQLAlchemy 2); migrations/: their Alembic history, applied when a database is opened.
- db.py: a database URL opened as an engine, its schema brought up to date; faults as one line.
- source.py: a file of any kind read into its typed record (the results package's readers), its content hash.
- extract.py: a record as the rows the history keeps (pure).
- ingest.py: one file stored in one transaction, once.
- trend.py: the series, their groups of equal performance and the changes between them; the nightly check.
- text.py: trends and checks as text.
- pgtemp.py: a throw-away PostgreSQL 15 server (pg_ctl in a temporary folder) for the tests and the benchmark.
"""
