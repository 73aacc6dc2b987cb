"""Campaigns: a YAML file that lists or crosses sets of run settings; each set is one `zeroloss run`,
all of them in one result file with a combined table. Built-in campaigns are files in campaigns/."""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zeroloss import __version__
from zeroloss.core import yamlio
from zeroloss.core.codec import Json, JsonObject, Record
from zeroloss.core.config import RunConfig, stored, yaml_load
from zeroloss.core.errors import ZeroLossError
from zeroloss.core.fileio import now_iso, patch_state_in_place
from zeroloss.core.frames import by_size
from zeroloss.core.frames import legend as mix_legend
from zeroloss.core.frames import text as frame_text
from zeroloss.results import campaigns
from zeroloss.results.campaigns import CampaignRecord, CaseRecord, TuneRecord
from zeroloss.results.journal import Journal
from zeroloss.results.records import RunRecord
from zeroloss.results.resultfile import VERSION as RUN_VERSION
from zeroloss.results.resultfile import (
    ResultFile,
    check_same_host,
    new_document,
    read_json,
    records,
    resolve_own_link,
)
from zeroloss.targets import registry

FORMAT = "zeroloss-campaign"
VERSION = 1
BUILTIN = Path(__file__).parent / "campaigns"
HISTORY_KEY = "history"  # the history database the campaign file is stored in (cli/autoingest.py), not a setting
MAX_CASES = 10_000  # each case is a whole run (minutes): more is a mistake, and its list would not fit in memory


@dataclass(frozen=True, kw_only=True)
class CaseSpec(Record):
    """One case of a campaign definition: its name (the campaign's when it has none), its settings (key "set") and,
    when the key is there, why it is skipped."""

    name: str | None = None
    settings: JsonObject | None = field(default=None, metadata={"key": "set"})
    skip: Json = None

    @property
    def skipped(self) -> bool:
        return "skip" in (self.keys or ())


@dataclass(frozen=True, kw_only=True)
class Definition(Record):
    """A campaign definition (read(): the YAML file checked by schema.DEFINITION; the campaign file keeps its JSON):
    name, description, base settings, cases, the settings crossed with every case, the table's columns."""

    name: str = ""
    description: str | None = ""
    base: JsonObject | None = None
    cases: tuple[CaseSpec, ...] | None = None
    cross: dict[str, Json] | None = None
    columns: tuple[str, ...] = ()


@dataclass(frozen=True)
class Case:
    """One case of an expanded campaign: its name, settings and their checked config, or why it is skipped."""

    name: str
    settings: JsonObject
    config: RunConfig | None = None
    skip: Json = None
    skipped: bool = False


@dataclass(frozen=True, kw_only=True)
class _Head(Record):
    """What tells a campaign file this zeroloss can continue: its format and versions (and the definition in it)."""

    format: Json = None
    version: Json = None
    run_format_version: Json = None


def builtin_names() -> list[str]:
    return sorted(p.stem for p in BUILTIN.glob("*.yaml"))


def read(name_or_path: str) -> dict:
    """A campaign definition from a file, or by name from the built-in ones; checked (schema.DEFINITION)."""
    return read_definition(name_or_path)[0]


