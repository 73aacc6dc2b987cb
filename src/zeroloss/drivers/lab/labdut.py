"""A lab's compute node as the loss ledger sees it: its OVS (counters, PMDs, meters, drops, rxq placement) and
its VNFs' DPDK counters, read over one SSH session per host, one round trip per reading. Nothing on the node
is changed, except the settings a run is explicitly allowed to change (--allow-dut-changes), each restored at
the end.
"""

from __future__ import annotations

import json
import shlex
import time
from collections.abc import Callable

from zeroloss.core.cpuset import parse_list
from zeroloss.core.errors import ZeroLossError
from zeroloss.host.rxqorder import parse_dpif_show
from zeroloss.host.ssh import SshTarget
from zeroloss.loss.ledger import STAT_KEYS

from ..dut.ovsread import parse_interface_statistics, vsctl_names
from ..dut.ovsstats import (
    CT_STATS_MAX,
    CT_STATS_READ,
    DATAPATH_READS,
    NETDEV_DP,
    datapath_state,
    parse_coverage_drops,
    parse_ct_limits,
    parse_dump_ports,
    parse_meter_config,
    parse_meter_stats,
    parse_pmd_stats,
)
from ..proc import ComponentDied
from .kube import KubeExecTarget
from .labfile import Lab
from .labsriov import LabVfs, summed, uses_ovs
from .remote import RemoteAgent

ETHDEV_KEYS = (*STAT_KEYS, "q_ipackets", "q_opackets")


def _dpctl_set(dp: str, ref: str, value: str) -> list[str]:
    """The ovs-appctl command (after -t CTL) that sets a datapath setting of --dut-set dpctl:DP:REF=VALUE."""
    if ref == "ct-maxconns":
        return ["dpctl/ct-set-maxconns", dp, value]
    return ["dpctl/ct-set-limits", dp, f"default={value}"]


