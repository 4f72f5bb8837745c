/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for the exec client's result channel and input files
 * (src/exec-client/exec-client.[ch]) against fake-broker.c: the fourth fd only
 * for a broker that takes it, version-2 launch frames byte for byte, the
 * launcher's status over the broker's, and what a hostile or dying launcher
 * leaves: garbage, a frame claiming a terabyte, a flood, a channel cut
 * without END. */

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-event.h>

#include "exec-client.h"
#include "fake-broker.h"
#include "macro.h"
#include "test-helpers.h"
#include "test-images.h"
#include "util.h"

typedef struct Env {
        sd_event *event;
        FakeBroker *broker;
        ExecClient *client;
        bool done;
        /* Copies of what done reported. */
        BrokerError error;
        int exit_code;
        char signal[16];
        bool timed_out, result_channel, have_status, lost;
        char error_text[256];
        uint64_t unlisted;
        size_t n_outputs;
        ResultItem outputs[64];
        /* The text results and what the request's charge held at done. */
        char stdout_text[1024];
        size_t stdout_len;
        bool truncated;
        MemCharge *charge;
        uint64_t charged;
} Env;

static const ResultLimits limits = {
        .max_images = 4,
        .max_image_bytes = 64 * 1024,
        .max_files = 8,
        .max_result_bytes = 256 * 1024,
};

static void on_done(ExecClient *c, const ExecResult *r, void *userdata) {
        Env *env = userdata;

        ASSERT_TRUE(!env->done);
        env->done = true;
        env->error = r->error;
        env->exit_code = r->exit_code;
        (void) snprintf(env->signal, sizeof env->signal, "%s", r->signal ?: "");
        env->timed_out = r->timed_out;
        env->result_channel = r->result_channel;
        env->have_status = r->have_status;
        env->lost = r->outputs_lost;
        (void) snprintf(env->error_text, sizeof env->error_text, "%s", r->outputs_error ?: "");
        env->unlisted = r->outputs_unlisted;
        env->stdout_len = MIN(r->stdout_len, sizeof env->stdout_text - 1);
        memcpy(env->stdout_text, r->stdout_text ?: "", env->stdout_len);
        env->truncated = r->truncated;
        env->charged = env->charge ? env->charge->bytes : 0;
        env->n_outputs = MIN(r->n_outputs, ELEMENTSOF(env->outputs));
        /* Shallow copies: the client, and so the data, lives until env_done(). */
        for (size_t i = 0; i < env->n_outputs; i++)
                env->outputs[i] = r->outputs[i];
}

static void env_init(Env *env, bool result_channel) {
        *env = (Env) {};
        ASSERT_TRUE(sd_event_new(&env->event) >= 0);
        ASSERT_EQ_INT(fake_broker_new(env->event, &env->broker), 0);
        env->broker->result_channel = result_channel;
}

static void env_done(Env *env) {
        env->client = exec_client_free(env->client);
        env->broker = fake_broker_free(env->broker);
        env->event = sd_event_unref(env->event);
}

static void run(Env *env, const char *code, const ExecInputFile *files, size_t n_files, unsigned timeout_ms) {
        ExecRequest req = {
                .code = code,
                .code_len = strlen(code),
                .max_output_bytes = 1 << 20,
                .result_channel = env->broker->result_channel,
                .result_limits = limits,
                .files = files,
                .n_files = n_files,
        };
        uint64_t end = now_usec() + timeout_ms * USEC_PER_MSEC;

        ASSERT_EQ_INT(exec_client_start(env->event, env->broker->path, &req, on_done, env, &env->client), 0);
        while (!env->done) {
                if (now_usec() > end)
                        ASSERT_FAIL_("no result within %u ms", timeout_ms);
                ASSERT_TRUE(sd_event_run(env->event, 10 * USEC_PER_MSEC) >= 0);
        }
        ASSERT_EQ_INT(env->error, BROKER_ERROR_NONE);
}

static FakeRun *the_run(Env *env) {
        ASSERT_EQ_INT(env->broker->n_runs, 1);
        return env->broker->runs[0];
}

/* Without the broker's word, three fds and a version-1 frame: exactly what
 * a broker without the result channel has always seen (the fake asserts
 * the fd count). */
