/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "mime-type.h"

#include <assert.h>
#include <string.h>
#include <strings.h>

#include "macro.h"

static const struct {
        const char *ext, *type;
} table[] = {
        { "png", "image/png" },
        { "jpg", "image/jpeg" },
        { "jpeg", "image/jpeg" },
        { "gif", "image/gif" },
        { "webp", "image/webp" },
        { "svg", "image/svg+xml" },
        { "txt", "text/plain" },
        { "log", "text/plain" },
        { "csv", "text/csv" },
        { "tsv", "text/tab-separated-values" },
        { "md", "text/markdown" },
        { "html", "text/html" },
        { "htm", "text/html" },
        { "css", "text/css" },
        { "py", "text/x-python" },
        { "json", "application/json" },
        { "jsonl", "application/jsonl" },
        { "ndjson", "application/x-ndjson" },
        { "geojson", "application/geo+json" },
        { "xml", "application/xml" },
        { "yaml", "application/yaml" },
        { "yml", "application/yaml" },
        { "toml", "application/toml" },
        { "js", "text/javascript" },
        { "tex", "application/x-tex" },
        { "pdf", "application/pdf" },
        { "zip", "application/zip" },
        { "gz", "application/gzip" },
        { "tar", "application/x-tar" },
        { "xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet" },
        { "parquet", "application/vnd.apache.parquet" },
        { "npy", "application/octet-stream" },
        { "bin", "application/octet-stream" },
};

const char *mime_type_from_path(const char *path, size_t len) {
        const char *slash, *dot, *ext;
        size_t n;

        assert(path || len == 0);

        slash = memrchr(path, '/', len);
        if (slash) {
                len -= (size_t) (slash + 1 - path);
                path = slash + 1;
        }
        dot = memrchr(path, '.', len);
        /* ".bashrc" has no extension. */
        if (!dot || dot == path)
                return NULL;
        ext = dot + 1;
        n = len - (size_t) (ext - path);
        for (size_t i = 0; i < ELEMENTSOF(table); i++)
                if (strlen(table[i].ext) == n && strncasecmp(table[i].ext, ext, n) == 0)
                        return table[i].type;
        return NULL;
}
