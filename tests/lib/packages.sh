# shellcheck shell=bash
# tests/lib/packages.sh - the wheelhouse of the package tests (issue 23), filled as the operator
# does. Source after itest.sh.
#
#   packages_wheelhouse_up   builds the test's wheels (tests/lib/make-wheels.py, in $HDIR/src)
#                            and puts them in $PKG_WH with `mcp-exec wheels add`, pip pointed at
#                            them by PIP_NO_INDEX=1 PIP_FIND_LINKS (no network); checks the
#                            manifest lists exactly them with their hashes, root's 0755
#   PKG_WH                   the wheelhouse (WHEELHOUSE_DEFAULT, src/shared/package-spec.h)
#   PKG_STORE                the prepared store runs install from (PACKAGE_STORE_DEFAULT, issue 41)
#   PKG_MARK                 what the tampered pkga 1.0 ($HDIR/src/evil/) prints when imported
#   PKG_WHEELS               the file names the manifest must list
#   packages_store_up        the package store runs install from (issue 41, PKG_STORE), made by
#                            `mcp-exec wheels prepare` from the wheelhouse
# The box's own wheelhouse, store and packages.txt, if it had them, are put back at exit (at_exit).

PKG_WH=/var/lib/mcp-exec/wheels
PKG_STORE=/var/lib/mcp-exec/packages
PKG_LIST=/etc/mcp-exec/packages.txt
PKG_MARK=mcppkgmarker$RANDOM$RANDOM
PKG_WHEELS='numpy-99.0-py3-none-any.whl pkga-1.0-py3-none-any.whl pkga-2.0-py3-none-any.whl pkgb-1.0-py3-none-any.whl'

packages_wheelhouse_restore() {
    rm -rf "$BOXROOT$PKG_WH" "$BOXROOT$PKG_LIST" "$BOXROOT$PKG_STORE"
    # Never missing for long: runs are denied it (InaccessiblePaths=), and a unit whose
    # inaccessible path is missing does not start (issue 41).
    if [[ -e $HDIR/wheels.saved ]]; then
        mv "$HDIR/wheels.saved" "$BOXROOT$PKG_WH"
    else
        mkdir -m 0755 "$BOXROOT$PKG_WH"
    fi
    if [[ -e $HDIR/store.saved ]]; then
        mv "$HDIR/store.saved" "$BOXROOT$PKG_STORE"
    fi
    if [[ -e $HDIR/packages.txt.saved ]]; then
        mv "$HDIR/packages.txt.saved" "$BOXROOT$PKG_LIST"
    fi
}

# packages_add [WHEELS-OPTION...] add SPEC...: the operator's command, pip offline against the
# test's wheels.
packages_add() {
    bx env PIP_NO_INDEX=1 PIP_FIND_LINKS="$BDIR/src" mcp-exec wheels "$@" >>"$HDIR/wheels.out" 2>&1
}

packages_wheelhouse_up() {
    local got w
    bx sh -c 'mcp-exec wheels --help' >/dev/null 2>&1 || fail "mcp-exec has no 'wheels' command"
    if [[ -e $BOXROOT$PKG_WH ]]; then
        mv "$BOXROOT$PKG_WH" "$HDIR/wheels.saved"
    fi
    mkdir -m 0755 "$BOXROOT$PKG_WH"
    if [[ -e $BOXROOT$PKG_STORE ]]; then
        mv "$BOXROOT$PKG_STORE" "$HDIR/store.saved"
    fi
    if [[ -e $BOXROOT$PKG_LIST ]]; then
        mv "$BOXROOT$PKG_LIST" "$HDIR/packages.txt.saved"
    fi
    at_exit packages_wheelhouse_restore
    # With the box's interpreter: the extension module's wheel is for its Python (a release
    # root's may not be this host's).
    bx python3 "$ITEST_DIR/lib/make-wheels.py" "$BDIR/src" "$PKG_MARK" || fail "cannot build the test wheels"
    chmod -R a+rX "$HDIR/src"
    # packages.txt holds one spec a project: the older pkga comes through a list of its own.
    packages_add add pkgb numpy==99.0 || fail "mcp-exec wheels add pkgb numpy==99.0: $(tail -20 "$HDIR/wheels.out")"
    packages_add --packages-file="$BDIR/older.txt" add pkga==1.0 ||
        fail "mcp-exec wheels --packages-file=… add pkga==1.0: $(tail -20 "$HDIR/wheels.out")"
    grep -qx pkgb "$BOXROOT$PKG_LIST" || fail "mcp-exec wheels add did not list pkgb in $PKG_LIST: $(cat "$BOXROOT$PKG_LIST" 2>&1)"
    got=$(awk '{print $2}' "$BOXROOT$PKG_WH/SHA256SUMS" 2>/dev/null | LC_ALL=C sort | tr '\n' ' ')
    [[ $got == "$PKG_WHEELS " ]] || fail "the manifest lists '$got', want '$PKG_WHEELS': $(cat "$BOXROOT$PKG_WH/SHA256SUMS" 2>&1)"
    (cd "$BOXROOT$PKG_WH" && sha256sum --quiet -c SHA256SUMS) || fail "the manifest's hashes are not the wheels'"
    for w in $PKG_WHEELS; do
        cmp -s "$BOXROOT$PKG_WH/$w" "$HDIR/src/$w" || fail "$PKG_WH/$w is not the wheel the test built"
    done
    [[ $(stat -c '%U %a' "$BOXROOT$PKG_WH") == 'root 755' ]] ||
        fail "the wheelhouse is not root's 0755: $(stat -c '%U %a' "$BOXROOT$PKG_WH")"
    log "wheelhouse $PKG_WH: $got(mcp-exec wheels add)"
}

packages_store_up() {
    bx mcp-exec wheels prepare >>"$HDIR/wheels.out" 2>&1 ||
        fail "mcp-exec wheels prepare: $(tail -20 "$HDIR/wheels.out")"
    [[ -f $BOXROOT$PKG_STORE/index.json ]] || fail "no package store at $PKG_STORE"
}
