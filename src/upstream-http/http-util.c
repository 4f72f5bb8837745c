/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "http-util.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static bool is_blank(char c) {
        return c == ' ' || c == '\t';
}

HttpBodyKind http_body_kind(const char *content_type) {
        size_t n;

        if (!content_type)
                return HTTP_BODY_OTHER;
        content_type += strspn(content_type, " \t");
        n = strcspn(content_type, "; \t");
        if (n == strlen("application/json") && strncasecmp(content_type, "application/json", n) == 0)
                return HTTP_BODY_JSON;
        if (n == strlen("text/event-stream") && strncasecmp(content_type, "text/event-stream", n) == 0)
                return HTTP_BODY_SSE;
        return HTTP_BODY_OTHER;
}

bool http_session_id_is_valid(const char *s, size_t n) {
        if (!s || n == 0 || n > HTTP_SESSION_ID_MAX)
                return false;
        for (size_t i = 0; i < n; i++)
                if ((unsigned char) s[i] < 0x21 || (unsigned char) s[i] > 0x7e)
                        return false;
        return true;
}

int http_header_match(const char *line, size_t n, const char *name, const char **ret_value, size_t *ret_len) {
        size_t l = strlen(name);
        const char *v, *end;

        assert(line || n == 0);
        assert(ret_value);
        assert(ret_len);

        if (n <= l || line[l] != ':' || strncasecmp(line, name, l) != 0)
                return 0;
        v = line + l + 1;
        end = line + n;
        while (v < end && is_blank(*v))
                v++;
        while (end > v && (is_blank(end[-1]) || end[-1] == '\r' || end[-1] == '\n'))
                end--;
        *ret_value = v;
        *ret_len = (size_t) (end - v);
        return 1;
}

int http_credential_value(const char *data, size_t n, char **ret) {
        char *v;

        assert(data || n == 0);
        assert(ret);

        if (n > 0 && data[n - 1] == '\n')
                n--;
        if (n > 0 && data[n - 1] == '\r')
                n--;
        if (n == 0 || n > HTTP_CREDENTIAL_VALUE_MAX || data[0] == ' ' || data[n - 1] == ' ')
                return -EINVAL;
        for (size_t i = 0; i < n; i++)
                if ((unsigned char) data[i] < ' ' || (unsigned char) data[i] >= 0x7f)
                        return -EINVAL;
        v = strndup(data, n);
        if (!v)
                return -ENOMEM;
        *ret = v;
        return 0;
}

void http_message_one_line(char *s, size_t n) {
        assert(s || n == 0);

        for (size_t i = 0; i < n; i++)
                if (s[i] == '\r' || s[i] == '\n')
                        s[i] = ' ';
}
