/*
 * md_subcommands.h — memoryd's commands besides serving (`memoryd NAME
 * ...`): one table (src/app/subcommands.c) that main() dispatches by and
 * --help lists.
 */
#ifndef MD_SUBCOMMANDS_H
#define MD_SUBCOMMANDS_H

#include <stdio.h>

struct md_subcommand {
    const char *name;  /* argv[1] */
    const char *usage; /* its arguments, for --help */
    const char *what;  /* one line, for --help */
    /* Its main: argv[0] is `name`; returns the exit status. */
    int (*run)(int argc, char **argv);
};

/* The subcommand named `name`, or NULL. */
const struct md_subcommand *md_subcommand_find(const char *name);

/* The --help lines of every subcommand, into `f`. */
void md_subcommands_help(FILE *f);

#endif
