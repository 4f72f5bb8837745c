/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The server name a TLS ClientHello asks for (RFC 8446 4.1.2, RFC 6066 3).
 * Only the first record is read; a ClientHello split over several records is
 * refused (no client here does that for a hello under 16 KiB). */

#include <stddef.h>
#include <stdint.h>

#define EGRESS_TLS_PEEK_MAX (5 + 16384)  /* one record */

/* buf holds n bytes. 0: need more; > 0: found, *ret_name (lower case, NUL
 * terminated, a DNS name of at most 253 bytes) and the return value is the
 * record's length; -ENOENT: a complete hello without server_name;
 * -EBADMSG: not a TLS handshake record with a ClientHello, or malformed;
 * -ECHRNG: an Encrypted Client Hello (its outer SNI is not the real one). */
int egress_tls_client_hello_sni(const uint8_t *buf, size_t n, char ret_name[static 254]);
