/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "node-id.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <systemd/sd-id128.h>

#include "macro.h"
#include "util.h"

/* Ours: sd_id128_get_machine_app_specific() hashes the machine id with it. */
#define NODE_APP_ID SD_ID128_MAKE(34, 28, 41, 75, fb, 6d, 48, be, 9a, 17, de, bf, f1, 9e, 49, 43)
#define NODE_DEFAULT_LEN 12U

static char node[NODE_ID_MAX + 1];

bool node_id_is_valid(const char *s) {
        size_t n;

        if (isempty(s))
                return false;
        n = strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-");
        return s[n] == 0 && n <= NODE_ID_MAX;
}

int node_id_from_machine(char ret[static NODE_ID_MAX + 1]) {
        char s[SD_ID128_STRING_MAX];
        sd_id128_t id;
        int r;

        assert(ret);

        r = sd_id128_get_machine_app_specific(NODE_APP_ID, &id);
        if (r < 0)
                return r;
        (void) sd_id128_to_string(id, s);
        memcpy(ret, s, NODE_DEFAULT_LEN);
        ret[NODE_DEFAULT_LEN] = 0;
        return 0;
}

int node_id_init(const char *value) {
        if (isempty(value))
                return node_id_from_machine(node);
        if (!node_id_is_valid(value))
                return -EINVAL;
        (void) snprintf(node, sizeof node, "%s", value);
        return 0;
}

const char *node_id(void) {
        if (!node[0] && node_id_from_machine(node) < 0)
                (void) snprintf(node, sizeof node, "local");
        return node;
}

int node_id_mint(char ret[static NODE_ID_HANDLE_MAX]) {
        char hex[SD_ID128_STRING_MAX];
        int r;

        assert(ret);

        r = random_hex128(hex);
        if (r < 0)
                return r;
        (void) snprintf(ret, NODE_ID_HANDLE_MAX, "%s.%s", node_id(), hex);
        return 0;
}

bool node_id_owns(const char *id) {
        const char *n = node_id();
        size_t l = strlen(n);

        if (!id || !strneq(id, n, l) || id[l] != '.')
                return false;
        id += l + 1;
        return strlen(id) == 32 && strspn(id, "0123456789abcdef") == 32;
}
