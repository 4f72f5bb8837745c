/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/exec-client/result-reader.[ch]: the result channel read as
 * it arrives, with real images, and every hostile thing a launcher could
 * send: wrong magic, lengths over the limits, a channel cut mid-frame or
 * without END, floods, paths outside /tmp/outputs, fake and huge images. */

#include <errno.h>
#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json-util.h"
#include "macro.h"
#include "result-reader.h"
#include "test-frames.h"
#include "test-helpers.h"
#include "test-images.h"

static const ResultLimits limits = {
        .max_images = 3,
        .max_image_bytes = 1024,
        .max_files = 3,
        .max_result_bytes = 4096,
};

/* Feeds all of b, in chunks of step bytes (0: at once); returns the last
 * feed's result. */
static int feed(ResultReader *r, const FrameBuf *b, size_t step) {
        size_t off = 0;
        int k = 0;

        if (step == 0)
                step = b->size ? b->size : 1;
        while (off < b->size) {
                size_t n = MIN(step, b->size - off);
                k = result_reader_feed(r, b->data + off, n);
                off += n;
                if (k != 0)
                        break;
        }
        return k;
}

static const ResultItem *item(const ResultReader *r, size_t i) {
        ASSERT_TRUE(i < r->n_items);
        return r->items + i;
}

static void good_channel(FrameBuf *b) {
        static const char csv[] = "a,b\n1,2\n";
        static const uint8_t blob[] = { 0x00, 0x01, 0xfe, 0xff };

        frame_put(b, RESULT_FRAME_INFO, "{\"preloaded\":[\"numpy\"],\"failed\":[]}", NULL, 0);
        frame_put(b, RESULT_FRAME_STATUS, "{\"exit_code\":3,\"duration_us\":1234}", NULL, 0);
        frame_put(b, RESULT_FRAME_IMAGE, "{\"source\":\"figure\",\"index\":1}", png_3x2, sizeof png_3x2);
        frame_put(b, RESULT_FRAME_IMAGE, "{\"source\":\"file\",\"path\":\"/tmp/outputs/photo.JPG\"}", jpeg_3x2,
                  sizeof jpeg_3x2);
        frame_put(b, RESULT_FRAME_FILE, "{\"path\":\"/tmp/outputs/sub/data.csv\"}", csv, sizeof csv - 1);
        frame_put(b, RESULT_FRAME_FILE, "{\"path\":\"/tmp/outputs/blob\"}", blob, sizeof blob);
        frame_put(b, RESULT_FRAME_FILE, "{\"path\":\"/tmp/outputs/empty.txt\"}", NULL, 0);
        frame_put(b, RESULT_FRAME_SKIPPED, "{\"path\":\"/tmp/outputs/fifo\",\"reason\":\"not a regular file\"}", NULL, 0);
        frame_put(b, RESULT_FRAME_END, NULL, NULL, 0);
}

TEST(test_good) {
        FrameBuf b = {};

        good_channel(&b);
        /* At once, byte by byte and in odd chunks: the same result. */
        for (size_t step = 0; step < 8; step += step < 2 ? 1 : 5) {
                ResultReader r;

                result_reader_init(&r, &limits);
                ASSERT_EQ_INT(feed(&r, &b, step), 1);
                ASSERT_TRUE(r.ended && !r.lost && !r.error);
                ASSERT_TRUE(r.have_status && r.have_info);
                ASSERT_EQ_INT(r.exit_code, 3);
                ASSERT_EQ_INT(r.signal, 0);
                ASSERT_EQ_INT(r.n_items, 6);

                ASSERT_TRUE(item(&r, 0)->figure && item(&r, 0)->image && !item(&r, 0)->path);
                ASSERT_EQ_U64(item(&r, 0)->index, 1);
                ASSERT_STREQ(item(&r, 0)->mime_type, "image/png");
                ASSERT_EQ_INT(item(&r, 0)->width, 3);
                ASSERT_EQ_INT(item(&r, 0)->height, 2);
                ASSERT_EQ_U64(item(&r, 0)->size, sizeof png_3x2);
                ASSERT_MEMEQ(item(&r, 0)->data, png_3x2, sizeof png_3x2);
                ASSERT_TRUE(!item(&r, 0)->reason);

                ASSERT_TRUE(item(&r, 1)->image && !item(&r, 1)->figure);
                ASSERT_STREQ(item(&r, 1)->path, "/tmp/outputs/photo.JPG");
                ASSERT_STREQ(item(&r, 1)->mime_type, "image/jpeg");
                ASSERT_EQ_U64(item(&r, 1)->bytes, sizeof jpeg_3x2);

                ASSERT_TRUE(!item(&r, 2)->image && item(&r, 2)->text);
                ASSERT_STREQ(item(&r, 2)->mime_type, "text/csv");
                ASSERT_EQ_U64(item(&r, 2)->size, 8);
                ASSERT_MEMEQ(item(&r, 2)->data, "a,b\n1,2\n", 8);

                ASSERT_TRUE(!item(&r, 3)->text);
                ASSERT_STREQ(item(&r, 3)->mime_type, "application/octet-stream");

                ASSERT_TRUE(item(&r, 4)->text && item(&r, 4)->data);
                ASSERT_EQ_U64(item(&r, 4)->size, 0);

                ASSERT_STREQ(item(&r, 5)->path, "/tmp/outputs/fifo");
                ASSERT_STREQ(item(&r, 5)->reason, "not a regular file");
                ASSERT_TRUE(!item(&r, 5)->data);
                ASSERT_EQ_U64(item(&r, 5)->bytes, UINT64_MAX);

                /* Past END everything is a violation; what came stays. */
                ASSERT_EQ_INT(result_reader_feed(&r, "x", 1), -EBADMSG);
                ASSERT_CONTAINS(r.error, "after END");
                ASSERT_EQ_INT(r.n_items, 6);
                result_reader_done(&r);
        }
        frame_buf_done(&b);
}

