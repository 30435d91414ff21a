/* ==== tpace runtime, types (shipped by the translator; the same for every program and target) ====
 * What the host program's runtime and a target's device functions both know: the
 * plan of a pipeline, its arrays, the executor's state, the device functions (hooks)
 * every target defines, and the launchers through which the executor starts the
 * kernels tpace printed for each sweep. Valid C and C++ (a CUDA target compiles
 * its part as C++).
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TPACE_MAX(a, b) ((a) > (b) ? (a) : (b))
#define TPACE_MIN(a, b) ((a) < (b) ? (a) : (b))

/* Linkage of the hooks and launchers: static where host program, runtime and device
 * code share one file; extern (and extern "C" on the C++ side) where a target splits
 * them over two files. */
#ifndef TPACE_HOOK
#define TPACE_HOOK static
#endif

/* Runtime functions that only some programs call. */
#define TPACE_MAYBE_UNUSED __attribute__((unused))

struct tpace_model;   /* the performance model (model part) */
struct tpace_machine; /* a machine profile's figures (model part) */

#define TPACE_MAX_SLOTS 64
/* Mark ids: a slot's hand-over (its id is the slot's), and, where mmtb downloads on a
 * queue of their own, the download of the slot's chunk from its own planes on, and all of it. */
#define TPACE_MARK_OUT_HIGH(slot) (TPACE_MAX_SLOTS + (slot))
#define TPACE_MARK_OUT_ALL(slot) (2 * TPACE_MAX_SLOTS + (slot))
#define TPACE_MARKS (3 * TPACE_MAX_SLOTS)
/* Most dimensions of a grid (the translator's runtime::MAX_RANK). */
#define TPACE_MAX_RANK 8

/* Schedules (DESIGN.md §3).
 * naive:  every step, every chunk goes to the device and back.
 * mm:     a chunk plus ghost planes goes in, k steps run on a shrinking window,
 *         the chunk's own planes come back (tpace paper, Fig. 4).
 * mmtb:   chunks in order along the cut axis with time-skewed windows; the planes
 *         a chunk needs from its predecessor are handed over on the device, so
 *         every point is computed once per step (MMTB paper §4, ETBM poster).
 * incore: the whole grid stays on the device for all steps. */
enum tpace_schedule { TPACE_NAIVE = 0, TPACE_MM = 1, TPACE_MMTB = 2, TPACE_INCORE = 3 };

/* How a listed array moves between host and device. */
enum tpace_transfer {
    TPACE_UPDOWN = 0,     /* read and written: in and out every block of k steps */
    TPACE_UP = 1,         /* only read: in every block */
    TPACE_LAST_BLOCK = 2, /* pure temporary: moved only in the last block, for its final values */
    TPACE_UNUSED = 3,     /* listed but never touched by a sweep */
    TPACE_FOLDED = 4      /* the temporary of a copy run as a swap: never on the device; after the
                           * last step it equals the copy's destination on the copy's box (and no
                           * sweep writes it elsewhere), so the last block downloads that box of the
                           * destination's buffers into it */
};


/* How a reduction combines its terms. */
enum tpace_reduce_op { TPACE_RED_SUM = 0, TPACE_RED_MAX = 1, TPACE_RED_MIN = 2 };

/* One reduction in a sweep (`gosa += ss * ss`): its result for every time step, in
 * the type the program declares. The generated program replays the time loop on the
 * host after the pipeline and combines step t's result into the variable there. */
typedef struct tpace_reduction {
    const char *name; /* the accumulator, for messages */
    size_t elem;      /* bytes per value: 4 (float) or 8 (double) */
    int op;           /* enum tpace_reduce_op */
    void *partial;    /* host: one value per step, starting at the identity */
    void *dev;        /* device: the same slots, where the target reduces on the device */
} tpace_reduction;

struct tpace_rt;

