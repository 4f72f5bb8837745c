/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/shared/language.[ch] (issue 42): names, the operator's
 * MCP_EXEC_LANGUAGES lists and the "#!" line of `mcp-exec run`'s file. */

#include <errno.h>
#include <string.h>

#include "language.h"
#include "macro.h"
#include "test-helpers.h"

TEST(test_names) {
        Language l = _LANGUAGE_MAX;

        for (Language i = 0; i < _LANGUAGE_MAX; i++) {
                ASSERT_EQ_INT(language_from_string(language_to_string(i), &l), 0);
                ASSERT_EQ_INT(l, i);
        }
        ASSERT_STREQ(language_to_string(LANGUAGE_PYTHON), "python");
        ASSERT_STREQ(language_to_string(LANGUAGE_BASH), "bash");
        ASSERT_STREQ(language_to_string(LANGUAGE_JAVASCRIPT), "javascript");
        ASSERT_TRUE(language_to_string(_LANGUAGE_MAX) == NULL);
        ASSERT_TRUE(language_to_string((Language) -1) == NULL);
        ASSERT_EQ_INT(language_from_string("Python", &l), -EINVAL);
        ASSERT_EQ_INT(language_from_string("sh", &l), -EINVAL);
        ASSERT_EQ_INT(language_from_string("", &l), -EINVAL);
        ASSERT_EQ_INT(language_from_string(NULL, &l), -EINVAL);
}

TEST(test_sets) {
        char buf[64];
        uint32_t set = 0;

        ASSERT_EQ_INT(language_set_parse("python", &set), 0);
        ASSERT_EQ_INT(set, LANGUAGE_BIT(LANGUAGE_PYTHON));
        ASSERT_EQ_INT(language_set_parse("bash,python,javascript", &set), 0);
        ASSERT_EQ_INT(set, LANGUAGES_ALL);
        ASSERT_STREQ(language_set_to_string(set, buf, sizeof buf), "python,bash,javascript");
        ASSERT_EQ_INT(language_set_parse("python,bash", &set), 0);
        ASSERT_STREQ(language_set_to_string(set, buf, sizeof buf), "python,bash");
        /* Strict: python always, each once, known names, no blanks or empty items. */
        set = 7;
        ASSERT_EQ_INT(language_set_parse("bash", &set), -EINVAL);
        ASSERT_EQ_INT(language_set_parse("", &set), -EINVAL);
        ASSERT_EQ_INT(language_set_parse("python,python", &set), -EINVAL);
        ASSERT_EQ_INT(language_set_parse("python,", &set), -EINVAL);
        ASSERT_EQ_INT(language_set_parse(",python", &set), -EINVAL);
        ASSERT_EQ_INT(language_set_parse("python, bash", &set), -EINVAL);
        ASSERT_EQ_INT(language_set_parse("python,ruby", &set), -EINVAL);
        ASSERT_EQ_INT(language_set_parse("python,bashbashbashbashbash", &set), -EINVAL);
        ASSERT_EQ_INT(language_set_parse(NULL, &set), -EINVAL);
        ASSERT_EQ_INT(set, 7);
        ASSERT_STREQ(language_set_to_string(0, buf, sizeof buf), "");
        /* Cut short, never past the buffer. */
        ASSERT_STREQ(language_set_to_string(LANGUAGES_ALL, buf, 12), "python,bash");
}

static int shebang(const char *code, Language *ret) {
        return language_from_shebang(code, strlen(code), ret);
}

TEST(test_shebang) {
        Language l = _LANGUAGE_MAX;

        ASSERT_EQ_INT(shebang("#!/bin/bash\necho hi\n", &l), 0);
        ASSERT_EQ_INT(l, LANGUAGE_BASH);
        ASSERT_EQ_INT(shebang("#!/bin/sh -e\n", &l), 0);
        ASSERT_EQ_INT(l, LANGUAGE_BASH);
        ASSERT_EQ_INT(shebang("#! /usr/bin/env bash\r\n", &l), 0);
        ASSERT_EQ_INT(l, LANGUAGE_BASH);
        ASSERT_EQ_INT(shebang("#!/usr/bin/env node", &l), 0);
        ASSERT_EQ_INT(l, LANGUAGE_JAVASCRIPT);
        ASSERT_EQ_INT(shebang("#!/usr/bin/env -S NODE_OPTIONS=x nodejs --harmony\n", &l), 0);
        ASSERT_EQ_INT(l, LANGUAGE_JAVASCRIPT);
        ASSERT_EQ_INT(shebang("#!/usr/bin/python3\n", &l), 0);
        ASSERT_EQ_INT(l, LANGUAGE_PYTHON);
        ASSERT_EQ_INT(shebang("#!/usr/bin/env python3.11\n", &l), 0);
        ASSERT_EQ_INT(l, LANGUAGE_PYTHON);
        ASSERT_EQ_INT(shebang("#!python\n", &l), 0);
        ASSERT_EQ_INT(l, LANGUAGE_PYTHON);

        l = _LANGUAGE_MAX;
        ASSERT_EQ_INT(shebang("print(1)\n", &l), -ENOENT);
        ASSERT_EQ_INT(shebang("", &l), -ENOENT);
        ASSERT_EQ_INT(shebang("#", &l), -ENOENT);
        ASSERT_EQ_INT(shebang(" #!/bin/bash\n", &l), -ENOENT);
        ASSERT_EQ_INT(shebang("# !/bin/bash\n", &l), -ENOENT);
        ASSERT_EQ_INT(shebang("#!/usr/bin/ruby\n", &l), -EPROTONOSUPPORT);
        ASSERT_EQ_INT(shebang("#!/usr/bin/env\n", &l), -EPROTONOSUPPORT);
        ASSERT_EQ_INT(shebang("#!\n/bin/bash\n", &l), -EPROTONOSUPPORT);
        ASSERT_EQ_INT(shebang("#!/bin/bash2\n", &l), -EPROTONOSUPPORT);
        ASSERT_EQ_INT(shebang("#!/usr/bin/python3.x\n", &l), -EPROTONOSUPPORT);
        ASSERT_EQ_INT(shebang("#!/usr/bin/python3.\n", &l), -EPROTONOSUPPORT);
        ASSERT_EQ_INT(shebang("#!/bin/zsh\n", &l), -EPROTONOSUPPORT);
        ASSERT_EQ_INT(l, _LANGUAGE_MAX);
        /* Not NUL-terminated: only len bytes are read. */
        ASSERT_EQ_INT(language_from_shebang("#!/bin/bashXYZ", 11, &l), 0);
        ASSERT_EQ_INT(l, LANGUAGE_BASH);
        ASSERT_EQ_INT(language_from_shebang("#!/usr/bin/python3.11", 20, &l), 0);
        ASSERT_EQ_INT(l, LANGUAGE_PYTHON);
}

int main(void) {
        RUN(test_names);
        RUN(test_sets);
        RUN(test_shebang);
        return 0;
}