def read_definition(name_or_path: str) -> tuple[dict, Json]:
    """A campaign definition (read()) and the history database its file names (None when none): the file's
    `history` key, at the top or in `base` as a run's config file has it. That key is taken out of the definition,
    which the campaign file keeps: the database is not a run setting, and a URL's password stays out of results."""
    from zeroloss.results import schema

    path = Path(name_or_path)
    shown = schema.shown(path)
    try:
        if not path.exists():
            path = BUILTIN / f"{name_or_path}.yaml"
            if not path.exists():
                raise ZeroLossError(f"no campaign file or built-in campaign {schema.short(name_or_path)}",
                                    f"built-in: {', '.join(builtin_names())}")
        text = yamlio.read(path, "campaign")
    except (OSError, ValueError) as e:  # a name too long, a folder, a NUL byte
        raise ZeroLossError(f"cannot read campaign {shown}: {getattr(e, 'strerror', None) or e}") from e
    shown = schema.shown(path)
    spec = yaml_load(text, f"campaign {shown}")
    if not isinstance(spec, dict) or not isinstance(spec["cases"] if "cases" in spec else [], list):
        raise ZeroLossError(f"campaign {shown}: must be a mapping with a list of cases")
    for key in spec:
        if key not in ("name", "description", "base", "cases", "cross", "columns", HISTORY_KEY):
            raise ZeroLossError(f"campaign {shown}: unknown key {schema.short(key)}",
                                f"use name, description, base, cases, cross, columns, {HISTORY_KEY}")
    spec, history = _without_history(spec, f"campaign {shown}")
    named = spec if "name" in spec else {**spec, "name": path.stem}
    return schema.check(named, schema.DEFINITION, f"campaign {shown}"), history


def _without_history(spec: dict, shown: str) -> tuple[dict, Json]:
    """The definition less its `history` key (top level or base) and that key's value; both places naming
    different databases, or a case naming one (the database is the campaign's: it stores one file), is refused."""
    top = spec.get(HISTORY_KEY)
    base = spec.get("base")
    in_base = base.get(HISTORY_KEY) if isinstance(base, dict) else None
    if top is not None and in_base is not None and top != in_base:
        raise ZeroLossError(f"{shown}: history is given twice, {top!r} and in base {in_base!r}",
                            "name the database once")
    for case in spec.get("cases") or []:
        if isinstance(case, dict) and isinstance(case.get("set"), dict) and HISTORY_KEY in case["set"]:
            raise ZeroLossError(f"{shown}: case {case.get('name')!r} sets history: the campaign's file is stored "
                                "once, in one database", "put history: at the top of the campaign file")
    out = {k: v for k, v in spec.items() if k != HISTORY_KEY}
    if in_base is not None or (isinstance(base, dict) and HISTORY_KEY in base):
        out["base"] = {k: v for k, v in base.items() if k != HISTORY_KEY}
    return out, top if top is not None else in_base


def expand(spec: JsonObject, overrides: dict[str, Any]) -> list[Case]:
    """Every case of a definition (read(), or as a campaign file keeps it) crossed with every combination of
    `cross`: name, settings (checked), or skip reason."""
    d = Definition.from_json(spec)
    cross = d.cross or {}
    _check_count(d, [len(v) for v in cross.values()])
    combos = list(itertools.product(*cross.values())) if cross else [()]
    out = []
    for case in d.cases or (CaseSpec(name=d.name),):
        for combo in combos:
            name = case.name if case.name is not None else d.name
            extra = dict(zip(cross, combo, strict=True))
            if extra:
                name += " (" + ", ".join(f"{k}={v}" for k, v in extra.items()) + ")"
            if case.skipped:
                out.append(Case(name=name, settings={}, skip=case.skip, skipped=True))
                continue
            settings = {**(d.base or {}), **(case.settings or {}), **extra, **overrides}
            try:
                cfg = registry.load(None, settings)  # the settings and their kind of DUT checked
            except ZeroLossError as e:
                raise ZeroLossError(f"campaign case {name!r}: {e}") from e
            out.append(Case(name=name, settings=settings, config=cfg))
    return out


def _check_count(d: Definition, lengths: list[int]) -> None:
    """Refuses a campaign of more than MAX_CASES cases, counted before any is made (cases x every cross value)."""
    from zeroloss.results import schema

    cases = len(d.cases or [None])
    count = cases * math.prod(lengths)
    if count > MAX_CASES:
        crossed = " x ".join(map(str, lengths))
        raise ZeroLossError(f"campaign {schema.short(d.name)} makes {count:,} cases ({cases} case(s) x "
                            f"{crossed} cross values), more than the {MAX_CASES:,} zeroloss runs",
                            "cross fewer values, or split it into several campaigns")


