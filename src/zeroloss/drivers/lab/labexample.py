"""The commented lab file `zeroloss lab --example` prints (labfile.EXAMPLE): it passes the lab file's check."""

EXAMPLE = """\
# A zeroloss lab file (docs/lab.md): the compute node, the generator ports cabled to it, and the traffic.
# Check it with: zeroloss lab --check FILE; run with: zeroloss run --lab FILE
dut:
  ssh: compute-0                  # ssh destination: a Host of ~/.ssh/config (its keys, ProxyJump apply) or user@host
  # ssh_config: ~/.ssh/lab_config # optional: another ssh config file
  # ssh_options: [Port=2222]      # optional: extra `ssh -o` settings
  sudo: auto                      # auto (sudo -n unless the login is root) | always | never
  ovs:
    rundir: /var/run/openvswitch  # OVS's run directory (its control socket, the bridges' .mgmt sockets)
    db: unix:/var/run/openvswitch/db.sock
    # spare_cpus: "6,7"           # optional: CPUs zeroloss tune may add to pmd-cpu-mask (none otherwise)
    # restart: "systemctl restart openvswitch-switch"   # optional: the node's command that restarts OVS
    #                             # (zeroloss events --event ovs-restart); a string split into words, or a list
  vnfs:                           # optional: the VNFs on the path, read through their DPDK telemetry
    - name: vnf1
      ports: [vhu0a1b2c3d-4e, vhu5f6a7b8c-9d]   # the OVS ports of the VNF's DPDK ports 0 and 1
      telemetry: /var/run/dpdk/rte/dpdk_telemetry.v2
      # ssh: vnf1-guest           # optional: reach the socket through this ssh destination (e.g. the guest)
      # kubectl: {pod: testpmd-cnf, namespace: cnf}  # or a CNF: the socket inside this pod, through your kubectl
      forward: mac                # mac (rewrites the destination MAC) | io (forwards frames unchanged)
      # restart: "virsh reboot vnf1"  # optional: the node's command that restarts this VNF (zeroloss events
      #                           # --event vnf-restart restarts the first VNF), e.g. [kubectl, delete, pod, ...]
      peer_macs: [3c:fd:fe:00:00:01, 3c:fd:fe:00:00:02]   # mac: where its ports 0 and 1 send
generator:
  lcores: "1"                     # zlgen's worker cores on this machine
  ports:
    - name: A
      device: 0000:3b:00.0        # EAL device: a PCI address, or vdev arguments
      dut_port: dpdk0             # the node's OVS port it is cabled to; or an SR-IOV VF with no OVS on the way:
                                  # sriov:0000:3b:02.0 | sriov:ens2f0/3 (PF/VF index), the same name in the
                                  # VNF's ports (its DPDK port on that VF)
      dst_mac: fa:16:3e:11:22:33  # where its frames go (the VNF's port on that network, or the gateway)
      ip: 198.18.0.1              # optional (default: the RFC 2544 benchmark range)
      dst_ip: 198.19.0.1
      vlan: -1                    # optional: 802.1Q VLAN id of a tagged port, -1 untagged
      # speed_gbps: 25            # optional: the port's reported link speed otherwise
    - name: B
      device: 0000:3b:00.1
      dut_port: dpdk1
      dst_mac: fa:16:3e:44:55:66
traffic:
  pairs: [[A, B]]                 # generator port pairs, any number
  direction: bidirectional        # | unidirectional (first -> second of each pair) | reverse
  # flows: 1024                   # optional: the run's --flows otherwise
  learning: {rate_pps: 1000, seconds: 1}   # frames that teach the node's MAC tables before each search; or false
"""
