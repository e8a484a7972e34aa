#ifndef CSHAREDPREFS_SHIMS_H
#define CSHAREDPREFS_SHIMS_H

// C calls that Glibc's Swift module map leaves out, and ThreadSanitizer's annotations.

#include <linux/fs.h>
#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <malloc.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/timerfd.h>
#include <sys/vfs.h>

/// Every lock of the library's (`Lock`) is taken inside this gate, which `fork(2)` closes
/// (`pthread_atfork`) until no thread holds one: a child never starts with a lock held by a
/// thread it does not have. A thread counts once however many locks it holds (`depth`), so one
/// taken inside another never waits for a fork that waits for it.
extern __thread unsigned sharedprefs_gate_depth;
extern long sharedprefs_gate_holders;
extern int sharedprefs_gate_closed;

/// getdents64(2), which glibc does not wrap before 2.30's getdents64 (and Swift cannot call the
/// variadic syscall): the entries of an open directory, read through that very descriptor.
static inline long sharedprefs_getdents64(int fd, void *buffer, unsigned long size) {
    return syscall(SYS_getdents64, fd, buffer, size);
}

static inline void sharedprefs_lock_gate_enter(void) {
    if (sharedprefs_gate_depth++ > 0) return;
    for (;;) {
        __atomic_add_fetch(&sharedprefs_gate_holders, 1, __ATOMIC_SEQ_CST);
        if (!__atomic_load_n(&sharedprefs_gate_closed, __ATOMIC_SEQ_CST)) return;
        // A fork is under way: out of its way until it is done (a moment).
        __atomic_sub_fetch(&sharedprefs_gate_holders, 1, __ATOMIC_SEQ_CST);
        while (__atomic_load_n(&sharedprefs_gate_closed, __ATOMIC_ACQUIRE)) sched_yield();
    }
}

static inline void sharedprefs_lock_gate_leave(void) {
    if (--sharedprefs_gate_depth > 0) return;
    __atomic_sub_fetch(&sharedprefs_gate_holders, 1, __ATOMIC_RELEASE);
}

/// A lock word (0 free, 1 held, 2 held with waiters) and its futex: the lock of `Lock`. It
/// records no thread, so a child forked without exec (where the gate above left it free) uses it
/// as any other thread would. ThreadSanitizer does not see it: `Lock` tells it.
static inline void sharedprefs_lock(int *word) {
    int seen = 0;
    if (__atomic_compare_exchange_n(word, &seen, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) return;
    if (seen != 2) seen = __atomic_exchange_n(word, 2, __ATOMIC_ACQUIRE);
    while (seen != 0) {
        syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0);
        seen = __atomic_exchange_n(word, 2, __ATOMIC_ACQUIRE);
    }
}