TEST(test_steal) {
        FrameBuf b = {};
        ResultReader r;
        ResultItem *items;
        size_t n;

        good_channel(&b);
        result_reader_init(&r, &limits);
        ASSERT_EQ_INT(feed(&r, &b, 0), 1);
        items = result_reader_steal_items(&r, &n);
        ASSERT_EQ_INT(n, 6);
        ASSERT_EQ_INT(r.n_items, 0);
        result_reader_done(&r);
        for (size_t i = 0; i < n; i++)
                result_item_done(items + i);
        free(items);
        frame_buf_done(&b);
}

/* What a channel without END leaves: the program's status and the items
 * complete before the cut, and lost set. */
TEST(test_cut) {
        FrameBuf b = {};

        good_channel(&b);
        /* Cut at every byte. */
        for (size_t cut = 0; cut < b.size; cut++) {
                FrameBuf part = { .data = b.data, .size = cut };
                ResultReader r;

                result_reader_init(&r, &limits);
                ASSERT_EQ_INT(feed(&r, &part, 0), 0);
                result_reader_eof(&r);
                ASSERT_TRUE(r.lost && !r.ended && !r.error);
                ASSERT_TRUE(r.n_items <= 6);
                for (size_t i = 0; i < r.n_items; i++)
                        ASSERT_TRUE(r.items[i].reason || r.items[i].data);
                /* Never more than was complete: the last item's frame ended before the cut. */
                result_reader_done(&r);
        }
        /* An empty channel: the launcher died before it wrote anything. */
        {
                ResultReader r;
                result_reader_init(&r, &limits);
                result_reader_eof(&r);
                ASSERT_TRUE(r.lost && !r.have_status);
                ASSERT_EQ_INT(r.exit_code, -1);
                result_reader_done(&r);
        }
        frame_buf_done(&b);
}

static void expect_violation(const FrameBuf *b, const ResultLimits *l, const char *message) {
        ResultReader r;

        for (size_t step = 0; step < 3; step++) {
                result_reader_init(&r, l ?: &limits);
                ASSERT_EQ_INT(feed(&r, b, step), -EBADMSG);
                ASSERT_CONTAINS(r.error, message);
                ASSERT_TRUE(!r.ended);
                ASSERT_EQ_INT(r.state, RESULT_READER_DONE);
                /* Once broken, always broken. */
                ASSERT_EQ_INT(result_reader_feed(&r, RESULT_FRAME_MAGIC, 4), -EBADMSG);
                result_reader_eof(&r);
                ASSERT_TRUE(!r.lost);
                result_reader_done(&r);
        }
}

