"""The CLI's user-facing behaviour that needs no bench: help, versions, one-line errors."""

import argparse
import subprocess
import sys

import pytest

from zeroloss.cli.argtypes import check_frame, frame_sizes
from zeroloss.cli.main import build_parser, main
from zeroloss.cli.runflags import flag_fields, run_overrides
from zeroloss.core import config
from zeroloss.core.errors import ZeroLossError


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
    (["run", "--trial", "90000"], "config: trial_s must be in 0.1..86400 s, got 90000"),
    (["run", "--flows", "0"], "config: flows must be in 1..1048576, got 0"),
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


def _sub(name: str) -> argparse.ArgumentParser:
    """The parser of one sub-command."""
    action = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return action.choices[name]


def _option_helps(help_text: str) -> dict[str, str]:
    """Each option's help in a --help text, whitespace collapsed, by its first option string."""
    out: dict[str, list[str]] = {}
    current = None
    for line in help_text.splitlines():
        if line.startswith("  -"):
            current = line.split()[0].rstrip(",")
            out[current] = [line]
        elif current and line.startswith("    "):
            out[current].append(line)
        else:
            current = None
    return {k: " ".join(" ".join(v).split()) for k, v in out.items()}


UNIT_WORDS = {"B": "bytes", "s": "seconds", "ms": "milliseconds", "%": "%", "pps": "frames/s", "Gb/s": "Gb/s"}


def _num(x: float) -> str:
    """A number as help and messages show it: 2, 0.5, 1048576."""
    return str(int(x)) if float(x).is_integer() else str(x)


def _shown(value) -> str:
    """A RunConfig default as --help should show it."""
    if isinstance(value, bool):
        return "on" if value else "off"
    if value in (None, "", []):
        return "none"
    if isinstance(value, list):
        return ",".join(map(str, value))
    return _num(value) if isinstance(value, float) else str(value)


@pytest.mark.parametrize("command", ["run", "tune"])
def test_every_run_setting_flag_shows_the_fields_help_default_and_unit(command):
    helps = _option_helps(_sub(command).format_help())
    defaults = config.RunConfig()
    names = [n for n in config.RunConfig.__dataclass_fields__ if n in _sub(command).parse_args([]).run_flag_names]
    assert names and (command != "run" or len(names) == len(flag_fields()) == 38)
    for f in flag_fields(names):
        m = f.metadata
        text = helps[m["flag"]]
        assert " ".join(m["help"].split()) in text, (m["flag"], text)
        assert text.count("default") == 1 and f"default {_shown(getattr(defaults, f.name))}]" in text, text
        if m["unit"]:
            assert f"[{UNIT_WORDS[m['unit']]}," in text, text
        if m["lo"] is not None:
            assert f"{_num(m['lo'])}..{_num(m['hi'])}" in text, text


def test_run_flags_keep_their_names_and_dests():
    """The flags users have (their names and the config keys they set)."""
    dests = {a.option_strings[0]: a.dest for a in _sub("run")._actions if a.option_strings}
    assert {k: dests[k] for k in ("--frame-sizes", "--trial", "--validation", "--granularity", "--port",
                                  "--max-rate", "--warmup", "--strict-rfc2544", "--link-speed", "--pdr-loss")} == {
        "--frame-sizes": "frame_sizes", "--trial": "trial_s", "--validation": "validation_s",
        "--granularity": "granularity_pct", "--port": "ports", "--max-rate": "max_rate_pps", "--warmup": "warmup_s",
        "--strict-rfc2544": "strict_rfc2544", "--link-speed": "link_speed_gbps", "--pdr-loss": "pdr_loss_pct"}


def _load(argv: list[str]) -> config.RunConfig:
    """What `zeroloss run` makes of its flags before the bench: the parsed flags loaded as settings."""
    return config.load(None, run_overrides(build_parser().parse_args(["run", *argv])))


