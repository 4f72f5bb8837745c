# attack: read other processes through /proc from bash: list every pid and its owner, read PID 1's environ, the broker's and the front end's cmdline and environ
# expect: /proc lists no process of another uid (ProtectProc=invisible, a uid per run; from systemd 257 a PID namespace of the run's own); none of those can be read
# check: r.exit_code === 0 && !r.stdout.includes('ESCAPED') && (r.stdout.match(/^BLOCKED /gm) || []).length === 4
me=$(id -u) others=0
for p in /proc/[0-9]*; do
        u=$(stat -c %u "$p" 2>/dev/null) || continue
        [[ $u != "$me" ]] && others=$((others + 1))
done
if ((others > 0)); then echo "ESCAPED /proc: $others pids of another uid"; else echo "BLOCKED /proc: none of another uid"; fi
for f in /proc/1/environ /proc/@BROKER_PID@/environ /proc/@FRONTEND_PID@/cmdline; do
        if s=$(tr '\0' ' ' < "$f" 2>/dev/null) && [[ $s == *MCP* || $s == *PATH=* || $s == *mcp-exec* ]]; then
                echo "ESCAPED $f"
        else
                echo "BLOCKED $f"
        fi
done
