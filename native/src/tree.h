/* tree.h - the "tree" workload: a tree of files (a fixed fan-out or a seeded random folder structure). */
#ifndef BOATLOAD_TREE_H
#define BOATLOAD_TREE_H

#include "cli.h"

/* Its options and help (main.c lists it). */
extern const struct cli_command tree_command;

/* argv[0..argc) are the arguments after "tree". Returns the exit code. */
int tree_main(int argc, char **argv);

#endif
