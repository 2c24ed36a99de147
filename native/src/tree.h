/* tree.h - the "tree" workload: create a fixed fan-out tree of empty files. */
#ifndef BOATLOAD_TREE_H
#define BOATLOAD_TREE_H

/* argv[0..argc) are the arguments after "tree". Returns the exit code. */
int tree_main(int argc, char **argv);

#endif
