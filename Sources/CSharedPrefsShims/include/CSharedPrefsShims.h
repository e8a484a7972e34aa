#ifndef CSHAREDPREFS_SHIMS_H
#define CSHAREDPREFS_SHIMS_H

// C calls that Glibc's Swift module map leaves out.

#include <sys/eventfd.h>
#include <sys/vfs.h>

/// The file-system type (`f_type` of statfs(2), a *_SUPER_MAGIC number) of the file system
/// holding `path`, or -1 with errno set.
static inline long sharedprefs_filesystem_type(const char *path) {
    struct statfs info;
    if (statfs(path, &info) != 0) return -1;
    return (long)info.f_type;
}

/// A non-blocking, close-on-exec eventfd(2), or -1 with errno set.
static inline int sharedprefs_eventfd(void) {
    return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

#endif