TEST(test_hostile_frames) {
        FrameBuf b = {};

        /* Wrong magic, unknown type, padding. */
        frame_buf_put(&b, "MCPX\x01\0\0\0\x02\0\0\0\0\0\0\0\0\0\0\0{}", 22);
        expect_violation(&b, NULL, "not a result frame");
        frame_buf_done(&b);
        frame_put_raw(&b, 9, 2, 0, "{}", 2, NULL, 0);
        expect_violation(&b, NULL, "not a result frame");
        frame_buf_done(&b);
        frame_put_raw(&b, RESULT_FRAME_STATUS, RESULT_FRAME_META_MAX + 1, 0, NULL, 0, NULL, 0);
        expect_violation(&b, NULL, "not a result frame");
        frame_buf_done(&b);

        /* A terabyte claimed: refused at the header, nothing allocated or read. */
        frame_put_raw(&b, RESULT_FRAME_FILE, 0, UINT64_C(1) << 40, NULL, 0, NULL, 0);
        b.data[8] = 2;  /* meta length 2, so the header passes the END check */
        expect_violation(&b, NULL, "more data than any limit allows");
        frame_buf_done(&b);
        frame_put_raw(&b, RESULT_FRAME_FILE, 29, UINT64_MAX, "{\"path\":\"/tmp/outputs/x\"}", 25, NULL, 0);
        expect_violation(&b, NULL, "more data than any limit allows");
        frame_buf_done(&b);
        frame_put_raw(&b, RESULT_FRAME_FILE, 25, RESULT_DRAIN_MAX + 1, "{\"path\":\"/tmp/outputs/x\"}", 25, NULL, 0);
        expect_violation(&b, NULL, "more data than any limit allows");
        frame_buf_done(&b);

        /* Meta that is not one JSON object. */
        static const char *const bad_meta[] = {
                "[1]", "{\"path\":", "{} {}", "{\"a\":1}x", "null", "{\"a\":[[[[[1]]]]]}", "\"str\"",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad_meta); i++) {
                frame_put(&b, RESULT_FRAME_SKIPPED, bad_meta[i], NULL, 0);
                expect_violation(&b, NULL, "not a JSON object");
                frame_buf_done(&b);
        }

        /* STATUS: one, with exactly one valid field. */
        static const char *const bad_status[] = {
                "{}", "{\"exit_code\":256}", "{\"exit_code\":-1}", "{\"exit_code\":\"0\"}", "{\"signal\":0}",
                "{\"signal\":65}", "{\"exit_code\":0,\"signal\":9}", "{\"exit_code\":1.0}",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad_status); i++) {
                frame_put(&b, RESULT_FRAME_STATUS, bad_status[i], NULL, 0);
                expect_violation(&b, NULL, "STATUS");
                frame_buf_done(&b);
        }
        frame_put(&b, RESULT_FRAME_STATUS, "{\"exit_code\":0}", NULL, 0);
        frame_put(&b, RESULT_FRAME_STATUS, "{\"exit_code\":0}", NULL, 0);
        expect_violation(&b, NULL, "second STATUS");
        frame_buf_done(&b);
        frame_put(&b, RESULT_FRAME_INFO, "{}", NULL, 0);
        frame_put(&b, RESULT_FRAME_INFO, "{}", NULL, 0);
        expect_violation(&b, NULL, "second INFO");
        frame_buf_done(&b);

        /* Paths outside /tmp/outputs or not plain. */
        static const char *const bad_paths[] = {
                "/etc/shadow", "/tmp/outputs/", "/tmp/outputs", "/tmp/outputs/../x", "/tmp/outputs/a/../../x",
                "/tmp/outputs//x", "/tmp/outputs/./x", "/tmp/outputs/x/", "tmp/outputs/x", "/tmp/outputs/a\\u0000b",
                "/tmp/outputsx/y", "/tmp/outputs/..",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad_paths); i++) {
                char meta[128];
                (void) snprintf(meta, sizeof meta, "{\"path\":\"%s\"}", bad_paths[i]);
                frame_put(&b, RESULT_FRAME_FILE, meta, "x", 1);
                expect_violation(&b, NULL, "not a file under /tmp/outputs/");
                frame_buf_done(&b);
                /* A summary may name the directory itself. */
                if (streq(bad_paths[i], "/tmp/outputs"))
                        continue;
                (void) snprintf(meta, sizeof meta, "{\"path\":\"%s\",\"reason\":\"r\"}", bad_paths[i]);
                frame_put(&b, RESULT_FRAME_SKIPPED, meta, NULL, 0);
                expect_violation(&b, NULL, "not a file under /tmp/outputs/");
                frame_buf_done(&b);
        }
        {
                char meta[RESULT_PATH_MAX + 64], *p = meta;
                p += sprintf(p, "{\"path\":\"/tmp/outputs/");
                memset(p, 'a', RESULT_PATH_MAX);
                strcpy(p + RESULT_PATH_MAX, "\"}");
                frame_put(&b, RESULT_FRAME_FILE, meta, "x", 1);
                expect_violation(&b, NULL, "not a result frame");       /* over the meta limit first */
                frame_buf_done(&b);
        }

        /* Frames that do not say what they are. */
        frame_put(&b, RESULT_FRAME_FILE, "{}", "x", 1);
        expect_violation(&b, NULL, "without a path");
        frame_buf_done(&b);
        frame_put(&b, RESULT_FRAME_IMAGE, "{\"source\":\"file\"}", png_3x2, sizeof png_3x2);
        expect_violation(&b, NULL, "neither a figure nor a file");
        frame_buf_done(&b);
        frame_put(&b, RESULT_FRAME_IMAGE, "{\"source\":\"figure\"}", png_3x2, sizeof png_3x2);
        expect_violation(&b, NULL, "figure without a valid index");
        frame_buf_done(&b);
        frame_put(&b, RESULT_FRAME_IMAGE, "{\"source\":\"camera\",\"index\":1}", png_3x2, sizeof png_3x2);
        expect_violation(&b, NULL, "unknown source");
        frame_buf_done(&b);
        frame_put(&b, RESULT_FRAME_FILE, "{\"source\":\"figure\",\"index\":1}", png_3x2, sizeof png_3x2);
        expect_violation(&b, NULL, "FILE frame with a source other than file");
        frame_buf_done(&b);
        frame_put(&b, RESULT_FRAME_SKIPPED, "{\"path\":\"/tmp/outputs/x\"}", NULL, 0);
        expect_violation(&b, NULL, "without a reason");
        frame_buf_done(&b);
        frame_put(&b, RESULT_FRAME_SKIPPED, "{\"reason\":\"x\",\"count\":-1}", NULL, 0);
        expect_violation(&b, NULL, "bad count");
        frame_buf_done(&b);
        /* Data where the type has none. */
        frame_put(&b, RESULT_FRAME_STATUS, "{\"exit_code\":0}", "x", 1);
        expect_violation(&b, NULL, "not a result frame");
        frame_buf_done(&b);
}

