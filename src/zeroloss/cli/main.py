"""The zeroloss command line. Errors a user can cause are printed as one line, exit code 1."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import select
import signal
import sys
from pathlib import Path

from zeroloss import __version__
from zeroloss.cli import autoingest, commands
from zeroloss.cli.argtypes import check_frame, frame_key, rate, whole_number
from zeroloss.cli.bench import cmd_bench
from zeroloss.cli.run import cmd_campaign, cmd_run
from zeroloss.cli.runflags import add_run_flag, add_run_flags
from zeroloss.core.errors import ZeroLossError

_positive_int = whole_number(1)


def _rate_or_pct(text: str) -> tuple[str, float]:
    """A rate in frames/s (k/M suffixes) or in % of the ports' line rate ('10%')."""
    if text.endswith("%"):
        try:
            v = float(text[:-1])
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text}' is not a percentage (e.g. 10%)") from None
        if not 0 < v <= 100:
            raise argparse.ArgumentTypeError(f"{text} is not in 0..100 % of line rate")
        return "pct", v
    v = rate(text)
    if v < 0:
        raise argparse.ArgumentTypeError("a rate cannot be negative")
    return "pps", v


def _imix(text: str) -> list[list[int]]:
    """'64:7,570:4,1518:1' -> [[64, 7], [570, 4], [1518, 1]]."""
    try:
        pairs = [[int(x) for x in item.split(":")] for item in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not SIZE:WEIGHT,... (e.g. 64:7,570:4,1518:1)") from None
    if not pairs or any(len(p) != 2 for p in pairs):
        raise argparse.ArgumentTypeError(f"'{text}' is not SIZE:WEIGHT,... (e.g. 64:7,570:4,1518:1)")
    if any(w < 1 for _, w in pairs):  # sizes are checked by the command (check_frame), weights here
        raise argparse.ArgumentTypeError(f"'{text}': every weight must be 1 or more")
    return pairs


def _add_bench_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dut", choices=["testpmd", "none"], default="testpmd",
                   help="device under test: testpmd io forwarder, or none (zlgen's ports wired to each "
                        "other) (default: testpmd)")
    p.add_argument("--link", choices=["memif", "vhost"], default=None,
                   help="virtual wire: memif, or vhost-user/virtio-user (default: memif up to 1518 B frames, "
                        "vhost above)")
    p.add_argument("--forward-mode", default="io", help="testpmd forwarding mode: io or mac (default io)")
    p.add_argument("--keep-logs", action="store_true", help="keep process logs under /run/zeroloss")


def _cmd_trial(args: argparse.Namespace) -> int:
    from zeroloss.cli.soak import is_soak, soak_trial
    from zeroloss.core.stream import imix_of
    from zeroloss.drivers.bench.softbench import BenchSpec, SoftBench
    from zeroloss.drivers.bench.workspace import Workspace
    from zeroloss.results.fmt import port_table, trial_table

    if is_soak(args):
        return soak_trial(args)
    if args.history is not None:
        raise ZeroLossError("--history stores a soak's file: a trial without --interval, -o, --lab or a run setting "
                            "writes none", "add --interval S, or drop --history")
    kind, args.rate = args.rate
    if kind == "pct":
        raise ZeroLossError("a rate in % of line rate needs the ports' speed: give it in a soak (--interval S, "
                            "with --link-speed on the bench) or with --lab FILE",
                            "or give frames/s (e.g. --rate 1M)")
    sizes = [p[0] for p in args.imix] if args.imix else [args.frame_size]
    for size in sizes:
        check_frame(size)
    if args.duration <= 0:
        raise ZeroLossError("--duration must be more than 0 seconds")
    largest = max(sizes)
    link = args.link or ("memif" if largest <= 1518 else "vhost")
    spec = BenchSpec(dut=args.dut, link=link, forward_mode=args.forward_mode,
                     max_frame=max(1518, largest), idle_sleep_us=args.idle_sleep_us)
    with Workspace(keep_logs=args.keep_logs) as ws, SoftBench(spec, ws) as bench:
        streams = bench.streams(frame_size=args.frame_size, flows=args.flows, rate_pps=args.rate,
                                bidirectional=not args.unidirectional, imix=imix_of(args.imix))
        bench.gen.client.configure(streams)
        result = bench.gen.client.run_trial(duration_s=args.duration, drain_ms=args.drain_ms)
    if args.json:
        print(json.dumps(dataclasses.asdict(result), indent=2))
        return 0
    size = "IMIX " + ",".join(f"{a}:{b}" for a, b in args.imix) if args.imix else f"{args.frame_size} B"
    print(f"trial {result.trial}: {size}, {args.flows} flow(s), {args.duration:g} s, drain {args.drain_ms} ms, "
          f"dut {args.dut}, link {link}")
    print(trial_table(result))
    print()
    print(port_table(result))
    print()
    verdict = "ZERO LOSS" if result.lost == 0 else f"LOSS: {result.lost} frame(s)"
    print(f"{verdict}: sent {result.tx_pkts}, received {result.rx_unique}")
    for s in result.streams:
        acc = s.rate_accuracy
        if acc is not None and acc < 0.95:
            print(f"warning: stream {s.id} reached {acc:.1%} of its requested rate: the generator is the "
                  f"bottleneck; lower the rate or give zlgen its own core", file=sys.stderr)
    return 0


