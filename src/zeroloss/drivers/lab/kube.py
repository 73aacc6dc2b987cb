"""A CNF in lab mode: a pod reached through the user's own `kubectl` (or OpenShift's `oc`), as a VM guest is reached
through `ssh`. `kubectl exec -i` keeps one session open for zeroloss's reader (agent.py) on the pod's python3; the
CNF's DPDK telemetry socket is read inside the pod, never changed (lab mode observes).

Its kubeconfig, context, credentials and RBAC are the user's: zeroloss passes --kubeconfig and --context when the lab
file names them and nothing else. kubectl's own complaints are turned into one line with the fix; the texts matched
are the ones kubectl prints (sources in tests/fixtures/kube/README).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

TOOLS = ("kubectl", "oc")
# Kubernetes object names (apimachinery validation): a pod is a DNS-1123 subdomain, a namespace and a container a
# DNS-1123 label; neither can begin with '-', so none is read as an option by kubectl
POD = r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$"
LABEL = r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"
CONTEXT = r"^[^-\s][^\s]*$"  # (spelt unlike labfile.SSH_DEST: each pattern has its own message)


@dataclass(frozen=True)
class KubeExecTarget:
    """A pod's container as a lab host: argv(cmd) runs cmd there through `kubectl exec -i` (stdin kept open, no TTY),
    so RemoteAgent drives it as it drives an SshTarget."""

    pod: str
    namespace: str = "default"
    container: str | None = None
    context: str | None = None
    tool: str = "kubectl"
    kubeconfig: str | None = None

    @property
    def target(self) -> str:
        """The pod as messages name it (and the key of its session)."""
        where = f"pod {self.namespace}/{self.pod}" + (f" container {self.container}" if self.container else "")
        return where + (f" (context {self.context})" if self.context else "")

    def base(self) -> list[str]:
        """`kubectl [--kubeconfig K] [--context C]`: the user's cluster as the lab file names it."""
        out = [self.tool]
        if self.kubeconfig:
            out += ["--kubeconfig", self.kubeconfig]
        if self.context:
            out += ["--context", self.context]
        return out

    def argv(self, remote: list[str] | None = None) -> list[str]:
        """The command line running `remote` (an argv) in the pod; '--' ends kubectl's options."""
        out = [*self.base(), "exec", "-i", "-n", self.namespace, self.pod]
        if self.container:
            out += ["-c", self.container]
        return [*out, "--", *(remote or [])]

    def by_hand(self) -> str:
        """The same exec as a user would type it to check the pod."""
        return shlex.join(self.argv(["true"]))

    def no_client(self) -> tuple[str, str]:
        """The one line for a tool that is not installed (not on PATH)."""
        what = "OpenShift's oc" if self.tool == "oc" else "kubectl"
        return (f"cannot run {self.tool} to reach {self.target}: {what} is not installed (not on PATH)",
                f"install {what} on this machine, or set kubectl.tool in the lab file to the one you use")

    def fault(self, err: bytes | str, rc: int | None, connecting: bool) -> tuple[str, str | None]:
        """(message, remedy) for a session that ended: kubectl's last words matched to their cause."""
        text = err.decode(errors="replace") if isinstance(err, bytes) else err
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        last = lines[-1] if lines else (f"{self.tool} exited {rc}" if rc is not None else f"{self.tool} ended")
        cause = explain(text, self)
        if cause:
            return cause
        if connecting:
            return (f"cannot exec into {self.target} with {self.tool}: {last}",
                    f"check that `{self.by_hand()}` works")
        get_pod = shlex.join([*self.base(), "get", "pod", "-n", self.namespace, self.pod])
        return f"lost the {self.tool} exec session to {self.target}: {last}", f"is the pod still running? `{get_pod}`"


