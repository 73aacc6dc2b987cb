"""The records report/ and cli/ read stored JSON parts through (report/docparts.py, cli/rxqplan.py): a part read and
written back is the same JSON (the soak page hands a loss event back to results/soak.outage_ms), an absent key reads
as its default, and a record built in code writes the keys, order and nulls the old literal dict had."""

from zeroloss.cli.rxqplan import VisitOrder
from zeroloss.report.canvas import Figure
from zeroloss.report.docparts import LabHostPlace, LabPlace, LossEvent, StepDecision, Told, given
from zeroloss.results.soak import outage_ms


def test_a_loss_event_reads_and_writes_back_the_same_json():
    ev = {"start_s": 2, "end_s": 3.5, "first": 1, "last": 2, "lost": 900, "directions": {"A->B": 600, "B->A": 300},
          "ledger": [{"direction": "A->B", "hops": []}], "window_s": 1.5, "read_slack": {"A->B": 3}}
    e = LossEvent.from_json(ev)
    assert e.to_json() == ev and list(e.to_json()) == list(ev)
    assert (e.start_s, e.end_s, e.lost, e.diagnosis) == (2, 3.5, 900, None)
    assert outage_ms(e.to_json(), 1e6) == outage_ms(ev, 1e6) == 0.6  # the worst direction at the offered rate


def test_absent_keys_read_as_the_defaults_the_pages_used():
    assert StepDecision.from_json({}).effect == "running" and StepDecision.from_json({}).why == ""
    assert Told.from_json({"other": 1}).ledger is None
    place = LabPlace.from_json({"dut": "compute-0", "ovs_version": None})
    assert given(place, "ovs_version") and not given(place, "lab_file")  # shown only where the file has it
    host = LabHostPlace.from_json({"host": "c0"})
    assert host.audit is None and not given(host, "error")
    assert given(LabHostPlace.from_json({"error": "ssh: timed out"}), "error")


def test_the_visit_order_writes_the_keys_order_and_nulls_of_before():
    doc = VisitOrder(ports=None, numas=(0, 1), hash_build="plain", hash_build_source="assumed", dp_ports=None,
                     assumptions=("x",)).to_json()
    assert doc == {"ports": None, "numas": [0, 1], "hash_build": "plain", "hash_build_source": "assumed",
                   "dp_ports": None, "assumptions": ["x"]}
    assert list(doc) == ["ports", "numas", "hash_build", "hash_build_source", "dp_ports", "assumptions"]


def test_a_drawing_call_keeps_every_keyword_and_types_those_the_renderer_reads():
    fig = Figure()
    ax = fig.add_subplot()
    a = ax.plot([1, 2], [3, 4], "--", color="#123456", linewidth=0.8, dash_capstyle="round", label="_hidden")
    assert a.kw == {"color": "#123456", "linewidth": 0.8, "dash_capstyle": "round", "label": "_hidden"}  # replay
    assert (a.style.color, a.style.linewidth, a.style.markersize, a.style.alpha) == ("#123456", 0.8, 6.0, 1.0)
    assert a.label is None  # matplotlib leaves a label starting with _ out of legends
    ax.legend(fontsize="x-small", ncols=2)
    ax.grid(axis="y", alpha=0.3)
    fig.suptitle("t", fontsize="medium")
    assert ax.legend_box is not None and (ax.legend_box.ncols, ax.legend_box.loc, ax.legend_box.entries) == (2, "", [])
    assert ax.grid_style is not None and (ax.grid_style.axis, ax.grid_style.which) == ("y", "major")
    assert fig.title is not None and (fig.title.text, fig.title.fontsize) == ("t", "medium")
