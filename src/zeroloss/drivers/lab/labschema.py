"""The lab file's shape: LAB_SCHEMA (jsonschema), its patterns, and a fault as one line naming the key
(labfile.parse checks a document against it first, then for consistency)."""

from __future__ import annotations

import re

import jsonschema

from .kube import CONTEXT, LABEL, POD, TOOLS

MAC = r"^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$"
IPV4 = r"^(25[0-5]|2[0-4][0-9]|1?[0-9]?[0-9])(\.(25[0-5]|2[0-4][0-9]|1?[0-9]?[0-9])){3}$"
NAME = r"^[A-Za-z0-9_.-]{1,32}$"
CPU_LIST = r"^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$"
KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,39}$")  # what an unknown key must look like to be named in a fault
SSH_DEST = r"^[^-\s]\S*$"  # an ssh destination: ssh would read one beginning with '-' as an option
DOMAIN = r"^[A-Za-z0-9_.+:][A-Za-z0-9_.+:-]{0,63}$"  # a libvirt domain name (virsh dumpxml NAME)

# a command the node runs for an event (ovs.restart, vnfs[].restart): a string split into words as a shell would
# (no pipes or redirections: give ["sh", "-c", "..."] for those) or an argv list; checked further by labfile.command()
COMMAND = {"type": ["string", "array"], "items": {"type": "string"}}

LAB_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["dut", "generator", "traffic"],
    "properties": {
        "dut": {
            "type": "object", "additionalProperties": False, "required": ["ssh"],
            "properties": {
                "ssh": {"type": "string", "pattern": SSH_DEST},
                "ssh_config": {"type": "string", "minLength": 1},
                "ssh_options": {"type": "array", "items": {"type": "string"}},
                "sudo": {"enum": ["auto", "always", "never"]},
                "sriov_policy": {"type": "string", "minLength": 1},
                "ovs": {"type": "object", "additionalProperties": False, "properties": {
                    "rundir": {"type": "string", "minLength": 1},
                    "db": {"type": "string", "minLength": 1},
                    "spare_cpus": {"type": "string", "pattern": CPU_LIST},
                    "restart": COMMAND}},
                "vnfs": {"type": "array", "items": {
                    "type": "object", "additionalProperties": False, "required": ["name", "ports", "telemetry"],
                    "properties": {
                        "name": {"type": "string", "pattern": NAME},
                        "ports": {"type": "array", "items": {"type": "string", "minLength": 1},
                                  "minItems": 2, "maxItems": 2},
                        "telemetry": {"type": "string", "minLength": 1},
                        "ssh": {"type": "string", "pattern": SSH_DEST},
                        "kubectl": {"type": "object", "additionalProperties": False, "required": ["pod"],
                                    "properties": {
                                        "pod": {"type": "string", "pattern": POD},
                                        "namespace": {"type": "string", "pattern": LABEL},
                                        "container": {"type": "string", "pattern": LABEL},
                                        "context": {"type": "string", "pattern": CONTEXT},
                                        "tool": {"enum": list(TOOLS)},
                                        "kubeconfig": {"type": "string", "minLength": 1}}},
                        "vm": {"type": "object", "additionalProperties": False, "required": ["domain"],
                               "properties": {"domain": {"type": "string", "pattern": DOMAIN}}},
                        "forward": {"enum": ["mac", "io"]},
                        "restart": COMMAND,
                        "peer_macs": {"type": "array", "items": {"type": "string", "pattern": MAC},
                                      "minItems": 2, "maxItems": 2}}}},
            }},
        "generator": {
            "type": "object", "additionalProperties": False, "required": ["ports"],
            "properties": {
                "lcores": {"type": "string", "minLength": 1},
                "ports": {"type": "array", "minItems": 2, "items": {
                    "type": "object", "additionalProperties": False,
                    "required": ["name", "device", "dut_port", "dst_mac"],
                    "properties": {
                        "name": {"type": "string", "pattern": NAME},
                        "device": {"type": "string", "minLength": 1},
                        "dut_port": {"type": "string", "minLength": 1},
                        "mac": {"type": "string", "pattern": MAC},
                        "dst_mac": {"type": "string", "pattern": MAC},
                        "ip": {"type": "string", "pattern": IPV4},
                        "dst_ip": {"type": "string", "pattern": IPV4},
                        "vlan": {"type": "integer", "minimum": -1, "maximum": 4094},
                        "speed_gbps": {"type": "number", "exclusiveMinimum": 0, "maximum": 1000}}}}}},
        "traffic": {
            "type": "object", "additionalProperties": False, "required": ["pairs"],
            "properties": {
                "pairs": {"type": "array", "minItems": 1, "items": {
                    "type": "array", "items": {"type": "string"}, "minItems": 2, "maxItems": 2}},
                "direction": {"enum": ["bidirectional", "unidirectional", "reverse"]},
                "flows": {"type": "integer", "minimum": 1, "maximum": 1 << 20},
                "learning": {"oneOf": [{"const": False}, {
                    "type": "object", "additionalProperties": False, "properties": {
                        "rate_pps": {"type": "number", "minimum": 1, "maximum": 1e6},
                        "seconds": {"type": "number", "minimum": 0.1, "maximum": 60}}}]}}},
    },
}


def schema_fault(doc: dict) -> str | None:
    """The first fault of a document against LAB_SCHEMA (the shallowest key first) as 'KEY: what', or None."""
    # min, not sorted()[0]: the same first fault (ties keep the validator's order), without holding every fault
    # (a 64 KiB file can have 32,000)
    first = min(jsonschema.Draft202012Validator(LAB_SCHEMA).iter_errors(doc),
                key=lambda e: (len(list(e.absolute_path)), list(map(str, e.absolute_path))), default=None)
    if first is None:
        return None
    return f"{_where(first)}: {_message(first)}"


def _where(err: jsonschema.ValidationError) -> str:
    path = ".".join(str(p) for p in err.absolute_path)
    return path or "the file"


def _message(err: jsonschema.ValidationError) -> str:
    v = err.validator
    if v == "additionalProperties":
        # the first unknown key alone, and only when it reads as a key: a file that is not a lab file (a password
        # file, a private key) is never echoed line by line
        known = list(err.schema.get("properties", {}))
        extra = [k for k in err.instance if k not in known]
        first = f"unknown key {extra[0]!r}" if KEY.match(str(extra[0])) else \
            "an unknown key that is no key name (its text not shown)"
        more = f" and {len(extra) - 1} more" if len(extra) > 1 else ""
        return f"{first}{more} (known: {', '.join(known)})"
    if v == "required":
        return err.message.replace("is a required property", "is missing")
    if v == "pattern":
        kind = {MAC: "a MAC address like 02:00:00:00:00:01", IPV4: "an IPv4 address",
                NAME: "a name of letters, digits, _ . - (at most 32)",
                CPU_LIST: "a CPU list like 2-3,6",
                DOMAIN: "a libvirt domain name (virsh list --all)",
                POD: "a pod name (lower-case letters, digits, '-' and '.')",
                LABEL: "a Kubernetes name (lower-case letters, digits and '-', at most 63)",
                CONTEXT: "a kubeconfig context (no spaces, not beginning with '-')",
                SSH_DEST: "an ssh destination (a Host of your ssh config or [user@]host; not empty, no spaces, "
                          "not beginning with '-')"}.get(err.validator_value, err.validator_value)
        return f"{err.instance!r} is not {kind}"
    if v == "enum":
        return f"{err.instance!r} is not one of {', '.join(map(str, err.validator_value))}"
    if v == "oneOf":
        return f"{err.instance!r} must be false or a map with rate_pps and seconds"
    return err.message
