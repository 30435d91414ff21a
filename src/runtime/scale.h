/* ==== tpace runtime, scale-out part (shipped by the translator; the same for every program and target) ====
 * One pipeline on several devices: the devices one process drives (TPACE_GPUS) and,
 * in a translation made with --mpi, the devices of every MPI rank. The cut axis is
 * split into contiguous slabs, one per device, as even as can be. Each device runs the
 * schedule part's executor on its slab plus the ghost planes that k steps read beyond
 * it (k times a step's reach on each side) and owns its slab: at the start of each block
 * of k steps the ghost planes are copied from the neighbours' slabs as they stand
 * (between ranks once per block, with non-blocking MPI messages that the first chunks'
 * work hides), the device computes k steps, its ghost region shrinking by a step's
 * reach each step (the tpace paper's mm, between slabs only), and writes its slab back.
 * No exchange happens inside a block; each block recomputes O(k^2 reach) planes per
 * boundary, which the model counts. After the pipeline every rank's arrays hold the
 * whole result, so the program after it runs unchanged on every rank.
 *
 * Every rank holds the whole host arrays (a node's memory bounds the grid in this
 * version). Only rank 0's standard output and error are kept after start-up and only
 * rank 0 writes the TPACE_DUMP file; a failure on any rank is said on its own error
 * stream, naming the rank, and ends every rank.
 */
#ifdef TPACE_MPI
#include <mpi.h>
#include <unistd.h>
#endif

/* The processes and devices of the run. */
typedef struct tpace_world {
    int rank, ranks;           /* this process among the MPI ranks (0 of 1 without MPI) */
    int node_rank, node_ranks; /* among the ranks of its node, which share its devices */
    FILE *err;                 /* where failures are said (NULL: stderr) */
    int exiting;               /* a failure is ending the program: no MPI_Finalize at exit */
} tpace_world;
static tpace_world tpace_the_world = {0, 1, 0, 1, NULL, 0};

/* Say what failed and end the program: under MPI, every rank, naming this one. */
TPACE_HOOK void tpace_stop(const char *where, const char *what)
{
    tpace_world *w = &tpace_the_world;
    FILE *err = w->err ? w->err : stderr;
    if (w->ranks > 1)
        fprintf(err, "tpace: rank %d of %d: %s: %s\n", w->rank, w->ranks, where, what);
    else
        fprintf(err, "tpace: %s: %s\n", where, what);
    fflush(err);
    w->exiting = 1;
#ifdef TPACE_MPI
    if (w->ranks > 1)
        MPI_Abort(MPI_COMM_WORLD, 2);
#endif
    exit(2);
}

#ifdef TPACE_MPI
/* Every MPI call is checked: its errors return (MPI_ERRORS_RETURN) and end all ranks in words. */
static void tpace_mpi_check(int err, const char *call)
{
    if (err == MPI_SUCCESS)
        return;
    char msg[MPI_MAX_ERROR_STRING + 160];
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(err, text, &len);
    snprintf(msg, sizeof msg, "MPI call %s failed: %s", call, text);
    tpace_stop("MPI", msg);
}
#define TPACE_MPI_CALL(call) tpace_mpi_check((call), #call)

static void tpace_mpi_at_exit(void)
{
    if (!tpace_the_world.exiting)
        MPI_Finalize();
}

/* The first thing `main` does in a translation made with --mpi: MPI_Init, the ranks
 * and their nodes, rank 0's output alone, MPI_Finalize at the program's normal end. */
static void tpace_mpi_start(int *argc, char ***argv)
{
    tpace_world *w = &tpace_the_world;
    tpace_mpi_check(MPI_Init(argc, argv), "MPI_Init");
    TPACE_MPI_CALL(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    TPACE_MPI_CALL(MPI_Comm_rank(MPI_COMM_WORLD, &w->rank));
    TPACE_MPI_CALL(MPI_Comm_size(MPI_COMM_WORLD, &w->ranks));
    MPI_Comm node;
    TPACE_MPI_CALL(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, w->rank, MPI_INFO_NULL, &node));
    TPACE_MPI_CALL(MPI_Comm_rank(node, &w->node_rank));
    TPACE_MPI_CALL(MPI_Comm_size(node, &w->node_ranks));
    TPACE_MPI_CALL(MPI_Comm_free(&node));
    if (w->rank != 0) {
        /* The program's output once: rank 0's. Failures still reach this rank's stderr. */
        int fd = dup(2);
        w->err = fd >= 0 ? fdopen(fd, "w") : NULL;
        if (freopen("/dev/null", "w", stdout) == NULL || freopen("/dev/null", "w", stderr) == NULL)
            tpace_stop("MPI", "cannot send this rank's output to /dev/null");
        tpace_dump_off = 1;
    }
    atexit(tpace_mpi_at_exit);
}

