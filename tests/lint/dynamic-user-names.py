#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The dynamic users of units/ must not take a name sysusers declares.

systemd names a DynamicUser=yes service's user after User= or, without it,
after the unit ("mcp-exec-tools" for mcp-exec-tools.service), and refuses to
start it when a user or group of that name exists: "Failed to update dynamic
user credentials: User or group with specified name already exists", status
217/USER, at every start. sysusers-mcp-exec.conf declares static users and
groups (mcp-exec, mcp-exec-users, mcp-exec-tools), so each dynamic user's
name is checked against them here, before a box would show it.

argv: the units/ directory."""
import os
import re
import sys

units = sys.argv[1]
declared = set()
with open(os.path.join(units, "sysusers-mcp-exec.conf")) as f:
    for line in f:
        parts = line.split()
        if len(parts) >= 2 and parts[0] in ("u", "g", "u!"):
            declared.add(parts[1])

bad = []
for name in sorted(os.listdir(units)):
    if not (name.endswith(".service") or name.endswith(".service.in")):
        continue
    unit = name[: -len(".in")] if name.endswith(".in") else name
    with open(os.path.join(units, name)) as f:
        text = f.read()
    if not re.search(r"^DynamicUser=(yes|true|1|on)\s*$", text, re.M):
        continue
    m = re.search(r"^User=(\S+)\s*$", text, re.M)
    user = m.group(1) if m else unit[: -len(".service")]
    if user in declared:
        bad.append("%s: its dynamic user %s is a name sysusers-mcp-exec.conf declares: set User= to another" %
                   (name, user))

for b in bad:
    print(b)
sys.exit(1 if bad else 0)
