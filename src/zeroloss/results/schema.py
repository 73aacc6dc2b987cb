"""The shape of result and campaign files, checked once when a file is read (JSON Schema, Draft 2020-12).

Each schema covers every field its readers index, with the type they use it as, so that a damaged or hand-edited
file is refused in one line naming the file and the field (`results/x.json: searches[0].trials[3].outcome: is not
an object`) instead of failing somewhere inside a report:

- FILE: what every result file holds (read_result's default; `zeroloss run --resume` continues it).
- RUN, CAMPAIGN: a run document and a campaign file as `zeroloss report`, `compare` and `export` read them (the
  results table, verdict, HTML report and plots, the loss ledgers of the report's failed trials).
- EXPLAIN: a run or campaign document as `zeroloss explain` reads it (searches, trials, counters, paths).
- RESUME_CAMPAIGN, DEFINITION: a campaign file to continue, and a campaign definition (YAML file or stored).

Format versions 1, 2 and 3 share one shape (version 3 stores a histogram's buckets as one text, `bins`, and a
trial that lost nothing without counters, state and telemetry: all optional here); version 2 added per trial
`counters`, `ledger`, `diagnosis` and `dut_state` and per search `paths` and `ledger_context`, all optional here
and checked when present; the per direction `ledger` summary has other keys in each version (both are objects of
numbers).
Numbers are finite and at most 2**64 in size, whole numbers are never floats or booleans: a reader may use any of
them as a list index, a dict key, or in arithmetic. Depth and text are checked for the whole document (plain()).
"""

from __future__ import annotations

import json
import math
import re
import reprlib
from typing import Any

from jsonschema import Draft202012Validator, validators
from jsonschema.exceptions import ValidationError, best_match

from zeroloss.core.errors import ZeroLossError
from zeroloss.results.records import FINGERPRINT_KEYS, READABLE

LIMIT = 2**64  # no counter or rate of a real file comes near it; beyond it floats lose whole numbers
MAX_DEPTH = 64  # real files nest 12 levels deep; every reader recurses far less than Python allows


def _is_int(_checker: Any, x: Any) -> bool:
    return type(x) is int and -LIMIT <= x <= LIMIT


def _is_number(_checker: Any, x: Any) -> bool:
    return _is_int(_checker, x) or type(x) is float and math.isfinite(x) and abs(x) <= LIMIT


_Validator = validators.extend(Draft202012Validator, type_checker=Draft202012Validator.TYPE_CHECKER.redefine_many(
    {"integer": _is_int, "number": _is_number}))  # type: ignore[no-untyped-call]

# building blocks
INT = {"type": "integer"}
INDEX = {"type": "integer", "minimum": 0}
NUM = {"type": "number"}
STR = {"type": "string"}
BOOL = {"type": "boolean"}
OBJ = {"type": "object"}
LIST = {"type": "array"}
ONE_LINE = {"pattern": r"^[^\x00-\x1f\x7f]*$", "description": "one line of text"}  # text, when it is text
LINE = {"type": "string", **ONE_LINE}
HEX_MASK = {"type": "string", "pattern": r"^(0[xX])?[0-9a-fA-F]{1,256}$", "description": "a hex CPU mask"}
_MIX = r"imix(:[0-9]{1,9}:[0-9]{1,9}(,[0-9]{1,9}:[0-9]{1,9})*)?"  # an IMIX's label (core/frames.py)
FRAME_KEY = {"pattern": rf"^([0-9]{{1,9}}|{_MIX})$", "description": "a frame size in bytes, or an IMIX's label"}
FRAME = {"type": ["integer", "string"], "pattern": rf"^{_MIX}$", "description": "an IMIX's label"}  # pattern: text only
# vhost per-queue counters are named rx_q<N>_good_packets: the queue number is read from the name
QUEUE_KEY = {"pattern": r"^(?:(?![rt]x_q).*|[rt]x_q(?!.*_good_packets$).*|[rt]x_q[0-9]{1,9}_good_packets)$",
             "description": "a counter name ([rt]x_q<N>_good_packets with a queue number N)"}


