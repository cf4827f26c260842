/*
 * A power-loss shim for tests: an LD_PRELOAD library that lets a process run normally while it
 * keeps, for every file under one directory (the "disk"), what a power cut would take away:
 * whatever was written since the file's last fsync or fdatasync, and every name created or
 * renamed since its directory's last fsync. After the process is killed (SIGKILL), applying
 * the journals (compat-tests' `power_loss::apply`) rolls the directory back to what a disk
 * would hold after losing its page cache. A plain SIGKILL keeps the page cache; this is the
 * difference.
 *
 *   POWERLOSS_ROOT     the directory to watch (a node's data directory); unset: a no-op
 *   POWERLOSS_JOURNAL  where the journals go: outside ROOT, on the same filesystem (a
 *                            file overwritten by a rename is kept there as a hard link)
 *
 * The model (what is durable when):
 *  - File contents and size: durable up to the last fsync or fdatasync of the file (either
 *    makes data and size durable; through any descriptor of the file). sync_file_range,
 *    sync, syncfs and O_SYNC/O_DSYNC descriptors count for nothing. The journal of a file
 *    (by inode: it follows renames) holds its size at the last sync and the old bytes of
 *    every synced range overwritten or cut off since, written before the change itself, so a
 *    SIGKILL between the two loses nothing. A write racing with an fsync of the same file
 *    counts as after it (a legal outcome: fsync promises only what was written before it).
 *  - Names: a file created (open with O_CREAT), a directory made or a rename is durable once
 *    its directory is fsynced afterwards (both directories for a rename), as POSIX has it;
 *    until then a power loss undoes it (the created name vanishes, the renamed file goes back
 *    and a file it replaced comes back). A created file whose name became durable but that
 *    was never synced is empty. Unlinks and rmdirs are durable at once: a strict filesystem
 *    could bring an unlinked name back until its directory is fsynced, this one never does.
 *  - Files under ROOT only; ROOT itself is the disk and is never undone.
 *
 * Not modelled (the shim warns once if it sees them): mmap of a watched file for writing,
 * O_DIRECT, copy_file_range and sendfile into a watched file, hard links, RENAME_EXCHANGE.
 *
 * Journal directory layout: `ns` (one line per name operation: `C\tpath`, `D\tpath`,
 * `R\tfrom\tto\tkept-or--`, and `S\tdir\tn` for an fsync of `dir` that covers the first `n`
 * lines), `j-<dev>-<ino>` (a file's content journal: "SPLJ", u32 version 1, u64 synced size,
 * u64 logical position of its first record; then records of u64 offset, u64 length and the
 * old bytes; little-endian), `g-<n>` (the file that rename line `n` replaced).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/falloc.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#define FD_MAX (1 << 17)
#define BUCKETS 4096
#define HEADER_BYTES 24
#define RECORD_HEADER_BYTES 16

/* ------------------------------------------------------------------ the real functions */

static int (*real_open)(const char *, int, ...);
static int (*real_openat64)(int, const char *, int, ...);
static int (*real_creat)(const char *, mode_t);
static int (*real_creat64)(const char *, mode_t);
static int (*real_close)(int);
static ssize_t (*real_write)(int, const void *, size_t);
static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
static ssize_t (*real_pwrite64)(int, const void *, size_t, off64_t);
static ssize_t (*real_writev)(int, const struct iovec *, int);
static ssize_t (*real_pwritev)(int, const struct iovec *, int, off_t);
static ssize_t (*real_pwritev64)(int, const struct iovec *, int, off64_t);
static ssize_t (*real_pwritev2)(int, const struct iovec *, int, off_t, int);
static ssize_t (*real_pwritev64v2)(int, const struct iovec *, int, off64_t, int);
static int (*real_ftruncate)(int, off_t);
static int (*real_ftruncate64)(int, off64_t);
static int (*real_truncate)(const char *, off_t);
static int (*real_truncate64)(const char *, off64_t);
static int (*real_fallocate)(int, int, off_t, off_t);
static int (*real_fallocate64)(int, int, off64_t, off64_t);
static int (*real_fsync)(int);
static int (*real_fdatasync)(int);
static int (*real_renameat)(int, const char *, int, const char *);
static int (*real_renameat2)(int, const char *, int, const char *, unsigned int);
static int (*real_unlink)(const char *);
static int (*real_unlinkat)(int, const char *, int);
static int (*real_mkdir)(const char *, mode_t);
static int (*real_mkdirat)(int, const char *, mode_t);
static int (*real_dup)(int);
static int (*real_dup2)(int, int);
static int (*real_dup3)(int, int, int);
static int (*real_fcntl)(int, int, ...);
static int (*real_fcntl64)(int, int, ...);
static void *(*real_mmap)(void *, size_t, int, int, int, off_t);
static void *(*real_mmap64)(void *, size_t, int, int, int, off64_t);

#define RESOLVE(name) real_##name = dlsym(RTLD_NEXT, #name)

/* ------------------------------------------------------------------ state */

/* What the shim knows of an open descriptor of a watched file or directory. */
struct fdent {
    int is_dir;
    int append;
    dev_t dev;
    ino_t ino;
    char *path; /* absolute, normalized */
};

