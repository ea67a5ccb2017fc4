"""Simulated hosts for the multi-host deployment test: one Linux network namespace per host, each joined to a
private bridge by a veth pair, with its own directory (HOME, TMPDIR) — nothing shared but the network.

Everything made here is named with a random tag and recorded, so :meth:`Network.teardown` removes exactly what
this run created (its processes, found with ``ip netns pids``, its namespaces, veths and bridge), even after a
failure half-way through set-up.
"""

from __future__ import annotations

import ipaddress
import os
import secrets
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

NETNS_REQUIRED_ENV = "AIRFLOW_ACID_REQUIRE_NETNS"


class NetnsUnavailable(RuntimeError):
    """This machine cannot create network namespaces (not root, no iproute2, no netns support)."""


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30, check=check)


def netns_unavailable_reason() -> str | None:
    """Why this machine cannot run the multi-host test, or None when it can (root, iproute2, netns that work)."""
    if os.geteuid() != 0:
        return "needs root (ip netns add, veth pairs, a bridge)"
    if shutil.which("ip") is None:
        return "iproute2's `ip` is not installed (apt-get install iproute2)"
    probe = f"acidprobe{secrets.token_hex(3)}"
    made = _ip("netns", "add", probe, check=False)
    if made.returncode != 0:
        return f"`ip netns add` failed: {made.stderr.strip()}"
    _ip("netns", "del", probe, check=False)
    return None


def _free_subnet() -> ipaddress.IPv4Network:
    """A /24 in 10.200.0.0–10.254.255.0 that no route of this machine uses (other runs may be going on)."""
    routes = _ip("-4", "route", "show", "table", "all").stdout + _ip("-4", "addr").stdout
    for _ in range(200):
        net = ipaddress.IPv4Network(f"10.{secrets.choice(range(200, 255))}.{secrets.randbelow(256)}.0/24")
        if f"10.{net.network_address.packed[1]}.{net.network_address.packed[2]}." not in routes:
            return net
    raise NetnsUnavailable("no free 10.x.y.0/24 subnet for the test network")


@dataclass
class Host:
    """One simulated machine: a network namespace, its address on the bridge and its private directory."""

    name: str
    netns: str
    ip: str
    root: Path
    network: Network = field(repr=False)

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def tmp(self) -> Path:
        return self.root / "tmp"

    def base_env(self, path: str) -> dict[str, str]:
        """A clean environment for a process of this host: its own HOME and TMPDIR, nothing inherited."""
        env = {"PATH": path, "HOME": str(self.home), "TMPDIR": str(self.tmp), "LANG": "C.UTF-8",
               "LC_ALL": "C.UTF-8", "PYTHONUNBUFFERED": "1"}
        if os.environ.get("JAVA_HOME"):
            env["JAVA_HOME"] = os.environ["JAVA_HOME"]
        return env

    def command(self, argv: list[str], user: str | None = None) -> list[str]:
        """``argv`` run inside this host's namespace (as ``user`` when given)."""
        prefix = ["ip", "netns", "exec", self.netns]
        if user:
            prefix += ["runuser", "-u", user, "--"]
        return prefix + list(argv)

    def run(self, argv: list[str], env: dict[str, str], *, timeout: float, user: str | None = None,
            cwd: Path | None = None) -> subprocess.CompletedProcess:
        """Run a command to completion on this host (output captured)."""
        return subprocess.run(self.command(argv, user), env=env, capture_output=True, text=True, timeout=timeout,
                              cwd=cwd or self.root)

    def start(self, name: str, argv: list[str], env: dict[str, str], *, user: str | None = None) -> Daemon:
        """Start a long-running process on this host in its own process group; its output goes to a log file."""
        log = self.root / "logs" / f"{name}.log"
        with log.open("ab") as out:
            process = subprocess.Popen(self.command(argv, user), env=env, stdout=out, stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL, cwd=self.root, start_new_session=True)
        daemon = Daemon(name, self, process, log)
        self.network.daemons.append(daemon)
        return daemon

    def pids(self) -> list[int]:
        """Every process running in this host's namespace."""
        listed = _ip("netns", "pids", self.netns, check=False).stdout.split()
        return [int(p) for p in listed if p.isdigit()]

    def crash(self) -> list[int]:
        """SIGKILL every process of this host at once (a machine losing power); returns their pids."""
        pids = self.pids()
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return pids


