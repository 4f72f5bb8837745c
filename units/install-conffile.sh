#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# install-conffile.sh SOURCE DEST: meson install of a file the admin edits
# (/etc/mcp-exec/packages.txt): installed if missing, never replaced, so that
# reinstalling from source keeps the admin's list. A package build installs
# into an empty DESTDIR, so the package always carries it.
set -eu
dest="${DESTDIR:-}$2"
if [ -e "$dest" ]; then
    echo "Keeping $dest"
    exit 0
fi
install -D -m 0644 "$1" "$dest"
echo "Installing $1 to $dest"
