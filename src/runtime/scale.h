/* ==== tpace runtime, scale-out part (shipped by the translator; the same for every program and target) ====
 * One pipeline on several devices: the devices one process drives (TPACE_GPUS) and,
 * in a translation made with --mpi, the devices of every MPI rank. The cut axis is
 * split into contiguous slabs, one per device, as even as can be. Each device runs the
 * schedule part's executor on its slab plus the ghost planes that k steps read beyond
 * it (k times a step's reach on each side) and owns its slab: at the start of each block
 * of k steps the ghost planes are taken from the neighbours' slabs as they stand, the
 * device computes k steps, its ghost region shrinking by a step's reach each step (the
 * tpace paper's mm, between slabs only), and writes its slab back, straight into the
 * user's arrays. No exchange happens inside a block; each block recomputes O(k^2 reach)
 * planes per boundary, which the model counts.
 *
 * The executors of one process run at once, each on a host thread of its own (where the
 * target allows: CUDA, OpenACC), so that every device's copies and kernels overlap.
 * Ghost planes between two devices of one process go device to device where the target
 * can (CUDA peer copies, over NVLink where there is one; TPACE_PEER=0: through host
 * memory): a device copies the planes its neighbour reads next block into the
 * neighbour's memory as it writes them back. Between ranks of one node the rank that
 * reads them copies them straight out of the other's memory into its ghost copies (the
 * planes below a slab from a packed copy, those above from the host arrays themselves,
 * which the slab's last chunks overwrite only once they are taken); elsewhere they go
 * once per block in non-blocking MPI messages that the first chunks' work hides.
 *
 * After the pipeline each array goes where the program reads it, as the translation
 * says (the analysis of the code after the loop): to rank 0 alone where that code only
 * outputs it (only rank 0's output is kept), to every rank otherwise, so that the
 * program after the pipeline runs unchanged on every rank.
 *
 * Every rank holds the whole host arrays (a node's memory bounds the grid in this
 * version; docs/scale-out.md says how it would not). Only rank 0's standard output and
 * error are kept after start-up and only rank 0 writes the TPACE_DUMP file; a failure on
 * any rank is said on its own error stream, naming the rank, and ends every rank.
 */
#include <pthread.h>
#ifdef TPACE_MPI
#include <mpi.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/uio.h>
/* glibc declares it under _GNU_SOURCE only (since 2.15); the same declaration here. */
extern ssize_t process_vm_writev(pid_t pid, const struct iovec *local, unsigned long nlocal,
                                 const struct iovec *remote, unsigned long nremote, unsigned long flags);
extern ssize_t process_vm_readv(pid_t pid, const struct iovec *local, unsigned long nlocal,
                                const struct iovec *remote, unsigned long nremote, unsigned long flags);
#define TPACE_CMA_ABLE 1
#endif
#endif
#ifdef __linux__
#include <sys/syscall.h>
#include <unistd.h>
/* glibc declares sched_getaffinity under _GNU_SOURCE only; the system call itself, as
 * <unistd.h> declares it where it does. */
extern long syscall(long number, ...);
#define TPACE_AFFINITY_ABLE 1
#endif

/* The processes and devices of the run. */
typedef struct tpace_world {
    int rank, ranks;           /* this process among the MPI ranks (0 of 1 without MPI) */
    int node_rank, node_ranks; /* among the ranks of its node, which share its devices */
    FILE *err;                 /* where failures are said (NULL: stderr) */
    int exiting;               /* a failure is ending the program: no MPI_Finalize at exit */
    int threads_ok;            /* MPI lets other threads run beside the one that calls it */
    int with_root;             /* rank 0 runs on this process's node */
    int cores;                 /* host cores this process may run on (0: not yet counted) */
    int cores_given;           /* where tpace widened them: the cores mpirun had bound it to (else 0) */
    int node;                  /* its node: the lowest rank on it */
} tpace_world;
static tpace_world tpace_the_world = {0, 1, 0, 1, NULL, 0, 1, 1, 0, 0, 0};

/* ---- Host cores ---- */

#define TPACE_AFFINITY_WORDS 64 /* a mask of 4096 cores */

/* The cores this process may run on, into `mask` (one bit each); their count, 0 where the
 * system does not say. */
static int tpace_affinity_get(unsigned long *mask)
{
    memset(mask, 0, TPACE_AFFINITY_WORDS * sizeof *mask);
#ifdef TPACE_AFFINITY_ABLE
    if (syscall(SYS_sched_getaffinity, 0, TPACE_AFFINITY_WORDS * sizeof *mask, mask) <= 0)
        return 0;
    int n = 0;
    for (int i = 0; i < TPACE_AFFINITY_WORDS; i++)
        for (unsigned long word = mask[i]; word != 0; word &= word - 1)
            n++;
    return n;
#else
    return 0;
#endif
}

/* Host cores this process may run on (its affinity mask; else the system's online cores). */
static int tpace_host_cores(void)
{
    tpace_world *w = &tpace_the_world;
    if (w->cores == 0) {
        unsigned long mask[TPACE_AFFINITY_WORDS];
        w->cores = tpace_affinity_get(mask);
        if (w->cores == 0)
            w->cores = (int)TPACE_MAX(sysconf(_SC_NPROCESSORS_ONLN), 1L);
    }
    return w->cores;
}

/* mpirun binds each rank to one core where it starts two or fewer (Open MPI's default),
 * and a rank needs more: a host thread per device, the copies of ghost planes and
 * results. Where the rank may run on fewer cores than its share of the node's (the
 * online cores over the node's ranks), it takes its share, a contiguous range by its
 * rank on the node, before any thread starts. TPACE_BIND=keep keeps mpirun's binding. */
TPACE_MAYBE_UNUSED static void tpace_cores_widen(tpace_world *w)
{
#ifdef TPACE_AFFINITY_ABLE
    const char *bind = tpace_getenv("TPACE_BIND");
    if (bind != NULL && *bind != '\0' && strcmp(bind, "share") != 0) {
        if (strcmp(bind, "keep") != 0)
            tpace_stop("settings", "TPACE_BIND is `share` (the default: a rank bound to fewer cores than its share of "
                                   "the node's takes its share) or `keep` (mpirun's binding as it is)");
        return;
    }
    unsigned long mask[TPACE_AFFINITY_WORDS];
    const int had = tpace_affinity_get(mask);
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    const long share = online / TPACE_MAX(w->node_ranks, 1);
    const long first = (long)w->node_rank * share;
    if (had == 0 || had >= share || first + share > TPACE_AFFINITY_WORDS * 64L)
        return;
    unsigned long wide[TPACE_AFFINITY_WORDS];
    memset(wide, 0, sizeof wide);
    for (long c = first; c < first + share; c++)
        wide[c / 64] |= 1UL << (c % 64);
    /* Refused (a cpuset without those cores): the binding stays, and the report says so. */
    if (syscall(SYS_sched_setaffinity, 0, sizeof wide, wide) != 0)
        return;
    w->cores = tpace_affinity_get(mask);
    if (w->cores > had)
        w->cores_given = had;
#else
    (void)w;
#endif
}

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

/* The first thing `main` does in a translation made with --mpi: MPI_Init_thread, the ranks
 * and their nodes, rank 0's output alone, MPI_Finalize at the program's normal end. */
