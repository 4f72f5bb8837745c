/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Intrusive doubly linked lists, in the manner of systemd's list.h: the links
 * live in the element (LIST_FIELDS), the head is a plain pointer. One element
 * may sit in several lists under different names. O(1) insert and remove. */

#include <assert.h>
#include <stddef.h>

/* In the element: "name_next" and "name_prev". */
#define LIST_FIELDS(t, name) t *name##_next, *name##_prev

/* In the owner: the list's first element, named after the list. */
#define LIST_HEAD(t, name) t *name

#define LIST_PREPEND(name, head, item)                                  \
        ({                                                              \
                __typeof__(*(head)) **_head = &(head), *_item = (item); \
                assert(_item);                                          \
                if ((_item->name##_next = *_head))                      \
                        _item->name##_next->name##_prev = _item;        \
                _item->name##_prev = NULL;                              \
                *_head = _item;                                         \
                _item;                                                  \
        })

/* Appends in O(n): for short lists where order matters. */
#define LIST_APPEND(name, head, item)                                   \
        ({                                                              \
                __typeof__(*(head)) **_head = &(head), *_item = (item), *_tail; \
                assert(_item);                                          \
                _item->name##_next = NULL;                              \
                if (!*_head) {                                          \
                        _item->name##_prev = NULL;                      \
                        *_head = _item;                                 \
                } else {                                                \
                        for (_tail = *_head; _tail->name##_next; _tail = _tail->name##_next) \
                                ;                                       \
                        _tail->name##_next = _item;                     \
                        _item->name##_prev = _tail;                     \
                }                                                       \
                _item;                                                  \
        })

#define LIST_REMOVE(name, head, item)                                   \
        ({                                                              \
                __typeof__(*(head)) **_head = &(head), *_item = (item); \
                assert(_item);                                          \
                if (_item->name##_next)                                 \
                        _item->name##_next->name##_prev = _item->name##_prev; \
                if (_item->name##_prev)                                 \
                        _item->name##_prev->name##_next = _item->name##_next; \
                else {                                                  \
                        assert(*_head == _item);                        \
                        *_head = _item->name##_next;                    \
                }                                                       \
                _item->name##_next = _item->name##_prev = NULL;         \
                _item;                                                  \
        })

#define LIST_FOREACH(name, i, head) for (__typeof__(*(head)) *i = (head); i; i = i->name##_next)

/* The current element may be removed (and freed) inside the body. */
#define LIST_FOREACH_SAFE(name, i, n, head)                                     \
        for (__typeof__(*(head)) *i = (head), *n = i ? i->name##_next : NULL; i; \
             i = n, n = i ? i->name##_next : NULL)

#define LIST_IS_EMPTY(head) (!(head))
