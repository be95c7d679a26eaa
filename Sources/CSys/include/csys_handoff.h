// Hand-offs between a worker's loop thread and its WSGI pool threads
// (--wsgi-threads): the pool threads run Python only and hand every
// transport operation to the loop thread, which owns the connections.
//
// - csys_doorbell: an eventfd the loop thread polls. Ringing it wakes the
//   loop; the loop clears it before looking for work.
// - csys_slot_signal: one per pool thread, a binary semaphore (mutex and
//   condition variable): the loop posts it when the thread's operation is
//   answered or a new request is given to it; the thread waits on it.
// - csys_handoff_queue: the pool threads' pending operations, by thread
//   number, in arrival order. Each thread has at most one operation
//   pending, so a ring of the pool's size never overflows. Pushing onto
//   an empty queue rings the doorbell.
//
// Ordering: what a pool thread writes before csys_handoff_push is visible
// to the loop thread after the csys_handoff_pop that returns it, and what
// the loop thread writes before csys_slot_post is visible to the thread
// after its csys_slot_wait returns (both go through a mutex).
#ifndef PEREGRINE_CSYS_HANDOFF_H
#define PEREGRINE_CSYS_HANDOFF_H

#include <stdint.h>

// An eventfd (non-blocking, close-on-exec); -1 on failure.
int csys_doorbell_open(void);
void csys_doorbell_ring(int fd);
// Resets the count (reads it); returns it, 0 when nothing rang.
uint64_t csys_doorbell_clear(int fd);

typedef struct csys_slot_signal csys_slot_signal;
csys_slot_signal *csys_slot_signal_create(void);
void csys_slot_signal_destroy(csys_slot_signal *s);
// Marks the signal posted and wakes its waiter.
void csys_slot_signal_post(csys_slot_signal *s);
// Waits until posted, then clears it.
void csys_slot_signal_wait(csys_slot_signal *s);

typedef struct csys_handoff_queue csys_handoff_queue;
// `capacity` thread numbers; `doorbell` is rung on the push onto an empty queue.
csys_handoff_queue *csys_handoff_queue_create(int capacity, int doorbell);
void csys_handoff_queue_destroy(csys_handoff_queue *q);
// 0, or -1 if the queue is full (a thread pushed twice: a bug).
int csys_handoff_push(csys_handoff_queue *q, int thread);
// The oldest thread number, or -1 when empty.
int csys_handoff_pop(csys_handoff_queue *q);
#endif