/* A flood of frames ends at RESULT_FRAMES_MAX, with the channel closed on
 * it; outputs past this side's limits are read, dropped and counted. */
TEST(test_floods) {
        FrameBuf b = {};
        ResultReader r;

        for (unsigned i = 0; i <= RESULT_FRAMES_MAX; i++)
                frame_put(&b, RESULT_FRAME_SKIPPED, "{\"path\":\"/tmp/outputs/f\",\"reason\":\"too many files\"}", NULL,
                          0);
        expect_violation(&b, NULL, "more than 4096 frames");
        frame_buf_done(&b);

        /* 100 figures and 100 files for limits of 3 and 3: 6 returned, 32 named left out, the rest counted. */
        for (unsigned i = 0; i < 100; i++) {
                frame_put(&b, RESULT_FRAME_IMAGE, "{\"source\":\"figure\",\"index\":1}", png_3x2, sizeof png_3x2);
                frame_put(&b, RESULT_FRAME_FILE, "{\"path\":\"/tmp/outputs/e\",\"source\":\"file\"}", "x", 1);
        }
        frame_put(&b, RESULT_FRAME_END, NULL, NULL, 0);
        result_reader_init(&r, &limits);
        ASSERT_EQ_INT(feed(&r, &b, 0), 1);
        ASSERT_TRUE(!r.error);
        ASSERT_EQ_INT(r.n_items, 6 + RESULT_SKIPPED_LISTED_MAX);
        ASSERT_EQ_U64(r.unlisted, 200 - 6 - RESULT_SKIPPED_LISTED_MAX);
        ASSERT_STREQ(r.unlisted_reason, "over MCP_EXEC_MAX_IMAGES (3)");
        ASSERT_EQ_U64(r.n_images, 3);
        ASSERT_EQ_U64(r.n_files, 3);
        ASSERT_TRUE(r.data_kept == 3 * sizeof png_3x2 + 3);
        for (size_t i = 0; i < r.n_items; i++)
                ASSERT_EQ_INT(!r.items[i].reason, i < 6);
        result_reader_done(&r);
        frame_buf_done(&b);

        /* Within each frame, but together past MCP_EXEC_MAX_RESULT_BYTES: left out, read on. */
        {
                static uint8_t block[1500];
                for (int i = 0; i < 3; i++)
                        frame_put(&b, RESULT_FRAME_FILE, "{\"path\":\"/tmp/outputs/x\"}", block, sizeof block);
                frame_put(&b, RESULT_FRAME_FILE, "{\"path\":\"/tmp/outputs/y\"}", "1", 1);
                frame_put(&b, RESULT_FRAME_END, NULL, NULL, 0);
                result_reader_init(&r, &limits);
                ASSERT_EQ_INT(feed(&r, &b, 100), 1);
                ASSERT_EQ_INT(r.n_items, 4);
                ASSERT_TRUE(!item(&r, 0)->reason && !item(&r, 1)->reason && !item(&r, 3)->reason);
                ASSERT_STREQ(item(&r, 2)->reason, "over MCP_EXEC_MAX_RESULT_BYTES (4 KiB) with what came before");
                ASSERT_EQ_U64(item(&r, 2)->bytes, sizeof block);
                ASSERT_EQ_U64(r.data_kept, 2 * sizeof block + 1);
                result_reader_done(&r);
                frame_buf_done(&b);
        }

        /* As the launcher summarizes: the directory itself, and an unknown number. */
        frame_put(&b, RESULT_FRAME_SKIPPED,
                  "{\"source\":\"file\",\"path\":\"/tmp/outputs\",\"reason\":\"more files skipped than listed\","
                  "\"count\":40}", NULL, 0);
        frame_put(&b, RESULT_FRAME_SKIPPED,
                  "{\"source\":\"file\",\"path\":\"/tmp/outputs\",\"reason\":\"too many entries\",\"count\":0}",
                  NULL, 0);
        frame_put(&b, RESULT_FRAME_SKIPPED, "{\"source\":\"file\",\"reason\":\"its name is not valid UTF-8\"}", NULL, 0);
        /* Figures past MCP_EXEC_MAX_IMAGES: one summary, no index (the bootstrap's "figskip"). */
        frame_put(&b, RESULT_FRAME_SKIPPED,
                  "{\"source\":\"figure\",\"reason\":\"more figures than MCP_EXEC_MAX_IMAGES\",\"count\":992}",
                  NULL, 0);
        frame_put(&b, RESULT_FRAME_END, NULL, NULL, 0);
        result_reader_init(&r, &limits);
        ASSERT_EQ_INT(feed(&r, &b, 0), 1);
        ASSERT_EQ_INT(r.n_items, 0);
        ASSERT_EQ_U64(r.unlisted, 41 + 992);
        ASSERT_TRUE(r.unlisted_more);
        ASSERT_STREQ(r.unlisted_reason, "more files skipped than listed");
        result_reader_done(&r);
        frame_buf_done(&b);
}

