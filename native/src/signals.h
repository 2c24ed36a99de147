/* signals.h - SIGINT/SIGTERM turn into a flag that the phase loops poll.
 * The handler only stores to a volatile sig_atomic_t; no I/O. */
#ifndef BOATLOAD_SIGNALS_H
#define BOATLOAD_SIGNALS_H

#include <signal.h>

extern volatile sig_atomic_t signal_stop;   /* signal number, 0 if none */

int signals_install(void);
/* Block SIGINT/SIGTERM in the calling thread, saving the old mask (used
 * around pthread_create so that only the main thread receives them). */
void signals_block(sigset_t *old);
void signals_restore(const sigset_t *old);

#endif
