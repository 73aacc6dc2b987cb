"""The first schema of the results history (issue 40): documents, runs, series, points, b2b, outages.

Revision ID: 0001
Revises: none
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def _id() -> sa.Column[int]:
    return sa.Column("id", sa.Integer, primary_key=True)


def _run_ref() -> sa.Column[int]:
    return sa.Column("run_id", sa.Integer, sa.ForeignKey("zl_runs.id", ondelete="CASCADE"), nullable=False,
                     index=True)


def upgrade() -> None:
    op.create_table(
        "zl_documents", _id(),
        sa.Column("sha256", sa.String(64), nullable=False, unique=True),
        sa.Column("identity", sa.String(64), nullable=False, unique=True),
        sa.Column("kind", sa.String(16), nullable=False), sa.Column("path", sa.Text, nullable=False),
        sa.Column("format_version", sa.Integer), sa.Column("state", sa.String(16)),
        sa.Column("created", sa.DateTime), sa.Column("updated", sa.DateTime),
        sa.Column("ingested", sa.DateTime, nullable=False))
    op.create_table(
        "zl_runs", _id(),
        sa.Column("document_id", sa.Integer, sa.ForeignKey("zl_documents.id", ondelete="CASCADE"), nullable=False,
                  index=True),
        sa.Column("seq", sa.Integer, nullable=False), sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("label", sa.Text, nullable=False), sa.Column("case_name", sa.Text),
        sa.Column("node", sa.Text, nullable=False, index=True), sa.Column("host_fp", sa.String(16)),
        sa.Column("started", sa.DateTime, index=True),
        *(sa.Column(name, sa.Text) for name in ("zeroloss_version", "zlgen_version", "dpdk_version", "ovs_version",
                                                "kernel", "topology", "dut")),
        sa.Column("settings", sa.JSON, nullable=False), sa.Column("verdict", sa.String(16)),
        sa.Column("state", sa.String(16)), sa.Column("trials", sa.Integer, nullable=False),
        sa.Column("discarded_share", sa.Float), sa.Column("tune_decision", sa.Text),
        sa.UniqueConstraint("document_id", "seq"))
    op.create_table(
        "zl_series", _id(),
        sa.Column("key", sa.String(64), nullable=False, unique=True), sa.Column("node", sa.Text, nullable=False),
        sa.Column("topology", sa.Text), sa.Column("frame", sa.String(32), nullable=False),
        sa.Column("settings", sa.JSON, nullable=False))
    op.create_table(
        "zl_points", _id(), _run_ref(),
        sa.Column("series_id", sa.Integer, sa.ForeignKey("zl_series.id"), nullable=False, index=True),
        sa.Column("frame", sa.String(32), nullable=False), sa.Column("searches", sa.Integer, nullable=False),
        sa.Column("ndr_pps", sa.Float), sa.Column("ndr_values", sa.JSON, nullable=False),
        sa.Column("ndr_sd", sa.Float), sa.Column("spread_pps", sa.Float), sa.Column("pdr_pps", sa.Float),
        sa.Column("line_rate_pct", sa.Float), sa.Column("verdict", sa.String(16)),
        sa.Column("generator_bound", sa.Boolean, nullable=False), sa.Column("flags", sa.JSON, nullable=False),
        sa.Column("trials", sa.Integer, nullable=False), sa.Column("discarded_share", sa.Float),
        *(sa.Column(f"lat_{p}_us", sa.Float) for p in ("p50", "p90", "p99", "p99_9", "max")),
        sa.UniqueConstraint("run_id", "frame"))
    op.create_table(
        "zl_b2b", _id(), _run_ref(),
        sa.Column("frame", sa.String(32), nullable=False), sa.Column("repeats", sa.Integer, nullable=False),
        sa.Column("mean_frames", sa.Float), sa.Column("min_frames", sa.Integer), sa.Column("max_frames", sa.Integer),
        sa.Column("stdev_frames", sa.Float), sa.Column("implied_buffer_s", sa.Float),
        sa.Column("corrected_buffer_s", sa.Float), sa.Column("at_limit", sa.Boolean, nullable=False),
        sa.UniqueConstraint("run_id", "frame"))
    op.create_table(
        "zl_outages", _id(), _run_ref(),
        sa.Column("source", sa.String(8), nullable=False), sa.Column("event", sa.Text, nullable=False),
        sa.Column("repeat", sa.Integer, nullable=False), sa.Column("frame", sa.Integer, nullable=False),
        sa.Column("rate_pps", sa.Float), sa.Column("lost", sa.Integer, nullable=False),
        sa.Column("outage_ms", sa.Float), sa.Column("start_ms", sa.Float), sa.Column("end_ms", sa.Float),
        sa.Column("where", sa.Text))


def downgrade() -> None:
    for name in ("zl_outages", "zl_b2b", "zl_points", "zl_series", "zl_runs", "zl_documents"):
        op.drop_table(name)
