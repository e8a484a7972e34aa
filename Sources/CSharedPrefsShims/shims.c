// The calls that glibc declares only under _GNU_SOURCE; the rest is inline in
// include/CSharedPrefsShims.h.
#define _GNU_SOURCE
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include "CSharedPrefsShims.h"

int sharedprefs_link_descriptor(int fd, int dirfd, const char *name) {
    return linkat(fd, "", dirfd, name, AT_EMPTY_PATH);
}

int sharedprefs_allocate(int fd, long length) {
    return fallocate(fd, 0, 0, length);
}

void *sharedprefs_memmem(const void *haystack, long haystackLength, const void *needle, long needleLength) {
    return memmem(haystack, haystackLength, needle, needleLength);
}
