"""The readings of our private OVS around each trial: counters, PMD histograms, meters, mempools and the
datapath's state (a base of drivers.dut.ovs.Ovs)."""

from __future__ import annotations

import re

from zeroloss.core.errors import ZeroLossError

from ..proc import ComponentDied
from .ovsctl import READ_S, OvsCtl
from .ovsstats import (
    CT_STATS_MAX,
    CT_STATS_READ,
    DATAPATH_READS,
    datapath_state,
    parse_coverage_drops,
    parse_dump_ports,
    parse_mempool,
    parse_meter_config,
    parse_meter_stats,
    parse_pmd_stats,
    pmd_perf,
)


def parse_interface_statistics(csv_text: str) -> dict[str, dict[str, int]]:
    """`ovs-vsctl --format=csv --data=bare --columns=name,statistics list Interface` as {name: {key: n}}."""
    import csv
    import io

    out = {}
    for row in csv.reader(io.StringIO(csv_text)):
        if len(row) == 2:
            pairs = (kv.split("=", 1) for kv in row[1].split() if "=" in kv)
            out[row[0]] = {k: int(v) for k, v in pairs if re.fullmatch(r"-?\d+", v)}
    return out


def vsctl_names(text: str) -> list[str]:
    """ovs-vsctl list-br / list-ports output: one name a line (a name may hold spaces)."""
    return [line for line in text.splitlines() if line.strip()]


class OvsRead(OvsCtl):
    """What OVS says now, each call bounded by READ_S: a daemon that does not answer is a fault."""

    def interface_statistics(self) -> dict[str, dict]:
        """Every interface's OVSDB statistics column (rx_dropped, tx_dropped, ovs_tx_failure_drops,
        ovs_tx_retries, ovs_tx_mtu_exceeded_drops...), in one call. OVS refreshes it every 5 s."""
        out = self.vsctl("--format=csv", "--data=bare", "--no-headings", "--columns=name,statistics",
                         "list", "Interface", timeout=READ_S)
        return parse_interface_statistics(out)

    def bridges(self) -> list[str]:
        """Our bridges: those we gave OpenFlow rules (asking OVSDB costs a process per trial)."""
        return list(self.flows) or vsctl_names(self.vsctl("list-br"))

    def counters(self) -> dict:
        """Live counters for the loss ledger: every port's packets, drops and custom drop counters (OpenFlow 1.4
        port statistics, read now, not OVSDB's 5 s copy), each meter's drops, the datapath's drop coverage
        counters and each PMD's cycles."""
        ports: dict[str, dict] = {}
        meters: dict[str, dict] = {}
        for br in self.bridges():
            ports.update(parse_dump_ports(self.ofctl("dump-ports", br, version="OpenFlow14", timeout=READ_S)))
            if br in self.meters:
                for mid, m in parse_meter_stats(self.ofctl("meter-stats", br, timeout=READ_S)).items():
                    meters[f"{br}/{mid}"] = m
        return {"ports": ports, "meters": meters,
                "coverage": parse_coverage_drops(self.appctl("coverage/show", timeout=READ_S)),
                "pmds": parse_pmd_stats(self.appctl("dpif-netdev/pmd-stats-show", timeout=READ_S))}

    def pmd_perf(self) -> dict[str, dict]:
        """Each PMD's iterations and cycles-per-iteration histogram (dpif-netdev/pmd-perf-show), per core."""
        return pmd_perf(self.appctl("dpif-netdev/pmd-perf-show", timeout=READ_S))

    def meter_config(self) -> dict[str, dict]:
        return {f"{br}/{mid}": m for br in self.meters for mid, m in
                parse_meter_config(self.ofctl("dump-meters", br, timeout=READ_S)).items()}

    def mempools(self, ports: list[str]) -> dict[str, dict]:
        """Each DPDK port's mempool (name, mbufs, in use) from netdev-dpdk/get-mempool-info."""
        out = {}
        for port in ports:
            try:
                out[port] = parse_mempool(self.appctl("netdev-dpdk/get-mempool-info", port, timeout=READ_S))
            except ComponentDied:
                raise
            except ZeroLossError:
                continue
        return out

    def snapshot(self) -> dict[str, str]:
        """PMD and drop state as OVS prints it (kept per trial in the result file)."""
        out = {}
        for key, args in (("pmd_rxq_show", ("dpif-netdev/pmd-rxq-show",)),
                          ("pmd_stats_show", ("dpif-netdev/pmd-stats-show",)),
                          ("coverage_drops", ("coverage/show",)),
                          ("dpctl_show", ("dpctl/show",))):
            try:
                text = self.appctl(*args, timeout=READ_S)
            except ComponentDied:
                raise
            except ZeroLossError as e:
                text = f"unavailable: {e}"
            if key == "coverage_drops":
                text = "\n".join(line for line in text.splitlines() if "drop" in line)
            out[key] = text
        out["datapath"] = self.datapath_state(out["dpctl_show"])
        return out

    def datapath_state(self, dpctl_show: str) -> dict:
        """Datapath flows and flow limit, revalidators, conntrack's connections and limits (ovsstats.datapath_state);
        a command this OVS does not answer leaves its figures out."""
        texts = {"dpctl_show": dpctl_show}
        for key, args in DATAPATH_READS:
            try:
                texts[key] = self.appctl(*args, timeout=READ_S)
            except ComponentDied:
                raise
            except ZeroLossError:
                continue
        nconns = datapath_state(texts).get("ct", {}).get("nconns")
        if nconns is not None and nconns <= CT_STATS_MAX:
            try:
                texts["ct_stats_show"] = self.appctl(*CT_STATS_READ, timeout=READ_S)
            except ComponentDied:
                raise
            except ZeroLossError:
                pass
        return datapath_state(texts)