/* What the translator knows about the pipelined loop. */
typedef struct tpace_shape {
    const char *where;   /* file:line:col of the time loop, for messages */
    long lo, n;          /* the cut axis (outermost dimension) covers indices [lo, lo + n) */
    size_t plane;        /* elements per plane (product of the inner extents) */
    long reach_lo;       /* mm: planes one time step reads below a computed plane */
    long reach_hi;       /* ... and above */
    long skew;           /* mmtb: planes the sweep windows move down per step */
    long below;          /* mmtb: planes below its window a chunk reads at the block's first step */
    long above;          /* mmtb: planes above a chunk it reads before anything writes them */
    long steps;          /* time steps of the loop */
    int rank;            /* dimensions of the grid */
    const long *dim_lo;  /* per dimension, outermost (the cut axis) first: first index */
    const long *dim_n;   /* ... and extent (dim_lo[0] = lo, dim_n[0] = n) */
    int default_k;       /* defaults when the model has no plan that fits */
    long default_chunks;
    int default_streams;
    int fuse_max;        /* most steps one kernel may advance (1: this program's kernels do one) */
    int fuse_default;    /* steps per kernel unless TPACE_FUSE says otherwise */
    const long *fuse_shared; /* per step count (0 .. TPACE_FUSE_MAX), shared memory a fused kernel's block needs */
    long (*shared_limit)(struct tpace_rt *r); /* the most shared memory a block may use on the device (NULL: no fused kernels) */
    int (*steps_per_kernel)(const struct tpace_shape *s); /* where not NULL, the target chooses the steps per
                                                           * kernel itself (up to fuse_max; OpenCL: its
                                                           * evolution-vector model or TPACE_T), not
                                                           * TPACE_FUSE and the performance model */
    const struct tpace_model *model; /* the performance model for this pipeline and machine (model part) */
    const struct tpace_machine *machines; /* the bundled profiles the program may plan with instead, */
    int nmachines;                        /* chosen by the device's name (tpace_pick_model) */
    const int *rotate;   /* pointers exchanged at the end of every step (NULL: none): per array, the array
                          * whose storage its pointer names after one step (tpace_rotated) */
    /* Several devices: the plan every device runs, chosen for all of them at once
     * (tpace_plan_devices in the scale-out part), and the budget it was chosen for. */
    int force;           /* 1: the executor takes this plan and asks no one else */
    int force_schedule;  /* enum tpace_schedule */
    long force_k, force_b; /* force_b 0: the widest chunk that fits */
    int force_streams, force_fuse;
    size_t force_budget; /* device memory each device may use (0: unknown) */
    double predicted;    /* the model's seconds for the whole run on every device */
    char chosen_by[512]; /* who chose it, for the report */
} tpace_shape;

/* One listed array: the user's host memory and its device buffers. */
typedef struct tpace_array {
    const char *name;             /* for messages and the dump */
    void *host;                   /* the user's array, element (lo, lo, ...) first */
    size_t elem;                  /* bytes per element */
    int transfer;                 /* enum tpace_transfer */
    void *slot[TPACE_MAX_SLOTS];  /* one chunk buffer per slot (queue) */
    void *carry;                  /* mm: lower ghost planes handed from chunk c to c + 1 */
    int swap;                     /* 1: a copy sweep into this array runs as a buffer swap */
    void *shadow[TPACE_MAX_SLOTS]; /* swap: the second buffer per slot */
    int fused;                    /* 1: the array fused kernels advance several steps at a time */
    void *strip_out[TPACE_MAX_SLOTS]; /* fused mmtb: a chunk's rows of the intermediate steps below its top edge;
                                         its successor's kernels read them where they are */
    int fold_of;                  /* TPACE_FOLDED: the array whose buffers hold its final values */
    const long *fold_lo;          /* TPACE_FOLDED: the copy's box, [fold_lo[d], fold_hi[d]) in */
    const long *fold_hi;          /* dimension d (cut axis first) */
    void *fold_keep;              /* TPACE_FOLDED: its cells between the box's rows, kept on the host (tpace_fold_gaps) */
    int unread;                   /* 1: the program never reads it after the pipeline, so its final values
                                   * stay on the device: nothing of it comes back in the last block (nor
                                   * goes in there only for them, a pure temporary); earlier blocks'
                                   * downloads stay, the next block reads them */
    int to_root;                  /* several MPI ranks: 1 where the program only outputs it after the pipeline
                                   * (and only rank 0's output is kept), so rank 0 alone receives its final
                                   * values; 0: every rank does (the code after the pipeline may read it) */
    long pin_lo, pin_hi;          /* several devices: the planes the target page-locks for the pipeline, where
                                   * more than the executor's slab (ghost planes read in place); 0, 0: the slab */
} tpace_array;

/* The array whose storage array a's pointer names after `steps` steps of a pipeline whose
 * pointers rotate (`rotate`, see tpace_shape; NULL: a itself). */
