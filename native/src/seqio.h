/* seqio.h - the "seqio" workload: dd-like sequential write or read of one file. */
#ifndef BOATLOAD_SEQIO_H
#define BOATLOAD_SEQIO_H

/* argv[0..argc) are the arguments after "seqio". Returns the exit code. */
int seqio_main(int argc, char **argv);

#endif
