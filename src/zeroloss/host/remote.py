"""A remote host's inventory and audit over OpenSSH: collect.py runs there with one login (`python3 -`, the script on
stdin), its JSON document is materialised here as a tree like tests/fixtures/host/NAME, and the usual Root reads it.

materialise() is shared with the fleet run (fleet.py), which brings the same document back through Ansible.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import os
import shutil
import tempfile
from pathlib import Path

from zeroloss.core.codec import Json, Record
from zeroloss.core.errors import ZeroLossError
from zeroloss.core.fileio import write_new, write_text_atomic

from .ovsstate import CAPTURE, OvsState, from_outputs
from .ssh import SshTarget, python_argv
from .sysfs import Root

COLLECTOR = Path(__file__).with_name("collect.py")
FORMAT = 1
MARKER = ".zeroloss-capture.json"  # in a materialised tree: where it came from (and that it may be replaced)
REPORT_FORMAT = 1  # host_report(): 1 = {format, host, hostname, inventory, audit, notes, errors}


@dataclasses.dataclass(frozen=True, kw_only=True)
class CollectorDoc(Record):
    """collect.py's document (its docstring describes it): the host's files, links and directories under its root,
    the OVS commands' outputs, and what could not be read."""
    format: int | None = None
    hostname: str | None = None
    root: str | None = None
    files: dict[str, Json] = dataclasses.field(default_factory=dict)
    binary: dict[str, Json] = dataclasses.field(default_factory=dict)
    links: dict[str, Json] = dataclasses.field(default_factory=dict)
    dirs: Json = ()
    ovs: dict[str, Json] = dataclasses.field(default_factory=dict)
    ovs_note: str | None = None
    errors: Json = ()
    elapsed_s: Json = None


def collector_script() -> bytes:
    return COLLECTOR.read_bytes()


def run_collector(target: SshTarget, ovs_rundir: str | None = None, timeout: float = 120) -> CollectorDoc:
    """collect.py's document from the host, over exactly one ssh login; one-line ZeroLossError when it fails."""
    argv = python_argv("-", *(["--ovs-rundir", ovs_rundir] if ovs_rundir else []))
    try:
        out = target.run(argv, stdin=collector_script(), timeout=timeout)
    except ZeroLossError as e:
        if "python3" in e.message and ("not found" in e.message or "No such file" in e.message):
            raise ZeroLossError(f"{target.target} has no python3 for the collector",
                                "install python3 there (the collector needs only its standard library)") from None
        raise
    return parse(out, f"{target.target}")


def parse(out: bytes | str, where: str) -> CollectorDoc:
    """The collector's stdout -> its document, checked for the keys materialise() needs."""
    text = out.decode(errors="replace") if isinstance(out, bytes) else out
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError) as e:
        doc = _last_document(text)  # a login shell's noise before it (Ansible's -tt merges stderr into stdout)
        if doc is None:
            raise ZeroLossError(f"{where}: the collector printed no JSON document ({e}; starts {text[:60]!r})",
                                "run `python3 - < src/zeroloss/host/collect.py` there to see why") from None
    record = CollectorDoc.from_json(doc) if isinstance(doc, dict) else None
    if record is None or record.format != FORMAT:
        raise ZeroLossError(f"{where}: the collector's document is not format {FORMAT}",
                            "use the collect.py of this zeroloss version")
    for key, kind in (("files", dict), ("binary", dict), ("links", dict), ("dirs", list), ("ovs", dict),
                      ("errors", list)):
        if not isinstance(doc.get(key), kind):
            raise ZeroLossError(f"{where}: the collector's document has no {key} {kind.__name__}",
                                "use the collect.py of this zeroloss version")
    return record


def _last_document(text: str) -> dict | None:
    """The collector's one-line document when other lines surround it, or None."""
    for line in reversed(text.splitlines()):
        if line.startswith("{"):
            try:
                return json.loads(line)
            except (ValueError, RecursionError):
                return None
    return None


def _inside(rel: str, where: str) -> str:
    """rel as a safe path under the tree: relative, normalised, never '..'."""
    norm = os.path.normpath(rel) if isinstance(rel, str) and rel else ""
    if not norm or norm.startswith(("/", "..")) or norm == "." or "\0" in norm:
        raise ZeroLossError(f"{where}: the collector names the path {rel!r}, which is not inside the host's root",
                            "use the collect.py of this zeroloss version")
    return norm