TEST(test_limits_and_fakes) {
        FrameBuf b = {};
        ResultReader r;
        uint8_t big[1100] = {}, not_png[100];
        static const uint8_t huge_dims[8] = { 0, 0x01, 0x86, 0xa0, 0, 0x01, 0x86, 0xa0 };
        uint8_t bomb[sizeof png_3x2];

        memcpy(bomb, png_3x2, sizeof bomb);
        memcpy(bomb + 16, huge_dims, sizeof huge_dims);
        memset(not_png, 'x', sizeof not_png);

        frame_put(&b, RESULT_FRAME_IMAGE, "{\"source\":\"figure\",\"index\":1}", jpeg_3x2, sizeof jpeg_3x2);
        frame_put(&b, RESULT_FRAME_FILE, "{\"path\":\"/tmp/outputs/not.png\"}", not_png, sizeof not_png);
        frame_put(&b, RESULT_FRAME_FILE, "{\"path\":\"/tmp/outputs/bomb.png\"}", bomb, sizeof bomb);
        frame_put(&b, RESULT_FRAME_IMAGE, "{\"source\":\"figure\",\"index\":2}", big, sizeof big);
        /* The refused ones freed their places: three good images fit. */
        frame_put(&b, RESULT_FRAME_IMAGE, "{\"source\":\"figure\",\"index\":3}", png_3x2, sizeof png_3x2);
        frame_put(&b, RESULT_FRAME_IMAGE, "{\"source\":\"file\",\"path\":\"/tmp/outputs/a.gif\"}", gif_3x2,
                  sizeof gif_3x2);
        frame_put(&b, RESULT_FRAME_IMAGE, "{\"source\":\"file\",\"path\":\"/tmp/outputs/a.webp\"}", webp_lossy_3x2,
                  sizeof webp_lossy_3x2);
        frame_put(&b, RESULT_FRAME_IMAGE, "{\"source\":\"figure\",\"index\":4}", png_3x2, sizeof png_3x2);
        /* Files: three fit; SVG is a file, as text. */
        frame_put(&b, RESULT_FRAME_FILE, "{\"path\":\"/tmp/outputs/a.svg\"}", "<svg/>", 6);
        frame_put(&b, RESULT_FRAME_FILE, "{\"path\":\"/tmp/outputs/nul.txt\"}", "a\0b", 3);
        frame_put(&b, RESULT_FRAME_FILE, "{\"path\":\"/tmp/outputs/bad.txt\"}", "\xc3(", 2);
        frame_put(&b, RESULT_FRAME_FILE, "{\"path\":\"/tmp/outputs/d.csv\"}", "1", 1);
        frame_put(&b, RESULT_FRAME_END, NULL, NULL, 0);

        /* Room for all twelve frames, but three images only. */
        ResultLimits l = limits;
        l.max_files = 9;
        result_reader_init(&r, &l);
        ASSERT_EQ_INT(feed(&r, &b, 7), 1);
        ASSERT_TRUE(!r.error && !r.lost && !r.have_status);
        ASSERT_EQ_INT(r.n_items, 12);
        ASSERT_STREQ(item(&r, 0)->reason, "not a valid image/png image");
        ASSERT_STREQ(item(&r, 1)->reason, "not a valid image/png image");
        ASSERT_TRUE(item(&r, 1)->image);        /* by its name, though it came as FILE */
        ASSERT_STREQ(item(&r, 2)->reason, "100000x100000 pixels, more than 8000x8000 or 50 Mpixel");
        ASSERT_EQ_INT(item(&r, 2)->width, 100000);
        ASSERT_TRUE(!item(&r, 2)->data);
        ASSERT_STREQ(item(&r, 3)->reason, "over MCP_EXEC_MAX_IMAGE_BYTES (1 KiB)");
        ASSERT_EQ_U64(item(&r, 3)->bytes, sizeof big);
        for (size_t i = 4; i <= 6; i++)
                ASSERT_TRUE(!item(&r, i)->reason && item(&r, i)->data);
        ASSERT_STREQ(item(&r, 5)->mime_type, "image/gif");
        ASSERT_STREQ(item(&r, 6)->mime_type, "image/webp");
        ASSERT_STREQ(item(&r, 7)->reason, "over MCP_EXEC_MAX_IMAGES (3)");
        ASSERT_STREQ(item(&r, 8)->mime_type, "image/svg+xml");
        ASSERT_TRUE(!item(&r, 8)->image && item(&r, 8)->text);
        ASSERT_TRUE(!item(&r, 9)->text && !item(&r, 9)->reason);       /* NUL: a blob */
        ASSERT_STREQ(item(&r, 9)->mime_type, "text/plain");            /* by the name */
        ASSERT_TRUE(!item(&r, 10)->text);
        ASSERT_TRUE(!item(&r, 11)->reason);
        result_reader_done(&r);
        frame_buf_done(&b);

        /* More files than MCP_EXEC_MAX_FILES_OUT, within the frame limit. */
        l = (ResultLimits) { .max_images = 2, .max_image_bytes = 1024, .max_files = 1, .max_result_bytes = 4096 };
        frame_put(&b, RESULT_FRAME_FILE, "{\"path\":\"/tmp/outputs/a\"}", "1", 1);
        frame_put(&b, RESULT_FRAME_FILE, "{\"path\":\"/tmp/outputs/b\"}", "2", 1);
        frame_put(&b, RESULT_FRAME_END, NULL, NULL, 0);
        result_reader_init(&r, &l);
        ASSERT_EQ_INT(feed(&r, &b, 0), 1);
        ASSERT_EQ_INT(r.n_items, 2);
        ASSERT_TRUE(!item(&r, 0)->reason);
        ASSERT_STREQ(item(&r, 1)->reason, "over MCP_EXEC_MAX_FILES_OUT (1)");
        ASSERT_TRUE(!item(&r, 1)->data);
        result_reader_done(&r);
        frame_buf_done(&b);
}

