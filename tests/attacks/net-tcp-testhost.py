# attack: TCP connect to a listener on a test host in another network namespace (10.213.0.2 and fd00:213::2 behind a veth pair in the box)
# expect: both connects fail, the test host's listeners log nothing (the box itself reaches them: the wrapper's control)
# needs: testhost
# after: listeners-silent
# check: r.exit_code === 0 && !r.stdout.includes('ESCAPED') && (r.stdout.match(/^BLOCKED/gm) || []).length === 2
import socket

for fam, host in ((socket.AF_INET, "@TESTHOST4@"), (socket.AF_INET6, "@TESTHOST6@")):
    try:
        s = socket.socket(fam, socket.SOCK_STREAM)
        s.settimeout(3)
        s.connect((host, @TESTPORT@))
        s.sendall(b"attack")
        print("ESCAPED tcp %s: connected" % host)
    except OSError as e:
        print("BLOCKED tcp %s: %s" % (host, e))