class CampaignFile:
    """The campaign's result document, kept as a CampaignRecord; each case's run document lives inside it and saves
    it. The campaign definition and the --set overrides are kept in it, so that --resume needs nothing else.
    Readers read `record` (or `run_of`, `tune`); the campaign's own changes (`set_state`, `set_tune`) are written by
    the next `save` (results/campaigns.write), its runs' changes go through their ResultFile (`case`) and its
    journal."""

    def __init__(self, path: Path, rec: CampaignRecord):
        self.path = path
        self._rec = rec  # the cases whose runs are open below hold their runs as they were when opened
        self._open: dict[str, ResultFile] = {}  # the runs of the cases started or resumed here, by case
        self.journal = Journal(path, rec.journal_seq or 0)  # its runs' trials, appended (results/journal.py)

    @classmethod
    def create(cls, path: Path, spec: JsonObject, host: JsonObject, overrides: dict[str, Any]) -> CampaignFile:
        """A new campaign document (not written yet: the first `case` or `save` writes it)."""
        if path.exists():
            raise ZeroLossError(f"result file {path} exists", "pass --resume to continue it, or another --output")
        d = Definition.from_json(spec)
        return cls(path, CampaignRecord(format=FORMAT, version=VERSION, run_format_version=RUN_VERSION,
                                        zeroloss=__version__, name=d.name, description=d.description,
                                        columns=tuple(d.columns), created=now_iso(), state="running",
                                        host=host, definition=spec, overrides=overrides, cases=()))

    @classmethod
    def load(cls, path: Path, host: JsonObject) -> CampaignFile:
        """A cut campaign to continue: same format, same host, with its definition inside (schema.RESUME_CAMPAIGN)."""
        from zeroloss.results import schema

        path = resolve_own_link(Path(path))
        doc = read_json(path, "campaign file")
        head = _Head.from_json(doc) if isinstance(doc, dict) else _Head()
        if head.format != FORMAT:
            raise ZeroLossError(f"{path} is not a zeroloss campaign file",
                                "a single run's file is continued with 'zeroloss run --resume'")
        if head.version != VERSION or "definition" not in doc or head.run_format_version != RUN_VERSION:
            raise ZeroLossError(f"{path} was made by an older zeroloss (campaign format {head.version}, run "
                                f"format {head.run_format_version}): it cannot be continued",
                                "start the campaign again; report, compare and explain still read it")
        rec = records(CampaignRecord, schema.check(doc, schema.RESUME_CAMPAIGN, path), path)
        if rec.state == "complete":
            raise ZeroLossError(f"{path} is complete: nothing to resume")
        check_same_host(Path(path), rec.host or {}, host)
        cf = cls(Path(path), rec)
        cf.save()  # the journal folded in
        return cf

    @property
    def record(self) -> CampaignRecord:
        """The whole document as typed records (made at each call: its runs change through their ResultFile)."""
        if not self._open:
            return self._rec
        return self._rec.with_(cases=tuple(c.with_(run=self._open[c.name].run) if c.name in self._open else c
                                           for c in self._rec.cases))

    @property
    def tune(self) -> TuneRecord | None:
        """The tune section of a tune file (runs/tune/loop.py), None in a campaign's file."""
        return self._rec.tune

    def run_of(self, name: str) -> RunRecord | None:
        """The run of a case as typed records; None when no such case was started (or it was skipped)."""
        if name in self._open:
            return self._open[name].run
        entry = self._rec.case(name)
        return None if entry is None else entry.run

    def has_case(self, name: str) -> bool:
        return self._rec.case(name) is not None

    def to_json(self) -> JsonObject:
        """The whole document as JSON (a copy), e.g. to print it."""
        copy: JsonObject = json.loads(json.dumps(self.record.to_json()))
        return copy

    def set_state(self, state: str) -> None:
        """The campaign's state (running, complete, ...), written by the next save."""
        self._rec = self._rec.with_(state=state)

    def set_tune(self, tune: TuneRecord) -> None:
        """The tune section (runs/tune/loop.py keeps it as a record and stores each new one here), written by the next
        save."""
        self._rec = self._rec.with_(tune=tune)

    def save(self) -> None:
        """The whole campaign document, every journal line of its runs folded in; then the journal goes."""
        self._rec = self._rec.with_(updated=now_iso(), journal_seq=self.journal.seq)
        campaigns.write(self.path, self.record)
        self.journal.remove()

    def end(self, state: str) -> None:
        """The campaign's final state on an error or Ctrl-C; when the file cannot be rewritten (a full disk) it is
        patched in place where it fits, and no error replaces the one that ended the campaign."""
        previous = self._rec.state
        self.set_state(state)
        try:
            self.save()
        except ZeroLossError:
            patch_state_in_place(self.path, previous, state)

    def case(self, name: str, cfg: RunConfig | None, skip: str | None, host: JsonObject) -> ResultFile | None:
        """The run document of a case: the stored one when it was started before (to be resumed), a new one
        otherwise; None when the case is skipped or already complete."""
        entry = self._rec.case(name)
        if entry is not None:
            if name in self._open:  # asked again: the same run document
                return None if self._open[name].run.state == "complete" else self._open[name]
            if entry.run is None or entry.run.state == "complete":
                return None
            rf = self._open[name] = _Embedded(self, entry.run.with_(state="running").to_json(), name)
            return rf
        if skip:
            self._rec = self._rec.with_(cases=(*self._rec.cases, CaseRecord(name=name, skip=skip)))
            self.save()
            return None
        assert cfg is not None, "a case that is not skipped has its settings (expand)"
        self._rec = self._rec.with_(cases=(*self._rec.cases, CaseRecord(name=name)))
        rf = self._open[name] = _Embedded(self, new_document(cfg.to_dict(), host), name)
        self.save()
        return rf


