"""What the host did around each trial: how long each poller waited for its core (interference), the cores' and
processes' telemetry, and whether the pinned cores share a physical core (coreprobe)."""