TEST(test_status_and_skipped) {
        FrameBuf b = {};
        ResultReader r;
        char meta[256];

        frame_put(&b, RESULT_FRAME_STATUS, "{\"signal\":9}", NULL, 0);
        for (unsigned i = 0; i < 40; i++) {
                (void) snprintf(meta, sizeof meta, "{\"path\":\"/tmp/outputs/f%u\",\"reason\":\"a FIFO\",\"bytes\":%u}", i,
                                i);
                frame_put(&b, RESULT_FRAME_SKIPPED, meta, NULL, 0);
        }
        frame_put(&b, RESULT_FRAME_SKIPPED, "{\"reason\":\"too many files\",\"count\":9984}", NULL, 0);
        frame_put(&b, RESULT_FRAME_SKIPPED, "{\"source\":\"figure\",\"index\":7,\"reason\":\"too many figures\"}", NULL,
                  0);
        frame_put(&b, RESULT_FRAME_END, NULL, NULL, 0);

        result_reader_init(&r, &limits);
        ASSERT_EQ_INT(feed(&r, &b, 0), 1);
        ASSERT_EQ_INT(r.exit_code, -1);
        ASSERT_EQ_INT(r.signal, 9);
        ASSERT_EQ_INT(r.n_items, RESULT_SKIPPED_LISTED_MAX);
        ASSERT_EQ_U64(item(&r, 0)->bytes, 0);
        ASSERT_EQ_U64(item(&r, 31)->bytes, 31);
        ASSERT_STREQ(item(&r, 31)->reason, "a FIFO");
        /* 8 named ones past the listing cap, the summary's 9984, the figure. */
        ASSERT_EQ_U64(r.unlisted, 8 + 9984 + 1);
        ASSERT_STREQ(r.unlisted_reason, "a FIFO");
        result_reader_done(&r);
        frame_buf_done(&b);

        /* A reason is cut and made valid UTF-8. */
        {
                char long_reason[600];
                memset(long_reason, 'r', sizeof long_reason - 1);
                long_reason[sizeof long_reason - 1] = 0;
                long_reason[0] = '\xff';
                _cleanup_free_ char *m = NULL;
                ASSERT_TRUE(asprintf(&m, "{\"path\":\"/tmp/outputs/x\",\"reason\":\"%s\"}", long_reason) > 0);
                frame_put(&b, RESULT_FRAME_SKIPPED, m, NULL, 0);
                result_reader_init(&r, &limits);
                ASSERT_EQ_INT(feed(&r, &b, 0), 0);
                ASSERT_EQ_INT(r.n_items, 1);
                ASSERT_TRUE(strlen(item(&r, 0)->reason) <= RESULT_REASON_MAX + 2);
                ASSERT_TRUE(strneq(item(&r, 0)->reason, "\xef\xbf\xbd", 3));
                result_reader_done(&r);
                frame_buf_done(&b);
        }
}

/* Names are bytes: newlines, escapes and invalid UTF-8 come through exactly
 * (json-c writes bytes that are not UTF-8 as they are). */
TEST(test_odd_names) {
        static const char name[] = "/tmp/outputs/a\nb\x1b[31m\xff\xfe c.csv";
        json_object *o = json_object_new_object();
        FrameBuf b = {};
        ResultReader r;
        const char *meta;

        ASSERT_TRUE(o);
        json_object_object_add(o, "path", json_object_new_string_len(name, sizeof name - 1));
        meta = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
        frame_put(&b, RESULT_FRAME_FILE, meta, "1", 1);
        frame_put(&b, RESULT_FRAME_END, NULL, NULL, 0);
        json_object_put(o);

        result_reader_init(&r, &limits);
        ASSERT_EQ_INT(feed(&r, &b, 0), 1);
        ASSERT_EQ_INT(r.n_items, 1);
        ASSERT_EQ_U64(item(&r, 0)->path_len, sizeof name - 1);
        ASSERT_MEMEQ(item(&r, 0)->path, name, sizeof name);
        ASSERT_STREQ(item(&r, 0)->mime_type, "text/csv");
        result_reader_done(&r);
        frame_buf_done(&b);
}