TEST(test_without_channel) {
        Env env;

        env_init(&env, false);
        run(&env, "#out hi\n#exit 3\n#figure\n", NULL, 0, 5000);
        ASSERT_EQ_INT(env.exit_code, 3);
        ASSERT_TRUE(!env.result_channel && !env.have_status && !env.lost);
        ASSERT_EQ_INT(env.n_outputs, 0);
        ASSERT_EQ_INT(the_run(&env)->version, LAUNCH_FRAME_VERSION);
        ASSERT_TRUE(the_run(&env)->res_fd < 0);
        env_done(&env);

        /* Files need the channel: refused before anything is sent. */
        {
                ExecInputFile f = { .name = "a", .name_len = 1, .data = (const uint8_t *) "x", .size = 1 };
                ExecRequest req = { .code = "x", .code_len = 1, .files = &f, .n_files = 1 };
                ExecClient *c = NULL;
                env_init(&env, false);
                ASSERT_EQ_INT(exec_client_start(env.event, env.broker->path, &req, on_done, &env, &c), -EINVAL);
                ASSERT_TRUE(!c);
                ASSERT_EQ_INT(env.broker->n_runs, 0);
                env_done(&env);
        }
}

TEST(test_channel_and_files) {
        static const uint8_t bin[] = { 0x00, 0xff, 0x0a, 0x80, 0x00 };
        const ExecInputFile files[] = {
                { .name = "data.csv", .name_len = 8, .data = (const uint8_t *) "a,b\n1,2\n", .size = 8 },
                { .name = "bin", .name_len = 3, .data = bin, .size = sizeof bin },
                { .name = "empty", .name_len = 5, .data = NULL, .size = 0 },
        };
        Env env;
        FakeRun *r;

        env_init(&env, true);
        run(&env,
            "#exit 0\n#status-exit 4\n#figure\n#image /tmp/outputs/p.jpg\n#file /tmp/outputs/r.csv x,y\n"
            "#blob /tmp/outputs/b.bin\n#skip /tmp/outputs/fifo not a regular file\n#returnfiles\n#echo\n",
            files, ELEMENTSOF(files), 5000);
        r = the_run(&env);

        /* The version-2 frame carried the files byte for byte, and stdin after them. */
        ASSERT_EQ_INT(r->version, LAUNCH_FRAME_VERSION_FILES);
        ASSERT_EQ_INT(r->n_files, 3);
        for (size_t i = 0; i < 3; i++) {
                ASSERT_EQ_U64(r->files[i].name_len, files[i].name_len);
                ASSERT_MEMEQ(r->files[i].name, files[i].name, files[i].name_len);
                ASSERT_EQ_U64(r->files[i].size, files[i].size);
                if (files[i].size > 0)
                        ASSERT_MEMEQ(r->files[i].data, files[i].data, files[i].size);
        }
        ASSERT_EQ_U64(r->stdin_len, 0);

        /* The launcher's status wins over the broker's exit 0. */
        ASSERT_TRUE(env.result_channel && env.have_status && !env.lost && !env.error_text[0]);
        ASSERT_EQ_INT(env.exit_code, 4);
        ASSERT_STREQ(env.signal, "");

        ASSERT_EQ_INT(env.n_outputs, 8);
        ASSERT_TRUE(env.outputs[0].figure && !env.outputs[0].reason);
        ASSERT_MEMEQ(env.outputs[0].data, png_3x2, sizeof png_3x2);
        ASSERT_STREQ(env.outputs[1].mime_type, "image/jpeg");
        ASSERT_EQ_INT(env.outputs[1].width, 3);
        ASSERT_TRUE(env.outputs[2].text);
        ASSERT_MEMEQ(env.outputs[2].data, "x,y", 3);
        ASSERT_TRUE(!env.outputs[3].text && !env.outputs[3].reason);
        ASSERT_STREQ(env.outputs[4].reason, "not a regular file");
        /* The input files, back from /tmp/outputs: the round trip is exact. */
        ASSERT_STREQ(env.outputs[5].path, "/tmp/outputs/data.csv");
        ASSERT_MEMEQ(env.outputs[5].data, "a,b\n1,2\n", 8);
        ASSERT_STREQ(env.outputs[6].path, "/tmp/outputs/bin");
        ASSERT_EQ_U64(env.outputs[6].size, sizeof bin);
        ASSERT_MEMEQ(env.outputs[6].data, bin, sizeof bin);
        ASSERT_TRUE(!env.outputs[6].text);
        ASSERT_EQ_U64(env.outputs[7].size, 0);
        env_done(&env);

        /* A signal from the launcher's view: exit_code -1 and its name. */
        env_init(&env, true);
        run(&env, "#exit 0\n#status-signal 11\n", NULL, 0, 5000);
        ASSERT_EQ_INT(env.exit_code, -1);
        ASSERT_STREQ(env.signal, "SIGSEGV");
        env_done(&env);

        /* Stdin still follows the files. */
        env_init(&env, true);
        {
                ExecRequest req = { .code = "#echo\n", .code_len = 6, .stdin_data = "in put", .stdin_len = 6,
                                    .max_output_bytes = 100, .result_channel = true, .result_limits = limits,
                                    .files = files, .n_files = 1 };
                ASSERT_EQ_INT(exec_client_start(env.event, env.broker->path, &req, on_done, &env, &env.client), 0);
                while (!env.done)
                        ASSERT_TRUE(sd_event_run(env.event, 10 * USEC_PER_MSEC) >= 0);
                ASSERT_EQ_U64(the_run(&env)->stdin_len, 6);
                ASSERT_MEMEQ(the_run(&env)->stdin_data, "in put", 6);
        }
        env_done(&env);
}

