"""Ledger arithmetic on recorded counter snapshots."""

from zeroloss.ledger import counter_delta, direction_ledger, queue_spread


def test_counter_delta_handles_scalars_and_queue_lists():
    before = {"ipackets": 10, "q_ipackets": [5, 5, 0], "name": "x"}
    after = {"ipackets": 110, "q_ipackets": [55, 45, 10], "name": "x"}
    assert counter_delta(after, before) == {"ipackets": 100, "q_ipackets": [50, 40, 10]}


def test_ledger_conserves_frames():
    led = direction_ledger(tx=1000, rx=900, dut_in={"ipackets": 980, "imissed": 20}, dut_out={"opackets": 900})
    assert led == {"tx": 1000, "rx": 900, "lost": 100, "wire_refused": 0, "dut_rx_missed": 20, "dut_dropped": 80,
                   "unexplained": 0}


def test_ledger_counts_wire_backpressure_as_dut_side_loss():
    led = direction_ledger(tx=1100, rx=1000, dut_in={"ipackets": 1000}, dut_out={"opackets": 1000}, refused=100)
    assert led["wire_refused"] == 100 and led["unexplained"] == 0


def test_ledger_shows_what_no_counter_explains():
    led = direction_ledger(tx=1000, rx=990, dut_in={"ipackets": 1000}, dut_out={"opackets": 1000})
    assert led["unexplained"] == 10 and led["dut_dropped"] == 0


def test_ledger_without_dut_counters():
    assert direction_ledger(10, 7, None, None) == {"tx": 10, "rx": 7, "lost": 3, "wire_refused": 0,
                                                   "unexplained": 3}


def test_queue_spread_warns_on_one_hot_queue():
    shares, warn = queue_spread([900, 50, 50, 0], 4)
    assert shares[0] == 0.9 and "RX queue 0 takes 90%" in warn
    shares, warn = queue_spread([500, 500], 2)
    assert shares == [0.5, 0.5] and warn is None
    assert queue_spread([100], 1) == ([1.0], None)
