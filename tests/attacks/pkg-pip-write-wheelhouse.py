# attack: use pip to write into the package store's wheels (issue 41: runs never see the raw wheelhouse), which later runs install from: pip download of a wheel the code made (pkgown) into it, pip download into a new directory in it, pip install --target it
# expect: all three fail (read-only, root's); the store lists the same files after
# timeout: 90
# check: r && r.exit_code === 0 && (r.stdout.match(/^BLOCKED /gm) || []).length === 3 && !/ESCAPED|WRONG/.test(r.stdout)
# check: r.stdout.includes('SAME True True')
import os, subprocess, sys, zipfile

W = "/var/lib/mcp-exec/packages/wheels"
before = sorted(os.listdir(W))
os.makedirs("/tmp/own")
with zipfile.ZipFile("/tmp/own/pkgown-1.0-py3-none-any.whl", "w") as z:
    z.writestr("pkgown/__init__.py", "print('pkgown imported')\n")
    z.writestr("pkgown-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: pkgown\nVersion: 1.0\n")
    z.writestr("pkgown-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
    z.writestr("pkgown-1.0.dist-info/RECORD", "")

def pip(what, args):
    r = subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check"] + args,
                       capture_output=True, text=True, timeout=40)
    if r.returncode == 0:
        print("ESCAPED", what, (r.stdout + r.stderr)[-300:].replace("\n", " | "))
    elif "externally-managed" in r.stdout + r.stderr:
        print("WRONG", what, "refused by PEP 668: pip never tried to write")
    else:
        print("BLOCKED", what, "pip", r.returncode, (r.stdout + r.stderr).strip().splitlines()[-1:])

pip("download-own", ["download", "--no-index", "--find-links", "/tmp/own", "-d", W, "pkgown"])
pip("download-new-dir", ["download", "--no-index", "--find-links", W, "-d", W + "/new", "pkga==1.0"])
pip("install-target", ["install", "--no-index", "--find-links", W, "--target", W, "pkga==1.0"])
print("SAME", sorted(os.listdir(W)) == before, "pkga-1.0-py3-none-any.whl" in before)