/* A host file the program opens for writing is opened by rank 0 alone: the other ranks,
 * which run the same host code, write into /dev/null (the translation routes the
 * program's fopen here). */
TPACE_MAYBE_UNUSED static FILE *tpace_mpi_fopen(const char *path, const char *mode)
{
    int writes = strpbrk(mode, "wa+") != NULL;
    if (writes && tpace_the_world.rank != 0)
        return fopen("/dev/null", mode);
    return fopen(path, mode);
}
#endif

/* ---- The devices of this process ---- */

/* Devices this process drives: TPACE_GPUS, else with --mpi the devices it sees shared
 * among the ranks of its node (at least one), else one. */
static int tpace_local_devices(void)
{
    int fallback = 1;
#ifdef TPACE_MPI
    int seen = tpace_dev_count();
    fallback = TPACE_MAX(seen / TPACE_MAX(tpace_the_world.node_ranks, 1), 1);
#endif
    return (int)tpace_env_long("TPACE_GPUS", fallback, 1, 64);
}

/* The device local executor g runs on: the node's ranks take turns over its devices. */
static int tpace_device_of(int local, int g)
{
    const int seen = TPACE_MAX(tpace_dev_count(), 1);
    return (tpace_the_world.node_rank * local + g) % seen;
}

/* Slab e of `devices` over n planes from lo: [*from, *to), as even as can be. */
static void tpace_slab(long lo, long n, long devices, long e, long *from, long *to)
{
    const long base = n / devices, extra = n % devices;
    *from = lo + e * base + TPACE_MIN(e, extra);
    *to = *from + base + (e < extra ? 1 : 0);
}

/* ---- One process, several devices, several ranks: the pipeline ---- */

/* What the executors of this process share. */
typedef struct tpace_scale {
    int local, devices;    /* executors here; devices of all ranks */
    tpace_rt *rt;          /* per local executor */
    tpace_array *arrays;   /* the caller's arrays (host memory of the whole grid) */
    int narrays;
    long lo, n;            /* the grid's cut axis */
    size_t plane;          /* elements per plane */
    long rank_lo, rank_hi; /* the planes this rank's executors own */
    int kb;                /* steps of the block being run */
#ifdef TPACE_MPI
    MPI_Request recv[2], send[2];
    int pending[2];        /* a neighbour rank's ghost planes still on their way */
    char *out[2];          /* this rank's edge planes, copied for the neighbours */
#endif
} tpace_scale;

/* Whether array a's planes change from block to block (its ghost planes are exchanged). */
static int tpace_exchanged(const tpace_array *a)
{
    return a->transfer == TPACE_UPDOWN;
}

#ifdef TPACE_MPI
/* Bytes of planes [from, to) of every exchanged array, packed one array after another. */
static size_t tpace_edge_bytes(const tpace_scale *s, long from, long to)
{
    size_t bytes = 0;
    for (int a = 0; a < s->narrays; a++)
        if (tpace_exchanged(&s->arrays[a]))
            bytes += (size_t)(to - from) * s->plane * s->arrays[a].elem;
    return bytes;
}

/* Copy planes [from, to) of every exchanged array between the host arrays and `buf`. */
static void tpace_edge_copy(const tpace_scale *s, long from, long to, char *buf, int to_arrays)
{
    size_t at = 0;
    for (int a = 0; a < s->narrays; a++) {
        const tpace_array *arr = &s->arrays[a];
        if (!tpace_exchanged(arr))
            continue;
        const size_t bytes = (size_t)(to - from) * s->plane * arr->elem;
        char *host = (char *)arr->host + (size_t)(from - s->lo) * s->plane * arr->elem;
        if (to_arrays)
            memcpy(host, buf + at, bytes);
        else
            memcpy(buf + at, host, bytes);
        at += bytes;
    }
}

#endif

/* Copy planes [from, to) of executor r's ghost region on `side` (0 below its slab, 1
 * above) from the host arrays into its ghost copies. */
static void tpace_ghost_copy(tpace_rt *r, int side, long from, long to)
{
    const tpace_plan *p = &r->plan;
    const long first = side == 0 ? p->s.lo : r->own_hi; /* the ghost copy's first plane */
    for (int a = 0; a < r->narrays && from < to; a++) {
        const tpace_array *arr = &r->arrays[a];
        const size_t plane = p->s.plane * arr->elem;
        if (r->ghost[side][a] != NULL)
            memcpy(r->ghost[side][a] + (size_t)(from - first) * plane,
                   (const char *)arr->host + (size_t)(from - p->s.lo) * plane, (size_t)(to - from) * plane);
    }
}

/* Executor r's ghost region on one side, [lo, hi) */
static void tpace_ghost_region(const tpace_rt *r, int side, long *lo, long *hi)
{
    const tpace_plan *p = &r->plan;
    *lo = side == 0 ? p->s.lo : r->own_hi;
    *hi = side == 0 ? r->own_lo : p->s.lo + p->s.n;
}