def obj(props: dict[str, Any] | None = None, required: tuple[str, ...] = (), values: dict[str, Any] | None = None,
        **more: Any) -> dict[str, Any]:
    """An object with typed properties (others allowed), required ones, and optionally a type for every value."""
    return {"type": "object", **({"properties": props} if props else {}),
            **({"required": list(required)} if required else {}),
            **({"additionalProperties": values} if values is not None else {}), **more}


def arr(items: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {"type": "array", "items": items, **more}


def maybe(s: dict[str, Any]) -> dict[str, Any]:
    """s, or null (a reader that does `x.get(k) or {}` takes both)."""
    return {**s, "type": [s["type"], "null"]}


def _when(key: str, value: Any, then: dict[str, Any]) -> dict[str, Any]:
    return {"if": {"properties": {key: {"const": value}}, "required": [key]}, "then": then}


# a search's result: NDR and PDR, validation, latency at NDR
VALIDATION = obj({"index": INT, "lost": NUM, "tx": NUM, "loss_ratio": NUM}, ("index", "lost", "tx"))
GOAL = obj({"rate_pps": maybe(NUM), "lower_pps": maybe(NUM), "upper_pps": maybe(NUM), "line_rate_pct": maybe(NUM),
            "l1_gbps": maybe(NUM), "l2_gbps": maybe(NUM), "loss_pct": maybe(NUM), "validation": maybe(VALIDATION)})
RESULT = obj({"flags": arr(STR), "ndr": GOAL, "pdr": maybe(GOAL),
              "ndr_latency_ns": maybe(obj({k: NUM for k in ("p50", "p99", "max")}, ("p50", "p99", "max")))},
             ("flags", "ndr"))

# a trial: what the search saw, per direction, and (version 2) every stage's counters
when_count_zero: dict[str, Any] = {"if": {"properties": {"count": {"const": 0}}},
                                   "else": {"required": ["count", "mean"]}}
LATENCY = maybe(obj({k: NUM for k in ("count", "mean", "min", "max", "p50", "p90", "p99", "p99_9", "p99_99")},
                    **when_count_zero))
# a merged latency histogram (zeroloss.core.latency): its summary and its non-empty buckets, as one text (`bins`,
# format 3) or [low ns, count] pairs (`buckets`, format 2). The buckets are not walked here: a histogram is read
# by Histogram.from_json, which checks them (a damaged one is left out, merged_hist), and thousands of buckets per
# trial made the schema walk most of a report's time
BINS = {"type": "string", "pattern": r"^([0-9]+:)?[0-9]+(,([0-9]+:)?[0-9]+)*$|^$|^z:[A-Za-z0-9+/]+=*$",
        "description": "latency bins (COUNT or GAP:COUNT, comma-separated; past 1 KB deflated, 'z:' and base64)"}
HIST = maybe(obj({"count": INDEX, "min": NUM, "max": NUM, "mean": NUM, "bins": BINS, "buckets": LIST},
                 ("count", "min", "max"), anyOf=[{"required": ["bins"]}, {"required": ["buckets"]}]))
DIRECTION = obj({"port": INT, "rx_port": INT, "latency_ns": LATENCY, "latency_hist": HIST,
                 "ledger": maybe(obj(values=NUM))},
                ("port", "rx_port"))
OUTCOME = obj({"directions": arr(obj({"tx": NUM, "rx": NUM, "achieved_pps": NUM}, ("tx", "rx")))}, ("directions",))
# a stage that did not answer has an empty row: the ledger skips it
NONEMPTY_NEEDS: dict[str, Any] = {"if": {"minProperties": 1}}
PROC_PORT = maybe(obj({k: NUM for k in ("ipackets", "opackets", "imissed", "ierrors", "rx_nombuf")} |
                      {"q_ipackets": arr(NUM)}, then={"required": ["ipackets", "opackets"]}, **NONEMPTY_NEEDS))
GEN_DIR = obj({}, ("offered", "refused", "rx_unique"), values=NUM)
COUNTERS = obj({
    "gen": maybe(obj({"dirs": maybe(obj(values=GEN_DIR)), "ports": maybe(arr(obj(values=NUM))),
                      "window_s": maybe(NUM)})),
    "ovs": maybe(obj({"ports": maybe(obj(values=obj(values=NUM, propertyNames=QUEUE_KEY))),
                      "meters": maybe(obj(values=maybe(obj({"dropped": NUM}, ("dropped",))))),
                      "coverage": maybe(obj(values=NUM)),
                      "pmds": maybe(obj(values=obj(values=NUM))),  # pmd-stats-show's counters: all numbers
                      "t_ns": maybe(NUM)})),
    "procs": maybe(obj(values=maybe(arr(PROC_PORT))))})
DUT_STATE = maybe(obj({"pmd_rxq_show": maybe(STR), "dpctl_show": maybe(STR),
                       "mempools": maybe(obj(values=obj({"size": maybe(NUM)}))),
                       "meters": maybe(obj(values=maybe(OBJ)))}))
DROP = obj({"reason": STR, "frames": NUM, "counter": STR}, ("reason", "frames", "counter"))
STORED_HOP = obj({"name": STR, "where": STR, "in": maybe(NUM), "out": maybe(NUM), "drops": arr(DROP),
                  "extra": arr(DROP), "unexplained": maybe(NUM), "counters": BOOL,
                  "evidence": maybe(obj({"rx_queues": arr(NUM), "tx_queues": arr(NUM), "q_ipackets": arr(NUM),
                                         "tx_retries": NUM}))},
                 ("name", "in", "out", "drops", "extra", "unexplained", "counters"))
STORED_LEDGER = obj({"direction": STR, **{k: NUM for k in ("sent", "received", "lost", "counted", "unexplained")},
                     "hops": arr(STORED_HOP)},
                    ("direction", "sent", "received", "lost", "counted", "unexplained", "hops"))
FINDING = obj({"hop": STR, "where": STR, "reason": STR, "frames": NUM, "share_pct": NUM, "cause": STR,
               "evidence": arr(STR), "remedies": arr(STR)},
              ("hop", "reason", "frames", "share_pct", "cause", "evidence", "remedies"))
# the DUT host's telemetry over a trial (drivers/probe/telemetry.py): per core its ticks by kind and interrupts per
# source, per process its page faults, per OVS PMD its iterations and cycles
TELEMETRY = maybe(obj({"window_s": NUM, "user_hz": INT,
                       "cores": arr(obj({"core": INT, "ticks": obj(values=NUM), "irqs": obj(values=NUM)},
                                        ("core", "ticks"))),
                       "procs": arr(obj({"pid": INT, "minflt": NUM, "majflt": NUM}, ("pid", "minflt", "majflt"))),
                       "pmds": obj(values=OBJ)}, ("window_s", "cores")))
TRIAL = obj({"index": INT, "kind": STR, "verdict": STR, "goal": STR, "rate_pps": NUM, "duration_s": NUM,
             "reason": maybe(LINE), "aim_pps": maybe(NUM),
             "loss_ratio": NUM, "outcome": OUTCOME, "directions": arr(DIRECTION), "counters": COUNTERS,
             "dut_state": DUT_STATE, "ledger": arr(STORED_LEDGER), "diagnosis": arr(FINDING), "telemetry": TELEMETRY},
            ("index", "kind", "verdict", "rate_pps", "duration_s", "loss_ratio", "outcome"))
# a trial as every search's trials are checked (SEARCH): its counters and the DUT's state as objects. Only explain
# reads them, of the trials it analyses, and checks those against TRIAL (check_trial): walking them in every trial
# was most of a report's time once histograms were one text
TRIAL_READ = {**TRIAL, "properties": {**TRIAL["properties"], "counters": maybe(OBJ), "dut_state": maybe(OBJ)}}

# latency vs load: fixed-rate trials at shares of the NDR after the search
LOAD_TRIAL = obj({"load_pct": NUM, "rate_pps": NUM, "duration_s": NUM,
                  "directions": arr(obj({"tx": NUM, "rx": NUM, "latency_ns": LATENCY, "latency_hist": HIST},
                                        ("tx", "rx")))},
                 ("load_pct", "rate_pps", "duration_s", "directions"))

# back-to-back frames (RFC 9004) of a frame size: its searches' bursts and the benchmark
B2B = obj({"repeats_wanted": INT, "max_frames": INT, "mean": maybe(NUM), "implied_buffer_s": maybe(NUM),
           "corrected_buffer_s": maybe(NUM), "burst_rate_pps": maybe(NUM), "throughput_pps": maybe(NUM),
           "repeats": arr(obj({"longest": INT, "at_limit": BOOL, "fail_ledger": maybe(arr(STORED_LEDGER)),
                               "fail_diagnosis": maybe(arr(FINDING)),
                               "bursts": arr(obj({"frames": INT, "sent": NUM, "lost": NUM, "rate_pps": NUM},
                                                 ("frames", "sent", "lost")))},
                              ("longest", "bursts")))},
          ("repeats_wanted", "repeats"))

# a search's paths (version 2): the hops each direction crosses, and what each kind of hop reads
when_gen: dict[str, Any] = {"if": {"required": ["gen"]}, "else": {"required": ["proc", "in", "out", "label"]}}
SENDER = obj({"gen": INT, "proc": STR, "in": INDEX, "out": INDEX, "label": STR},
             dependentRequired={"proc": ["label"]},
             **when_gen)
HOP_NEEDS = {"gen_tx": ("side",), "ovs_rx": ("ports", "sender"), "ovs_switch": ("in_ports", "out_ports"),
             "ovs_tx": ("ports",), "proc_rx": ("proc", "port", "label"),
             "proc_tx": ("proc", "in_port", "out_port", "label"), "gen_rx": ("side", "from"),
             # an SR-IOV VF as its PF counts it (drivers/lab/labsriov.py): counters['vfs'][vf], 'a+b' for pairs in
             # parallel
             "vf_rx": ("vf", "label"), "vf_tx": ("vf", "label")}
PATH_HOP = obj({"kind": STR, "name": STR, "where": STR, "side": INT, "from": INT, "port": INDEX, "in_port": INDEX,
                "out_port": INDEX, "ports": arr(STR, minItems=1), "in_ports": arr(STR, minItems=1),
                "out_ports": arr(STR), "meter": maybe(STR), "proc": STR, "label": STR, "sender": SENDER,
                "vf": STR},
               ("kind", "name"), allOf=[_when("kind", k, {"required": list(v)}) for k, v in HOP_NEEDS.items()])
PATH = obj({"direction": STR, "tx_side": INT, "rx_side": INT, "hops": arr(PATH_HOP, minItems=1)},
           ("direction", "tx_side", "rx_side", "hops"))
LEDGER_CONTEXT = maybe(obj({"pmd_cpu_mask": maybe(HEX_MASK), "queues": maybe(INT), "vnf_ring": maybe(INT),
                            "vnfs": arr(STR)}))

SEARCH = obj({"frame": FRAME, "repeat": INT, "link": STR, "line_rate_pps": {"type": "number", "minimum": 1},
              "ceiling_pps": maybe(NUM), "max_rate_pps": maybe(NUM), "trials": arr(TRIAL_READ), "result": maybe(RESULT),
              "paths": maybe(arr(PATH)), "ledger_context": LEDGER_CONTEXT,
              "warmup": maybe(obj({"rate_pps": NUM, "duration_s": NUM, "outcome": OUTCOME})),
              "latency_loads": maybe(arr(LOAD_TRIAL)), "b2b": maybe(B2B)},
             ("frame", "repeat", "trials"))

# a run document as the report, compare and export read it
CONFIG = obj({"link_speed_gbps": NUM, "ndr_loss_pct": NUM, "pdr_loss_pct": NUM, "frame_sizes": arr(FRAME),
              "topology": STR, "dut_rxq": INT, "require_ndr": maybe(obj(values=NUM, propertyNames=FRAME_KEY))},
             ("link_speed_gbps", "ndr_loss_pct", "pdr_loss_pct"))
HOST = obj({k: ONE_LINE for k in FINGERPRINT_KEYS})  # named in one-line messages
PLACEMENT = obj({"flows": maybe(obj(values=arr(STR)))})
CEILING = obj({"pps": NUM, "link": STR, "how": STR}, ("pps",))
CORE_PROBE = obj({"frames": arr(FRAME), "cores": arr(INT), "ratio": arr(NUM), "shared": BOOL},
                 ("frames", "cores", "ratio", "shared"))
RUN = obj({"version": {"enum": list(READABLE)}, "state": STR, "config": CONFIG, "host": HOST,
           "placement": maybe(obj(values=PLACEMENT)),
           "ceilings": maybe(obj(values=CEILING, propertyNames=FRAME_KEY)), "warnings": maybe(arr(STR)),
           "core_probes": maybe(arr(CORE_PROBE)),
           "searches": arr({"allOf": [SEARCH, {"required": ["link", "line_rate_pps"]}]})},
          ("config", "host", "searches"))
CASE_NAME = {"name": LINE}
CAMPAIGN = obj({"cases": arr(obj({**CASE_NAME, "run": maybe(RUN)}, ("name",)))})
# a tune file: a campaign with the steps of `zeroloss tune` (runs/tune/loop.py), as its readers index them
TUNE_STEP = obj({"name": STR, "change": maybe(OBJ), "settings": maybe(OBJ), "stats": maybe(obj(values=OBJ)),
                 "decision": maybe(OBJ)}, ("name",))
TUNE = obj({"tune": obj({"target": LIST, "steps": arr(TUNE_STEP), "base": maybe(OBJ), "current": maybe(OBJ),
                         "current_step": maybe(STR), "stop": maybe(STR), "skipped": LIST,
                         "advice": LIST, "node": maybe(OBJ)}, ("steps", "target"))})

# what every result file holds, whatever reads it
FILE_FIELDS = {"state": STR, "config": OBJ, "host": HOST, "placement": OBJ, "ceilings": OBJ, "warnings": LIST,
               "searches": arr(obj({"frame": FRAME, "repeat": INT, "trials": arr(OBJ)}, ("frame", "repeat", "trials")))}
FILE = obj(FILE_FIELDS, ("config", "host", "searches"))

# `zeroloss explain`: a run document's searches, or every measured case's of a campaign
EXPLAIN_RUN = obj({"searches": arr(SEARCH)})
EXPLAIN = {"if": {"properties": {"format": {"const": "zeroloss-campaign"}}, "required": ["format"]},
           "then": obj({"cases": arr(obj({**CASE_NAME, "run": maybe(EXPLAIN_RUN)}, ("name",)))}),
           "else": EXPLAIN_RUN}

# a campaign definition (YAML file, or kept in the campaign file for --resume)
DEFINITION = obj({"name": LINE, "description": maybe(STR), "base": maybe(OBJ),
                  "cases": maybe(arr(obj({**CASE_NAME, "set": maybe(OBJ)}))), "cross": maybe(obj(values=LIST)),
                  "columns": maybe(arr(STR))})
RESUME_CAMPAIGN = obj({"state": STR, "host": HOST, "definition": {"allOf": [DEFINITION, {"required": ["name"]}]},
                       "overrides": OBJ,
                       "cases": arr(obj({**CASE_NAME, "run": maybe(obj(FILE_FIELDS, ("config", "host", "searches",
                                                                                      "state")))}, ("name",)))},
                      ("state", "host", "definition", "overrides", "cases"))

_validators: dict[int, Any] = {}


def check(doc: Any, schema: dict[str, Any], source: object) -> Any:
    """doc when it has the schema's shape, else a ZeroLossError naming source, the field and what is wrong."""
    v = _validators.get(id(schema))
    if v is None:
        v = _validators[id(schema)] = _Validator(schema)
    error = best_match(v.iter_errors(doc))
    if error is None:
        return doc
    where, what = describe(error)
    raise ZeroLossError(f"{shown(source)}: {where + ': ' if where else ''}{what}")


TYPE_NAMES = {"object": "an object", "array": "a list", "string": "a string", "integer": "a whole number",
              "number": "a number", "boolean": "true or false", "null": "null"}


def kind(x: Any) -> str:
    """What a value read from JSON or YAML is, in words."""
    if x is None:
        return "null"
    if isinstance(x, bool):
        return "true or false"
    if isinstance(x, int):
        return "a whole number" if abs(x) <= LIMIT else "a whole number out of range"
    if isinstance(x, float):
        return repr(x) if not math.isfinite(x) else "a number" if abs(x) <= LIMIT else "a number out of range"
    names: dict[type, str] = {str: "a string", list: "a list", dict: "an object"}
    return names.get(type(x), type(x).__name__)


_repr = reprlib.Repr()
_repr.maxstring = _repr.maxother = 40


def short(x: Any) -> str:
    """A value as it would be written, cut short, on one line."""
    return _repr.repr(x)


def field(path: Any) -> str:
    """A JSON path as written in messages: searches[0].trials[3].outcome."""
    out = ""
    for p in path:
        if isinstance(p, int):
            out += f"[{p}]"
        elif re.fullmatch(r"[A-Za-z0-9_/-]+", p):
            out += ("." if out else "") + p
        else:
            out += f"[{p!r}]"
    return out


def describe(e: ValidationError) -> tuple[str, str]:
    """(field, fault) of a schema error, in words."""
    where, v = field(e.absolute_path), e.validator
    x: Any = e.instance
    value: Any = e.validator_value  # jsonschema types these as possibly unset; an error always has them
    sch: Any = e.schema
    if v == "type":
        want = value if isinstance(value, list) else [value]
        names = " or ".join(TYPE_NAMES[t] for t in want)
        return where, f"is not {names} (found {kind(x)})"
    if v == "required":
        missing = next(k for k in value if k not in x)
        return field([*e.absolute_path, missing]), "is missing"
    if v in ("enum", "const"):
        values = value if v == "enum" else [value]
        return where, f"is {short(x)}, not {' or '.join(short(a) for a in values)}"
    if v == "minimum":
        return where, f"is {short(x)}, must be at least {value}"
    if v == "minItems":
        return where, "is an empty list" if not x else f"has {len(x)} items, needs {value}"
    if v == "pattern":
        what = sch.get("description", f"of the form {value}")
        if "propertyNames" in e.relative_schema_path:
            return where, f"has a key {short(x)} that is not {what}"
        return where, f"is {short(x)}, not {what}"
    return where, " ".join(e.message.split())[:200]


def shown(source: object) -> str:
    """A file name as messages show it: on one line, whatever characters it has."""
    text = str(source)
    return text if text.isprintable() else repr(text)


def plain(doc: Any, source: object) -> Any:
    """doc when it nests at most MAX_DEPTH levels and all its text is valid Unicode (no lone surrogates, which a
    JSON file can spell as escapes but no output can print); walked without recursion. A document that surely has
    both (`_surely_plain`, a fraction of the time) is not walked value by value: only a fault is looked for."""
    if _surely_plain(doc):
        return doc
    stack: list[tuple[Any, tuple[Any, ...]]] = [(doc, ())]
    while stack:
        x, path = stack.pop()
        if len(path) > MAX_DEPTH:
            raise ZeroLossError(f"{shown(source)}: {field(path[:MAX_DEPTH])}: nested deeper than {MAX_DEPTH} levels")
        if isinstance(x, dict):
            for k, v in x.items():
                if isinstance(k, str) and not _valid_text(k):
                    raise ZeroLossError(f"{shown(source)}: {field(path) or 'a key'}: a key is not valid Unicode text")
                stack.append((v, (*path, k)))
        elif isinstance(x, list):
            stack.extend((v, (*path, i)) for i, v in enumerate(x))
        elif isinstance(x, str) and not _valid_text(x):
            raise ZeroLossError(f"{shown(source)}: {field(path)}: is not valid Unicode text (a lone surrogate)")
    return doc


def _surely_plain(doc: Any) -> bool:
    """Whether doc surely passes plain(): its containers nest less than MAX_DEPTH deep (only containers are
    walked) and its text encodes as UTF-8 (json's C encoder, then one encode: no lone surrogate anywhere)."""
    stack: list[tuple[Any, int]] = [(doc, 0)]
    while stack:
        x, depth = stack.pop()
        if depth >= MAX_DEPTH:
            return False
        for v in x.values() if isinstance(x, dict) else x if isinstance(x, list) else ():
            if isinstance(v, (dict, list)):
                stack.append((v, depth + 1))
    try:
        json.dumps(doc, ensure_ascii=False, check_circular=False).encode("utf-8")
    except (UnicodeEncodeError, TypeError, ValueError):
        return False
    return True


def _valid_text(s: str) -> bool:
    if s.isascii():
        return True
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
