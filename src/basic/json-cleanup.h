/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <json-c/json.h>

static inline void json_object_putp(json_object **j) {
        if (*j)
                (void) json_object_put(*j);
}
#define _cleanup_json_ __attribute__((cleanup(json_object_putp)))