/* At a block's start, before any device's chunks: the ghost planes as they stand now
 * (`later`: only those within this rank's planes, which its other devices are about to
 * overwrite; the rest arrive from a neighbour rank). */
static void tpace_ghost_start(tpace_rt *r, int side, int later)
{
    const tpace_scale *s = (const tpace_scale *)r->scale;
    long lo, hi;
    tpace_ghost_region(r, side, &lo, &hi);
    if (later) /* the planes beyond this rank come from a neighbour rank, when the executor needs them */
        tpace_ghost_copy(r, side, TPACE_MAX(lo, s->rank_lo), TPACE_MIN(hi, s->rank_hi));
    else
        tpace_ghost_copy(r, side, lo, hi);
    r->ghost_ready[side] = !later;
}

/* The executor needs its ghost planes beyond this rank: wait for the neighbour rank's,
 * then copy them (tpace_upload_planes calls this through r->ghost_fill). */
static void tpace_ghost_fill(tpace_rt *r, int side)
{
    tpace_scale *s = (tpace_scale *)r->scale;
#ifdef TPACE_MPI
    const tpace_plan *p = &r->plan;
    if (s->pending[side]) {
        TPACE_MPI_CALL(MPI_Wait(&s->recv[side], MPI_STATUS_IGNORE));
        tpace_edge_copy(s, side == 0 ? s->rank_lo - (long)s->kb * p->s.reach_lo : s->rank_hi,
                        side == 0 ? s->rank_lo : s->rank_hi + (long)s->kb * p->s.reach_hi, s->out[side], 1);
        s->pending[side] = 0;
    }
#endif
    long lo, hi;
    tpace_ghost_region(r, side, &lo, &hi);
    if (side == 0)
        tpace_ghost_copy(r, 0, lo, TPACE_MIN(hi, s->rank_lo));
    else
        tpace_ghost_copy(r, 1, TPACE_MAX(lo, s->rank_hi), hi);
    r->ghost_ready[side] = 1;
}

#ifdef TPACE_MPI
/* Post the block's exchange with the neighbour ranks: this rank's edge planes out, the
 * planes its ghost regions reach in (they land in the host arrays, where no executor of
 * this rank writes). */
static void tpace_exchange_post(tpace_scale *s, long reach_lo, long reach_hi)
{
    const tpace_world *w = &tpace_the_world;
    for (int side = 0; side < 2; side++) {
        s->pending[side] = 0;
        const int peer = side == 0 ? w->rank - 1 : w->rank + 1;
        if (peer < 0 || peer >= w->ranks)
            continue;
        /* What the peer needs of this rank, and what this rank needs of the peer. */
        const long send_from = side == 0 ? s->rank_lo : s->rank_hi - (long)s->kb * reach_lo;
        const long send_to = side == 0 ? s->rank_lo + (long)s->kb * reach_hi : s->rank_hi;
        const long recv_from = side == 0 ? s->rank_lo - (long)s->kb * reach_lo : s->rank_hi;
        const long recv_to = side == 0 ? s->rank_lo : s->rank_hi + (long)s->kb * reach_hi;
        const size_t out_bytes = tpace_edge_bytes(s, send_from, send_to);
        const size_t in_bytes = tpace_edge_bytes(s, recv_from, recv_to);
        if (out_bytes > (size_t)0x7fffffff || in_bytes > (size_t)0x7fffffff)
            tpace_stop("MPI", "a block's ghost planes exceed 2 GiB per message; lower TPACE_K");
        free(s->out[side]);
        s->out[side] = (char *)malloc(TPACE_MAX(TPACE_MAX(out_bytes, in_bytes), (size_t)1) * 2);
        if (s->out[side] == NULL)
            tpace_stop("MPI", "host memory ran out for the ghost planes");
        char *outgoing = s->out[side] + TPACE_MAX(in_bytes, (size_t)1);
        tpace_edge_copy(s, send_from, send_to, outgoing, 0);
        TPACE_MPI_CALL(MPI_Irecv(s->out[side], (int)in_bytes, MPI_BYTE, peer, 7, MPI_COMM_WORLD, &s->recv[side]));
        TPACE_MPI_CALL(MPI_Isend(outgoing, (int)out_bytes, MPI_BYTE, peer, 7, MPI_COMM_WORLD, &s->send[side]));
        s->pending[side] = 1;
    }
}

