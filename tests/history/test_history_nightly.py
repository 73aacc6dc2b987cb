"""The nightly job of docs/history.md, run as written: its script taken from the page, with the paths it names
moved into a temporary folder, the database a SQLite file, and `zeroloss campaign` played by a stand-in that writes
the next night of a synthetic history for the node its lab file names (the real `campaign` refuses an --output
that exists, as this one does); every `zeroloss history` command is the real one."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from .helpers import synthetic_history

DOCS = Path(__file__).resolve().parents[2] / "docs" / "history.md"

CAMPAIGN = """#!{python}
import json, os, sys
from pathlib import Path
args = sys.argv[1:]
if args[0] != "campaign":
    os.execv({python!r}, [{python!r}, "-m", "zeroloss.cli", *args])
out = Path(args[args.index("--output") + 1])
if out.exists():
    sys.exit(f"zeroloss: error: result file {{out}} exists: pass --resume to continue it, or another --output")
node = Path(next(a for a in args if a.startswith("lab="))[4:]).stem
counter = Path({nights!r}) / f"{{node}}.count"
night = int(counter.read_text()) if counter.exists() else 0
counter.write_text(str(night + 1))
doc = json.loads((Path({nights!r}) / f"night-{{night:03d}}.json").read_text())
doc["host"]["hostname"] = node
out.write_text(json.dumps(doc))
"""


def _script(root: Path) -> str:
    """The page's script, its system paths under root and its database a SQLite file there."""
    text = DOCS.read_text()
    block = re.search(r"```sh\n(#!/bin/sh\n.*?)```", text, re.S)
    assert block, "docs/history.md has no nightly script"
    script = block.group(1)
    assert 'DB="postgresql://zeroloss@db.lab/zeroloss"' in script
    script = script.replace('DB="postgresql://zeroloss@db.lab/zeroloss"', f'DB="{root}/history.sqlite"')
    for path in ("/etc/zeroloss", "/var/lib/zeroloss", "/var/www/html"):
        script = script.replace(path, f"{root}{path}")
    return script


def _nightly(root: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}"}
    return subprocess.run(["sh", str(root / "zeroloss-nightly")], capture_output=True, text=True, env=env,
                          timeout=300)


def test_the_nightly_script_runs_as_written(tmp_path):
    root, nights = tmp_path / "root", tmp_path / "nights"
    nights.mkdir()
    synthetic_history(nights, 6, 4, 0.05)  # nights 4 and 5 lower by 5 %
    (tmp_path / "bin").mkdir()
    stand_in = tmp_path / "bin" / "zeroloss"
    stand_in.write_text(CAMPAIGN.format(python=sys.executable, nights=str(nights)))
    stand_in.chmod(0o755)
    (root / "etc/zeroloss/lab").mkdir(parents=True)
    for node in ("compute-1", "compute-2"):
        (root / f"etc/zeroloss/lab/{node}.yaml").write_text("dut: {ssh: " + node + "}\n")
    (root / "var/www/html/zeroloss").mkdir(parents=True)
    (root / "zeroloss-nightly").write_text(_script(root))
    first = _nightly(root, tmp_path)
    assert first.returncode == 0, first.stderr
    assert first.stdout.count(": stored (run") == 2 and "no regression: 2 series" in first.stdout
    assert (root / "var/www/html/zeroloss/trend.html").exists()
    again = _nightly(root, tmp_path)  # started again the same day (by hand, or the timer catching up)
    assert again.returncode == 0, again.stderr
    assert again.stdout.count(": stored (run") == 2
    codes = [_nightly(root, tmp_path).returncode for _ in range(3)]
    assert codes == [0, 0, 2], codes  # the first lower night fails the gate
    kept = sorted(p.name for p in (root / "var/lib/zeroloss/nightly").glob("*/*.json"))
    assert len(kept) == 10 and kept.count("compute-1.json") == 5
