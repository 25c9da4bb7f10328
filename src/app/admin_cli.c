/* admin_cli.c — memoryd admin tenants ... (md_admin_cli.h): each action one
 * or a few requests to a running memoryd's /v1/tenants endpoints, with
 * libcurl. */
#include "app/md_admin_cli.h"

#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/md_buf.h"
#include "base/md_tenant.h"

static const char usage[] =
    "Usage: memoryd admin [--url URL] [--key-file FILE] tenants ACTION ...\n"
    "  tenants list                     every tenant: tenant, files, bytes, versions, last_write\n"
    "  tenants show TENANT              its usage, limits and overrides (JSON)\n"
    "  tenants limits TENANT [--max-bytes N|default] [--max-files N|default]\n"
    "                 [--sensitive reject|redact|off|default] [--expire-after "
    "DURATION|off|default]\n"
    "                                   set its own limits (0: unlimited; default: the flag's)\n"
    "  tenants erase TENANT --yes       erase its files, history, feed and keys for good\n"
    "  tenants export TENANT --to FILE  its tree as a tar archive (FILE - : stdout)\n"
    "  tenants import TENANT --from FILE [--mode new|replace|merge]\n"
    "                                   a tar archive into it, all or nothing\n"
    "\n"
    "Through a running memoryd (--url, or MEMORYD_ADMIN_URL; default http://127.0.0.1:8080),\n"
    "which applies each change in order with its other writes. With --auth keys, an admin\n"
    "key from MEMORYD_ADMIN_KEY or --key-file; without, memoryd answers only its own machine.\n"
    "Exit status: 0 done, 1 failed (the reason on stderr), 2 usage error.\n";

#define DEFAULT_URL "http://127.0.0.1:8080"

struct args {
    const char *url, *key_file, *what, *action, *tenant;
    const char *max_bytes, *max_files, *sensitive, *expire_after, *to, *from, *mode;
    int yes;
};

/* A request's connection and authorization, set up once. */
struct admin {
    CURL *curl;
    struct curl_slist *headers;
    const char *url;
    char err[CURL_ERROR_SIZE];
};

static int usage_error(const char *what, const char *detail)
{
    fprintf(stderr, "memoryd admin: %s%s%s\n\n%s", what, detail ? ": " : "", detail ? detail : "",
            usage);
    return 2;
}