TPACE_MAYBE_UNUSED static inline int tpace_rotated(const int *rotate, int a, long steps)
{
    if (rotate == NULL || steps <= 0)
        return a;
    long cycle = 1;
    for (int at = rotate[a]; at != a; at = rotate[at])
        cycle++;
    int at = a;
    for (long s = steps % cycle; s > 0; s--)
        at = rotate[at];
    return at;
}

/* Whether an array has device buffers (a folded temporary and an unused array have none). */
TPACE_MAYBE_UNUSED static inline int tpace_on_device(const tpace_array *a)
{
    return a->transfer != TPACE_UNUSED && a->transfer != TPACE_FOLDED;
}

/* Whether an array ever crosses the bus (an unread temporary and an unread folded one never do). */
TPACE_MAYBE_UNUSED static inline int tpace_crosses_bus(const tpace_array *a)
{
    if (a->transfer == TPACE_UNUSED)
        return 0;
    return !(a->unread && (a->transfer == TPACE_FOLDED || a->transfer == TPACE_LAST_BLOCK));
}

/* The out-of-core plan: shape, chosen parameters and the memory they need. */
typedef struct tpace_plan {
    tpace_shape s;
    int schedule;        /* enum tpace_schedule */
    int k;               /* time steps per transfer (1 for naive, all steps for incore) */
    long b;              /* chunk width in planes */
    int streams;         /* queues requested */
    long nchunks;        /* ceil(n / b) */
    int slots;           /* chunk buffers (and queues) in use */
    long slot_planes;    /* planes in one chunk buffer */
    size_t plane_bytes;  /* bytes of one plane of every array that lives on the device */
    size_t strip_plane_bytes; /* bytes of one plane of the fused array (its strips' planes) */
    size_t device_bytes; /* device memory the plan needs */
    size_t budget;       /* device memory it may use (0: unknown) */
    double seconds;      /* wall time of the pipeline */
    size_t reduction_bytes; /* device bytes of the reductions' per-step slots */
    int fuse_wanted;     /* steps per kernel asked for (TPACE_FUSE or the program's default) */
    int fuse;            /* steps per kernel in use (1: one step per kernel) */
    long fuse_blocks;    /* blocks a fused launch aims at when TPACE_FUSE_BLOCKS sets it (0: one wave) */
    long strip_planes;   /* fused mmtb: planes of each hand-over strip (0: none) */
    double predicted;    /* the model's prediction of that time (0: no model) */
    char chosen_by[512]; /* who chose the parameters, and the device and profile, for the report */
    size_t up_bytes;     /* array bytes moved host to device so far */
    size_t down_bytes;   /* ... and device to host */
    int queues;          /* queues the target sets up: the slots and the mm carry queue, or room for any
                          * plan a re-plan may take */
    /* Plans that correct themselves (tpace_replan_* in the schedule part): */
    struct tpace_model *model; /* the model the run plans with (NULL: none), refitted when it re-plans */
    int fuse_set;        /* the steps per kernel were set (TPACE_FUSE, or the target's own choice) */
    int fuse_most;       /* the most steps per kernel the program and device hold */
    int replan;          /* whether the run checks the model against its first chunk and block */
    int out_queue;       /* mmtb downloads on a queue of their own (TPACE_OUT_QUEUE, default 1) */
    int replans;         /* times it re-planned */
    char replan_note[1536]; /* what it measured and what it changed, for the report */
} tpace_plan;

/* The chunk the executor hands to the generated kernels. */
typedef struct tpace_chunk {
    long c;         /* chunk index along the cut axis */
    long t;         /* first step of the block, counted from 0 */
    int kb;         /* steps in this block (the last block may be short) */
    int slot;       /* buffer slot, also the queue its work goes to */
    int out_q;      /* the queue its downloads go to (mmtb: one of their own; else the slot's) */
    long base;      /* grid plane at the start of the slot's buffers */
    int last_block; /* whether this is the block with the loop's last step */
} tpace_chunk;

/* One operation of the timeline TPACE_TRACE records: what it did for which chunk,
 * and the device stamps (tpace_dev_stamp) on the chunk's queue where it started and
 * where it was done. */
typedef struct tpace_trace_op {
    long c, t;    /* the chunk and the first step of its block */
    int kb, slot; /* the block's steps and the chunk's queue */
    int what;     /* enum tpace_trace_what */
    int from, to; /* stamps */
    size_t bytes; /* bytes moved (0 for kernels) */
    size_t copied; /* bytes copied on the device within it (an upload's second buffers of swapped arrays) */
} tpace_trace_op;