/* What is durable of one watched file (by inode). */
struct inode {
    dev_t dev;
    ino_t ino;
    uint64_t synced_size;
    int has_journal;
    uint64_t base; /* logical position of the journal's first record */
    uint64_t pos;  /* logical position after its last record */
    uint64_t muts; /* changes so far (an fsync that saw none since it began clears all) */
    int inflight;  /* fsyncs under way */
    int known;     /* read from disk since it was last forgotten */
    uint64_t gen;  /* bumped when the inode is forgotten or made afresh (a number reused) */
    uint64_t pending_size; /* the largest size an fsync under way may make durable */
    struct inode *next;
};

static int enabled;
static char root[PATH_MAX];
static size_t root_len;
static char jdir[PATH_MAX];
static int ns_fd = -1;
static uint64_t ns_lines;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct fdent *_Atomic fds[FD_MAX];
static struct inode *inodes[BUCKETS];
static atomic_int warned_mmap, warned_overflow, warned_unsupported;

static void warn_once(atomic_int *flag, const char *what) {
    if (atomic_exchange(flag, 1) == 0) {
        char line[512];
        int n = snprintf(line, sizeof line, "samsa-powerloss: %s (not modelled)\n", what);
        if (n > 0 && real_write)
            (void)!real_write(2, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
    }
}

static void die(const char *what) {
    char line[PATH_MAX + 128];
    int n = snprintf(line, sizeof line, "samsa-powerloss: %s: %s\n", what, strerror(errno));
    if (n > 0 && real_write)
        (void)!real_write(2, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
    abort();
}

static void lock(void) { pthread_mutex_lock(&mu); }
static void unlock(void) { pthread_mutex_unlock(&mu); }

/* ------------------------------------------------------------------ paths */

/* Collapses "//", "." and ".." of an absolute path in place (lexically). */
static void normalize(char *p) {
    char out[PATH_MAX];
    size_t o = 0;
    const char *s = p;
    while (*s) {
        while (*s == '/')
            s++;
        if (!*s)
            break;
        const char *e = s;
        while (*e && *e != '/')
            e++;
        size_t n = (size_t)(e - s);
        if (n == 1 && s[0] == '.') {
        } else if (n == 2 && s[0] == '.' && s[1] == '.') {
            while (o > 0 && out[o - 1] != '/')
                o--;
            if (o > 0)
                o--;
        } else if (o + 1 + n < sizeof out) {
            out[o++] = '/';
            memcpy(out + o, s, n);
            o += n;
        }
        s = e;
    }
    if (o == 0)
        out[o++] = '/';
    out[o] = 0;
    memcpy(p, out, o + 1);
}

/* The absolute path of `path` relative to `dirfd`; 0 if it cannot be known. */
static int absolute(int dirfd, const char *path, char *out) {
    if (!path)
        return 0;
    if (path[0] == '/') {
        if (strlen(path) >= PATH_MAX)
            return 0;
        strcpy(out, path);
    } else {
        char base[PATH_MAX];
        if (dirfd == AT_FDCWD) {
            if (!getcwd(base, sizeof base))
                return 0;
        } else {
            struct fdent *e = (dirfd >= 0 && dirfd < FD_MAX) ? fds[dirfd] : NULL;
            if (e && e->path) {
                strcpy(base, e->path);
            } else {
                char link[64];
                snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
                ssize_t n = readlink(link, base, sizeof base - 1);
                if (n < 0)
                    return 0;
                base[n] = 0;
            }
        }
        if (strlen(base) + 1 + strlen(path) >= PATH_MAX)
            return 0;
        snprintf(out, PATH_MAX, "%s/%s", base, path);
    }
    normalize(out);
    return 1;
}

/* Strictly below ROOT (what the model undoes). Paths with tabs or newlines are not watched
 * (the name journal is tab-separated lines). */
static int below_root(const char *p) {
    return strncmp(p, root, root_len) == 0 && p[root_len] == '/' && !strpbrk(p, "\t\n");
}

/* ROOT or below (what is watched: ROOT's own fsync makes names in it durable). */
static int in_root(const char *p) {
    return strncmp(p, root, root_len) == 0 && (p[root_len] == '/' || p[root_len] == 0) &&
           !strpbrk(p, "\t\n");
}

/* ------------------------------------------------------------------ the name journal */

static uint64_t ns_append(const char *fmt, ...) {
    char line[3 * PATH_MAX + 64];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof line)
        die("name journal line too long");
    if (real_write(ns_fd, line, (size_t)n) != n)
        die("write the name journal");
    return ns_lines++;
}

/* ------------------------------------------------------------------ content journals */

static void journal_path(const struct inode *st, char *out) {
    snprintf(out, PATH_MAX, "%s/j-%lu-%lu", jdir, (unsigned long)st->dev, (unsigned long)st->ino);
}

static void put_u64(unsigned char *b, uint64_t v) {
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_u64(const unsigned char *b) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)b[i] << (8 * i);
    return v;
}

static void make_header(unsigned char *h, uint64_t synced_size, uint64_t base) {
    memcpy(h, "SPLJ", 4);
    h[4] = 1;
    h[5] = h[6] = h[7] = 0;
    put_u64(h + 8, synced_size);
    put_u64(h + 16, base);
}