static int fail(const char *what, const char *detail)
{
    fprintf(stderr, "memoryd admin: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    return 1;
}

/* The option's slot in `a`, or NULL. */
static const char **slot_of(struct args *a, const char *s)
{
    static const struct {
        const char *flag;
        size_t off;
    } flags[] = {
        {"--url", offsetof(struct args, url)},
        {"--key-file", offsetof(struct args, key_file)},
        {"--max-bytes", offsetof(struct args, max_bytes)},
        {"--max-files", offsetof(struct args, max_files)},
        {"--sensitive", offsetof(struct args, sensitive)},
        {"--expire-after", offsetof(struct args, expire_after)},
        {"--to", offsetof(struct args, to)},
        {"--from", offsetof(struct args, from)},
        {"--mode", offsetof(struct args, mode)},
    };
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
        if (strcmp(s, flags[i].flag) == 0)
            return (const char **)(void *)((char *)a + flags[i].off);
    return NULL;
}

/* Whether `action` takes only the options `allowed` (a list of flags). */
static int only_these(const struct args *a, const char *allowed)
{
    const struct {
        const char *flag;
        int set;
    } used[] = {{"--max-bytes", a->max_bytes != NULL},
                {"--max-files", a->max_files != NULL},
                {"--sensitive", a->sensitive != NULL},
                {"--expire-after", a->expire_after != NULL},
                {"--to", a->to != NULL},
                {"--from", a->from != NULL},
                {"--mode", a->mode != NULL},
                {"--yes", a->yes}};
    for (size_t i = 0; i < sizeof used / sizeof used[0]; i++)
        if (used[i].set && !strstr(allowed, used[i].flag))
            return usage_error("not an option of this action", used[i].flag);
    return 0;
}

static int check_action(struct args *a)
{
    static const char *const with_tenant[] = {"show", "limits", "erase", "export", "import"};
    if (!a->what || strcmp(a->what, "tenants") != 0)
        return usage_error("tenants is needed", a->what);
    if (!a->action)
        return usage_error("an action is needed", NULL);
    int needs_tenant = 0;
    for (size_t i = 0; i < sizeof with_tenant / sizeof with_tenant[0]; i++)
        needs_tenant |= strcmp(a->action, with_tenant[i]) == 0;
    if (!needs_tenant && strcmp(a->action, "list") != 0)
        return usage_error("unknown action", a->action);
    if (needs_tenant != (a->tenant != NULL))
        return usage_error(needs_tenant ? "a tenant is needed" : "unexpected argument", a->tenant);
    if (a->tenant && !md_tenant_valid(a->tenant, strlen(a->tenant)))
        return usage_error("not a tenant id (1 to 128 of A-Z a-z 0-9 . _ -)", a->tenant);
    const char *allowed = strcmp(a->action, "limits") == 0
                              ? "--max-bytes --max-files --sensitive --expire-after"
                          : strcmp(a->action, "erase") == 0  ? "--yes"
                          : strcmp(a->action, "export") == 0 ? "--to"
                          : strcmp(a->action, "import") == 0 ? "--from --mode"
                                                             : "";
    if (only_these(a, allowed))
        return 2;
    if (strcmp(a->action, "erase") == 0 && !a->yes)
        return usage_error("erasing cannot be undone: add --yes", NULL);
    if (strcmp(a->action, "export") == 0 && !a->to)
        return usage_error("--to FILE is needed", NULL);
    if (strcmp(a->action, "import") == 0 && !a->from)
        return usage_error("--from FILE is needed", NULL);
    if (strcmp(a->action, "limits") == 0 && !a->max_bytes && !a->max_files && !a->sensitive &&
        !a->expire_after)
        return usage_error("--max-bytes, --max-files, --sensitive or --expire-after is needed",
                           NULL);
    return 0;
}

/* 0, 1 after --help, 2 on a usage error (reported). */
static int parse_args(struct args *a, int argc, char **argv)
{
    memset(a, 0, sizeof *a);
    const char **positional[] = {&a->what, &a->action, &a->tenant};
    size_t npos = 0;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        const char **slot = slot_of(a, s);
        if (strcmp(s, "--help") == 0 || strcmp(s, "-h") == 0) {
            fputs(usage, stdout);
            return 1;
        }
        if (strcmp(s, "--yes") == 0) {
            a->yes = 1;
        } else if (slot) {
            if (i + 1 >= argc)
                return usage_error("a value is needed after", s);
            *slot = argv[++i];
        } else if (s[0] == '-' && s[1] != '\0') {
            return usage_error("unknown argument", s);
        } else if (npos < sizeof positional / sizeof positional[0]) {
            *positional[npos++] = s;
        } else {
            return usage_error("unexpected argument", s);
        }
    }
    if (!a->url)
        a->url = getenv("MEMORYD_ADMIN_URL");
    if (!a->url || !*a->url)
        a->url = DEFAULT_URL;
    return check_action(a);
}

/* The key: MEMORYD_ADMIN_KEY, or the first line of --key-file; "" for none.
 * 0, or 1 when the file cannot be read (reported). */
static int read_key(const struct args *a, char *key, size_t size)
{
    key[0] = '\0';
    if (!a->key_file) {
        const char *env = getenv("MEMORYD_ADMIN_KEY");
        if (env)
            snprintf(key, size, "%s", env);
        return 0;
    }
    FILE *f = fopen(a->key_file, "r");
    if (!f)
        return fail(a->key_file, strerror(errno));
    if (!fgets(key, (int)size, f))
        key[0] = '\0';
    fclose(f);
    key[strcspn(key, "\r\n")] = '\0';
    return 0;
}

/* Where an answer's body goes: a 2xx one to `file` when there is one, any
 * other (an error's text) to `answer`. */
struct sink {
    CURL *curl;
    FILE *file;
    struct md_buf *answer;
};

static size_t to_sink(char *data, size_t size, size_t n, void *ctx)
{
    struct sink *s = ctx;
    long status = 0;
    curl_easy_getinfo(s->curl, CURLINFO_RESPONSE_CODE, &status);
    if (s->file && status >= 200 && status <= 299)
        return fwrite(data, 1, size * n, s->file);
    return md_buf_append(s->answer, data, size * n) == MD_OK ? size * n : 0;
}

/* One request: `method` on the server's `path`, the body from `body` (or
 * the file `upload`), the answer into `answer` (or, when 2xx, the file
 * `download`). *status: the HTTP status; 0, or 1 when no answer came
 * (reported). */
static int request(struct admin *ad, const char *method, const char *path, const char *body,
                   FILE *upload, FILE *download, struct md_buf *answer, long *status)
{
    char url[2048];
    snprintf(url, sizeof url, "%s%s", ad->url, path);
    CURL *c = ad->curl;
    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, ad->headers);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, ad->err);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    if (body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    } else if (upload) {
        struct stat st;
        curl_easy_setopt(c, CURLOPT_POST, 1L);
        curl_easy_setopt(c, CURLOPT_READDATA, upload);
        if (fstat(fileno(upload), &st) == 0 && S_ISREG(st.st_mode))
            curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)st.st_size);
    }
    struct sink sink = {c, download, answer};
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, to_sink);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &sink);
    ad->err[0] = '\0';
    CURLcode rc = curl_easy_perform(c);
    *status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
    if (rc != CURLE_OK) {
        char what[2100];
        snprintf(what, sizeof what, "%s %s", method, url);
        return fail(what, ad->err[0] ? ad->err : curl_easy_strerror(rc));
    }
    return 0;
}

