/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The languages a run may be written in (issue 42): "python" (the default),
 * "bash", "javascript". Each has an interpreter under /usr and a bootstrap
 * installed next to mcp-exec-launch; the operator may turn the others off
 * (MCP_EXEC_LANGUAGES). Python speaks the fd-passing protocol of
 * launch-run.h, the others that of launch-lang.h. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum Language {
        LANGUAGE_PYTHON,                /* 0: a zeroed spec or request is Python's */
        LANGUAGE_BASH,
        LANGUAGE_JAVASCRIPT,
        _LANGUAGE_MAX,
} Language;

/* A bit per language, for sets of them. */
#define LANGUAGE_BIT(l) (UINT32_C(1) << (l))
#define LANGUAGES_ALL (LANGUAGE_BIT(_LANGUAGE_MAX) - 1)

/* "python", "bash", "javascript"; NULL for anything else. */
const char *language_to_string(Language l);
/* The language of a name as above; -EINVAL for anything else. */
int language_from_string(const char *s, Language *ret);

/* The interpreter's candidates, absolute, in order (NULL-terminated); the
 * first that is an executable file is the one (language_find_interpreter()).
 * Python's is resolved by the config (MCP_EXEC_PYTHON) instead. */
const char *const *language_interpreters(Language l);
/* The bootstrap's file name in the launcher's directory (libexecdir). */
const char *language_bootstrap(Language l);
/* Flags the launcher puts between the interpreter and the bootstrap
 * (launch-lang.h), NULL-terminated. */
const char *const *language_interpreter_flags(Language l);

/* The first executable candidate of l into *ret (static storage), or
 * -ENOENT. Not for Python. */
int language_find_interpreter(Language l, const char **ret);

/* The language a "#!" first line of code names: its interpreter's base name
 * (after "env" and its options, if it is env) is bash or sh (bash runs sh
 * scripts), node or nodejs (javascript), python, python3 or python3.N.
 * -ENOENT: no "#!" line; -EPROTONOSUPPORT: it names another interpreter
 * (*ret untouched). */
int language_from_shebang(const char *code, size_t len, Language *ret);

/* "python,bash" style lists (MCP_EXEC_LANGUAGES): each a known name, once;
 * python among them. -EINVAL otherwise. */
int language_set_parse(const char *s, uint32_t *ret);
/* The names of a set, comma-separated, into buf; "" for an empty one. */
const char *language_set_to_string(uint32_t set, char *buf, size_t size);
