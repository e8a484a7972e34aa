// The calls that glibc declares only under _GNU_SOURCE; the rest is inline in
// include/CSharedPrefsShims.h.
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>
#include "CSharedPrefsShims.h"

int sharedprefs_link_descriptor(int fd, int dirfd, const char *name) {
    return linkat(fd, "", dirfd, name, AT_EMPTY_PATH);
}

int sharedprefs_allocate(int fd, long length) {
    return fallocate(fd, 0, 0, length);
}

static unsigned long sharedprefs_forks = 0;
static unsigned long sharedprefs_forker = 0;
__thread unsigned sharedprefs_gate_depth = 0;
long sharedprefs_gate_holders = 0;
int sharedprefs_gate_closed = 0;

/// Before fork(2): closes the gate and waits until no thread holds a lock of the library's.
static void sharedprefs_before_fork(void) {
    __atomic_store_n(&sharedprefs_gate_closed, 1, __ATOMIC_SEQ_CST);
    while (__atomic_load_n(&sharedprefs_gate_holders, __ATOMIC_SEQ_CST) != 0) sched_yield();
}

static void sharedprefs_after_fork_in_parent(void) {
    __atomic_store_n(&sharedprefs_gate_closed, 0, __ATOMIC_SEQ_CST);
}

static void (*sharedprefs_child_hook)(void) = 0;

void sharedprefs_set_after_fork_in_child(void (*hook)(void)) {
    __atomic_store_n(&sharedprefs_child_hook, hook, __ATOMIC_SEQ_CST);
}

static void *sharedprefs_run_hook(void *hook) {
    ((void (*)(void))hook)();
    return 0;
}

static int sharedprefs_cached_pid = 0;

int sharedprefs_pid(void) {
    int pid = __atomic_load_n(&sharedprefs_cached_pid, __ATOMIC_RELAXED);
    if (pid == 0) {
        pid = getpid();
        __atomic_store_n(&sharedprefs_cached_pid, pid, __ATOMIC_RELAXED);
    }
    return pid;
}

static void sharedprefs_after_fork_in_child(void) {
    __atomic_store_n(&sharedprefs_cached_pid, 0, __ATOMIC_SEQ_CST);
    // Only the thread that forked goes on, and it holds no lock.
    __atomic_store_n(&sharedprefs_gate_holders, 0, __ATOMIC_SEQ_CST);
    __atomic_store_n(&sharedprefs_gate_closed, 0, __ATOMIC_SEQ_CST);
    __atomic_store_n(&sharedprefs_forker, (unsigned long)pthread_self(), __ATOMIC_SEQ_CST);
    __atomic_add_fetch(&sharedprefs_forks, 1, __ATOMIC_SEQ_CST);
    // On a thread of its own: the Swift runtime's locks are not reset in a child (one held by
    // a thread of the parent's, as it makes type metadata, stays held), and the thread that
    // forked must never wait for them here.
    void (*hook)(void) = __atomic_load_n(&sharedprefs_child_hook, __ATOMIC_SEQ_CST);
    pthread_t thread;
    if (hook && pthread_create(&thread, 0, sharedprefs_run_hook, (void *)hook) == 0) pthread_detach(thread);
}

__attribute__((constructor)) static void sharedprefs_register_fork_handlers(void) {
    pthread_atfork(sharedprefs_before_fork, sharedprefs_after_fork_in_parent, sharedprefs_after_fork_in_child);
}

unsigned long sharedprefs_fork_count(void) {
    return __atomic_load_n(&sharedprefs_forks, __ATOMIC_ACQUIRE);
}

unsigned long sharedprefs_forking_thread(void) {
    return __atomic_load_n(&sharedprefs_forker, __ATOMIC_ACQUIRE);
}
