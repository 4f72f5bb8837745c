#!/usr/bin/env bash
# Packages on demand (issue 23) through real MCP calls, against the real units, with wheels the
# test builds itself (tests/lib/make-wheels.py: pkga 1.0 and 2.0, pkgb 1.0 needing pkga, a fake
# numpy 99.0), put in the wheelhouse with the operator's command (`mcp-exec wheels add`, pip
# pointed at them by PIP_NO_INDEX and PIP_FIND_LINKS). Calls over HTTP (raw, the 2026-07-28
# revision) and over stdio (`mcp-exec stdio`, one MCP session) by tests/lib/packages-mcp.py:
#   run        packages ["pkgb"]: pkgb and pkga import, structuredContent.packages says ok and
#              lists both as installed, stdout is only the program's
#   next run   a plain run after it sees neither (ImportError) and an empty /tmp
#   session    created with packages, it keeps them: the next call imports them without an
#              install ("already"); a call with more packages adds them for the session's life,
#              and a pip/, _manylinux.py and pip.conf an earlier call left are not run nor read
#              by the installer (issue 37)
#   errors     an unknown package: isError naming it and listing the wheelhouse; a version the
#              wheelhouse lacks: isError; an option as a spec: isError, and straight to the broker
#              (mcp-exec-broker-call --package) bad-request; the code never ran
#   pip        `pip install pkga` in the code, no network: from the wheelhouse, then imports
#   read-only  then the same run cannot create, append, rename, mkdir, unlink or chmod in the
#              store (issue 41); its index and the listing are the same after
#   hash       a raw wheel overwritten after `wheels add` (other bytes): the run gets the store's
#              tree, checked when the store was made, and the replaced bytes never run
#   warm       numpy==99.0 with the pool's preload holding the system's numpy: the result says
#              fresh_interpreter, the code sees 99.0; the next run the system's numpy
#   egress     tests/lib/egress-net.sh's test internet: pip install from its index in the code
#              works through egressd with a policy allowing the index; with one that does not, it
#              fails, the result's egress counts the refusals, egressd's journal has them, and
#              `pip -vv` shows the proxy's 403 with its reason, and for an https index plain pip's retry
#              warning shows it (pip 23.0.1 logs an index page's HTTP error at debug
#              level only: plain pip says "from versions: none"; reported, not asserted)
#   isolated   `mcp-exec wheels add` typed in a directory holding pip/ and a sitecustomize, with
#              PYTHONPATH there (issue 37): none of it runs, the real pip fetches
#   raw (41)   the raw wheelhouse is out of reach (InaccessiblePaths=): a listed wheel replaced by other
#              bytes after `wheels prepare`, and an unlisted one dropped in by hand, are installed by
#              neither the code's pip nor its pip pointed at the wheelhouse, and none of it can be read
#   cost       median of 3 (printed, never asserted), warm pool then no pool: a plain call, one with packages ["pkgb"]
#              (a fresh install each time), a session call whose packages are installed already
# Plain pass only: the C code it drives (the front end's argument, errors and report, the broker's
# keys and sessions, the launcher's report frame, the manifest reader) runs sanitized in the ASan
# pass's unit tests (tests/mcp, tests/broker, tests/launch, tests/exec-client, tests/shared); what
# this test adds is pip in the sandbox, the read-only wheelhouse and egressd's verdicts, the same in
# both builds, and some fifteen installs make it one of the longer tests (about 40 s).
. "$(dirname "$0")/../../lib/itest.sh"
. "$ITEST_DIR/lib/http.sh"
. "$ITEST_DIR/lib/egress-net.sh"
. "$ITEST_DIR/lib/packages.sh"

bx systemctl cat mcp-exec-egress.socket >/dev/null 2>&1 || fail "mcp-exec-egress.socket is not installed in the box"
egress_net_up

# --- the wheelhouse, filled as the operator does ---------------------------------------------------
packages_wheelhouse_up
WH=$PKG_WH
MARK=$PKG_MARK

# --- issue 37: the operator's command as root, typed in a directory holding pip/ and a
# sitecustomize, with PYTHONPATH there: none of it runs, the real pip fetches, the manifest is intact.
mkdir -p "$HDIR/evil/pip"
for f in pip/__init__.py pip/__main__.py sitecustomize.py; do
    printf 'import os\nwith open("%s/evil.marker", "a") as m:\n    m.write("%s by uid %%d\\n" %% os.getuid())\n' \
        "$BDIR" "$f" >"$HDIR/evil/$f"
done
echo 'raise SystemExit(0)' >>"$HDIR/evil/pip/__main__.py"
bx sh -c "cd '$BDIR/evil' && PYTHONPATH='$BDIR/evil' PIP_NO_INDEX=1 PIP_FIND_LINKS='$BDIR/src' \
          mcp-exec wheels add pkgb" >"$HDIR/evil.out" 2>&1 ||
    fail "mcp-exec wheels add from a directory holding pip/: $(tail -5 "$HDIR/evil.out")"
[[ ! -e $HDIR/evil.marker ]] ||
    fail "mcp-exec wheels ran the current directory's or PYTHONPATH's code: $(cat "$HDIR/evil.marker")"
