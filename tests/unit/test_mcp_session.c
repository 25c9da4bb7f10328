/*
 * test_mcp_session.c — the MCP session table (md_mcp_session.h): ids of 64
 * hex digits, each new; a session found only with its own tenant; ended by
 * close; a full table refuses a new session until one has been idle for
 * MD_MCP_SESSION_IDLE seconds, then reclaims the one idle longest. Time is
 * the `now` argument: no clock is read.
 */
#include <string.h>

#include "check.h"
#include "http/md_mcp_session.h"

static int is_hex64(const char *id)
{
    if (strlen(id) != MD_MCP_SID_LEN)
        return 0;
    for (const char *p = id; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
            return 0;
    return 1;
}

static void test_open_touch_close(void)
{
    struct md_mcp_sessions *s = md_mcp_sessions_new(4);
    CHECK(s != NULL);
    char a[MD_MCP_SID_LEN + 1], b[MD_MCP_SID_LEN + 1];
    CHECK_EQ_INT(md_mcp_session_open(s, "alice", 100, a), MD_OK);
    CHECK_EQ_INT(md_mcp_session_open(s, "alice", 100, b), MD_OK);
    CHECK(is_hex64(a));
    CHECK(is_hex64(b));
    CHECK(strcmp(a, b) != 0);
    CHECK_EQ_INT(md_mcp_session_count(s), 2);
    CHECK_EQ_INT(md_mcp_session_touch(s, a, strlen(a), "alice", 101), MD_OK);
    /* Another tenant, a prefix, a changed digit: not found. */
    CHECK_EQ_INT(md_mcp_session_touch(s, a, strlen(a), "bob", 101), MD_ENOENT);
    CHECK_EQ_INT(md_mcp_session_touch(s, a, strlen(a) - 1, "alice", 101), MD_ENOENT);
    char c[MD_MCP_SID_LEN + 1];
    memcpy(c, a, sizeof c);
    c[0] = c[0] == '0' ? '1' : '0';
    CHECK_BUF(c + 1, MD_MCP_SID_LEN - 1, a + 1, MD_MCP_SID_LEN - 1); /* one digit apart */
    CHECK_EQ_INT(md_mcp_session_touch(s, c, strlen(c), "alice", 101), MD_ENOENT);
    /* Another tenant cannot end it; its own can, once. */
    CHECK_EQ_INT(md_mcp_session_close(s, a, strlen(a), "bob"), MD_ENOENT);
    CHECK_EQ_INT(md_mcp_session_close(s, a, strlen(a), "alice"), MD_OK);
    CHECK_EQ_INT(md_mcp_session_close(s, a, strlen(a), "alice"), MD_ENOENT);
    CHECK_EQ_INT(md_mcp_session_touch(s, a, strlen(a), "alice", 102), MD_ENOENT);
    CHECK_EQ_INT(md_mcp_session_touch(s, b, strlen(b), "alice", 102), MD_OK);
    CHECK_EQ_INT(md_mcp_session_count(s), 1);
    md_mcp_sessions_free(s);
}

static void test_full(void)
{
    struct md_mcp_sessions *s = md_mcp_sessions_new(2);
    char a[MD_MCP_SID_LEN + 1], b[MD_MCP_SID_LEN + 1], c[MD_MCP_SID_LEN + 1];
    CHECK_EQ_INT(md_mcp_session_open(s, "t1", 1000, a), MD_OK);
    CHECK_EQ_INT(md_mcp_session_open(s, "t2", 1010, b), MD_OK);
    /* Full, nothing idle for an hour: refused. */
    CHECK_EQ_INT(md_mcp_session_open(s, "t3", 1000 + MD_MCP_SESSION_IDLE - 1, c), MD_EBUSY);
    CHECK_EQ_INT(md_mcp_session_count(s), 2);
    /* a was used since: b is now the one idle longest. */
    CHECK_EQ_INT(md_mcp_session_touch(s, a, strlen(a), "t1", 1020), MD_OK);
    CHECK_EQ_INT(md_mcp_session_open(s, "t3", 1010 + MD_MCP_SESSION_IDLE - 1, c), MD_EBUSY);
    CHECK_EQ_INT(md_mcp_session_open(s, "t3", 1010 + MD_MCP_SESSION_IDLE, c), MD_OK);
    CHECK_EQ_INT(md_mcp_session_touch(s, b, strlen(b), "t2", 5000), MD_ENOENT);
    CHECK_EQ_INT(md_mcp_session_touch(s, a, strlen(a), "t1", 5000), MD_OK);
    CHECK_EQ_INT(md_mcp_session_touch(s, c, strlen(c), "t3", 5000), MD_OK);
    CHECK_EQ_INT(md_mcp_session_count(s), 2);
    /* An ended session frees its slot at once. */
    CHECK_EQ_INT(md_mcp_session_close(s, a, strlen(a), "t1"), MD_OK);
    CHECK_EQ_INT(md_mcp_session_open(s, "t4", 5001, b), MD_OK);
    CHECK_EQ_INT(md_mcp_session_count(s), 2);
    md_mcp_sessions_free(s);
    md_mcp_sessions_free(NULL);
    CHECK(md_mcp_sessions_new(0) == NULL);
}

int main(void)
{
    test_open_touch_close();
    test_full();
    return check_report();
}