/* The timeline being recorded (TPACE_TRACE=FILE, or re-planning's measurements; off while
 * `on` is 0). */
typedef struct tpace_trace {
    int on;           /* recording (TPACE_TRACE, or a run that checks the model against its first block) */
    FILE *file;       /* TPACE_TRACE's file, one device (NULL: none, or `keep`) */
    const char *path; /* TPACE_TRACE's file name (NULL: no file; only re-planning measures) */
    tpace_trace_op *ops;
    long n, cap;
    int origin;       /* the stamp all times count from */
    double origin_at; /* the host's clock when the origin was stamped (tpace_now; the device was idle) */
    int keep;         /* 1: tpace_trace_end leaves the operations to the caller (several devices: one file) */
    int kernels_from; /* the stamp where the current chunk's kernels may start */
} tpace_trace;

/* The executor's state. */
typedef struct tpace_rt {
    tpace_plan plan;
    tpace_array *arrays;
    int narrays;
    tpace_reduction *reductions; /* reductions in sweeps (NULL when none) */
    int nreductions;
    tpace_chunk cur; /* the chunk whose kernels were issued last */
    int started;     /* whether `cur` holds a chunk */
    long next_t;     /* the first step of the block tpace_next starts next */
    double start;
    int mark_queue[TPACE_MARKS]; /* target bookkeeping for tpace_dev_mark */
    tpace_trace trace;               /* TPACE_TRACE's timeline */
    void *target;                    /* target-specific state */
    /* Several devices (the scale-out part): each runs an executor like this one on its slab
     * of the cut axis plus the ghost planes below and above it that k steps read. */
    int device;                      /* the local device it drives */
    long units;                      /* its multiprocessors (0: unknown), set by the target */
    long own_lo, own_hi;             /* its slab: the planes it downloads and counts (all with one device) */
    int blockwise;                   /* 1: tpace_next stops after each block (the caller exchanges, goes on) */
    char **ghost[2];                 /* per array, host copies of the ghost planes below and above the slab */
    int ghost_ready[2];              /* whether the copies below / above hold this block's start */
    void (*ghost_fill)(struct tpace_rt *r, int side); /* fills them (waiting for a neighbour rank's planes) */
    void (*ghost_read)(struct tpace_rt *r, const struct tpace_chunk *ch); /* chunk ch's upload of ghost planes
                                      * below the slab is issued (NULL: nothing more) */
    char **ghost_dev[2];             /* per array, where this block's ghost planes below / above are on the device
                                      * (copied there from the neighbours' devices: peer copies); NULL: the host copies */
    void (*planes_out)(struct tpace_rt *r, const tpace_chunk *ch, long from, long to); /* the slab's planes
                                      * [from, to) of chunk ch are on their way to the host (NULL: nothing more) */
    void (*download_gate)(struct tpace_rt *r, long from, long to); /* called before planes [from, to) of the
                                      * slab are downloaded: waits while another rank may still read them there
                                      * (NULL: nothing to wait for) */
    void *scale;                     /* the scale-out part's state for ghost_fill, planes_out, download_gate */
    int finished;                    /* tpace_finish has run: the results are in place */
    /* Checking the model against the first chunk and block (tpace_replan_* in the schedule part): */
    int calibrating;                 /* 1 until the first chunk of the first block is measured */
    int rechecking;                  /* 1 until the first block (of the run, or of a plan taken after a block) is
                                      * measured */
    long blocks_done;                /* blocks the executor finished (the checks' notes count them) */
    long launches;                   /* kernel launches so far */
    int first_split;                 /* the first chunk's step where its kernels' second part starts (-1: one
                                      * part; tpace_first_chunk_split) */
    int first_split_stamp;           /* ... the stamp there (-1: none) */
    long first_split_launches;       /* ... and the launches before it */
} tpace_rt;

/* Most steps one fused kernel advances (the translator instantiates kernels for 2 .. this). */
#define TPACE_FUSE_MAX 8

/* What a fused kernel (two-level blocking, MMTB paper §2.1) needs to know about the
 * group of steps it advances: where the chunk's rows are, each step's window, how the
 * launch splits the rows among blocks, and the mmtb strips that carry the group's
 * intermediate steps from one chunk to the next. */
