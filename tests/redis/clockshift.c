/*
 * A wall clock a test can step, for a redis-server it starts (loaded with
 * LD_PRELOAD). gettimeofday, time, and clock_gettime of the realtime clocks
 * answer the real time plus the signed milliseconds written, as decimal
 * text, in the file RELAYSTORE_CLOCK_OFFSET names. The monotonic clocks are
 * left alone, as a host's are when its wall clock is stepped. The file is
 * read on every call, so a test steps the clock by replacing the file.
 *
 * Nothing here allocates or looks a symbol up: the real clock is the
 * system call itself. (A shim that resolves the real functions at its first
 * call recurses when jemalloc, starting inside redis-server, reads the
 * clock before that call returned.)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define NS_PER_S 1000000000LL

/* The offset in nanoseconds: 0 without a file or with one that holds no
 * number. errno is left as the caller had it. */
static long long offset_ns(void) {
    const char *path = getenv("RELAYSTORE_CLOCK_OFFSET");
    char text[32];
    long long ms;
    ssize_t n;
    int fd;
    int saved = errno;
    if (path == NULL) {
        return 0;
    }
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        errno = saved;
        return 0;
    }
    n = read(fd, text, sizeof text - 1);
    close(fd);
    errno = saved;
    if (n <= 0) {
        return 0;
    }
    text[n] = '\0';
    ms = strtoll(text, NULL, 10);
    errno = saved;
    return ms * 1000000LL;
}

static int real_now(struct timespec *ts) {
    return (int)syscall(SYS_clock_gettime, CLOCK_REALTIME, ts);
}

static void shift(struct timespec *ts, long long by) {
    long long ns = (long long)ts->tv_sec * NS_PER_S + ts->tv_nsec + by;
    ts->tv_sec = (time_t)(ns / NS_PER_S);
    ts->tv_nsec = (long)(ns % NS_PER_S);
}

int clock_gettime(clockid_t clock, struct timespec *ts) {
    int r = (int)syscall(SYS_clock_gettime, clock, ts);
    if (r == 0 && (clock == CLOCK_REALTIME || clock == CLOCK_REALTIME_COARSE)) {
        shift(ts, offset_ns());
    }
    return r;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
    struct timespec ts;
    if (real_now(&ts) != 0) {
        return -1;
    }
    shift(&ts, offset_ns());
    /* glibc declares `tv` non-null. */
    tv->tv_sec = ts.tv_sec;
    tv->tv_usec = ts.tv_nsec / 1000;
    if (tz != NULL) {
        memset(tz, 0, 2 * sizeof(int));
    }
    return 0;
}

time_t time(time_t *out) {
    struct timespec ts;
    if (real_now(&ts) != 0) {
        return (time_t)-1;
    }
    shift(&ts, offset_ns());
    if (out != NULL) {
        *out = ts.tv_sec;
    }
    return ts.tv_sec;
}
