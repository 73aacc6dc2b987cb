"""Alembic's environment for the history's schema: run by db.upgrade on the connection it holds (its transaction
and, on PostgreSQL, its advisory lock), never from a command line of its own."""

from alembic import context

from zeroloss.history.db import VERSION_TABLE
from zeroloss.history.models import Base

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=Base.metadata, version_table=VERSION_TABLE,
                  render_as_batch=connection.dialect.name == "sqlite")
with context.begin_transaction():
    context.run_migrations()