static int write_all(int fd, const void *buf, size_t n) {
    const char *p = buf;
    while (n > 0) {
        ssize_t w = real_write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Reads a whole journal file; returns its bytes (malloc'd) and length, or NULL. */
static unsigned char *read_journal(const char *path, size_t *len) {
    int fd = real_open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    struct stat s;
    if (fstat(fd, &s) != 0) {
        real_close(fd);
        return NULL;
    }
    unsigned char *b = malloc((size_t)s.st_size + 1);
    size_t got = 0;
    while (b && got < (size_t)s.st_size) {
        ssize_t r = pread(fd, b + got, (size_t)s.st_size - got, (off_t)got);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    real_close(fd);
    *len = got;
    return b;
}

/* The length of the whole records of a journal (a record torn by a SIGKILL is dropped: the
 * change it protected was never made). */
static size_t valid_length(const unsigned char *b, size_t len) {
    size_t at = HEADER_BYTES;
    while (at + RECORD_HEADER_BYTES <= len) {
        uint64_t n = get_u64(b + at + 8);
        if (n > len - at - RECORD_HEADER_BYTES)
            break;
        at += RECORD_HEADER_BYTES + n;
    }
    return at <= len ? at : HEADER_BYTES;
}

static void write_journal_file(const struct inode *st, const unsigned char *records, size_t n) {
    char path[PATH_MAX], tmp[PATH_MAX + 8];
    journal_path(st, path);
    snprintf(tmp, sizeof tmp, "%s.new", path);
    int fd = real_open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        die("create a content journal");
    unsigned char h[HEADER_BYTES];
    make_header(h, st->synced_size, st->base);
    if (write_all(fd, h, sizeof h) || (n && write_all(fd, records, n)))
        die("write a content journal");
    real_close(fd);
    if (real_renameat(AT_FDCWD, tmp, AT_FDCWD, path) != 0)
        die("rename a content journal");
}

static void remove_journal(struct inode *st) {
    char path[PATH_MAX];
    journal_path(st, path);
    real_unlink(path);
    st->has_journal = 0;
}

static struct inode **bucket(dev_t dev, ino_t ino) {
    return &inodes[((uint64_t)ino * 2654435761u + (uint64_t)dev) % BUCKETS];
}

static struct inode *find_inode(dev_t dev, ino_t ino) {
    for (struct inode *st = *bucket(dev, ino); st; st = st->next)
        if (st->dev == dev && st->ino == ino)
            return st;
    return NULL;
}

/* The file's last name went (or its number is reused): its journal goes. The entry stays (an
 * fsync under way may hold it) and is read afresh when the number is met again. */
static void forget_inode(dev_t dev, ino_t ino) {
    struct inode *st = find_inode(dev, ino);
    if (st) {
        if (st->has_journal)
            remove_journal(st);
        st->known = 0;
        st->gen++;
    }
}

/* The durable state of a file first met in this process: its journal if one exists (a
 * previous process changed it since its last sync), else its current size. */
static struct inode *inode_of(dev_t dev, ino_t ino, uint64_t size_now) {
    struct inode *st = find_inode(dev, ino);
    if (st && st->known)
        return st;
    if (!st) {
        st = calloc(1, sizeof *st);
        if (!st)
            die("out of memory");
        st->dev = dev;
        st->ino = ino;
        struct inode **head = bucket(dev, ino);
        st->next = *head;
        *head = st;
    }
    st->known = 1;
    st->synced_size = size_now;
    st->has_journal = 0;
    st->base = st->pos = 0;
    char path[PATH_MAX];
    journal_path(st, path);
    size_t len = 0;
    unsigned char *b = read_journal(path, &len);
    if (b && len >= HEADER_BYTES && memcmp(b, "SPLJ", 4) == 0) {
        size_t valid = valid_length(b, len);
        st->synced_size = get_u64(b + 8);
        st->base = get_u64(b + 16);
        st->pos = st->base + (valid - HEADER_BYTES);
        st->has_journal = 1;
        if (valid != len) {
            int fd = real_open(path, O_WRONLY | O_CLOEXEC);
            if (fd >= 0) {
                real_ftruncate(fd, (off_t)valid);
                real_close(fd);
            }
        }
    }
    free(b);
    return st;
}

/* A new file (created by this open): nothing of it is durable; a stale journal of a freed
 * inode with the same number is dropped. */
static struct inode *fresh_inode(dev_t dev, ino_t ino) {
    forget_inode(dev, ino);
    char path[PATH_MAX];
    struct inode tmp = {.dev = dev, .ino = ino};
    journal_path(&tmp, path);
    real_unlink(path); /* of a number freed while no shim watched */
    struct inode *st = inode_of(dev, ino, 0);
    st->synced_size = 0;
    write_journal_file(st, NULL, 0);
    st->has_journal = 1;
    return st;
}

static void ensure_journal(struct inode *st) {
    if (!st->has_journal) {
        st->base = st->pos;
        write_journal_file(st, NULL, 0);
        st->has_journal = 1;
    }
}

/* Bytes below this may hold synced data that a change must save first. */
static uint64_t durable_limit(const struct inode *st) {
    uint64_t lim = st->synced_size;
    if (st->inflight && st->pending_size > lim)
        lim = st->pending_size;
    return lim;
}

/* Saves the bytes [off, off + len) of the file open as `fd` into its journal. */
static void save_old(struct inode *st, int fd, uint64_t off, uint64_t len) {
    unsigned char *buf = malloc(RECORD_HEADER_BYTES + len);
    if (!buf)
        die("out of memory");
    put_u64(buf, off);
    put_u64(buf + 8, len);
    int rfd = fd, own = 0;
    if (pread(fd, buf, 0, 0) < 0) { /* opened write-only: read through /proc */
        char link[64];
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        rfd = real_open(link, O_RDONLY | O_CLOEXEC);
        if (rfd < 0)
            die("reopen a write-only file to save its old bytes");
        own = 1;
    }
    uint64_t got = 0;
    while (got < len) {
        ssize_t r = pread(rfd, buf + RECORD_HEADER_BYTES + got, len - got, (off_t)(off + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (uint64_t)r;
    }
    if (own)
        real_close(rfd);
    if (got < len) /* the file is shorter than it was: zeros, as an extension would read */
        memset(buf + RECORD_HEADER_BYTES + got, 0, len - got);
    char path[PATH_MAX];
    journal_path(st, path);
    int jfd = real_open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
    if (jfd < 0 || write_all(jfd, buf, RECORD_HEADER_BYTES + len))
        die("append to a content journal");
    real_close(jfd);
    free(buf);
    st->pos += RECORD_HEADER_BYTES + len;
}

static uint64_t min3(uint64_t a, uint64_t b, uint64_t c) {
    uint64_t m = a < b ? a : b;
    return m < c ? m : c;
}

/* Before a change of the file open as `fd` that may touch [off, end) and leaves it `new_size`
 * long (or UINT64_MAX: no shorter): journals what it would destroy. Called locked. */
static void before_change(struct inode *st, int fd, uint64_t off, uint64_t end) {
    struct stat s;
    if (fstat(fd, &s) != 0)
        die("fstat a watched file");
    uint64_t hi = min3(end, durable_limit(st), (uint64_t)s.st_size);
    ensure_journal(st);
    if (off < hi)
        save_old(st, fd, off, hi - off);
    st->muts++;
}

static struct fdent *watched(int fd) {
    if (!enabled || fd < 0 || fd >= FD_MAX)
        return NULL;
    return atomic_load_explicit(&fds[fd], memory_order_acquire);
}

/* The inode state of a watched regular file's descriptor, locked; NULL (unlocked) if it is
 * not one. */
static struct inode *lock_file(int fd, struct fdent **out) {
    if (!watched(fd))
        return NULL;
    lock();
    struct fdent *e = fds[fd];
    if (!e || e->is_dir) {
        unlock();
        return NULL;
    }
    struct stat s;
    if (fstat(fd, &s) != 0)
        die("fstat a watched file");
    *out = e;
    return inode_of(e->dev, e->ino, (uint64_t)s.st_size);
}

static void set_fd(int fd, struct fdent *e) {
    if (fd < 0)
        return;
    if (fd >= FD_MAX) {
        if (e) {
            warn_once(&warned_overflow, "a descriptor beyond the shim's table");
            free(e->path);
            free(e);
        }
        return;
    }
    struct fdent *old = atomic_exchange(&fds[fd], e);
    if (old) {
        free(old->path);
        free(old);
    }
}

static struct fdent *copy_fdent(const struct fdent *e) {
    struct fdent *c = malloc(sizeof *c);
    if (!c)
        die("out of memory");
    *c = *e;
    c->path = e->path ? strdup(e->path) : NULL;
    return c;
}

/* ------------------------------------------------------------------ setup */

__attribute__((constructor)) static void init(void) {
    RESOLVE(open);
    RESOLVE(openat64);
    RESOLVE(creat);
    RESOLVE(creat64);
    RESOLVE(close);
    RESOLVE(write);
    RESOLVE(pwrite);
    RESOLVE(pwrite64);
    RESOLVE(writev);
    RESOLVE(pwritev);
    RESOLVE(pwritev64);
    RESOLVE(pwritev2);
    RESOLVE(pwritev64v2);
    RESOLVE(ftruncate);
    RESOLVE(ftruncate64);
    RESOLVE(truncate);
    RESOLVE(truncate64);
    RESOLVE(fallocate);
    RESOLVE(fallocate64);
    RESOLVE(fsync);
    RESOLVE(fdatasync);
    RESOLVE(renameat);
    RESOLVE(renameat2);
    RESOLVE(unlink);
    RESOLVE(unlinkat);
    RESOLVE(mkdir);
    RESOLVE(mkdirat);
    RESOLVE(dup);
    RESOLVE(dup2);
    RESOLVE(dup3);
    RESOLVE(fcntl);
    RESOLVE(fcntl64);
    RESOLVE(mmap);
    RESOLVE(mmap64);
    const char *r = getenv("POWERLOSS_ROOT");
    const char *j = getenv("POWERLOSS_JOURNAL");
    if (!r || !*r || !j || !*j)
        return;
    if (!absolute(AT_FDCWD, r, root) || !absolute(AT_FDCWD, j, jdir))
        die("POWERLOSS_ROOT or POWERLOSS_JOURNAL");
    root_len = strlen(root);
    if (strlen(jdir) > PATH_MAX / 2 || root_len > PATH_MAX / 2) {
        errno = ENAMETOOLONG;
        die("POWERLOSS_ROOT or POWERLOSS_JOURNAL");
    }
    if (in_root(jdir)) {
        errno = EINVAL;
        die("POWERLOSS_JOURNAL must be outside POWERLOSS_ROOT");
    }
    if (real_mkdir(jdir, 0700) != 0 && errno != EEXIST)
        die("create POWERLOSS_JOURNAL");
    char ns[PATH_MAX + 8];
    snprintf(ns, sizeof ns, "%s/ns", jdir);
    ns_fd = real_open(ns, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (ns_fd < 0)
        die("open the name journal");
    /* Lines a previous process wrote count too (their durability is decided at the power
     * loss); a line torn by its SIGKILL is ended so that ours start on a line of their own. */
    char buf[65536];
    ssize_t n;
    off_t at = 0;
    char last = '\n';
    while ((n = pread(ns_fd, buf, sizeof buf, at)) > 0) {
        for (ssize_t i = 0; i < n; i++)
            ns_lines += buf[i] == '\n';
        last = buf[n - 1];
        at += n;
    }
    if (last != '\n') {
        if (real_write(ns_fd, "\n", 1) != 1)
            die("end a torn name journal line");
        ns_lines++;
    }
    enabled = 1;
}

/* ------------------------------------------------------------------ opening and closing */

struct pending_open {
    int watched;
    int existed;
    char path[PATH_MAX];
};

/* Before an open: O_TRUNC of an existing file journals its synced bytes. Leaves the lock held
 * when the path is watched (released by after_open). */
static void before_open(int dirfd, const char *path, int flags, struct pending_open *p) {
    p->watched = 0;
    if (!enabled || !absolute(dirfd, path, p->path) || !in_root(p->path))
        return;
    p->watched = 1;
    lock();
    struct stat s;
    p->existed = lstat(p->path, &s) == 0;
    if (p->existed && S_ISREG(s.st_mode) && (flags & O_TRUNC) && (flags & O_ACCMODE) != O_RDONLY &&
        s.st_size > 0) {
        struct inode *st = inode_of(s.st_dev, s.st_ino, (uint64_t)s.st_size);
        int fd = real_open(p->path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            die("open a file about to be truncated");
        before_change(st, fd, 0, UINT64_MAX);
        real_close(fd);
    }
}

static int after_open(struct pending_open *p, int fd, int flags) {
    if (!p->watched)
        return fd;
    int saved = errno;
    if (fd >= 0) {
        struct stat s;
        if (fstat(fd, &s) == 0 && (S_ISREG(s.st_mode) || S_ISDIR(s.st_mode))) {
            struct fdent *e = calloc(1, sizeof *e);
            if (!e)
                die("out of memory");
            e->is_dir = S_ISDIR(s.st_mode);
            e->append = (flags & O_APPEND) != 0;
            e->dev = s.st_dev;
            e->ino = s.st_ino;
            e->path = strdup(p->path);
            if (flags & (O_DIRECT | O_SYNC | O_DSYNC))
                warn_once(&warned_unsupported, "O_DIRECT, O_SYNC or O_DSYNC on a watched file");
            set_fd(fd, e);
            if (!p->existed && S_ISREG(s.st_mode) && below_root(p->path)) {
                fresh_inode(s.st_dev, s.st_ino);
                ns_append("C\t%s\n", p->path);
            }
        }
    }
    unlock();
    errno = saved;
    return fd;
}

static mode_t mode_arg(int flags, va_list ap) {
    return (flags & (O_CREAT | __O_TMPFILE)) ? (mode_t)va_arg(ap, int) : 0;
}

/* The mode argument of a variadic open, as `mode`. */
#define MODE_FROM_VARARGS(flags)                                                                   \
    mode_t mode;                                                                                   \
    do {                                                                                           \
        va_list ap;                                                                                \
        va_start(ap, flags);                                                                       \
        mode = mode_arg(flags, ap);                                                                \
        va_end(ap);                                                                                \
    } while (0)

/* Every open goes through openat64: on Linux's 64-bit ABIs open, open64 and openat are it with
 * AT_FDCWD or without O_LARGEFILE, which changes nothing there. */
static int open_watched(int dirfd, const char *path, int flags, mode_t mode) {
    struct pending_open p;
    before_open(dirfd, path, flags, &p);
    return after_open(&p, real_openat64(dirfd, path, flags, mode), flags);
}

int open(const char *path, int flags, ...) {
    MODE_FROM_VARARGS(flags);
    return open_watched(AT_FDCWD, path, flags, mode);
}

int open64(const char *path, int flags, ...) {
    MODE_FROM_VARARGS(flags);
    return open_watched(AT_FDCWD, path, flags, mode);
}

int openat(int dirfd, const char *path, int flags, ...) {
    MODE_FROM_VARARGS(flags);
    return open_watched(dirfd, path, flags, mode);
}

int openat64(int dirfd, const char *path, int flags, ...) {
    MODE_FROM_VARARGS(flags);
    return open_watched(dirfd, path, flags, mode);
}

int creat(const char *path, mode_t mode) {
    return open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
}

int creat64(const char *path, mode_t mode) {
    return open64(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
}

int close(int fd) {
    if (watched(fd)) {
        lock();
        set_fd(fd, NULL);
        unlock();
    }
    return real_close(fd);
}

static int after_dup(int old, int fd) {
    if (fd >= 0 && enabled && fd != old) {
        int saved = errno;
        lock();
        struct fdent *e = (old >= 0 && old < FD_MAX) ? fds[old] : NULL;
        set_fd(fd, e ? copy_fdent(e) : NULL);
        unlock();
        errno = saved;
    }
    return fd;
}

int dup(int old) { return after_dup(old, real_dup(old)); }
int dup2(int old, int fd) { return after_dup(old, real_dup2(old, fd)); }
int dup3(int old, int fd, int flags) { return after_dup(old, real_dup3(old, fd, flags)); }

static int fcntl_with(int (*f)(int, int, ...), int fd, int cmd, void *arg) {
    int r = f(fd, cmd, arg);
    if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC)
        return after_dup(fd, r);
    if (cmd == F_SETFL && r == 0 && watched(fd)) {
        lock();
        if (fds[fd])
            fds[fd]->append = ((long)arg & O_APPEND) != 0;
        unlock();
    }
    return r;
}

int fcntl(int fd, int cmd, ...) {
    va_list ap;
    va_start(ap, cmd);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    return fcntl_with(real_fcntl, fd, cmd, arg);
}

int fcntl64(int fd, int cmd, ...) {
    va_list ap;
    va_start(ap, cmd);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    return fcntl_with(real_fcntl64 ? real_fcntl64 : real_fcntl, fd, cmd, arg);
}

/* ------------------------------------------------------------------ writing */

static uint64_t position(int fd, const struct fdent *e) {
    if (e->append) {
        struct stat s;
        return fstat(fd, &s) == 0 ? (uint64_t)s.st_size : 0;
    }
    off_t at = lseek(fd, 0, SEEK_CUR);
    return at < 0 ? 0 : (uint64_t)at;
}

static uint64_t iov_bytes(const struct iovec *iov, int n) {
    uint64_t total = 0;
    for (int i = 0; i < n; i++)
        total += iov[i].iov_len;
    return total;
}

ssize_t write(int fd, const void *buf, size_t n) {
    struct fdent *e;
    struct inode *st = lock_file(fd, &e);
    if (!st)
        return real_write(fd, buf, n);
    uint64_t at = position(fd, e);
    before_change(st, fd, at, at + n);
    ssize_t r = real_write(fd, buf, n);
    int saved = errno;
    unlock();
    errno = saved;
    return r;
}

#define PWRITE_LIKE(call, fd, off, len)                                                            \
    do {                                                                                           \
        struct fdent *e;                                                                           \
        struct inode *st = lock_file(fd, &e);                                                      \
        if (!st)                                                                                   \
            return call;                                                                           \
        before_change(st, fd, (uint64_t)(off), (uint64_t)(off) + (len));                           \
        ssize_t r = call;                                                                          \
        int saved = errno;                                                                         \
        unlock();                                                                                  \
        errno = saved;                                                                             \
        return r;                                                                                  \
    } while (0)

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off) {
    PWRITE_LIKE(real_pwrite(fd, buf, n, off), fd, off, n);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off64_t off) {
    PWRITE_LIKE(real_pwrite64(fd, buf, n, off), fd, off, n);
}

ssize_t writev(int fd, const struct iovec *iov, int cnt) {
    struct fdent *e;
    struct inode *st = lock_file(fd, &e);
    if (!st)
        return real_writev(fd, iov, cnt);
    uint64_t at = position(fd, e);
    before_change(st, fd, at, at + iov_bytes(iov, cnt));
    ssize_t r = real_writev(fd, iov, cnt);
    int saved = errno;
    unlock();
    errno = saved;
    return r;
}

ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off) {
    PWRITE_LIKE(real_pwritev(fd, iov, cnt, off), fd, off, iov_bytes(iov, cnt));
}

ssize_t pwritev64(int fd, const struct iovec *iov, int cnt, off64_t off) {
    PWRITE_LIKE(real_pwritev64(fd, iov, cnt, off), fd, off, iov_bytes(iov, cnt));
}

/* pwritev2 with offset -1 writes at the file position. */
ssize_t pwritev2(int fd, const struct iovec *iov, int cnt, off_t off, int flags) {
    struct fdent *e;
    struct inode *st = lock_file(fd, &e);
    if (!st)
        return real_pwritev2(fd, iov, cnt, off, flags);
    uint64_t at = off < 0 ? position(fd, e) : (uint64_t)off;
    before_change(st, fd, at, at + iov_bytes(iov, cnt));
    ssize_t r = real_pwritev2(fd, iov, cnt, off, flags);
    int saved = errno;
    unlock();
    errno = saved;
    return r;
}

ssize_t pwritev64v2(int fd, const struct iovec *iov, int cnt, off64_t off, int flags) {
    return pwritev2(fd, iov, cnt, (off_t)off, flags);
}

static int truncate_fd(int fd, uint64_t len, int (*call)(int, off64_t)) {
    struct fdent *e;
    struct inode *st = lock_file(fd, &e);
    if (!st)
        return call(fd, (off64_t)len);
    before_change(st, fd, len, UINT64_MAX);
    int r = call(fd, (off64_t)len);
    int saved = errno;
    unlock();
    errno = saved;
    return r;
}

static int call_ftruncate64(int fd, off64_t len) { return real_ftruncate64(fd, len); }
static int call_ftruncate(int fd, off64_t len) { return real_ftruncate(fd, (off_t)len); }

int ftruncate(int fd, off_t len) { return truncate_fd(fd, (uint64_t)len, call_ftruncate); }
int ftruncate64(int fd, off64_t len) { return truncate_fd(fd, (uint64_t)len, call_ftruncate64); }

static int truncate_path(const char *path, uint64_t len) {
    char abs[PATH_MAX];
    if (enabled && absolute(AT_FDCWD, path, abs) && in_root(abs)) {
        int fd = open(path, O_WRONLY | O_CLOEXEC); /* watched: ours */
        if (fd < 0)
            return -1;
        int r = ftruncate64(fd, (off64_t)len);
        int saved = errno;
        close(fd);
        errno = saved;
        return r;
    }
    return real_truncate64(path, (off64_t)len);
}

int truncate(const char *path, off_t len) { return truncate_path(path, (uint64_t)len); }
int truncate64(const char *path, off64_t len) { return truncate_path(path, (uint64_t)len); }

static int allocate(int fd, int mode, uint64_t off, uint64_t len, int is64) {
    int destroys = mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE | FALLOC_FL_COLLAPSE_RANGE |
                           FALLOC_FL_INSERT_RANGE);
    struct fdent *e;
    struct inode *st = (destroys || !(mode & FALLOC_FL_KEEP_SIZE)) ? lock_file(fd, &e) : NULL;
    if (!st)
        return is64 ? real_fallocate64(fd, mode, (off64_t)off, (off64_t)len)
                    : real_fallocate(fd, mode, (off_t)off, (off_t)len);
    /* Collapsing or inserting shifts everything after `off`. */
    uint64_t end = mode & (FALLOC_FL_COLLAPSE_RANGE | FALLOC_FL_INSERT_RANGE) ? UINT64_MAX
                   : destroys                                               ? off + len
                                                                            : off;
    before_change(st, fd, off, end);
    int r = is64 ? real_fallocate64(fd, mode, (off64_t)off, (off64_t)len)
                 : real_fallocate(fd, mode, (off_t)off, (off_t)len);
    int saved = errno;
    unlock();
    errno = saved;
    return r;
}

int fallocate(int fd, int mode, off_t off, off_t len) {
    return allocate(fd, mode, (uint64_t)off, (uint64_t)len, 0);
}

int fallocate64(int fd, int mode, off64_t off, off64_t len) {
    return allocate(fd, mode, (uint64_t)off, (uint64_t)len, 1);
}

static void *mapping(void *addr, size_t len, int prot, int flags, int fd) {
    if ((prot & PROT_WRITE) && (flags & MAP_SHARED) && watched(fd))
        warn_once(&warned_mmap, "a watched file mapped for writing");
    (void)addr;
    (void)len;
    return NULL;
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
    mapping(addr, len, prot, flags, fd);
    return real_mmap(addr, len, prot, flags, fd, off);
}

void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off64_t off) {
    mapping(addr, len, prot, flags, fd);
    return real_mmap64(addr, len, prot, flags, fd, off);
}

/* ------------------------------------------------------------------ syncing */

/* Keeps the records of a file's journal from logical position `from` on, under a header with
 * the new synced size. */
static void trim_journal(struct inode *st, uint64_t from) {
    char path[PATH_MAX];
    journal_path(st, path);
    size_t len = 0;
    unsigned char *b = read_journal(path, &len);
    if (!b)
        die("read a content journal");
    size_t valid = valid_length(b, len);
    size_t skip = HEADER_BYTES + (size_t)(from - st->base);
    if (skip > valid)
        skip = valid;
    st->base = from;
    write_journal_file(st, b + skip, valid - skip);
    free(b);
}

static int sync_with(int fd, int (*call)(int)) {
    if (!enabled)
        return call(fd);
    struct fdent *e = watched(fd);
    struct fdent found = {0};
    char path[PATH_MAX];
    if (!e) {
        /* A descriptor the shim did not see opened (inherited, or duplicated another way). */
        struct stat s;
        char link[64];
        if (fstat(fd, &s) != 0 || !(S_ISREG(s.st_mode) || S_ISDIR(s.st_mode)))
            return call(fd);
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        ssize_t n = readlink(link, path, sizeof path - 1);
        if (n < 0)
            return call(fd);
        path[n] = 0;
        if (!in_root(path))
            return call(fd);
        found.is_dir = S_ISDIR(s.st_mode);
        found.dev = s.st_dev;
        found.ino = s.st_ino;
        found.path = path;
        e = &found;
    }
    lock();
    if (e != &found) { /* copy what is needed: the entry may go with a concurrent close */
        e = fds[fd];
        if (!e) {
            unlock();
            return call(fd);
        }
        found = *e;
        snprintf(path, sizeof path, "%s", e->path ? e->path : "");
        found.path = path;
        e = &found;
    }
    if (e->is_dir) {
        uint64_t covered = ns_lines;
        unlock();
        int r = call(fd);
        if (r == 0) {
            int saved = errno;
            lock();
            ns_append("S\t%s\t%lu\n", e->path, (unsigned long)covered);
            unlock();
            errno = saved;
        }
        return r;
    }
    struct stat s;
    if (fstat(fd, &s) != 0)
        die("fstat a watched file");
    struct inode *st = inode_of(e->dev, e->ino, (uint64_t)s.st_size);
    if (!st->has_journal) {
        unlock();
        return call(fd);
    }
    uint64_t snap_size = (uint64_t)s.st_size, snap_pos = st->pos, snap_muts = st->muts;
    uint64_t snap_gen = st->gen;
    st->inflight++;
    if (snap_size > st->pending_size)
        st->pending_size = snap_size;
    unlock();
    int r = call(fd);
    int saved = errno;
    lock();
    st->inflight--;
    if (r == 0 && st->gen == snap_gen && st->has_journal && snap_pos >= st->base) {
        st->synced_size = snap_size;
        if (st->muts == snap_muts) {
            st->base = st->pos;
            remove_journal(st);
        } else {
            trim_journal(st, snap_pos);
        }
    }
    if (!st->inflight)
        st->pending_size = 0;
    unlock();
    errno = saved;
    return r;
}

int fsync(int fd) { return sync_with(fd, real_fsync); }
int fdatasync(int fd) { return sync_with(fd, real_fdatasync); }

/* ------------------------------------------------------------------ names */

static int call_rename(int olddir, const char *old, int newdir, const char *new, unsigned flags) {
    if (flags == 0)
        return real_renameat(olddir, old, newdir, new);
    return real_renameat2(olddir, old, newdir, new, flags);
}

int renameat2(int olddir, const char *old, int newdir, const char *new, unsigned int flags) {
    char from[PATH_MAX], to[PATH_MAX];
    if (!enabled || !absolute(olddir, old, from) || !absolute(newdir, new, to) ||
        !(below_root(from) || below_root(to)))
        return call_rename(olddir, old, newdir, new, flags);
    if (flags & RENAME_EXCHANGE) {
        warn_once(&warned_unsupported, "RENAME_EXCHANGE of a watched file");
        return call_rename(olddir, old, newdir, new, flags);
    }
    lock();
    /* The file this rename replaces is kept, for the undo to bring it back. */
    char kept[PATH_MAX + 32] = "-";
    struct stat s;
    if (lstat(to, &s) == 0 && S_ISREG(s.st_mode) && below_root(to)) {
        snprintf(kept, sizeof kept, "%s/g-%lu", jdir, (unsigned long)ns_lines);
        if (link(to, kept) != 0)
            snprintf(kept, sizeof kept, "-");
    }
    int r = call_rename(olddir, old, newdir, new, flags);
    int saved = errno;
    if (r == 0)
        ns_append("R\t%s\t%s\t%s\n", from, to, kept);
    else if (kept[0] != '-')
        real_unlink(kept);
    unlock();
    errno = saved;
    return r;
}

int renameat(int olddir, const char *old, int newdir, const char *new) {
    return renameat2(olddir, old, newdir, new, 0);
}

int rename(const char *old, const char *new) { return renameat2(AT_FDCWD, old, AT_FDCWD, new, 0); }

/* Unlinks are durable at once; the journal of a file whose last name went goes too. */
static int unlink_with(int dirfd, const char *path, int flags) {
    char abs[PATH_MAX];
    struct stat s;
    if (!enabled || (flags & AT_REMOVEDIR) || !absolute(dirfd, path, abs) || !below_root(abs))
        return real_unlinkat(dirfd, path, flags);
    lock();
    int known = lstat(abs, &s) == 0 && S_ISREG(s.st_mode) && s.st_nlink == 1;
    int r = real_unlinkat(dirfd, path, flags);
    int saved = errno;
    if (r == 0 && known)
        forget_inode(s.st_dev, s.st_ino);
    unlock();
    errno = saved;
    return r;
}

int unlinkat(int dirfd, const char *path, int flags) { return unlink_with(dirfd, path, flags); }
int unlink(const char *path) { return unlink_with(AT_FDCWD, path, 0); }

static int made_dir(int dirfd, const char *path, int r) {
    char abs[PATH_MAX];
    if (r == 0 && enabled && absolute(dirfd, path, abs) && below_root(abs)) {
        int saved = errno;
        lock();
        ns_append("D\t%s\n", abs);
        unlock();
        errno = saved;
    }
    return r;
}

int mkdir(const char *path, mode_t mode) { return made_dir(AT_FDCWD, path, real_mkdir(path, mode)); }

int mkdirat(int dirfd, const char *path, mode_t mode) {
    return made_dir(dirfd, path, real_mkdirat(dirfd, path, mode));
}

/* A fork while another thread holds the lock would leave the child's lock held forever. */
static void atfork_prepare(void) { lock(); }
static void atfork_release(void) { unlock(); }

__attribute__((constructor)) static void init_fork(void) {
    pthread_atfork(atfork_prepare, atfork_release, atfork_release);
}
