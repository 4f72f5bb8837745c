/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Egress policies (issue 22): which hosts a run may reach through
 * mcp-exec-egressd. Set by the operator only, in /etc/mcp-exec/mcp-exec.conf
 * (an EnvironmentFile= of the front end, the broker and egressd alike):
 *
 *   MCP_EXEC_EGRESS_POLICY_PYPI="pypi.org files.pythonhosted.org :443"
 *   MCP_EXEC_EGRESS_CALLERS_PYPI="uid:1000 http:token:alice"   (optional)
 *   MCP_EXEC_EGRESS_MAX_CONNECTIONS=8      per run, at once
 *   MCP_EXEC_EGRESS_MAX_BYTES=256M         per run, both directions together
 *
 * The policy's name is the variable's suffix in lower case ("pypi"): what a
 * caller puts in the `network` argument of exec and session_create. A caller
 * picks a policy; it never adds a host. Host patterns are exact DNS names
 * ("pypi.org") or "*.suffix" (any name below suffix, not suffix itself),
 * compared case-insensitively, without a trailing dot. Port tokens (":443",
 * ":80", any 1..65535) apply to every host of the policy; none: 443 only.
 * IP literals are not host patterns (egressd refuses IP literals anyway).
 * Without CALLERS every caller of the server may use the policy; with it,
 * only the callers listed ("uid:N" for stdio, "http:token:NAME" for a named
 * token; the strings the front end's sessions already use).
 *
 * Test only: MCP_EXEC_EGRESS_TESTING_PUBLIC="192.0.2.0/24" makes egressd
 * treat those ranges as public; only the three documentation /24s
 * (192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24) are accepted there, so a
 * mistake cannot open a private range. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"

#define EGRESS_POLICY_NAME_MAX 32       /* [a-z0-9_]{1,32} */
#define EGRESS_POLICIES_MAX 32
#define EGRESS_HOSTS_MAX 64             /* patterns of one policy */
#define EGRESS_PORTS_MAX 8
#define EGRESS_HOST_MAX 253             /* a DNS name's text length */
#define EGRESS_TESTING_RANGES_MAX 3

#define EGRESS_DEFAULT_MAX_CONNECTIONS UINT64_C(8)
#define EGRESS_DEFAULT_MAX_BYTES (UINT64_C(256) * 1024 * 1024)

typedef struct EgressPolicy {
        char *name;                     /* lower case, as callers name it */
        char **hosts;                   /* NULL-terminated patterns, lower case */
        uint16_t ports[EGRESS_PORTS_MAX];
        size_t n_ports;                 /* >= 1 after parsing (443 when none given) */
        char **callers;                 /* NULL-terminated, or NULL: every caller */
} EgressPolicy;

typedef struct EgressConfig {
        EgressPolicy *policies;
        size_t n_policies;              /* 0: egress is off; `network` is refused */
        uint64_t max_connections;       /* per run, at once */
        uint64_t max_bytes;             /* per run, both directions */
        /* Test only: network byte order IPv4 /24 prefixes treated as public. */
        uint32_t testing_public[EGRESS_TESTING_RANGES_MAX];
        size_t n_testing_public;
} EgressConfig;

/* Fills *ret from envp ("NAME=VALUE", NULL-terminated). On a bad value returns
 * -EINVAL and, if ret_error is set, a one-line message naming the variable. */
int egress_config_parse(char *const *envp, EgressConfig *ret, char **ret_error);
void egress_config_done(EgressConfig *c);

/* NULL if no such policy. */
const EgressPolicy *egress_config_find(const EgressConfig *c, const char *name);

/* One entry of a CALLERS list: "uid:N", "http:token:NAME" (as http-tokens.h
 * names them) or "http:loopback" (also servers.d's CALLERS=). */
bool egress_caller_is_valid(const char *s, size_t n);

/* May caller (e.g. "uid:1000") use p? */
bool egress_policy_allows_caller(const EgressPolicy *p, const char *caller);

/* Does p allow host (a DNS name, any case, no trailing dot) on port? Decided
 * on the text alone, before any lookup. An IP literal is never allowed. */
bool egress_policy_allows(const EgressPolicy *p, const char *host, uint16_t port);

/* True for MCP_EXEC_EGRESS_POLICY_* and MCP_EXEC_EGRESS_CALLERS_* names
 * (config_is_unknown_assignment() asks). */
bool egress_config_is_policy_name(const char *assignment);
