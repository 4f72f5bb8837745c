/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "probe-cache.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "build-config.h"
#include "json-util.h"
#include "macro.h"
#include "util.h"

/* Bump when the key's parts change meaning. */
#define KEY_FORMAT "mcp-exec-self-check-v2"    /* v2: the wheelhouse denied, the store (issue 41) */
#define CACHE_MAX 8192

/* A file's identity: a replaced or rewritten file is another one. */
static int file_id(const char *path, char *buf, size_t size) {
        struct stat st;

        assert(buf);

        if (!path || stat(path, &st) < 0)
                return path ? negative_errno() : -EINVAL;
        (void) snprintf(buf, size, "%" PRIu64 ":%" PRIu64 ":%" PRIu64 ":%" PRIi64 ".%09li", (uint64_t) st.st_dev,
                        (uint64_t) st.st_ino, (uint64_t) st.st_size, (int64_t) st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
        return 0;
}

int probe_cache_key(const SandboxSpec *spec, const ProbeCacheSystemd *sd, char **ret) {
        char broker[96], launcher[96], bootstrap[96], python[96], interpreter[96], other[512] = "";
        struct utsname u;
        char *key;
        int r;

        assert(spec);
        assert(sd);
        assert(ret);

        if (isempty(sd->version) || strchr(sd->version, '\n') || sd->boot_usec == 0)
                return -EINVAL;
        if (uname(&u) < 0)
                return negative_errno();
        if ((r = file_id("/proc/self/exe", broker, sizeof broker)) < 0 ||
            (r = file_id(spec->launcher, launcher, sizeof launcher)) < 0 ||
            (r = file_id(spec->bootstrap, bootstrap, sizeof bootstrap)) < 0 ||
            (r = file_id(spec->python, python, sizeof python)) < 0 ||
            (spec->language != LANGUAGE_PYTHON &&
             (r = file_id(spec->interpreter, interpreter, sizeof interpreter)) < 0))
                return r;
        /* Another language's units (issue 42): its interpreter too. (Python's key is as it was.) */
        if (spec->language != LANGUAGE_PYTHON)
                (void) snprintf(other, sizeof other, "language=%s\ninterpreter=%s %s\n",
                                language_to_string(spec->language) ?: "?", spec->interpreter, interpreter);
        if (asprintf(&key,
                     KEY_FORMAT "\nversion=%s\nboot=%" PRIu64 "\nkernel=%s %s\nsystemd=%s\nunits_loaded=%" PRIu64
                     "\nbroker=%s\nlauncher=%s %s\nbootstrap=%s %s\npython=%s %s\nwheelhouse=%s\nstore=%s\n"
                     "limits=%" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\nslice=%s\n"
                     "jit=%d\n%s",
                     PACKAGE_VERSION, sd->boot_usec, u.release, u.version, sd->version, sd->units_load_usec, broker,
                     spec->launcher, launcher, spec->bootstrap, bootstrap, spec->python, python, spec->wheelhouse ?: "",
                     spec->package_store ?: "",
                     spec->memory_max, spec->tasks_max, spec->tmp_size_max, spec->file_size_max,
                     spec->cpu_quota_percent, spec->max_code_bytes, spec->slice ?: "", spec->jit, other) < 0)
                return -ENOMEM;
        *ret = key;
        return 0;
}

bool probe_cache_valid(const char *dir, const char *key) {
        _cleanup_free_ char *path = NULL, *text = NULL;
        _cleanup_close_ int fd = -EBADF;
        _cleanup_json_ json_object *j = NULL;
        struct stat st;
        ssize_t n;

        assert(dir);

        if (!key || asprintf(&path, "%s/" PROBE_CACHE_FILE, dir) < 0)
                return false;
        fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        /* Ours only: root's, a regular file nobody else may write. */
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != 0 || (st.st_mode & 0077) != 0 ||
            st.st_size <= 0 || st.st_size > CACHE_MAX)
                return false;
        text = malloc((size_t) st.st_size + 1);
        if (!text)
                return false;
        n = read(fd, text, (size_t) st.st_size + 1);
        if (n != st.st_size)
                return false;
        text[n] = 0;
        j = json_tokener_parse(text);
        return streq_ptr(json_get_string(j, "verdict"), "passed") && streq_ptr(json_get_string(j, "key"), key);
}

int probe_cache_store(const char *dir, const char *key) {
        _cleanup_free_ char *tmp = NULL, *path = NULL;
        _cleanup_json_ json_object *j = NULL;
        _cleanup_close_ int fd = -EBADF;
        const char *text;
        size_t len;
        int r;

        assert(dir);
        assert(key);

        r = json_build(&j, JB_STR("verdict", "passed"), JB_STR("key", key), JB_END);
        if (r < 0)
                return r;
        text = json_object_to_json_string_length(j, JSON_C_TO_STRING_PLAIN, &len);
        if (!text || len > CACHE_MAX)
                return -E2BIG;
        if (asprintf(&tmp, "%s/." PROBE_CACHE_FILE ".tmp", dir) < 0 || asprintf(&path, "%s/" PROBE_CACHE_FILE, dir) < 0)
                return -ENOMEM;
        (void) unlink(tmp);
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return negative_errno();
        r = loop_write(fd, text, len);
        if (r >= 0 && rename(tmp, path) < 0)
                r = negative_errno();
        if (r < 0)
                (void) unlink(tmp);
        return r;
}

void probe_cache_forget(const char *dir) {
        _cleanup_free_ char *path = NULL;

        assert(dir);

        if (asprintf(&path, "%s/" PROBE_CACHE_FILE, dir) >= 0)
                (void) unlink(path);
}