/* The exit event may come before the channel is read: the result waits. */
TEST(test_exit_first) {
        Env env;

        env_init(&env, true);
        run(&env, "#exitfirst\n#exit 2\n#figure\n#figure\n", NULL, 0, 5000);
        ASSERT_EQ_INT(env.exit_code, 2);
        ASSERT_EQ_INT(env.n_outputs, 2);
        ASSERT_TRUE(!env.lost);
        env_done(&env);
}

/* What a dying, lying or flooding launcher leaves: always a result, soon,
 * with what was complete and a clear word about the rest. */
TEST(test_hostile_launcher) {
        Env env;

        /* No END: the launcher died after one figure. */
        env_init(&env, true);
        run(&env, "#exit 1\n#figure\n#noend\n", NULL, 0, 5000);
        ASSERT_TRUE(env.lost && env.have_status && !env.error_text[0]);
        ASSERT_EQ_INT(env.exit_code, 1);
        ASSERT_EQ_INT(env.n_outputs, 1);
        env_done(&env);

        /* Killed before it said anything: the broker's exit code stands. */
        env_init(&env, true);
        run(&env, "#exit 9\n#nostatus\n#noend\n", NULL, 0, 5000);
        ASSERT_TRUE(env.lost && !env.have_status);
        ASSERT_EQ_INT(env.exit_code, 9);
        env_done(&env);

        /* A timeout: the launcher is killed, nothing comes, the broker's flags stand. */
        env_init(&env, true);
        run(&env, "#timeout\n#figure\n", NULL, 0, 5000);
        ASSERT_TRUE(env.timed_out && env.lost && !env.have_status);
        ASSERT_STREQ(env.signal, "SIGKILL");
        env_done(&env);

        /* Garbage after a good figure. */
        env_init(&env, true);
        run(&env, "#figure\n#raw 4d4350580100000002000000000000000000007b7d\n", NULL, 0, 5000);
        ASSERT_CONTAINS(env.error_text, "not a result frame");
        ASSERT_TRUE(!env.lost);
        ASSERT_EQ_INT(env.n_outputs, 1);
        ASSERT_TRUE(env.have_status);
        env_done(&env);

        /* A frame claiming a terabyte: refused at its header, nothing allocated. */
        env_init(&env, true);
        run(&env, "#huge\n", NULL, 0, 5000);
        ASSERT_CONTAINS(env.error_text, "more data than any limit allows");
        env_done(&env);

        /* A flood of frames: reading stops at RESULT_FRAMES_MAX, the writer gets EPIPE. */
        env_init(&env, true);
        run(&env, "#flood 100000\n", NULL, 0, 10000);
        ASSERT_CONTAINS(env.error_text, "more than 4096 frames");
        ASSERT_EQ_INT(env.n_outputs, RESULT_SKIPPED_LISTED_MAX);
        ASSERT_EQ_U64(env.unlisted, RESULT_FRAMES_MAX - 1 - RESULT_SKIPPED_LISTED_MAX);    /* STATUS first */
        ASSERT_TRUE(the_run(&env)->channel_written < the_run(&env)->channel.size);
        env_done(&env);

        /* 1,000 figures, past MCP_EXEC_MAX_IMAGES: 4 returned, 32 named left out, the rest counted. */
        env_init(&env, true);
        {
                char code[16 * 1024] = "", *p = code;
                for (int i = 0; i < 1000; i++)
                        p += sprintf(p, "#figure\n");
                run(&env, code, NULL, 0, 10000);
        }
        ASSERT_TRUE(!env.error_text[0] && !env.lost);
        ASSERT_EQ_INT(env.n_outputs, limits.max_images + RESULT_SKIPPED_LISTED_MAX);
        ASSERT_EQ_U64(env.unlisted, 1000 - limits.max_images - RESULT_SKIPPED_LISTED_MAX);
        for (size_t i = 0; i < env.n_outputs; i++)
                ASSERT_EQ_INT(!env.outputs[i].reason, i < limits.max_images);
        env_done(&env);

        /* An image that is none, by its name. */
        env_init(&env, true);
        run(&env, "#notimage /tmp/outputs/fake.png\n#image /tmp/outputs/ok.webp\n", NULL, 0, 5000);
        ASSERT_EQ_INT(env.n_outputs, 2);
        ASSERT_STREQ(env.outputs[0].reason, "not a valid image/png image");
        ASSERT_TRUE(!env.outputs[1].reason);
        env_done(&env);
}