@dataclass
class Daemon:
    """A long-running process started by :meth:`Host.start`."""

    name: str
    host: Host
    process: subprocess.Popen
    log: Path

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def tail(self, chars: int = 4000) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return f"--- {self.host.name}/{self.name} ({self.log}) ---\n{text[-chars:]}"

    def stop(self, grace_s: float = 10.0) -> None:
        """SIGTERM the process group, SIGKILL it after ``grace_s``."""
        if self.process.poll() is not None:
            return
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout=grace_s)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.process.wait(timeout=10)


@dataclass
class Network:
    """A bridge with one namespace per host; the test process (root namespace) reaches hosts through the bridge."""

    root: Path
    tag: str = field(default_factory=lambda: secrets.token_hex(2))
    subnet: ipaddress.IPv4Network | None = None
    hosts: dict[str, Host] = field(default_factory=dict)
    daemons: list[Daemon] = field(default_factory=list)
    _links: list[str] = field(default_factory=list)
    _namespaces: list[str] = field(default_factory=list)

    @property
    def bridge(self) -> str:
        return f"acbr{self.tag}"

    @property
    def gateway(self) -> str:
        """The root namespace's address on the bridge."""
        return str(self.subnet.network_address + 1)

    def create(self) -> None:
        self.subnet = _free_subnet()
        _ip("link", "add", self.bridge, "type", "bridge")
        self._links.append(self.bridge)
        _ip("addr", "add", f"{self.gateway}/24", "dev", self.bridge)
        _ip("link", "set", self.bridge, "up")

    def add_host(self, name: str) -> Host:
        """A new namespace ``ac<tag>-<name>`` at the next free address, with lo up and its own directory."""
        index = len(self.hosts) + 2
        netns = f"ac{self.tag}-{name}"
        outside, inside = f"ac{self.tag}{index}a", f"ac{self.tag}{index}b"
        address = str(self.subnet.network_address + index)
        _ip("netns", "add", netns)
        self._namespaces.append(netns)
        _ip("link", "add", outside, "type", "veth", "peer", "name", inside)
        self._links.append(outside)
        _ip("link", "set", inside, "netns", netns)
        _ip("link", "set", outside, "master", self.bridge)
        _ip("link", "set", outside, "up")
        for args in (("link", "set", "lo", "up"), ("addr", "add", f"{address}/24", "dev", inside),
                     ("link", "set", inside, "up")):
            _ip("-n", netns, *args)
        root = self.root / name
        for sub in ("home", "tmp", "logs"):
            (root / sub).mkdir(parents=True, exist_ok=True)
        host = Host(name, netns, address, root, self)
        self.hosts[name] = host
        return host

    def teardown(self) -> list[str]:
        """Stop every daemon, kill whatever still runs in the namespaces, delete namespaces and links.
        Returns problems met on the way (teardown itself never raises)."""
        problems = []
        for daemon in reversed(self.daemons):
            try:
                daemon.stop()
            except Exception as exc:  # noqa: BLE001 - keep tearing down
                problems.append(f"stopping {daemon.name}: {exc}")
        for host in self.hosts.values():
            for _ in range(20):
                if not host.crash():
                    break
                time.sleep(0.25)
            else:
                problems.append(f"processes survive in {host.netns}: {host.pids()}")
        for netns in reversed(self._namespaces):
            result = _ip("netns", "del", netns, check=False)
            if result.returncode != 0:
                problems.append(f"ip netns del {netns}: {result.stderr.strip()}")
        for link in reversed(self._links):
            _ip("link", "del", link, check=False)  # veths die with their namespace; the bridge needs deleting
        return problems
