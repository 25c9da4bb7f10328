/*
 * http_mcp_tools.c — the tools of the MCP endpoint (/mcp), one table
 * entry each (struct md_mcp_tool, http_internal.h): its name, what
 * tools/list shows of it, and its handler.
 *
 * `memory` is the memory tool: its arguments are a command object as
 * POST /memory takes it, read by the same parser (md_cmd_parse) and run by
 * the same path (md_http_cmd_run: the views here, the writes by the
 * writer), so that its text, limits, quota and errors are POST /memory's.
 *
 * A tool is added by one more entry: a read-only tool runs its work on a
 * read transaction for r->tenant, puts its text in r->out (and an error
 * in r->err) and returns md_http_mcp_tool_answer(r).
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "http_internal.h"

/* The memory tool's input: a command and its fields, as Anthropic's
 * memory tool (memory_20250818) takes them. */
static const char memory_schema[] =
    "{\"type\":\"object\","
    "\"properties\":{"
    "\"command\":{\"type\":\"string\","
    "\"enum\":[\"view\",\"create\",\"str_replace\",\"insert\",\"delete\",\"rename\"],"
    "\"description\":\"The command to run.\"},"
    "\"path\":{\"type\":\"string\",\"description\":\"The file or directory, under /memories "
    "(view, create, str_replace, insert, delete).\"},"
    "\"view_range\":{\"type\":\"array\",\"items\":{\"type\":\"integer\"},\"minItems\":2,"
    "\"maxItems\":2,\"description\":\"view of a file: the first and last line to show "
    "(1-based; -1 as the last: to the end).\"},"
    "\"file_text\":{\"type\":\"string\",\"description\":\"create: the file's content.\"},"
    "\"old_str\":{\"type\":\"string\",\"description\":\"str_replace: the text to replace; it must "
    "occur exactly once.\"},"
    "\"new_str\":{\"type\":\"string\",\"description\":\"str_replace: the new text.\"},"
    "\"insert_line\":{\"type\":\"integer\",\"description\":\"insert: the line after which to "
    "insert (0: at the top).\"},"
    "\"insert_text\":{\"type\":\"string\",\"description\":\"insert: the text to insert.\"},"
    "\"old_path\":{\"type\":\"string\",\"description\":\"rename: the file or directory to "
    "move.\"},"
    "\"new_path\":{\"type\":\"string\",\"description\":\"rename: where to move it.\"}},"
    "\"required\":[\"command\"]}";

static enum MHD_Result memory_call(struct req *r, struct json_t *args)
{
    struct md_buf parse_msg;
    md_buf_init(&parse_msg, OUT_LIMIT);
    enum md_err pe;
    char *text = json_dumps(args, JSON_COMPACT);
    if (text) {
        pe = md_cmd_parse(&r->cmd, text, strlen(text), &r->h->cfg->limits, &parse_msg);
        free(text); /* the command owns what it needs from it */
    } else {
        pe = MD_ENOMEM;
    }
    if (md_http_cmd_run(r, pe, &parse_msg))
        return MHD_YES; /* answered when the writer is done */
    return md_http_mcp_tool_answer(r);
}

const struct md_mcp_tool md_mcp_tools[] = {
    {"memory", "Memory",
     "A persistent memory directory, /memories, kept across conversations: view a directory or "
     "a file, create a file, replace or insert text in it, delete or rename files and "
     "directories. Check it before starting a task; record progress and what you learn as you "
     "go.",
     memory_schema, 0, memory_call},
    /* memory_search (issue 16, point 2) goes here. */
};
const size_t md_mcp_tool_count = sizeof md_mcp_tools / sizeof md_mcp_tools[0];