/* The block is done: its sends are too (their buffers go with the next block). */
static void tpace_exchange_end(tpace_scale *s)
{
    const tpace_world *w = &tpace_the_world;
    for (int side = 0; side < 2; side++) {
        const int peer = side == 0 ? w->rank - 1 : w->rank + 1;
        if (peer < 0 || peer >= w->ranks)
            continue;
        if (s->pending[side])
            TPACE_MPI_CALL(MPI_Wait(&s->recv[side], MPI_STATUS_IGNORE));
        s->pending[side] = 0;
        TPACE_MPI_CALL(MPI_Wait(&s->send[side], MPI_STATUS_IGNORE));
    }
}

/* Every rank's slabs to every rank: each rank in turn broadcasts its planes of every
 * array the pipeline writes, in pieces under 1 GiB. */
static void tpace_gather(const tpace_scale *s, const long *rank_lo, const long *rank_hi)
{
    const tpace_world *w = &tpace_the_world;
    for (int a = 0; a < s->narrays; a++) {
        const tpace_array *arr = &s->arrays[a];
        if (arr->transfer == TPACE_UP || arr->transfer == TPACE_UNUSED || arr->unread)
            continue;
        for (int owner = 0; owner < w->ranks; owner++) {
            char *at = (char *)arr->host + (size_t)(rank_lo[owner] - s->lo) * s->plane * arr->elem;
            size_t left = (size_t)(rank_hi[owner] - rank_lo[owner]) * s->plane * arr->elem;
            while (left > 0) {
                const size_t piece = TPACE_MIN(left, (size_t)1 << 30);
                TPACE_MPI_CALL(MPI_Bcast(at, (int)piece, MPI_BYTE, owner, MPI_COMM_WORLD));
                at += piece;
                left -= piece;
            }
        }
    }
}
#endif

/* The smallest of a value over all ranks (the device-memory budget every rank plans for). */
static size_t tpace_min_over_ranks(size_t v)
{
#ifdef TPACE_MPI
    if (tpace_the_world.ranks > 1) {
        unsigned long long x = v, m = 0;
        TPACE_MPI_CALL(MPI_Allreduce(&x, &m, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, MPI_COMM_WORLD));
        return (size_t)m;
    }
#endif
    return v;
}

/* The largest of a value over all ranks (the pipeline's time). */
/* The sum of a count over all ranks (the bytes the report gives). */
static size_t tpace_sum_over_ranks(size_t v)
{
#ifdef TPACE_MPI
    if (tpace_the_world.ranks > 1) {
        unsigned long long x = v, m = 0;
        TPACE_MPI_CALL(MPI_Allreduce(&x, &m, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD));
        return (size_t)m;
    }
#endif
    return v;
}

