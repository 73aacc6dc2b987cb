"""Every `zeroloss …` command line in README.md and docs/*.md parses with today's CLI (issue 39, Must 4).

The commands are taken from shell code blocks (```sh, ```bash, ```shell: every line; ```console and the others:
the lines after a `$ ` prompt) and from inline code spans that start with `zeroloss `, and each is given to the
real argparse parser (`zeroloss.cli.main.build_parser`), never run. A renamed flag, a removed subcommand or a
value the CLI's own type refuses fails here, naming the page and line.

What a command in the docs may carry besides the command itself: `sudo`, a path to the entry point
(`.venv/bin/zeroloss`), a `$ ` prompt, line continuations, shell comments, pipes, `&&`, `;` and redirections
(only the zeroloss part is parsed), optional parts in brackets (`[--json]` is parsed with the flag; `[more.json …]`
is left out), alternatives (`--search binary|mlr`: each alternative is parsed), `…` for "and so on", and
placeholders in capitals (`FILE`, `PPS`, `N`, `KEY=VALUE`): a value that is one is accepted for any flag, so the
flag's name is still checked but not its type.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import shlex
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

from zeroloss.cli.main import build_parser

ROOT = Path(__file__).resolve().parent.parent
SHELL_FENCES = {"sh", "bash", "shell"}
FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*([\w+-]*)")
# a command starts with zeroloss (or a path to it), optionally after sudo and its options
START = re.compile(r"^(?:sudo(?:\s+-\S+)*\s+)?(?:\S*/)?zeroloss(?=\s|$)")
OPERATORS = {"|", "||", "&&", ";", "&", ">", ">>", "<", "2>", "2>&1", "&>", "(", ")"}
PLACEHOLDER = re.compile(r"^[A-Z][A-Z0-9_]*(?:[.:=,|%/-]+[A-Z0-9_]*)*(?:,?\.\.\.|…)?%?$")
ALT = "\x00"  # stands for `|` between two words (an alternative), so shlex does not take it for a pipe


@dataclass(frozen=True)
class DocCommand:
    where: str  # page:line
    text: str  # the command as written, one line
    argv: tuple[str, ...]  # after `zeroloss`, one variant of its alternatives
    mention: bool = False  # inline code in prose: may name a command or flag without its arguments


def _docs() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def _segments(line: str) -> list[list[str]]:
    """The shell commands of one line, split at pipes, `&&`, `;` and redirections; comments dropped."""
    protected = re.sub(r"(?<=\S)\|(?=\S)", ALT, line)
    lex = shlex.shlex(protected, posix=True, punctuation_chars="|&;<>()")
    lex.whitespace_split = True
    lex.commenters = "#"
    try:
        tokens = list(lex)
    except ValueError as e:  # an unclosed quote
        raise AssertionError(f"cannot split {line!r}: {e}") from None
    segments: list[list[str]] = [[]]
    redirect = False
    for tok in tokens:
        if tok in OPERATORS or set(tok) <= set("|&;<>()"):
            redirect = tok.startswith((">", "<", "2>", "&>"))
            segments.append([])
        elif redirect:  # the redirection's file
            redirect = False
        else:
            segments[-1].append(tok.replace(ALT, "|"))
    return [s for s in segments if s]


def _variants(words: list[str]) -> list[tuple[str, ...]]:
    """The argv of one command: brackets resolved, `…` dropped, each alternative (`a|b`) parsed once."""
    argv: list[str] = []
    group: list[str] | None = None
    for w in words:
        if group is None and w.startswith("[") and w != "[":
            group = []
            w = w[1:]
        end = group is not None and w.endswith("]") and "[" not in w
        if end:
            w = w[:-1]
        if w in ("…", "...", ""):
            pass
        elif group is not None:
            group.append(w)
        else:
            argv.append(w)
        if end and group is not None:
            if group and group[0].startswith("-"):  # [--json], [--max-rate PPS]: parse them
                argv.extend(group)
            group = None  # [more.json …], [intent]: words for the reader
    if group:
        argv.extend(group if group[0].startswith("-") else [])
    alts = [w.split("|") if "|" in w and not PLACEHOLDER.match(w) else [w] for w in argv]
    base = tuple(a[0] for a in alts)
    out = [base]
    for i, a in enumerate(alts):
        out.extend(base[:i] + (alt,) + base[i + 1:] for alt in a[1:])
    return out


def _commands_in_line(line: str, where: str, mention: bool = False) -> list[DocCommand]:
    found = []
    for seg in _segments(line):
        text = " ".join(seg)
        if not START.match(text):
            continue
        i = next(i for i, w in enumerate(seg) if w == "zeroloss" or w.endswith("/zeroloss"))
        for argv in _variants(seg[i + 1:]):
            found.append(DocCommand(where, text, argv, mention))
    return found


def extract(text: str, page: str) -> list[DocCommand]:
    """Every zeroloss command of one Markdown page (code blocks and inline code)."""
    found: list[DocCommand] = []
    lines = text.splitlines()
    fence: tuple[str, str] | None = None  # (marker, language) while inside a fenced block
    prose: list[tuple[int, str]] = []  # the current paragraph outside code blocks, for inline code spans
    pending = ""  # a code line continued with a backslash
    pending_at = 0

    def flush_prose() -> None:
        if not prose:
            return
        first = prose[0][0]
        joined = "\n".join(t for _, t in prose)
        for m in re.finditer(r"(?<!`)`([^`]+)`(?!`)", joined):
            span = " ".join(m.group(1).split())
            if START.match(span):
                at = first + joined.count("\n", 0, m.start())
                found.extend(_commands_in_line(span.replace(r"\|", "|"), f"{page}:{at}", mention=True))
        prose.clear()

    for n, raw in enumerate(lines, 1):
        m = FENCE.match(raw)
        if fence is None and m:
            flush_prose()
            fence = (m.group(2), m.group(3).lower())
            continue
        if fence is not None:
            if raw.strip().startswith(fence[0]) and raw.strip().strip(fence[0][0]) == "":
                fence = None
                continue
            line = raw.strip()
            if line.endswith("\\"):
                pending_at = pending_at or n
                pending += line[:-1] + " "
                continue
            if pending:
                line, at, pending, pending_at = pending + line, pending_at, "", 0
            else:
                at = n
            if fence[1] in SHELL_FENCES:
                found.extend(_commands_in_line(line, f"{page}:{at}"))
            elif line.startswith("$ "):
                found.extend(_commands_in_line(line[2:], f"{page}:{at}"))
            continue
        if raw.startswith("    ") and raw.strip().startswith(("zeroloss ", "$ zeroloss ")) and not prose:
            found.extend(_commands_in_line(raw.strip().removeprefix("$ "), f"{page}:{n}"))  # an indented block
            continue
        if not raw.strip():
            flush_prose()
        else:
            prose.append((n, raw))
    flush_prose()
    return found


class _Placeholder(str):
    """A value the docs left as a placeholder (FILE, PPS, N): accepted by any type and any choices."""


class _Choices:
    def __init__(self, choices):
        self.choices = choices

    def __contains__(self, value) -> bool:
        return isinstance(value, _Placeholder) or value in self.choices

    def __iter__(self):
        return iter(self.choices)


def _accept_placeholders(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The parser with every option's type and choices letting a placeholder through (names are still checked)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in set(action.choices.values()):
                _accept_placeholders(sub)
            continue
        convert = action.type

        def typed(text: str, convert=convert):
            if PLACEHOLDER.match(text):
                return _Placeholder(text)
            return convert(text) if convert is not None else text

        action.type = typed
        if action.choices is not None and not isinstance(action.choices, _Choices):
            action.choices = _Choices(action.choices)
    return parser


# what a mention in prose may leave out: `zeroloss explain` (its file), `zeroloss run --lab` (the flag's value)
INCOMPLETE = re.compile(r"error: (the following arguments are required"
                        r"|argument \S+: expected (one|at least one) argument)")


def parse(argv: tuple[str, ...], parser: argparse.ArgumentParser, mention: bool = False) -> str | None:
    """None when today's CLI takes argv (a mention: may leave arguments out), else argparse's error line."""
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            parser.parse_args(list(argv))
    except SystemExit as e:
        if e.code not in (0, None):  # 0: --help, --version
            line = err.getvalue().strip().splitlines()[-1] if err.getvalue().strip() else f"exit {e.code}"
            return None if mention and INCOMPLETE.search(line) else line
    return None


def all_doc_commands() -> list[DocCommand]:
    out = []
    for path in _docs():
        out.extend(extract(path.read_text(), str(path.relative_to(ROOT))))
    return out


@pytest.fixture(scope="module")
def parser() -> argparse.ArgumentParser:
    return _accept_placeholders(build_parser())


def test_every_doc_command_parses(parser):
    cmds = all_doc_commands()
    assert len(cmds) > 100, f"only {len(cmds)} commands found: is the extractor broken?"
    bad = [f"{c.where}: zeroloss {' '.join(c.argv)}\n    {err}" for c in cmds
           if (err := parse(c.argv, parser, c.mention))]
    assert not bad, f"{len(bad)} of {len(cmds)} doc commands are refused by today's CLI:\n" + "\n".join(bad)


def test_every_fenced_block_says_its_language():
    """A block without a language would hide its commands from the check above (they are read in sh blocks)."""
    bare = []
    for path in _docs():
        inside = False
        for n, raw in enumerate(path.read_text().splitlines(), 1):
            m = FENCE.match(raw)
            if m and not inside:
                inside = True
                if not m.group(3):
                    bare.append(f"{path.relative_to(ROOT)}:{n}")
            elif m and inside:
                inside = False
    assert not bare, "fenced blocks without a language (sh, console, text, yaml, ...): " + ", ".join(bare)


def test_readme_links_reach_the_docs():
    """README.md is read on a forge, not built by MkDocs: its links to docs/ are checked here."""
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", (ROOT / "README.md").read_text())
    assert any(t.startswith("docs/") for t in targets)
    missing = [t for t in targets if "://" not in t and not (ROOT / t).exists()]
    assert not missing, f"README.md links to files that do not exist: {missing}"


def test_architecture_page_matches_the_layer_contract():
    """docs/architecture.md lists pyproject's import-linter layers as they stand, and every package of src/zeroloss."""
    page = (ROOT / "docs" / "architecture.md").read_text()
    block = page.split("## Layers", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    listed = [" ".join(line.split("#", 1)[0].split()) for line in block.splitlines() if line.strip()]
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contract = next(c for c in conf["tool"]["importlinter"]["contracts"] if c["id"] == "layers")
    assert listed == [" ".join(layer.split()) for layer in contract["layers"]], (
        "docs/architecture.md's layers differ from pyproject.toml's contract: copy the contract's list into the page")
    table = page.split("## Packages", 1)[1].split("\n## ", 1)[0]
    in_table = set(re.findall(r"^\| `([\w.]+)` \|", table, re.M))
    packages = {p.parent.name for p in (ROOT / "src" / "zeroloss").glob("*/__init__.py")}
    assert in_table == packages, f"docs/architecture.md's package table: missing {packages - in_table}, " \
                                 f"gone {in_table - packages}"


SAMPLE = """\
Run it as `zeroloss run --frame-sizes 64` or `sudo .venv/bin/zeroloss explain FILE [--json]`; not `zeroloss.host.cnf`.

```sh
zeroloss campaign reference-matrix \\
    --set trial_s=1            # a comment with the VNF's apostrophe
make setup && zeroloss trial --rate 1M | less
zeroloss report run.json --format csv > run.csv; zeroloss compare a.json b.json [more.json …]
zeroloss run --search binary|mlr --max-rate PPS
```

```console
$ zeroloss run --topology pvp
output: zeroloss tune from PVP (not a command)
```

    zeroloss host cores --cores 0,1
"""


def test_extractor_finds_each_form():
    cmds = extract(SAMPLE, "sample.md")
    assert [c.argv for c in cmds] == [
        ("run", "--frame-sizes", "64"),
        ("explain", "FILE", "--json"),
        ("campaign", "reference-matrix", "--set", "trial_s=1"),
        ("trial", "--rate", "1M"),
        ("report", "run.json", "--format", "csv"),
        ("compare", "a.json", "b.json"),
        ("run", "--search", "binary", "--max-rate", "PPS"),
        ("run", "--search", "mlr", "--max-rate", "PPS"),
        ("run", "--topology", "pvp"),
        ("host", "cores", "--cores", "0,1"),
    ]
    assert [c.where for c in cmds][:3] == ["sample.md:1", "sample.md:1", "sample.md:4"]


def test_the_check_fails_on_an_unknown_flag_subcommand_or_value(parser):
    """The check can fail: a doc naming a flag, a subcommand or a choice the CLI lacks is caught."""
    doc = ("```sh\nzeroloss run --frame-sizes 64 --no-such-flag\nzeroloss frobnicate results/x.json\n"
           "zeroloss run --search bogus\nzeroloss run --frame-sizes 64,sixty\n```\n"
           "and `zeroloss host plann --mtu 9000`, `zeroloss run --search binary|nope`\n")
    errors = [parse(c.argv, parser) for c in extract(doc, "bad.md")]
    assert len(errors) == 7 and errors[-2] is None, errors  # run --search binary is fine, its `nope` is not
    assert "unrecognized arguments: --no-such-flag" in errors[0]
    assert "invalid choice: 'frobnicate'" in errors[1]
    assert "invalid choice: 'bogus'" in errors[2]
    assert "--frame-sizes" in errors[3]
    assert "invalid choice: 'plann'" in errors[4]
    assert "invalid choice: 'nope'" in errors[6]


def test_placeholders_pass_but_real_values_are_checked(parser):
    assert parse(("trial", "--rate", "PPS", "--duration", "S"), parser) is None
    assert parse(("trial", "--rate", "10%"), parser) is None
    assert parse(("trial", "--rate", "fast"), parser) is not None
    assert parse(("check", "ledger", "--case", "mtu"), parser) is None
    assert parse(("check", "ledger", "--case", "mtus"), parser) is not None
    assert parse(("run", "--help"), parser) is None