typedef struct tpace_fuse_args {
    long tp_base;                   /* grid row of the chunk buffers' first row */
    long tp_rows_lo, tp_rows_hi;    /* grid rows the buffers hold: [tp_rows_lo, tp_rows_hi) */
    long tp_box_lo, tp_box_hi;      /* the sweep's rows along the cut axis */
    long tp_wlo[TPACE_FUSE_MAX];    /* rows [tp_wlo[l], tp_whi[l]) step l of the group computes */
    long tp_whi[TPACE_FUSE_MAX];
    long tp_seg_lo, tp_seg_hi;      /* rows the launch covers, */
    long tp_seg;                    /* tp_seg of them per block */
    long tp_level0;                 /* the group's first step within the block */
    long tp_skew, tp_strip_rows;    /* strips: step m of the block keeps the tp_strip_rows rows below */
    long tp_edge_in, tp_edge_out;   /* edge - (m - 1) * skew; the j-th intermediate step of the block
                                     * fills planes [j * tp_strip_rows, (j + 1) * tp_strip_rows) of a strip */
    const void *tp_strip_in;        /* the predecessor's rows of the intermediate steps (NULL: none) */
    void *tp_strip_out;             /* this chunk's rows of them, for its successor (NULL: none) */
} tpace_fuse_args;

/* ---- Hooks every target defines (queues 0 .. slots - 1 carry chunks; queue `slots` the mm carry). ---- */
TPACE_HOOK void *tpace_dev_alloc(tpace_rt *r, size_t bytes);  /* NULL when device memory runs out */
TPACE_HOOK void tpace_dev_free(tpace_rt *r, void *p);
TPACE_HOOK void tpace_dev_upload(tpace_rt *r, void *dev, const void *host, size_t bytes, int q);
TPACE_HOOK void tpace_dev_download(tpace_rt *r, void *host, const void *dev, size_t bytes, int q);
TPACE_HOOK void tpace_dev_copy(tpace_rt *r, void *dst, const void *src, size_t bytes, int q);
TPACE_HOOK void tpace_dev_wait(tpace_rt *r, int from_q, int to_q); /* to_q waits for the work on from_q so far */
TPACE_HOOK void tpace_dev_mark(tpace_rt *r, int q, int id);        /* remember the work on q so far as mark id */
TPACE_HOOK void tpace_dev_wait_mark(tpace_rt *r, int id, int q);   /* q waits for mark id */
TPACE_HOOK void tpace_dev_sync(tpace_rt *r);                       /* wait for all queues */
TPACE_HOOK size_t tpace_dev_free_memory(tpace_rt *r);              /* free device bytes, 0 when unknown */
TPACE_HOOK void tpace_dev_begin(tpace_rt *r);                      /* queues, host registration of the slab */
TPACE_HOOK void tpace_dev_activate(tpace_rt *r);                   /* make r->device the current device */
TPACE_HOOK int tpace_dev_count(void);                              /* devices this process sees (at least 1) */
TPACE_HOOK void tpace_dev_end(tpace_rt *r);
TPACE_HOOK int tpace_dev_reduces_on_device(void); /* 1: kernels add into tpace_reduction.dev */
TPACE_HOOK int tpace_dev_stamp(tpace_rt *r, int q); /* a device timestamp once q's work so far is done; -1: no timers */
TPACE_HOOK double tpace_dev_stamp_ms(tpace_rt *r, int from, int to); /* after a sync: ms from stamp `from` to `to` */
TPACE_HOOK void tpace_dev_stamp_wait(tpace_rt *r, int stamp);      /* the host waits until the stamp is done */
TPACE_HOOK void tpace_dev_name(tpace_rt *r, char *name, size_t size); /* the device's name, as its runtime says it */
TPACE_HOOK int tpace_dev_replans(tpace_rt *r); /* 1: by default the run checks the model against its device's
                                                * timers (a GPU); 0: it does not (no timers, or a CPU whose times
                                                * no GPU profile predicts: TPACE_REPLAN=1 asks for it) */
/* Several devices of one process (the scale-out part). */
TPACE_HOOK int tpace_dev_threads(void);                 /* 1: each device's executor may run on a host thread of its own */
TPACE_HOOK int tpace_dev_peer_able(tpace_rt *r, int other); /* 1: r->device can copy straight into device `other`'s memory */
TPACE_HOOK void tpace_dev_peer_enable(tpace_rt *r, int other); /* let r->device reach `other` (once; r's device current) */
TPACE_HOOK void tpace_dev_peer_copy(tpace_rt *r, void *dst, int dst_device, const void *src, size_t bytes, int q);
                                                        /* r's device memory to device dst_device's, on r's queue q */
