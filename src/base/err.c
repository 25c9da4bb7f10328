/* err.c — names and HTTP statuses of enum md_err, from md_errors.def, and
 * the texts of storage failures (md_refusals.h). */
#include "base/md_err.h"

#include "base/md_refusals.h"

static const struct {
    const char *text;
    unsigned status;
} rows[] = {
#define MD_ERROR(name, status, text) [name] = {text, status},
#include "base/md_errors.def"
#undef MD_ERROR
};
#define NROWS (sizeof rows / sizeof rows[0])

const char *md_strerror(enum md_err err)
{
    return (unsigned)err < NROWS ? rows[err].text : "unknown error";
}

unsigned md_err_http_status(enum md_err err)
{
    return (unsigned)err < NROWS ? rows[err].status : 500;
}

enum md_err md_storage_class(enum md_err err)
{
    return err == MD_EBUSY || err == MD_EUNAVAIL || err == MD_EUNSURE ? err : MD_EDB;
}

/* The text of a refusal (`class, "text"`: md_refusals.h). */
static const char *text_of(enum md_err err, const char *text)
{
    (void)err;
    return text;
}

const char *md_storage_text(enum md_err err)
{
    switch (md_storage_class(err)) {
    case MD_EBUSY:
        return text_of(MD_R_STORE_BUSY);
    case MD_EUNAVAIL:
        return text_of(MD_R_STORE_UNAVAILABLE);
    case MD_EUNSURE:
        return text_of(MD_R_STORE_UNSURE);
    default:
        return text_of(MD_R_STORE_FAILED);
    }
}
