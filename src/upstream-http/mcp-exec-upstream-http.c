/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* mcp-exec-upstream-http [--header=Name=value ...] [--credential-header=Name=ID ...]
 *                        [--max-bytes=N] [--timeout=S] URL
 *
 * The unit of a Streamable HTTP upstream server (servers.d URL=, issue 40),
 * one instance per gateway connection as a stdio server's (upstream-units.h):
 * stdin and stdout are the connection, on which the gateway speaks MCP's
 * stdio transport; this program speaks Streamable HTTP to URL for it
 * (http-bridge.h). So the gateway keeps no network at all, and only this
 * unit, with its server's credentials and nothing else, reaches the URL.
 *
 * --credential-header=Name=ID sends the header Name with the content of the
 * credential ID ($CREDENTIALS_DIRECTORY/ID, from the unit's LoadCredential=;
 * one final newline dropped): the secret is never on a command line nor in
 * a unit property. Messages name the credential, never its content; a
 * missing or malformed one stops the bridge before it connects.
 * --max-bytes: MAX_BYTES (the largest message is that and 64 KiB more);
 * --timeout: CALL_TIMEOUT_S. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <curl/curl.h>
#include <systemd/sd-event.h>

#include "http-bridge.h"
#include "http-util.h"
#include "log.h"
#include "macro.h"
#include "main-func.h"
#include "parse-util.h"
#include "server-config.h"
#include "strv.h"

#define CREDENTIAL_FILE_MAX (64 * 1024)

static char **arg_headers;              /* "Name: value" */
static char **arg_credential_headers;   /* "Name=ID" */
static uint64_t arg_max_bytes = SERVER_DEFAULT_MAX_BYTES;
static uint64_t arg_timeout_s = SERVER_DEFAULT_CALL_TIMEOUT_S;
static const char *arg_url;

static void help(void) {
        printf("mcp-exec-upstream-http [OPTIONS] URL\n\n"
               "The bridge from a stdio MCP connection (stdin, stdout) to a Streamable HTTP MCP server.\n"
               "Started by the units mcp-exec-servers-generator writes for servers.d URL= servers.\n\n"
               "  -h --help                  Show this help\n"
               "     --header=NAME=VALUE     Send this header with every request\n"
               "     --credential-header=NAME=ID  Send NAME with the content of the credential ID\n"
               "     --max-bytes=SIZE        The server's MAX_BYTES (default 8M)\n"
               "     --timeout=SEC           The server's CALL_TIMEOUT_S (default 30)\n");
}

/* NAME=REST: the name checked as servers.d checks it. */
static int split_header(const char *arg, char **ret_name, const char **ret_rest) {
        size_t n = strcspn(arg, "=");

        if (!arg[n] || !server_header_name_is_valid(arg, n))
                return -EINVAL;
        *ret_name = strndup(arg, n);
        if (!*ret_name)
                return -ENOMEM;
        *ret_rest = arg + n + 1;
        return 0;
}

static int add_header(const char *arg) {
        _cleanup_free_ char *name = NULL, *line = NULL;
        const char *value;
        int r;

        r = split_header(arg, &name, &value);
        if (r == -EINVAL || (r >= 0 && !server_header_value_is_valid(value, strlen(value))))
                return log_error_errno(EINVAL, "--header=%s: expected NAME=VALUE as HEADERS= has them.", arg);
        if (r < 0 || asprintf(&line, "%s: %s", name, value) < 0 || strv_extend_n(&arg_headers, line, strlen(line)) < 0)
                return log_oom();
        return 0;
}

static int parse_argv(int argc, char *argv[]) {
        enum { ARG_HEADER = 0x100, ARG_CREDENTIAL_HEADER, ARG_MAX_BYTES, ARG_TIMEOUT };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "header", required_argument, NULL, ARG_HEADER },
                { "credential-header", required_argument, NULL, ARG_CREDENTIAL_HEADER },
                { "max-bytes", required_argument, NULL, ARG_MAX_BYTES },
                { "timeout", required_argument, NULL, ARG_TIMEOUT },
                {},
        };
        int c, r;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case ARG_HEADER:
                        r = add_header(optarg);
                        if (r < 0)
                                return r;
                        break;
                case ARG_CREDENTIAL_HEADER:
                        if (strv_extend_n(&arg_credential_headers, optarg, strlen(optarg)) < 0)
                                return log_oom();
                        break;
                case ARG_MAX_BYTES:
                        if (parse_size(optarg, &arg_max_bytes) < 0 || arg_max_bytes == 0 ||
                            arg_max_bytes > (UINT64_C(1) << 30))
                                return log_error_errno(EINVAL, "--max-bytes=%s: not a size up to 1G.", optarg);
                        break;
                case ARG_TIMEOUT:
                        if (parse_uint(optarg, &arg_timeout_s) < 0 || arg_timeout_s == 0 || arg_timeout_s > 86400)
                                return log_error_errno(EINVAL, "--timeout=%s: not a number of seconds.", optarg);
                        break;
                default:
                        return -EINVAL;
                }
        if (optind + 1 != argc)
                return log_error_errno(EINVAL, "Expected one URL.");
        arg_url = argv[optind];
        if (!strneq(arg_url, "http://", 7) && !strneq(arg_url, "https://", 8))
                return log_error_errno(EINVAL, "%s: not an http:// or https:// URL.", arg_url);
        return 1;
}

