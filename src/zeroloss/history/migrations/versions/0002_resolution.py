"""Each point keeps its search's resolution: the widest bracket (lowest failing pace less the NDR) its searches ended
with, frames/s. The nightly check needs it (history/trend.py): a drop narrower than the newer runs' bracket is no
evidence that the DUT forwards less. Points ingested before this revision have none (NULL). And an outage's lost
frames take 64 bits: a soak's link down for minutes at line rate loses more than 2**31 frames (PostgreSQL's INTEGER
refused them; SQLite's integers always had 64 bits).

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
    with op.batch_alter_table("zl_outages") as batch:
        batch.alter_column("lost", type_=sa.BigInteger, existing_type=sa.Integer, existing_nullable=False)


def downgrade() -> None:
    with op.batch_alter_table("zl_outages") as batch:
        batch.alter_column("lost", type_=sa.Integer, existing_type=sa.BigInteger, existing_nullable=False)
    with op.batch_alter_table("zl_points") as batch:
        batch.drop_column("resolution_pps")
