/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* _cleanup_json_ lives in json-util.h now. This name stays only until the
 * files of src/mcp, src/http, src/launch, src/client and tests/ that include
 * it (edited on other branches at the same time) are switched over; then it
 * goes. */

#include "json-util.h"
