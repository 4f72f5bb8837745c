/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "tmpfs-proto.h"

#include <assert.h>
#include <string.h>

#include "json-util.h"
#include "macro.h"

static const char *const tmpfs_op_table[_TMPFS_OP_MAX] = {
        [TMPFS_OP_MOUNT] = "mount",
        [TMPFS_OP_UMOUNT] = "umount",
        [TMPFS_OP_SWEEP] = "sweep",
};

const char *tmpfs_op_to_string(TmpfsOp op) {
        if (op < 0 || op >= _TMPFS_OP_MAX)
                return NULL;
        return tmpfs_op_table[op];
}

TmpfsOp tmpfs_op_from_string(const char *s) {
        if (!s)
                return _TMPFS_OP_INVALID;
        for (size_t i = 0; i < ELEMENTSOF(tmpfs_op_table); i++)
                if (streq(tmpfs_op_table[i], s))
                        return (TmpfsOp) i;
        return _TMPFS_OP_INVALID;
}

bool tmpfs_valid_id(const char *id) {
        assert(id);

        return strlen(id) == TMPFS_ID_LEN && strspn(id, "0123456789abcdef") == TMPFS_ID_LEN;
}

static int bad(const char *why, const char **ret_error) {
        *ret_error = why;
        return -EINVAL;
}

int tmpfs_request_parse(json_object *j, TmpfsRequest *ret, const char **ret_error) {
        TmpfsRequest req = {};
        json_object *size;
        const char *id;
        int64_t n;

        assert(ret);
        assert(ret_error);

        if (!json_object_is_type(j, json_type_object))
                return bad("a request is a JSON object", ret_error);
        req.op = tmpfs_op_from_string(json_get_string(j, "op"));
        if (req.op < 0)
                return bad("unknown op", ret_error);
        if (req.op == TMPFS_OP_SWEEP) {
                *ret = req;
                return 0;
        }

        id = json_get_string(j, "id");
        if (!id || !tmpfs_valid_id(id))
                return bad("id must be 32 lowercase hex digits", ret_error);
        memcpy(req.id, id, TMPFS_ID_LEN + 1);

        if (req.op == TMPFS_OP_MOUNT) {
                size = json_get(j, "size");
                if (!json_object_is_type(size, json_type_int))
                        return bad("size must be an integer", ret_error);
                /* json-c keeps integers past INT64_MAX as uint64; both ends
                 * are refused by the bounds below. */
                n = json_object_get_int64(size);
                if (n < (int64_t) TMPFS_SIZE_MIN || (uint64_t) n > TMPFS_SIZE_MAX)
                        return bad("size is out of range (1 MiB to 1 TiB)", ret_error);
                req.size = (uint64_t) n;
        }
        *ret = req;
        return 0;
}

int tmpfs_request_build(const TmpfsRequest *req, json_object **ret) {
        _cleanup_json_ json_object *j = NULL;
        int r;

        assert(req);
        assert(ret);

        j = json_object_new_object();
        if (!j)
                return -ENOMEM;
        r = json_add_string(j, "op", tmpfs_op_to_string(req->op));
        if (r >= 0 && req->op != TMPFS_OP_SWEEP)
                r = json_add_string(j, "id", req->id);
        if (r >= 0 && req->op == TMPFS_OP_MOUNT)
                r = json_add_int(j, "size", (int64_t) req->size);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(j);
        return 0;
}
