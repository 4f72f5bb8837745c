# attack: make pip in the code use an index that is not the wheelhouse, without network: --index-url, PIP_INDEX_URL with PIP_NO_INDEX taken away and no config file, a wheel's URL
# expect: all three installs fail (no network at all: no AF_INET in the run) and tinypkg is not importable
# timeout: 90
# check: r && r.exit_code === 0 && (r.stdout.match(/^BLOCKED /gm) || []).length === 4 && !/ESCAPED|WRONG/.test(r.stdout)
import os, subprocess, sys

def pip(what, args, env=None):
    e = dict(os.environ)
    e.update(env or {})
    for k in [k for k, v in e.items() if v is None]:
        del e[k]
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "--retries", "0",
                        "--timeout", "5"] + args, capture_output=True, text=True, timeout=40, env=e)
    if r.returncode == 0:
        print("ESCAPED", what, (r.stdout + r.stderr)[-300:].replace("\n", " | "))
    elif "externally-managed" in r.stdout + r.stderr:
        print("WRONG", what, "refused by PEP 668, not for want of network: pip never tried")
    else:
        print("BLOCKED", what, "pip", r.returncode, (r.stdout + r.stderr).strip().splitlines()[-1:])

pip("index-url", ["--index-url", "http://192.0.2.10/simple", "--trusted-host", "192.0.2.10", "tinypkg"])
pip("env-index", ["tinypkg"], {"PIP_NO_INDEX": None, "PIP_INDEX_URL": "http://192.0.2.10/simple",
                               "PIP_TRUSTED_HOST": "192.0.2.10", "PIP_CONFIG_FILE": os.devnull})
pip("wheel-url", ["http://192.0.2.10/packages/tinypkg-1.0-py3-none-any.whl"])
try:
    import tinypkg
    print("ESCAPED import tinypkg", tinypkg.__file__)
except ImportError:
    print("BLOCKED import tinypkg")
