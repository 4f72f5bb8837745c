# attack: input files named ../../etc/cron.d/x, /etc/passwd, a/b, .., and one with a newline, to write outside the run's /tmp or create odd paths
# expect: the call is refused before anything runs: isError naming the first bad name
# files: [{"name": "../../etc/cron.d/x", "content": "* * * * * root id\n"}, {"name": "/etc/passwd", "content": ""}, {"name": "a/b", "content": ""}, {"name": "..", "content": ""}, {"name": "a\nb", "content": ""}]
# check: res.isError === true && r === null && /files\[0\]: "\.\.\/\.\.\/etc\/cron\.d\/x" is not a plain file name/.test(res.content[0].text)
print("ESCAPED the code ran with bad input file names")