/* The content of credential id, as a header value. */
static int read_credential(int dir_fd, const char *id, char **ret) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *buf = NULL;
        struct stat st;
        size_t n = 0;
        int r;

        if (!*id || strchr(id, '/') || id[0] == '.')
                return log_error_errno(EINVAL, "Invalid credential name '%s'.", id);
        fd = openat(dir_fd, id, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
        if (fd < 0 || fstat(fd, &st) < 0)
                return log_error_errno(errno, "Cannot read the credential %s (LoadCredential=): %m", id);
        if (!S_ISREG(st.st_mode) || st.st_size > CREDENTIAL_FILE_MAX)
                return log_error_errno(EINVAL, "The credential %s is not a file of at most %d bytes.", id,
                                       CREDENTIAL_FILE_MAX);
        buf = malloc((size_t) st.st_size + 1);
        if (!buf)
                return log_oom();
        while (n < (size_t) st.st_size) {
                ssize_t k = read(fd, buf + n, (size_t) st.st_size - n);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return log_error_errno(errno, "Cannot read the credential %s: %m", id);
                if (k == 0)
                        break;
                n += (size_t) k;
        }
        r = http_credential_value(buf, n, ret);
        explicit_bzero(buf, n);
        if (r == -EINVAL)
                return log_error_errno(EINVAL, "The credential %s is no header value: empty, over %u bytes, or with "
                                       "a control character or a line break inside.", id, HTTP_CREDENTIAL_VALUE_MAX);
        return r < 0 ? log_oom() : 0;
}

/* --credential-header=Name=ID: "Name: content" added to the headers. */
static int load_credential_headers(void) {
        _cleanup_close_ int dir_fd = -EBADF;
        const char *dir = getenv("CREDENTIALS_DIRECTORY");

        if (strv_length(arg_credential_headers) == 0)
                return 0;
        if (!dir)
                return log_error_errno(EINVAL, "No $CREDENTIALS_DIRECTORY: the unit loads no credentials.");
        dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dir_fd < 0)
                return log_error_errno(errno, "Cannot open $CREDENTIALS_DIRECTORY: %m");
        STRV_FOREACH(a, arg_credential_headers) {
                _cleanup_free_ char *name = NULL, *value = NULL, *line = NULL;
                const char *id;
                int r;

                r = split_header(*a, &name, &id);
                if (r == -EINVAL)
                        return log_error_errno(EINVAL, "--credential-header=%s: expected NAME=ID.", *a);
                if (r < 0)
                        return log_oom();
                r = read_credential(dir_fd, id, &value);
                if (r < 0)
                        return r;
                r = asprintf(&line, "%s: %s", name, value);
                explicit_bzero(value, strlen(value));
                if (r < 0 || strv_extend_n(&arg_headers, line, strlen(line)) < 0)
                        return log_oom();
                explicit_bzero(line, strlen(line));
        }
        return 0;
}

static int run(int argc, char *argv[]) {
        _cleanup_(sd_event_unrefp) sd_event *e = NULL;
        Bridge *b = NULL;
        int r;

        log_open("mcp-exec-upstream-http");
        /* A peer that went (the gateway, or a server mid-answer) is an
         * error to handle, not a signal to die of: curl runs with
         * CURLOPT_NOSIGNAL, and stdout is the gateway's socket. */
        (void) signal(SIGPIPE, SIG_IGN);
        r = parse_argv(argc, argv);
        if (r <= 0)
                return r;
        r = load_credential_headers();
        if (r < 0)
                return r;
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
                return log_error_errno(EIO, "Cannot initialize libcurl.");
        r = sd_event_default(&e);
        if (r >= 0)
                r = bridge_new(e, &(BridgeOptions) {
                        .url = arg_url,
                        .headers = arg_headers,
                        .max_message = arg_max_bytes,
                        .timeout_s = arg_timeout_s,
                        .in_fd = STDIN_FILENO,
                        .out_fd = STDOUT_FILENO,
                }, &b);
        if (r >= 0)
                r = sd_event_loop(e);
        else
                log_error_errno(r, "Cannot start: %m");
        bridge_free(b);
        strv_free(arg_headers);
        strv_free(arg_credential_headers);
        curl_global_cleanup();
        return r;
}

DEFINE_MAIN_FUNCTION(run);
