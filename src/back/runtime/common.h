/* ==== tpace runtime, common part (embedded by the translator; same for every program) ====
 * Run-time parameters from the environment, the chunk arithmetic of the
 * out-of-core schedules, the timing report, and the array dump used by
 * `tpace run` to compare against the sequential program.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TPACE_MAX(a, b) ((a) > (b) ? (a) : (b))
#define TPACE_MIN(a, b) ((a) < (b) ? (a) : (b))

/* Schedules. naive: every step, every chunk goes to the device and back.
 * mm: a chunk plus ghost planes goes in, k steps run on a shrinking window,
 * the chunk's own planes come back (tpace paper, Fig. 4). */
enum tpace_schedule { TPACE_NAIVE = 0, TPACE_MM = 1 };

/* How a listed array moves between host and device. */
enum tpace_transfer {
    TPACE_UPDOWN = 0,     /* read and written: in and out every block of k steps */
    TPACE_UP = 1,         /* only read: in every block */
    TPACE_LAST_BLOCK = 2, /* pure temporary: moved only in the last block, for its final values */
    TPACE_UNUSED = 3      /* listed but never touched by a sweep */
};

/* The out-of-core plan: the grid is cut along its outermost dimension. */
typedef struct tpace_plan {
    const char *where;  /* file:line:col of the time loop, for messages */
    long lo, n;         /* the cut axis covers indices [lo, lo + n) */
    size_t plane;       /* elements per plane (product of the inner extents) */
    long reach_lo;      /* planes one time step reads below a computed plane */
    long reach_hi;      /* ... and above */
    long steps;         /* time steps of the loop */
    int schedule;       /* enum tpace_schedule */
    int k;              /* time steps per transfer (1 for naive) */
    long b;             /* chunk width in planes */
    int streams;        /* async queues requested */
    long nchunks;       /* ceil(n / b) */
    int slots;          /* chunk buffers in flight: min(streams, nchunks) */
    double seconds;     /* wall time of the pipeline */
} tpace_plan;

static inline void tpace_fail(const tpace_plan *p, const char *what)
{
    fprintf(stderr, "tpace: %s: %s\n", p && p->where ? p->where : "runtime", what);
    exit(2);
}

/* A whole number from the environment, or `fallback` when unset. */
static inline long tpace_env_long(const char *name, long fallback, long min, long max)
{
    const char *text = getenv(name);
    if (text == NULL || *text == '\0')
        return fallback;
    errno = 0;
    char *end = NULL;
    long v = strtol(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || v < min || v > max) {
        fprintf(stderr, "tpace: %s=%s is not a whole number from %ld to %ld\n", name, text, min, max);
        exit(2);
    }
    return v;
}

static inline int tpace_env_schedule(int fallback)
{
    const char *text = getenv("TPACE_SCHEDULE");
    if (text == NULL || *text == '\0')
        return fallback;
    if (strcmp(text, "naive") == 0)
        return TPACE_NAIVE;
    if (strcmp(text, "mm") == 0)
        return TPACE_MM;
    fprintf(stderr, "tpace: TPACE_SCHEDULE=%s is not a schedule this program has (naive, mm)\n", text);
    exit(2);
}

static inline const char *tpace_schedule_name(int s)
{
    return s == TPACE_NAIVE ? "naive" : "mm";
}

/* Fill a plan from the grid, the program's defaults and TPACE_* overrides. */
static inline void tpace_plan_init(tpace_plan *p, const char *where, long lo, long n, size_t plane,
                            long reach_lo, long reach_hi, long steps,
                            int default_k, long default_chunks, int default_streams)
{
    memset(p, 0, sizeof *p);
    p->where = where;
    p->lo = lo;
    p->n = n;
    p->plane = plane;
    p->reach_lo = reach_lo;
    p->reach_hi = reach_hi;
    p->steps = steps > 0 ? steps : 0;
    if (n < 1)
        tpace_fail(p, "the cut dimension of the grid is empty (size clause extent < 1)");
    p->schedule = tpace_env_schedule(TPACE_MM);
    long k = tpace_env_long("TPACE_K", default_k, 1, 1L << 20);
    long b_default = (n + default_chunks - 1) / default_chunks;
    p->b = tpace_env_long("TPACE_CHUNK", b_default, 1, 1L << 40);
    p->streams = (int)tpace_env_long("TPACE_STREAMS", default_streams, 1, 64);
    if (p->schedule == TPACE_NAIVE)
        k = 1;
    /* k beyond the step count buys nothing but memory. */
    if (k > p->steps && p->steps > 0)
        k = p->steps;
    p->k = (int)k;
    if (p->b > n)
        p->b = n;
    p->nchunks = (n + p->b - 1) / p->b;
    p->slots = (int)TPACE_MIN((long)p->streams, p->nchunks);
}