static void tpace_mpi_start(int *argc, char ***argv)
{
    tpace_world *w = &tpace_the_world;
    /* The devices' host threads call no MPI: this thread does, for all of them. */
    int provided = MPI_THREAD_SINGLE;
    tpace_mpi_check(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
    w->threads_ok = provided >= MPI_THREAD_FUNNELED;
    TPACE_MPI_CALL(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    TPACE_MPI_CALL(MPI_Comm_rank(MPI_COMM_WORLD, &w->rank));
    TPACE_MPI_CALL(MPI_Comm_size(MPI_COMM_WORLD, &w->ranks));
    MPI_Comm node;
    TPACE_MPI_CALL(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, w->rank, MPI_INFO_NULL, &node));
    TPACE_MPI_CALL(MPI_Comm_rank(node, &w->node_rank));
    TPACE_MPI_CALL(MPI_Comm_size(node, &w->node_ranks));
    int root_here = w->rank == 0;
    TPACE_MPI_CALL(MPI_Allreduce(&root_here, &w->with_root, 1, MPI_INT, MPI_MAX, node));
    TPACE_MPI_CALL(MPI_Allreduce(&w->rank, &w->node, 1, MPI_INT, MPI_MIN, node));
    TPACE_MPI_CALL(MPI_Comm_free(&node));
    tpace_cores_widen(w);
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

/* What each executor of the process does, in order; every executor has run a phase before
 * any starts the next. */
enum tpace_phase {
    TPACE_PHASE_SETUP,    /* plan, device buffers, queues, page-locking its slab */
    TPACE_PHASE_PEER,     /* device buffers of the ghost planes that come device to device */
    TPACE_PHASE_GHOSTS,   /* a block's start: the host copies of its ghost planes, as they stand */
    TPACE_PHASE_BLOCK,    /* the block's chunks; on a thread of its own, then its device drained */
    TPACE_PHASE_SYNC,     /* its device drained (executors that share one host thread) */
    TPACE_PHASE_FINISH,   /* the results in place (tpace_finish) */
    TPACE_PHASE_TEARDOWN, /* device buffers freed, its slab unpinned (tpace_end) */
    TPACE_PHASE_QUIT
};

/* The host threads of the executors: the caller's thread hands out each phase and waits
 * until every executor has run it. */
typedef struct tpace_crew {
    int threads;       /* 1: one host thread per executor; 0: all on the caller's, one after another */
    pthread_t *thread;
    int started;       /* threads started so far */
    pthread_mutex_t lock;
    pthread_cond_t go, done, arrived;
    long generation;   /* phases handed out so far */
    int phase, pending; /* the phase being run, and executors still running it */
} tpace_crew;

struct tpace_scale;

/* A chunk's last download in the last block, flagged: once the flag rises, its slab planes
 * [from, to) hold their final values in the host arrays. */
typedef struct tpace_final {
    int flag;
    long from, to;
} tpace_final;

/* Final planes of one array on their way to rank 0 (tpace_results_push): `bytes` from
 * `offset` of its host memory, announced by a message of its own (`head`). */
typedef struct tpace_piece {
    int array;
    size_t offset, bytes;
    long long head[3]; /* array, offset, bytes: what rank 0 receives first */
    struct tpace_piece *next;
} tpace_piece;

#ifdef TPACE_MPI
/* Node-local copies of the early results (TPACE_CMA): a sender's copy threads write its
 * pieces into rank 0's arrays; rank 0 hears from each how many bytes they wrote. */
typedef struct tpace_cma {
    int on;                   /* this rank writes its pieces into rank 0 itself */
    int pid;                  /* rank 0's process */
    long long *where;         /* rank 0's process, probe and arrays, as it said */
    const long long *remote;  /* ... per array, where its host memory is in rank 0 */
    int threads, started;     /* copy threads wanted, and started */
    pthread_t *thread;
    pthread_mutex_t lock;
    pthread_cond_t more, idle;
    tpace_piece *queue, **queue_end; /* pieces to write */
    tpace_piece *failed;      /* pieces the system refused to write: they go by MPI */
    int go;                   /* rank 0 said they may write */
    int quit, busy, blocks_done, error;
    size_t during, after;     /* bytes written while this rank's blocks ran, and after */
    MPI_Request go_req;
    long long done_out;       /* the bytes written, said to rank 0 at the end */
    int *of;                  /* rank 0: per rank, 1 where it writes into this process */
    int *done_in;             /* ... 1 once it said how many bytes */
    long long *done_of;       /* ... the bytes it said */
    MPI_Request *done_req;
    size_t bytes;             /* ... all the bytes they wrote */
} tpace_cma;
#endif

/* One executor's part beyond its tpace_rt. */
typedef struct tpace_device {
    struct tpace_scale *s;
    int g, device;            /* among this process's executors; the device it drives */
    long own_lo, own_hi;      /* its slab */
    long from, to;            /* the planes it computes: its slab and the ghost planes k steps read */
    int within[2];            /* 1: every plane of its ghost region below / above is in the slab of another
                               * executor of this process (local_side, or a run of one block) */
    int local_side[2];        /* 1: every plane of its ghost region below / above is in the slab of another
                               * executor of this process, which brings it there as it writes it back */
    int peer[2];              /* ... device to device (peer copies); 0: into its host copies */
    char **ghost_host[2][2];  /* [side][block parity]: per array moved in, host copies of those planes (parity 1:
                               * exchanged arrays on a local side, which blocks fill in turns) */
    char **ghost_dev[2][2];   /* [side][block parity]: per exchanged array, those planes on its device (peer) */
    size_t ghost_dev_bytes;   /* their device memory */
    size_t peer_bytes;        /* bytes it copied into its neighbours' ghost planes, device to device */
    size_t host_ghost_bytes;  /* bytes of ghost planes it copied through host memory */
    size_t pulled_bytes;      /* bytes of a neighbour rank's planes it copied out of that rank's memory */
    int late_above;           /* the first block's host copies of its ghost planes above, still to take (the
                               * caller's thread takes them while the block runs: tpace_ghosts_late) */
    long late_lo, late_hi;    /* ... planes [late_lo, late_hi), which their device's downloads wait for (the
                               * first block only; empty after it) */
    size_t late_bytes;        /* ... their bytes (counted by the caller's thread alone) */
    int below_in_place;       /* the first block uploads its exchanged arrays' ghost planes below straight from
                               * the host arrays, where the device below overwrites them only with its last
                               * downloads: those wait until this device's uploads of them are done (it clears
                               * this then: tpace_ghost_read) */
    long below_lo, below_hi;  /* ... planes [below_lo, below_hi) (the first block only; empty after it) */
    long below_last;          /* ... the chunk whose upload reads the last of them */
    size_t in_place_bytes;    /* bytes of ghost planes its blocks upload straight from the host arrays */
    int beyond[2];            /* [side]: its ghost planes there lie beyond this rank, and page-locked in this
                               * rank's host arrays, where the program set them up and nothing writes them
                               * (tpace_beyond_in_place): the first block uploads them from there */
    double fill_wait_s;       /* seconds its chunks waited for a neighbour rank's message (tpace_ghost_fill) */
    double fill_copy_s;       /* ... and copied that rank's planes into its ghost copies */
    double results_at;        /* when its results were in place */
    tpace_final *finals;      /* the last block's chunks whose planes go to rank 0, in the order issued */
    long nfinals, finals_cap;
} tpace_device;

/* What the executors of this process share. */
typedef struct tpace_scale {
    int local, devices;    /* executors here; devices of all ranks */
    tpace_rt *rt;          /* per local executor */
    tpace_device *dev;     /* ... and its part here */
    tpace_array *arrays;   /* the caller's arrays (host memory of the whole grid) */
    int narrays;
    tpace_array *copies;   /* per executor, its view of them */
    tpace_reduction *red_copies; /* per executor, its reductions */
    int nreds;
    long *dims;            /* per executor, its grid's first index and extent per dimension */
    const tpace_shape *shape;
    tpace_shape slab_shape; /* the plan every executor runs */
    const tpace_sweep *sweeps;
    int nsweeps;
    const tpace_fused *fused;
    const void *in;
    long max_tau;
    long lo, n;            /* the grid's cut axis */
    size_t plane;          /* elements per plane */
    long rank_lo, rank_hi; /* the planes this rank's executors own */
    long k;                /* steps per block */
    long t;                /* the block being run: its first step, */
    int kb;                /* ... and its steps */
    tpace_crew crew;
    int arrived[2];        /* threads: a neighbour rank's ghost planes are in s->out[side] */
    const long *ranks_lo, *ranks_hi; /* per rank, the planes its devices own */
    /* Results to rank 0 as the chunks finish (tpace_early): */
    int early;             /* several ranks and some array goes to rank 0 alone */
    int live;              /* the last block runs: the caller's thread moves the pieces */
    tpace_piece *handed;   /* pieces the devices handed over, not yet sent (the crew's lock) */
    tpace_piece **handed_end;
    tpace_piece *sent;     /* pieces sent, kept until their messages are done */
    size_t sent_during, sent_after; /* bytes this rank sent while its blocks ran, and after */
    long late_delay_ms;    /* for tests (TPACE_LATE_GHOSTS_DELAY_MS): the caller's thread waits this long before
                            * it copies the first block's ghost planes above a device (tpace_ghosts_late) */
    int in_place;          /* TPACE_IN_PLACE=0: ghost planes are copied, never read in place in the host arrays
                            * (tpace_below_in_place, tpace_beyond_in_place, tpace_read_in_place) */
    long below_delay_ms;   /* for tests (TPACE_BELOW_DELAY_MS): a device waits this long before it uploads the
                            * first block's ghost planes below it in place (tpace_ghost_fill) */
    long delay_ms;         /* for tests (TPACE_RESULTS_DELAY_MS): rank 0 takes its last block's ghost planes this
                            * much later, another rank holds each final range back this long */
#ifdef TPACE_MPI
    MPI_Request recv[2], send[2];
    int pending[2];        /* a neighbour rank's ghost planes still on their way */
    /* Ghost planes between ranks of one node: the receiver copies them straight out of the
     * sender's memory (process_vm_readv, several threads) once the sender says where: */
    int pull[2];           /* [side]: this rank takes the neighbour's planes so */
    int pulled[2];         /* [side]: the neighbour takes this rank's planes so */
    long long *where_out[2], *where_in[2]; /* [side]: {pid, bytes, then per array where its planes are (0: not
                            * exchanged)} said and heard */
    MPI_Request said[2], ack[2];
    int acked[2];          /* [side]: this block's acknowledgement sent to the neighbour (its planes taken) */
    int taken[2];          /* [side]: this rank's executors took the neighbour's planes (threads: the caller
                            * acknowledges) */
    /* The planes above this rank's slab that the neighbour above reads next are lent, not
     * packed: it copies them out of the host arrays, which this rank's last chunks
     * overwrite only after it says it has them (tpace_download_gate). */
    int lent;              /* this block lends them */
    long lent_lo, lent_hi; /* ... planes [lent_lo, lent_hi) */
    int lent_back;         /* ... and the neighbour has taken them */
    long pull_delay_ms;    /* for tests (TPACE_PULL_DELAY_MS): an executor waits this long before it copies the
                            * planes the neighbour below lent it out of that rank's memory */
    size_t out_cap[2];     /* bytes s->out[side] holds (kept from block to block) */
    size_t ghost_pulled, ghost_by_mpi; /* bytes of neighbours' planes taken each way */
    double pack_s;         /* seconds the blocks' starts spent packing this rank's edge planes */
    /* With threads the caller's thread packs a side's edge planes while the executors start
     * the block (tpace_exchange_send); until then no download may overwrite them. */
    long pack_delay_ms;      /* for tests (TPACE_PACK_DELAY_MS): the caller's thread waits this long before it
                              * packs this rank's edge planes */
    int to_send[2];          /* [side]: this rank's edge planes still to send (or say where they are) */
    int packing[2];          /* [side]: ... and to pack first */
    long pack_lo[2], pack_hi[2]; /* ... planes [pack_lo, pack_hi) */
    char *pack_into[2];      /* ... into this part of s->out[side] */
    size_t send_bytes[2];    /* [side]: bytes of this rank's edge planes the neighbour gets */
    char *out[2];          /* [side]: the neighbour's planes [in_lo, in_hi) received, then this rank's edge planes */
    long in_lo[2], in_hi[2];
    MPI_Request *req;      /* the results' messages, sent or (rank 0) received */
    size_t *req_bytes;     /* ... and their bytes (0: an announcement) */
    int *req_done;         /* scratch for MPI_Testsome */
    int nreq, req_cap;
    size_t *expect_of, *got_of; /* rank 0: per rank, bytes it sends early, and announced so far */
    size_t announced, arrived_bytes, arrived_during; /* ... all announced so far, received, received while its blocks ran */
    tpace_cma cma;
    int cma_mode;          /* TPACE_CMA as rank 0 read it: 1 where the system lets it, 0 never, 2 (tests) refused */
    long long head_in[3];  /* rank 0: the announcement being received */
    MPI_Request head_req;
    int head_posted;
#endif
} tpace_scale;

/* Whether array a's planes change from block to block (its ghost planes are exchanged). */
static int tpace_exchanged(const tpace_array *a)
{
    return a->transfer == TPACE_UPDOWN;
}

/* Host threads' calls are checked too. */
static void tpace_thread_check(int err, const char *call)
{
    if (err == 0)
        return;
    char msg[256];
    snprintf(msg, sizeof msg, "%s failed: %s", call, strerror(err));
    tpace_stop("host threads", msg);
}
#define TPACE_PTHREAD(call) tpace_thread_check((call), #call)

/* ---- Wide host copies: ghost planes and results of gigabytes, on several cores ---- */

/* A copy below this size is one memcpy (threads cost more than they save);
 * TPACE_WIDE_COPY_MIN=BYTES another size (tests: 0, every copy on several threads). */
#define TPACE_WIDE_COPY_MIN (64L << 20)
/* Measured on a 2-GPU H100 node's 32 cores (2026-11-26, bench/cma/cma_rate.c): memcpy 6.3,
 * 10.9, 20.7, 31.7, 38.0 GB/s on 1, 2, 4, 8, 16 threads; process_vm_writev alike. */
#define TPACE_WIDE_COPY_THREADS 16

/* One thread's part of a wide copy. */
typedef struct tpace_copy_part {
    char *dst;
    const char *src;
    size_t bytes;
    int pid; /* 0: src in this process; else src in process pid (process_vm_readv) */
    int err; /* 0, or the errno that refused it */
} tpace_copy_part;

/* Move `bytes` between `local` in this process and `remote` in process `pid`: into it
 * (`into`: process_vm_writev) or out of it (process_vm_readv). 0, or the errno that
 * refused it. */
static int tpace_cma_move(int pid, char *local, long long remote, size_t bytes, int into)
{
#ifdef TPACE_CMA_ABLE
    while (bytes > 0) {
        struct iovec here = {local, bytes}, there = {(void *)(size_t)remote, bytes};
        const ssize_t moved = into ? process_vm_writev((pid_t)pid, &here, 1, &there, 1, 0)
                                   : process_vm_readv((pid_t)pid, &here, 1, &there, 1, 0);
        if (moved < 0 && errno == EINTR)
            continue;
        if (moved <= 0)
            return moved < 0 ? errno : EIO;
        local += moved;
        remote += moved;
        bytes -= (size_t)moved;
    }
    return 0;
#else
    (void)pid;
    (void)local;
    (void)remote;
    (void)bytes;
    (void)into;
    return ENOSYS;
#endif
}

static void *tpace_copy_part_main(void *arg)
{
    tpace_copy_part *part = (tpace_copy_part *)arg;
    if (part->src == NULL) /* tpace_touch_wide */
        memset(part->dst, 0, part->bytes);
    else if (part->pid == 0)
        memcpy(part->dst, part->src, part->bytes);
    else
        part->err = tpace_cma_move(part->pid, part->dst, (long long)(size_t)part->src, part->bytes, 0);
    return NULL;
}

/* Copy `bytes` from `src` (in process `pid`; 0: this one; NULL: zeros) to `dst` on up to
 * `threads` host threads: one core copies about 6 GB/s, and a block's ghost planes or a
 * rank's results are gigabytes (this thread copies a part too). 0, or the errno that
 * refused a part. */
static int tpace_copy_from(int pid, void *dst, const void *src, size_t bytes, int threads)
{
    threads = TPACE_MIN(TPACE_MAX(threads, 1), TPACE_WIDE_COPY_THREADS);
    if (bytes < (size_t)tpace_env_long("TPACE_WIDE_COPY_MIN", TPACE_WIDE_COPY_MIN, 0, 1L << 50) ||
        bytes < (size_t)threads)
        threads = 1;
    pthread_t thread[TPACE_WIDE_COPY_THREADS];
    tpace_copy_part part[TPACE_WIDE_COPY_THREADS];
    const size_t each = (bytes + (size_t)threads - 1) / (size_t)threads;
    for (int i = 0; i < threads; i++) {
        const size_t at = TPACE_MIN((size_t)i * each, bytes);
        part[i].dst = (char *)dst + at;
        part[i].src = src == NULL ? NULL : (const char *)src + at;
        part[i].bytes = TPACE_MIN(each, bytes - at);
        part[i].pid = pid;
        part[i].err = 0;
    }
    int started = 0;
    for (int i = 1; i < threads; i++, started++)
        if (pthread_create(&thread[i], NULL, tpace_copy_part_main, &part[i]) != 0)
            break; /* no thread to be had: this one copies the rest */
    tpace_copy_part_main(&part[0]);
    for (int i = started + 1; i < threads; i++)
        tpace_copy_part_main(&part[i]);
    for (int i = 1; i <= started; i++)
        TPACE_PTHREAD(pthread_join(thread[i], NULL));
    for (int i = 0; i < threads; i++)
        if (part[i].err)
            return part[i].err;
    return 0;
}

/* memcpy on up to `threads` host threads (tpace_copy_from). */
static void tpace_copy_wide(void *dst, const void *src, size_t bytes, int threads)
{
    (void)tpace_copy_from(0, dst, src, bytes, threads);
}

/* Fresh memory's pages faulted in on up to `threads` host threads, so that the copies
 * into it later run at the memory's rate (a first touch costs about as much as the copy). */
TPACE_MAYBE_UNUSED static void tpace_touch_wide(void *dst, size_t bytes, int threads)
{
    (void)tpace_copy_from(0, dst, NULL, bytes, threads);
}

/* Threads each device's host thread may copy with: the process's cores shared among its
 * devices, two at least (a copy waits on memory more than on its core). */
static int tpace_copy_threads(const tpace_scale *s)
{
    return TPACE_MAX(tpace_host_cores() / TPACE_MAX(s->local, 1), 2);
}

/* Executor r's ghost region on one side, [lo, hi). */
static void tpace_ghost_region(const tpace_rt *r, int side, long *lo, long *hi)
{
    const tpace_plan *p = &r->plan;
    *lo = side == 0 ? p->s.lo : r->own_hi;
    *hi = side == 0 ? r->own_lo : p->s.lo + p->s.n;
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

/* Copy planes [from, to) of every exchanged array from the host arrays into `buf`. */
static void tpace_edge_pack(const tpace_scale *s, long from, long to, char *buf)
{
    size_t at = 0;
    for (int a = 0; a < s->narrays; a++) {
        const tpace_array *arr = &s->arrays[a];
        if (!tpace_exchanged(arr))
            continue;
        const size_t bytes = (size_t)(to - from) * s->plane * arr->elem;
        tpace_copy_wide(buf + at, (const char *)arr->host + (size_t)(from - s->lo) * s->plane * arr->elem, bytes,
                        tpace_host_cores());
        at += bytes;
    }
}

/* The neighbour rank on `side` (0 below this one's planes, 1 above), or -1 where there is none. */
static int tpace_neighbour(int side)
{
    const tpace_world *w = &tpace_the_world;
    const int q = side == 0 ? w->rank - 1 : w->rank + 1;
    return q >= 0 && q < w->ranks ? q : -1;
}

/* What a neighbour rank reads to check that this one may read its memory. */
static long long tpace_exchange_token = 0;

/* Before the blocks (after tpace_results_setup): which neighbour ranks' ghost planes this
 * rank copies straight out of their memory (same node, the system lets it: a probe read
 * proves it; TPACE_CMA=0: none), and which neighbours do so from this one. */
static void tpace_exchange_setup(tpace_scale *s)
{
    const tpace_world *w = &tpace_the_world;
    s->pull[0] = s->pull[1] = s->pulled[0] = s->pulled[1] = 0;
    if (s->cma_mode == 0)
        return;
#ifdef TPACE_CMA_ABLE
    (void)prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0); /* Yama: the neighbours may; refused: the probe says */
    tpace_exchange_token = ((long long)getpid() << 20) ^ (long long)(tpace_now() * 1e6) ^ 0x7470616365LL;
    for (int side = 0; side < 2; side++) {
        const int next = tpace_neighbour(side), there = next >= 0 ? next : MPI_PROC_NULL;
        long long mine[4] = {w->node, (long long)getpid(), (long long)(size_t)&tpace_exchange_token,
                             tpace_exchange_token},
                  theirs[4] = {-1, 0, 0, 0};
        TPACE_MPI_CALL(MPI_Sendrecv(mine, 4, MPI_LONG_LONG, there, 9, theirs, 4, MPI_LONG_LONG, there, 9,
                                    MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        long long seen = 0;
        int can = there != MPI_PROC_NULL && theirs[0] == w->node && s->cma_mode == 1 &&
                  tpace_copy_from((int)theirs[1], &seen, (const void *)(size_t)theirs[2], sizeof seen, 1) == 0 &&
                  seen == theirs[3];
        int they = 0;
        TPACE_MPI_CALL(MPI_Sendrecv(&can, 1, MPI_INT, there, 10, &they, 1, MPI_INT, there, 10, MPI_COMM_WORLD,
                                    MPI_STATUS_IGNORE));
        s->pull[side] = can;
        s->pulled[side] = there != MPI_PROC_NULL && they;
    }
#endif
}

/* A neighbour rank's message for this block on `side` has come: its planes themselves (by
 * MPI, in s->out[side]), or where they are in its memory, which the executors copy them
 * out of (tpace_ghost_from_rank). They never pass through the host arrays, whose planes
 * of other ranks only the results write (tpace_results_pump). */
static void tpace_exchange_receive(tpace_scale *s, int side)
{
    TPACE_MPI_CALL(MPI_Wait(&s->recv[side], MPI_STATUS_IGNORE));
    const size_t in_bytes = tpace_edge_bytes(s, s->in_lo[side], s->in_hi[side]);
    if (s->pull[side]) {
        if ((size_t)s->where_in[side][1] != in_bytes)
            tpace_stop("MPI", "a neighbour rank offered ghost planes of another size than this rank needs");
    } else {
        s->ghost_by_mpi += in_bytes;
    }
    s->pending[side] = 0;
}

/* Tell the neighbour on `side` that this rank has its planes (or will not read them):
 * until then it keeps them where it said. Once a block. */
static void tpace_exchange_ack(tpace_scale *s, int side)
{
    if (!s->pull[side] || s->acked[side])
        return;
    TPACE_MPI_CALL(MPI_Isend(NULL, 0, MPI_BYTE, tpace_neighbour(side), 8, MPI_COMM_WORLD, &s->ack[side]));
    s->acked[side] = 1;
}

/* Executor r's ghost planes beyond this rank on `side`: the neighbour rank's planes
 * [in_lo, in_hi) of every exchanged array, copied straight into its ghost copies out of
 * the neighbour's memory (where it said they are: packed, or its host arrays) on this
 * executor's share of the cores, or from the MPI message in s->out[side], one array
 * after another. */
static void tpace_ghost_from_rank(tpace_rt *r, int side)
{
    tpace_scale *s = (tpace_scale *)r->scale;
    tpace_device *d = &s->dev[r - s->rt];
    long lo, hi;
    tpace_ghost_region(r, side, &lo, &hi);
    const long first = lo, last = hi; /* the ghost copy's planes */
    lo = TPACE_MAX(lo, s->in_lo[side]);
    hi = TPACE_MIN(hi, s->in_hi[side]);
    if (s->pull[side] && side == 0 && s->pull_delay_ms > 0) /* tests: late to take the planes lent from below */
        nanosleep(&(struct timespec){s->pull_delay_ms / 1000, s->pull_delay_ms % 1000 * 1000000L}, NULL);
    size_t at = 0;
    for (int a = 0; a < r->narrays; a++) {
        const tpace_array *arr = &r->arrays[a];
        if (!tpace_exchanged(arr))
            continue;
        const size_t plane = s->plane * arr->elem;
        /* Read in place in the first block, the planes the neighbour does not send are as the
         * program set them up in this rank's host arrays (never written here): copied from there. */
        for (int piece = 0; piece < 2 && d->beyond[side] && r->ghost[side][a] != NULL; piece++) {
            const long from = piece == 0 ? first : TPACE_MAX(hi, first), to = piece == 0 ? TPACE_MIN(lo, last) : last;
            if (from < to)
                tpace_copy_wide(r->ghost[side][a] + (size_t)(from - first) * plane, tpace_host_plane(r, arr, from),
                                (size_t)(to - from) * plane, tpace_copy_threads(s));
        }
        if (lo < hi && r->ghost[side][a] != NULL) {
            char *dst = r->ghost[side][a] + (size_t)(lo - first) * plane;
            const size_t bytes = (size_t)(hi - lo) * plane, skip = (size_t)(lo - s->in_lo[side]) * plane;
            if (s->pull[side]) {
                const long long *where = s->where_in[side];
                const void *from = (const void *)(size_t)(where[2 + a] + (long long)skip);
                const int err = tpace_copy_from((int)where[0], dst, from, bytes, tpace_copy_threads(s));
                if (err != 0) {
                    char msg[300];
                    snprintf(msg, sizeof msg,
                             "copying a neighbour rank's ghost planes out of its memory failed (%s); set TPACE_CMA=0 "
                             "(by MPI instead)",
                             strerror(err));
                    tpace_stop("MPI", msg);
                }
                d->pulled_bytes += bytes;
            } else {
                tpace_copy_wide(dst, s->out[side] + at + skip, bytes, tpace_copy_threads(s));
                d->host_ghost_bytes += bytes;
            }
        }
        at += (size_t)(s->in_hi[side] - s->in_lo[side]) * plane;
    }
}

#endif

/* Under the crew's lock, wait until *flag is 0 (cleared and said so: tpace_crew_tell). */
static void tpace_crew_wait_cleared(tpace_crew *c, const int *flag)
{
    TPACE_PTHREAD(pthread_mutex_lock(&c->lock));
    while (*flag)
        TPACE_PTHREAD(pthread_cond_wait(&c->arrived, &c->lock));
    TPACE_PTHREAD(pthread_mutex_unlock(&c->lock));
}

/* Set *flag to `value` and tell the executors waiting for it (under the crew's lock where
 * they run on threads of their own): the caller's thread, or an executor whose uploads another
 * device's downloads wait for (tpace_ghost_read). */
static void tpace_crew_tell(tpace_crew *c, int *flag, int value)
{
    if (c->threads)
        TPACE_PTHREAD(pthread_mutex_lock(&c->lock));
    *flag = value;
    if (c->threads) {
        TPACE_PTHREAD(pthread_cond_broadcast(&c->arrived));
        TPACE_PTHREAD(pthread_mutex_unlock(&c->lock));
    }
}

/* Before executor r downloads planes [from, to) of its slab: where another device still
 * uploads them as its first block's ghost planes below, read in place (tpace_ghost_read),
 * or the caller's thread is still copying them as another device's first-block ghost
 * planes above (tpace_ghosts_late) or
 * packing them for a neighbour rank (tpace_exchange_start), wait until it has; where the
 * neighbour rank above may still be copying them out of this rank's host arrays (lent this
 * block), wait until it says it has them; its message comes to the caller's thread (the
 * only one that calls MPI), which says so, or, without threads, here. */
static void tpace_download_gate(tpace_rt *r, long from, long to)
{
    tpace_scale *s = (tpace_scale *)r->scale;
    for (int g = 0; g < s->local && s->crew.threads; g++) {
        if (to > s->dev[g].late_lo && from < s->dev[g].late_hi) /* another device's ghost planes, still to copy */
            tpace_crew_wait_cleared(&s->crew, &s->dev[g].late_above);
        if (to > s->dev[g].below_lo && from < s->dev[g].below_hi) /* ... or read in place, still to upload */
            tpace_crew_wait_cleared(&s->crew, &s->dev[g].below_in_place);
    }
#ifdef TPACE_MPI
    for (int side = 0; side < 2 && s->crew.threads; side++) /* this rank's edge planes, still to pack */
        if (to > s->pack_lo[side] && from < s->pack_hi[side])
            tpace_crew_wait_cleared(&s->crew, &s->packing[side]);
    if (!s->lent || to <= s->lent_lo || from >= s->lent_hi)
        return;
    if (s->crew.threads) {
        TPACE_PTHREAD(pthread_mutex_lock(&s->crew.lock));
        while (!s->lent_back)
            TPACE_PTHREAD(pthread_cond_wait(&s->crew.arrived, &s->crew.lock));
        TPACE_PTHREAD(pthread_mutex_unlock(&s->crew.lock));
    } else if (!s->lent_back) {
        TPACE_MPI_CALL(MPI_Wait(&s->send[1], MPI_STATUS_IGNORE));
        s->lent_back = 1;
    }
#endif
}

/* Copy planes [from, to) of executor r's ghost region on `side` (0 below its slab, 1
 * above) from the host arrays into its ghost copies. After the first block only an
 * exchanged array's from another rank's planes: an array no sweep writes back before the
 * last block (read-only, or a temporary) is as the first block found it, and this
 * process's devices bring their planes themselves (tpace_planes_out). Returns the bytes
 * copied. */
static size_t tpace_ghost_copy(tpace_rt *r, int side, long from, long to)
{
    size_t copied = 0;
    const tpace_plan *p = &r->plan;
    tpace_scale *s = (tpace_scale *)r->scale;
    const tpace_device *d = &s->dev[r - s->rt];
    const long first = side == 0 ? p->s.lo : r->own_hi; /* the ghost copy's first plane */
    for (int a = 0; a < r->narrays && from < to; a++) {
        const tpace_array *arr = &r->arrays[a];
        const size_t plane = p->s.plane * arr->elem;
        if (r->ghost[side][a] == NULL || (s->t > 0 && (!tpace_exchanged(arr) || d->local_side[side])))
            continue;
        if (r->ghost_dev[side] != NULL && r->ghost_dev[side][a] != NULL) /* the first block's, on the device */
            continue;
        if (r->ghost[side][a] == tpace_host_plane(r, arr, first)) /* read in place */
            continue;
        tpace_copy_wide(r->ghost[side][a] + (size_t)(from - first) * plane,
                        (const char *)arr->host + (size_t)(from - p->s.lo) * plane, (size_t)(to - from) * plane,
                        tpace_copy_threads(s));
        copied += (size_t)(to - from) * plane;
    }
    return copied;
}

/* At a block's start, before any device's chunks: the ghost planes as they stand now
 * (`later`: only those within this rank's planes, which its other devices are about to
 * overwrite; the rest arrive from a neighbour rank). */
static void tpace_ghost_start(tpace_rt *r, int side, int later)
{
    tpace_scale *s = (tpace_scale *)r->scale;
    long lo, hi;
    tpace_ghost_region(r, side, &lo, &hi);
    if (later) { /* the planes beyond this rank come from a neighbour rank, when the executor needs them */
        lo = TPACE_MAX(lo, s->rank_lo);
        hi = TPACE_MIN(hi, s->rank_hi);
    }
    s->dev[r - s->rt].host_ghost_bytes += tpace_ghost_copy(r, side, lo, hi);
    r->ghost_ready[side] = !later;
}

/* The caller's thread as the first block starts: the host copies of ghost planes above a
 * device that another device of this process overwrites with its first downloads
 * (tpace_device_ghosts left them), each device told when its are in place; until then
 * those downloads wait (tpace_download_gate), and the device's last chunk too
 * (tpace_ghost_fill). The devices meanwhile upload and compute their first chunks. */
static void tpace_ghosts_late(tpace_scale *s)
{
    for (int g = 0; g < s->local; g++) {
        tpace_device *d = &s->dev[g];
        if (!d->late_above) /* only the caller's thread clears it, and set before the phase began */
            continue;
        if (s->late_delay_ms > 0) /* tests: late to copy them, the block's downloads under way */
            nanosleep(&(struct timespec){s->late_delay_ms / 1000, s->late_delay_ms % 1000 * 1000000L}, NULL);
        d->late_bytes += tpace_ghost_copy(&s->rt[g], 1, d->late_lo, d->late_hi);
        tpace_crew_tell(&s->crew, &d->late_above, 0);
    }
}

/* The executor needs its ghost planes beyond this rank: wait for the neighbour rank's
 * message, then copy them from it (tpace_upload_planes calls this through r->ghost_fill).
 * On a thread of its own, the caller's thread receives it (the only one that calls MPI)
 * and says so. */
static void tpace_ghost_fill(tpace_rt *r, int side)
{
    tpace_scale *s = (tpace_scale *)r->scale;
    tpace_device *self = &s->dev[r - s->rt];
    if (side == 0 && self->below_in_place) { /* read in place, in the host arrays: nothing to copy */
        if (s->below_delay_ms > 0) /* tests: late to read them, the device below's block under way */
            nanosleep(&(struct timespec){s->below_delay_ms / 1000, s->below_delay_ms % 1000 * 1000000L}, NULL);
        r->ghost_ready[0] = 1;
        return;
    }
    if (side == 1 && s->t == 0 && self->late_lo < self->late_hi) { /* the caller's thread copies them */
        tpace_crew_wait_cleared(&s->crew, &self->late_above);
        r->ghost_ready[1] = 1;
        return;
    }
    const double wait_start = tpace_now();
    if (s->crew.threads) {
        TPACE_PTHREAD(pthread_mutex_lock(&s->crew.lock));
        while (!s->arrived[side])
            TPACE_PTHREAD(pthread_cond_wait(&s->crew.arrived, &s->crew.lock));
        TPACE_PTHREAD(pthread_mutex_unlock(&s->crew.lock));
    }
#ifdef TPACE_MPI
    tpace_device *d = self;
    if (!s->crew.threads && s->pending[side])
        tpace_exchange_receive(s, side);
    const double copy_start = tpace_now();
    d->fill_wait_s += copy_start - wait_start;
    tpace_ghost_from_rank(r, side);
    d->fill_copy_s += tpace_now() - copy_start;
    if (!s->crew.threads) {
        tpace_exchange_ack(s, side);
    } else { /* the caller's thread acknowledges */
        TPACE_PTHREAD(pthread_mutex_lock(&s->crew.lock));
        s->taken[side] = 1;
        TPACE_PTHREAD(pthread_cond_broadcast(&s->crew.done));
        TPACE_PTHREAD(pthread_mutex_unlock(&s->crew.lock));
    }
#else
    (void)wait_start;
#endif
    r->ghost_ready[side] = 1;
}

/* Chunk ch's upload of ghost planes below executor r's slab is issued (tpace_upload_planes
 * calls this through r->ghost_read). Where it reads them in place, in the host arrays
 * (the first block: tpace_below_in_place), it waits until that upload is done, and after
 * the chunk that reads the last of them lets the device below download there. (A chunk
 * past the first `slots` waits for its slot's last occupant first; the previous chunk's
 * kernels are issued by then, so only its download is issued that much later.) */
static void tpace_ghost_read(tpace_rt *r, const tpace_chunk *ch)
{
    tpace_scale *s = (tpace_scale *)r->scale;
    tpace_device *d = &s->dev[r - s->rt];
    if (!d->below_in_place) /* only this executor clears it */
        return;
    tpace_dev_flag_wait(r, tpace_dev_flag(r, ch->slot));
    if (ch->c >= d->below_last)
        tpace_crew_tell(&s->crew, &d->below_in_place, 0);
}

/* Executor r's slab planes [from, to) of chunk ch are on their way to the host: those
 * that another device of this process reads as ghost planes in the next block go to it
 * too, from r's device as they are, on ch's download queue with its downloads (so that
 * they never hold up the slot's next upload under mmtb): into its device's memory where
 * the devices reach each other (peer copies), else into its host copies, one more
 * download. Blocks take turns with two sets of them: the next block's
 * are filled while this block's are read. In the last block they are final instead, and
 * go on to rank 0 where the arrays go early (tpace_results_flag). */
static void tpace_results_flag(tpace_rt *r, const tpace_chunk *ch, long from, long to);

static void tpace_planes_out(tpace_rt *r, const tpace_chunk *ch, long from, long to)
{
    tpace_scale *s = (tpace_scale *)r->scale;
    if (ch->last_block) { /* no block after it reads them; they are final: to rank 0, where they go early */
        if (s->early && tpace_the_world.rank != 0)
            tpace_results_flag(r, ch, from, to);
        return;
    }
    const int h = (int)(r - s->rt);
    const int parity = (int)((ch->t / s->k + 1) % 2); /* the next block's set */
    for (int g = 0; g < s->local; g++) {
        const tpace_device *d = &s->dev[g];
        for (int side = 0; side < 2 && g != h; side++) {
            if (!d->local_side[side])
                continue;
            long lo, hi;
            tpace_ghost_region(&s->rt[g], side, &lo, &hi);
            const long first = lo;
            lo = TPACE_MAX(lo, from);
            hi = TPACE_MIN(hi, to);
            for (int a = 0; a < r->narrays && lo < hi; a++) {
                const tpace_array *arr = &r->arrays[a];
                if (!tpace_exchanged(arr))
                    continue;
                const size_t plane = s->plane * arr->elem, bytes = (size_t)(hi - lo) * plane;
                const char *src = tpace_buf_plane(r, arr, tpace_final_buffer(r, ch, a), ch->base, lo);
                if (d->peer[side]) {
                    tpace_dev_peer_copy(r, d->ghost_dev[side][parity][a] + (size_t)(lo - first) * plane, d->device,
                                        src, bytes, ch->out_q);
                    s->dev[h].peer_bytes += bytes;
                } else {
                    tpace_dev_download(r, d->ghost_host[side][parity][a] + (size_t)(lo - first) * plane, src, bytes,
                                       ch->out_q);
                    s->dev[h].host_ghost_bytes += bytes;
                }
            }
        }
    }
}

#ifdef TPACE_MPI
/* The planes a block of kb steps sends the neighbour on `side` ([send_from, send_to): what
 * it needs of this rank) and receives from it ([recv_from, recv_to)). */
static void tpace_exchange_planes(const tpace_scale *s, int side, long kb, long reach_lo, long reach_hi,
                                  long *send_from, long *send_to, long *recv_from, long *recv_to)
{
    *send_from = side == 0 ? s->rank_lo : s->rank_hi - kb * reach_lo;
    *send_to = side == 0 ? s->rank_lo + kb * reach_hi : s->rank_hi;
    *recv_from = side == 0 ? s->rank_lo - kb * reach_lo : s->rank_hi;
    *recv_to = side == 0 ? s->rank_lo : s->rank_hi + kb * reach_hi;
}

/* Whether this rank lends the neighbour on `side` its edge planes where they are, in the
 * host arrays (the neighbour above copies them out of this rank's memory), instead of
 * packing them. */
static int tpace_exchange_lends(const tpace_scale *s, int side)
{
    return s->pulled[side] && side == 1;
}

/* Bytes s->out[side] holds for a block of kb steps: the planes received by MPI, then this
 * rank's edge planes, packed; as much as this side needs of it. */
static size_t tpace_exchange_room(const tpace_scale *s, int side, long kb, long reach_lo, long reach_hi)
{
    long send_from, send_to, recv_from, recv_to;
    tpace_exchange_planes(s, side, kb, reach_lo, reach_hi, &send_from, &send_to, &recv_from, &recv_to);
    const size_t in_room = s->pull[side] ? 0 : tpace_edge_bytes(s, recv_from, recv_to);
    const size_t out_room = tpace_exchange_lends(s, side) ? 0 : tpace_edge_bytes(s, send_from, send_to);
    return TPACE_MAX(in_room + out_room, (size_t)1);
}

/* s->out[side] holds `need` bytes at least, kept from block to block, its pages touched
 * when it is allocated, so that the packing at a block's start runs at the memory's rate. */
static void tpace_exchange_buffer(tpace_scale *s, int side, size_t need)
{
    if (s->out_cap[side] >= need)
        return;
    free(s->out[side]);
    s->out[side] = (char *)malloc(need);
    s->out_cap[side] = need;
    if (s->out[side] == NULL)
        tpace_stop("MPI", "host memory ran out for the ghost planes");
    tpace_touch_wide(s->out[side], need, tpace_host_cores());
}

/* In the set-up, once the plan is known: the exchange buffers the blocks of k steps will
 * use, allocated and touched (their first touch cost a block's start as much as packing). */
static void tpace_exchange_reserve(tpace_scale *s, long reach_lo, long reach_hi)
{
    for (int side = 0; side < 2; side++)
        if (tpace_neighbour(side) >= 0)
            tpace_exchange_buffer(s, side, tpace_exchange_room(s, side, s->k, reach_lo, reach_hi));
}

/* This rank's edge planes for the neighbour on `side`, packed (where they are to be) and
 * sent: where they are, or themselves by MPI. Without threads at the block's start; with
 * them by the caller's thread as the executors start the block (the downloads that would
 * overwrite them wait: tpace_download_gate). */
static void tpace_exchange_send(tpace_scale *s, int side)
{
    const int peer = tpace_neighbour(side);
    if (peer < 0 || !s->to_send[side])
        return;
    s->to_send[side] = 0;
    if (s->packing[side]) {
        if (s->pack_delay_ms > 0) /* tests: late to pack, the block's downloads under way */
            nanosleep(&(struct timespec){s->pack_delay_ms / 1000, s->pack_delay_ms % 1000 * 1000000L}, NULL);
        const double pack_start = tpace_now();
        tpace_edge_pack(s, s->pack_lo[side], s->pack_hi[side], s->pack_into[side]);
        s->pack_s += tpace_now() - pack_start;
        tpace_crew_tell(&s->crew, &s->packing[side], 0);
    }
    if (s->pulled[side]) { /* where this rank's planes are; the neighbour says when it has them */
        TPACE_MPI_CALL(
            MPI_Isend(s->where_out[side], 2 + s->narrays, MPI_LONG_LONG, peer, 7, MPI_COMM_WORLD, &s->said[side]));
        TPACE_MPI_CALL(MPI_Irecv(NULL, 0, MPI_BYTE, peer, 8, MPI_COMM_WORLD, &s->send[side]));
    } else {
        TPACE_MPI_CALL(
            MPI_Isend(s->pack_into[side], (int)s->send_bytes[side], MPI_BYTE, peer, 7, MPI_COMM_WORLD, &s->send[side]));
    }
}

/* Whether the neighbour's message on `side` has come (without waiting). */
static int tpace_exchange_came(tpace_scale *s, int side)
{
    int came = 0;
    TPACE_MPI_CALL(MPI_Test(&s->recv[side], &came, MPI_STATUS_IGNORE));
    return came;
}

/* The caller's thread as the executors start a block: the neighbours' messages received as
 * they come (the executors told), and this rank's edge planes packed and sent meanwhile, a
 * message that has come first (an executor may be waiting for it); never waiting for one
 * before packing, since the neighbour may be packing for this rank too. */
static void tpace_exchange_start(tpace_scale *s)
{
    tpace_crew *c = &s->crew;
    int left[2] = {1, 1};
    while (left[0] || left[1]) {
        int moved = 0;
        for (int side = 0; side < 2; side++) {
            if (!left[side] || (s->pending[side] && !tpace_exchange_came(s, side)))
                continue;
            if (s->pending[side])
                tpace_exchange_receive(s, side);
            tpace_crew_tell(c, &s->arrived[side], 1);
            left[side] = 0;
            moved = 1;
        }
        for (int side = 0; side < 2 && !moved; side++)
            if (s->to_send[side]) {
                tpace_exchange_send(s, side);
                moved = 1;
            }
        if (!moved)
            nanosleep(&(struct timespec){0, 100000L}, NULL);
    }
    for (int side = 0; side < 2; side++)
        tpace_exchange_send(s, side);
}

/* Post the block's exchange with the neighbour ranks: this rank's edge planes out, the
 * planes its ghost regions reach in (never into the host arrays: see
 * tpace_exchange_receive). A neighbour of this node copies them out of this rank's memory
 * itself: the planes below, which this block's first chunks overwrite, from a packed copy;
 * the planes above, which its last chunks overwrite, from the host arrays themselves
 * (lent: tpace_download_gate keeps them until the neighbour has them). Elsewhere they go
 * by MPI, packed. */
static void tpace_exchange_post(tpace_scale *s, long reach_lo, long reach_hi)
{
    const int words = 2 + s->narrays;
    s->lent = 0;
    s->lent_back = 0;
    for (int side = 0; side < 2; side++) {
        s->pending[side] = 0;
        s->to_send[side] = 0;
        s->acked[side] = 0;
        s->taken[side] = 0;
        const int peer = tpace_neighbour(side);
        if (peer < 0)
            continue;
        long send_from, send_to, recv_from, recv_to;
        tpace_exchange_planes(s, side, s->kb, reach_lo, reach_hi, &send_from, &send_to, &recv_from, &recv_to);
        s->in_lo[side] = recv_from;
        s->in_hi[side] = recv_to;
        const size_t out_bytes = tpace_edge_bytes(s, send_from, send_to);
        const size_t in_bytes = tpace_edge_bytes(s, recv_from, recv_to);
        if (out_bytes > (size_t)0x7fffffff || in_bytes > (size_t)0x7fffffff)
            tpace_stop("MPI", "a block's ghost planes exceed 2 GiB per message; lower TPACE_K");
        if (s->where_out[side] == NULL) {
            s->where_out[side] = (long long *)calloc((size_t)words, sizeof(long long));
            s->where_in[side] = (long long *)calloc((size_t)words, sizeof(long long));
            if (s->where_out[side] == NULL || s->where_in[side] == NULL)
                tpace_stop("MPI", "host memory ran out for the ghost planes");
        }
        const int lend = tpace_exchange_lends(s, side);
        const size_t in_room = s->pull[side] ? 0 : in_bytes;
        tpace_exchange_buffer(s, side, tpace_exchange_room(s, side, s->kb, reach_lo, reach_hi));
        char *outgoing = s->out[side] + in_room;
        s->packing[side] = !lend;
        s->pack_lo[side] = send_from;
        s->pack_hi[side] = send_to;
        s->pack_into[side] = outgoing;
        s->send_bytes[side] = out_bytes;
        if (s->pull[side]) /* where the neighbour's planes are: the executors copy them themselves */
            TPACE_MPI_CALL(MPI_Irecv(s->where_in[side], words, MPI_LONG_LONG, peer, 7, MPI_COMM_WORLD,
                                     &s->recv[side]));
        else
            TPACE_MPI_CALL(MPI_Irecv(s->out[side], (int)in_bytes, MPI_BYTE, peer, 7, MPI_COMM_WORLD, &s->recv[side]));
        if (s->pulled[side]) { /* say where this rank's planes are; the neighbour says when it has them */
            long long *where = s->where_out[side];
            where[0] = (long long)getpid();
            where[1] = (long long)out_bytes;
            size_t at = 0;
            for (int a = 0; a < s->narrays; a++) {
                const tpace_array *arr = &s->arrays[a];
                where[2 + a] = 0;
                if (!tpace_exchanged(arr))
                    continue;
                const size_t plane = s->plane * arr->elem;
                where[2 + a] = lend ? (long long)(size_t)((char *)arr->host + (size_t)(send_from - s->lo) * plane)
                                    : (long long)(size_t)(outgoing + at);
                at += (size_t)(send_to - send_from) * plane;
            }
            if (lend) {
                s->lent = 1;
                s->lent_lo = send_from;
                s->lent_hi = send_to;
            }
        }
        s->pending[side] = 1;
        s->to_send[side] = 1;
        if (!s->crew.threads || !s->packing[side]) /* with threads, packing waits for the block's start */
            tpace_exchange_send(s, side);
    }
}

/* The caller's thread while the executors run a block: acknowledge the neighbours' planes
 * the executors have taken, and hear whether the neighbour above has taken the planes
 * this rank lent it (then the executors may overwrite them). The crew's lock held. */
static void tpace_exchange_progress(tpace_scale *s)
{
    tpace_crew *c = &s->crew;
    for (int side = 0; side < 2; side++)
        if (s->taken[side] && !s->acked[side]) {
            TPACE_PTHREAD(pthread_mutex_unlock(&c->lock));
            tpace_exchange_ack(s, side);
            TPACE_PTHREAD(pthread_mutex_lock(&c->lock));
        }
    if (s->lent && !s->lent_back) {
        int back = 0;
        TPACE_PTHREAD(pthread_mutex_unlock(&c->lock));
        TPACE_MPI_CALL(MPI_Test(&s->send[1], &back, MPI_STATUS_IGNORE));
        TPACE_PTHREAD(pthread_mutex_lock(&c->lock));
        if (back) {
            s->lent_back = 1;
            TPACE_PTHREAD(pthread_cond_broadcast(&c->arrived));
        }
    }
}

/* Whether the caller's thread still has something of the exchange to watch this block (the
 * first block has no exchange; a side this rank pulls from has a neighbour). */
static int tpace_exchange_watching(const tpace_scale *s)
{
    for (int side = 0; side < 2; side++)
        if (s->pull[side] && !s->acked[side] && s->t > 0)
            return 1;
    return s->lent && !s->lent_back;
}

/* The block is done: its messages are too (their buffers go with the next block). Every
 * acknowledgement first (a neighbour's planes this rank did not read are acknowledged
 * all the same), then the waits. */
static void tpace_exchange_end(tpace_scale *s)
{
    for (int side = 0; side < 2; side++) {
        if (tpace_neighbour(side) < 0)
            continue;
        if (s->pending[side])
            tpace_exchange_receive(s, side);
        tpace_exchange_ack(s, side);
    }
    for (int side = 0; side < 2; side++) {
        if (tpace_neighbour(side) < 0)
            continue;
        TPACE_MPI_CALL(MPI_Wait(&s->send[side], MPI_STATUS_IGNORE));
        if (s->pulled[side])
            TPACE_MPI_CALL(MPI_Wait(&s->said[side], MPI_STATUS_IGNORE));
        if (s->pull[side])
            TPACE_MPI_CALL(MPI_Wait(&s->ack[side], MPI_STATUS_IGNORE));
    }
    s->lent = 0; /* taken (the wait above): no download after the block waits for it */
}

#endif

/* ---- Results to rank 0 as the chunks finish ----
 * An array that only output reads after the pipeline (to_root) goes to rank 0 alone, and
 * need not wait for the pipeline's end: in the last block each chunk's slab planes are
 * final once its last download is done. The device flags that download as it issues it
 * (tpace_results_flag); after issuing the block it waits for the flags in order and
 * hands each range over (tpace_results_hand_over). Then, on a rank whose node holds rank
 * 0 and where the system lets one process write another's memory (Linux's
 * process_vm_writev; TPACE_CMA=0: never), copy threads of its own write the planes
 * straight into rank 0's arrays, several at once; elsewhere the caller's thread, the only
 * one that calls MPI, sends them (tpace_results_pump): an announcement (array, offset,
 * bytes), then the planes, in pieces under 1 GiB, which rank 0 receives straight into its
 * arrays. Rank 0 lets either in from its last block on (tpace_results_open), once its
 * devices have taken the ghost planes they read from its host arrays: nothing of another
 * rank's planes is read there later (a neighbour's ghost planes come from the exchange's
 * buffer). After its blocks it waits for what is left (tpace_results_finish), before
 * anything reads its arrays. */

#define TPACE_TAG_ANNOUNCE 40
#define TPACE_TAG_PIECE 41
#define TPACE_TAG_GO 42
#define TPACE_TAG_DONE 43

/* Whether array a goes to rank 0 as the chunks finish (the others after the pipeline,
 * tpace_gather): rank 0 alone reads it, and the last block downloads it (a folded
 * temporary's faces are put back after the blocks: it goes after them). */
static int tpace_early(const tpace_array *a)
{
    return a->to_root && !a->unread && (a->transfer == TPACE_UPDOWN || a->transfer == TPACE_LAST_BLOCK);
}

/* Bytes of rank q's planes of the arrays that go early. */
static size_t tpace_early_bytes(const tpace_scale *s, int q)
{
    size_t bytes = 0;
    for (int a = 0; a < s->narrays; a++)
        if (tpace_early(&s->arrays[a]))
            bytes += (size_t)(s->ranks_hi[q] - s->ranks_lo[q]) * s->plane * s->arrays[a].elem;
    return bytes;
}

/* Executor r issued chunk ch's last download of the last block, its slab planes [from, to):
 * a flag behind it, which tpace_results_hand_over waits for (on the device's thread). */
static void tpace_results_flag(tpace_rt *r, const tpace_chunk *ch, long from, long to)
{
    tpace_scale *s = (tpace_scale *)r->scale;
    tpace_device *d = &s->dev[r - s->rt];
    if (d->nfinals == d->finals_cap) {
        const long want = d->finals_cap ? 2 * d->finals_cap : 64;
        tpace_final *more = (tpace_final *)realloc(d->finals, (size_t)want * sizeof *more);
        if (more == NULL)
            tpace_fail(&r->plan, "host memory ran out recording the chunks' last downloads");
        d->finals = more;
        d->finals_cap = want;
    }
    tpace_final *f = &d->finals[d->nfinals++];
    f->flag = tpace_dev_flag(r, ch->out_q);
    f->from = from;
    f->to = to;
}

/* Append the pieces [first, *end) to a list, under `lock` if there is one, and tell `cond`. */
static void tpace_pieces_append(tpace_piece ***list_end, tpace_piece *first, tpace_piece **end, pthread_mutex_t *lock,
                                pthread_cond_t *cond)
{
    if (lock)
        TPACE_PTHREAD(pthread_mutex_lock(lock));
    **list_end = first;
    *list_end = end;
    if (lock) {
        TPACE_PTHREAD(pthread_cond_broadcast(cond));
        TPACE_PTHREAD(pthread_mutex_unlock(lock));
    }
}

/* Planes [from, to) of the arrays that go early are final in the host arrays: their pieces
 * go to the copy threads (node-local copies: of 64 MiB, so that they share the work) or
 * to the caller's thread (MPI messages: under 1 GiB each). */
static void tpace_results_push(tpace_scale *s, long from, long to)
{
#ifdef TPACE_MPI
    const size_t piece_most = s->cma.on ? (size_t)64 << 20 : (size_t)1 << 30;
#else
    const size_t piece_most = (size_t)1 << 30;
#endif
    tpace_piece *first = NULL, **end = &first;
    for (int a = 0; a < s->narrays; a++) {
        const tpace_array *arr = &s->arrays[a];
        if (!tpace_early(arr))
            continue;
        size_t at = (size_t)(from - s->lo) * s->plane * arr->elem;
        size_t left = (size_t)(to - from) * s->plane * arr->elem;
        while (left > 0) {
            tpace_piece *p = (tpace_piece *)calloc(1, sizeof *p);
            if (p == NULL)
                tpace_stop("MPI", "host memory ran out sending the results to rank 0");
            p->array = a;
            p->offset = at;
            p->bytes = TPACE_MIN(left, piece_most);
            at += p->bytes;
            left -= p->bytes;
            *end = p;
            end = &p->next;
        }
    }
    if (first == NULL)
        return;
#ifdef TPACE_MPI
    if (s->cma.on) {
        tpace_pieces_append(&s->cma.queue_end, first, end, &s->cma.lock, &s->cma.more);
        return;
    }
#endif
    tpace_crew *c = &s->crew;
    tpace_pieces_append(&s->handed_end, first, end, c->threads ? &c->lock : NULL, &c->done);
}

#ifdef TPACE_MPI
/* Keep a results message's request (and its bytes: 0 for an announcement). */
static void tpace_results_request(tpace_scale *s, MPI_Request req, size_t bytes)
{
    if (s->nreq == s->req_cap) {
        const int want = s->req_cap ? 2 * s->req_cap : 64;
        MPI_Request *req_more = (MPI_Request *)realloc(s->req, (size_t)want * sizeof *req_more);
        if (req_more != NULL)
            s->req = req_more;
        size_t *bytes_more = (size_t *)realloc(s->req_bytes, (size_t)want * sizeof *bytes_more);
        if (bytes_more != NULL)
            s->req_bytes = bytes_more;
        int *done_more = (int *)realloc(s->req_done, (size_t)want * sizeof *done_more);
        if (done_more != NULL)
            s->req_done = done_more;
        if (req_more == NULL || bytes_more == NULL || done_more == NULL)
            tpace_stop("MPI", "host memory ran out for the results' messages");
        s->req_cap = want;
    }
    s->req[s->nreq] = req;
    s->req_bytes[s->nreq] = bytes;
    s->nreq++;
}

/* Rank 0: an announcement came from rank `from`: receive the piece it announces, straight
 * into place, once it is checked to be that rank's planes of an array that goes early. */
static void tpace_results_announced(tpace_scale *s, int from)
{
    const long long a = s->head_in[0], offset = s->head_in[1], bytes = s->head_in[2];
    int fits = from > 0 && from < tpace_the_world.ranks && a >= 0 && a < s->narrays && bytes > 0 &&
               bytes <= (1LL << 30) && tpace_early(&s->arrays[a]);
    if (fits) {
        const size_t plane = s->plane * s->arrays[a].elem;
        fits = (size_t)offset >= (size_t)(s->ranks_lo[from] - s->lo) * plane &&
               (size_t)(offset + bytes) <= (size_t)(s->ranks_hi[from] - s->lo) * plane &&
               s->got_of[from] + (size_t)bytes <= s->expect_of[from];
    }
    if (!fits) {
        char msg[320];
        snprintf(msg, sizeof msg,
                 "rank %d announced results that are not its planes (array %lld, %lld bytes at %lld): do all ranks run "
                 "the same program with the same settings?",
                 from, a, bytes, offset);
        tpace_stop("MPI", msg);
    }
    MPI_Request req;
    TPACE_MPI_CALL(MPI_Irecv((char *)s->arrays[a].host + offset, (int)bytes, MPI_BYTE, from, TPACE_TAG_PIECE,
                             MPI_COMM_WORLD, &req));
    tpace_results_request(s, req, (size_t)bytes);
    s->got_of[from] += (size_t)bytes;
    s->announced += (size_t)bytes;
}

/* Rank 0: whether every rank's early planes are announced or said copied. */
static int tpace_results_all_announced(const tpace_scale *s)
{
    for (int q = 1; q < tpace_the_world.ranks; q++) {
        if (s->cma.of[q] && !s->cma.done_in[q]) /* the copies' count still to come */
            return 0;
        if (s->got_of[q] + (s->cma.of[q] ? (size_t)s->cma.done_of[q] : 0) < s->expect_of[q])
            return 0;
    }
    return 1;
}

/* A sender: rank 0 said it may write into its arrays; the copy threads start. */
static void tpace_cma_go(tpace_scale *s)
{
    TPACE_PTHREAD(pthread_mutex_lock(&s->cma.lock));
    s->cma.go = 1;
    TPACE_PTHREAD(pthread_cond_broadcast(&s->cma.more));
    TPACE_PTHREAD(pthread_mutex_unlock(&s->cma.lock));
}

/* The caller's thread moves the results along (the only one that calls MPI): it sends the
 * pieces the devices handed over, receives (rank 0) the announcements that came and the
 * pieces they announce, passes rank 0's leave to copy on, and lets MPI progress.
 * `during`: the blocks still run (where the devices have threads, the crew says). Returns
 * whether a piece may still be on its way. */
static int tpace_results_pump(tpace_scale *s, int during)
{
    tpace_crew *c = &s->crew;
    const int root = tpace_the_world.rank == 0;
    if (c->threads)
        TPACE_PTHREAD(pthread_mutex_lock(&c->lock));
    tpace_piece *list = s->handed;
    s->handed = NULL;
    s->handed_end = &s->handed;
    if (c->threads) {
        during = c->pending > 0;
        TPACE_PTHREAD(pthread_mutex_unlock(&c->lock));
    }
    while (list != NULL) {
        tpace_piece *p = list;
        list = p->next;
        p->head[0] = p->array;
        p->head[1] = (long long)p->offset;
        p->head[2] = (long long)p->bytes;
        MPI_Request req;
        TPACE_MPI_CALL(MPI_Isend(p->head, 3, MPI_LONG_LONG, 0, TPACE_TAG_ANNOUNCE, MPI_COMM_WORLD, &req));
        tpace_results_request(s, req, 0);
        TPACE_MPI_CALL(MPI_Isend((char *)s->arrays[p->array].host + p->offset, (int)p->bytes, MPI_BYTE, 0,
                                 TPACE_TAG_PIECE, MPI_COMM_WORLD, &req));
        tpace_results_request(s, req, p->bytes);
        if (during)
            s->sent_during += p->bytes;
        else
            s->sent_after += p->bytes;
        p->next = s->sent;
        s->sent = p;
    }
    if (s->cma.on && !s->cma.go) {
        int go = 0;
        TPACE_MPI_CALL(MPI_Test(&s->cma.go_req, &go, MPI_STATUS_IGNORE));
        if (go)
            tpace_cma_go(s);
    }
    while (root && s->live) {
        if (!s->head_posted) {
            if (tpace_results_all_announced(s))
                break;
            TPACE_MPI_CALL(MPI_Irecv(s->head_in, 3, MPI_LONG_LONG, MPI_ANY_SOURCE, TPACE_TAG_ANNOUNCE,
                                     MPI_COMM_WORLD, &s->head_req));
            s->head_posted = 1;
        }
        int came = 0;
        MPI_Status status;
        TPACE_MPI_CALL(MPI_Test(&s->head_req, &came, &status));
        if (!came)
            break;
        s->head_posted = 0;
        tpace_results_announced(s, status.MPI_SOURCE);
    }
    int done = 0;
    if (s->nreq > 0)
        TPACE_MPI_CALL(MPI_Testsome(s->nreq, s->req, &done, s->req_done, MPI_STATUSES_IGNORE));
    for (int i = 0; root && done != MPI_UNDEFINED && i < done; i++) {
        s->arrived_bytes += s->req_bytes[s->req_done[i]];
        if (during)
            s->arrived_during += s->req_bytes[s->req_done[i]];
    }
    return root ? s->arrived_bytes < s->announced : done != MPI_UNDEFINED;
}

/* Rank 0's last block has taken its ghost planes: the other ranks may write its arrays. */
static void tpace_results_open(tpace_scale *s)
{
    if (tpace_the_world.rank != 0)
        return;
    for (int q = 1; q < tpace_the_world.ranks; q++) {
        if (!s->cma.of[q])
            continue;
        MPI_Request req;
        TPACE_MPI_CALL(MPI_Isend(NULL, 0, MPI_BYTE, q, TPACE_TAG_GO, MPI_COMM_WORLD, &req));
        tpace_results_request(s, req, 0);
        TPACE_MPI_CALL(MPI_Irecv(&s->cma.done_of[q], 1, MPI_LONG_LONG, q, TPACE_TAG_DONE, MPI_COMM_WORLD,
                                 &s->cma.done_req[q]));
    }
}

/* A sender after its blocks: its copy threads finish (rank 0's leave awaited first), the
 * pieces they could not write go by MPI, and rank 0 hears how many bytes they wrote. */
static void tpace_cma_finish(tpace_scale *s)
{
    tpace_cma *m = &s->cma;
    if (!m->go) {
        TPACE_MPI_CALL(MPI_Wait(&m->go_req, MPI_STATUS_IGNORE));
        tpace_cma_go(s);
    }
    TPACE_PTHREAD(pthread_mutex_lock(&m->lock));
    m->blocks_done = 1;
    while (m->queue != NULL || m->busy > 0)
        TPACE_PTHREAD(pthread_cond_wait(&m->idle, &m->lock));
    m->quit = 1;
    TPACE_PTHREAD(pthread_cond_broadcast(&m->more));
    TPACE_PTHREAD(pthread_mutex_unlock(&m->lock));
    for (int i = 0; i < m->started; i++)
        TPACE_PTHREAD(pthread_join(m->thread[i], NULL));
    m->started = 0;
    if (m->failed != NULL) { /* refused mid-way: the rest by MPI */
        m->on = 0;
        tpace_piece *p = m->failed, **end = &m->failed;
        while (*end != NULL)
            end = &(*end)->next;
        m->failed = NULL;
        tpace_pieces_append(&s->handed_end, p, end, NULL, NULL);
        tpace_results_pump(s, 0);
    }
    s->sent_during += m->during;
    s->sent_after += m->after;
    m->done_out = (long long)(m->during + m->after);
    MPI_Request req;
    TPACE_MPI_CALL(MPI_Isend(&m->done_out, 1, MPI_LONG_LONG, 0, TPACE_TAG_DONE, MPI_COMM_WORLD, &req));
    tpace_results_request(s, req, 0);
}

/* After the blocks: what is left goes, and rank 0 waits for every piece before anything
 * reads its arrays. Returns the seconds this took. */
static double tpace_results_finish(tpace_scale *s)
{
    const double start = tpace_now();
    const int ranks = tpace_the_world.ranks;
    tpace_results_pump(s, 0);
    if (s->cma.thread != NULL)
        tpace_cma_finish(s);
    if (tpace_the_world.rank == 0) {
        for (int q = 1; q < ranks; q++) /* what the copies wrote, first */
            if (s->cma.of[q]) {
                TPACE_MPI_CALL(MPI_Wait(&s->cma.done_req[q], MPI_STATUS_IGNORE));
                s->cma.done_in[q] = 1;
                if (s->cma.done_of[q] < 0 || (size_t)s->cma.done_of[q] + s->got_of[q] > s->expect_of[q])
                    tpace_stop("MPI", "a rank said it copied more results into rank 0's memory than its planes");
                s->cma.bytes += (size_t)s->cma.done_of[q];
            }
        while (!tpace_results_all_announced(s)) {
            if (!s->head_posted)
                TPACE_MPI_CALL(MPI_Irecv(s->head_in, 3, MPI_LONG_LONG, MPI_ANY_SOURCE, TPACE_TAG_ANNOUNCE,
                                         MPI_COMM_WORLD, &s->head_req));
            MPI_Status status;
            TPACE_MPI_CALL(MPI_Wait(&s->head_req, &status));
            s->head_posted = 0;
            tpace_results_announced(s, status.MPI_SOURCE);
        }
        if (s->head_posted) { /* posted for pieces that came by copies instead */
            MPI_Status status;
            int cancelled = 0;
            TPACE_MPI_CALL(MPI_Cancel(&s->head_req));
            TPACE_MPI_CALL(MPI_Wait(&s->head_req, &status));
            TPACE_MPI_CALL(MPI_Test_cancelled(&status, &cancelled));
            if (!cancelled)
                tpace_stop("MPI", "a rank announced more results than its planes");
            s->head_posted = 0;
        }
    }
    if (s->nreq > 0)
        TPACE_MPI_CALL(MPI_Waitall(s->nreq, s->req, MPI_STATUSES_IGNORE));
    if (tpace_the_world.rank == 0)
        s->arrived_bytes = s->announced + s->cma.bytes;
    while (s->sent != NULL) {
        tpace_piece *p = s->sent;
        s->sent = p->next;
        free(p);
    }
    free(s->req);
    free(s->req_bytes);
    free(s->req_done);
    s->req = NULL;
    s->req_bytes = NULL;
    s->req_done = NULL;
    s->nreq = s->req_cap = 0;
    return tpace_now() - start;
}

/* ---- Node-local copies (TPACE_CMA): a sender's threads write its pieces into rank 0 ---- */

/* What rank 0's probe is written into: a rank that can write it can write the arrays. */
static long long tpace_cma_probe = 0;

/* Write `bytes` from `local` to `remote` in process `pid`; 0, or the errno that refused it. */
static int tpace_cma_write(int pid, const char *local, long long remote, size_t bytes)
{
    return tpace_cma_move(pid, (char *)local, remote, bytes, 1);
}

/* A copy thread: each piece, once rank 0 has said so, into rank 0's array (a piece the
 * system refuses, and every later one, goes by MPI instead: tpace_cma_finish). */
static void *tpace_cma_main(void *arg)
{
    tpace_scale *s = (tpace_scale *)arg;
    tpace_cma *m = &s->cma;
    TPACE_PTHREAD(pthread_mutex_lock(&m->lock));
    for (;;) {
        while (!m->quit && !(m->go && m->queue != NULL))
            TPACE_PTHREAD(pthread_cond_wait(&m->more, &m->lock));
        if (m->queue == NULL)
            break;
        tpace_piece *p = m->queue;
        m->queue = p->next;
        if (m->queue == NULL)
            m->queue_end = &m->queue;
        p->next = NULL;
        int err = m->error;
        m->busy++;
        TPACE_PTHREAD(pthread_mutex_unlock(&m->lock));
        if (!err)
            err = tpace_cma_write(m->pid, (const char *)s->arrays[p->array].host + p->offset,
                                  m->remote[p->array] + (long long)p->offset, p->bytes);
        TPACE_PTHREAD(pthread_mutex_lock(&m->lock));
        m->busy--;
        if (err) {
            m->error = err;
            p->next = m->failed;
            m->failed = p;
        } else {
            if (m->blocks_done)
                m->after += p->bytes;
            else
                m->during += p->bytes;
            free(p);
        }
        if (m->queue == NULL && m->busy == 0)
            TPACE_PTHREAD(pthread_cond_broadcast(&m->idle));
    }
    TPACE_PTHREAD(pthread_mutex_unlock(&m->lock));
    return NULL;
}

/* Before the pipeline: rank 0's settings for the early results, for every rank; then
 * which ranks copy into rank 0 themselves: rank 0 lets them (prctl, where Yama asks for
 * it) and says where its arrays are, each rank of its node tries a probe, and rank 0
 * hears which succeeded. Those start their copy threads. */
static void tpace_results_setup(tpace_scale *s)
{
    const tpace_world *w = &tpace_the_world;
    tpace_cma *m = &s->cma;
    /* TPACE_CMA: 1 (where the system lets it), 0 (never), 2 (for tests: rank 0 offers an
     * address no process can write, as a system that refuses). */
    int settings[2] = {s->early, (int)tpace_env_long("TPACE_CMA", 1, 0, 2)};
    TPACE_MPI_CALL(MPI_Bcast(settings, 2, MPI_INT, 0, MPI_COMM_WORLD));
    s->early = settings[0];
    s->cma_mode = settings[1];
    m->queue_end = &m->queue;
    m->of = (int *)calloc((size_t)w->ranks, sizeof *m->of);
    m->done_in = (int *)calloc((size_t)w->ranks, sizeof *m->done_in);
    m->done_of = (long long *)calloc((size_t)w->ranks, sizeof *m->done_of);
    m->done_req = (MPI_Request *)calloc((size_t)w->ranks, sizeof *m->done_req);
    s->expect_of = (size_t *)calloc((size_t)w->ranks, sizeof *s->expect_of);
    s->got_of = (size_t *)calloc((size_t)w->ranks, sizeof *s->got_of);
    if (m->of == NULL || m->done_in == NULL || m->done_of == NULL || m->done_req == NULL || s->expect_of == NULL ||
        s->got_of == NULL)
        tpace_stop("MPI", "host memory ran out setting up the results' way to rank 0");
    for (int q = 1; q < w->ranks; q++)
        s->expect_of[q] = tpace_early_bytes(s, q);
    if (!s->early || !settings[1])
        return;
#ifdef TPACE_CMA_ABLE
    const int n = 2 + s->narrays;
    long long *where = (long long *)calloc((size_t)n, sizeof *where);
    m->where = where;
    if (where == NULL)
        tpace_stop("MPI", "host memory ran out setting up the results' way to rank 0");
    if (w->rank == 0) {
        (void)prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0); /* Yama: any process may; refused: the probe says */
        where[0] = (long long)getpid();
        where[1] = settings[1] == 2 ? 0 : (long long)(size_t)&tpace_cma_probe;
        for (int a = 0; a < s->narrays; a++)
            where[2 + a] = (long long)(size_t)s->arrays[a].host;
    }
    TPACE_MPI_CALL(MPI_Bcast(where, n, MPI_LONG_LONG, 0, MPI_COMM_WORLD));
    m->pid = (int)where[0];
    m->remote = where + 2;
    const long long mark = w->rank;
    int able = w->rank > 0 && w->with_root && where[1] != 0 &&
               tpace_cma_write(m->pid, (const char *)&mark, where[1], sizeof mark) == 0;
    TPACE_MPI_CALL(MPI_Gather(&able, 1, MPI_INT, m->of, 1, MPI_INT, 0, MPI_COMM_WORLD));
    if (!able)
        return;
    m->on = 1;
    m->threads = (int)tpace_env_long("TPACE_CMA_THREADS", 0, 1, 64);
    if (m->threads == 0) { /* the cores this rank has to itself, beyond its devices' threads and this one */
        const long mine = tpace_host_cores() - s->local - 1;
        m->threads = (int)TPACE_MAX(TPACE_MIN(mine, (long)TPACE_WIDE_COPY_THREADS), 1L);
    }
    TPACE_MPI_CALL(MPI_Irecv(NULL, 0, MPI_BYTE, 0, TPACE_TAG_GO, MPI_COMM_WORLD, &m->go_req));
    TPACE_PTHREAD(pthread_mutex_init(&m->lock, NULL));
    TPACE_PTHREAD(pthread_cond_init(&m->more, NULL));
    TPACE_PTHREAD(pthread_cond_init(&m->idle, NULL));
    m->thread = (pthread_t *)calloc((size_t)m->threads, sizeof *m->thread);
    if (m->thread == NULL)
        tpace_stop("MPI", "host memory ran out starting the copy threads");
    for (int i = 0; i < m->threads; i++) {
        TPACE_PTHREAD(pthread_create(&m->thread[i], NULL, tpace_cma_main, s));
        m->started++;
    }
#endif
}

/* Free what tpace_results_setup set up. */
static void tpace_results_free(tpace_scale *s)
{
    tpace_cma *m = &s->cma;
    if (m->thread != NULL) {
        free(m->thread);
        TPACE_PTHREAD(pthread_cond_destroy(&m->idle));
        TPACE_PTHREAD(pthread_cond_destroy(&m->more));
        TPACE_PTHREAD(pthread_mutex_destroy(&m->lock));
    }
    free(m->where);
    free(m->of);
    free(m->done_in);
    free(m->done_of);
    free(m->done_req);
    free(s->expect_of);
    free(s->got_of);
}
#endif

#ifdef TPACE_MPI
/* After the pipeline each array's final planes go where the program reads them, as the
 * translation says: to rank 0 alone where the program only outputs the array afterwards
 * (tpace_array.to_root; every other rank sends its slab, point to point), else to every
 * rank (each rank's slab broadcast to the others). Pieces under 1 GiB. Not those that
 * went early (tpace_early). Returns the bytes this rank received. */
static size_t tpace_gather(const tpace_scale *s, const long *rank_lo, const long *rank_hi)
{
    const tpace_world *w = &tpace_the_world;
    const size_t piece_most = (size_t)1 << 30;
    size_t received = 0;
    for (int a = 0; a < s->narrays; a++) {
        const tpace_array *arr = &s->arrays[a];
        if (arr->transfer == TPACE_UP || arr->transfer == TPACE_UNUSED || arr->unread || (s->early && tpace_early(arr)))
            continue;
        const size_t plane = s->plane * arr->elem;
        if (!arr->to_root) {
            for (int owner = 0; owner < w->ranks; owner++) {
                char *at = (char *)arr->host + (size_t)(rank_lo[owner] - s->lo) * plane;
                size_t left = (size_t)(rank_hi[owner] - rank_lo[owner]) * plane;
                if (owner != w->rank)
                    received += left;
                while (left > 0) {
                    const size_t piece = TPACE_MIN(left, piece_most);
                    TPACE_MPI_CALL(MPI_Bcast(at, (int)piece, MPI_BYTE, owner, MPI_COMM_WORLD));
                    at += piece;
                    left -= piece;
                }
            }
            continue;
        }
        /* Rank 0 receives every other rank's slab, all messages posted at once. */
        size_t pieces = 0;
        for (int q = w->rank == 0 ? 1 : w->rank; q < (w->rank == 0 ? w->ranks : w->rank + 1); q++)
            pieces += ((size_t)(rank_hi[q] - rank_lo[q]) * plane + piece_most - 1) / piece_most;
        MPI_Request *req = (MPI_Request *)malloc(TPACE_MAX(pieces, (size_t)1) * sizeof *req);
        if (req == NULL)
            tpace_stop("MPI", "host memory ran out bringing the results to rank 0");
        int n = 0;
        for (int q = w->rank == 0 ? 1 : w->rank; q < (w->rank == 0 ? w->ranks : w->rank + 1); q++) {
            char *at = (char *)arr->host + (size_t)(rank_lo[q] - s->lo) * plane;
            size_t left = (size_t)(rank_hi[q] - rank_lo[q]) * plane;
            if (w->rank == 0)
                received += left;
            for (int tag = 0; left > 0; tag++) {
                const size_t piece = TPACE_MIN(left, piece_most);
                if (w->rank == 0)
                    TPACE_MPI_CALL(MPI_Irecv(at, (int)piece, MPI_BYTE, q, 100 + tag, MPI_COMM_WORLD, &req[n++]));
                else
                    TPACE_MPI_CALL(MPI_Isend(at, (int)piece, MPI_BYTE, 0, 100 + tag, MPI_COMM_WORLD, &req[n++]));
                at += piece;
                left -= piece;
            }
        }
        TPACE_MPI_CALL(MPI_Waitall(n, req, MPI_STATUSES_IGNORE));
        free(req);
    }
    return received;
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

/* Planes a step of the largest slab's device computes on average, for the model (devices.rs
 * planes_computed): its slab and half of its ghost planes, k steps' reach on each side it
 * has a neighbour (both for an inner slab of three devices or more, one for two): the
 * ghost region shrinks by a step's reach each step, and the ghost planes go in but do
 * not come back, so half of them counts their copies too. */
static long tpace_planes_computed(const tpace_shape *shape, int devices, long slab, long k)
{
    const long sides = devices >= 3 ? shape->reach_lo + shape->reach_hi
                       : devices == 2 ? TPACE_MAX(shape->reach_lo, shape->reach_hi)
                                      : 0;
    return TPACE_MIN(shape->n, slab + (k * sides + 1) / 2);
}

/* Seconds the results take after the blocks (see tpace_gather and tpace_early), at the
 * model's rate between ranks; devices.rs results_seconds. The arrays that go early move
 * while the last block runs (last_block_s), each chunk's planes once they are final:
 * what stays after the blocks is the last chunks of the other ranks' devices
 * (tail_planes), or what the rate cannot move within the last block, whichever is more.
 * The others move after the blocks, the rank that receives the most (own_least: the
 * fewest planes of any rank; rank0: rank 0's) setting the time. */
static double tpace_results_seconds(const tpace_model *m, const tpace_shape *shape, const tpace_array *arrays,
                                    int narrays, long own_least, long rank0, int early_wanted, double last_block_s,
                                    long tail_planes)
{
    if (tpace_the_world.ranks < 2 || m == NULL || m->exchange_bps <= 0)
        return 0.0;
    double early = 0.0, early_plane = 0.0, after = 0.0;
    for (int a = 0; a < narrays; a++) {
        const tpace_array *arr = &arrays[a];
        if (arr->transfer == TPACE_UP || arr->transfer == TPACE_UNUSED || arr->unread)
            continue;
        const double plane = (double)shape->plane * (double)arr->elem;
        if (early_wanted && tpace_early(arr)) {
            early += (double)(shape->n - rank0) * plane;
            early_plane += plane;
        } else {
            after += (double)(shape->n - (arr->to_root ? rank0 : own_least)) * plane;
        }
    }
    double s = 0.0;
    if (early > 0) {
        const double tail = TPACE_MIN((double)tail_planes * early_plane, early);
        s += TPACE_MAX(tail, early - last_block_s * m->exchange_bps) / m->exchange_bps + m->exchange_latency_s;
    }
    if (after > 0)
        s += after / m->exchange_bps + m->exchange_latency_s;
    return s;
}

/* The plan every device runs, chosen once for all of them: the model's fastest for the
 * largest slab with its ghost planes (k steps' reach on each side), counting one
 * exchange of those planes per block (so a larger k also means fewer exchanges), under
 * the smallest budget of any device of any rank (devices that ranks share split their
 * memory). Devices run at once, each on its own link to the host: the run takes what its largest slab
 * takes, plus the results brought to the ranks that read them after the blocks (thinnest:
 * the fewest planes of any rank; rank0: rank 0's; early: the arrays only output reads go to
 * rank 0 as the last block's chunks finish, tpace_results_seconds). TPACE_* settings fix
 * what they set, as with one device. The result goes into `out`'s force fields. */
/* The model each of a node's `devices` devices plans with: their copies share the host's
 * memory (host_memory_bps, both ways, all devices together), so where they would together
 * ask more than it gives, each device's link rates shrink alike (devices.rs sharing_host). */
static const tpace_model *tpace_model_share_host(const tpace_model *m, int devices, tpace_model *out)
{
    if (m == NULL)
        return NULL;
    *out = *m;
    const double each = m->duplex_bps > 0.0 ? m->duplex_bps : m->h2d_bps + m->d2h_bps;
    const double asked = (double)devices * each;
    if (m->host_memory_bps > 0.0 && asked > m->host_memory_bps) {
        const double share = m->host_memory_bps / asked;
        out->h2d_bps *= share;
        out->d2h_bps *= share;
        out->duplex_bps *= share;
    }
    return out;
}

static void tpace_plan_devices(const tpace_shape *shape, const tpace_array *arrays, int narrays,
                               const tpace_reduction *reds, int nreds, int devices, int local, long thinnest,
                               long rank0, int early, tpace_shape *out)
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
    tpace_model picked, scratch, shared;
    char about[400] = "";
    const tpace_model *m =
        tpace_model_fusing(tpace_pick_model(&probe, shape, &picked, about, sizeof about), (tpace_u64)fuse, &scratch);
    /* The devices of this node: this process's, times the node's ranks. */
    m = tpace_model_share_host(m, local * w->node_ranks, &shared);
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
            const tpace_model_run run = {(tpace_u64)tpace_planes_computed(shape, devices, slab, k), (tpace_u64)shape->plane,
                                         (tpace_u64)shape->steps};
            tpace_model_choice c = tpace_model_choose_fused(
                m, &run, model_cap, schedule >= 0 ? tpace_model_of_schedule[schedule] : -1, (tpace_u64)k,
                (tpace_u64)env_b, (tpace_u64)env_streams, fuse_set, (tpace_u64)fuse_most);
            if (!c.found)
                continue;
            /* One exchange before every block but the first (which starts from the program's data). */
            const long blocks = (steps + k - 1) / k;
            const double exchange =
                m->exchange_bps > 0
                    ? (double)(blocks - 1) *
                          ((double)(k * reach) * (double)exchanged / m->exchange_bps + m->exchange_latency_s)
                    : 0.0;
            /* The results: the last block's share of the run, and the last chunk of every
             * device but rank 0's. */
            const double last_block_s = c.seconds * (double)(steps - (blocks - 1) * k) / (double)steps;
            const long tail_planes = TPACE_MIN((long)c.best.b, slab) * (long)(devices - local);
            const double results =
                tpace_results_seconds(m, shape, arrays, narrays, thinnest, rank0, early, last_block_s, tail_planes);
            if (!found || c.seconds + exchange + results < best) {
                found = 1;
                best = c.seconds + exchange + results;
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

/* ---- The executors' phases, on their host threads ---- */

/* Whether device d uploads its ghost planes of array a on `side` straight from the host
 * arrays in every block: an array only read (no sweep writes it, nothing downloads it),
 * those planes in another slab of this process (page-locked there). */
static int tpace_read_in_place(const tpace_scale *s, const tpace_device *d, const tpace_array *a, int side)
{
    return s->in_place && a->transfer == TPACE_UP && (d->within[side] || d->beyond[side]);
}

/* Whether executor g's ghost planes on `side`, all beyond this rank, are read in place in
 * the first block (and an array only read's in every block): this rank's host arrays hold
 * them as the program set them up, and nothing writes them there before the last block
 * (where the other ranks' results may come to rank 0's). The executor
 * page-locks them with its slab (tpace_array's pin_lo, pin_hi), so that the uploads run at
 * the bus's rate. */
static int tpace_beyond_in_place(const tpace_scale *s, int g, int side)
{
    const tpace_device *d = &s->dev[g];
    const long lo = side == 0 ? d->from : d->own_hi, hi = side == 0 ? d->own_lo : d->to;
    /* Rank 0's may receive the other ranks' results during the last block: not where the first is the last. */
    return s->in_place && tpace_the_world.ranks > 1 && !d->within[side] && lo < hi &&
           (side == 0 ? hi <= s->rank_lo : lo >= s->rank_hi) && (tpace_the_world.rank != 0 || s->shape->steps > s->k);
}

/* Executor g's set-up: its grid (slab and ghost planes), its plan (the one chosen for all),
 * device buffers and queues, the host copies of its ghost planes, the device buffers of those
 * that come device to device, and access to the devices it copies into. */
static void tpace_device_setup(tpace_scale *s, int g)
{
    tpace_rt *r = &s->rt[g];
    tpace_device *d = &s->dev[g];
    const tpace_shape *shape = s->shape;
    tpace_shape sub = s->slab_shape;
    long *dim_lo = s->dims + (size_t)g * 2 * shape->rank, *dim_n = dim_lo + shape->rank;
    memcpy(dim_lo, shape->dim_lo, (size_t)shape->rank * sizeof *dim_lo);
    memcpy(dim_n, shape->dim_n, (size_t)shape->rank * sizeof *dim_n);
    dim_lo[0] = d->from;
    dim_n[0] = d->to - d->from;
    sub.lo = d->from;
    sub.n = d->to - d->from;
    sub.dim_lo = dim_lo;
    sub.dim_n = dim_n;
    tpace_array *mine = s->copies + (size_t)g * s->narrays;
    memcpy(mine, s->arrays, (size_t)s->narrays * sizeof *mine);
    for (int side = 0; side < 2; side++)
        d->beyond[side] = tpace_beyond_in_place(s, g, side);
    for (int a = 0; a < s->narrays; a++) {
        mine[a].host = (char *)s->arrays[a].host + (size_t)(d->from - s->lo) * s->plane * s->arrays[a].elem;
        mine[a].pin_lo = d->beyond[0] ? d->from : d->own_lo;
        mine[a].pin_hi = d->beyond[1] ? d->to : d->own_hi;
    }
    tpace_reduction *my_reds = s->nreds ? s->red_copies + (size_t)g * s->nreds : NULL;
    tpace_begin_slab(r, &sub, mine, s->narrays, my_reds, s->nreds, d->device, d->own_lo, d->own_hi, 1);
    r->scale = s;
    r->ghost_fill = tpace_ghost_fill;
    r->planes_out = tpace_planes_out;
    r->download_gate = tpace_download_gate;
    r->ghost_read = tpace_ghost_read;
    for (int side = 0; side < 2; side++) {
        const long planes = side == 0 ? d->own_lo - d->from : d->to - d->own_hi;
        r->ghost[side] = (char **)calloc((size_t)s->narrays, sizeof(char *));
        for (int parity = 0; parity < 2; parity++)
            d->ghost_host[side][parity] = (char **)calloc((size_t)s->narrays, sizeof(char *));
        if (r->ghost[side] == NULL || d->ghost_host[side][0] == NULL || d->ghost_host[side][1] == NULL)
            tpace_fail(&r->plan, "host memory ran out for the ghost planes");
        for (int a = 0; a < s->narrays; a++) {
            if (planes <= 0 || !tpace_moves_in(&mine[a], 1))
                continue;
            if (tpace_read_in_place(s, d, &mine[a], side)) { /* no copy: nothing writes them */
                r->ghost[side][a] = tpace_host_plane(r, &mine[a], side == 0 ? d->from : d->own_hi);
                continue;
            }
            const size_t bytes = (size_t)planes * s->plane * mine[a].elem;
            for (int parity = 0; parity < (d->local_side[side] && tpace_exchanged(&mine[a]) ? 2 : 1); parity++) {
                char *buf = (char *)malloc(bytes);
                if (buf == NULL)
                    tpace_fail(&r->plan, "host memory ran out for the ghost planes");
                tpace_dev_pin(r, buf, bytes);
                d->ghost_host[side][parity][a] = buf;
            }
            r->ghost[side][a] = d->ghost_host[side][0][a];
        }
    }
}

/* Executor g's device buffers for the ghost planes that come device to device (peer
 * copies), and access to the devices whose ghost planes its slab fills. */
static void tpace_device_peer(tpace_scale *s, int g)
{
    tpace_rt *r = &s->rt[g];
    tpace_device *d = &s->dev[g];
    tpace_dev_activate(r);
    for (int side = 0; side < 2; side++) {
        const long planes = side == 0 ? d->own_lo - d->from : d->to - d->own_hi;
        for (int parity = 0; parity < 2 && d->peer[side]; parity++) {
            d->ghost_dev[side][parity] = (char **)calloc((size_t)s->narrays, sizeof(char *));
            if (d->ghost_dev[side][parity] == NULL)
                tpace_fail(&r->plan, "host memory ran out for the ghost planes");
            for (int a = 0; a < s->narrays; a++) {
                if (!tpace_exchanged(&r->arrays[a]))
                    continue;
                const size_t bytes = (size_t)planes * s->plane * r->arrays[a].elem;
                d->ghost_dev[side][parity][a] = (char *)tpace_dev_alloc(r, bytes);
                if (d->ghost_dev[side][parity][a] == NULL)
                    tpace_fail(&r->plan, "device memory ran out for the ghost planes that come from the neighbouring "
                                         "devices; set TPACE_PEER=0 (through host memory)");
                d->ghost_dev_bytes += bytes;
            }
        }
    }
    for (int h = 0; h < s->local; h++)
        for (int side = 0; side < 2 && h != g; side++) {
            const tpace_device *e = &s->dev[h];
            const long lo = side == 0 ? e->from : e->own_hi, hi = side == 0 ? e->own_lo : e->to;
            if (e->peer[side] && TPACE_MAX(lo, d->own_lo) < TPACE_MIN(hi, d->own_hi))
                tpace_dev_peer_enable(r, e->device);
        }
}

/* The first block's ghost planes on a side whose neighbour device copies them device to
 * device later: straight from the host arrays into the device copies block 0 reads (set
 * 0; the neighbours fill set 1 during it), waited for here, before any device writes its
 * slab back (the phase ends on every device first). One upload at the bus's rate instead
 * of a host copy of gigabytes (k planes a side) and an upload of that copy later. */
static void tpace_ghost_upload_first(tpace_scale *s, int g, int side)
{
    tpace_rt *r = &s->rt[g];
    tpace_device *d = &s->dev[g];
    long lo, hi;
    tpace_ghost_region(r, side, &lo, &hi);
    tpace_dev_activate(r); /* devices issued in turn from one thread: this one's */
    for (int a = 0; a < r->narrays && lo < hi; a++) {
        const tpace_array *arr = &r->arrays[a];
        if (d->ghost_dev[side][0][a] == NULL)
            continue;
        const size_t plane = s->plane * arr->elem, bytes = (size_t)(hi - lo) * plane;
        tpace_dev_upload(r, d->ghost_dev[side][0][a], (const char *)arr->host + (size_t)(lo - r->plan.s.lo) * plane,
                         bytes, 0);
        d->host_ghost_bytes += bytes;
    }
    tpace_dev_sync(r);
}

/* Whether executor g uploads the first block's ghost planes below it, [lo, hi), straight
 * from the host arrays instead of a copy of them: they lie in the slab of another device
 * of this process (page-locked there), which overwrites them only with its last downloads
 * of the block, and then only once this device's uploads of them are done (tpace_ghost_read;
 * so the executors run on threads of their own). The chunks that read them are the block's
 * first (mmtb: each uploads its own planes). */
static int tpace_below_in_place(const tpace_scale *s, int g, long lo, long hi)
{
    const tpace_device *d = &s->dev[g];
    const tpace_plan *p = &s->rt[g].plan;
    if (s->t != 0 || !s->in_place || !s->crew.threads || !d->within[0] || d->peer[0] || lo >= hi || p->b < 1)
        return 0;
    return p->schedule == TPACE_MMTB || p->schedule == TPACE_INCORE;
}

/* Executor g's ghost planes below [lo, hi) in the first block: its exchanged arrays' read
 * in place (tpace_below_in_place); the others' are copied as usual. */
static void tpace_ghosts_below_in_place(tpace_scale *s, int g, long lo, long hi)
{
    tpace_rt *r = &s->rt[g];
    tpace_device *d = &s->dev[g];
    int any = 0;
    for (int a = 0; a < r->narrays; a++) {
        tpace_array *arr = &r->arrays[a];
        /* Those with two sets of copies (the next block points them back at its own), or all of
         * a run of one block. */
        if (r->ghost[0][a] == NULL || !tpace_exchanged(arr) || (d->ghost_host[0][1][a] == NULL && d->local_side[0]))
            continue;
        r->ghost[0][a] = tpace_host_plane(r, arr, lo);
        d->in_place_bytes += (size_t)(hi - lo) * s->plane * arr->elem;
        any = 1;
    }
    if (!any)
        return;
    d->below_lo = lo;
    d->below_hi = hi;
    d->below_last = (hi - 1 - r->plan.s.lo) / r->plan.b;
    d->below_in_place = 1;
}

/* Executor g at the start of block t: its ghost planes as they stand (device to device
 * from the neighbours' copies of the block before, or host copies). */
static void tpace_device_ghosts(tpace_scale *s, int g)
{
    tpace_rt *r = &s->rt[g];
    tpace_device *d = &s->dev[g];
    const int ranks = tpace_the_world.ranks;
    const int parity = (int)((s->t / s->k) % 2);
    /* No download waits for a late copy after the first block (none runs during this phase). */
    d->late_lo = d->late_hi = 0;
    d->below_lo = d->below_hi = 0;
    for (int side = 0; side < 2; side++) {
        r->ghost_dev[side] = d->peer[side] ? d->ghost_dev[side][parity] : NULL;
        /* An exchanged array's ghost planes beyond this rank: the first block's in place, later
         * blocks' the neighbour rank's in its copies. */
        for (int a = 0; a < s->narrays && d->beyond[side]; a++)
            if (d->ghost_host[side][0][a] != NULL && tpace_exchanged(&r->arrays[a]))
                r->ghost[side][a] = s->t == 0 ? tpace_host_plane(r, &r->arrays[a], side == 0 ? d->from : d->own_hi)
                                              : d->ghost_host[side][0][a];
        if (s->t == 0 && d->peer[side])
            tpace_ghost_upload_first(s, g, side);
        /* The host copies this block reads: those its neighbours filled during the last one. */
        for (int a = 0; a < s->narrays && s->t > 0 && d->local_side[side]; a++)
            if (d->ghost_host[side][1][a])
                r->ghost[side][a] = d->ghost_host[side][parity][a];
        long lo, hi;
        tpace_ghost_region(r, side, &lo, &hi);
        for (int a = 0; a < s->narrays; a++)
            if (r->ghost[side][a] != NULL && (tpace_read_in_place(s, d, &r->arrays[a], side) ||
                                              (s->t == 0 && d->beyond[side] && tpace_exchanged(&r->arrays[a]))))
                d->in_place_bytes += (size_t)(hi - lo) * s->plane * r->arrays[a].elem;
        /* The first block's planes above, another device's of this process, which it
         * overwrites with its first downloads while this one reads them in its last chunk:
         * the caller's thread copies them while the block starts, and those downloads wait
         * for it (tpace_ghosts_late). The planes below are read first: copied here, or read
         * in place (tpace_below_in_place). */
        if (s->t == 0 && side == 1 && s->crew.threads && d->within[1] && !d->peer[1] && lo < hi) {
            d->late_lo = lo;
            d->late_hi = hi;
            d->late_above = 1;
            r->ghost_ready[1] = 0;
            continue;
        }
        if (side == 0 && tpace_below_in_place(s, g, lo, hi))
            tpace_ghosts_below_in_place(s, g, lo, hi);
        tpace_ghost_start(r, side, ranks > 1 && s->t > 0 && (side == 0 ? lo < s->rank_lo : hi > s->rank_hi));
        if (side == 0 && d->below_in_place)
            r->ghost_ready[0] = 0; /* tpace_ghost_fill: nothing to copy (tests: late) */
    }
}

/* Free executor g's ghost planes, on the host and on its device. */
static void tpace_device_free_ghosts(tpace_scale *s, int g)
{
    tpace_rt *r = &s->rt[g];
    tpace_device *d = &s->dev[g];
    for (int side = 0; side < 2; side++) {
        free(r->ghost[side]);
        r->ghost[side] = NULL;
        for (int parity = 0; parity < 2; parity++) {
            for (int a = 0; a < s->narrays && d->ghost_host[side][parity]; a++)
                if (d->ghost_host[side][parity][a]) {
                    tpace_dev_unpin(r, d->ghost_host[side][parity][a]);
                    free(d->ghost_host[side][parity][a]);
                }
            free(d->ghost_host[side][parity]);
            d->ghost_host[side][parity] = NULL;
            for (int a = 0; a < s->narrays && d->ghost_dev[side][parity]; a++)
                if (d->ghost_dev[side][parity][a])
                    tpace_dev_free(r, d->ghost_dev[side][parity][a]);
            free(d->ghost_dev[side][parity]);
            d->ghost_dev[side][parity] = NULL;
        }
    }
}

/* Executor g has issued the last block: as each flagged chunk's last download is done, its
 * final planes go to the caller's thread, which sends them to rank 0 (from here where
 * the executors share that thread). */
static void tpace_results_hand_over(tpace_scale *s, int g)
{
    tpace_device *d = &s->dev[g];
    for (long i = 0; i < d->nfinals; i++) {
        tpace_dev_flag_wait(&s->rt[g], d->finals[i].flag);
        if (s->delay_ms > 0) /* tests: a sender later than rank 0 */
            nanosleep(&(struct timespec){s->delay_ms / 1000, s->delay_ms % 1000 * 1000000L}, NULL);
        tpace_results_push(s, d->finals[i].from, d->finals[i].to);
#ifdef TPACE_MPI
        if (!s->crew.threads)
            tpace_results_pump(s, 1);
#endif
    }
    d->nfinals = 0;
}

/* Run one phase of executor g. */
static void tpace_phase_run(tpace_scale *s, int g, int phase)
{
    tpace_rt *r = &s->rt[g];
    switch (phase) {
    case TPACE_PHASE_SETUP:
        tpace_device_setup(s, g);
        break;
    case TPACE_PHASE_PEER:
        tpace_device_peer(s, g);
        break;
    case TPACE_PHASE_GHOSTS:
        tpace_device_ghosts(s, g);
        break;
    case TPACE_PHASE_BLOCK:
        tpace_run_block(r, s->sweeps, s->nsweeps, s->fused, s->in, s->max_tau);
        if (s->crew.threads) {
            tpace_dev_activate(r);
            if (s->dev[g].below_in_place) { /* never so (tpace_ghost_read); never let the device below hang */
                tpace_dev_sync(r);
                tpace_crew_tell(&s->crew, &s->dev[g].below_in_place, 0);
            }
            tpace_results_hand_over(s, g);
            tpace_dev_sync(r);
        }
        break;
    case TPACE_PHASE_SYNC:
        tpace_dev_activate(r);
        tpace_results_hand_over(s, g);
        tpace_dev_sync(r);
        break;
    case TPACE_PHASE_FINISH:
        tpace_dev_activate(r);
        tpace_finish(r);
        s->dev[g].results_at = tpace_now();
        break;
    case TPACE_PHASE_TEARDOWN:
        tpace_dev_activate(r);
        tpace_device_free_ghosts(s, g);
        tpace_end(r);
        free(s->dev[g].finals);
        s->dev[g].finals = NULL;
        break;
    default:
        break;
    }
}

/* An executor's host thread: each phase the caller hands out, until told to quit. */
static void *tpace_crew_main(void *arg)
{
    tpace_device *d = (tpace_device *)arg;
    tpace_scale *s = d->s;
    tpace_crew *c = &s->crew;
    long seen = 0;
    for (;;) {
        TPACE_PTHREAD(pthread_mutex_lock(&c->lock));
        while (c->generation == seen)
            TPACE_PTHREAD(pthread_cond_wait(&c->go, &c->lock));
        seen = c->generation;
        const int phase = c->phase;
        TPACE_PTHREAD(pthread_mutex_unlock(&c->lock));
        if (phase == TPACE_PHASE_QUIT)
            return NULL;
        tpace_phase_run(s, d->g, phase);
        TPACE_PTHREAD(pthread_mutex_lock(&c->lock));
        if (--c->pending == 0)
            TPACE_PTHREAD(pthread_cond_signal(&c->done));
        TPACE_PTHREAD(pthread_mutex_unlock(&c->lock));
    }
}

/* The caller's thread waits (the crew's lock held) until an executor says something or
 * `ns` nanoseconds have passed. */
TPACE_MAYBE_UNUSED static void tpace_crew_nap(tpace_crew *c, long ns)
{
    struct timespec until; /* pthread_cond_timedwait's clock: CLOCK_REALTIME, as TIME_UTC */
    if (timespec_get(&until, TIME_UTC) != TIME_UTC)
        tpace_stop("host threads", "timespec_get(TIME_UTC) failed");
    until.tv_nsec += ns;
    until.tv_sec += until.tv_nsec / 1000000000L;
    until.tv_nsec %= 1000000000L;
    const int err = pthread_cond_timedwait(&c->done, &c->lock, &until);
    if (err != ETIMEDOUT)
        tpace_thread_check(err, "pthread_cond_timedwait(&c->done, &c->lock, &until)");
}

/* Every executor runs `phase`: each on its own thread at once, or one after another here
 * (then a block's chunks of every device are issued before any device is waited for). */
static void tpace_crew_phase(tpace_scale *s, int phase)
{
    tpace_crew *c = &s->crew;
    if (!c->threads) {
        for (int g = 0; g < s->local; g++)
            tpace_phase_run(s, g, phase);
        if (phase == TPACE_PHASE_BLOCK)
            tpace_crew_phase(s, TPACE_PHASE_SYNC);
        return;
    }
    TPACE_PTHREAD(pthread_mutex_lock(&c->lock));
    c->phase = phase;
    c->pending = s->local;
    c->generation++;
    TPACE_PTHREAD(pthread_cond_broadcast(&c->go));
    TPACE_PTHREAD(pthread_mutex_unlock(&c->lock));
#ifdef TPACE_MPI
    /* The threads run the block; this one, the only one that calls MPI, receives the
     * neighbour ranks' planes into the host arrays and tells the threads. */
    if (phase == TPACE_PHASE_BLOCK)
        tpace_exchange_start(s);
#else
    s->arrived[0] = s->arrived[1] = 1; /* one rank: no planes from elsewhere */
#endif
    if (phase == TPACE_PHASE_BLOCK)
        tpace_ghosts_late(s);
    TPACE_PTHREAD(pthread_mutex_lock(&c->lock));
    while (c->pending > 0) {
#ifdef TPACE_MPI
        /* The exchange: acknowledgements as the executors take the neighbours' planes, and
         * the neighbour's for the planes this rank lent (looked for every 0.1 ms). */
        if (phase == TPACE_PHASE_BLOCK && tpace_the_world.ranks > 1 && s->t > 0) {
            tpace_exchange_progress(s);
            if (c->pending == 0) /* it may have let go of the lock: the executors may be done */
                break;
            if (!s->live && tpace_exchange_watching(s)) {
                tpace_crew_nap(c, 100000L);
                continue;
            }
        }
        /* The last block: the results to rank 0 as the devices hand them over, MPI kept
         * moving (every millisecond at least, more often while pieces are on their way). */
        if (phase == TPACE_PHASE_BLOCK && s->live) {
            TPACE_PTHREAD(pthread_mutex_unlock(&c->lock));
            const int moving = tpace_results_pump(s, 1);
            TPACE_PTHREAD(pthread_mutex_lock(&c->lock));
            if (c->pending > 0 && s->handed == NULL)
                tpace_crew_nap(c, moving || tpace_exchange_watching(s) ? 100000L : 1000000L);
            continue;
        }
#endif
        TPACE_PTHREAD(pthread_cond_wait(&c->done, &c->lock));
    }
    TPACE_PTHREAD(pthread_mutex_unlock(&c->lock));
}

/* One host thread per executor where the target lets executors run on threads of their
 * own (tpace_dev_threads) and TPACE_THREADS is not 0. */
static void tpace_crew_start(tpace_scale *s)
{
    tpace_crew *c = &s->crew;
    /* Under MPI one device has a thread of its own too: this one then moves data between
     * ranks (ghost planes, results) while the device works. */
    c->threads = (s->local > 1 || tpace_the_world.ranks > 1) && tpace_dev_threads() &&
                 tpace_env_long("TPACE_THREADS", 1, 0, 1);
#ifdef TPACE_MPI
    c->threads &= tpace_the_world.threads_ok;
#endif
    if (!c->threads)
        return;
    TPACE_PTHREAD(pthread_mutex_init(&c->lock, NULL));
    TPACE_PTHREAD(pthread_cond_init(&c->go, NULL));
    TPACE_PTHREAD(pthread_cond_init(&c->done, NULL));
    TPACE_PTHREAD(pthread_cond_init(&c->arrived, NULL));
    c->thread = (pthread_t *)calloc((size_t)s->local, sizeof *c->thread);
    if (c->thread == NULL)
        tpace_stop(s->shape->where, "host memory ran out starting the devices' threads");
    for (int g = 0; g < s->local; g++) {
        TPACE_PTHREAD(pthread_create(&c->thread[g], NULL, tpace_crew_main, &s->dev[g]));
        c->started++;
    }
}

/* The threads end. */
static void tpace_crew_stop(tpace_scale *s)
{
    tpace_crew *c = &s->crew;
    if (!c->threads)
        return;
    TPACE_PTHREAD(pthread_mutex_lock(&c->lock));
    c->phase = TPACE_PHASE_QUIT;
    c->generation++;
    TPACE_PTHREAD(pthread_cond_broadcast(&c->go));
    TPACE_PTHREAD(pthread_mutex_unlock(&c->lock));
    for (int g = 0; g < c->started; g++)
        TPACE_PTHREAD(pthread_join(c->thread[g], NULL));
    free(c->thread);
    TPACE_PTHREAD(pthread_cond_destroy(&c->arrived));
    TPACE_PTHREAD(pthread_cond_destroy(&c->done));
    TPACE_PTHREAD(pthread_cond_destroy(&c->go));
    TPACE_PTHREAD(pthread_mutex_destroy(&c->lock));
}

/* Whether executor g's ghost planes on `side` are in the slabs of this process's other
 * executors alone (none of another rank's). With `able` (able[h * local + g]: h's device
 * can copy into g's), whether they can all come device to device. */
static int tpace_local_side(const tpace_scale *s, const int *able, int g, int side)
{
    const tpace_device *d = &s->dev[g];
    const long lo = side == 0 ? d->from : d->own_hi, hi = side == 0 ? d->own_lo : d->to;
    if (lo >= hi || lo < s->rank_lo || hi > s->rank_hi)
        return 0;
    for (int h = 0; h < s->local && able; h++)
        if (h != g && TPACE_MAX(lo, s->dev[h].own_lo) < TPACE_MIN(hi, s->dev[h].own_hi) && !able[h * s->local + g])
            return 0;
    return 1;
}

/* Device bytes of executor g's ghost planes on its local sides, two sets (peer copies). */
static size_t tpace_ghost_dev_bytes(const tpace_scale *s, int g)
{
    const tpace_device *d = &s->dev[g];
    size_t exchanged = 0;
    for (int a = 0; a < s->narrays; a++)
        if (tpace_exchanged(&s->arrays[a]))
            exchanged += s->plane * s->arrays[a].elem;
    const long planes = (d->local_side[0] ? d->own_lo - d->from : 0) + (d->local_side[1] ? d->to - d->own_hi : 0);
    return 2 * (size_t)planes * exchanged;
}

/* The names of the arrays that come back to rank 0 alone (to_root) or to every rank, in
 * `buf` ("none" if none). */
static const char *tpace_names_of(const tpace_scale *s, int to_root, char *buf, size_t size)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int a = 0; a < s->narrays; a++) {
        const tpace_array *arr = &s->arrays[a];
        if (arr->transfer == TPACE_UP || arr->transfer == TPACE_UNUSED || arr->unread || !arr->to_root != !to_root)
            continue;
        const int n = snprintf(buf + at, size - at, "%s%s", at ? ", " : "", arr->name);
        if (n < 0 || (size_t)n >= size - at)
            break;
        at += (size_t)n;
    }
    if (at == 0)
        snprintf(buf, size, "none");
    return buf;
}

/* TPACE_TRACE over several devices: one file (a neighbour rank's: FILE.rankN) with every
 * device's operations, the device in a last column, times from the first device's origin;
 * then where the blocks (host clock: blocks_from to blocks_to) lie on that clock. */
static void tpace_trace_devices(tpace_scale *s, double blocks_from, double blocks_to)
{
    if (s->rt[0].trace.path == NULL)
        return;
    char path[4096];
    if (tpace_the_world.rank == 0)
        snprintf(path, sizeof path, "%s", s->rt[0].trace.path);
    else
        snprintf(path, sizeof path, "%s.rank%d", s->rt[0].trace.path, tpace_the_world.rank);
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        char msg[4200];
        snprintf(msg, sizeof msg, "cannot open TPACE_TRACE file %s: %s", path, strerror(errno));
        tpace_stop(s->shape->where, msg);
    }
    tpace_trace_header(f, 1);
    double origin = s->rt[0].trace.origin_at;
    for (int g = 1; g < s->local; g++)
        origin = TPACE_MIN(origin, s->rt[g].trace.origin_at);
    for (int g = 0; g < s->local; g++) {
        tpace_rt *r = &s->rt[g];
        tpace_dev_activate(r);
        r->trace.path = path;
        tpace_trace_write(r, f, tpace_the_world.rank * s->local + g, (r->trace.origin_at - origin) * 1e3);
        r->trace.path = NULL;
    }
    if (fclose(f) != 0)
        tpace_stop(s->shape->where, "cannot write the TPACE_TRACE file");
    /* Where the blocks lie on the file's clock: the time before the first operation and
     * after the last is the host's (ghost planes, threads, results). */
    if (tpace_the_world.rank == 0)
        fprintf(stderr, "tpace: %s: trace: the blocks ran from %.3f ms to %.3f ms of %s's clock\n", s->shape->where,
                (blocks_from - origin) * 1e3, (blocks_to - origin) * 1e3, path);
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
    s.nreds = nreds;
    s.shape = shape;
    s.sweeps = sweeps;
    s.nsweeps = nsweeps;
    s.fused = fused;
    s.in = in;
    s.max_tau = tpace_max_tau(sweeps, nsweeps);
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
    s.rt = (tpace_rt *)calloc((size_t)local, sizeof *s.rt);
    s.dev = (tpace_device *)calloc((size_t)local, sizeof *s.dev);
    s.copies = (tpace_array *)calloc((size_t)(local * narrays), sizeof *s.copies);
    s.red_copies = (tpace_reduction *)calloc((size_t)TPACE_MAX(local * nreds, 1), sizeof *s.red_copies);
    s.dims = (long *)calloc((size_t)(local * 2 * shape->rank), sizeof *s.dims);
    int *able = (int *)calloc((size_t)(local * local), sizeof *able);
    if (rank_lo == NULL || rank_hi == NULL || s.rt == NULL || s.dev == NULL || s.copies == NULL ||
        s.red_copies == NULL || s.dims == NULL || able == NULL)
        tpace_stop(shape->where, "host memory ran out starting the devices");
    for (int q = 0; q < w->ranks; q++) {
        long from, to;
        tpace_slab(s.lo, s.n, s.devices, (long)q * local, &rank_lo[q], &to);
        tpace_slab(s.lo, s.n, s.devices, (long)q * local + local - 1, &from, &rank_hi[q]);
    }
    s.rank_lo = rank_lo[w->rank];
    s.rank_hi = rank_hi[w->rank];
    s.ranks_lo = rank_lo;
    s.ranks_hi = rank_hi;
    s.handed_end = &s.handed;
    /* Arrays rank 0 alone reads go to it as the last block's chunks finish, unless
     * TPACE_EARLY_RESULTS=0 (then after the blocks, as the others). */
    s.early = w->ranks > 1 && tpace_env_long("TPACE_EARLY_RESULTS", 1, 0, 1);
    size_t early_bytes = 0;
    for (int q = 1; q < w->ranks && s.early; q++)
        early_bytes += tpace_early_bytes(&s, q);
    s.early = early_bytes > 0;
    s.delay_ms = tpace_env_long("TPACE_RESULTS_DELAY_MS", 0, 0, 600000);
    s.late_delay_ms = tpace_env_long("TPACE_LATE_GHOSTS_DELAY_MS", 0, 0, 600000);
    s.below_delay_ms = tpace_env_long("TPACE_BELOW_DELAY_MS", 0, 0, 600000);
    s.in_place = (int)tpace_env_long("TPACE_IN_PLACE", 1, 0, 1);
#ifdef TPACE_MPI
    s.pull_delay_ms = tpace_env_long("TPACE_PULL_DELAY_MS", 0, 0, 600000);
    s.pack_delay_ms = tpace_env_long("TPACE_PACK_DELAY_MS", 0, 0, 600000);
    if (w->ranks > 1) {
        tpace_results_setup(&s);
        tpace_exchange_setup(&s);
    }
#endif
    /* A neighbour rank must hold every ghost plane a block reads. */
    long thinnest = s.n;
    for (int q = 0; q < w->ranks; q++)
        thinnest = TPACE_MIN(thinnest, rank_hi[q] - rank_lo[q]);
    /* Which devices of this process can copy into which (TPACE_PEER=0: none; ghost planes
     * then go through host memory, as between ranks). */
    const int peer_wanted = (int)tpace_env_long("TPACE_PEER", 1, 0, 1);
    for (int g = 0; g < local; g++) {
        s.dev[g].s = &s;
        s.dev[g].g = g;
        s.dev[g].device = tpace_device_of(local, g);
    }
    for (int h = 0; h < local && peer_wanted; h++)
        for (int g = 0; g < local; g++) {
            tpace_rt probe;
            memset(&probe, 0, sizeof probe);
            probe.plan.s = *shape;
            probe.device = s.dev[h].device;
            able[h * local + g] = g != h && tpace_dev_peer_able(&probe, s.dev[g].device);
        }
    /* The plan: one for every device (see tpace_plan_devices). */
    tpace_plan_devices(shape, arrays, narrays, reds, nreds, s.devices, local, thinnest, rank_hi[0] - rank_lo[0],
                       s.early, &s.slab_shape);
    s.k = TPACE_MAX(s.slab_shape.force_k, 1L);
    for (int g = 0; g < local; g++) {
        tpace_device *d = &s.dev[g];
        tpace_slab(s.lo, s.n, s.devices, (long)w->rank * local + g, &d->own_lo, &d->own_hi);
        /* Its grid: the slab and the planes k steps read beyond it. */
        d->from = TPACE_MAX(s.lo, d->own_lo - s.k * shape->reach_lo);
        d->to = TPACE_MIN(s.lo + s.n, d->own_hi + s.k * shape->reach_hi);
        if (nreds)
            memcpy(s.red_copies + (size_t)g * nreds, reds, (size_t)nreds * sizeof *reds);
    }
    for (int g = 0; g < local; g++)
        for (int side = 0; side < 2; side++) {
            s.dev[g].within[side] = tpace_local_side(&s, NULL, g, side);
            /* ... and a block after the first reads them */
            s.dev[g].local_side[side] = s.dev[g].within[side] && shape->steps > s.k;
        }
    /* Set-up (page-locking, device buffers) is timed apart, as one device's report leaves
     * it out; the report's seconds run from the first block to the results in place. */
    const double setup_start = tpace_now();
    tpace_crew_start(&s);
    tpace_crew_phase(&s, TPACE_PHASE_SETUP);
#ifdef TPACE_MPI
    if (w->ranks > 1)
        tpace_exchange_reserve(&s, shape->reach_lo, shape->reach_hi);
#endif
    /* Ghost planes device to device where the devices reach each other and every device
     * has room for two sets of them beside its plan (under the budget); else through host
     * memory. The plan does not shrink for them. */
    int peer = peer_wanted;
    for (int g = 0; g < local && peer; g++) {
        const size_t used = s.rt[g].plan.device_bytes + s.rt[g].plan.reduction_bytes;
        const size_t budget = s.slab_shape.force_budget;
        peer = !budget || (budget > used && budget - used >= tpace_ghost_dev_bytes(&s, g));
    }
    for (int g = 0; g < local; g++)
        for (int side = 0; side < 2; side++)
            s.dev[g].peer[side] = peer && s.dev[g].local_side[side] && tpace_local_side(&s, able, g, side);
    tpace_crew_phase(&s, TPACE_PHASE_PEER);
#ifdef TPACE_MPI
    /* Every rank starts its blocks at once: a rank whose set-up ends first would wait in its
     * blocks for the planes of a neighbour still setting up, and its time would count a
     * set-up not its own (2 H200, heat-3D 8G: rank 0's chunks waited 0.22 s in all for the
     * planes of rank 1, behind it; 0.05 s with this barrier). The set-up reports the slowest
     * rank's. */
    if (w->ranks > 1)
        TPACE_MPI_CALL(MPI_Barrier(MPI_COMM_WORLD));
#endif
    const double start = tpace_now();
    double exchange_wait = 0.0;
    /* Block by block: the exchange with the neighbour ranks, the host copies of the ghost
     * planes, every device's chunks (at once), every device drained. */
    const long steps = TPACE_MAX(shape->steps, 0L);
    for (long t = 0; t < steps; t += s.k) {
        s.t = t;
        s.kb = (int)TPACE_MIN(s.k, steps - t);
        s.arrived[0] = s.arrived[1] = 0;
        s.live = 0;
#ifdef TPACE_MPI
        if (w->ranks > 1 && t > 0)
            tpace_exchange_post(&s, shape->reach_lo, shape->reach_hi);
#endif
        if (s.delay_ms > 0 && w->rank == 0 && s.early && t + s.kb >= steps) /* tests: rank 0 late to its last block */
            nanosleep(&(struct timespec){s.delay_ms / 1000, s.delay_ms % 1000 * 1000000L}, NULL);
        tpace_crew_phase(&s, TPACE_PHASE_GHOSTS);
#ifdef TPACE_MPI
        /* The last block has taken its ghost planes: the results may come into the arrays. */
        s.live = s.early && t + s.kb >= steps;
        if (s.live)
            tpace_results_open(&s);
#endif
        tpace_crew_phase(&s, TPACE_PHASE_BLOCK);
#ifdef TPACE_MPI
        if (w->ranks > 1 && t > 0) {
            const double wait_start = tpace_now();
            tpace_exchange_end(&s);
            exchange_wait += tpace_now() - wait_start;
        }
#endif
    }
    const double blocks_end = tpace_now();
    /* The results: what went early to rank 0 all there, every device's last copies and
     * reductions, then the other arrays to the ranks that read them. */
    double early_wait = 0.0;
    size_t between_ranks = 0;
#ifdef TPACE_MPI
    if (s.early)
        early_wait = tpace_results_finish(&s);
#endif
    tpace_crew_phase(&s, TPACE_PHASE_FINISH);
#ifdef TPACE_MPI
    if (w->ranks > 1)
        between_ranks = tpace_sum_over_ranks(tpace_gather(&s, rank_lo, rank_hi) + s.arrived_bytes);
    free(s.out[0]);
    free(s.out[1]);
    for (int side = 0; side < 2; side++) {
        free(s.where_out[side]);
        free(s.where_in[side]);
    }
    if (w->ranks > 1)
        tpace_results_free(&s);
#endif
    if (nreds)
        tpace_combine_reductions(&s, reds, nreds, steps);
    const double results_end = tpace_now();
    size_t device_bytes = 0, up_bytes = 0, down_bytes = 0, peer_bytes = 0, host_ghost_bytes = 0, in_place_bytes = 0;
    for (int g = 0; g < local; g++) {
        device_bytes = TPACE_MAX(device_bytes, s.rt[g].plan.device_bytes + s.dev[g].ghost_dev_bytes);
        up_bytes += s.rt[g].plan.up_bytes;
        down_bytes += s.rt[g].plan.down_bytes;
        peer_bytes += s.dev[g].peer_bytes;
        host_ghost_bytes += s.dev[g].host_ghost_bytes + s.dev[g].late_bytes;
        in_place_bytes += s.dev[g].in_place_bytes;
#ifdef TPACE_MPI
        s.ghost_pulled += s.dev[g].pulled_bytes;
#endif
    }
    tpace_plan whole = s.rt[0].plan; /* before the teardown frees what it points to */
    tpace_trace_devices(&s, start, blocks_end);
    /* Device buffers freed and the slabs unpinned, at once; not in the report's seconds. */
    const double teardown_start = tpace_now();
    tpace_crew_phase(&s, TPACE_PHASE_TEARDOWN);
    tpace_crew_stop(&s);
    const double teardown_end = tpace_now();
    /* One report for the whole run, from rank 0. */
    whole.s = *shape;
    whole.s.steps = steps;
    whole.device_bytes = device_bytes;
    whole.up_bytes = tpace_sum_over_ranks(up_bytes);
    whole.down_bytes = tpace_sum_over_ranks(down_bytes);
    whole.seconds = tpace_max_over_ranks(results_end - start);
    /* Where a run over several devices spends its time, before the report line. */
    const double setup = tpace_max_over_ranks(start - setup_start);
    const double blocks = tpace_max_over_ranks(blocks_end - start);
    const double waited = tpace_max_over_ranks(exchange_wait);
    const double teardown = tpace_max_over_ranks(teardown_end - teardown_start);
    peer_bytes = tpace_sum_over_ranks(peer_bytes);
    host_ghost_bytes = tpace_sum_over_ranks(host_ghost_bytes);
    in_place_bytes = tpace_sum_over_ranks(in_place_bytes);
    /* The early results: bytes each sender sent while its blocks ran and after them; what
     * rank 0 (which prints this) received while its own blocks ran, and its wait after. */
    const size_t sent_during = tpace_sum_over_ranks(s.sent_during), sent_after = tpace_sum_over_ranks(s.sent_after);
    size_t arrived_during = 0, copied = 0;
    int copy_threads = 0;
#ifdef TPACE_MPI
    arrived_during = s.arrived_during;
    copied = s.cma.bytes;
    if (w->ranks > 1)
        copy_threads = (int)tpace_max_over_ranks((double)s.cma.threads);
#endif
    /* Ghost planes between ranks: copied out of the neighbours' memory, or by MPI. */
    char ranks_text[400], gr[2][32];
    ranks_text[0] = '\0';
#ifdef TPACE_MPI
    /* Where a block's start may hold a rank up: its edge planes packed for the neighbour,
     * its chunks' wait for the neighbour's planes and their copy (the most of any device). */
    double fill_wait = 0.0, fill_copy = 0.0;
    for (int g = 0; g < local; g++) {
        fill_wait = TPACE_MAX(fill_wait, s.dev[g].fill_wait_s);
        fill_copy = TPACE_MAX(fill_copy, s.dev[g].fill_copy_s);
    }
    if (w->ranks > 1)
        snprintf(ranks_text, sizeof ranks_text,
                 "; between ranks %s copied out of the neighbour's memory, %s by MPI; at the blocks' starts, "
                 "packing edge planes for the neighbours %.6f s, chunks waiting for the neighbours' planes %.6f s "
                 "and copying them %.6f s (the most of any rank)",
                 tpace_bytes_text((double)tpace_sum_over_ranks(s.ghost_pulled), gr[0], sizeof gr[0]),
                 tpace_bytes_text((double)tpace_sum_over_ranks(s.ghost_by_mpi), gr[1], sizeof gr[1]),
                 tpace_max_over_ranks(s.pack_s), tpace_max_over_ranks(fill_wait), tpace_max_over_ranks(fill_copy));
#else
    (void)gr;
#endif
    char root_names[256], every_names[256], gb[3][32], early_text[512];
    if (s.early)
        snprintf(early_text, sizeof early_text,
                 "; to rank 0 as the last block's chunks finished: %zu bytes sent while the senders' blocks ran, %zu "
                 "after them, of which %zu copied straight into rank 0's memory (%d threads a rank) and the rest by MPI, "
                 "%zu received while rank 0's blocks ran; rank 0 waiting %.6f s after its blocks",
                 sent_during, sent_after, copied, copy_threads, arrived_during, early_wait);
    else
        early_text[0] = '\0';
    /* The host cores a rank ran on, and where tpace widened mpirun's binding. */
    char cores_text[200];
    const int cores = (int)tpace_max_over_ranks((double)tpace_host_cores());
    const int given = (int)tpace_max_over_ranks((double)w->cores_given);
    if (given > 0)
        snprintf(cores_text, sizeof cores_text,
                 "; host cores a process: %d, its share of the node's (mpirun had bound it to %d; TPACE_BIND=keep "
                 "keeps that)",
                 cores, given);
    else
        snprintf(cores_text, sizeof cores_text, "; host cores a process: %d", cores);
    fprintf(stderr,
            "tpace: %s: phases over %d device(s) and %d rank(s): setup %.6f s (page-locking, device buffers; not in "
            "seconds=), blocks %.6f s (%s%s; of which waiting for neighbour ranks' planes %.6f s; ghost planes %s "
            "device to device, %s through host memory, %s uploaded straight from the host arrays%s), results %.6f s (last copies and reductions, then to rank 0 "
            "alone: %s; to every rank: %s; %zu bytes between ranks%s), teardown %.6f s (unpinning the arrays, freeing "
            "device buffers; not in seconds=)\n",
            shape->where, s.devices, w->ranks, setup, blocks,
            s.crew.threads && local > 1 ? "every device at once, one host thread each"
            : s.crew.threads            ? "one device in this process, on a host thread of its own"
            : local > 1                 ? "devices issued in turn from one thread"
                                        : "one device in this process",
            cores_text, waited, tpace_bytes_text((double)peer_bytes, gb[0], sizeof gb[0]),
            tpace_bytes_text((double)host_ghost_bytes, gb[1], sizeof gb[1]),
            tpace_bytes_text((double)in_place_bytes, gb[2], sizeof gb[2]), ranks_text, whole.seconds - blocks,
            w->ranks > 1 ? tpace_names_of(&s, 1, root_names, sizeof root_names) : "none (one rank)",
            w->ranks > 1 ? tpace_names_of(&s, 0, every_names, sizeof every_names) : "none (one rank)",
            between_ranks, early_text, teardown);
    whole.predicted = s.slab_shape.predicted;
    snprintf(whole.chosen_by, sizeof whole.chosen_by, "%s", s.slab_shape.chosen_by);
    tpace_report_devices(&whole, s.devices, w->ranks);
    free(able);
    free(s.dims);
    free(s.red_copies);
    free(s.copies);
    free(s.dev);
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
