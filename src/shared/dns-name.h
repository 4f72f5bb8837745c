/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Host names as egress policies, proxy requests and TLS server names carry
 * them: letters, digits and '-' (LDH) in dot-separated labels of 1 to 63
 * bytes, no label starting or ending with '-', 1 to 253 bytes in all, no
 * trailing dot. A name whose last label is all digits or "0x" and hex digits
 * is refused: resolvers and URL parsers read such names as IPv4 addresses
 * ("127.1", "1.2.3.0x4"), and no top-level domain looks like that. Any case
 * is accepted; callers lower-case. */

#include <stdbool.h>
#include <stddef.h>

bool dns_name_is_valid(const char *s, size_t n);

/* s[0..n) reads as a number: all decimal digits, or "0x" and hex digits. */
bool dns_label_is_numeric(const char *s, size_t n);