static double tpace_max_over_ranks(double v)
{
#ifdef TPACE_MPI
    if (tpace_the_world.ranks > 1) {
        double m = 0.0;
        TPACE_MPI_CALL(MPI_Allreduce(&v, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
        return m;
    }
#endif
    return v;
}

/* Combine the executors' per-step reduction results into `reds` (whose `partial` this
 * allocates): their own planes' terms, in executor order, then over the ranks. */
static void tpace_combine_reductions(tpace_scale *s, tpace_reduction *reds, int nreds, long steps)
{
    const size_t count = (size_t)TPACE_MAX(steps, 1L);
    for (int i = 0; i < nreds; i++) {
        tpace_reduction *red = &reds[i];
        red->partial = malloc(count * red->elem);
        if (red->partial == NULL)
            tpace_stop("runtime", "host memory ran out combining a reduction's per-step results");
        memcpy(red->partial, s->rt[0].reductions[i].partial, count * red->elem);
        for (int g = 1; g < s->local; g++)
            for (size_t t = 0; t < count; t++) {
                const void *from = s->rt[g].reductions[i].partial;
                if (red->elem == sizeof(float)) {
                    float *x = (float *)red->partial + t, y = ((const float *)from)[t];
                    *x = red->op == TPACE_RED_SUM ? *x + y : red->op == TPACE_RED_MAX ? TPACE_MAX(*x, y) : TPACE_MIN(*x, y);
                } else {
                    double *x = (double *)red->partial + t, y = ((const double *)from)[t];
                    *x = red->op == TPACE_RED_SUM ? *x + y : red->op == TPACE_RED_MAX ? TPACE_MAX(*x, y) : TPACE_MIN(*x, y);
                }
            }
#ifdef TPACE_MPI
        if (tpace_the_world.ranks > 1) {
            MPI_Op op = red->op == TPACE_RED_SUM ? MPI_SUM : red->op == TPACE_RED_MAX ? MPI_MAX : MPI_MIN;
            MPI_Datatype type = red->elem == sizeof(float) ? MPI_FLOAT : MPI_DOUBLE;
            TPACE_MPI_CALL(MPI_Allreduce(MPI_IN_PLACE, red->partial, (int)count, type, op, MPI_COMM_WORLD));
        }
#endif
        for (int g = 0; g < s->local; g++)
            free(s->rt[g].reductions[i].partial);
    }
}

/* The plan every device runs, chosen once for all of them: the model's fastest for the
 * largest slab with its ghost planes (k steps' reach on each side), counting one
 * exchange of those planes per block (so a larger k also means fewer exchanges), under
 * the smallest budget of any device of any rank (devices that ranks share split their
 * memory). TPACE_* settings fix what they set, as with one device. The result goes into
 * `out`'s force fields. */
static void tpace_plan_devices(const tpace_shape *shape, const tpace_array *arrays, int narrays,
                               const tpace_reduction *reds, int nreds, int devices, int local, long thinnest,
                               tpace_shape *out)
{
    const tpace_world *w = &tpace_the_world;
    *out = *shape;
    /* The budget: the least free memory of this process's devices, shared, over the ranks. */
    tpace_rt probe;
    memset(&probe, 0, sizeof probe);
    probe.plan.s = *shape;
    size_t free_least = (size_t)-1;
    for (int g = 0; g < local; g++) {
        probe.device = tpace_device_of(local, g);
        tpace_dev_activate(&probe);
        const size_t f = tpace_dev_free_memory(&probe);
        free_least = f == 0 ? 0 : TPACE_MIN(free_least, f);
    }
    const int seen = TPACE_MAX(tpace_dev_count(), 1);
    const int sharers = TPACE_MAX((w->node_ranks * local + seen - 1) / seen, 1);
    size_t free_bytes = free_least == (size_t)-1 ? 0 : free_least / (size_t)sharers;
    const size_t cap = tpace_env_bytes("TPACE_DEVICE_MEM");
    size_t budget = cap && free_bytes ? TPACE_MIN(cap, free_bytes) : (cap ? cap : free_bytes);
    /* 0 (unknown) on one rank leaves the others' least. */
    budget = tpace_min_over_ranks(budget ? budget : (size_t)-1);
    budget = budget == (size_t)-1 ? 0 : budget;
    out->force_budget = budget;
    /* What the user set. */
    int schedule = tpace_env_schedule();
    const long env_k = tpace_env_long("TPACE_K", 0, 1, 1L << 20);
    const long env_b = tpace_env_long("TPACE_CHUNK", 0, 1, 1L << 40);
    const long env_streams = tpace_env_long("TPACE_STREAMS", 0, 1, TPACE_MAX_SLOTS - 1);
    /* Steps per kernel: what every device has shared memory for (the probe is the last one). */
    int fuse_set = 0, fuse_most = 1;
    int fuse = (int)tpace_min_over_ranks((size_t)tpace_fuse_wanted(&probe, shape, &fuse_set, &fuse_most));
    fuse_most = (int)tpace_min_over_ranks((size_t)fuse_most);
    if (schedule == TPACE_INCORE) /* a block's slab stays on its device: mmtb with one chunk */
        schedule = TPACE_MMTB;
    /* The deepest ghost region a neighbour rank can fill. */
    const long reach = shape->reach_lo + shape->reach_hi;
    const long deepest = TPACE_MAX(shape->reach_lo, shape->reach_hi);
    const long k_most = w->ranks > 1 && deepest > 0 ? TPACE_MAX(thinnest / deepest, 1L) : (1L << 20);
    if (env_k > k_most) {
        char msg[512];
        snprintf(msg, sizeof msg,
                 "TPACE_K=%ld needs %ld ghost planes from each neighbour rank, more than the thinnest rank's %ld "
                 "planes; lower TPACE_K to %ld or use fewer ranks",
                 env_k, env_k * deepest, thinnest, k_most);
        tpace_stop(shape->where, msg);
    }
    const long steps = TPACE_MAX(shape->steps, 1L);
    const long slab = (shape->n + devices - 1) / devices;
    size_t exchanged = 0, reduction_bytes = 0; /* bytes of one plane of every exchanged array */
    for (int a = 0; a < narrays; a++)
        if (tpace_exchanged(&arrays[a]))
            exchanged += shape->plane * arrays[a].elem;
    if (tpace_dev_reduces_on_device())
        for (int i = 0; i < nreds; i++)
            reduction_bytes += (size_t)steps * reds[i].elem;
    /* The model for the profile of the devices (the last one asked: tpace_pick_model). */
    tpace_model picked, scratch;
    char about[400] = "";
    const tpace_model *m =
        tpace_model_fusing(tpace_pick_model(&probe, shape, &picked, about, sizeof about), (tpace_u64)fuse, &scratch);
    int found = 0;
    double best = 0.0;
    tpace_model_choice pick;
    memset(&pick, 0, sizeof pick);
    long best_k = 0;
    if (m) {
        static tpace_u64 ks[TPACE_MC_MAX_CANDIDATES];
        const int nk = env_k ? (ks[0] = (tpace_u64)env_k, 1) : tpace_mc_k_candidates((tpace_u64)steps, ks);
        tpace_u128 model_cap = budget ? (tpace_u128)budget : (tpace_u128)m->memory_bytes;
        model_cap = model_cap > reduction_bytes ? model_cap - reduction_bytes : 0;
        for (int i = 0; i < nk; i++) {
            const long k = (long)ks[i];
            if (k > k_most)
                continue;
            const tpace_model_run run = {(tpace_u64)TPACE_MIN(shape->n, slab + k * reach), (tpace_u64)shape->plane,
                                         (tpace_u64)shape->steps};
            tpace_model_choice c = tpace_model_choose_fused(
                m, &run, model_cap, schedule >= 0 ? tpace_model_of_schedule[schedule] : -1, (tpace_u64)k,
                (tpace_u64)env_b, (tpace_u64)env_streams, fuse_set, (tpace_u64)fuse_most);
            if (!c.found)
                continue;
            /* One exchange before every block but the first (which starts from the program's data). */
            const double exchanges = (double)((steps + k - 1) / k - 1);
            const double exchange =
                m->exchange_bps > 0
                    ? exchanges * ((double)(k * reach) * (double)exchanged / m->exchange_bps + m->exchange_latency_s)
                    : 0.0;
            if (!found || c.seconds + exchange < best) {
                found = 1;
                best = c.seconds + exchange;
                pick = c;
                best_k = k;
            }
        }
    }
    out->force = 1;
    if (found) {
        out->force_schedule = tpace_schedule_of_model[pick.best.schedule];
        out->force_k = best_k;
        out->force_b = (long)pick.best.b;
        out->force_streams = (int)pick.best.streams;
        out->force_fuse = (int)pick.fuse;
        out->predicted = best;
        snprintf(out->chosen_by, sizeof out->chosen_by, "chosen by the model for %s over %d devices%s; %s",
                 m->machine, devices, env_k || env_b || env_streams || schedule >= 0 ? ", TPACE_* kept" : "", about);
    } else {
        out->force_schedule = schedule >= 0 ? schedule : TPACE_MMTB;
        out->force_k = TPACE_MIN(env_k ? env_k : shape->default_k, k_most);
        out->force_b = env_b;
        out->force_streams = (int)(env_streams ? env_streams : shape->default_streams);
        out->force_fuse = fuse;
        out->predicted = 0.0;
        snprintf(out->chosen_by, sizeof out->chosen_by, "no plan of the model fits; fallback rule over %d devices",
                 devices);
    }
    if (out->force_schedule == TPACE_NAIVE)
        out->force_k = 1;
#ifdef TPACE_MPI
    /* Every rank runs rank 0's plan: ranks whose devices' names pick different profiles
     * (tpace_pick_model) would otherwise exchange ghost planes of different depths. */
    if (w->ranks > 1) {
        long plan[5] = {(long)out->force_schedule, out->force_k, out->force_b, (long)out->force_streams,
                        (long)out->force_fuse};
        TPACE_MPI_CALL(MPI_Bcast(plan, 5, MPI_LONG, 0, MPI_COMM_WORLD));
        TPACE_MPI_CALL(MPI_Bcast(&out->predicted, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD));
        out->force_schedule = (int)plan[0];
        out->force_k = plan[1];
        out->force_b = plan[2];
        out->force_streams = (int)plan[3];
        out->force_fuse = (int)plan[4];
    }
#endif
}

/* The pipeline on several devices (see the top of this part). */
static void tpace_run_devices(const tpace_shape *shape, tpace_array *arrays, int narrays, tpace_reduction *reds,
                              int nreds, const tpace_sweep *sweeps, int nsweeps, const tpace_fused *fused,
                              const void *in, int local)
{
    const tpace_world *w = &tpace_the_world;
    tpace_scale s;
    memset(&s, 0, sizeof s);
    s.local = local;
    s.devices = local * w->ranks;
    s.arrays = arrays;
    s.narrays = narrays;
    s.lo = shape->lo;
    s.n = shape->n;
    s.plane = 1;
    for (int d = 1; d < shape->rank; d++)
        s.plane *= (size_t)shape->dim_n[d];
    char msg[512];
    if (shape->n < s.devices) {
        snprintf(msg, sizeof msg,
                 "the grid has %ld planes along the cut axis, fewer than the %d devices (%d ranks x TPACE_GPUS=%d); "
                 "use fewer ranks or lower TPACE_GPUS",
                 shape->n, s.devices, w->ranks, local);
        tpace_stop(shape->where, msg);
    }
    /* The planes each rank's devices own. */
    long *rank_lo = (long *)calloc((size_t)w->ranks, sizeof *rank_lo);
    long *rank_hi = (long *)calloc((size_t)w->ranks, sizeof *rank_hi);
    if (rank_lo == NULL || rank_hi == NULL)
        tpace_stop(shape->where, "host memory ran out starting the devices");
    for (int q = 0; q < w->ranks; q++) {
        long from, to;
        tpace_slab(s.lo, s.n, s.devices, (long)q * local, &rank_lo[q], &to);
        tpace_slab(s.lo, s.n, s.devices, (long)q * local + local - 1, &from, &rank_hi[q]);
    }
    s.rank_lo = rank_lo[w->rank];
    s.rank_hi = rank_hi[w->rank];
    /* A neighbour rank must hold every ghost plane a block reads. */
    long thinnest = s.n;
    for (int q = 0; q < w->ranks; q++)
        thinnest = TPACE_MIN(thinnest, rank_hi[q] - rank_lo[q]);
    /* The plan: one for every device (see tpace_plan_devices). */
    tpace_shape slab_shape;
    tpace_plan_devices(shape, arrays, narrays, reds, nreds, s.devices, local, thinnest, &slab_shape);
    const long k = slab_shape.force_k;
    s.rt = (tpace_rt *)calloc((size_t)local, sizeof *s.rt);
    tpace_array *copies = (tpace_array *)calloc((size_t)(local * narrays), sizeof *copies);
    tpace_reduction *red_copies = (tpace_reduction *)calloc((size_t)TPACE_MAX(local * nreds, 1), sizeof *red_copies);
    long *dims = (long *)calloc((size_t)(local * shape->rank), sizeof *dims);
    if (s.rt == NULL || copies == NULL || red_copies == NULL || dims == NULL)
        tpace_stop(shape->where, "host memory ran out starting the devices");
    /* Set-up (page-locking, device buffers) is timed apart, as one device's report leaves
     * it out; the report's seconds run from the first block to the gathered result. */
    const double setup_start = tpace_now();
    for (int g = 0; g < local; g++) {
        tpace_rt *r = &s.rt[g];
        long own_lo, own_hi;
        tpace_slab(s.lo, s.n, s.devices, (long)w->rank * local + g, &own_lo, &own_hi);
        /* Its grid: the slab and the planes k steps read beyond it. */
        const long from = TPACE_MAX(s.lo, own_lo - k * shape->reach_lo);
        const long to = TPACE_MIN(s.lo + s.n, own_hi + k * shape->reach_hi);
        tpace_shape sub = slab_shape;
        long *dim_n = dims + (size_t)g * shape->rank;
        memcpy(dim_n, shape->dim_n, (size_t)shape->rank * sizeof *dim_n);
        dim_n[0] = to - from;
        long *dim_lo = (long *)malloc((size_t)shape->rank * sizeof *dim_lo);
        if (dim_lo == NULL)
            tpace_stop(shape->where, "host memory ran out starting the devices");
        memcpy(dim_lo, shape->dim_lo, (size_t)shape->rank * sizeof *dim_lo);
        dim_lo[0] = from;
        sub.lo = from;
        sub.n = to - from;
        sub.dim_lo = dim_lo;
        sub.dim_n = dim_n;
        tpace_array *mine = copies + (size_t)g * narrays;
        memcpy(mine, arrays, (size_t)narrays * sizeof *mine);
        for (int a = 0; a < narrays; a++)
            mine[a].host = (char *)arrays[a].host + (size_t)(from - s.lo) * s.plane * arrays[a].elem;
        tpace_reduction *my_reds = nreds ? red_copies + (size_t)g * nreds : NULL;
        if (nreds)
            memcpy(my_reds, reds, (size_t)nreds * sizeof *my_reds);
        tpace_begin_slab(r, &sub, mine, narrays, my_reds, nreds, tpace_device_of(local, g), own_lo, own_hi, 1);
        r->scale = &s;
        r->ghost_fill = tpace_ghost_fill;
        for (int side = 0; side < 2; side++) {
            r->ghost[side] = (char **)calloc((size_t)narrays, sizeof(char *));
            const long planes = side == 0 ? own_lo - from : to - own_hi;
            for (int a = 0; a < narrays && r->ghost[side]; a++)
                if (planes > 0 && tpace_moves_in(&mine[a], 1))
                    r->ghost[side][a] = (char *)malloc((size_t)planes * s.plane * mine[a].elem);
        }
    }
    const double start = tpace_now();
    double exchange_wait = 0.0;
    /* Block by block: the exchange, every device's chunks (issued one device after the
     * other, all running at once), then every device's queues drained. */
    const long steps = TPACE_MAX(shape->steps, 0L);
    const long max_tau = tpace_max_tau(sweeps, nsweeps);
    for (long t = 0; t < steps; t += k) {
        s.kb = (int)TPACE_MIN(k, steps - t);
#ifdef TPACE_MPI
        if (w->ranks > 1 && t > 0)
            tpace_exchange_post(&s, shape->reach_lo, shape->reach_hi);
#endif
        /* Ghost planes within this rank now; those of a neighbour rank once they arrive. */
        for (int g = 0; g < local; g++) {
            long lo, hi;
            tpace_ghost_region(&s.rt[g], 0, &lo, &hi);
            tpace_ghost_start(&s.rt[g], 0, w->ranks > 1 && t > 0 && lo < s.rank_lo);
            tpace_ghost_region(&s.rt[g], 1, &lo, &hi);
            tpace_ghost_start(&s.rt[g], 1, w->ranks > 1 && t > 0 && hi > s.rank_hi);
        }
        for (int g = 0; g < local; g++)
            tpace_run_block(&s.rt[g], sweeps, nsweeps, fused, in, max_tau);
        for (int g = 0; g < local; g++) {
            tpace_dev_activate(&s.rt[g]);
            tpace_dev_sync(&s.rt[g]);
        }
#ifdef TPACE_MPI
        if (w->ranks > 1 && t > 0) {
            const double wait_start = tpace_now();
            tpace_exchange_end(&s);
            exchange_wait += tpace_now() - wait_start;
        }
#endif
    }
    const double blocks_end = tpace_now();
    size_t device_bytes = 0, up_bytes = 0, down_bytes = 0;
    for (int g = 0; g < local; g++) {
        tpace_end(&s.rt[g]);
        device_bytes = TPACE_MAX(device_bytes, s.rt[g].plan.device_bytes);
        up_bytes += s.rt[g].plan.up_bytes;
        down_bytes += s.rt[g].plan.down_bytes;
        for (int side = 0; side < 2; side++) {
            for (int a = 0; a < narrays && s.rt[g].ghost[side]; a++)
                free(s.rt[g].ghost[side][a]);
            free(s.rt[g].ghost[side]);
        }
        free((void *)s.rt[g].plan.s.dim_lo);
    }
#ifdef TPACE_MPI
    if (w->ranks > 1)
        tpace_gather(&s, rank_lo, rank_hi);
    free(s.out[0]);
    free(s.out[1]);
#endif
    if (nreds)
        tpace_combine_reductions(&s, reds, nreds, steps);
    /* One report for the whole run, from rank 0. */
    tpace_plan whole = s.rt[0].plan;
    whole.s = *shape;
    whole.s.steps = steps;
    whole.device_bytes = device_bytes;
    whole.up_bytes = tpace_sum_over_ranks(up_bytes);
    whole.down_bytes = tpace_sum_over_ranks(down_bytes);
    whole.seconds = tpace_max_over_ranks(tpace_now() - start);
    /* Where a run over several devices spends its time, before the report line. */
    const double setup = tpace_max_over_ranks(start - setup_start);
    const double blocks = tpace_max_over_ranks(blocks_end - start);
    const double waited = tpace_max_over_ranks(exchange_wait);
    fprintf(stderr,
            "tpace: %s: phases over %d device(s) and %d rank(s): setup %.6f s (page-locking, device buffers; "
            "not in seconds=), blocks %.6f s (of which waiting for neighbours' planes %.6f s), "
            "then %.6f s gathering the result on every rank and combining reductions\n",
            shape->where, s.devices, w->ranks, setup, blocks, waited, whole.seconds - blocks);
    whole.predicted = slab_shape.predicted;
    snprintf(whole.chosen_by, sizeof whole.chosen_by, "%s", slab_shape.chosen_by);
    tpace_report_devices(&whole, s.devices, w->ranks);
    free(dims);
    free(red_copies);
    free(copies);
    free(s.rt);
    free(rank_lo);
    free(rank_hi);
}

/* Run a pipeline: on one device as the schedule part does, or on several (TPACE_GPUS,
 * MPI ranks). The arrays hold the result afterwards, the reductions' `partial` their
 * per-step results (the caller frees them). */
static void tpace_run_pipeline(const tpace_shape *shape, tpace_array *arrays, int narrays, tpace_reduction *reds,
                               int nreds, const tpace_sweep *sweeps, int nsweeps, const tpace_fused *fused,
                               const void *in)
{
    const int local = tpace_local_devices();
    if (local * tpace_the_world.ranks == 1 && tpace_bench_plans(shape, arrays, narrays, reds, nreds, sweeps, nsweeps,
                                                                fused, in))
        return; /* TPACE_BENCH_PLANS: timed under several plans (the schedule part) */
    if (local * tpace_the_world.ranks > 1 && shape->steps > 0) {
        tpace_run_devices(shape, arrays, narrays, reds, nreds, sweeps, nsweeps, fused, in, local);
        return;
    }
    tpace_rt tp;
    tpace_begin(&tp, shape, arrays, narrays, reds, nreds);
    tpace_run(&tp, sweeps, nsweeps, fused, in);
    tpace_end(&tp);
}
/* ==== end of tpace runtime, scale-out part ==== */
