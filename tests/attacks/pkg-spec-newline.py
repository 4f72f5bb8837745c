# attack: a spec with a newline, so that it becomes two lines of the installer's requirements file, the second an option (--extra-index-url)
# expect: isError (a spec is one line: no whitespace, no control characters); the code never runs
# packages: ["pkga\n--extra-index-url=http://192.0.2.10/simple"]
# check: res.isError === true && /pkga/.test(res.content?.[0]?.text ?? '')
# check: !JSON.stringify(res).includes('ESCAPED')
print("ESCAPED: the code ran")
