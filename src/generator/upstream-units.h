/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The units of one upstream server (issue 40), as
 * mcp-exec-servers-generator writes them from servers.d/NAME.conf (a
 * Streamable HTTP server's, URL=, run its bridge, UPSTREAM_HTTP_BRIDGE, which
 * alone has the network to reach it and its credentials as headers):
 *
 *   mcp-exec-upstream-NAME.socket     ListenStream=/run/mcp-exec/upstream/NAME.sock,
 *                                     Accept=yes, root:mcp-exec-tools 0660
 *   mcp-exec-upstream-NAME@.service   one instance per connection, its stdin and
 *                                     stdout the connection: a hardened dynamic
 *                                     user, no network unless NETWORK=host, or
 *                                     egress:POLICY (only lo, out through
 *                                     egressd: mcp-exec-upstream-feed, -exec)
 *   sockets.target.wants/mcp-exec-upstream-NAME.socket
 *
 * Every value from the file goes into the units quoted and escaped for unit
 * file syntax (specifiers, $, backslashes, quotes), so that what the server
 * runs is exactly what the file says. A server's credentials reach it only
 * through LoadCredential= and the wrapper (mcp-exec-upstream-exec), never
 * as text in a unit. */

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "build-config.h"

#include "server-config.h"
#include "tools-proto.h"

/* Where the gateway connects (tools-proto.h): NAME.sock there. */
#define UPSTREAM_SOCKET_DIR TOOLS_UPSTREAM_DIR
#define UPSTREAM_TOOLS_GROUP "mcp-exec-tools"
/* NETWORK=egress:POLICY: the ExecStartPre=+ that asks egressd for the
 * instance's run (mcp-exec-upstream-feed) and the names of the two
 * descriptors it leaves in the unit's fd store for ExecStart=. */
#define UPSTREAM_FEED_HELPER LIBEXECDIR "/mcp-exec-upstream-feed"
#define UPSTREAM_FDNAME_CONTROL "egress-control"
#define UPSTREAM_FDNAME_FEED "egress-feed"
/* What a URL server's units start (src/upstream-http). */
#define UPSTREAM_HTTP_BRIDGE LIBEXECDIR "/mcp-exec-upstream-http"

/* Each instance runs as a dynamic user of its own, "mu" + the server's tag
 * (6 hex digits) + "-" + the instance (the connection's number, the peer's
 * pid and uid): instances of one server never share a uid, so none can reach
 * another's /tmp or memory through /proc, nor signal it. User names have at
 * most 31 characters: the tag is a hash of the server's name (two servers
 * with the same tag cannot both have units, the generator refuses the
 * second) and leaves 22 for the instance, enough for 10^8 connections. */
uint32_t upstream_user_tag(const char *name);

/* s as one double-quoted word of ExecStart= (\\, \", %%, $$). NULL on OOM. */
char *unit_quote_exec_word(const char *s);
/* s ("KEY=value") as one double-quoted assignment of Environment=: as above
 * but $, which Environment= takes literally. */
char *unit_quote_environment(const char *s);

/* The host of url (http[s]://HOST[:PORT]/...; an IPv6 address without its
 * brackets) into buf. -EINVAL if there is none or it does not fit. */
int upstream_url_host(const char *url, char *buf, size_t size);

/* The texts of the two units. source_dir: where c's file is (servers.d);
 * wrapper: the path of mcp-exec-upstream-exec. */
int upstream_socket_unit(const ServerConfig *c, const char *source_dir, char **ret);
int upstream_service_unit(const ServerConfig *c, const char *source_dir, const char *wrapper, char **ret);

/* Writes both units of the server c and its sockets.target want into
 * the generator directory dir (dir_fd); on failure, nothing of c is left. */
int upstream_units_write(int dir_fd, const char *dir, const ServerConfig *c, const char *source_dir,
                         const char *wrapper);