/* With a memory budget: what is kept is charged as it comes; a file the
 * budget cannot take is left out with a reason, and the rest still comes;
 * done gives it all back. */
TEST(test_budget) {
        MemBudget budget = { .max = 2 * 3000 };
        MemCharge charge = {};
        FrameBuf b = {};
        ResultReader r;
        uint8_t data[1000];

        memset(data, 'x', sizeof data);
        ASSERT_EQ_INT(mem_charge_init(&charge, &budget, "uid:1"), 0);
        ASSERT_EQ_INT(mem_charge_set(&charge, 1500), 0);        /* the call's arguments */
        frame_put(&b, RESULT_FRAME_FILE, "{\"path\":\"/tmp/outputs/a\"}", data, sizeof data);
        frame_put(&b, RESULT_FRAME_FILE, "{\"path\":\"/tmp/outputs/b\"}", data, sizeof data);
        frame_put(&b, RESULT_FRAME_FILE, "{\"path\":\"/tmp/outputs/c\"}", data, 100);
        frame_put(&b, RESULT_FRAME_END, NULL, NULL, 0);

        result_reader_init(&r, &limits);
        r.charge = &charge;
        ASSERT_EQ_INT(feed(&r, &b, 7), 1);
        ASSERT_EQ_INT(r.n_items, 3);
        ASSERT_TRUE(item(&r, 0)->data && !item(&r, 0)->reason);
        /* 1500 + 1000 + 1000 is past the caller's share of 3000. */
        ASSERT_TRUE(!item(&r, 1)->data);
        ASSERT_CONTAINS(item(&r, 1)->reason, "memory budget");
        ASSERT_TRUE(item(&r, 2)->data && !item(&r, 2)->reason);
        ASSERT_EQ_U64(charge.bytes, 1500 + 1000 + 100);
        ASSERT_EQ_U64(budget.used, charge.bytes);
        result_reader_done(&r);
        ASSERT_EQ_U64(charge.bytes, 1500);
        mem_charge_done(&charge);
        ASSERT_EQ_U64(budget.used, 0);
        frame_buf_done(&b);
}

/* RESULT_FRAME_PACKAGES: the installer's report, only the keys and types
 * result-frame.h names kept, strings made valid UTF-8, pip's log beside the
 * outputs (never an item), and what is not a report refused. */
