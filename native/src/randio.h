/* randio.h - the "randio" workload: vdbench-like random reads and writes over N files. */
#ifndef BOATLOAD_RANDIO_H
#define BOATLOAD_RANDIO_H

#include "cli.h"

/* Its options and help (main.c lists it). */
extern const struct cli_command randio_command;

/* argv[0..argc) are the arguments after "randio". Returns the exit code. */
int randio_main(int argc, char **argv);

#endif