def test_only_the_flags_given_override_the_settings():
    assert run_overrides(build_parser().parse_args(["run"])) == {}
    cfg = _load(["--trial", "3", "--max-rate", "1.5M", "--port", "a", "--port", "b", "--dut", "external",
                 "--strict-rfc2544", "--frame-sizes", "64,1518"])
    assert (cfg.trial_s, cfg.max_rate_pps, cfg.ports, cfg.strict_rfc2544, cfg.frame_sizes) == \
        (3.0, 1.5e6, ["a", "b"], True, [64, 1518])


@pytest.mark.parametrize("name", [f.name for f in flag_fields() if f.metadata["lo"] is not None])
def test_a_flags_range_error_comes_from_the_fields_lo_and_hi(name):
    f = config.RunConfig.__dataclass_fields__[name]
    lo, hi = f.metadata["lo"], f.metadata["hi"]
    for bad in (lo - 1, hi + 1):
        with pytest.raises(ZeroLossError) as e:
            _load([f.metadata["flag"], _num(bad)])
        text = str(e.value)
        assert text.startswith(f"config: {name} must ") and f"{_num(lo)}..{_num(hi)}" in text and "\n" not in text, text


@pytest.mark.parametrize("argv", [["run", "--frame-sizes", "64,x"], ["tune", "--frame-sizes", "64,x"],
                                  ["bench", "--vnf", "--frames", "64,x"]])
def test_a_bad_frame_size_list_is_one_argparse_line(argv):
    r = run(*argv)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines()[-1].endswith(
        "'64,x' is not a list of frame sizes (e.g. 64,1518,9000 or 64,imix)")


def test_the_frame_size_list_parser():
    assert frame_sizes("64, 1518,9000,") == [64, 1518, 9000]
    with pytest.raises(argparse.ArgumentTypeError, match=r"^'64;1518' is not a list of frame sizes"):
        frame_sizes("64;1518")
    assert check_frame(64) == 64 and check_frame(9728) == 9728
    with pytest.raises(ZeroLossError, match=r"^frame size 9729 B is outside 64..9728 B \(FCS included\)$"):
        check_frame(9729)


def test_a_run_that_ends_before_its_first_trial_leaves_no_file_and_no_resume_hint(tmp_path):
    """A fault found before any trial (here the node unreachable, or too few hugepages for zlgen: both come before
    the first trial) has nothing to continue: no result file, no `run --resume` hint (issue 38, 10)."""
    import os

    lab = tmp_path / "lab.yaml"
    lab.write_text("dut: {ssh: nowhere.invalid}\n"
                   "generator:\n  ports:\n"
                   "    - {name: A, device: net_null0, dut_port: nic0, dst_mac: '02:00:00:00:00:01'}\n"
                   "    - {name: B, device: net_null1, dut_port: nic1, dst_mac: '02:00:00:00:00:02'}\n"
                   "traffic: {pairs: [[A, B]]}\n")
    out = tmp_path / "r.json"
    env = {**os.environ, "ZEROLOSS_RUNDIR": str(tmp_path / "run"), "ZEROLOSS_LOCKDIR": str(tmp_path / "lock")}
    r = subprocess.run([sys.executable, "-m", "zeroloss.cli", "run", "--lab", str(lab), "--frame-sizes", "64",
                        "-o", str(out), "-q"], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and ("nowhere.invalid" in lines[0] or "hugepages" in lines[0]), r.stderr
    assert "--resume" not in r.stderr and "trials so far" not in r.stderr
    assert not out.exists() and not list(tmp_path.glob("r.json*"))


def test_tune_takes_the_searchs_timing_flags_as_run_does():
    """tune refused --trial, --validation, --granularity and --drain-ms ("unrecognized arguments") while run took
    them (issue 38, 13): both read them into the same settings."""
    flags = ["--trial", "0.5", "--validation", "1", "--granularity", "5", "--drain-ms", "300"]
    want = {"trial_s": 0.5, "validation_s": 1.0, "granularity_pct": 5.0, "drain_ms": 300}
    for argv in (["run", *flags], ["tune", "--target", "100%", *flags]):
        got = run_overrides(build_parser().parse_args(argv))
        assert {k: got.get(k) for k in want} == want, (argv[0], got)
