"""The CLI's user-facing behaviour that needs no bench: help, versions, one-line errors."""

import argparse
import subprocess
import sys

import pytest

from zeroloss.cli.main import build_parser, main


def run(*args):
    return subprocess.run([sys.executable, "-m", "zeroloss.cli", *args], capture_output=True, text=True)


def test_help_states_units():
    out = run("trial", "--help").stdout
    assert "frames/s" in out and "including FCS" in out and "seconds" in out


def _parsers(parser):
    """Every parser under this one, sub-commands' sub-commands included."""
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                yield from _parsers(child)


def test_every_help_prints_percent_signs_once():
    """argparse %-formats an argument's help but not a description or epilog (unless it names %(prog)), so a
    '%%' written there reached the user as '%%' (zeroloss bench --help, rxq-plan --help)."""
    for parser in _parsers(build_parser()):
        text = parser.format_help()
        assert "%%" not in text, (parser.prog, [ln for ln in text.splitlines() if "%%" in ln])


def test_version():
    assert run("--version").stdout.startswith("zeroloss ")


@pytest.mark.parametrize("args, expect", [
    (["trial", "--frame-size", "20"], "frame size 20 B is outside 64..9728 B"),
    (["trial", "--imix", "64:7,99999:1"], "frame size 99999 B is outside 64..9728 B"),
    (["trial", "--duration", "0"], "--duration must be more than 0 seconds"),
    (["bench", "--search", "--cases", "p2p"], "--cases 'p2p' is not TOPOLOGY:SIZE"),
    (["bench", "--search", "--cases", "ring:64"], "topology must be one of"),
    (["bench", "--search", "--strategies", "binary,fast"], "--strategies 'binary,fast': unknown strategy 'fast'"),
    (["bench", "--search", "--strategies", "mlr,mlr"], "--strategies 'mlr,mlr': mlr is given twice"),
    (["bench", "--search", "--strategies", "mlr:mlr_duration_sum_s"], "is not KEY=VALUE"),
    (["bench", "--search", "--strategies", "mlr:no_such_key=1"], "config: unknown key 'no_such_key'"),
    (["run", "--require-ndr", "fast"], "require_ndr 'fast' is neither a percentage nor SIZE:PCT pairs"),
    (["run", "--frame-sizes", "64", "--require-ndr", "1518:50"], "names 1518 B, which is not in frame_sizes"),
    (["run", "--search", "mlr", "--trial", "5", "--validation", "2"], "must be >= trial_s"),
])
def test_bad_input_is_one_line_without_traceback(args, expect):
    r = run(*args)
    assert r.returncode == 1
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and expect in lines[0], r.stderr


def test_argparse_errors_exit_2():
    r = run("trial", "--rate", "fast")
    assert r.returncode == 2 and "is not a rate" in r.stderr


def test_no_command_prints_help(capsys):
    assert main([]) == 2
    assert "trial" in capsys.readouterr().out