def _set_value(text: str) -> tuple[str, object]:
    """--set KEY=VALUE (config.setting) as argparse wants its errors."""
    from zeroloss.core.config import setting

    try:
        return setting(text)
    except ZeroLossError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="zeroloss",
        description="Zero-packet-loss throughput of virtual-switch data paths, measured with zlgen (DPDK). "
                    "Rates are frames per second (pps); frame sizes are bytes including the 4 B FCS.")
    p.add_argument("--version", action="version", version=f"zeroloss {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    t = sub.add_parser("trial", help="one trial on the software bench (zlgen -> DUT -> zlgen)",
                       description="Runs one trial on the software bench and prints per-stream counters: "
                                   "frames sent, received, lost, reordered, duplicated, late, and latency.")
    _add_bench_args(t)
    t.add_argument("--frame-size", type=int, default=64, metavar="BYTES",
                   help="frame size in bytes including FCS, 64..9728 (default 64)")
    t.add_argument("--imix", type=_imix, default=None, metavar="SIZE:WEIGHT,...",
                   help="a frame size mix instead of --frame-size, e.g. 64:7,570:4,1518:1")
    t.add_argument("--rate", type=_rate_or_pct, default=("pps", 100000), metavar="PPS|PCT%",
                   help="rate per direction in frames/s, k/M suffixes allowed; 0 = as fast as possible "
                        "(default 100k); with --lab also in %% of the ports' line rate, e.g. 10%%")
    t.add_argument("--lab", metavar="FILE", help="send on a lab's generator ports through the compute node it "
                                                 "describes (fixed-rate / soak trial; see docs/lab.md)")
    t.add_argument("--interval", type=float, default=None, metavar="S",
                   help="soak: loss and rate every S seconds of the trial, loss events with their ledgers, through "
                        "the bench's topology (--topology, --vnf, ... as run takes them) or --lab (default 1)")
    t.add_argument("--output", "-o", metavar="FILE", help="soak: its file, written every interval "
                                                          "(default results/soak-TIME.json)")
    autoingest.add_flag(t, "the soak file", scope="soak: ", config=False)
    t.add_argument("--duration", type=float, default=2.0, metavar="S", help="TX time in seconds (default 2)")
    t.add_argument("--drain-ms", type=int, default=500, metavar="MS",
                   help="receive for this long after TX stops, in ms (default 500)")
    t.add_argument("--flows", type=_positive_int, default=1, metavar="N",
                   help="flows per direction, made by stepping source and destination IPs (default 1)")
    t.add_argument("--unidirectional", action="store_true", help="send port 0 -> 1 only")
    t.add_argument("--idle-sleep-us", type=int, default=0, metavar="US",
                   help="zlgen sleeps this long when idle, in microseconds (shares a core; default 0)")
    t.add_argument("--json", action="store_true", help="print the result as JSON only")
    from zeroloss.cli.soak import add_flags as add_soak_flags

    add_soak_flags(t, _set_value)
    t.set_defaults(func=_cmd_trial)

    from zeroloss.cli.runflags import field_help
    from zeroloss.cli.tune import register as register_tune
    from zeroloss.core.config import RunConfig

    keys = "\n".join(f"  {k}: {v}" for k, v in field_help().items())
    r = sub.add_parser(
        "run", help="zero-loss (NDR/PDR) throughput search per frame size",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Measures the zero-packet-loss throughput (RFC 2544 binary search, NDR and PDR) of the DUT "
                    "for every frame size. Default: testpmd io forwarding on the software bench, frames 64 to "
                    "9000 B, 1024 flows, both directions. Rates are frames/s per direction; frame sizes in "
                    "bytes including FCS; loss tolerances in % of the frames sent.",
        epilog="Every setting is also a key of the YAML --config file and of --set KEY=VALUE:\n" + keys)
    r.add_argument("--config", metavar="FILE", help="YAML file of settings (flags override it)")
    r.add_argument("--set", action="append", type=_set_value, metavar="KEY=VALUE",
                   help="any setting by its key, e.g. --set dut_rxq=2 (YAML value syntax)")
    add_run_flags(r)  # every RunConfig field with a flag: help, unit, range and default from the field
    r.add_argument("--output", "-o", metavar="FILE", help="result file (default results/zeroloss-TIME.json)")
    autoingest.add_flag(r, "the result file")
    r.add_argument("--resume", metavar="FILE", help="continue a cut run from its result file")
    r.add_argument("--json", action="store_true", help="print machine-readable results only")
    r.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")
    r.set_defaults(func=cmd_run)

    c = sub.add_parser("campaign", help="run a list or cross of run settings (a campaign file or a built-in)",
                       description="Runs `zeroloss run` once per case of a campaign (YAML: base settings, cases, "
                                   "and lists to cross), all into one result file, and prints a combined table "
                                   "(NDR as % of line rate / pps per frame size). Built-in: reference-matrix "
                                   "(the whitepaper's Table 5 cases), vnf-ring.")
    c.add_argument("campaign", nargs="?", metavar="FILE|NAME", help="campaign file, or a built-in name")
    c.add_argument("--list", action="store_true", help="list the built-in campaigns")
    c.add_argument("--set", action="append", type=_set_value, metavar="KEY=VALUE",
                   help="a run setting applied to every case, e.g. --set trial_s=5")
    c.add_argument("--output", "-o", metavar="FILE", help="result file (default results/campaign-NAME-TIME.json)")
    autoingest.add_flag(c, "the campaign's result file", config=False, file="the campaign YAML")
    c.add_argument("--resume", metavar="FILE", help="continue a cut campaign from its result file: finished "
                                                    "cases are kept, the cut one continues from its last trial")
    c.add_argument("--json", action="store_true", help="print the whole result document as JSON")
    c.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")
    c.set_defaults(func=cmd_campaign)

    register_tune(sub, _set_value)

    k = sub.add_parser("check", help="functional checks of the data path (jumbo frames, the loss ledger)",
                       description="jumbo: with mtu_request=9000 on every OVS port, 9018 B frames cross PVP "
                                   "whole (received size = sent size, per frame); with one port lowered to "
                                   "mtu_request=6000 at run time, 9018 B frames are dropped there and 6018 B "
                                   "frames pass. ledger: frames lost on purpose at a known place (an MTU too "
                                   "small, a frozen VNF, an OpenFlow meter, an overloaded RX queue) must be "
                                   "attributed there (at least 99 % of them) with a remedy naming the right "
                                   "knob. Exit 0 when every step passes, 2 when one fails.")
    k.add_argument("what", choices=["jumbo", "ledger"], help="the check to run")
    k.add_argument("--case", action="append", choices=["mtu", "vnf-stop", "meter", "overload"],
                   help="ledger: only this case (repeatable; default all four)")
    k.add_argument("--vnf", choices=["auto", "vm", "process", "container"], default="auto",
                   help="the PVP cases' VNF: a QEMU/KVM guest (vm), testpmd as a host process (process) or in a "
                        "podman container (container), or vm where /dev/kvm works (auto, default)")
    k.add_argument("--json", action="store_true", help="print the steps and their evidence as JSON")
    k.set_defaults(func=commands.cmd_check)

    e = sub.add_parser("explain", help="where a trial's frames were lost, hop by hop, and why (from a result file)",
                       description="Prints the loss ledger of stored trials: for each direction, every hop of the "
                                   "path (zlgen, OVS ports and datapath, VNFs, DUT) with frames in, frames out and "
                                   "drops by reason, each from a named counter; what no counter explains is shown "
                                   "as unexplained. Then the diagnosis: causes and remedies (commands, settings), "
                                   "largest first. Default: every failed validation trial, or a search's lossiest "
                                   "trial. Frame counts are frames; shares are % of the frames lost.")
    e.add_argument("file", metavar="RESULT.json",
                   help="a result file of zeroloss run or campaign, a soak file, or an events file (zeroloss events: "
                        "the outage table, then each event's worst repeat)")
    e.add_argument("--trial", type=_positive_int, metavar="N", help="this trial (numbered from 1 as run prints)")
    e.add_argument("--frame", type=frame_key, metavar="BYTES|imix", help="only this frame size (or IMIX)")
    e.add_argument("--case", metavar="TEXT", help="campaign files: only cases whose name contains TEXT")
    e.add_argument("--json", action="store_true", help="print ledgers and diagnoses as JSON")
    e.set_defaults(func=commands.cmd_explain)

    b = sub.add_parser("bench", help="benchmark zlgen against dpdk-testpmd txonly, and its pacing accuracy",
                       description="Measures, side by side on the same virtual device (net_null) and core, "
                                   "zlgen's maximum TX rate against dpdk-testpmd --forward-mode=txonly at "
                                   "64 B and 1518 B, and zlgen's pacing accuracy (achieved / requested) "
                                   "at 10 %, 50 % and 90 % of its maximum.")
    b.add_argument("--seconds", type=float, default=3.0, metavar="S",
                   help="measurement window per run in seconds (default 3)")
    b.add_argument("--repeats", type=_positive_int, metavar="N",
                   help="alternating runs per tool; the median is reported (default 3; --noisy: meter searches per "
                        "strategy, default 5)")
    b.add_argument("--json", action="store_true", help="print one JSON object at the end")
    b.add_argument("--search", action="store_true",
                   help="instead: the search strategies side by side on the bench (trial-seconds, wall time, "
                        "generator failures, NDR spread of --repeats searches each, per case)")
    b.add_argument("--vnf", action="store_true",
                   help="instead: PVP with the VNF as a host process, a container (CNF) and a VM, per frame size, "
                        "and the VM with virtio rings 256 and 1024 (NDRs, ratios, latency p50/p99 at the NDR, "
                        "container start and guest boot times)")
    b.add_argument("--noisy", action="store_true",
                   help="instead: a short run quiet, then with a CPU hog pinned to the generator's and to the DUT's "
                        "core (verdicts, wasted trial time, exit status), and OVS meter searches of known capacity on "
                        "ovs-p2p and pvp per strategy (within 1 %%, spread)")
    b.add_argument("--neutron", action="store_true",
                   help="instead: Neutron's OVS on the bench: the neutron-matrix campaign (plain, conntrack, vxlan, "
                        "both; 1k, 100k, 1M flows; ovs-p2p and pvp; 64 and 1518 B) with the diagnosis of each cell, "
                        "a tune run from a 1M-flow case, and a latency-vs-load table (--parts to choose)")
    b.add_argument("--parts", default="matrix,tune,latency", metavar="PART,...",
                   help="--neutron: some of matrix, tune, latency (default all three)")
    b.add_argument("--dir", metavar="DIR",
                   help="--neutron: the folder of its result files (default results/bench-neutron-TIME); the matrix "
                        "of a cut bench in that folder continues where it stopped")
    b.add_argument("--meter-pps", type=_positive_int, default=30000, metavar="PPS",
                   help="--noisy: the meter's rate per direction (default 30000)")
    b.add_argument("--lab", metavar="FILE", help="the cost of reading a lab node (OVS + VNF counters, OVS state) "
                                                 "over SSH, beside the bench's local reading of the same OVS when "
                                                 "the node is this host")
    b.add_argument("--tune", action="store_true",
                   help="zeroloss tune from a bad PVP (VNF ring 256) beside the best ring of the vnf-ring campaign, "
                        "same trial settings (--frames, --trial, --validation, --granularity, --budget)")
    b.add_argument("--budget", type=float, default=20.0, metavar="MIN", help="--tune: the tune's budget (default 20)")
    b.add_argument("--readings", type=_positive_int, default=50, metavar="N",
                   help="--lab: readings timed per kind (default 50)")
    add_run_flag(b, "frame_sizes", flag="--frames", dest="frames", default=[64, 1518, 9000], scope="--vnf, --tune")
    b.add_argument("--cases", metavar="TOPO:SIZE,...",
                   help="--search: the cases (default p2p:64,p2p:1518,p2p:9000,pvp:64); --noisy: of quiet, hog-gen, "
                        "hog-dut, ovs-p2p, pvp (default all)")
    b.add_argument("--strategies", default="binary,mlr,rfc2544", metavar="NAME[:KEY=VALUE...],...",
                   help="--search: binary (short trials, one validation), mlr (MLRsearch), rfc2544 (the binary "
                        "search with every trial as long as --validation); default all three. Run settings for one "
                        "entry follow its name, e.g. mlr:mlr_duration_sum_s=15 beside mlr")
    run_defaults = RunConfig()  # the bench's searches take run's defaults, but shorter search trials
    scope = "--search, --vnf, --tune, --noisy"
    add_run_flag(b, "trial_s", dest="trial", default=1.0, scope=scope)
    add_run_flag(b, "validation_s", dest="validation", default=run_defaults.validation_s, scope=scope)
    add_run_flag(b, "granularity_pct", dest="granularity", default=run_defaults.granularity_pct, scope=scope)
    b.set_defaults(func=cmd_bench)
    from zeroloss.cli.host import register as register_host
    from zeroloss.cli.lab import register as register_lab
    from zeroloss.cli.report import register as register_report
    register_report(sub)
    register_host(sub)
    register_lab(sub)
    from zeroloss.cli.events import register as register_events

    register_events(sub, _set_value)
    from zeroloss.cli.history import register as register_history
    register_history(sub)
    return p


