# attack: make pip in the code use an index that is not the wheelhouse, without network: --index-url, PIP_INDEX_URL with PIP_NO_INDEX taken away and no config file, a wheel's URL
# expect: all three installs fail, the last two after pip tried a connection (no network at all: no AF_INET in the run; the first may be declined by pip itself, PIP_NO_INDEX), and tinypkg is not importable
# timeout: 90
# check: r && r.exit_code === 0 && (r.stdout.match(/^BLOCKED /gm) || []).length === 4 && !/ESCAPED|WRONG/.test(r.stdout)
import os, subprocess, sys

# must_try: pip must have opened a connection (urllib3's debug line with -vv) and failed for want
# of network; else pip may also have declined on its own (PIP_NO_INDEX from the launcher).
def pip(what, args, env=None, must_try=False):
    e = dict(os.environ)
    e.update(env or {})
    for k in [k for k, v in e.items() if v is None]:
        del e[k]
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-vv", "--disable-pip-version-check", "--retries", "0",
                        "--timeout", "5"] + args, capture_output=True, text=True, timeout=40, env=e)
    out = r.stdout + r.stderr
    tried = "Starting new HTTP connection" in out
    if r.returncode == 0:
        print("ESCAPED", what, out[-300:].replace("\n", " | "))
    elif "externally-managed" in out:
        print("WRONG", what, "refused by PEP 668, not for want of network: pip never tried")
    elif must_try and not tried:
        print("WRONG", what, "pip never tried the network:", out.strip().splitlines()[-1:])
    else:
        why = [l for l in out.splitlines() if "Errno" in l or "NewConnectionError" in l] or out.strip().splitlines()[-1:]
        print("BLOCKED", what, "pip", r.returncode, "tried" if tried else "declined", why[0][-160:] if why else "")

pip("index-url", ["--index-url", "http://192.0.2.10/simple", "--trusted-host", "192.0.2.10", "tinypkg"])
pip("env-index", ["tinypkg"], {"PIP_NO_INDEX": None, "PIP_INDEX_URL": "http://192.0.2.10/simple",
                               "PIP_TRUSTED_HOST": "192.0.2.10", "PIP_CONFIG_FILE": os.devnull}, must_try=True)
pip("wheel-url", ["http://192.0.2.10/packages/tinypkg-1.0-py3-none-any.whl"], must_try=True)
try:
    import tinypkg
    print("ESCAPED import tinypkg", tinypkg.__file__)
except ImportError:
    print("BLOCKED import tinypkg")
