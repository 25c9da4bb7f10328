/*
 * md_progress.h — how far a long piece of work has come (src/base/progress.c):
 * memoryd migrate and backup, an import, for the operator watching it.
 *
 * On a terminal (stderr a tty, and `tty_ok`), a bar redrawn at most ten times
 * a second (or as often as MEMORYD_PROGRESS_MS below says, if more): "backup [##########----------]
 * 50%  1,024/2,048 pages  4,000/s". Otherwise one JSON log line (md_log.h) every
 * MD_PROGRESS_EVERY_S seconds (MEMORYD_PROGRESS_MS milliseconds when set, for tests):
 * {"msg":"progress","work":"backup","done":1024,"total":2048,"unit":"pages",
 * "rate":4000}, and, when one was written, one at the end ("done", with the
 * milliseconds it took). Work that ends sooner says nothing. A total of 0
 * means unknown: no bar or percentage, the count alone.
 *
 * Ownership: the struct lives with the caller; nothing is allocated. Not
 * thread-safe: one thread updates it.
 */
#ifndef MD_PROGRESS_H
#define MD_PROGRESS_H

#include <stdint.h>

#define MD_PROGRESS_EVERY_S 2

struct md_progress {
    const char *work; /* "backup", "migrate", "import": static text */
    const char *unit; /* "pages", "rows", "files" */
    int64_t total, done;
    uint64_t t0_us, shown_us;
    uint64_t every_us;  /* between two log lines */
    uint64_t redraw_us; /* between two drawings of the bar */
    int tty;            /* drawing a bar */
    int shown;          /* a bar drawn or a line logged */
};

/* Start: `tty_ok` 0 keeps to log lines even on a terminal (a server). */
void md_progress_begin(struct md_progress *p, const char *work, const char *unit, int64_t total,
                       int tty_ok);
/* `done` so far; shown when it is time to. */
void md_progress_update(struct md_progress *p, int64_t done);
/* The end (of work that went through, or stopped): the last state shown
 * and the bar's line ended, when anything was shown. */
void md_progress_end(struct md_progress *p);

#endif