def _on_sigterm(signum, frame):
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    signal.signal(signal.SIGTERM, _on_sigterm)  # stop our processes on SIGTERM as on Ctrl-C
    try:
        _wire()
        code = args.func(args)
        sys.stdout.flush()  # a reader that left (`| head`) shows here, not as "Exception ignored" at exit
        return code
    except ZeroLossError as e:
        print(f"zeroloss: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("zeroloss: interrupted; every process started was stopped", file=sys.stderr)
        return 130
    except BrokenPipeError:
        if not _stdout_reader_left():
            raise  # another pipe or socket broke: a fault, not a reader that has seen enough
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # the interpreter's last flush: quiet
        return 141  # 128 + SIGPIPE, as a shell reports a command its reader left


def _wire() -> None:
    """What the lower layers are handed from above: how the bench lock's clean-up (session.reap) marks a result
    file whose writer is gone, which is the results package's format (session sits below it)."""
    from zeroloss.drivers import session

    def mark(path: Path) -> list[str]:  # the results package is imported only when a stale file is found
        from zeroloss.results.resultfile import mark_interrupted

        return mark_interrupted(path)

    session.mark_results_with(mark)


def _stdout_reader_left() -> bool:
    """Whether stdout is a pipe whose reader has closed it (poll reports POLLERR on such a pipe)."""
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _, events in poller.poll(0))
    except (OSError, ValueError):  # stdout is no file (a test's StringIO)
        return False


if __name__ == "__main__":
    sys.exit(main())
