/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "launch-input.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "launch-common.h"
#include "launch-frame.h"
#include "macro.h"
#include "util.h"

static int copy_exact(int in, int out, uint64_t len) {
        static uint8_t buf[64 * 1024];
        int r;

        while (len > 0) {
                size_t n = (size_t) MIN(len, (uint64_t) sizeof buf);
                r = loop_read_exact(in, buf, n);
                if (r < 0)
                        return r;
                if (out >= 0) {
                        r = loop_write(out, buf, n);
                        if (r < 0)
                                return r;
                }
                len -= n;
        }
        return 0;
}

/* Names were checked by the front end; checked again, as everything from
 * outside. */
static int read_files(int in, uint64_t max_total, bool replace) {
        uint8_t h[LAUNCH_FILES_HEADER_SIZE];
        uint64_t total = 0;
        uint32_t count;
        int r;

        r = loop_read_exact(in, h, sizeof h);
        if (r < 0)
                return launch_fail("reading the input files", r);
        if (launch_files_parse(h, &count) < 0)
                return launch_fail("too many input files", 0);
        for (uint32_t i = 0; i < count; i++) {
                uint8_t eh[LAUNCH_FILE_ENTRY_HEADER_SIZE];
                char name[LAUNCH_FILE_NAME_MAX + 1];
                _cleanup_close_ int fd = -EBADF;
                uint16_t name_len;
                uint64_t data_len;

                r = loop_read_exact(in, eh, sizeof eh);
                if (r < 0)
                        return launch_fail("reading the input files", r);
                r = launch_file_entry_parse(eh, max_total - total, &name_len, &data_len);
                if (r == -EFBIG)
                        return launch_fail("the input files exceed MCP_EXEC_MAX_INPUT_BYTES", 0);
                if (r < 0)
                        return launch_fail("malformed input file entry", 0);
                r = loop_read_exact(in, name, name_len);
                if (r < 0)
                        return launch_fail("reading the input files", r);
                name[name_len] = 0;
                if (!launch_file_name_valid(name, name_len) || strlen(name) != name_len)
                        return launch_fail("an input file name is not a plain file name", 0);
                /* A session's earlier file (or link, or FIFO) of that name goes
                 * first: we write a new file, never through what the program
                 * left there. A directory stays, and the create fails. */
                if (replace && unlinkat(AT_FDCWD, name, 0) < 0 && errno != ENOENT && errno != EISDIR)
                        return launch_fail("replacing an input file", errno);
                /* Relative to the working directory, /tmp: the name has no '/'. */
                fd = openat(AT_FDCWD, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
                if (fd < 0)
                        return launch_fail("creating an input file", errno);
                r = copy_exact(in, fd, data_len);
                if (r < 0)
                        return launch_fail("writing an input file", r);
                total += data_len;
        }
        return 0;
}

int launch_read_input(int in, uint64_t max_code, uint64_t max_input, bool replace, int *ret_memfd) {
        uint8_t hdr[LAUNCH_FRAME_HEADER_SIZE];
        _cleanup_close_ int fd = -EBADF;
        uint32_t version;
        uint64_t len;
        int r;

        assert(ret_memfd);

        r = loop_read_exact(in, hdr, sizeof hdr);
        if (r < 0)
                return launch_fail("no code on stdin", r == -EPIPE ? 0 : r);
        r = launch_frame_parse_version(hdr, sizeof hdr, max_code, &len, &version);
        if (r == -EFBIG)
                return launch_fail("code exceeds the configured maximum size", 0);
        if (r < 0)
                return launch_fail("malformed code frame on stdin", 0);

        fd = memfd_create("mcp-exec-code", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (fd < 0)
                return launch_fail("memfd_create", errno);
        r = copy_exact(in, fd, len);
        if (r < 0)
                return launch_fail("reading code", r == -EPIPE ? EPIPE : r);
        if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0)
                return launch_fail("sealing code", errno);
        if (version == LAUNCH_FRAME_VERSION_FILES) {
                r = read_files(in, max_input, replace);
                if (r != 0)
                        return r;
        }
        *ret_memfd = TAKE_FD(fd);
        return 0;
}
