/*
 * test_fuzz_regress.c — regression tests for defects found by the libFuzzer
 * targets in tests/fuzz/ (each crashing input is also in the committed
 * corpus there). One function per defect, named after what was wrong.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/md_utf8.h"
#include "check.h"
#include "cmd/md_cmd.h"

static const struct md_limits LIM = {4u << 20, 1u << 20, 256u << 10, {4096, 255}, 0,   0,
                                     NULL,     NULL,     0,          0,           NULL};

/* Parse a body; returns the class, the message in *out (caller frees). */
static enum md_err parse(const char *body, size_t len, struct md_buf *out)
{
    struct md_cmd cmd;
    md_buf_init(out, 1 << 20);
    enum md_err e = md_cmd_parse(&cmd, body, len, &LIM, out);
    md_cmd_free(&cmd);
    return e;
}

/* fuzz_request: jansson's error text for an invalid escape quotes only the
 * first byte of the multibyte character after the backslash, and
 * md_cmd_parse copied it verbatim, so the error text (sent as it is for
 * Accept: text/plain) was not valid UTF-8. Such bytes now become U+FFFD. */
static void test_invalid_json_error_is_utf8(void)
{
    static const char body[] = "{\"command\": \"view\", \"path\": \"/memories/a\\\xc2\x85\"}";
    struct md_buf out;
    CHECK_EQ_INT(parse(body, sizeof body - 1, &out), MD_EINVAL);
    CHECK(md_utf8_valid(out.data, out.len));
    CHECK_MEM(out.data, out.len,
              "Error: Invalid JSON in request body: invalid escape near '\"/memories/a\\"
              "\xef\xbf\xbd' (line 1, column 42)");
    md_buf_free(&out);

    /* Valid multibyte text in an error is kept as it is. */
    static const char token[] = "{\"command\": \xc3\xa9}";
    CHECK_EQ_INT(parse(token, sizeof token - 1, &out), MD_EINVAL);
    CHECK_MEM(out.data, out.len,
              "Error: Invalid JSON in request body: invalid token near '\xc3\xa9' (line 1, "
              "column 13)");
    md_buf_free(&out);
}

int main(void)
{
    test_invalid_json_error_is_utf8();
    return check_report();
}
