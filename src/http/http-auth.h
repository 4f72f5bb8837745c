/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Who may talk to the HTTP transport: the bearer token, the Origin
 * allow-list and the Host check against DNS rebinding. Pure functions over
 * header values, so they are unit-tested without a server.
 *
 * The Host rule: on loopback, Host must name the loopback address we listen
 * on with our port (a browser steered to us by a rebound DNS name carries
 * that name instead). Beyond loopback a token is required, which a rebound
 * page cannot have, so Host is not checked unless MCP_EXEC_ALLOWED_HOSTS
 * lists names: then it must be one of them (on loopback: or a loopback
 * name). Behind a reverse proxy, Host is whatever the proxy sends: the
 * client's own (HAProxy's default) or one the proxy sets. */

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "http-tokens.h"

#define HTTP_AUTH_TOKEN_MAX 4096

typedef struct HttpAuth {
        char *token;            /* the single token, caller "default"; NULL: none */
        HttpTokens named;       /* named tokens (http-tokens.h), each its own caller */
        /* Some token was configured at some point: a reload that removes the
         * last one locks everyone out instead of letting everyone in. */
        bool token_required;
        char **origins;         /* allowed Origin values, NULL-terminated; NULL: none */
        char **hosts;           /* MCP_EXEC_ALLOWED_HOSTS: host or host:port, NULL-terminated; NULL: none */
        bool check_host;        /* bound to loopback: Host must name it (or be listed in hosts) */
        uint16_t port;          /* the bound port, for the Host check */
        char *bound_host;       /* the bound address as Host spells it ("127.0.0.1", "[::1]") */
} HttpAuth;

void http_auth_done(HttpAuth *a);

/* X-MCP-AUTH or "Authorization: Bearer"; either may carry a token, and if
 * both do, they must carry the same one. True if one of the tokens is given,
 * with *ret_name (if set) its name (the single token's is "default"); true
 * with NULL when no token is required. False if a header carries a token
 * that is none of them, even where the other's is right. An empty X-MCP-AUTH
 * and an Authorization of another scheme (a proxy's own) carry none. Each
 * header is compared with every token, in constant time, so that timing
 * tells neither which token matched nor whether any did. */
bool http_auth_token_match(const HttpAuth *a, const char *x_mcp_auth, const char *authorization,
                           const char **ret_name);
bool http_auth_token_ok(const HttpAuth *a, const char *x_mcp_auth, const char *authorization);
/* Replaces the named tokens (taken) unless one repeats the single token (then
 * -EINVAL with *ret_error set, and the old set stays). */
int http_auth_set_named(HttpAuth *a, HttpTokens *named, const char **ret_error);
/* Whether any token is configured (or was: see token_required). */
bool http_auth_has_token(const HttpAuth *a);

/* An absent Origin (no browser) is fine; a present one must be listed, or be
 * our own loopback origin (http://localhost:PORT, 127.0.0.1, [::1]). */
bool http_auth_origin_ok(const HttpAuth *a, const char *origin);

/* On loopback the Host header must name the loopback address we listen on
 * (localhost, 127.0.0.1, [::1] or the bound literal) with our port, or be
 * listed in hosts. Elsewhere: listed, if there is a list. A listed name
 * without a port matches it with any port or none; with a port, only
 * Host: name:port. Names compare case-insensitively. */
bool http_auth_host_ok(const HttpAuth *a, const char *host);

/* True if host is the literal address sa (the connection's own end), with
 * its port or none (80): a client that addressed us by our address, like a
 * load balancer's check or a scraper. No browser is steered to an address
 * by a rebound name, so this passes where the allow-list does not list it. */
bool http_auth_host_is_address(const char *host, const struct sockaddr *sa);

/* MCP_EXEC_ALLOWED_ORIGINS and MCP_EXEC_ALLOWED_HOSTS: comma-separated,
 * blanks around entries ignored (config_parse() checked the host entries). */
int http_auth_parse_origins(const char *list, char ***ret);
int http_auth_parse_hosts(const char *list, char ***ret);

/* The token: the credential "auth-token" (LoadCredential=) if present, else
 * MCP_EXEC_AUTH_TOKEN, which is then removed from the environment. *ret is
 * NULL when neither is set. -EINVAL (with *ret_error set to a static reason)
 * for a token that cannot travel in a header. */
int http_auth_load_token(const char *credentials_dir, char **ret, const char **ret_source, const char **ret_error);

/* Constant-time string equality; exposed for tests. */
bool streq_consttime(const char *a, const char *b);