static inline int sharedprefs_trylock(int *word) {
    int seen = 0;
    return __atomic_compare_exchange_n(word, &seen, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

static inline void sharedprefs_unlock(int *word) {
    if (__atomic_exchange_n(word, 0, __ATOMIC_RELEASE) == 2) syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/// How many times this process's line of ancestors forked since the library was loaded, as
/// seen from this process: 0 in the process that loaded it, one more in each child `fork(2)`
/// made (a `pthread_atfork` handler counts it). State a thread of another process was using is
/// told by it.
unsigned long sharedprefs_fork_count(void);

/// `getpid()`, asked once per process (a child `fork(2)` made asks again): a journal record
/// names its writer without a system call per write.
int sharedprefs_pid(void);

/// Runs `hook` in each child `fork(2)` makes, once the counts above are up to date (the
/// library's watcher taking over the parent's watches).
void sharedprefs_set_after_fork_in_child(void (*hook)(void));

/// In a forked child: the thread that called `fork(2)` (`pthread_self`), the one thread of the
/// parent's that goes on in the child; 0 in the process that loaded the library.
unsigned long sharedprefs_forking_thread(void);

/// linkat(2) of the file open as `fd` itself (AT_EMPTY_PATH) to `name` in `dirfd`.
int sharedprefs_link_descriptor(int fd, int dirfd, const char *name);

/// Allocates the blocks of the first `length` bytes of `fd` (fallocate(2), mode 0: the size
/// grows to `length`). Returns 0, or -1 with errno set.
int sharedprefs_allocate(int fd, long length);

/// The file-system type (`f_type` of statfs(2), a *_SUPER_MAGIC number) of the file system
/// holding `path`, or -1 with errno set.
static inline long sharedprefs_filesystem_type(const char *path) {
    struct statfs info;
    if (statfs(path, &info) != 0) return -1;
    return (long)info.f_type;
}

/// The file-system type (`f_type` of fstatfs(2)) of the file system holding the open file `fd`,
/// or -1 with errno set.
static inline long sharedprefs_filesystem_type_of(int fd) {
    struct statfs info;
    if (fstatfs(fd, &info) != 0) return -1;
    return (long)info.f_type;
}

/// The generation number of the open file's inode (ioctl(2) FS_IOC_GETVERSION), which changes
/// when an inode number is handed out again; -1 with errno set where the file system has none.
static inline long sharedprefs_generation(int fd) {
    unsigned int generation = 0;
    if (ioctl(fd, FS_IOC_GETVERSION, &generation) != 0) return -1;
    return (long)generation;
}

/// Bytes of the heap in use by malloc (mallinfo2(3) `uordblks`), for prefs-bench's memory row.
static inline size_t sharedprefs_heap_in_use(void) {
    return mallinfo2().uordblks;
}

// ThreadSanitizer's annotations, present only when its runtime is linked (weak: null otherwise).
extern void __tsan_acquire(void *address) __attribute__((weak));
extern void __tsan_release(void *address) __attribute__((weak));

/// Tells ThreadSanitizer, if it is running, that the lock at `address` was just acquired.
static inline void sharedprefs_tsan_acquire(void *address) {
    if (__tsan_acquire) __tsan_acquire(address);
}

/// Tells ThreadSanitizer, if it is running, that the lock at `address` is about to be released.
static inline void sharedprefs_tsan_release(void *address) {
    if (__tsan_release) __tsan_release(address);
}

/// Names the calling thread (prctl(2) PR_SET_NAME: its first 15 bytes), as debuggers, `top -H`
/// and /proc/<pid>/task/<tid>/comm show it.
static inline void sharedprefs_name_thread(const char *name) {
    prctl(PR_SET_NAME, name, 0, 0, 0);
}

/// A non-blocking, close-on-exec eventfd(2) counting as a semaphore (each read takes one), or -1
/// with errno set.
static inline int sharedprefs_eventfd_semaphore(void) {
    return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK | EFD_SEMAPHORE);
}

/// A close-on-exec epoll instance (epoll_create1(2)), or -1 with errno set.
static inline int sharedprefs_epoll_create(void) {
    return epoll_create1(EPOLL_CLOEXEC);
}

/// Adds `fd` to the epoll instance `epfd` (or, with `modify`, arms it again), for reading, once
/// (`EPOLLONESHOT`: disarmed after one wake-up until armed again) when `once` is set; the event's
/// data is `fd`. epoll_ctl(2): 0, or -1 with errno set.
static inline int sharedprefs_epoll_arm(int epfd, int fd, int once, int modify) {
    struct epoll_event event = {.events = EPOLLIN | (once ? EPOLLONESHOT : 0), .data.fd = fd};
    return epoll_ctl(epfd, modify ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd, &event);
}

/// Waits in epoll_wait(2) on `epfd`, without a timeout, for one ready descriptor: the descriptor,
/// or -1 with errno set.
static inline int sharedprefs_epoll_wait_one(int epfd) {
    struct epoll_event event;
    int count = epoll_wait(epfd, &event, 1, -1);
    return count == 1 ? event.data.fd : -1;
}

/// A non-blocking, close-on-exec timerfd_create(2) on CLOCK_MONOTONIC, or -1 with errno set.
static inline int sharedprefs_timerfd(void) {
    return timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
}

/// Makes the timer `fd` expire every `milliseconds`, from `milliseconds` on; 0 disarms it.
/// timerfd_settime(2): 0, or -1 with errno set.
static inline int sharedprefs_timerfd_every(int fd, long milliseconds) {
    struct itimerspec spec = {
        .it_interval = {.tv_sec = milliseconds / 1000, .tv_nsec = (milliseconds % 1000) * 1000000},
        .it_value = {.tv_sec = milliseconds / 1000, .tv_nsec = (milliseconds % 1000) * 1000000},
    };
    return timerfd_settime(fd, 0, &spec, NULL);
}

/// The futex calls on a word several processes share (a `MAP_SHARED` mapping of a file, where the
/// kernel keys the futex by inode and offset): prefs-bench's floor of many observer processes.
/// Waits while `*word` holds `expected`, until a wake or a signal: 0, or -1 with errno set
/// (`EAGAIN`: it held something else already).
static inline long sharedprefs_futex_wait_shared(unsigned *word, unsigned expected) {
    return syscall(SYS_futex, word, FUTEX_WAIT, expected, NULL, NULL, 0);
}
/// Adds 1 to `*word` and wakes every waiter on it, in one call and in the kernel (`FUTEX_WAKE_OP`),
/// so that the caller never touches the word itself: a file truncated under the mapping makes this
/// fail with `EFAULT`, not raise SIGBUS. How many were woken, or -1 with errno set.
static inline long sharedprefs_futex_ring_shared(unsigned *word) {
    int op = FUTEX_OP(FUTEX_OP_ADD, 1, FUTEX_OP_CMP_GE, 0);
    return syscall(SYS_futex, word, FUTEX_WAKE_OP, 0x7fffffff, (void *)0x7fffffff, word, op);
}
/// Waits until one of `count` (at most `FUTEX_WAITV_MAX`) futex words no longer holds its
/// expected value, or is woken: the index of the word woken, or -1 with errno set (`EAGAIN`: one
/// held something else already). The directories' bells (`Bell`) and the waiter's own word.
static inline long sharedprefs_futex_waitv(struct futex_waitv *waiters, unsigned count) {
    return syscall(SYS_futex_waitv, waiters, count, 0, NULL, 0);
}
/// Adds 1 to this process's own futex word and wakes its waiter.
static inline void sharedprefs_futex_ring_private(unsigned *word) {
    __atomic_add_fetch(word, 1, __ATOMIC_RELEASE);
    syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 0x7fffffff, NULL, NULL, 0);
}
/// An open file description lock (`F_OFD_SETLK`, or `F_OFD_SETLKW` when `wait`) of type
/// `F_RDLCK`, `F_WRLCK` or `F_UNLCK` on the byte at `offset`: held until unlocked or until the
/// last descriptor of the description is closed (a killed process's at once). 0, or -1 with errno.
static inline int sharedprefs_byte_lock(int fd, short type, long offset, int wait) {
    struct flock lock = {.l_type = type, .l_whence = SEEK_SET, .l_start = offset, .l_len = 1, .l_pid = 0};
    return fcntl(fd, wait ? 38 /* F_OFD_SETLKW */ : 37 /* F_OFD_SETLK */, &lock);
}
/// Adds 1 << 16 to `*word` and wakes every waiter on it (``sharedprefs_futex_ring_shared``): a
/// bell's upper half counts the times its directory moved or went.
static inline long sharedprefs_futex_ring_shared_moved(unsigned *word) {
    int op = FUTEX_OP(FUTEX_OP_ADD | FUTEX_OP_OPARG_SHIFT, 16, FUTEX_OP_CMP_GE, 0);
    return syscall(SYS_futex, word, FUTEX_WAKE_OP, 0x7fffffff, (void *)0x7fffffff, word, op);
}
/// `*word`, read atomically.
static inline unsigned sharedprefs_atomic_load(unsigned *word) {
    return __atomic_load_n(word, __ATOMIC_ACQUIRE);
}

#endif
