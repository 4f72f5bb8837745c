/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "execd-config.h"

#include <assert.h>

#include "launch-frame.h"
#include "macro.h"

size_t execd_max_line(const Config *c) {
        assert(c);

        /* Twice code, stdin and input files: room for the escapes of text
         * (a quote or a newline takes two bytes) and base64 (4/3), and each
         * file name fully escaped. Not six times, as if every byte were a
         * \u00XX escape: parsing holds up to about three times a message
         * beside it (the parsed strings, json-c's growing buffer), outside
         * the memory budget, so this bounds what one message costs the front
         * end (docs/configuration.md, "The front ends' memory budget"). Binary content
         * travels as a base64 input file. */
        return (size_t) (2 * (c->max_code_bytes + c->max_stdin_bytes + c->max_input_bytes) +
                         LAUNCH_FILES_MAX * (6 * LAUNCH_FILE_NAME_MAX + 64) + 64 * 1024);
}

/* What the broker said, or def where it did not. */
static uint64_t or_default(uint64_t v, uint64_t def) {
        return v == BROKER_INFO_UNSET ? def : v;
}

/* Sessions: what the broker allows; none from one that has none, nor from
 * one that leaves a limit of theirs unset or 0. */
static void merge_sessions(const BrokerSandboxInfo *info, McpServerConfig *cfg) {
        assert(info);
        assert(cfg);

        cfg->max_sessions = or_default(info->max_sessions, 0);
        cfg->max_sessions_per_caller = or_default(info->max_sessions_per_caller, 0);
        cfg->session_idle_s = or_default(info->session_idle_s, 0);
        cfg->session_max_s = or_default(info->session_max_s, 0);
        if (cfg->max_sessions_per_caller == 0 || cfg->session_idle_s == 0 || cfg->session_max_s == 0)
                cfg->max_sessions = 0;
}

void execd_server_config(const Config *c, const BrokerSandboxInfo *info, McpServerConfig *ret) {
        McpServerConfig cfg;

        assert(c);
        assert(info);
        assert(ret);

        cfg = (McpServerConfig) {
                .default_timeout_s = c->default_timeout_s,
                .max_timeout_s = c->max_timeout_s,
                .max_output_bytes = c->max_output_bytes,
                .max_stdin_bytes = c->max_stdin_bytes,
                .max_code_bytes = c->max_code_bytes,
                .max_concurrent = c->max_concurrent,
                .max_queue = c->max_queue,
                .max_images = c->max_images,
                .max_image_bytes = c->max_image_bytes,
                .max_files_out = c->max_files_out,
                .max_result_bytes = c->max_result_bytes,
                .max_input_bytes = c->max_input_bytes,
                .task_ttl_max_s = c->task_ttl_max_s,
                .max_tasks = c->max_tasks,
                .max_tasks_per_caller = c->max_tasks_per_caller,
                .task_after_ms = c->task_after_ms,
        };

        /* What the sandbox really enforces comes from the broker, which owns
         * those settings; ours are only a fallback. */
        cfg.memory_max_bytes = or_default(info->memory_max_bytes, c->memory_max);
        cfg.tasks_max = or_default(info->tasks_max, c->tasks_max);
        cfg.cpu_quota_percent = or_default(info->cpu_quota_percent, c->cpu_quota_percent);
        cfg.max_timeout_s = MIN(cfg.max_timeout_s, or_default(info->max_timeout_s, cfg.max_timeout_s));
        /* A broker that does not say takes no longer runs for tasks. */
        cfg.task_max_timeout_s = MIN(c->task_max_timeout_s, or_default(info->task_max_timeout_s, cfg.max_timeout_s));
        cfg.task_max_timeout_s = MAX(cfg.task_max_timeout_s, cfg.max_timeout_s);
        cfg.max_code_bytes = MIN(cfg.max_code_bytes, or_default(info->max_code_bytes, cfg.max_code_bytes));
        cfg.python_version = info->python_version;
        /* Figures, files and input files need the broker's fourth fd and
         * launch frames of version 2; an older broker refuses both. */
        cfg.result_channel = info->result_channel;
        cfg.modules = (const char *const *) info->modules;
        cfg.preloaded = (const char *const *) info->preloaded;
        cfg.languages = info->languages;
        merge_sessions(info, &cfg);
        *ret = cfg;
}
