/* seqio.h - the "seqio" workload: dd-like sequential write or read of one file. */
#ifndef BOATLOAD_SEQIO_H
#define BOATLOAD_SEQIO_H

#include "cli.h"

/* Its options and help (main.c lists it). */
extern const struct cli_command seqio_command;

/* argv[0..argc) are the arguments after "seqio". Returns the exit code. */
int seqio_main(int argc, char **argv);

#endif