/* Cancelling while the channel is being written still ends in done. */
TEST(test_cancel) {
        Env env;

        env_init(&env, true);
        {
                ExecRequest req = { .code = "#hang\n", .code_len = 6, .max_output_bytes = 100, .result_channel = true,
                                    .result_limits = limits };
                ASSERT_EQ_INT(exec_client_start(env.event, env.broker->path, &req, on_done, &env, &env.client), 0);
                for (int i = 0; i < 20; i++)
                        ASSERT_TRUE(sd_event_run(env.event, 5 * USEC_PER_MSEC) >= 0);
                exec_client_cancel(env.client);
                while (!env.done)
                        ASSERT_TRUE(sd_event_run(env.event, 10 * USEC_PER_MSEC) >= 0);
                ASSERT_TRUE(env.lost);
        }
        env_done(&env);
}

/* Invalid UTF-8 grows as text (U+FFFD for each bad byte): the texts are
 * charged refusably, and what the budget cannot give is cut at a whole
 * character, never forced past the caller's share. */
TEST(test_text_charge) {
        MemBudget b = { .max = 1000 };
        MemCharge charge = {};
        char code[256];
        Env env;

        /* 200 bad bytes: 201 bytes of output (the caller's share of 500
         * takes them), 601 of text (it does not). */
        memcpy(code, "#out ", 5);
        memset(code + 5, 0xff, 200);
        code[205] = 0;
        ASSERT_EQ_INT(mem_charge_init(&charge, &b, "uid:1"), 0);
        env_init(&env, false);
        env.charge = &charge;
        {
                ExecRequest req = { .code = code, .code_len = strlen(code), .max_output_bytes = 1 << 20,
                                    .charge = &charge };
                ASSERT_EQ_INT(exec_client_start(env.event, env.broker->path, &req, on_done, &env, &env.client), 0);
                while (!env.done)
                        ASSERT_TRUE(sd_event_run(env.event, 10 * USEC_PER_MSEC) >= 0);
        }
        ASSERT_EQ_INT(env.error, BROKER_ERROR_NONE);
        ASSERT_TRUE(env.charged <= mem_budget_caller_max(&b));
        ASSERT_TRUE(env.truncated);
        ASSERT_TRUE(env.stdout_len > 0 && env.stdout_len <= 201 && env.stdout_len % 3 == 0);
        ASSERT_TRUE(memcmp(env.stdout_text, "\xef\xbf\xbd", 3) == 0);
        ASSERT_TRUE(b.used <= b.max);
        env_done(&env);
        ASSERT_EQ_U64(charge.bytes, 0);
        mem_charge_done(&charge);
        ASSERT_EQ_U64(b.used, 0);
}

/* Code mode: the broker's tool_calls as a result shows them, and only
 * what a result may show (a model reads it). */
TEST(test_tool_calls) {
        _cleanup_json_ json_object *in = json_tokener_parse(
                "{\"everything\":{\"calls\":200,\"errors\":1,\"refused\":0,\"ms\":35,\"x\":\"y\"},"
                "\"Bad-Name\":{\"calls\":1},\"memory\":{\"calls\":-1,\"ms\":\"7\"},\"n\":5}");
        _cleanup_json_ json_object *out = NULL;

        ASSERT_TRUE(in);
        out = exec_result_tool_calls_from_json(in);
        ASSERT_TRUE(out);
        ASSERT_STREQ(json_serialize(out, NULL),
                     "{\"everything\":{\"calls\":200,\"errors\":1,\"refused\":0,\"ms\":35},\"memory\":{}}");
        ASSERT_FALSE(exec_result_tool_calls_from_json(NULL));
        ASSERT_FALSE(exec_result_tool_calls_from_json(json_object_get_array(in) ? in : NULL));
}

int main(void) {
        /* The fake launcher writes on after the reader hangs up: EPIPE, as in the sandbox. */
        (void) signal(SIGPIPE, SIG_IGN);
        RUN(test_without_channel);
        RUN(test_channel_and_files);
        RUN(test_exit_first);
        RUN(test_hostile_launcher);
        RUN(test_cancel);
        RUN(test_text_charge);
        RUN(test_tool_calls);
        return 0;
}