/* Report a refusal: the server's {"error": text}, or its status alone. */
static int refused(long status, const struct md_buf *answer)
{
    json_t *doc = answer->len ? json_loadb(answer->data, answer->len, 0, NULL) : NULL;
    const char *text = json_string_value(json_object_get(doc, "error"));
    fprintf(stderr, "memoryd admin: %ld: %s\n", status,
            text     ? text
            : status ? "the server refused (no reason given)"
                     : "no answer");
    json_decref(doc);
    return 1;
}

/* A request whose 2xx answer is printed as it came; else refused. */
static int print_answer(struct admin *ad, const char *method, const char *path, const char *body,
                        FILE *upload)
{
    struct md_buf answer;
    md_buf_init(&answer, (size_t)64 << 20);
    long status;
    int rc = request(ad, method, path, body, upload, NULL, &answer, &status);
    if (!rc && (status < 200 || status > 299))
        rc = refused(status, &answer);
    else if (!rc)
        printf("%.*s\n", (int)answer.len, answer.data ? answer.data : "");
    md_buf_free(&answer);
    return rc;
}

static int tenants_list(struct admin *ad)
{
    char cursor[256] = "";
    printf("tenant\tfiles\tbytes\tversions\tlast_write\n");
    for (;;) {
        char path[512];
        snprintf(path, sizeof path, "/v1/tenants?limit=1000%s%s", cursor[0] ? "&cursor=" : "",
                 cursor);
        struct md_buf answer;
        md_buf_init(&answer, (size_t)64 << 20);
        long status;
        int rc = request(ad, "GET", path, NULL, NULL, NULL, &answer, &status);
        if (!rc && status != 200)
            rc = refused(status, &answer);
        json_t *doc = rc ? NULL : json_loadb(answer.data, answer.len, 0, NULL);
        md_buf_free(&answer);
        if (rc)
            return rc;
        json_t *rows = json_object_get(doc, "tenants"), *row;
        size_t i;
        json_array_foreach(rows, i, row)
        {
            const char *last = json_string_value(json_object_get(row, "last_write"));
            printf("%s\t%lld\t%lld\t%lld\t%s\n", json_string_value(json_object_get(row, "tenant")),
                   (long long)json_integer_value(json_object_get(row, "files")),
                   (long long)json_integer_value(json_object_get(row, "bytes")),
                   (long long)json_integer_value(json_object_get(row, "versions")),
                   last ? last : "-");
        }
        const char *next = json_string_value(json_object_get(doc, "next_cursor"));
        int more = next && strlen(next) < sizeof cursor;
        if (more)
            snprintf(cursor, sizeof cursor, "%s", next);
        int ok = json_is_array(rows);
        json_decref(doc);
        if (!ok)
            return fail("the server's answer is not a list of tenants", NULL);
        if (!more)
            return 0;
    }
}

/* The value of --max-bytes or --max-files as JSON ("default": null); NULL
 * when it is neither a non-negative integer nor "default". */
static json_t *limit_value(const char *s)
{
    if (strcmp(s, "default") == 0)
        return json_null();
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (s[0] < '0' || s[0] > '9' || *end || errno || v < 0)
        return NULL;
    return json_integer(v);
}

/* limits: the option not given keeps the tenant's own override (read first). */
static int tenants_limits(struct admin *ad, const struct args *a, const char *base)
{
    json_t *body = json_object();
    const char *given[2] = {a->max_bytes, a->max_files}, *field[2] = {"max_bytes", "max_files"};
    json_t *overrides = NULL, *current = NULL;
    for (int k = 0; k < 2; k++) {
        json_t *v = given[k] ? limit_value(given[k]) : NULL;
        if (given[k] && !v) {
            json_decref(body);
            return usage_error("not a limit (a whole number >= 0, or default)", given[k]);
        }
        if (!given[k] && !overrides) {
            struct md_buf answer;
            md_buf_init(&answer, 1 << 20);
            long status;
            int rc = request(ad, "GET", base, NULL, NULL, NULL, &answer, &status);
            if (!rc && status != 200)
                rc = refused(status, &answer);
            current = rc ? NULL : json_loadb(answer.data, answer.len, 0, NULL);
            overrides = json_object_get(current, "overrides");
            md_buf_free(&answer);
            if (rc || !overrides) {
                json_decref(body);
                json_decref(current);
                return rc ? rc : fail("the server's answer has no overrides", NULL);
            }
        }
        json_object_set_new(body, field[k],
                            v ? v : json_incref(json_object_get(overrides, field[k])));
    }
    json_decref(current);
    /* The server checks the values; "default" is its null (the flag's). */
    const char *opt[2] = {a->sensitive, a->expire_after}, *key[2] = {"sensitive", "expire_after"};
    for (int k = 0; k < 2; k++)
        if (opt[k])
            json_object_set_new(body, key[k],
                                strcmp(opt[k], "default") == 0 ? json_null() : json_string(opt[k]));
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    if (!text)
        return fail("out of memory", NULL);
    char path[256];
    snprintf(path, sizeof path, "%s/limits", base);
    int rc = print_answer(ad, "PUT", path, text, NULL);
    free(text);
    return rc;
}

