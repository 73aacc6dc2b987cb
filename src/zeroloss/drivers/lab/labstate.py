"""The OVS state of a lab node kept with each trial, as on the bench (a base of drivers.lab.labdut.LabDut)."""

from __future__ import annotations

from ..dut.ovsread import parse_interface_statistics
from ..dut.ovsstats import CT_STATS_MAX, CT_STATS_READ, DATAPATH_READS, datapath_state, parse_meter_config
from .labctl import LabCtl
from .replies import Ran, ran


class LabState(LabCtl):
    """PMD queues and stats, drop coverage, datapath ports, OVSDB statistics, meters and the datapath's state."""

    meter_bridges: set[str]

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
        r = ran(self.agent().batch(items))
        out: dict = {}
        for (key, _), reply in zip(keys, r, strict=False):
            text = reply.out if not reply.rc else f"unavailable: {reply.err.strip()}"
            if key == "coverage_drops":
                text = "\n".join(line for line in text.splitlines() if "drop" in line)
            out[key] = text
        k = len(keys)
        meters = {}
        for b, x in zip(sorted(self.meter_bridges), r[k + 1:k + 1 + len(self.meter_bridges)], strict=True):
            if not x.rc:
                meters.update({f"{b}/{mid}": m for mid, m in parse_meter_config(x.out).items()})
        return {**out, "interface_statistics": parse_interface_statistics(r[k].out) if not r[k].rc else {},
                **({"meters": meters} if meters else {}),
                "datapath": self._datapath(out["dpctl_show"], r[-len(DATAPATH_READS):])}

    def _datapath(self, dpctl_show: str, replies: list[Ran]) -> dict:
        """The datapath's flows, flow limit, revalidators and conntrack state as on the bench (ovsstats.datapath_state);
        ct-stats-show (it walks every connection) in a second round trip, only with few connections."""
        texts = {"dpctl_show": dpctl_show}
        texts.update({key: x.out for (key, _), x in zip(DATAPATH_READS, replies, strict=True) if not x.rc})
        nconns = datapath_state(texts).get("ct", {}).get("nconns")
        if nconns is not None and nconns <= CT_STATS_MAX:
            x = Ran.from_json(self.agent().batch([self._req_ctl(*CT_STATS_READ)])[0])
            if not x.rc:
                texts["ct_stats_show"] = x.out
        return datapath_state(texts)