grep -q '^2 wheel(s) downloaded' "$HDIR/evil.out" ||
    fail "the real pip did not fetch pkgb and pkga: $(cat "$HDIR/evil.out")"
(cd "$BOXROOT$WH" && sha256sum --quiet -c SHA256SUMS) || fail "the manifest's hashes are not the wheels' after it"
log "mcp-exec wheels add from a directory holding pip/, PYTHONPATH there: none of it ran"

# --- issue 41: more wheels (kiwi, and three that bring a numpy of their own), and the package store --------
more="kiwi numfork numpth"
ls "$HDIR"/src/numext-1.0-*.whl >/dev/null 2>&1 && more+=" numext"
# shellcheck disable=SC2086
packages_add --packages-file="$BDIR/more.txt" add $more || fail "mcp-exec wheels add $more: $(tail -20 "$HDIR/wheels.out")"
packages_store_up
log "package store at $PKG_STORE: $(grep -c '"file"' "$BOXROOT$PKG_STORE/index.json") wheels ($more added)"

# stop_frontend: the stdio front end (socket-activated) starts again with the configuration.
stop_frontend() {
    bx sh -c 'systemctl stop mcp-exec-stdio.service
              systemctl reset-failed mcp-exec-stdio.service 2>/dev/null
              systemctl start mcp-exec-stdio.socket' >/dev/null 2>&1
}

# One configuration for the whole test: a warm unit holding the system's numpy, policies with and
# without the test index. Front ends and broker start again with it (and see the wheelhouse).
set_config MCP_EXEC_POOL_SIZE=1 MCP_EXEC_PRELOAD=json,numpy \
    'MCP_EXEC_EGRESS_POLICY_PYPI="allowed.test :80"' 'MCP_EXEC_EGRESS_POLICY_WEB="tls.test :443"' \
    MCP_EXEC_EGRESS_TESTING_PUBLIC=192.0.2.0/24
restart_http
stop_frontend
bx systemctl stop mcp-exec-egress.service >/dev/null 2>&1
at_exit 'bx systemctl stop mcp-exec-egress.service >/dev/null 2>&1'
at_exit stop_frontend

