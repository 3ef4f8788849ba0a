/* loop_int — what loop.c, loop_io.c and loop_child.c share; nothing outside the loop includes
 * it. */
#ifndef CODEMCP_LOOP_INT_H
#define CODEMCP_LOOP_INT_H

/* SIGCHLD arrived (loop.c's signalfd): reaps every exited child and calls its watcher. */
void lp__reap_children(void);
/* lp_destroy: forgets every watcher. */
void lp__children_free(void);

/* The epoll set every lp_io sits in (loop.c's; -1 before lp_init and after lp_destroy). */
extern int lp__ep_fd;
/* One ready descriptor's events (loop_io.c). 1 when it was closed and freed. */
int lp__io_event(struct lp_io *io, uint32_t ev);
/* lp_destroy: closes every open descriptor; their owners hear on_close. */
void lp__io_close_all(void);

#endif
