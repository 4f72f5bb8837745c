# attack: packet sockets (AF_PACKET SOCK_RAW and SOCK_DGRAM, all protocols) to sniff or inject frames
# expect: every socket() fails
# check: r.exit_code === 0 && !r.stdout.includes('ESCAPED') && (r.stdout.match(/^BLOCKED/gm) || []).length === 2
import socket

for name, typ in (("SOCK_RAW", socket.SOCK_RAW), ("SOCK_DGRAM", socket.SOCK_DGRAM)):
    try:
        s = socket.socket(socket.AF_PACKET, typ, socket.htons(3))  # ETH_P_ALL
        print("ESCAPED AF_PACKET %s: %r" % (name, s))
    except OSError as e:
        print("BLOCKED AF_PACKET %s: %s" % (name, e))
