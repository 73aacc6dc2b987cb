"""RFC 9004 §6.3's trial count: the back-to-back search is repeated N times per frame size and N is reported; the
section sets no minimum (the "at least 50" is RFC 2544 §26.4's). The default (10) is argued in the
"Back-to-back frames (RFC 9004)" section (now docs/b2b.md) from what a search costs, and this test recomputes that
cost with the real search over the measured bursts, so the docs, the config help and the code cannot drift apart."""

import dataclasses
import re
from pathlib import Path

from zeroloss.core.config import RunConfig
from zeroloss.core.search.b2b import RFC2544_REPEATS, B2bConfig, Burst, idle_s, longest_burst

B2B_PAGE = Path(__file__).resolve().parent.parent / "docs" / "b2b.md"
# the ovs-p2p measurements (docs/benchmarks.md) (mean longest burst, zlgen's flat-out rate): 64, 1518 and 9000 B
MEASURED = ((42_096, 7.04e6), (1_430, 4.59e6), (1_102, 858e3))


def section_6_3() -> str:
    b2b = B2B_PAGE.read_text()
    return b2b.split("\n- §6.3:", 1)[1].split("\n- §6.4", 1)[0]


def search_cost(buffer: int, rate: float) -> tuple[int, float]:
    """Bursts and seconds of one search against a DUT that holds `buffer` frames (sending plus §6.2's idle)."""
    r = longest_burst(B2bConfig(max_frames=int(rate * 2.0)), lambda n: Burst(n, 0 if n <= buffer else 1, rate))
    return len(r.trials), sum(t.frames / rate + idle_s(t.frames, rate) for t in r.trials)


def test_default_and_help_follow_rfc9004_6_3():
    cfg = RunConfig()
    assert cfg.b2b_repeats == 10 and RFC2544_REPEATS == 50
    help_text = {f.name: f.metadata["help"] for f in dataclasses.fields(RunConfig)}["b2b_repeats"]
    for words in ("RFC 9004 §6.3", "reported", "no minimum", "RFC 2544 §26.4", "50", "docs/b2b.md"):
        assert words in help_text, help_text


def test_readme_argues_the_default_with_the_search_cost():
    text = " ".join(section_6_3().split())
    assert "`--b2b-repeats N`" in text and "default 10" in text and "no minimum" in text
    assert "RFC 2544 §26.4" in text and "`--b2b-repeats 50`" in text
    costs = [search_cost(b, r) for b, r in MEASURED]
    bursts = sorted(n for n, _ in costs)
    secs = sorted(s for _, s in costs)
    m = re.search(r"(\d+)–(\d+) bursts", text)
    assert m and (int(m[1]), int(m[2])) == (bursts[0], bursts[-1]), text
    m = re.search(r"(\d+)–(\d+) s per search", text)
    assert m and (int(m[1]), int(m[2])) == (int(secs[0]), round(secs[-1])), text
    m = re.search(r"(\d+)–(\d+) min per frame size at 10, (\d+)–(\d+) at 50", text)
    assert m and tuple(map(int, m.groups())) == (round(10 * secs[0] / 60), round(10 * secs[-1] / 60),
                                                 round(50 * secs[0] / 60), round(50 * secs[-1] / 60)), text
