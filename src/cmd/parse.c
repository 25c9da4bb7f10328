/*
 * parse.c — the command table (from md_commands.def), request parsing
 * and dispatch.
 *
 * A command has a name, whether it writes, its fields (type, required) and
 * its implementation. md_cmd_parse() checks a body against the table
 * before anything runs, so the implementations never see a bad field.
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/md_clock.h"
#include "base/md_json.h"
#include "base/md_json_read.h"
#include "base/md_log.h"
#include "base/md_refusals.h"
#include "base/md_utf8.h"
#include "internal.h"

enum field_type {
    F_PATH,     /* string, canonicalised into a md_patharg */
    F_STRING,   /* string (may contain NUL) */
    F_NONEMPTY, /* string, not empty */
    F_INT,      /* integer (an integral JSON real is accepted) */
    F_RANGE,    /* [int, int] */
};

struct field {
    const char *name;
    enum field_type type;
    int required;
    size_t offset; /* into struct md_cmd */
};

struct command {
    const char *name;
    enum md_cmd_kind kind;
    int write;
    cmd_fn run;
    struct field fields[4]; /* ended by a field without a name */
};

/* The command table, from md_commands.def. */
static const struct command commands[MD_CMD_COUNT] = {
#define MD_FIELD(n, type, req, member) {n, F_##type, req, offsetof(struct md_cmd, member)},
/* `fields` is a list of initializers (MD_FIELD rows), not an expression. */
/* NOLINTBEGIN(bugprone-macro-parentheses) */
#define MD_COMMAND(kind, n, scope, writes, handler, fields)                                        \
    [MD_CMD_##kind] = {n, MD_CMD_##kind, writes, handler, {fields{0}}},
/* NOLINTEND(bugprone-macro-parentheses) */
#include "cmd/md_commands.def"
};

/* The first field named `name` of the memory tool's commands, or NULL. */
static const struct field *tool_field(const char *name)
{
    for (size_t k = 0; k < MD_CMD_TOOL_COUNT; k++)
        for (const struct field *f = commands[k].fields; f->name; f++)
            if (strcmp(f->name, name) == 0)
                return f;
    return NULL;
}

/* The JSON Schema of a field's type. */
static const char *field_schema(enum field_type t)
{
    switch (t) {
    case F_INT:
        return "\"type\":\"integer\"";
    case F_RANGE:
        return "\"type\":\"array\",\"items\":{\"type\":\"integer\"},\"minItems\":2,\"maxItems\":2";
    default:
        return "\"type\":\"string\"";
    }
}

enum md_err md_cmd_tool_schema(struct md_buf *out)
{
    static const struct {
        const char *name, *description;
    } params[] = {
#define MD_PARAM(n, d) {n, d},
#include "cmd/md_commands.def"
    };
    enum md_err e = md_buf_puts(out, "{\"type\":\"object\",\"properties\":{");
    for (size_t i = 0; !e && i < sizeof params / sizeof params[0]; i++) {
        e = md_buf_printf(out, "%s\"%s\":{", i ? "," : "", params[i].name);
        if (!e && strcmp(params[i].name, "command") == 0) {
            e = md_buf_puts(out, "\"type\":\"string\",\"enum\":[");
            for (size_t k = 0; !e && k < MD_CMD_TOOL_COUNT; k++)
                e = md_buf_printf(out, "%s\"%s\"", k ? "," : "", commands[k].name);
            if (!e)
                e = md_buf_putc(out, ']');
        } else if (!e) {
            const struct field *f = tool_field(params[i].name);
            e = f ? md_buf_puts(out, field_schema(f->type)) : MD_EINVAL;
        }
        if (!e)
            e = md_buf_puts(out, ",\"description\":");
        if (!e)
            e = md_json_put_string(out, params[i].description, strlen(params[i].description));
        if (!e)
            e = md_buf_putc(out, '}');
    }
    if (!e)
        e = md_buf_puts(out, "},\"required\":[\"command\"]}");
    return e;
}

const char *md_cmd_kind_name(enum md_cmd_kind kind)
{
    return (unsigned)kind < MD_CMD_COUNT ? commands[kind].name : "unknown";
}

void md_cmd_free(struct md_cmd *cmd)
{
    free(cmd->path.canon);
    free(cmd->path2.canon);
    if (cmd->json)
        json_decref(cmd->json);
    memset(cmd, 0, sizeof *cmd);
}

/* A buffer error, or MD_EINVAL once the message is written. */
static enum md_err einval(enum md_err buf_err)
{
    return buf_err ? buf_err : MD_EINVAL;
}

static struct md_str cstr(const char *s)
{
    struct md_str r = {s, strlen(s)};
    return r;
}

static struct md_str jstr(const json_t *v)
{
    struct md_str r = {json_string_value(v), json_string_length(v)};
    return r;
}

enum int_status { INT_OK, INT_NOT_INT, INT_RANGE };

/* An integer, or a real with an integral value that a double holds
 * exactly (up to 2^53: beyond, it may not be the number written).
 * INT_RANGE: a whole number that does not fit in 64 bits (jansson holds
 * such an integer only as a real, see reparse_big_numbers). */
static enum int_status get_int(const json_t *v, int64_t *out)
{
    if (json_is_integer(v)) {
        *out = json_integer_value(v);
        return INT_OK;
    }
    if (!json_is_real(v))
        return INT_NOT_INT;
    double d = json_real_value(v);
    if (d != floor(d))
        return INT_NOT_INT;
    if (fabs(d) >= 9223372036854775808.0)
        return INT_RANGE;
    if (fabs(d) > 9007199254740992.0)
        return INT_NOT_INT;
    *out = (int64_t)d;
    return INT_OK;
}

static enum md_err out_of_range(struct md_buf *out, const char *name)
{
    return cmd_say1(out, MD_EINVAL, "Error: Parameter `", cstr(name),
                    "` has a number out of range: integers must be between "
                    "-9223372036854775808 and 9223372036854775807");
}

static enum md_err parse_field(struct md_cmd *cmd, const struct command *r, const struct field *f,
                               const json_t *obj, const struct md_limits *lim, struct md_buf *out)
{
    const json_t *v = json_object_get(obj, f->name);
    char *dst = (char *)cmd + f->offset;
    if (!v || json_is_null(v)) {
        if (!f->required)
            return MD_OK;
        return cmd_say(out, MD_EINVAL, "Error: Missing required parameter `", cstr(f->name),
                       "` for command `", cstr(r->name), "`");
    }
    switch (f->type) {
    case F_PATH: {
        if (!json_is_string(v))
            break;
        struct md_patharg *pa = (struct md_patharg *)(void *)dst;
        pa->raw = jstr(v);
        pa->canon = malloc(pa->raw.n + 1);
        if (!pa->canon)
            return MD_ENOMEM;
        enum md_path_status st =
            md_path_canon(pa->raw.p, pa->raw.n, &lim->path, pa->canon, &pa->canon_len);
        if (st != MD_PATH_OK) {
            enum md_err e = md_path_errmsg(out, st, pa->raw.p, pa->raw.n, &lim->path);
            return e ? e : MD_EINVAL;
        }
        return MD_OK;
    }
    case F_STRING:
    case F_NONEMPTY:
        if (!json_is_string(v))
            break;
        *(struct md_str *)(void *)dst = jstr(v);
        if (f->type == F_NONEMPTY && json_string_length(v) == 0)
            return cmd_say(out, MD_EINVAL, "Error: Parameter `", cstr(f->name),
                           "` must not be empty", (struct md_str){0}, NULL);
        return MD_OK;
    case F_INT:
        switch (get_int(v, (int64_t *)(void *)dst)) {
        case INT_OK:
            return MD_OK;
        case INT_RANGE:
            return out_of_range(out, f->name);
        case INT_NOT_INT:
            break;
        }
        return cmd_say(out, MD_EINVAL, "Error: Parameter `", cstr(f->name), "` must be an integer",
                       (struct md_str){0}, NULL);
    case F_RANGE: {
        /* As the SDK: an array of any other length than two is no range
         * (the whole file is shown). */
        if (json_is_array(v) && json_array_size(v) != 2)
            return MD_OK;
        struct md_view_range *vr = (struct md_view_range *)(void *)dst;
        enum int_status a = INT_NOT_INT, b = INT_NOT_INT;
        if (json_is_array(v)) {
            a = get_int(json_array_get(v, 0), &vr->first);
            b = get_int(json_array_get(v, 1), &vr->last);
        }
        if (a == INT_OK && b == INT_OK) {
            vr->present = 1;
            return MD_OK;
        }
        if (a != INT_NOT_INT && b != INT_NOT_INT)
            return out_of_range(out, f->name);
        return cmd_say(out, MD_EINVAL, "Error: Parameter `", cstr(f->name),
                       "` must be an array of two integers [start_line, end_line]",
                       (struct md_str){0}, NULL);
    }
    }
    return cmd_say(out, MD_EINVAL, "Error: Parameter `", cstr(f->name), "` must be a string",
                   (struct md_str){0}, NULL);
}

/* Append jansson's error text. It may quote one byte of a multibyte
 * character (e.g. "invalid escape near '\"a\\\xc2'"), so bytes that are
 * not valid UTF-8 become U+FFFD, as md_json_put_string writes them. */
static enum md_err put_json_error(struct md_buf *out, const char *text)
{
    size_t n = strlen(text);
    enum md_err e = MD_OK;
    for (size_t i = 0; i < n && !e;) {
        size_t k = md_utf8_seq(text + i, n - i);
        e = k ? md_buf_append(out, text + i, k) : md_buf_puts(out, "\xEF\xBF\xBD");
        i += k ? k : 1;
    }
    return e;
}

/* The refusal of a body that is not JSON (MD_R_BODY_NOT_JSON). */
static enum md_err not_json(struct md_buf *out, const json_error_t *jerr)
{
    struct md_buf text;
    md_buf_init(&text, sizeof jerr->text * 3); /* each byte at most U+FFFD */
    enum md_err e = put_json_error(&text, jerr->text);
    if (!e)
        e = md_buf_say(out, MD_R_BODY_NOT_JSON, text.data ? text.data : "", jerr->line,
                       jerr->column);
    md_buf_free(&text);
    return e;
}

/* Unwrap a tool_use block; returns the command object or NULL (error in out). */
static const json_t *unwrap(struct md_cmd *cmd, const json_t *root, struct md_buf *out,
                            enum md_err *err)
{
    const json_t *type = json_object_get(root, "type");
    if (!type)
        return root;
    if (!json_is_string(type) || strcmp(json_string_value(type), "tool_use") != 0 ||
        json_string_length(type) != 8) {
        *err = md_buf_say(out, MD_R_BODY_UNSUPPORTED);
        return NULL;
    }
    const json_t *id = json_object_get(root, "id");
    if (!json_is_string(id)) {
        *err = md_buf_say(out, MD_R_TOOL_USE_ID);
        return NULL;
    }
    cmd->tool_use_id = jstr(id);
    const json_t *name = json_object_get(root, "name");
    if (name && (!json_is_string(name) || strcmp(json_string_value(name), "memory") != 0 ||
                 json_string_length(name) != 6)) {
        struct md_str n = json_is_string(name) ? jstr(name) : cstr("");
        *err = cmd_say(out, MD_EINVAL, "Error: Tool '", n, "' not found", (struct md_str){0}, NULL);
        return NULL;
    }
    const json_t *input = json_object_get(root, "input");
    if (!json_is_object(input)) {
        *err = md_buf_say(out, MD_R_TOOL_USE_INPUT);
        return NULL;
    }
    return input;
}

/* True when the number token t[0..n) (JSON syntax assumed) does not fit
 * where jansson keeps it: an integer outside int64, or a real beyond the
 * range of a double. `t` must be writable (a NUL is put and taken back). */
static int number_overflows(char *t, size_t n)
{
    int real = memchr(t, '.', n) || memchr(t, 'e', n) || memchr(t, 'E', n);
    if (!real) {
        int neg = t[0] == '-';
        size_t digits = n - (size_t)neg;
        const char *max = neg ? "9223372036854775808" : "9223372036854775807";
        return digits > 19 || (digits == 19 && memcmp(t + neg, max, 19) > 0);
    }
    char saved = t[n];
    t[n] = '\0';
    errno = 0;
    double d = strtod(t, NULL);
    t[n] = saved;
    return errno == ERANGE && (d == HUGE_VAL || d == -HUGE_VAL);
}

/* jansson refuses a number it cannot hold ("too big integer", "real number
 * overflow"), though it is valid JSON. Parse a copy of the body in which
 * each such number is replaced by +-1e300 padded with spaces (so that any
 * other error keeps its line and column): the field that holds it is then
 * reported as out of range, and a field memoryd ignores does not matter.
 * NULL (with `err`) when the copy does not parse either. */
static json_t *reparse_big_numbers(const char *body, size_t len, json_error_t *err)
{
    char *copy = malloc(len + 1);
    if (!copy)
        return NULL;
    memcpy(copy, body, len);
    copy[len] = '\0';
    for (size_t i = 0; i < len;) {
        char ch = copy[i];
        if (ch == '"') { /* skip a string */
            for (i++; i < len && copy[i] != '"'; i++)
                if (copy[i] == '\\')
                    i++;
            i++;
            continue;
        }
        if (ch != '-' && (ch < '0' || ch > '9')) {
            i++;
            continue;
        }
        size_t start = i;
        while (i < len && strchr("0123456789+-.eE", copy[i]) && copy[i] != '\0')
            i++;
        const char *with = copy[start] == '-' ? "-1e300" : "1e300";
        size_t n = i - start, wn = strlen(with);
        if (n >= wn && number_overflows(copy + start, n)) {
            memcpy(copy + start, with, wn);
            memset(copy + start + wn, ' ', n - wn);
        }
    }
    json_t *root = json_loadb(copy, len, MD_JSON_READ_FLAGS, err);
    free(copy);
    return root;
}

/* The body's JSON object into cmd->json, or a refusal in out. `root`: the
 * body as read already, or NULL for jansson to read it (and word the
 * error). */
static enum md_err body_object(struct md_cmd *cmd, json_t *root, const char *body, size_t len,
                               struct md_buf *out)
{
    json_error_t jerr;
    if (!root)
        root = json_loadb(body, len, MD_JSON_READ_FLAGS, &jerr);
    if (!root && json_error_code(&jerr) == json_error_numeric_overflow)
        root = reparse_big_numbers(body, len, &jerr);
    if (!root)
        return not_json(out, &jerr);
    cmd->json = root;
    if (!json_is_object(root))
        return md_buf_say(out, MD_R_BODY_NOT_OBJECT);
    return MD_OK;
}

static enum md_err parse_fields(struct md_cmd *cmd, const struct command *r, const json_t *obj,
                                const struct md_limits *lim, struct md_buf *out)
{
    cmd->kind = r->kind;
    cmd->name = r->name;
    cmd->write = r->write;
    for (size_t i = 0; i < sizeof r->fields / sizeof r->fields[0] && r->fields[i].name; i++) {
        enum md_err e = parse_field(cmd, r, &r->fields[i], obj, lim, out);
        if (e)
            return e;
    }
    return MD_OK;
}

enum md_err md_cmd_parse(struct md_cmd *cmd, const char *body, size_t len,
                         const struct md_limits *lim, struct md_buf *out)
{
    memset(cmd, 0, sizeof *cmd);
    if (len == 0)
        return md_buf_say(out, MD_R_BODY_EMPTY);
    /* The fast reader handles the usual bodies; jansson the rest, and
     * words every error. */
    enum md_err e = body_object(cmd, md_json_read(body, len), body, len, out);
    if (e)
        return e;
    const json_t *obj = unwrap(cmd, cmd->json, out, &e);
    if (!obj)
        return e;

    const json_t *command = json_object_get(obj, "command");
    if (!command || json_is_null(command))
        return einval(md_buf_puts(out, "Error: Missing required parameter `command`"));
    if (!json_is_string(command))
        return einval(md_buf_puts(out, "Error: Parameter `command` must be a string"));
    const struct command *r = NULL;
    for (size_t i = 0; i < MD_CMD_TOOL_COUNT; i++) {
        if (strlen(commands[i].name) == json_string_length(command) &&
            strcmp(commands[i].name, json_string_value(command)) == 0)
            r = &commands[i];
    }
    if (!r)
        return cmd_say(out, MD_EINVAL, "Error: ", jstr(command), " not implemented",
                       (struct md_str){0}, NULL);
    return parse_fields(cmd, r, obj, lim, out);
}

enum md_err md_cmd_parse_op(struct md_cmd *cmd, enum md_cmd_kind kind, const char *body, size_t len,
                            const struct md_limits *lim, struct md_buf *out)
{
    memset(cmd, 0, sizeof *cmd);
    enum md_err e = body_object(cmd, NULL, body ? body : "", len, out);
    return e ? e : parse_fields(cmd, &commands[kind], cmd->json, lim, out);
}

/* The JSON answer of a restore or a redaction (POST /v1/...), written
 * here because it names the change-feed entry the write got. */
static enum md_err op_answer(const struct md_cmd *cmd, const struct md_cmd_result *res,
                             struct md_buf *out)
{
    md_buf_reset(out);
    enum md_err e = md_buf_puts(out, "{\"path\":");
    if (!e)
        e = md_json_put_string(out, cmd->path.canon, cmd->path.canon_len);
    if (!e && cmd->kind == MD_CMD_REDACT)
        e = md_buf_printf(out, ",\"version\":%lld,\"redacted\":true", (long long)cmd->version);
    if (!e && cmd->kind == MD_CMD_CLEAR)
        e = res->change.version
                ? md_buf_printf(out, ",\"removed\":%lld,\"restore_before\":%lld",
                                (long long)res->removed, (long long)res->change.version)
                : md_buf_printf(out, ",\"removed\":%lld,\"restore_before\":null",
                                (long long)res->removed);
    if (!e && cmd->kind == MD_CMD_RESTORE)
        e = md_buf_printf(out, ",\"%s\":%lld,\"restored\":%lld,\"removed\":%lld,\"unchanged\":%lld",
                          cmd->version ? "version" : "before",
                          (long long)(cmd->version ? cmd->version : cmd->before),
                          (long long)res->restored, (long long)res->removed,
                          (long long)res->unchanged);
    if (!e && res->no_change)
        e = md_buf_puts(out, ",\"seq\":null,\"versions_recorded\":0}");
    else if (!e)
        e = md_buf_printf(out, ",\"seq\":%lld,\"versions_recorded\":%lld}",
                          (long long)res->change.seq, (long long)res->change.versions);
    return e;
}

enum md_err md_cmd_exec(struct md_txn *t, const char *tenant, const struct md_cmd *cmd,
                        const struct md_limits *lim, struct md_buf *out, struct md_cmd_result *res)
{
    memset(res, 0, sizeof *res);
    struct cmd_ctx c = {t, tenant, cmd, lim, out, res};
    enum md_err g = cmd_subtree_gate(cmd, out);
    if (g)
        return g;
    if (cmd->write) {
        struct md_write_meta m = {cmd->name, cmd->actor, md_wall_ms(), {0, 0, 0, 0}};
        enum md_err e = md_txn_cmd_begin(t, tenant, &m);
        if (e)
            return e;
    }
    enum md_err e = commands[cmd->kind].run(&c);
    if (e || !cmd->write)
        return e;
    /* The change names the canonical paths (rename: both). A write that
     * found nothing to change records nothing (a clear of an empty tenant). */
    if (!res->no_change) {
        const char *paths[2] = {cmd->path.canon, cmd->path2.canon};
        size_t lens[2] = {cmd->path.canon_len, cmd->path2.canon_len};
        e = md_txn_cmd_end(t, paths, lens, cmd->path2.canon ? 2 : 1, &res->change);
    }
    if (!e &&
        (cmd->kind == MD_CMD_RESTORE || cmd->kind == MD_CMD_REDACT || cmd->kind == MD_CMD_CLEAR))
        e = op_answer(cmd, res, out);
    if (!e && cmd->kind == MD_CMD_IMPORT)
        e = cmd_import_answer(tenant, cmd, res, out);
    return e;
}
