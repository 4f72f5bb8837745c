#!/usr/bin/python3
"""Latency of running `pass`, measured side by side in one run (inside a
systemd machine): bare python3, systemd-run with the same sandbox properties,
and mcp-exec's broker. Prints median and p99 of each and the ratios."""
import statistics
import subprocess
import sys
import time

N = int(sys.argv[1]) if len(sys.argv) > 1 else 40
PY = "/usr/bin/python3"

PROPS = [
    "DynamicUser=yes", "PrivateNetwork=yes", "ProtectSystem=strict", "ProtectHome=yes",
    "PrivateTmp=yes", "PrivateDevices=yes", "PrivateIPC=yes", "NoNewPrivileges=yes",
    "CapabilityBoundingSet=", "RestrictAddressFamilies=AF_UNIX", "RestrictNamespaces=yes",
    "SystemCallFilter=@system-service", "LockPersonality=yes", "ProtectKernelTunables=yes",
    "ProtectKernelModules=yes", "ProtectKernelLogs=yes", "ProtectControlGroups=yes",
    "ProtectClock=yes", "ProtectHostname=yes", "ProtectProc=invisible", "MemoryMax=256M",
    "MemorySwapMax=0", "TasksMax=128", "CPUQuota=100%", "RuntimeMaxSec=30", "LimitCORE=0",
    "UMask=0077", "WorkingDirectory=/tmp", "Slice=mcp-exec.slice",
]

CASES = {
    "bare python3 -I -c pass": [PY, "-I", "-c", "pass"],
    "systemd-run --wait --pipe (same properties)":
        ["systemd-run", "--wait", "--pipe", "--quiet", "--collect"] +
        [a for p in PROPS for a in ("-p", p)] + [PY, "-I", "-c", "pass"],
    "mcp-exec broker": ["mcp-exec-broker-call", "-"],
}


def once(argv):
    t = time.perf_counter()
    r = subprocess.run(argv, input=b"pass\n", stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    dt = time.perf_counter() - t
    if r.returncode != 0:
        sys.exit(f"{argv[0]} failed: {r.stderr.decode(errors='replace')}")
    return dt * 1000


def main():
    samples = {k: [] for k in CASES}
    for k, argv in CASES.items():   # warm-up, and the broker's first start
        once(argv)
    for _ in range(N):              # interleaved, so load spikes hit every case alike
        for k, argv in CASES.items():
            samples[k].append(once(argv))
    base = statistics.median(samples["bare python3 -I -c pass"])
    print(f"{'case':46} {'median ms':>10} {'p99 ms':>9} {'x bare':>7}")
    for k, v in samples.items():
        v.sort()
        med = statistics.median(v)
        p99 = v[min(len(v) - 1, int(round(0.99 * (len(v) - 1))))]
        print(f"{k:46} {med:10.1f} {p99:9.1f} {med / base:7.2f}")
    sr = statistics.median(samples["systemd-run --wait --pipe (same properties)"])
    br = statistics.median(samples["mcp-exec broker"])
    print(f"broker / systemd-run median ratio: {br / sr:.2f}  (n={N} each)")


if __name__ == "__main__":
    main()
