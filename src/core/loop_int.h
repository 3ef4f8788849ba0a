/* loop_int — what loop.c and loop_child.c share; nothing outside the loop includes it. */
#ifndef CODEMCP_LOOP_INT_H
#define CODEMCP_LOOP_INT_H

/* SIGCHLD arrived (loop.c's signalfd): reaps every exited child and calls its watcher. */
void lp__reap_children(void);
/* lp_destroy: forgets every watcher. */
void lp__children_free(void);

#endif