def explain(text: str, t: KubeExecTarget) -> tuple[str, str | None] | None:
    """The cause of a failed `kubectl exec` from what kubectl printed (stderr), or None when not one we know."""
    ns, tool = t.namespace, t.tool
    get_pods = shlex.join([*t.base(), "get", "pods", "-n", ns])
    # cmdutil.StandardErrorMessage on the apiserver's NotFound status for the pod GET that precedes the exec
    m = re.search(r'Error from server \(NotFound\): pods "([^"]+)" not found', text)
    if m:
        return (f"{tool}: no pod {m.group(1)!r} in namespace {ns!r} (Error from server (NotFound))",
                f"fix kubectl.pod / kubectl.namespace in the lab file (see `{get_pods}`)")
    # RBAC: the user may not create pods/exec (or get pods) in that namespace
    m = re.search(r'Error from server \(Forbidden\): (.*)', text)
    if m:
        return (f"{tool} may not exec into {t.target}: {m.group(1).strip()}",
                f"grant the user `create` on pods/exec (and `get` on pods) in namespace {ns} with a Role and "
                f"RoleBinding, or use a kubeconfig / context that has them")
    m = re.search(r"error: You must be logged in to the server \(([^)]*)\)", text)
    if m:
        return (f"{tool} is not logged in to the cluster of {t.target} ({m.group(1)})",
                f"log in again (`{tool} login` on OpenShift) or fix kubectl.kubeconfig / kubectl.context")
    # a container name the pod does not have: kubectl's own check (pkg/cmd/exec/exec.go, with the pod's containers),
    # or the apiserver's BadRequest before kubectl checked (kubernetes/kubectl#1768)
    m = re.search(r"container (\S+) is not valid for pod (\S+?)(?: out of: (.*))?$", text, re.M)
    if m:
        names = f" (its containers: {m.group(3).strip()})" if m.group(3) else f" (see `{get_pods}`)"
        return (f"{tool}: pod {m.group(2)} has no container {m.group(1)!r}{names}",
                "fix kubectl.container in the lab file")
    # the kubelet's answer for a container that is not running (crashed, restarting)
    m = re.search(r'unable to upgrade connection: container not found \("([^"]*)"\)', text)
    if m:
        return (f"{tool}: container {m.group(1)!r} of {t.target} is not running (container not found)",
                f"check the pod's containers and restarts with `{get_pods}` and kubectl.container in the lab file")
    if "unable to upgrade connection: pod does not exist" in text:
        return (f"{tool}: {t.target} is gone (pod does not exist)", f"is the CNF running? `{get_pods}`")
    m = re.search(r"cannot exec into a container in a completed pod; current phase is (\S+)", text)
    if m:
        return (f"{tool}: {t.target} has ended (phase {m.group(1)})", "start the CNF again, then run zeroloss")
    m = re.search(r"Error in configuration: context was not found for specified context: (\S+)", text)
    if m:
        return (f"{tool}: no context {m.group(1)!r} in the kubeconfig",
                f"fix kubectl.context in the lab file (see `{shlex.join([*t.base()[:3], 'config', 'get-contexts'])}`)")
    m = re.search(r"The connection to the server (\S+) was refused - did you specify the right host or port\?", text)
    if m:
        return (f"{tool} cannot reach the cluster's API server {m.group(1)} (connection refused)",
                "no kubeconfig or no current context? set kubectl.kubeconfig / kubectl.context in the lab file")
    # the image lacks the command run (zeroloss's reader runs sh, then the pod's python3)
    m = re.search(r'exec: "([^"]+)": executable file not found in \$PATH', text)
    if m:
        return (f"{t.target} cannot run {m.group(1)!r} (executable file not found in $PATH): zeroloss's reader needs "
                "sh and python3 in the pod",
                "use a CNF image with a shell and python3 (DPDK's usertools/dpdk-telemetry.py needs python3 too)")
    if "python3: not found" in text:
        return (f"{t.target} has no python3, which zeroloss's reader needs",
                "use a CNF image with python3 (DPDK's usertools/dpdk-telemetry.py needs it too)")
    return None