TPACE_HOOK void tpace_dev_pin(tpace_rt *r, void *host, size_t bytes); /* page-lock host memory the executor copies from */
TPACE_HOOK void tpace_dev_unpin(tpace_rt *r, void *host);             /* ... and unlock it (after a sync) */
TPACE_HOOK int tpace_dev_flag(tpace_rt *r, int q);       /* a flag that rises once q's work so far is done: its id */
TPACE_HOOK void tpace_dev_flag_wait(tpace_rt *r, int id); /* the host waits until flag id has risen */


/* ---- Launchers: one per kernel tpace printed. The executor calls a sweep's
 * launcher once per chunk, step and sweep (a fused launcher once per group of
 * steps). A launcher is compiled where the user's macros are defined, so what it
 * reads has names no user macro takes: every field here starts with tp_. ---- */
typedef struct tpace_launch {
    int tp_q;                   /* the chunk's queue (stream) */
    long tp_base;               /* grid plane of the chunk buffers' first plane */
    void *const *tp_buf;        /* per listed array, its device buffer for these steps */
    const long *tp_dim_lo;      /* per dimension, the grid's first index and extent */
    const long *tp_dim_n;
    long tp_lo[TPACE_MAX_RANK]; /* per dimension, the box to compute: [tp_lo[d], tp_hi[d]) */
    long tp_hi[TPACE_MAX_RANK];
    long tp_step;               /* the time step (0-based, from the loop's first) of the first step */
    int tp_steps;               /* steps to advance (a fused launcher; 1 otherwise) */
    long tp_count_lo;           /* reductions: the planes [tp_count_lo, tp_count_hi) whose points */
    long tp_count_hi;           /* this chunk counts (each point once per step) */
    void *const *tp_reduced;    /* per reduction of the pipeline, its per-step slots on the device
                                 * (targets that reduce on the device; see tpace_dev_reduces_on_device) */
    const tpace_fuse_args *tp_fuse; /* a fused launcher: the group's rows and strips */
    const void *tp_in;          /* the pipeline's inputs (its tpace_pN_in) */
} tpace_launch;

typedef void (*tpace_launcher)(struct tpace_rt *tp, const tpace_launch *tp_l);

/* One sweep of a time step, as the translator describes it to the executor. */
typedef struct tpace_sweep {
    const char *what;       /* "sweep 1 (line 58)", for messages */
    tpace_launcher launch;  /* NULL for the copy a swap replaces: not run */
    long extra_lo, extra_hi; /* planes it computes beyond the step's window (later sweeps read them) */
    long tau;               /* mmtb: planes its window trails the step's first sweep */
    int reduces;            /* whether it has reductions (the executor gives it the planes to count) */
    const long *box_lo;     /* per dimension, its loop bounds (evaluated before the pipeline) */
    const long *box_hi;
} tpace_sweep;

/* The fused kernel of a pipeline whose steps fuse (two-level blocking). */
typedef struct tpace_fused {
    tpace_launcher launch;  /* NULL: no fused kernel */
    int sweep;              /* the sweep it advances several steps at a time */
    int array;              /* the array it reads (swapped: two buffers) */
    long reach;             /* rows a step reads along the cut axis, below plus above */
    const long *tile;       /* per inner axis (dimensions 1..), columns of a block's tile */
    const long *inner_reach; /* per inner axis, the largest offset a read moves */
    const long *blocks_per_sm; /* per step count (up to most_steps), blocks that share a multiprocessor */
    int most_steps;
} tpace_fused;

/* Say what failed and end the program; under MPI every rank ends, and the message names
 * this one (the host side defines it, in the scale-out part). */
TPACE_HOOK void tpace_stop(const char *where, const char *what);

TPACE_MAYBE_UNUSED static inline void tpace_fail(const tpace_plan *p, const char *what)
{
    tpace_stop(p && p->s.where ? p->s.where : "runtime", what);
}

/* Room for item n of a growing array of `size`-byte items, doubling its capacity
 * *cap from `first` (the trace's records here, its stamps in the target part). */
TPACE_MAYBE_UNUSED static inline void *tpace_trace_grow(const tpace_plan *p, void *items, long *cap, long n, size_t size, long first)
{
    if (n < *cap)
        return items;
    const long want = *cap ? 2 * *cap : first;
    void *more = realloc(items, (size_t)want * size);
    if (more == NULL)
        tpace_fail(p, "host memory ran out recording the TPACE_TRACE timeline");
    *cap = want;
    return more;
}

/* ==== end of tpace runtime, types ==== */