/* export: into FILE.part, renamed to FILE once whole (a failed export
 * leaves no FILE that looks complete); "-": stdout. */
static int tenants_export(struct admin *ad, const char *to, const char *base)
{
    int to_stdout = strcmp(to, "-") == 0;
    char part[4096];
    snprintf(part, sizeof part, "%s.part", to);
    FILE *f = to_stdout ? stdout : fopen(part, "wb");
    if (!f)
        return fail(part, strerror(errno));
    char path[256];
    snprintf(path, sizeof path, "%s/export", base);
    struct md_buf answer;
    md_buf_init(&answer, 1 << 20);
    long status;
    int rc = request(ad, "GET", path, NULL, NULL, f, &answer, &status);
    if (!rc && status != 200)
        rc = refused(status, &answer);
    md_buf_free(&answer);
    if (fflush(f) != 0 || ferror(f))
        rc = rc ? rc : fail(to, strerror(errno));
    if (!to_stdout) {
        if (fclose(f) != 0)
            rc = rc ? rc : fail(part, strerror(errno));
        if (!rc && rename(part, to) != 0)
            rc = fail(to, strerror(errno));
        if (rc)
            remove(part);
    }
    return rc;
}

static int tenants_import(struct admin *ad, const struct args *a, const char *base)
{
    const char *mode = a->mode ? a->mode : "new";
    if (strcmp(mode, "new") != 0 && strcmp(mode, "replace") != 0 && strcmp(mode, "merge") != 0)
        return usage_error("--mode is new, replace or merge", mode);
    FILE *f = strcmp(a->from, "-") == 0 ? stdin : fopen(a->from, "rb");
    if (!f)
        return fail(a->from, strerror(errno));
    char path[256];
    snprintf(path, sizeof path, "%s/import?mode=%s", base, mode);
    int rc = print_answer(ad, "POST", path, NULL, f);
    if (f != stdin)
        fclose(f);
    return rc;
}

static int run(struct admin *ad, const struct args *a)
{
    char base[200];
    snprintf(base, sizeof base, "/v1/tenants/%s", a->tenant ? a->tenant : "");
    if (strcmp(a->action, "list") == 0)
        return tenants_list(ad);
    if (strcmp(a->action, "show") == 0)
        return print_answer(ad, "GET", base, NULL, NULL);
    if (strcmp(a->action, "limits") == 0)
        return tenants_limits(ad, a, base);
    if (strcmp(a->action, "erase") == 0)
        return print_answer(ad, "DELETE", base, NULL, NULL);
    if (strcmp(a->action, "export") == 0)
        return tenants_export(ad, a->to, base);
    return tenants_import(ad, a, base);
}

int md_admin_main(int argc, char **argv)
{
    struct args a;
    int rc = parse_args(&a, argc, argv);
    if (rc)
        return rc == 1 ? 0 : rc;
    char key[512], auth[600];
    if (read_key(&a, key, sizeof key))
        return 1;
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return fail("cannot start libcurl", NULL);
    struct admin ad = {.curl = curl_easy_init(), .url = a.url};
    /* The bodies' type (libcurl would send POST data as a form): JSON, or
     * the import's tar archive. */
    ad.headers =
        curl_slist_append(NULL, strcmp(a.action, "import") == 0 ? "Content-Type: application/x-tar"
                                                                : "Content-Type: application/json");
    if (key[0]) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", key);
        ad.headers = curl_slist_append(ad.headers, auth);
    }
    rc = ad.curl && ad.headers ? run(&ad, &a) : fail("out of memory", NULL);
    curl_slist_free_all(ad.headers);
    curl_easy_cleanup(ad.curl);
    curl_global_cleanup();
    memset(key, 0, sizeof key);
    memset(auth, 0, sizeof auth);
    return rc;
}