class LabDut:
    """The remote OVS and VNFs of a lab file; start() opens the sessions and finds OVS, stop() closes them."""

    def __init__(self, lab: Lab):
        self.lab = lab
        self.agents: dict[str, RemoteAgent] = {}
        self.ctl = ""                                 # ovs-vswitchd's control socket on the host
        self.pids: dict[str, int] = {}               # ovs-vswitchd, ovsdb-server
        self.bridge_of: dict[str, str] = {}          # OVS port -> bridge
        self.dp_names: dict[int, str] = {}           # datapath port number -> OVS port
        self.path_ports: list[str] = []
        self.meter_bridges: set[str] = set()
        self.stage_procs: set[str] = set()           # counters of several VNFs summed (pairs in parallel)
        self.changes: list[tuple[list[str], list[str]]] = []  # (undo argv, what was done) in the order done
        self.readings = 0
        self.vfs = LabVfs(lab)                        # the lab's SR-IOV VF ports (sriov:), none for an OVS lab
        self.vf_paths: list[dict] = []
        self.ovs = uses_ovs(lab)                      # False: every path is generator -> VF -> VNF -> VF, no OVS
        self.version = ""

    # sessions -------------------------------------------------------------------------------------------
    def agent(self, target: SshTarget | KubeExecTarget | None = None) -> RemoteAgent:
        target = target or self.lab.dut
        a = self.agents.get(target.target)
        if a is None:
            a = self.agents[target.target] = RemoteAgent(target)
            a.start()
        return a

    @property
    def env(self) -> dict:
        return {"OVS_RUNDIR": self.lab.ovs_rundir}

    def vsctl_argv(self, *args: str) -> list[str]:
        return ["ovs-vsctl", f"--db={self.lab.ovs_db}", "--timeout=10", *args]

    def ofctl_argv(self, cmd: str, bridge: str, *args: str, version: str = "OpenFlow13") -> list[str]:
        return ["ovs-ofctl", "-O", version, "--names", cmd, bridge, *args]

    def _req_run(self, argv: list[str]) -> dict:
        return {"op": "run", "argv": argv, "env": self.env, "timeout": 15}

    def _req_ctl(self, cmd: str, *args: str) -> dict:
        return {"op": "unixctl", "path": self.ctl, "cmd": cmd, "args": list(args)}

    def _out(self, reply: dict, what: str) -> str:
        if reply.get("rc"):
            lines = (reply.get("err") or "").strip().splitlines()
            raise ZeroLossError(f"{self.lab.dut.target}: {what} failed: {lines[-1] if lines else reply.get('rc')}")
        return reply["out"]

    def vsctl(self, *args: str) -> str:
        return self._out(self.agent().run(self.vsctl_argv(*args), env=self.env), "ovs-vsctl " + " ".join(args[:3]))

    def appctl(self, cmd: str, *args: str) -> str:
        return self._out(self.agent().call("unixctl", path=self.ctl, cmd=cmd, args=list(args)), f"ovs-appctl {cmd}")

    def start(self) -> LabDut:
        self.agent()
        if not self.ovs:  # a pure SR-IOV node: its VNFs' sessions and its VFs, no ovs-vswitchd to find
            for v in self.lab.vnfs:
                if v.remote:
                    self.agent(self.lab.vnf_target(v))
            self.health()
            self.check_vnfs()
            self._start_vfs()
            return self
        self.find_ovs()
        for v in self.lab.vnfs:  # a guest's or a CNF pod's session opened now: a wrong pod is one line before traffic
            if v.remote:
                self.agent(self.lab.vnf_target(v))
        self.health()
        self.check_vnfs()
        version = self.appctl("version").strip().splitlines()
        self.version = version[0] if version else ""
        self.topology()
        self._start_vfs()
        return self

    def check_vnfs(self) -> None:
        """Refuses a VNF whose telemetry socket gives no counters for its two ports: its hops would stand in the
        ledger uncounted, and every frame lost there would be put down to the hops around it."""
        local = [v for v in self.lab.vnfs if not v.remote]
        replies = dict(zip((v.name for v in local), self.agent().batch([self._tel(v) for v in local]), strict=True))
        for k, v in enumerate(self.lab.vnfs):
            if v.remote:
                req = {key: x for key, x in self._tel(v).items() if key != "op"}
                replies[v.name] = self.agent(self.lab.vnf_target(v)).call("telemetry", **req)
            reply = replies[v.name]
            if _ethdev(reply) is None:
                why = reply.get("error") if isinstance(reply, dict) and reply.get("error") else \
                    "no /ethdev/stats for ports 0 and 1"
                raise ZeroLossError(f"{self.lab.path}: dut.vnfs.{k} ({v.name}): its telemetry socket {v.telemetry} "
                                    f"on {self.lab.vnf_target(v).target} gives no counters ({why})",
                                    "set telemetry to the VNF's dpdk_telemetry.v2 socket (DPDK's --file-prefix "
                                    "folder, e.g. /var/run/dpdk/rte/) and check that the VNF runs")

    def find_ovs(self) -> None:
        """ovs-vswitchd's and ovsdb-server's pids from their pid files, and vswitchd's control socket (again after
        a restart: zeroloss events' ovs-restart)."""
        a = self.agent()
        rundir = self.lab.ovs_rundir
        r = a.batch([self._req_run(["cat", f"{rundir}/ovs-vswitchd.pid"]),
                     self._req_run(["cat", f"{rundir}/ovsdb-server.pid"])])
        if r[0]["rc"] or not r[0]["out"].split() or not r[0]["out"].split()[0].isdigit():
            raise ZeroLossError(f"{a.name}: no ovs-vswitchd in {rundir} ({(r[0]['err'] or '').strip() or 'no pid'})",
                                "set dut.ovs.rundir in the lab file to OVS's run directory")
        self.pids["ovs-vswitchd"] = int(r[0]["out"].split()[0])
        if not r[1]["rc"] and r[1]["out"].split() and r[1]["out"].split()[0].isdigit():
            self.pids["ovsdb-server"] = int(r[1]["out"].split()[0])
        self.ctl = f"{rundir}/ovs-vswitchd.{self.pids['ovs-vswitchd']}.ctl"

    def _start_vfs(self) -> None:
        if self.vfs.specs:
            self.vfs.start(self.agent().call, self._req_run)
            self.vfs.parse(self.agent().batch(self.vfs.items(self._req_run)))  # the PFs' VF settings, for the audit

    def topology(self) -> None:
        """Bridges, their ports and the datapath's port numbers (none on a node without OVS)."""
        if not self.ovs:
            return
        a = self.agent()
        brs = vsctl_names(self.vsctl("list-br"))
        outs = a.batch([self._req_run(self.vsctl_argv("list-ports", b)) for b in brs] + [self._req_ctl("dpif/show")])
        self.bridge_of = {p: b for b, r in zip(brs, outs[:-1], strict=True)
                          for p in vsctl_names(self._out(r, "list-ports"))}
        for b in brs:
            self.bridge_of.setdefault(b, b)
        self.dp_names = {n: p for p, n in parse_dpif_show(self._out(outs[-1], "dpif/show"),
                                                           f"{a.name}'s dpif/show").items()}

    def trace(self, bridge: str, match: str) -> str:
        return self.appctl("ofproto/trace", bridge, match)

    def other_config(self) -> dict[str, str]:
        from ..dut.ovsports import parse_map

        if not self.ovs:
            return {}
        return {k: str(v) for k, v in parse_map(self.vsctl("get", "Open_vSwitch", ".", "other_config")).items()}

    def node_settings(self) -> dict:
        """What zeroloss tune starts from (tune/labknobs.Node): OVS's other_config and the interfaces at the ends
        of the path (the generator ports' and the VNFs') with their type, MTU, options and ingress policing."""
        self._need_ovs("zeroloss tune changes OVS settings")
        gen = [p.dut_port for p in self.lab.ports]
        vnf = [p for v in self.lab.vnfs for p in v.ports]
        cols = ("name", "type", "mtu", "mtu_request", "options", "ingress_policing_rate")
        text = self.vsctl("--format=json", f"--columns={','.join(cols)}", "list", "Interface", *gen, *vnf)
        ports = {}
        for row in json.loads(text)["data"]:
            d = dict(zip(cols, (_ovsdb_value(x) for x in row), strict=True))
            ports[d["name"]] = {"type": d["type"] or "", "mtu": d["mtu"], "mtu_request": d["mtu_request"],
                                "options": {str(k): str(v) for k, v in (d["options"] or {}).items()},
                                "policing_kbps": int(d["ingress_policing_rate"] or 0)}
        return {"other_config": self.other_config(), "ports": ports, "gen_ports": gen, "vnf_ports": vnf,
                "spare_cpus": parse_list(self.lab.spare_cpus) if self.lab.spare_cpus else [], "ct": self.ct_settings()}

    def ct_settings(self) -> dict[str, str]:
        """Conntrack's maxconns and default zone limit on the node (empty where OVS does not answer)."""
        out = {}
        try:
            out["ct-maxconns"] = self.appctl("dpctl/ct-get-maxconns", NETDEV_DP).strip()
            out["ct-limits:default"] = str(parse_ct_limits(self.appctl("dpctl/ct-get-limits", NETDEV_DP))
                                           .get("default_limit", 0))
        except ComponentDied:
            raise
        except ZeroLossError:
            pass
        return out

    def use_path(self, ports: list[str], meters: list[str], procs: list[str]) -> None:
        """The OVS ports, meters and VNF stages the trials' frames cross: what every reading reads."""
        self.path_ports = sorted(set(ports))
        self.meter_bridges = {m.split("/")[0] for m in meters}
        self.stage_procs = set(procs)

    # readings -------------------------------------------------------------------------------------------
    def path_bridges(self) -> list[str]:
        """The bridges of the OVS ports on the traffic's path."""
        return sorted({self.bridge_of[p] for p in self.path_ports if p in self.bridge_of})

    def counters(self) -> dict:
        """Every stage's counters in one round trip per host: OVS's port counters (OpenFlow 1.4, live), the
        meters on the path, drop coverage, PMD cycles, and each VNF's ethdev counters (telemetry)."""
        if not self.ovs:
            return self._vf_counters()
        brs = self.path_bridges()
        meter_brs = sorted(self.meter_bridges)
        items = [self._req_run(self.ofctl_argv("dump-ports", b, version="OpenFlow14")) for b in brs]
        items += [self._req_run(self.ofctl_argv("meter-stats", b)) for b in meter_brs]
        items += [self._req_ctl("coverage/show"), self._req_ctl("dpif-netdev/pmd-stats-show"),
                  {"op": "alive", "pids": list(self.pids.values())}]
        local_vnfs = [v for v in self.lab.vnfs if not v.remote]
        items += [self._tel(v) for v in local_vnfs]
        items += self.vfs.items(self._req_run)  # SR-IOV VFs on the path: their PFs' per-VF counters
        r = self.agent().batch(items)
        t_ns = time.monotonic_ns()
        self.readings += 1
        self._check_alive(r[len(brs) + len(meter_brs) + 2])
        ports: dict[str, dict] = {}
        for reply in r[:len(brs)]:
            ports.update(parse_dump_ports(self._out(reply, "ovs-ofctl dump-ports")))
        meters = {}
        for b, reply in zip(meter_brs, r[len(brs):len(brs) + len(meter_brs)], strict=True):
            for mid, m in parse_meter_stats(self._out(reply, "ovs-ofctl meter-stats")).items():
                meters[f"{b}/{mid}"] = m
        k = len(brs) + len(meter_brs)
        ovs = {"ports": ports, "meters": meters, "coverage": parse_coverage_drops(self._out(r[k], "coverage/show")),
               "pmds": parse_pmd_stats(self._out(r[k + 1], "pmd-stats-show")), "t_ns": t_ns}
        procs = self._procs(local_vnfs, r[k + 3:k + 3 + len(local_vnfs)])
        if self.vfs.specs:
            return {"ovs": ovs, "procs": procs, "vfs": summed(self.vfs.parse(r[k + 3 + len(local_vnfs):]),
                                                             self.vf_paths)}
        return {"ovs": ovs, "procs": procs}

    def _vf_counters(self) -> dict:
        """A reading of a node without OVS: the VNFs' ethdev counters and the VFs' (their PFs'), one round trip."""
        local_vnfs = [v for v in self.lab.vnfs if not v.remote]
        r = self.agent().batch([self._tel(v) for v in local_vnfs] + self.vfs.items(self._req_run))
        self.readings += 1
        procs = self._procs(local_vnfs, r[:len(local_vnfs)])
        return {"ovs": {"t_ns": time.monotonic_ns()}, "procs": procs,
                "vfs": summed(self.vfs.parse(r[len(local_vnfs):]), self.vf_paths)}

    def _procs(self, local_vnfs: list, replies: list) -> dict:
        """The VNFs' ethdev counters: the node's own from the batch's telemetry replies, a guest's or a CNF pod's
        over its own session, and the sums of the stages that name several VNFs (a+b)."""
        procs = {v.name: stats for v, reply in zip(local_vnfs, replies, strict=True)
                 if (stats := _ethdev(reply)) is not None}
        for v in self.lab.vnfs:
            if v.remote:  # a guest's ssh, a CNF pod's exec
                req = {k: x for k, x in self._tel(v).items() if k != "op"}
                stats = _ethdev(self.agent(self.lab.vnf_target(v)).call("telemetry", **req))
                if stats is not None:
                    procs[v.name] = stats
        return self._sums(procs)

    def _sums(self, procs: dict) -> dict:
        """procs with the stages that name several VNFs (a+b) set to the sums of their VNFs' counters."""
        procs = dict(procs)
        for name in sorted(h for h in self.stage_procs if "+" in h):
            parts = [procs.get(n) for n in name.split("+")]
            if all(parts):
                procs[name] = [{key: sum(p[i].get(key, 0) for p in parts) for key in STAT_KEYS} for i in (0, 1)]
        return procs

    def derive(self, reading: dict) -> dict:
        """A reading with its stage sums recomputed from its VNFs' counters (Probe.derive): after a VNF's counters
        were rebased for its restart, a stage summing it with another is the sum of the rebased counters."""
        return {**reading, "procs": self._sums(reading["procs"])} if "procs" in reading else reading

    def _need_ovs(self, what: str) -> None:
        if not self.ovs:
            raise ZeroLossError(f"lab: {what}, and this lab's paths cross no OVS (every generator port is cabled to "
                                "an SR-IOV VF)", "use a lab file whose generator ports are cabled to OVS ports")

    def _tel(self, v) -> dict:
        return {"op": "telemetry", "path": v.telemetry, "cmds": ["/ethdev/stats,0", "/ethdev/stats,1"],
                "timeout": 1.0}

    def _check_alive(self, alive: dict) -> None:
        for name, pid in self.pids.items():
            if not alive.get(str(pid), True):
                raise ComponentDied(f"{name} (pid {pid}) on {self.lab.dut.target} is no longer running")

    def health(self) -> None:
        """Raises ComponentDied when a session is gone or OVS on the node stopped."""
        for a in self.agents.values():
            if not a.alive():
                raise a.lost()
        self._check_alive(self.agent().call("alive", pids=list(self.pids.values())))

    def state(self) -> dict:
        """OVS state kept with each trial, as on the bench: PMD queues and stats, drop coverage, datapath ports,
        interfaces' OVSDB statistics and the meters on the path (not mempools: see below); none without OVS."""
        if not self.ovs:
            return {}
        keys = [("pmd_rxq_show", "dpif-netdev/pmd-rxq-show"), ("pmd_stats_show", "dpif-netdev/pmd-stats-show"),
                ("coverage_drops", "coverage/show"), ("dpctl_show", "dpctl/show")]
        items = [self._req_ctl(c) for _, c in keys]
        items.append(self._req_run(self.vsctl_argv("--format=csv", "--data=bare", "--no-headings",
                                                   "--columns=name,statistics", "list", "Interface")))
        # never netdev-dpdk/get-mempool-info: OVS 3.1 crashes on it for a vhost-user port that has no mempool yet
        # (a port whose guest never connected); a reading must not be able to take a node down
        items += [self._req_run(self.ofctl_argv("dump-meters", b)) for b in sorted(self.meter_bridges)]
        items += [self._req_ctl(*args) for _, args in DATAPATH_READS]
        r = self.agent().batch(items)
        out: dict = {}
        for (key, _), reply in zip(keys, r, strict=False):
            text = reply["out"] if not reply.get("rc") else f"unavailable: {reply.get('err', '').strip()}"
            if key == "coverage_drops":
                text = "\n".join(line for line in text.splitlines() if "drop" in line)
            out[key] = text
        k = len(keys)
        out["interface_statistics"] = parse_interface_statistics(r[k]["out"]) if not r[k].get("rc") else {}
        meters = {}
        for b, x in zip(sorted(self.meter_bridges), r[k + 1:k + 1 + len(self.meter_bridges)], strict=True):
            if not x.get("rc"):
                meters.update({f"{b}/{mid}": m for mid, m in parse_meter_config(x["out"]).items()})
        if meters:
            out["meters"] = meters
        out["datapath"] = self._datapath(out["dpctl_show"], r[-len(DATAPATH_READS):])
        return out

    def _datapath(self, dpctl_show: str, replies: list[dict]) -> dict:
        """The datapath's flows, flow limit, revalidators and conntrack state as on the bench (ovsstats.datapath_state);
        ct-stats-show (it walks every connection) in a second round trip, only with few connections."""
        texts = {"dpctl_show": dpctl_show}
        texts.update({key: x["out"] for (key, _), x in zip(DATAPATH_READS, replies, strict=True) if not x.get("rc")})
        nconns = datapath_state(texts).get("ct", {}).get("nconns")
        if nconns is not None and nconns <= CT_STATS_MAX:
            x = self.agent().batch([self._req_ctl(*CT_STATS_READ)])[0]
            if not x.get("rc"):
                texts["ct_stats_show"] = x["out"]
        return datapath_state(texts)

    # changes ----------------------------------------------------------------------------------------------
    def change(self, setting: str) -> dict:
        """Applies one TABLE:RECORD:COLUMN[:KEY]=VALUE with ovs-vsctl and remembers how to undo it."""
        spec, sep, value = setting.partition("=")
        parts = spec.split(":")
        if not sep or len(parts) not in (3, 4) or not all(parts):
            raise ZeroLossError(f"--dut-set {setting!r}: not TABLE:RECORD:COLUMN[:KEY]=VALUE",
                                "e.g. Open_vSwitch:.:other_config:pmd-rxq-assign=roundrobin")
        table, record, column = parts[:3]
        key = parts[3] if len(parts) == 4 else None
        ref = f"{column}:{key}" if key else column
        self._need_ovs(f"--dut-set {setting} is an OVS setting")
        if table == "dpctl":
            return self._change_dpctl(record, ref, value, setting)
        before = self.agent().run(self.vsctl_argv("--if-exists", "get", table, record, ref), env=self.env)
        if before["rc"]:
            raise ZeroLossError(f"--dut-set {setting}: {before['err'].strip() or 'ovs-vsctl get failed'}")
        old = before["out"].strip()
        if key is not None and old == "":
            undo = self.vsctl_argv("remove", table, record, column, key)
        else:
            undo = self.vsctl_argv("set", table, record, f"{ref}={old}")
        steps = [(undo, [table, record, ref, value])]
        if table == "Interface" and ref == "mtu_request" and old in ("", "[]"):
            # clearing mtu_request leaves the MTU where it is: the port's MTU is put back first, then the request
            # is cleared as found. A port with no peer yet (a vhost-user client whose socket is not served) shows MTU
            # 0 or []: it then gets 1500, the MTU OVS gives every DPDK netdev it creates (RTE_ETHER_MTU).
            mtu = self.vsctl("get", "Interface", record, "mtu").strip()
            mtu = mtu if mtu.isdigit() and int(mtu) > 0 else "1500"
            steps.append((self.vsctl_argv("set", table, record, f"mtu_request={mtu}"), [table, record, ref, mtu]))
        self.vsctl("set", table, record, f"{ref}={value}")
        self.changes += steps
        return {"setting": f"{table}:{record}:{ref}", "from": old if old != "" else None, "to": value}

    def _change_dpctl(self, dp: str, ref: str, value: str, setting: str) -> dict:
        """Conntrack's limits, which live in the datapath (not OVSDB): dpctl:DP:ct-maxconns=N and
        dpctl:DP:ct-limits:default=N, set with ovs-appctl and undone the same way."""
        if ref == "ct-maxconns":
            old = self.appctl("dpctl/ct-get-maxconns", dp).strip()
        elif ref == "ct-limits:default":
            old = str(parse_ct_limits(self.appctl("dpctl/ct-get-limits", dp)).get("default_limit", 0))
        else:
            raise ZeroLossError(f"--dut-set {setting!r}: dpctl settings are ct-maxconns and ct-limits:default",
                                "e.g. dpctl:netdev@ovs-netdev:ct-maxconns=3000000")
        if not value.isdigit():
            raise ZeroLossError(f"--dut-set {setting!r}: {ref} takes a number of connections")
        self.appctl(*_dpctl_set(dp, ref, value))
        self.changes.append((["ovs-appctl", "-t", self.ctl, *_dpctl_set(dp, ref, old)], ["dpctl", dp, ref, value]))
        return {"setting": f"dpctl:{dp}:{ref}", "from": old, "to": value}

    def reapply_datapath(self) -> list[str]:
        """The --dut-set dpctl settings set again (a restarted ovs-vswitchd starts with its datapath's defaults:
        they live in the datapath, not in OVSDB); what was set."""
        done = []
        for _, what in self.changes:
            if what[0] == "dpctl":
                _, dp, ref, value = what
                self.appctl(*_dpctl_set(dp, ref, value))
                done.append(f"dpctl:{dp}:{ref}={value}")
        return done

    def restore(self, note: Callable[[str], None] = lambda _: None) -> list[str]:
        """Undoes every change, newest first, telling note each undo done; the faults, if any (the node then needs
        a hand)."""
        faults = []
        while self.changes:
            undo, what = self.changes.pop()
            try:
                r = self.agent().run(undo, env=self.env)
                if r["rc"]:
                    faults.append(f"{':'.join(what[:3])}: {r['err'].strip()}")
                else:
                    shown = [w for w in undo if not w.startswith(("--db=", "--timeout="))]
                    note(f"restored {':'.join(what[:3])} on {self.lab.dut.target}: {shlex.join(shown)}")
            except ComponentDied as e:
                faults.append(f"{':'.join(what[:3])}: {e.message}; undo by hand: {shlex.join(undo)}")
                self.changes.clear()
                break
        return faults

    def stop(self, note: Callable[[str], None] = lambda _: None) -> list[str]:
        faults = self.restore(note) if self.changes else []
        for a in self.agents.values():
            a.close()
        self.agents.clear()
        return faults

    def __enter__(self) -> LabDut:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def _ovsdb_value(x):
    """A cell of ovs-vsctl --format=json: an atom, ["set", [...]] (None when empty, the atom when one), ["map",
    [[k, v]...]] as a dict, ["uuid", u] as u."""
    if isinstance(x, list) and len(x) == 2 and x[0] in ("set", "map", "uuid", "named-uuid"):
        if x[0] == "map":
            return {_ovsdb_value(k): _ovsdb_value(v) for k, v in x[1]}
        if x[0] == "set":
            items = [_ovsdb_value(i) for i in x[1]]
            return None if not items else items[0] if len(items) == 1 else items
        return x[1]
    return x


def _ethdev(reply: dict) -> list[dict] | None:
    """A VNF's telemetry reply as the ledger's two port counter rows; None when it did not answer."""
    if not isinstance(reply, dict) or "error" in reply:
        return None
    rows = [reply.get("/ethdev/stats,0"), reply.get("/ethdev/stats,1")]
    if not all(isinstance(r, dict) for r in rows):
        return None
    return [{k: v for k, v in r.items() if k in ETHDEV_KEYS} for r in rows]