def materialise(doc: CollectorDoc, dest: str | os.PathLike, where: str = "the collector") -> Path:
    """Write the document as a tree under dest (sys/, proc/, dev/, etc/, symlinks as the host has them, ovs/ with
    the CAPTURE files it holds). dest must be missing, empty, or a tree materialised before (which is replaced)."""
    dest = Path(dest)
    if dest.exists() and any(dest.iterdir()):
        if not (dest / MARKER).is_file():
            raise ZeroLossError(f"{dest} exists and is not a tree zeroloss materialised",
                                "give an empty or new directory")
        shutil.rmtree(dest)
    dest.mkdir(parents=True, exist_ok=True)
    if not doc.files:
        raise ZeroLossError(f"{where}: the collector read no file under /sys or /proc",
                            "is /sys mounted, and does the login run as root (sudo -n)?")
    for rel, text in doc.files.items():
        _write(dest, _inside(rel, where), str(text).encode("utf-8", "surrogateescape"))
    for rel, b64 in doc.binary.items():
        try:
            data = base64.b64decode(str(b64), validate=True)
        except ValueError:
            raise ZeroLossError(f"{where}: {rel} is not base64", "use this version's collect.py") from None
        _write(dest, _inside(rel, where), data)
    for rel in doc.dirs:
        path = dest / _inside(rel, where)
        if not os.path.lexists(path):
            path.mkdir(parents=True, exist_ok=True)
    for rel, target in sorted(doc.links.items()):  # last: no file is ever written through a link
        norm = _inside(rel, where)
        if not isinstance(target, str) or os.path.isabs(target):
            raise ZeroLossError(f"{where}: the link {rel} -> {target!r} is absolute", "use this version's collect.py")
        _inside(os.path.join(os.path.dirname(norm), target), where)  # the target stays in the tree
        path = dest / norm
        if os.path.lexists(path):
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, path)
    for name, text in doc.ovs.items():
        if name in CAPTURE and isinstance(text, str):
            _write(dest, f"ovs/{name}", text.encode())
    meta = {"source": where, "hostname": doc.hostname, "root": doc.root, "ovs_note": doc.ovs_note,
            "errors": doc.errors, "elapsed_s": doc.elapsed_s}
    write_text_atomic(dest / MARKER, json.dumps(meta, indent=1) + "\n")
    return dest


def _write(dest: Path, rel: str, data: bytes) -> None:
    """One file of the tree: new (the tree starts empty), never through a link, no fsync (rebuilt from its source)."""
    write_new(dest / rel, data)


def ovs_state(doc: CollectorDoc, where: str) -> tuple[OvsState | None, str]:
    """The OVS state in the document, as read_live() would have built it on the host; (None, why) when absent."""
    outputs = {name: text for name, text in doc.ovs.items() if name in CAPTURE and isinstance(text, str)}
    note = str(doc.ovs_note or "")
    if any(name not in outputs for name in CAPTURE if name != "pmd-rxq-show.txt"):  # as read_live(): all or none
        errors = [e for e in doc.errors if isinstance(e, str) and e.startswith("`ovs-")]
        return None, f"{where}: {errors[0] if errors else note or 'no OVS output'}: OVS rules skipped"
    try:
        state = from_outputs("live", outputs)  # its errors name the command, as on the host
    except ZeroLossError as e:
        raise ZeroLossError(f"{where}: {e.message}", e.remedy) from None
    # source stays 'live' (read live on the host, as --root / reads it); the inventory's root names the host
    return state, f"OVS state read live on {where} over SSH (read-only ovs-vsctl/ovs-appctl)"


def load(doc: CollectorDoc, dest: str | os.PathLike, where: str) -> tuple[Root, OvsState | None, str]:
    """Materialise the document under dest: a Root on the tree, the OVS state and a note on how it was read."""
    root = Root(materialise(doc, dest, where))
    state, note = ovs_state(doc, where)
    return root, state, note


def inventory(root: Root, ovs: OvsState | None, where: str):
    """The inventory of a materialised tree, named after the host it came from ('ssh:HOST')."""
    from .inventory import collect

    inv = collect(root, ovs)
    inv.root = where
    return inv


def audit_dict(inv, report) -> dict:
    """`host audit --json`'s document (the same for --root and --host)."""
    return {"root": inv.root, "findings": [dataclasses.asdict(f) for f in report.findings], "passed": report.passed,
            "skipped": report.skipped, "notes": report.notes, "exit_code": report.exit_code}


def host_report(target: SshTarget, ovs_rundir: str | None = None, flows: int | None = None,
                vm_memory_gb: int = 0) -> dict:
    """A remote host's inventory and audit findings as one JSON-able dict (one ssh login; nothing kept locally)."""
    from .audit import Context, run
    from .report import inventory_dict

    doc = run_collector(target, ovs_rundir)
    with tempfile.TemporaryDirectory(prefix="zeroloss-host-") as tmp:
        root, state, note = load(doc, Path(tmp) / "tree", target.target)
        inv = inventory(root, state, f"ssh:{target.target}")
    report = run(Context(inv, inv.ovs, flows=flows, vm_memory_gb=vm_memory_gb))
    report.notes.append(note)
    return {"format": REPORT_FORMAT, "host": target.target, "hostname": doc.hostname,
            "inventory": json.loads(json.dumps(inventory_dict(inv), default=str)), "audit": audit_dict(inv, report),
            "collector_errors": doc.errors}