cp "$ITEST_DIR/lib/packages-mcp.py" "$HDIR/packages-mcp.py"
chmod 0644 "$HDIR/packages-mcp.py"
# code NAME: stdin to $BDIR/NAME.py, prints its path.
code() { put "$1.py"; }
# mcp stdio|http CALL...: the calls (JSON objects) over one connection; one JSON line per call.
mcp() {
    local mode=$1 f
    shift
    f=$(IFS=,; printf '[%s]\n' "$*" | put "calls.$RANDOM$RANDOM.json")
    bx python3 "$BDIR/packages-mcp.py" "$mode" "$f"
}
# ex CODE-FILE [PACKAGES-JSON [MORE-ARGS-JSON]]: an exec call.
ex() { printf '{"tool":"exec","args":{"code_file":"%s","timeout_s":90%s%s}}' "$1" "${2:+,\"packages\":$2}" "${3:+,$3}"; }
# line N OUTPUT: its Nth line.
line() { sed -n "$1p" <<<"$2"; }
# soft MESSAGE: a check failed; the test goes on (the sections are independent) and fails at the end.
FAILED=()
soft() {
    printf '%s: FAIL: %s\n' "$ITEST_NAME" "$*" >&2
    FAILED+=("${1%%$'\n'*}")
}
# pcheck LINE EXPR MESSAGE: EXPR (Python) true for one output line of mcp, with `res` the result,
# `sc` its structuredContent ({} if none), `pk` sc["packages"] (None if none), `text` its text
# blocks, `all` the line as a string.
pcheck() {
    local why
    if ! why=$("$PY" -c '
import json, sys
o = json.loads(sys.stdin.read() or "null") or {}
res = o.get("result") or {}
sc = res.get("structuredContent") or {}
pk = sc.get("packages")
text = "\n".join(b.get("text", "") for b in res.get("content", []) if isinstance(b, dict))
try:
    ok = eval(sys.argv[1], {"o": o, "res": res, "sc": sc, "pk": pk, "text": text, "all": json.dumps(o)})
except Exception as e:
    ok = False
    print("%s: %r" % (type(e).__name__, e))
if not ok:
    s = json.dumps(o)
    print(s if len(s) < 3000 else s[:3000] + "...")
    sys.exit(1)' "$2" <<<"$1" 2>&1); then
        soft "$3: $2"$'\n'"$why"
    fi
}
# pget LINE EXPR: as pcheck, prints the value.
pget() {
    "$PY" -c '
import json, signal, sys
signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # read by head at times
o = json.loads(sys.stdin.read() or "null") or {}
res = o.get("result") or {}
sc = res.get("structuredContent") or {}
try:
    v = eval(sys.argv[1], {"o": o, "res": res, "sc": sc, "pk": sc.get("packages")})
except Exception as e:
    v = "(%s: %s)" % (type(e).__name__, e)
print(v if isinstance(v, str) else json.dumps(v))' "$2" <<<"$1"
}
names() { printf 'sorted(i["name"] for i in (pk or {}).get("installed", []))'; }
OKRUN='not res.get("isError") and sc.get("exit_code") == 0'

# --- the tool's description lists the wheelhouse -----------------------------------------------
out=$(mcp http '{"tool":"@list"}')
pcheck "$out" '[t for t in res["tools"] if t["name"] == "exec" and "pkgb" in t["description"] and "pkga" in t["description"] and "packages" in t["inputSchema"]["properties"]]' \
    "exec's description does not list the wheelhouse, or it has no packages argument"

# --- a run with packages; the next run without ------------------------------------------------------
c1=$(code run1 <<'EOF'
import pkgb, pkga
print(pkgb.uses())
print(pkga.__file__)
EOF
)
c2=$(code run2 <<'EOF'
import os
for m in ("pkga", "pkgb"):
    try:
        __import__(m)
        print("imported", m)
    except ImportError:
        print("ImportError", m)
print(sorted(os.listdir("/tmp")))
EOF
)
out=$(mcp http "$(ex "$c1" '["pkgb"]')" "$(ex "$c2")")
r1=$(line 1 "$out")
pcheck "$r1" "$OKRUN" "the run with packages [\"pkgb\"] failed"
pcheck "$r1" 'sc["stdout"].split("\n")[0] == "pkgb uses pkga 2.0" and sc["stdout"].split("\n")[1].startswith(("/tmp/", "'"$PKG_STORE"'/trees/")) and len(sc["stdout"].split("\n")) == 3' \
    "the run's stdout is not exactly its program's output (pkgb, pkga 2.0 from the run's /tmp or the store)"
pcheck "$r1" 'pk["ok"] is True and pk["requested"] == ["pkgb"] and '"$(names)"' == ["pkga", "pkgb"] and isinstance(pk.get("log"), str)' \
    "structuredContent.packages does not say pkga and pkgb were installed"
pcheck "$r1" '[i["version"] for i in sorted(pk["installed"], key=lambda i: i["name"])] == ["2.0", "1.0"]' "the versions installed are not pkga 2.0, pkgb 1.0"
log "run: $(pget "$r1" 'dict((k, v) for k, v in pk.items() if k != "log")') log: $(pget "$r1" 'pk["log"][-160:]' | tr '\n' '|')"
r2=$(line 2 "$out")
pcheck "$r2" "$OKRUN"' and sc["stdout"] == "ImportError pkga\nImportError pkgb\n[]\n" and pk is None' \
    "the next run without packages sees them, or its /tmp is not empty"
log "the next plain run: no pkga, no pkgb, /tmp empty"

# --- a session keeps them; a call adds more (stdio) -------------------------------------------------
s1=$(code s1 <<'EOF'
import pkga
x = 41
print("pkga", pkga.VERSION)
EOF
)
# s2 also leaves, as a session's code may (issue 37), a pip/ and a _manylinux.py (pip imports it
# as it resolves) in the session's site and a pip.conf in its home, each writing a marker if run
# or read: the installer of the next call's pkgb must do neither (s3 lists the markers).
s2=$(code s2 <<'EOF'
import os, sysconfig, pkga
print("pkga", pkga.VERSION, x + 1)
site = sysconfig.get_path("purelib", "posix_user", vars={"userbase": "/tmp/.local"})
old = sysconfig.get_path("purelib", sysconfig.get_preferred_scheme("prefix"),
                         vars={"base": "/tmp/.local", "platbase": "/tmp/.local"})
for path, text in ((site + "/pip/__init__.py", "open('/tmp/pwned-pip', 'a')\n"),
                   (site + "/_manylinux.py", "open('/tmp/pwned-manylinux', 'a')\n"),
                   (old + "/pip/__init__.py", "open('/tmp/pwned-pip', 'a')\n"),
                   (old + "/_manylinux.py", "open('/tmp/pwned-manylinux', 'a')\n"),
                   ("/tmp/.config/pip/pip.conf", "[global]\nlog = /tmp/pwned-pipconf\n"),
                   ("/tmp/.pip/pip.conf", "[global]\nlog = /tmp/pwned-pipconf\n")):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
EOF
)
s3=$(code s3 <<'EOF'
import os, pkgb
print(pkgb.uses(), sorted(f for f in os.listdir("/tmp") if f.startswith("pwned")))
EOF
)
out=$(mcp stdio '{"tool":"session_create","args":{"packages":["pkga==1.0"]}}' \
    "$(ex "$s1" "" '"session":"@SESSION@"')" "$(ex "$s2" "" '"session":"@SESSION@"')" \
    "$(ex "$s3" '["pkgb"]' '"session":"@SESSION@"')" "$(ex "$s3" "" '"session":"@SESSION@"')" \
    '{"tool":"session_close","args":{"session":"@SESSION@"}}')
sc0=$(line 1 "$out")
pcheck "$sc0" 'not res.get("isError") and sc.get("session")' "session_create with packages failed"
pcheck "$(line 2 "$out")" "$OKRUN"' and sc["stdout"] == "pkga 1.0\n"' "the session's first call does not import pkga 1.0"
# Installed at session_create or at its first call: either way once, pkga 1.0.
inst=$("$PY" -c '
import json, sys
n = []
for l in sys.stdin.read().splitlines()[:2]:
    pk = (json.loads(l).get("result") or {}).get("structuredContent", {}).get("packages") or {}
    n += ["%s %s" % (i["name"], i["version"]) for i in pk.get("installed", [])]
print(" ".join(n))' <<<"$out")
[[ $inst == 'pkga 1.0' ]] || soft "the session did not install pkga 1.0 once (installed: '$inst'): $(head -2 <<<"$out" | cut -c1-1500)"
pcheck "$(line 3 "$out")" "$OKRUN"' and sc["stdout"] == "pkga 1.0 42\n" and pk["ok"] and pk.get("installed") == [] and "pkga==1.0" in pk.get("already", [])' \
    "the session's second call did not find pkga as installed already (or lost its state)"
pcheck "$(line 4 "$out")" "$OKRUN"' and sc["stdout"] == "pkgb uses pkga 1.0 []\n" and '"$(names)"' == ["pkgb"]' \
    "a session call with packages [\"pkgb\"] did not add pkgb next to pkga 1.0 (or ran or read what s2 left)"
pcheck "$(line 5 "$out")" "$OKRUN"' and sc["stdout"] == "pkgb uses pkga 1.0 []\n"' \
    "pkgb, added by a call, is gone at the session's next call"
pcheck "$(line 6 "$out")" 'not res.get("isError")' "session_close failed"
log "session: pkga==1.0 at create, 'already' at the next call, pkgb added by a call and kept;" \
    "what a call left (pip/, _manylinux.py, pip.conf) neither ran nor was read"

# --- errors --------------------------------------------------------------------------------------------
ce=$(code err <<EOF
print("ran-" + "$MARK")
EOF
)
out=$(mcp http "$(ex "$ce" '["nosuchpkg"]')" "$(ex "$ce" '["pkga==9"]')" "$(ex "$ce" '["--index-url=http://x"]')" "$(ex "$ce" '["pkga", "-r/etc/shadow"]')")
NORAN='"ran-'$MARK'" not in all'
pcheck "$(line 1 "$out")" 'res.get("isError") is True and "nosuchpkg" in text and "pkga" in text and "pkgb" in text and '"$NORAN" \
    "an unknown package is not an isError naming it and listing the wheelhouse"
log "unknown: $(pget "$(line 1 "$out")" 'res["content"][0]["text"]' | head -c 300)"
pcheck "$(line 2 "$out")" 'res.get("isError") is True and "pkga" in text and "pkga==9" in text and '"$NORAN" "a missing version is not a clear isError"
log "missing version: $(pget "$(line 2 "$out")" 'res["content"][0]["text"]' | head -c 300)"
pcheck "$(line 3 "$out")" 'res.get("isError") is True and "--index-url" in text and '"$NORAN" "an option as a spec is not an isError"
pcheck "$(line 4 "$out")" 'res.get("isError") is True and '"$NORAN" "an option after a good spec is not an isError"
log "option as spec: $(pget "$(line 3 "$out")" 'res["content"][0]["text"]' | head -c 300)"
# Straight to the broker: a control with a good spec, then the bad ones.
out=$(call --package pkga -- 'import pkga; print("broker", pkga.VERSION)') || soft "the broker call with --package pkga failed: $out $(call_err)"
(jcheck "$out" '"error" not in r and r["exit_code"] == 0 and r["stdout"] == "broker 2.0\n"' "the broker call with --package pkga did not install it") || soft "the broker call with --package pkga did not install it"
for bad in '--index-url=http://x' '-rfile' 'pkga @ http://x/pkga.whl' "pkga;python_version>'3'"; do
    out=$(call_nosigpipe --package "$bad" -- "print('ran-$MARK')")
    (jcheck "$out" 'r.get("error") == "bad-request" and r.get("stdout", "") == ""' "the broker did not refuse the spec '$bad' as bad-request") ||
        soft "the broker did not refuse the spec '$bad' as bad-request"
done
log "errors: unknown, missing version, options as specs; the broker refuses bad specs (bad-request)"

# --- pip install in the code, offline; then the run tries to write to the store it installs from ---
# (issue 41: the store; the raw wheelhouse it cannot even read, below)
sum_before=$(sha256sum "$BOXROOT$PKG_STORE/index.json" | cut -d' ' -f1)
ls_before=$(ls -laR --time-style=+%s.%N "$BOXROOT$PKG_STORE")
cp1=$(code pip <<EOF
import os, subprocess, sys
r = subprocess.run([sys.executable, "-m", "pip", "install", "pkga"], capture_output=True, text=True, timeout=80)
print("pip", r.returncode)
if r.returncode:
    print(r.stdout[-800:], r.stderr[-800:])
import pkga
print("pkga", pkga.VERSION, pkga.__file__.startswith("/tmp/"))
W = "$PKG_STORE"
def tryit(what, f):
    try:
        f()
        print("ESCAPED", what)
    except OSError as e:
        print("BLOCKED", what, e.errno)
tryit("create", lambda: open(W + "/x.whl", "w").write("x"))
tryit("append", lambda: open(W + "/index.json", "a").write("{}"))
tryit("rename", lambda: os.rename(W + "/wheels/pkga-1.0-py3-none-any.whl", W + "/wheels/pkga-1.0-py3-none-any.whl.x"))
tryit("mkdir", lambda: os.mkdir(W + "/wheels/d"))
tryit("unlink", lambda: os.unlink(W + "/wheels/pkgb-1.0-py3-none-any.whl"))
tryit("chmod", lambda: os.chmod(W, 0o777))
print("listed", sorted(os.listdir(W)))
EOF
)
out=$(mcp http "$(ex "$cp1")")
pcheck "$out" "$OKRUN"' and sc["stdout"].startswith("pip 0\n") and "pkga 2.0 True\n" in sc["stdout"]' \
    "pip install pkga in the code did not work from the wheelhouse"
log "pip install in the code, offline: $(pget "$out" 'sc["stdout"]' | head -2 | tr '\n' ' ')"
pcheck "$out" "$OKRUN"' and sc["stdout"].count("BLOCKED ") == 6 and "ESCAPED" not in sc["stdout"] and "index.json" in sc["stdout"]' \
    "a run could write to the store, or the probe did nothing"
[[ $(sha256sum "$BOXROOT$PKG_STORE/index.json" | cut -d' ' -f1) == "$sum_before" && $(ls -laR --time-style=+%s.%N "$BOXROOT$PKG_STORE") == "$ls_before" ]] ||
    soft "the store changed during the run"
log "read-only: $(pget "$out" 'sc["stdout"]' | grep -c BLOCKED) writes refused, the index unchanged"

# --- a wheel whose bytes no longer match the manifest ------------------------------------------------
cp "$BOXROOT$WH/pkga-1.0-py3-none-any.whl" "$HDIR/pkga-1.0.good"
cat "$HDIR/src/evil/pkga-1.0-py3-none-any.whl" >"$BOXROOT$WH/pkga-1.0-py3-none-any.whl"
ch=$(code hash <<EOF
import pkga
print("ran-" + "$MARK", pkga.VERSION)
EOF
)
out=$(mcp http "$(ex "$ch" '["pkga==1.0"]')")
cat "$HDIR/pkga-1.0.good" >"$BOXROOT$WH/pkga-1.0-py3-none-any.whl"
# From the package store: its tree of pkga 1.0, checked when the store was made, is what the run
# gets; the raw wheel's replaced bytes are never installed nor run.
pcheck "$out" "$OKRUN"' and sc["stdout"] == "ran-'"$MARK"' 1.0\n"' \
    "a wheel replaced after the store was made was installed (or its code ran)"
log "hash: $(pget "$out" 'res.get("isError") and res["content"][0]["text"] or sc["stdout"]' | head -c 300)"

# --- a package the warm unit has imported already ------------------------------------------------------
warm_ready() { bx systemctl list-units 'mcp-exec-run-*' --plain --no-legend --no-pager 2>/dev/null | grep -q 'warm unit (idle)'; }
wait_for 60 warm_ready || fail "no warm unit finished its preload: $(warm_idle_units)"
cursor=$(journal_cursor)
cn=$(code numpy <<'EOF'
import sys
import numpy
print(numpy.__version__, getattr(numpy, "FAKE", False))
EOF
)
out=$(mcp http "$(ex "$cn" '["numpy==99.0"]')" "$(ex "$cn")")
pcheck "$(line 1 "$out")" "$OKRUN"' and sc["stdout"] == "99.0 True\n" and pk["fresh_interpreter"] is True' \
    "numpy==99.0 next to the preload's numpy: not a fresh interpreter seeing 99.0"
pcheck "$(line 2 "$out")" "$OKRUN"' and not sc["stdout"].startswith("99.0") and sc["stdout"].endswith(" False\n")' \
    "the next run sees the fake numpy"
nwarm=$(journal_since "$cursor" -o export 2>/dev/null | grep -ac '^MCP_WARM=1$' || true)
log "warm: numpy==99.0 -> $(pget "$(line 1 "$out")" 'dict((k, v) for k, v in pk.items() if k != "log")'); next run numpy $(pget "$(line 2 "$out")" 'sc["stdout"]' | cut -d' ' -f1); runs logged warm: $nwarm"

# --- issue 41: every process of a run sees its packages, from the store, without pip (HTTP, stdio) ---------
ck=$(code kiwi <<EOF
import multiprocessing, subprocess, sys
import kiwi
print(kiwi.VALUE, kiwi.__file__.startswith("$PKG_STORE/trees/"))
def out(*cmd):
    p = subprocess.run(list(cmd), capture_output=True, text=True)
    return (p.stdout or p.stderr[-300:]).strip()
print(out(sys.executable, "-c", "import kiwi, pkga; print('child', kiwi.VALUE, pkga.VERSION)"))
print(out(sys.executable, "-m", "kiwi"), "|", out("kiwi"), "|", out("kiwi-tool"))
p = multiprocessing.get_context("spawn").Process(target=exec, args=("import kiwi; print('spawned', kiwi.VALUE)",))
p.start()
p.join()
print("spawn exit", p.exitcode)
EOF
)
KIWI_OUT='kiwi 1.0 True\nchild kiwi 1.0 2.0\nkiwi main kiwi 1.0 | kiwi cli | kiwi tool kiwi 1.0\nspawned kiwi 1.0\nspawn exit 0\n'
KIWI_OK="$OKRUN"' and sc["stdout"] == "'"$KIWI_OUT"'" and pk["ok"] and "from the package store" in pk["log"] and "Successfully installed" not in pk["log"] and '"$(names)"' == ["kiwi", "pkga"]'
for mode in http stdio; do
    out=$(mcp "$mode" "$(ex "$ck" '["kiwi"]')")
    pcheck "$out" "$KIWI_OK" "$mode: kiwi from the store (no pip) is not seen by the code, a child python, -m, its scripts by name and a spawned process"
done
log "every process: $(pget "$out" 'sc["stdout"]' | tr '\n' '|') in $(pget "$out" 'pk["duration_us"]') us"
# A session: created with kiwi, a call's child python sees it; a later call may not bring a module
# the interpreter may hold already (numfork's numpy) once code ran there.
cks=$(code kiwis <<'EOF'
import subprocess, sys
print(subprocess.run([sys.executable, "-c", "import kiwi; print('child', kiwi.VALUE)"], capture_output=True, text=True).stdout, end="")
EOF
)
out=$(mcp stdio '{"tool":"session_create","args":{"packages":["kiwi"]}}' "$(ex "$cks" "" '"session":"@SESSION@"')" \
    "$(ex "$cks" '["numfork"]' '"session":"@SESSION@"')" '{"tool":"session_close","args":{"session":"@SESSION@"}}')
pcheck "$(line 2 "$out")" "$OKRUN"' and sc["stdout"] == "child kiwi 1.0\n"' "a session's child python does not see the session's kiwi"
pcheck "$(line 3 "$out")" 'res.get("isError") is True and "numfork" in text and "session_create" in text' \
    "a session that ran code took numfork, whose numpy its interpreter may hold"
log "session: a child sees kiwi; numfork after code refused: $(pget "$(line 3 "$out")" 'res["content"][0]["text"]' | head -c 200)"

# --- issue 41: never a stale module: each way a package can shadow what the warm unit preloaded ------------
cnv=$(code numv <<'EOF'
import numpy
print(numpy.__version__, bool(getattr(numpy, "FAKE", False)))
EOF
)
for pw in numfork:98.0-fork:http numpth:97.0-pth:stdio numext:96.0-ext:http; do
    IFS=: read -r p want mode <<<"$pw"
    [[ " $more " == *" $p "* ]] || { log "stale: no $p (no gcc or Python.h to build it)"; continue; }
    wait_for 60 warm_ready || fail "no warm unit finished its preload: $(warm_idle_units)"
    out=$(mcp "$mode" "$(ex "$cnv" "[\"$p\"]")")
    pcheck "$out" "$OKRUN"' and sc["stdout"] == "'"$want"' True\n" and pk["fresh_interpreter"] is True' \
        "$mode: $p brings a numpy next to the preload's: not a fresh interpreter seeing $want"
    log "stale: $p -> $(pget "$out" 'sc["stdout"].strip()'), fresh_interpreter $(pget "$out" 'pk["fresh_interpreter"]')"
done
wait_for 60 warm_ready || fail "no warm unit finished its preload: $(warm_idle_units)"
out=$(mcp http "$(ex "$cnv" '["kiwi"]')")
pcheck "$out" "$OKRUN"' and not sc["stdout"].startswith("9") and pk["fresh_interpreter"] is False' \
    "kiwi, which brings no module the preload imported, did not keep the warm interpreter"

# --- pip through the egress proxy ------------------------------------------------------------------------
cpe=$(code pipnet <<'EOF'
import subprocess, sys
def pip(*extra, url="http://allowed.test/simple"):
    return subprocess.run([sys.executable, "-m", "pip", "install", "--disable-pip-version-check", *extra, "--index-url",
                           url, "--trusted-host", "allowed.test", "tinypkg"],
                          capture_output=True, text=True, timeout=80)
r = pip()
print("pip", r.returncode)
print("OUT", (r.stdout + r.stderr)[-1500:].replace("\n", " | "))
if r.returncode == 0:
    import tinypkg
    print("tinypkg", tinypkg.VALUE)
else:
    # pip 23.0.1 logs an index page's HTTP error at debug level only: -vv shows it.
    v = pip("-vv")
    print("VV", ([l for l in (v.stdout + v.stderr).splitlines() if "blocked by policy" in l] or
                 [l for l in (v.stdout + v.stderr).splitlines() if "403" in l] or ["no 403"])[0][:300])
    # An https index (pypi's case): the refused CONNECT's status line is in
    # pip's retry warning at its default verbosity.
    s = pip("--retries", "1", "--timeout", "10", url="https://allowed.test/simple")
    print("TLS", ([l for l in (s.stdout + s.stderr).splitlines() if "403" in l] or ["no 403"])[0][:400])
EOF
)
n_before=$(grep -c 'GET /packages/tinypkg' "$(egress_http_log)" || true)
cursor=$(journal_cursor)
out=$(mcp http "$(ex "$cpe" "" '"network":"pypi"')" "$(ex "$cpe" "" '"network":"web"')")
pcheck "$(line 1 "$out")" "$OKRUN"' and sc["stdout"].startswith("pip 0\n") and "tinypkg tinypkg-works\n" in sc["stdout"]' \
    "pip install from the test index through the proxy (policy pypi) did not work"
n_after=$(grep -c 'GET /packages/tinypkg' "$(egress_http_log)" || true)
((n_after == n_before + 1)) || soft "the test index did not serve tinypkg once (before $n_before, after $n_after)"
r2=$(line 2 "$out")
pcheck "$r2" "$OKRUN"' and not sc["stdout"].startswith("pip 0\n") and "tinypkg-works" not in sc["stdout"] and sc["egress"]["connections"].get("policy", 0) >= 2' \
    "pip install from an index the policy does not allow did not fail, or the result does not count its refusals"
pcheck "$r2" '"blocked by policy" in sc["stdout"].split("VV", 1)[1].split("TLS", 1)[0]' \
    "pip -vv does not show the proxy's 403 reason for the index page"
pcheck "$r2" '"Tunnel connection failed: 403" in sc["stdout"].split("TLS", 1)[1] and "blocked by policy \"web\": allowed.test:443" in sc["stdout"].split("TLS", 1)[1]' \
    "pip (default verbosity) does not show the proxy's 403 reason for an https index"
nver=$(journal_since "$cursor" -o json | "$PY" -c '
import json, sys
n = 0
for l in sys.stdin:
    e = json.loads(l)
    if e.get("EGRESS_VERDICT") == "policy" and e.get("EGRESS_HOST") == "allowed.test" and e.get("EGRESS_POLICY") == "web":
        n += 1
print(n)')
((nver >= 2)) || soft "egressd logged $nver policy verdicts for allowed.test under the policy web, want 2 (pip, pip -vv)"
# What the agent reads (reported): plain pip's output, and -vv's line with the 403.
plain403=no
pget "$r2" 'sc["stdout"].split("VV", 1)[0]' | grep -q 403 && plain403=yes
log "egress: denied: egress $(pget "$r2" 'sc["egress"]["connections"]'); plain pip (http index) shows a 403: $plain403; pip -vv: $(pget "$r2" 'sc["stdout"].split("VV", 1)[1].split("TLS", 1)[0].strip()'); https index: $(pget "$r2" 'sc["stdout"].split("TLS", 1)[1].strip()')"

# === issue 41 item 5 (helper "store"): the raw wheelhouse is out of every run's reach ===============
# After `mcp-exec wheels prepare` made the store, a listed raw wheel is replaced by other bytes (the
# tampered pkga 1.0, whose import prints $MARK) and an unlisted wheel (pkgz, the same) is dropped in
# by hand. The code's pip, with its environment as given or pointed at the wheelhouse itself
# (--find-links), installs neither (pkga 1.0 comes from the store's verified copy), and the code can neither list the wheelhouse nor read a file
# in it (InaccessiblePaths=). On the old tree both installed and imported.
packages_add prepare || soft "mcp-exec wheels prepare failed: $(tail -5 "$HDIR/wheels.out")"
"$PY" -c 'import importlib.util, sys
s = importlib.util.spec_from_file_location("mw", sys.argv[1]); m = importlib.util.module_from_spec(s)
s.loader.exec_module(m)
m.make_wheel(sys.argv[2], "pkgz", "1.0", files={"pkgz.py": "print(\"ran-%s pkgz\")\nVERSION = \"z\"\n" % sys.argv[3]})' \
    "$ITEST_DIR/lib/make-wheel.py" "$HDIR/unlisted" "$MARK" || fail "cannot build the unlisted wheel"
cp "$BOXROOT$WH/pkga-1.0-py3-none-any.whl" "$HDIR/pkga-1.0.good41"
cat "$HDIR/src/evil/pkga-1.0-py3-none-any.whl" >"$BOXROOT$WH/pkga-1.0-py3-none-any.whl"
install -m 0644 "$HDIR/unlisted/pkgz-1.0-py3-none-any.whl" "$BOXROOT$WH/pkgz-1.0-py3-none-any.whl"
c41=$(code raw41 <<EOF
import os, subprocess, sys
W = "$WH"
def pip(*a):
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--disable-pip-version-check", *a],
                       capture_output=True, text=True, timeout=80)
    return r.returncode
print("pip-unlisted", pip("pkgz"))
print("pip-replaced", pip("pkga==1.0"))
print("pip-findlinks", pip("--no-index", "--find-links", W, "pkgz"), pip("--no-index", "--find-links", "file://" + W, "pkga==1.0"))
for mod in ("pkgz", "pkga"):
    try:
        m = __import__(mod)
        print("imported", mod, m.VERSION)
    except ImportError:
        print("absent", mod)
for what, f in (("list", lambda: os.listdir(W)), ("manifest", lambda: open(W + "/SHA256SUMS").read()),
                ("replaced", lambda: open(W + "/pkga-1.0-py3-none-any.whl", "rb").read(4)),
                ("unlisted", lambda: open(W + "/pkgz-1.0-py3-none-any.whl", "rb").read(4))):
    try:
        f()
        print("READ", what)
    except OSError as e:
        print("DENIED", what, e.errno)
EOF
)
for mode in http stdio; do
    out=$(mcp "$mode" "$(ex "$c41")")
    pcheck "$out" "$OKRUN"' and "'"$MARK"'" not in all and "imported pkgz" not in sc["stdout"] and "pip-unlisted 0" not in sc["stdout"]' \
        "issue 41 ($mode): the code's pip installed the unlisted or the replaced raw wheel"
    # (pkga 1.0 itself may install: the code's pip finds the store's verified copy, PIP_FIND_LINKS,
    # and then finds it installed; that its replaced bytes never ran is the check above.)
    pcheck "$out" "$OKRUN"' and "pip-findlinks 0 " not in sc["stdout"] and "imported pkga 1.0" in sc["stdout"]' \
        "issue 41 ($mode): the code's pip pointed at the wheelhouse itself installed from it"
    pcheck "$out" "$OKRUN"' and sc["stdout"].count("DENIED ") == 4 and "READ " not in sc["stdout"]' \
        "issue 41 ($mode): the code could read the raw wheelhouse"
    log "issue 41 ($mode): raw wheelhouse: $(pget "$out" 'sc["stdout"]' | tr '\n' ' ' | head -c 400)"
done
cat "$HDIR/pkga-1.0.good41" >"$BOXROOT$WH/pkga-1.0-py3-none-any.whl"
rm -f "$BOXROOT$WH/pkgz-1.0-py3-none-any.whl"
bx mcp-exec wheels verify >"$HDIR/verify41" 2>&1 || soft "mcp-exec wheels verify after the test: $(tail -5 "$HDIR/verify41")"
# === end of issue 41 item 5 ===========================================================================

# --- cost (printed, not asserted) ---------------------------------------------------------------------------
cpass=$(printf 'pass\n' | put pass.py)
calls=('{"tool":"session_create","args":{"packages":["pkgb"]}}' "$(ex "$cpass" "" '"session":"@SESSION@"')")
for _ in 1 2 3; do
    calls+=("$(ex "$cpass")" "$(ex "$cpass" '["pkgb"]')" "$(ex "$cpass" "" '"session":"@SESSION@"')")
done
calls+=('{"tool":"session_close","args":{"session":"@SESSION@"}}')
out=$(mcp stdio "${calls[@]}")
"$PY" -c '
import json, statistics, sys
ls = [json.loads(l) for l in sys.stdin.read().splitlines()]
for o in ls:
    r = o.get("result") or {}
    if "error" in o or r.get("isError"):
        sys.exit("a cost call failed: %s" % json.dumps(o)[:1500])
runs = ls[2:11]
plain = statistics.median(o["ms"] for o in runs[0::3])
pk = statistics.median(o["ms"] for o in runs[1::3])
ses = statistics.median(o["ms"] for o in runs[2::3])
inst = [len(o["result"]["structuredContent"]["packages"]["installed"]) for o in runs[1::3]]
already = [o["result"]["structuredContent"]["packages"].get("already") for o in runs[2::3]]
assert inst == [2, 2, 2] and all(a == ["pkgb"] for a in already), (inst, already)
print("cost (median of 3, stdio, warm pool of 1): plain call %d ms, packages [pkgb] %d ms (x%.1f), session call with pkgb installed %d ms (x%.1f)"
      % (plain, pk, pk / plain, ses, ses / plain))' <<<"$out" >"$HDIR/cost" 2>&1 || soft "$(cat "$HDIR/cost")"
log "$(cat "$HDIR/cost")"
# The same on cold units (no pool): what packages add to a unit started for the call.
set_config MCP_EXEC_POOL_SIZE=0
stop_frontend
calls=()
for _ in 1 2 3; do
    calls+=("$(ex "$cpass")" "$(ex "$cpass" '["pkgb"]')")
done
out=$(mcp stdio "${calls[@]}")
"$PY" -c '
import json, statistics, sys
ls = [json.loads(l) for l in sys.stdin.read().splitlines()]
for o in ls:
    r = o.get("result") or {}
    if "error" in o or r.get("isError"):
        sys.exit("a cold cost call failed: %s" % json.dumps(o)[:1500])
runs = ls[0:6]
plain = statistics.median(o["ms"] for o in runs[0::2])
pk = statistics.median(o["ms"] for o in runs[1::2])
print("cost cold (median of 3, stdio, no pool): plain call %d ms, packages [pkgb] %d ms (x%.1f)" % (plain, pk, pk / plain))' \
    <<<"$out" >"$HDIR/cost" 2>&1 || soft "$(cat "$HDIR/cost")"
log "$(cat "$HDIR/cost")"

assert_clean 20
egress_assert_no_crash
log "ran ${SECONDS}s"
((${#FAILED[@]} == 0)) || fail "${#FAILED[@]} check(s) failed:"$'\n'"$(printf '  %s\n' "${FAILED[@]}")"
pass