/* Steps in the block that starts at step t (the last block may be short). */
static inline int tpace_block_steps(const tpace_plan *p, long t)
{
    return (int)TPACE_MIN((long)p->k, p->steps - t);
}

/* Planes chunk c owns: [tpace_own_lo, tpace_own_hi). */
static inline long tpace_own_lo(const tpace_plan *p, long c) { return p->lo + c * p->b; }
static inline long tpace_own_hi(const tpace_plan *p, long c) { return TPACE_MIN(p->lo + (c + 1) * p->b, p->lo + p->n); }

/* Index of the plane at the start of chunk c's device buffer for a block of kb steps. */
static inline long tpace_base(const tpace_plan *p, long c, int kb) { return tpace_own_lo(p, c) - p->reach_lo * kb; }

/* Planes chunk c needs on the device for kb steps: its own plus kb steps of halo. */
static inline long tpace_win_lo(const tpace_plan *p, long c, int kb) { return TPACE_MAX(tpace_base(p, c, kb), p->lo); }
static inline long tpace_win_hi(const tpace_plan *p, long c, int kb) { return TPACE_MIN(tpace_own_hi(p, c) + p->reach_hi * kb, p->lo + p->n); }

/* Planes buffer holds: the widest window over any block. */
static inline long tpace_buffer_planes(const tpace_plan *p) { return p->b + (p->reach_lo + p->reach_hi) * p->k; }

/* Planes a sweep computes at step i (0-based) of a block of kb steps: the window
 * shrinks by one step's reach per step, and a sweep followed by others in the same
 * step computes extra_lo / extra_hi more planes, which those later sweeps read. */
static inline void tpace_sweep_window(const tpace_plan *p, long c, int kb, int i, long extra_lo, long extra_hi,
                               long *from, long *to)
{
    long left = (long)(kb - 1 - i);
    *from = TPACE_MAX(tpace_own_lo(p, c) - (p->reach_lo * left + extra_lo), tpace_win_lo(p, c, kb));
    *to = TPACE_MIN(tpace_own_hi(p, c) + (p->reach_hi * left + extra_hi), tpace_win_hi(p, c, kb));
}

static inline double tpace_now(void)
{
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* One line on stderr that people read and `tpace run` parses. */
static inline void tpace_report(const tpace_plan *p)
{
    double points = (double)p->n * (double)p->plane * (double)p->steps;
    double glups = p->seconds > 0 ? points / p->seconds * 1e-9 : 0.0;
    fprintf(stderr,
            "tpace: %s: schedule=%s k=%d b=%ld streams=%d chunks=%ld steps=%ld points=%.0f seconds=%.6f glups=%.3f\n",
            p->where, tpace_schedule_name(p->schedule), p->k, p->b, p->streams, p->nchunks, p->steps,
            points, p->seconds, glups);
}

/* Append one array to the file named by TPACE_DUMP (nothing when unset):
 * a text line "name elem_bytes rank lo n lo n ..." and the raw elements. */
static inline void tpace_dump(const char *name, const void *data, size_t elem, int rank,
                              const long *lo, const long *n)
{
    const char *path = getenv("TPACE_DUMP");
    if (path == NULL || *path == '\0')
        return;
    FILE *f = fopen(path, "ab");
    if (f == NULL) {
        fprintf(stderr, "tpace: cannot open TPACE_DUMP file %s: %s\n", path, strerror(errno));
        exit(2);
    }
    size_t count = 1;
    fprintf(f, "%s %zu %d", name, elem, rank);
    for (int d = 0; d < rank; d++) {
        fprintf(f, " %ld %ld", lo[d], n[d]);
        count *= (size_t)n[d];
    }
    fputc('\n', f);
    if (fwrite(data, elem, count, f) != count || fclose(f) != 0) {
        fprintf(stderr, "tpace: cannot write TPACE_DUMP file %s\n", path);
        exit(2);
    }
}
/* ==== end of tpace runtime, common part ==== */
