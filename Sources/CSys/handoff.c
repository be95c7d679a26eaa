#define _GNU_SOURCE
#include "csys_handoff.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

int csys_doorbell_open(void) {
    return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
}

void csys_doorbell_ring(int fd) {
    uint64_t one = 1;
    // EAGAIN only when the counter is about to overflow: it is rung already.
    while (write(fd, &one, sizeof one) < 0 && errno == EINTR) {}
}

uint64_t csys_doorbell_clear(int fd) {
    uint64_t count = 0;
    while (read(fd, &count, sizeof count) < 0) {
        if (errno != EINTR) return 0;
    }
    return count;
}

struct csys_slot_signal {
    pthread_mutex_t mutex;
    pthread_cond_t cond;
    int posted;
};

csys_slot_signal *csys_slot_signal_create(void) {
    csys_slot_signal *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    pthread_mutex_init(&s->mutex, NULL);
    pthread_cond_init(&s->cond, NULL);
    return s;
}

void csys_slot_signal_destroy(csys_slot_signal *s) {
    if (!s) return;
    pthread_cond_destroy(&s->cond);
    pthread_mutex_destroy(&s->mutex);
    free(s);
}

void csys_slot_signal_post(csys_slot_signal *s) {
    pthread_mutex_lock(&s->mutex);
    s->posted = 1;
    pthread_cond_signal(&s->cond);
    pthread_mutex_unlock(&s->mutex);
}

void csys_slot_signal_wait(csys_slot_signal *s) {
    pthread_mutex_lock(&s->mutex);
    while (!s->posted) pthread_cond_wait(&s->cond, &s->mutex);
    s->posted = 0;
    pthread_mutex_unlock(&s->mutex);
}

struct csys_handoff_queue {
    pthread_mutex_t mutex;
    int doorbell;
    int capacity;
    int head;
    int count;
    int threads[];
};

csys_handoff_queue *csys_handoff_queue_create(int capacity, int doorbell) {
    if (capacity < 1) return NULL;
    csys_handoff_queue *q = calloc(1, sizeof *q + (size_t)capacity * sizeof(int));
    if (!q) return NULL;
    pthread_mutex_init(&q->mutex, NULL);
    q->doorbell = doorbell;
    q->capacity = capacity;
    return q;
}

void csys_handoff_queue_destroy(csys_handoff_queue *q) {
    if (!q) return;
    pthread_mutex_destroy(&q->mutex);
    free(q);
}

int csys_handoff_push(csys_handoff_queue *q, int thread) {
    pthread_mutex_lock(&q->mutex);
    if (q->count == q->capacity) {
        pthread_mutex_unlock(&q->mutex);
        return -1;
    }
    int wasEmpty = q->count == 0;
    q->threads[(q->head + q->count) % q->capacity] = thread;
    q->count++;
    pthread_mutex_unlock(&q->mutex);
    // The loop clears the doorbell before it pops until empty, so a push
    // onto a non-empty queue is always seen without another ring.
    if (wasEmpty) csys_doorbell_ring(q->doorbell);
    return 0;
}

int csys_handoff_pop(csys_handoff_queue *q) {
    pthread_mutex_lock(&q->mutex);
    int thread = -1;
    if (q->count > 0) {
        thread = q->threads[q->head];
        q->head = (q->head + 1) % q->capacity;
        q->count--;
    }
    pthread_mutex_unlock(&q->mutex);
    return thread;
}
