"""The diagnosis's typed records, on the record codec (core/codec.py). Their JSON keys are the result files' keys,
written in the order the files have always had them.

A Finding is what the diagnosis says about the frames one hop lost for one reason (loss/diagnose.py), or about a
trial-wide risk that lost none itself (a PMD placement, a mempool OVS made smaller than asked: no counter).
"""

from __future__ import annotations

from dataclasses import dataclass

from zeroloss.core.codec import JsonObject, Record

# the key orders of findings the diagnosis has always written in another order than the fields'
_LINK_DOWN_KEYS = ("hop", "where", "reason", "frames", "counter", "remedies", "cause", "evidence", "share_pct")
_RISK_KEYS = ("hop", "where", "reason", "frames", "share_pct", "cause", "evidence", "remedies")


@dataclass(frozen=True, kw_only=True)
class Finding(Record):
    """One finding: the hop and what it is (where), the reason, the frames it explains and their share of the
    trial's lost frames (%), the counter that counted them, the cause, the evidence seen and the remedies."""

    hop: str
    where: str
    reason: str
    frames: int
    counter: str | None = None  # None: a trial-wide risk, no counter counted its frames
    cause: str
    evidence: tuple[str, ...] = ()
    remedies: tuple[str, ...] = ()
    share_pct: float = 0.0

    def to_json(self) -> JsonObject:
        doc = super().to_json()
        order = _LINK_DOWN_KEYS if self.reason == "link_down" else _RISK_KEYS if self.counter is None else None
        if order is None:
            return doc
        return {**{k: doc[k] for k in order if k in doc}, **{k: v for k, v in doc.items() if k not in order}}
