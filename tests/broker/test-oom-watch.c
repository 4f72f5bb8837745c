/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/broker/oom-watch.[ch] against a scratch directory laid
 * out as a v1 memory cgroup: regular files stand in for memory.oom_control
 * and cgroup.event_control. The watch writes "EVENTFD CONTROLFD" into the
 * latter, as it would for the kernel; the test then signals that eventfd as
 * the kernel does on an OOM kill (and on the cgroup's removal). */

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <systemd/sd-event.h>
#include <unistd.h>

#include "macro.h"
#include "oom-watch.h"
#include "test-helpers.h"

typedef struct Scratch {
        char root[64];
        char oom_control[128], event_control[128];
} Scratch;

static void write_file(const char *path, const char *text) {
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

        ASSERT_TRUE(fd >= 0);
        ASSERT_EQ_INT(write(fd, text, strlen(text)), (ssize_t) strlen(text));
        safe_close(fd);
}

static void scratch_setup(Scratch *s) {
        char path[128];

        (void) snprintf(s->root, sizeof s->root, "/tmp/test-oom-watch-XXXXXX");
        ASSERT_TRUE(mkdtemp(s->root));
        (void) snprintf(path, sizeof path, "%s/cgroup.event_control", s->root);
        write_file(path, "");
        (void) snprintf(path, sizeof path, "%s/run.service", s->root);
        ASSERT_TRUE(mkdir(path, 0700) == 0);
        (void) snprintf(s->oom_control, sizeof s->oom_control, "%s/run.service/memory.oom_control", s->root);
        write_file(s->oom_control, "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n");
        (void) snprintf(s->event_control, sizeof s->event_control, "%s/run.service/cgroup.event_control", s->root);
        write_file(s->event_control, "");
}

static void scratch_remove(Scratch *s) {
        char path[128];

        ASSERT_TRUE(unlink(s->oom_control) == 0);
        ASSERT_TRUE(unlink(s->event_control) == 0);
        (void) snprintf(path, sizeof path, "%s/run.service", s->root);
        ASSERT_TRUE(rmdir(path) == 0);
        (void) snprintf(path, sizeof path, "%s/cgroup.event_control", s->root);
        ASSERT_TRUE(unlink(path) == 0);
        ASSERT_TRUE(rmdir(s->root) == 0);
}

/* The eventfd the watch registered, from what it wrote for the kernel. */
static int registered_eventfd(const Scratch *s) {
        char buf[64] = {};
        int fd = open(s->event_control, O_RDONLY | O_CLOEXEC), efd = -1, cfd = -1;

        ASSERT_TRUE(fd >= 0);
        ASSERT_TRUE(read(fd, buf, sizeof buf - 1) > 0);
        safe_close(fd);
        ASSERT_EQ_INT(sscanf(buf, "%d %d", &efd, &cfd), 2);
        ASSERT_TRUE(efd >= 0 && cfd >= 0 && efd != cfd);
        return efd;
}

static void signal_eventfd(int efd) {
        uint64_t one = 1;
        ASSERT_EQ_INT(write(efd, &one, sizeof one), (ssize_t) sizeof one);
}

TEST(test_no_v1_hierarchy) {
        sd_event *e = NULL;
        OomWatch *w = NULL;

        ASSERT_EQ_INT(sd_event_new(&e), 0);
        ASSERT_EQ_INT(oom_watch_start_at(e, "/nonexistent", "/run.service", &w), -EOPNOTSUPP);
        ASSERT_TRUE(!w);
        ASSERT_EQ_INT(oom_watch_result(NULL), -EOPNOTSUPP);
        sd_event_unref(e);
}

TEST(test_bad_control_group) {
        Scratch s;
        sd_event *e = NULL;
        OomWatch *w = NULL;

        scratch_setup(&s);
        ASSERT_EQ_INT(sd_event_new(&e), 0);
        ASSERT_EQ_INT(oom_watch_start_at(e, s.root, NULL, &w), -EINVAL);
        ASSERT_EQ_INT(oom_watch_start_at(e, s.root, "run.service", &w), -EINVAL);
        ASSERT_EQ_INT(oom_watch_start_at(e, s.root, "/../run.service", &w), -EINVAL);
        /* A cgroup that is not there: open()'s own error. */
        ASSERT_EQ_INT(oom_watch_start_at(e, s.root, "/gone.service", &w), -ENOENT);
        ASSERT_TRUE(!w);
        sd_event_unref(e);
        scratch_remove(&s);
}

TEST(test_results) {
        Scratch s;
        sd_event *e = NULL;
        OomWatch *w = NULL;
        int efd;

        scratch_setup(&s);
        ASSERT_EQ_INT(sd_event_new(&e), 0);

        /* No signal: no OOM. */
        ASSERT_EQ_INT(oom_watch_start_at(e, s.root, "/run.service", &w), 0);
        efd = registered_eventfd(&s);
        ASSERT_EQ_INT(oom_watch_result(w), 0);
        /* A signal while the cgroup lives: an OOM kill for certain. */
        signal_eventfd(efd);
        ASSERT_EQ_INT(oom_watch_result(w), 1);
        w = oom_watch_free(w);

        /* One signal after the cgroup went (oom_control reads empty): an
         * OOM kill or the removal, the caller decides. */
        ASSERT_EQ_INT(oom_watch_start_at(e, s.root, "/run.service", &w), 0);
        efd = registered_eventfd(&s);
        write_file(s.oom_control, "");
        signal_eventfd(efd);
        ASSERT_EQ_INT(oom_watch_result(w), -EAGAIN);
        /* Removal signals once: a second one was an OOM kill. */
        signal_eventfd(efd);
        ASSERT_EQ_INT(oom_watch_result(w), 1);
        w = oom_watch_free(w);

        sd_event_unref(e);
        scratch_remove(&s);
}

/* sd_event_add_io() returns its error and leaves errno alone: the watch
 * must pass on that error, not whatever errno held. A finished event loop
 * refuses new sources with -ESTALE. */
TEST(test_event_error_is_returned) {
        Scratch s;
        sd_event *e = NULL;
        OomWatch *w = NULL;

        scratch_setup(&s);
        ASSERT_EQ_INT(sd_event_new(&e), 0);
        ASSERT_EQ_INT(sd_event_exit(e, 0), 0);
        ASSERT_EQ_INT(sd_event_loop(e), 0);

        errno = 0;
        ASSERT_EQ_INT(oom_watch_start_at(e, s.root, "/run.service", &w), -ESTALE);
        ASSERT_TRUE(!w);
        sd_event_unref(e);
        scratch_remove(&s);
}

int main(void) {
        RUN(test_no_v1_hierarchy);
        RUN(test_bad_control_group);
        RUN(test_results);
        RUN(test_event_error_is_returned);
        return 0;
}
