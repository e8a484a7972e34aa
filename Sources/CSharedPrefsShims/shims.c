// The calls that glibc declares only under _GNU_SOURCE; the rest is inline in
// include/CSharedPrefsShims.h.
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>
#include "CSharedPrefsShims.h"

int sharedprefs_link_descriptor(int fd, int dirfd, const char *name) {
    return linkat(fd, "", dirfd, name, AT_EMPTY_PATH);
}

int sharedprefs_preallocate(int fd, long length) {
    return fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, length);
}

void *sharedprefs_memmem(const void *haystack, long haystackLength, const void *needle, long needleLength) {
    return memmem(haystack, haystackLength, needle, needleLength);
}

int sharedprefs_run_when_idle(void) {
    struct sched_param parameters = { 0 };
    return pthread_setschedparam(pthread_self(), SCHED_IDLE, &parameters);
}