class _Embedded(ResultFile):
    """A run document saved as part of its campaign's file."""

    def __init__(self, parent: CampaignFile, doc: JsonObject, case: str):
        super().__init__(parent.path, doc, parent.journal, case)
        self.parent = parent

    def save(self) -> None:
        self.parent.save()


def run_campaign(cf: CampaignFile, cases: list[Case], host: JsonObject,
                 run: Callable[[str, RunConfig, ResultFile], None]) -> None:
    """Runs every case not finished yet (a resumed campaign skips the complete ones, continues the cut one)."""
    for case in cases:
        rf = cf.case(case.name, case.config, case.skip, host)
        if rf is not None:
            run(case.name, stored(rf.run.config), rf)
    cf.set_state("complete")
    cf.save()


def campaign_table(camp: CampaignRecord) -> str:
    """One row per case: its distinguishing settings, then NDR as % of line rate and pps per frame size."""
    from zeroloss.results.fmt import table

    frames = by_size({s.frame for c in camp.measured() if c.run is not None for s in c.run.searches})
    cols = list(camp.columns or ())
    headers = ["case", *cols, *(f"{frame_text(f)} %  /  pps" for f in frames)]
    rows = []
    for c in camp.cases:
        if c.run is None:
            rows.append([c.name, *("-" for _ in cols), *(["n/a"] * len(frames))])
            continue
        cells = []
        for f in frames:
            s = c.run.search(f, 0)
            ndr = s.ndr if s is not None else None
            if ndr is not None and ndr.found:
                cells.append(f"{ndr.line_rate_pct:.2f}  /  {ndr.rate_pps:,.0f}")
            else:
                cells.append("-" if ndr is None else "none")
        rows.append([c.name, *(str(c.run.config.get(k)) for k in cols), *cells])
    notes = [f"  {c.name}: not possible here: {c.skip}" for c in camp.cases if c.skip]
    title = f"Campaign {camp.name}: NDR per direction, % of line rate / frames per second"
    return "\n".join([title, table(headers, rows), *notes, *mix_legend(frames)])
