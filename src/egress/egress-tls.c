/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "egress-tls.h"

#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "dns-name.h"
#include "macro.h"

#define TLS_RECORD_HANDSHAKE 22
#define TLS_HANDSHAKE_CLIENT_HELLO 1
#define TLS_RECORD_MAX 16384
#define TLS_EXT_SERVER_NAME 0x0000
#define TLS_EXT_ECH 0xfe0d
#define TLS_SNI_HOST_NAME 0

/* A bounds-checked reader over buf[0..n): every get fails once past the end. */
typedef struct Reader {
        const uint8_t *p;
        size_t n;
} Reader;

static bool get_u8(Reader *r, unsigned *ret) {
        assert(r);
        assert(ret);

        if (r->n < 1)
                return false;
        *ret = r->p[0];
        r->p++;
        r->n--;
        return true;
}

static bool get_u16(Reader *r, unsigned *ret) {
        assert(r);
        assert(ret);

        if (r->n < 2)
                return false;
        *ret = (unsigned) r->p[0] << 8 | r->p[1];
        r->p += 2;
        r->n -= 2;
        return true;
}

static bool get_u24(Reader *r, size_t *ret) {
        assert(r);
        assert(ret);

        if (r->n < 3)
                return false;
        *ret = (size_t) r->p[0] << 16 | (size_t) r->p[1] << 8 | r->p[2];
        r->p += 3;
        r->n -= 3;
        return true;
}

/* The next len bytes as a reader of their own. */
static bool get_sub(Reader *r, size_t len, Reader *ret) {
        assert(r);
        assert(ret);

        if (r->n < len)
                return false;
        *ret = (Reader) { r->p, len };
        r->p += len;
        r->n -= len;
        return true;
}

/* A vector with a 1- or 2-byte length prefix. */
static bool get_vec(Reader *r, unsigned len_bytes, Reader *ret) {
        unsigned len;

        assert(r);
        assert(ret);

        if (!(len_bytes == 1 ? get_u8(r, &len) : get_u16(r, &len)))
                return false;
        return get_sub(r, len, ret);
}

/* The server_name extension (RFC 6066 3): exactly one host_name. */
static int parse_server_name(Reader ext, char ret_name[static 254]) {
        Reader list, name;
        unsigned type;

        if (!get_vec(&ext, 2, &list) || ext.n != 0)
                return -EBADMSG;
        if (!get_u8(&list, &type) || type != TLS_SNI_HOST_NAME || !get_vec(&list, 2, &name) || list.n != 0)
                return -EBADMSG;
        if (!dns_name_is_valid((const char *) name.p, name.n))
                return -EBADMSG;
        for (size_t i = 0; i < name.n; i++) {
                char c = (char) name.p[i];
                ret_name[i] = c >= 'A' && c <= 'Z' ? (char) (c - 'A' + 'a') : c;
        }
        ret_name[name.n] = 0;
        return 0;
}

static int parse_extensions(Reader exts, char ret_name[static 254]) {
        bool sni = false, ech = false;
        int r;

        while (exts.n > 0) {
                unsigned type;
                Reader data;

                if (!get_u16(&exts, &type) || !get_vec(&exts, 2, &data))
                        return -EBADMSG;
                if (type == TLS_EXT_ECH)
                        ech = true;
                if (type != TLS_EXT_SERVER_NAME)
                        continue;
                if (sni)
                        return -EBADMSG;        /* twice: which one would upstream read? */
                r = parse_server_name(data, ret_name);
                if (r < 0)
                        return r;
                sni = true;
        }
        if (ech)
                return -ECHRNG;
        return sni ? 0 : -ENOENT;
}

/* The ClientHello body (RFC 8446 4.1.2) that fills the record exactly. */
static int parse_client_hello(Reader hello, char ret_name[static 254]) {
        Reader skip, exts;
        unsigned version;

        if (!get_u16(&hello, &version) || (version >> 8) != 3 || (version & 0xff) < 1 || (version & 0xff) > 3)
                return -EBADMSG;
        if (!get_sub(&hello, 32, &skip))                /* random */
                return -EBADMSG;
        if (!get_vec(&hello, 1, &skip) || skip.n > 32)  /* legacy_session_id */
                return -EBADMSG;
        if (!get_vec(&hello, 2, &skip) || skip.n < 2 || skip.n % 2 != 0)       /* cipher_suites */
                return -EBADMSG;
        if (!get_vec(&hello, 1, &skip) || skip.n < 1)   /* legacy_compression_methods */
                return -EBADMSG;
        if (hello.n == 0)
                return -ENOENT;                          /* no extensions at all */
        if (!get_vec(&hello, 2, &exts) || hello.n != 0)
                return -EBADMSG;
        return parse_extensions(exts, ret_name);
}

int egress_tls_client_hello_sni(const uint8_t *buf, size_t n, char ret_name[static 254]) {
        Reader rec = { buf, n }, body, hello;
        unsigned type, version, len;
        size_t hello_len;
        char name[254];
        int r;

        assert(buf || n == 0);
        assert(ret_name);

        /* Refuse what is not a handshake record as soon as its header shows it. */
        if (n >= 1 && buf[0] != TLS_RECORD_HANDSHAKE)
                return -EBADMSG;
        if (n >= 3 && (buf[1] != 3 || buf[2] < 1 || buf[2] > 4))
                return -EBADMSG;
        if (n < 5)
                return 0;
        if (!get_u8(&rec, &type) || !get_u16(&rec, &version) || !get_u16(&rec, &len))
                return -EBADMSG;
        if (len < 4 || len > TLS_RECORD_MAX)
                return -EBADMSG;
        if (n >= 6 && buf[5] != TLS_HANDSHAKE_CLIENT_HELLO)
                return -EBADMSG;
        if (rec.n < len)
                return 0;
        if (!get_sub(&rec, len, &body) || !get_u8(&body, &type) || type != TLS_HANDSHAKE_CLIENT_HELLO ||
            !get_u24(&body, &hello_len))
                return -EBADMSG;
        /* The whole hello in this record and nothing after it. */
        if (hello_len != body.n || !get_sub(&body, hello_len, &hello))
                return -EBADMSG;

        r = parse_client_hello(hello, name);
        if (r < 0)
                return r;
        memcpy(ret_name, name, strlen(name) + 1);
        return (int) (5 + len);
}
