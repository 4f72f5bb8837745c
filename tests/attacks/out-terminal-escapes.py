# attack: terminal control sequences in output: clear screen (ESC[2J), cursor moves, OSC 52 clipboard write, OSC 0 title, OSC 8 hyperlink, DCS, 8-bit C1 CSI (U+009B), BEL, backspaces, a lone CR overwriting the line
# expect: a well-formed result: every control character comes back verbatim as JSON-escaped text (no interpretation, nothing dropped or added), stderr too
# check: r.exit_code === 0 && r.stdout === "\u001b[2J\u001b[H\u001b]52;c;bWNwYXRrLWNsaXBib2FyZA==\u0007\u001b]0;mcpatk title\u0007\u001b]8;;https://example.com/\u001b\\link\u001b]8;;\u001b\\\u001bP+q544e\u001b\\\u009b6n\u0007\b\bok\rover\n"
# check: r.stderr === '\x1b[31mred\x1b[0m\x07\n'
import sys

seq = ("\x1b[2J\x1b[H"                      # clear screen, cursor home
       "\x1b]52;c;bWNwYXRrLWNsaXBib2FyZA==\x07"  # OSC 52: set the clipboard
       "\x1b]0;mcpatk title\x07"             # OSC 0: window title
       "\x1b]8;;https://example.com/\x1b\\link\x1b]8;;\x1b\\"  # OSC 8 hyperlink
       "\x1bP+q544e\x1b\\"                    # DCS request (XTGETTCAP)
       "\u009b6n"                            # 8-bit CSI: cursor position report request
       "\x07\x08\x08ok\rover\n")             # BEL, backspaces, CR
sys.stdout.write(seq)
sys.stderr.write("\x1b[31mred\x1b[0m\x07\n")