TEST(test_packages) {
        static const char meta[] =
                "{\"ok\":true,\"requested\":[\"tiny\",\"dep==1.0\",7],\"installed\":[{\"name\":\"tiny\","
                "\"version\":\"1.0\"},{\"name\":\"dep\"},{\"name\":\"dep\",\"version\":\"1.0\",\"x\":1}],"
                "\"already\":[],\"replaced\":[\"numpy\"],\"fresh_interpreter\":false,\"duration_us\":250000,"
                "\"stdout\":\"not ours\",\"error\":\"\xff\"}";
        static const char log[] = "Processing ./tiny-1.0-py3-none-any.whl\n\xc3(bad)\n";
        _cleanup_json_ json_object *p = NULL, *want = NULL;
        MemBudget budget = { .max = 2 * 3000 };
        MemCharge charge = {};
        FrameBuf b = {};
        ResultReader r;
        uint8_t big[RESULT_PACKAGES_LOG_MAX + 1];

        frame_put(&b, RESULT_FRAME_PACKAGES, meta, log, sizeof log - 1);
        frame_put(&b, RESULT_FRAME_STATUS, "{\"exit_code\":0}", NULL, 0);
        frame_put(&b, RESULT_FRAME_FILE, "{\"path\":\"/tmp/outputs/a.txt\"}", "hi", 2);
        frame_put(&b, RESULT_FRAME_END, NULL, NULL, 0);
        for (size_t step = 0; step < 8; step += 3) {
                result_reader_init(&r, &limits);
                ASSERT_EQ_INT(feed(&r, &b, step), 1);
                ASSERT_TRUE(r.have_packages && r.have_status);
                ASSERT_EQ_INT(r.n_items, 1);    /* the log is not an output */
                ASSERT_EQ_U64(r.data_kept, 2);  /* nor counted against MCP_EXEC_MAX_RESULT_BYTES */
                p = result_reader_take_packages(&r);
                ASSERT_TRUE(p);
                want = json_tokener_parse(
                        "{\"ok\":true,\"error\":\"\xef\xbf\xbd\",\"requested\":[\"tiny\",\"dep==1.0\"],\"already\":[],"
                        "\"replaced\":[\"numpy\"],\"installed\":[{\"name\":\"tiny\",\"version\":\"1.0\"},{\"name\":"
                        "\"dep\",\"version\":\"1.0\"}],\"fresh_interpreter\":false,\"duration_us\":250000,\"log\":"
                        "\"Processing ./tiny-1.0-py3-none-any.whl\\n\xef\xbf\xbd(bad)\\n\"}");
                ASSERT_TRUE(want);
                if (!json_object_equal(p, want))
                        ASSERT_FAIL_("step %zu: %s", step, json_object_to_json_string(p));
                json_object_put(TAKE_PTR(p));
                json_object_put(TAKE_PTR(want));
                result_reader_done(&r);
        }
        frame_buf_done(&b);

        /* A failed install: the code did not run, a STATUS and END follow. */
        frame_put(&b, RESULT_FRAME_PACKAGES, "{\"ok\":false,\"error\":\"no wheel for foo==9\",\"duration_us\":5}",
                  NULL, 0);
        frame_put(&b, RESULT_FRAME_STATUS, "{\"exit_code\":1}", NULL, 0);
        frame_put(&b, RESULT_FRAME_END, NULL, NULL, 0);
        result_reader_init(&r, &limits);
        ASSERT_EQ_INT(feed(&r, &b, 0), 1);
        p = result_reader_take_packages(&r);
        ASSERT_TRUE(p && !json_get_bool(p, "ok"));
        ASSERT_STREQ(json_get_string(p, "error"), "no wheel for foo==9");
        ASSERT_STREQ(json_get_string(p, "log"), "");
        json_object_put(TAKE_PTR(p));
        result_reader_done(&r);
        frame_buf_done(&b);

        /* No report: nothing to take. */
        frame_put(&b, RESULT_FRAME_END, NULL, NULL, 0);
        result_reader_init(&r, &limits);
        ASSERT_EQ_INT(feed(&r, &b, 0), 1);
        ASSERT_TRUE(!r.have_packages && !result_reader_take_packages(&r));
        result_reader_done(&r);
        frame_buf_done(&b);

        /* Two reports, one without "ok", a log past its limit. */
        frame_put(&b, RESULT_FRAME_PACKAGES, "{\"ok\":true}", NULL, 0);
        frame_put(&b, RESULT_FRAME_PACKAGES, "{\"ok\":true}", NULL, 0);
        expect_violation(&b, NULL, "a second PACKAGES frame");
        frame_buf_done(&b);
        frame_put(&b, RESULT_FRAME_PACKAGES, "{\"ok\":\"yes\"}", NULL, 0);
        expect_violation(&b, NULL, "PACKAGES frame without \"ok\"");
        frame_buf_done(&b);
        memset(big, 'x', sizeof big);
        frame_put(&b, RESULT_FRAME_PACKAGES, "{\"ok\":true}", big, sizeof big);
        expect_violation(&b, NULL, "more data than any limit allows");
        frame_buf_done(&b);

        /* The log is charged like an output; past the budget it is left out. */
        ASSERT_EQ_INT(mem_charge_init(&charge, &budget, "uid:1"), 0);
        ASSERT_EQ_INT(mem_charge_set(&charge, 2000), 0);
        frame_put(&b, RESULT_FRAME_PACKAGES, "{\"ok\":true}", log, sizeof log - 1);
        frame_put(&b, RESULT_FRAME_END, NULL, NULL, 0);
        result_reader_init(&r, &limits);
        r.charge = &charge;
        ASSERT_EQ_INT(feed(&r, &b, 5), 1);
        ASSERT_EQ_U64(charge.bytes, 2000 + sizeof log - 1);
        p = result_reader_take_packages(&r);
        ASSERT_STREQ(json_get_string(p, "log"), "Processing ./tiny-1.0-py3-none-any.whl\n\xef\xbf\xbd(bad)\n");
        json_object_put(TAKE_PTR(p));
        result_reader_done(&r);
        ASSERT_EQ_U64(charge.bytes, 2000);
        ASSERT_EQ_INT(mem_charge_set(&charge, 3000), 0);        /* the caller's whole share */
        result_reader_init(&r, &limits);
        r.charge = &charge;
        ASSERT_EQ_INT(feed(&r, &b, 5), 1);
        ASSERT_EQ_U64(charge.bytes, 3000);
        p = result_reader_take_packages(&r);
        ASSERT_TRUE(p && !json_get(p, "log"));
        ASSERT_CONTAINS(json_get_string(p, "log_left_out"), "memory budget");
        json_object_put(TAKE_PTR(p));
        result_reader_done(&r);
        mem_charge_done(&charge);
        frame_buf_done(&b);
}

int main(void) {
        RUN(test_budget);
        RUN(test_packages);
        RUN(test_good);
        RUN(test_steal);
        RUN(test_cut);
        RUN(test_hostile_frames);
        RUN(test_floods);
        RUN(test_limits_and_fakes);
        RUN(test_status_and_skipped);
        RUN(test_odd_names);
        return 0;
}
