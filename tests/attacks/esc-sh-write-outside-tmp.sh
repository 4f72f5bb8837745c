# attack: write outside the run's own /tmp from bash: redirections, touch, mkdir and cp into the system (/etc, /usr, /opt, /srv), /var (lib, cache, log), the homes, /run
# expect: every write fails (ProtectSystem=strict, ProtectHome=yes, a read-only /run, the dynamic uid); writing /tmp works
# check: r.exit_code === 0 && !r.stdout.includes('ESCAPED') && (r.stdout.match(/^BLOCKED /gm) || []).length === 10 && r.stdout.includes('OK /tmp')
for d in /etc /usr /usr/local/bin /opt /srv /var/lib /var/cache/mcp-exec /var/log /root /run; do
        if { echo x > "$d/mcp-sh-attack"; } 2>/dev/null || touch "$d/mcp-sh-attack2" 2>/dev/null ||
                mkdir "$d/mcp-sh-attack3" 2>/dev/null; then
                echo "ESCAPED $d"
        else
                echo "BLOCKED $d"
        fi
done
echo x > /tmp/mcp-sh-ok && echo "OK /tmp"
