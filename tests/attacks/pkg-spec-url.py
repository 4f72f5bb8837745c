# attack: direct references and markers instead of a name from the wheelhouse: "pkga @ file:///etc/shadow", a marker, a local path
# expect: isError (no "@", no ";", no "/"); the code never runs
# packages: ["pkga @ file:///etc/shadow", "pkgb;python_version>'3'", "/var/lib/mcp-exec/wheels/pkga-1.0-py3-none-any.whl"]
# check: res.isError === true && /pkga|pkgb|wheels/.test(res.content?.[0]?.text ?? '')
# check: !JSON.stringify(res).includes('ESCAPED')
print("ESCAPED: the code ran")
