"""Per-trial accounting along the bench path: where the frames of each direction went. Pure arithmetic."""

from __future__ import annotations

STAT_KEYS = ("ipackets", "opackets", "imissed", "ierrors", "oerrors", "rx_nombuf")


def counter_delta(after: dict, before: dict) -> dict:
    """Differences of DPDK ethdev counters, per-queue lists included (q_ipackets, q_opackets...)."""
    out: dict = {}
    for k, v in after.items():
        b = before.get(k)
        if isinstance(v, int) and isinstance(b, int):
            out[k] = v - b
        elif isinstance(v, list) and isinstance(b, list) and len(v) == len(b):
            out[k] = [x - y for x, y in zip(v, b, strict=True)]
    return out


def direction_ledger(tx: int, rx: int, dut_in: dict | None, dut_out: dict | None, refused: int = 0) -> dict:
    """Frames of one direction: offered by zlgen (tx, refused included), refused by a virtual wire
    whose DUT end was full (backpressure: on a NIC these would be RX ring drops), missed at the DUT's
    RX ring, dropped inside the DUT (received on its in-port, not sent on its out-port), received
    back, and what no counter explains (tx = rx + wire_refused + rx_missed + dut_dropped + unexplained)."""
    led = {"tx": tx, "rx": rx, "lost": tx - rx, "wire_refused": refused}
    if dut_in is None or dut_out is None:
        led["unexplained"] = tx - rx - refused
        return led
    missed = dut_in.get("imissed", 0) + dut_in.get("rx_nombuf", 0)
    dropped = dut_in.get("ipackets", 0) - dut_out.get("opackets", 0)
    led.update(dut_rx_missed=missed, dut_dropped=dropped, unexplained=tx - rx - refused - missed - dropped)
    return led


def queue_spread(q_counts: list[int], nb_queues: int) -> tuple[list[float], str | None]:
    """Share of each RX queue and a warning when one queue takes most of the traffic."""
    counts = q_counts[:nb_queues]
    total = sum(counts)
    if total == 0 or nb_queues < 2:
        return [1.0 if total else 0.0][:nb_queues], None
    shares = [c / total for c in counts]
    top = max(shares)
    if top > 0.8:
        q = shares.index(top)
        return shares, (f"RX queue {q} takes {top:.0%} of the traffic over {nb_queues} queues: flows do not "
                        f"spread; step more header fields (flow_fields) or use more flows")
    return shares, None
