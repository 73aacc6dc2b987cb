"""Each point keeps its search's resolution: the widest bracket (lowest failing pace less the NDR) its searches ended
with, frames/s. The nightly check needs it (history/trend.py): a drop narrower than the newer runs' bracket is no
evidence that the DUT forwards less. Points ingested before this revision have none (NULL).

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("zl_points") as batch:
        batch.add_column(sa.Column("resolution_pps", sa.Float))


def downgrade() -> None:
    with op.batch_alter_table("zl_points") as batch:
        batch.drop_column("resolution_pps")
