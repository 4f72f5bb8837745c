/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "mime.h"

#include <string.h>
#include <strings.h>

#include "macro.h"

static const struct {
        const char *ext, *type;
        bool image;
} table[] = {
        { "png", "image/png", true },
        { "jpg", "image/jpeg", true },
        { "jpeg", "image/jpeg", true },
        { "gif", "image/gif", true },
        { "webp", "image/webp", true },
        { "svg", "image/svg+xml", true },
        { "txt", "text/plain", false },
        { "log", "text/plain", false },
        { "md", "text/markdown", false },
        { "csv", "text/csv", false },
        { "tsv", "text/tab-separated-values", false },
        { "json", "application/json", false },
        { "jsonl", "application/jsonl", false },
        { "yaml", "application/yaml", false },
        { "yml", "application/yaml", false },
        { "xml", "application/xml", false },
        { "html", "text/html", false },
        { "htm", "text/html", false },
        { "py", "text/x-python", false },
        { "pdf", "application/pdf", false },
        { "zip", "application/zip", false },
        { "gz", "application/gzip", false },
        { "parquet", "application/vnd.apache.parquet", false },
        { "npy", "application/octet-stream", false },
        { "bin", "application/octet-stream", false },
};

const char *mime_from_name(const char *name, bool *ret_image) {
        const char *dot = name ? strrchr(name, '.') : NULL;

        if (ret_image)
                *ret_image = false;
        if (!dot || strchr(dot, '/') || dot[1] == 0)
                return "application/octet-stream";
        for (size_t i = 0; i < ELEMENTSOF(table); i++)
                if (strcasecmp(dot + 1, table[i].ext) == 0) {
                        if (ret_image)
                                *ret_image = table[i].image;
                        return table[i].type;
                }
        return "application/octet-stream";
}
