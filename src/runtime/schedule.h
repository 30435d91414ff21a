/* ==== tpace runtime, schedule part (shipped by the translator; the same for every program and target) ====
 * Run-time parameters from the environment, the chunk arithmetic of the
 * out-of-core schedules, the schedule executor (which planes go where, in
 * which order, on which queue, and the loop over chunks, steps and sweeps that
 * calls each sweep's launcher), the device-memory budget and the timing report.
 * The target part supplies the tpace_dev_* hooks declared in the types part
 * (allocation, copies, queues) and the launchers.
 */
#include <math.h>
#include <setjmp.h>

/* ---- Settings: the environment, where TPACE_BENCH_PLANS may override a variable for one of
 * its runs (tpace_bench_plans) ---- */
#define TPACE_BENCH_VARS 16
static struct {
    int n;
    const char *name[TPACE_BENCH_VARS];
    const char *value[TPACE_BENCH_VARS]; /* NULL: unset for this run */
} tpace_bench_env;

/* getenv, with the overrides of the bench run in progress. */
static inline const char *tpace_getenv(const char *name)
{
    for (int i = 0; i < tpace_bench_env.n; i++)
        if (strcmp(tpace_bench_env.name[i], name) == 0)
            return tpace_bench_env.value[i];
    return getenv(name);
}

/* Stop, in plain words, when an array is not laid out the way its accesses were read. */
static inline void tpace_check_layout(const tpace_shape *s, int ok, const char *what)
{
    if (!ok)
        tpace_stop(s->where, what);
}

/* A whole number from the environment, or `fallback` when unset. */
static inline long tpace_env_long(const char *name, long fallback, long min, long max)
{
    const char *text = tpace_getenv(name);
    if (text == NULL || *text == '\0')
        return fallback;
    errno = 0;
    char *end = NULL;
    long v = strtol(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || v < min || v > max) {
        char msg[256];
        snprintf(msg, sizeof msg, "%s=%s is not a whole number from %ld to %ld", name, text, min, max);
        tpace_stop("settings", msg);
    }
    return v;
}

/* TPACE_DEVICE_MEM: bytes, with an optional suffix K, M, G, T (powers of 1000) or
 * Ki, Mi, Gi, Ti (powers of 1024). 0 when unset. */
static inline size_t tpace_env_bytes(const char *name)
{
    const char *text = tpace_getenv(name);
    if (text == NULL || *text == '\0')
        return 0;
    errno = 0;
    char *end = NULL;
    double v = strtod(text, &end);
    static const char *const suffix[] = {"", "K", "M", "G", "T", "Ki", "Mi", "Gi", "Ti"};
    static const double scale[] = {1.0, 1e3, 1e6, 1e9, 1e12, 1024.0, 1048576.0, 1073741824.0, 1099511627776.0};
    for (int i = 0; end != text && errno == 0 && v > 0 && i < 9; i++)
        if (strcmp(end, suffix[i]) == 0)
            return (size_t)(v * scale[i]);
    char msg[256];
    snprintf(msg, sizeof msg, "%s=%s is not a size in bytes (e.g. 8G, 512Mi, 1000000)", name, text);
    tpace_stop("settings", msg);
    return 0;
}

static const char *const tpace_schedule_names[] = {"naive", "mm", "mmtb", "incore"};

static inline int tpace_env_schedule(void)
{
    const char *text = tpace_getenv("TPACE_SCHEDULE");
    if (text == NULL || *text == '\0')
        return -1;
    for (int s = 0; s < 4; s++)
        if (strcmp(text, tpace_schedule_names[s]) == 0)
            return s;
    char msg[256];
    snprintf(msg, sizeof msg, "TPACE_SCHEDULE=%s is not a schedule (naive, mm, mmtb, incore)", text);
    tpace_stop("settings", msg);
    return -1;
}

/* Planes chunk c owns: [tpace_own_lo, tpace_own_hi). */
static inline long tpace_own_lo(const tpace_plan *p, long c) { return p->s.lo + c * p->b; }
static inline long tpace_own_hi(const tpace_plan *p, long c) { return TPACE_MIN(p->s.lo + (c + 1) * p->b, p->s.lo + p->s.n); }

/* mmtb: planes below its own a chunk takes over from its predecessor for a block of
 * kb steps, and planes above its own it uploads. A single chunk needs neither. */
static inline long tpace_mmtb_below(const tpace_plan *p, int kb)
{
    return p->nchunks == 1 ? 0 : (long)(kb - 1) * p->s.skew + p->s.below;
}
static inline long tpace_mmtb_above(const tpace_plan *p) { return p->nchunks == 1 ? 0 : p->s.above; }

/* Fused kernels (two-level blocking, MMTB paper §2.1): steps one kernel advances
 * with chunk width p->b. mmtb hands the intermediate steps' rows over between chunks
 * in strips of skew + reach_lo rows per step, which a chunk computes itself only
 * when it is at least that wide; narrower chunks run one step per kernel. */
static inline int tpace_fuse_for(const tpace_plan *p)
{
    if (p->fuse_wanted <= 1 || p->schedule == TPACE_NAIVE)
        return 1;
    if (p->schedule == TPACE_MMTB && p->nchunks > 1 && p->b < p->s.skew + p->s.reach_lo)
        return 1;
    return p->fuse_wanted;
}

/* Planes of each fused-mmtb hand-over strip for blocks of k steps: skew + reach_lo
 * rows for each intermediate step of a fused group (fuse - 1 per group of fuse steps;
 * 0 when nothing is handed over). */
static inline long tpace_strip_planes_for(const tpace_plan *p, int k)
{
    const int fuse = tpace_fuse_for(p);
    if (fuse <= 1 || p->schedule != TPACE_MMTB || p->nchunks <= 1)
        return 0;
    return (long)(k / fuse) * (fuse - 1) * (p->s.skew + p->s.reach_lo);
}

/* Planes one chunk buffer holds for blocks of k steps. */
static inline long tpace_slot_planes_for(const tpace_plan *p, int k)
{
    if (p->schedule == TPACE_MMTB || p->schedule == TPACE_INCORE)
        return tpace_mmtb_below(p, k) + p->b + tpace_mmtb_above(p);
    return p->b + (p->s.reach_lo + p->s.reach_hi) * (long)k;
}

/* Device bytes for chunk width b, k steps per block and `slots` buffers. */
static inline size_t tpace_bytes_for(tpace_plan *p, long b, int k, int slots)
{
    tpace_plan q = *p;
    q.b = b;
    q.nchunks = (q.s.n + b - 1) / b;
    size_t planes = (size_t)slots * (size_t)tpace_slot_planes_for(&q, k);
    if (p->schedule == TPACE_NAIVE || p->schedule == TPACE_MM)
        planes += (size_t)(p->s.reach_lo * k); /* the carry buffer */
    /* One strip a slot: a chunk's successor reads its predecessor's strip in place. */
    return planes * p->plane_bytes + (size_t)slots * (size_t)tpace_strip_planes_for(&q, k) * p->strip_plane_bytes +
           p->reduction_bytes;
}

static inline int tpace_slots_for(const tpace_plan *p, long nchunks)
{
    /* mmtb hands planes from one slot to the next: two slots at least, unless one chunk. */
    long want = p->schedule == TPACE_MMTB && nchunks > 1 ? TPACE_MAX(2, p->streams) : p->streams;
    return (int)TPACE_MIN(want, nchunks);
}

/* The widest chunk that fits the budget with k steps per block, or 0 if none does. */
static inline long tpace_widest_chunk(tpace_plan *p, int k)
{
    if (p->budget == 0)
        return 0;
    long lo = 0, hi = p->s.n;
    while (lo < hi) { /* the largest b with bytes(b) <= budget */
        long mid = lo + (hi - lo + 1) / 2;
        int slots = tpace_slots_for(p, (p->s.n + mid - 1) / mid);
        if (tpace_bytes_for(p, mid, k, slots) <= p->budget)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* A byte count in words people read: "812 KB", "7.20 MB", "24.2 GB". */
static inline const char *tpace_bytes_text(double bytes, char *buf, size_t size)
{
    static const char *const unit[] = {"B", "KB", "MB", "GB", "TB"};
    int u = 0;
    while (bytes >= 1000.0 && u < 4) {
        bytes /= 1000.0;
        u++;
    }
    snprintf(buf, size, u == 0 ? "%.0f %s" : "%.3g %s", bytes, unit[u]);
    return buf;
}

/* TPACE_BENCH_PLANS: a plan that does not fit ends that run, not the program. */
static int tpace_bench_refusing = 0;
static jmp_buf tpace_bench_jump;
static long tpace_bench_divisor = 0; /* a plan's width `-/2`, `-/4`...: the model's width over that */
static inline void tpace_bench_refused(const tpace_plan *p, const char *why)
{
    if (!tpace_bench_refusing)
        return;
    fprintf(stderr, "tpace: %s: bench plan refused: %s\n", p->s.where, why);
    longjmp(tpace_bench_jump, 1);
}

/* Refuse, in plain words, a plan that does not fit the device-memory budget:
 * say which parameter to lower, and to what. */
static inline void tpace_refuse_plan(tpace_plan *p)
{
    char msg[768], need[32], have[32];
    tpace_bytes_text((double)p->device_bytes, need, sizeof need);
    tpace_bytes_text((double)p->budget, have, sizeof have);
    long b_fit = tpace_widest_chunk(p, p->k);
    if (p->schedule == TPACE_INCORE) {
        snprintf(msg, sizeof msg,
                 "the whole grid needs %s of device memory but %s are available; "
                 "run out-of-core with TPACE_SCHEDULE=mmtb", need, have);
    } else if (b_fit >= 1) {
        snprintf(msg, sizeof msg,
                 "the plan (schedule=%s k=%d TPACE_CHUNK=%ld streams=%d) needs %s of device memory "
                 "but %s are available; lower TPACE_CHUNK to %ld or less",
                 tpace_schedule_names[p->schedule], p->k, p->b, p->streams, need, have, b_fit);
    } else {
        int lo = 0, hi = p->k; /* the largest k at which some chunk width fits */
        while (lo < hi) {
            int mid = lo + (hi - lo + 1) / 2;
            if (tpace_widest_chunk(p, mid) >= 1)
                lo = mid;
            else
                hi = mid - 1;
        }
        if (lo >= 1)
            snprintf(msg, sizeof msg,
                     "the plan (schedule=%s k=%d streams=%d) needs %s of device memory but %s "
                     "are available, and no chunk width fits at this k; lower TPACE_K to %d or less",
                     tpace_schedule_names[p->schedule], p->k, p->streams, need, have, lo);
        else
            snprintf(msg, sizeof msg,
                     "even one plane per chunk with k=1 needs more than the %s of device memory "
                     "available; lower TPACE_STREAMS or raise TPACE_DEVICE_MEM", have);
    }
    tpace_bench_refused(p, msg);
    tpace_fail(p, msg);
}

/* The runtime's schedule numbers and the model's (enum tpace_model_schedule). */
static const int tpace_model_of_schedule[4] = {TPACE_MODEL_NAIVE, TPACE_MODEL_MM, TPACE_MODEL_MMTB, TPACE_MODEL_INCORE};
static const int tpace_schedule_of_model[4] = {TPACE_INCORE, TPACE_NAIVE, TPACE_MM, TPACE_MMTB};

/* Say who chose the plan: the user (every TPACE_* set), the model (none set, or the
 * rest of them), or the fallback rule when no plan of the model fits. */
static inline void tpace_chosen_by(tpace_plan *p, const tpace_model *m, int by_model, const int *set)
{
    static const char *const vars[4] = {"TPACE_SCHEDULE", "TPACE_K", "TPACE_CHUNK", "TPACE_STREAMS"};
    char names[96] = "";
    int nset = 0;
    for (int v = 0; v < 4; v++)
        if (set[v]) {
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", nset ? "," : "", vars[v]);
            nset++;
        }
    if (nset == 4)
        snprintf(p->chosen_by, sizeof p->chosen_by, "set by TPACE_*");
    else if (by_model && nset == 0)
        snprintf(p->chosen_by, sizeof p->chosen_by, "chosen by the model for %s", m->machine);
    else if (by_model)
        snprintf(p->chosen_by, sizeof p->chosen_by, "%s set by the user, the rest chosen by the model for %s", names,
                 m->machine);
    else
        snprintf(p->chosen_by, sizeof p->chosen_by, "no plan of the model fits; fallback rule%s%s", nset ? ", " : "",
                 names);
}

/* Steps per kernel: TPACE_FUSE (*set: whether it is set), else the program's default (one where
 * it has no fused kernels), unless the target chooses them (steps_per_kernel). A fused kernel of T steps needs shape->fuse_shared[T] bytes of shared
 * memory a block: a default the device has no room for is lowered to the most steps it has room
 * for, and a TPACE_FUSE it has none for is refused, in words, before any kernel is launched.
 * *most: the most steps per kernel the program has kernels for and the device holds (the
 * performance model chooses among 1 .. *most when TPACE_FUSE is not set). */
static inline int tpace_fuse_wanted(tpace_rt *r, const tpace_shape *shape, int *set, int *most)
{
    *most = 1;
    if (shape->steps_per_kernel != NULL) {
        /* The target chooses the steps per kernel itself (OpenCL: its evolution-vector model
         * or TPACE_T, which it checks against the device): neither TPACE_FUSE nor the model. */
        const int chosen = shape->steps_per_kernel(shape); /* once: it may say what it chose */
        *set = 1;
        *most = TPACE_MAX(shape->fuse_max, 1);
        return TPACE_MIN(TPACE_MAX(chosen, 1), TPACE_MAX(shape->fuse_max, 1));
    }
    const char *text = tpace_getenv("TPACE_FUSE");
    *set = shape->fuse_max > 1 && text != NULL && *text != '\0';
    if (shape->fuse_max <= 1)
        return 1;
    const int wanted = (int)tpace_env_long("TPACE_FUSE", shape->fuse_default, 1, TPACE_FUSE_MAX);
    char why[400];
    if (wanted > shape->fuse_max) {
        snprintf(why, sizeof why,
                 "TPACE_FUSE=%d: this program has fused kernels for at most %d steps (more would leave a block "
                 "no columns of its own, or need more shared memory than the machine it was translated for "
                 "gives a block): set TPACE_FUSE from 1 to %d",
                 wanted, shape->fuse_max, shape->fuse_max);
        tpace_fail(&r->plan, why);
    }
    const long limit = shape->shared_limit != NULL ? shape->shared_limit(r) : 0;
    int fits = shape->fuse_max;
    while (fits > 1 && limit > 0 && shape->fuse_shared[fits] > limit)
        fits--;
    *most = fits;
    if (wanted <= fits)
        return wanted;
    if (*set) {
        snprintf(why, sizeof why,
                 "TPACE_FUSE=%d: the fused kernel needs %ld bytes of shared memory a block for %d steps, and this "
                 "device gives a block at most %ld: set TPACE_FUSE to %d%s",
                 wanted, shape->fuse_shared[wanted], wanted, limit, fits, fits > 1 ? " or less" : " (one step per kernel)");
        tpace_fail(&r->plan, why);
    }
    if (fits > 1)
        fprintf(stderr, "tpace: %s: note: this device gives a block at most %ld bytes of shared memory: the fused "
                        "kernels advance %d steps, not %d\n", shape->where, limit, fits, wanted);
    else
        fprintf(stderr, "tpace: %s: note: this device gives a block at most %ld bytes of shared memory, too little "
                        "for fused kernels: one step per kernel\n", shape->where, limit);
    return fits;
}

/* ---- The machine profile a run plans with ---- */

/* TPACE_MACHINE's profile, read once per program and file (several pipelines plan with it;
 * TPACE_BENCH_PLANS may name another file per plan): the last few files read are kept. */
#define TPACE_ENV_MACHINES 4
static inline const tpace_machine *tpace_env_machine(const char *path)
{
    static tpace_machine read[TPACE_ENV_MACHINES];
    static char read_path[TPACE_ENV_MACHINES][1024];
    static int have = 0, next = 0;
    for (int i = 0; i < have; i++)
        if (strcmp(read_path[i], path) == 0)
            return &read[i];
    tpace_machine *slot = &read[next];
    if (have == TPACE_ENV_MACHINES) {
        /* The oldest goes (its strings and kernels with it). */
        for (int i = 0; i < slot->nkernels; i++) {
            free((void *)slot->kernels[i].elem);
            free((void *)slot->kernels[i].shape);
        }
        free((void *)slot->kernels);
        free((void *)slot->name);
        free((void *)slot->device);
    }
    char err[700];
    if (!tpace_machine_read(path, slot, err, sizeof err)) {
        char msg[900];
        snprintf(msg, sizeof msg, "TPACE_MACHINE=%s: %s", path, err);
        tpace_stop("settings", msg);
    }
    snprintf(read_path[next], sizeof read_path[next], "%s", path);
    have = have < TPACE_ENV_MACHINES ? have + 1 : have;
    const tpace_machine *got = slot;
    next = (next + 1) % TPACE_ENV_MACHINES;
    return got;
}

/* The profile a run on device `device` plans with: TPACE_MACHINE=FILE.toml's (its path in *file),
 * else the bundled profile whose device pattern the name matches, else NULL (the profile the
 * program was translated for). *match: the bundled profile the name matches, whichever is taken. */
static inline const tpace_machine *tpace_machine_for(const tpace_shape *shape, const char *device,
                                                     const tpace_machine **match, const char **file)
{
    *match = NULL;
    for (int i = 0; i < shape->nmachines && *match == NULL; i++)
        if (tpace_device_matches(shape->machines[i].device, device))
            *match = &shape->machines[i];
    *file = tpace_getenv("TPACE_MACHINE");
    if (*file != NULL && **file != '\0')
        return tpace_env_machine(*file);
    *file = NULL;
    return *match;
}

/* The model a run plans with, into *out (NULL where the program has none), and what the report
 * says of it in `about` (tpace_machine_for chooses the profile). */
static inline const tpace_model *tpace_pick_model(tpace_rt *r, const tpace_shape *shape, tpace_model *out,
                                                  char *about, size_t size)
{
    about[0] = '\0';
    if (shape->model == NULL)
        return NULL;
    char name[256] = "";
    tpace_dev_name(r, name, sizeof name);
    const tpace_machine *match = NULL;
    const char *file = NULL;
    const tpace_machine *taken = tpace_machine_for(shape, name, &match, &file);
    if (file != NULL) {
        tpace_model_on(shape->model, taken, out);
        snprintf(about, size, "device %s, profile %s (TPACE_MACHINE file %s)%s%s%s", name, taken->name, file,
                 match ? "; the device matches bundled profile " : "", match ? match->name : "",
                 match ? "" : "; no bundled profile matches the device");
    } else if (taken != NULL) {
        tpace_model_on(shape->model, taken, out);
        snprintf(about, size, "device %s, profile %s (bundled, matches the device)", name, taken->name);
    } else {
        *out = *shape->model;
        snprintf(about, size, "device %s, profile %s (translated for); no bundled profile matches", name,
                 shape->model->machine);
    }
    return out;
}

/* The plan's derived figures (chunks, steps per kernel, slots, buffers, memory) from its
 * schedule, k, b, streams and steps per kernel asked for. */
static inline void tpace_plan_derive(tpace_plan *p)
{
    if (p->schedule == TPACE_NAIVE)
        p->k = 1;
    if (p->schedule == TPACE_INCORE) {
        p->k = (int)TPACE_MAX(p->s.steps, 1L);
        p->b = p->s.n;
    }
    /* k beyond the step count buys nothing but memory. */
    if (p->k > p->s.steps && p->s.steps > 0)
        p->k = (int)p->s.steps;
    if (p->b > p->s.n)
        p->b = p->s.n;
    p->nchunks = (p->s.n + p->b - 1) / p->b;
    p->fuse = tpace_fuse_for(p);
    p->strip_planes = tpace_strip_planes_for(p, p->k);
    p->slots = tpace_slots_for(p, p->nchunks);
    p->slot_planes = tpace_slot_planes_for(p, p->k);
    p->device_bytes = tpace_bytes_for(p, p->b, p->k, p->slots);
}

/* The model's fastest plan for `steps` steps from here on under the run's budget, with what is
 * fixed (a schedule >= 0, k, b, streams > 0, the steps per kernel when fuse_fixed). */
static inline tpace_model_choice tpace_plan_search(const tpace_plan *p, const tpace_model *m, long steps,
                                                   int schedule, long k, long b, long streams, int fuse_fixed)
{
    const tpace_model_run run = {(tpace_u64)p->s.n, (tpace_u64)p->s.plane, (tpace_u64)TPACE_MAX(steps, 0L)};
    tpace_u128 cap = p->budget ? (tpace_u128)p->budget : (tpace_u128)m->memory_bytes;
    /* The model plans the grid's buffers; the reductions' per-step slots come on top. */
    cap = cap > p->reduction_bytes ? cap - p->reduction_bytes : 0;
    return tpace_model_choose_fused(m, &run, cap, schedule >= 0 ? tpace_model_of_schedule[schedule] : -1,
                                    (tpace_u64)k, (tpace_u64)b, (tpace_u64)streams, fuse_fixed,
                                    (tpace_u64)p->fuse_most);
}

/* The model's time for the plan's schedule, k, b and streams over `steps` steps, with its steps
 * per kernel. */
static inline double tpace_plan_predict(const tpace_plan *p, const tpace_model *m, long steps)
{
    tpace_model scratch;
    const tpace_model *f = tpace_model_fusing(m, (tpace_u64)p->fuse_wanted, &scratch);
    const tpace_model_run run = {(tpace_u64)p->s.n, (tpace_u64)p->s.plane, (tpace_u64)TPACE_MAX(steps, 0L)};
    const tpace_model_config c = {tpace_model_of_schedule[p->schedule], (tpace_u64)p->k, (tpace_u64)p->b,
                                  (tpace_u64)p->streams};
    return tpace_model_predict(f, &run, c);
}

/* Most streams a plan of the model takes (tpace_model_choose: 1 to 4). */
#define TPACE_MODEL_STREAMS_MAX 4

/* Fill the plan: the program's shape, TPACE_* overrides, and the device-memory budget
 * (TPACE_DEVICE_MEM, or the device's free memory, whichever is smaller).
 * Without TPACE_SCHEDULE, TPACE_K, TPACE_CHUNK and TPACE_STREAMS the performance model
 * (model part) searches every schedule, k, chunk width and stream count for the
 * fastest plan that fits the budget (or, when no budget is known, the machine
 * profile's memory) at the actual extents and step count, with the profile of the device
 * the run is on (tpace_pick_model). A variable the user sets is
 * kept and the model chooses the others; a set k excludes naive and incore, a set
 * chunk width or stream count excludes incore (they would ignore it), unless
 * TPACE_SCHEDULE names one. When no plan of the model fits, the grid stays on the
 * device if it fits and otherwise runs mmtb with the widest chunks that fit.
 * A plan the model chose is checked against the run's first chunk and first block
 * (p->replan; tpace_replan_*). */
static inline void tpace_plan_init(tpace_rt *r, const tpace_shape *shape)
{
    tpace_plan *p = &r->plan;
    memset(p, 0, sizeof *p);
    p->s = *shape;
    p->s.steps = TPACE_MAX(shape->steps, 0L);
    if (p->s.n < 1)
        tpace_fail(p, "the cut dimension of the grid is empty (size clause extent < 1)");
    for (int a = 0; a < r->narrays; a++)
        if (tpace_on_device(&r->arrays[a]))
            p->plane_bytes += p->s.plane * r->arrays[a].elem * (r->arrays[a].swap ? 2 : 1);
    for (int a = 0; a < r->narrays; a++)
        if (r->arrays[a].fused)
            p->strip_plane_bytes = p->s.plane * r->arrays[a].elem;
    int fuse_set = 0, fuse_most = 1;
    int fuse_wanted = tpace_fuse_wanted(r, shape, &fuse_set, &fuse_most);
    const char *fuse_env = tpace_getenv("TPACE_FUSE");
    const int fuse_by_user = shape->steps_per_kernel == NULL && shape->fuse_max > 1 && fuse_env != NULL && *fuse_env;
    if (tpace_dev_reduces_on_device())
        for (int i = 0; i < r->nreductions; i++)
            p->reduction_bytes += (size_t)p->s.steps * r->reductions[i].elem;
    size_t cap = tpace_env_bytes("TPACE_DEVICE_MEM");
    size_t free_bytes = tpace_dev_free_memory(r);
    p->budget = cap && free_bytes ? TPACE_MIN(cap, free_bytes) : (cap ? cap : free_bytes);
    int schedule = tpace_env_schedule();
    long env_k = tpace_env_long("TPACE_K", 0, 1, 1L << 20);
    long env_b = tpace_env_long("TPACE_CHUNK", 0, 1, 1L << 40);
    long env_streams = tpace_env_long("TPACE_STREAMS", 0, 1, TPACE_MAX_SLOTS - 1);
    const long env_replan = tpace_env_long("TPACE_REPLAN", -1, 0, 1);
    p->out_queue = (int)tpace_env_long("TPACE_OUT_QUEUE", 1, 0, 1);
    const int set[4] = {schedule >= 0, env_k > 0, env_b > 0, env_streams > 0};
    if (shape->force) {
        /* One of several devices: the plan chosen for all of them. */
        schedule = shape->force_schedule;
        env_k = shape->force_k;
        env_b = shape->force_b;
        env_streams = shape->force_streams;
        fuse_wanted = shape->force_fuse;
        p->budget = shape->force_budget;
    }
    p->fuse_set = fuse_set;
    p->fuse_most = fuse_most;
    /* The model, for the profile of the device this runs on. */
    char about[400] = "";
    if (shape->model != NULL) {
        p->model = (tpace_model *)malloc(sizeof *p->model);
        if (p->model == NULL)
            tpace_fail(p, "host memory ran out starting the pipeline");
        tpace_pick_model(r, shape, p->model, about, sizeof about);
    }
    tpace_model fused_model; /* the model for another number of steps per kernel than the program's */
    const tpace_model *m = tpace_model_fusing(p->model, (tpace_u64)fuse_wanted, &fused_model);
    long model_b = 0;
    int by_model = 0;
    if (m && !shape->force && !(set[0] && set[1] && set[2] && set[3])) {
        tpace_model_choice c = tpace_plan_search(p, m, p->s.steps, schedule, env_k, env_b, env_streams, fuse_set);
        if (c.found) {
            by_model = 1;
            fuse_wanted = (int)c.fuse;
            m = tpace_model_fusing(m, c.fuse, &fused_model); /* the prediction below is for it too */
            schedule = tpace_schedule_of_model[c.best.schedule];
            env_k = (long)c.best.k;
            model_b = (long)c.best.b;
            env_streams = (long)c.best.streams;
        }
    }
    if (shape->force)
        snprintf(p->chosen_by, sizeof p->chosen_by, "%s", shape->chosen_by);
    else
        tpace_chosen_by(p, m, by_model, set);
    if (about[0] && !shape->force) {
        const size_t used = strlen(p->chosen_by);
        snprintf(p->chosen_by + used, sizeof p->chosen_by - used, "; %s", about);
    }
    if (schedule < 0) {
        size_t whole = (size_t)p->s.n * p->plane_bytes;
        schedule = p->budget && whole <= p->budget ? TPACE_INCORE : TPACE_MMTB;
    }
    p->schedule = schedule;
    p->fuse_wanted = fuse_wanted;
    /* An experiment's knob: how finely a fused launch cuts its rows into segments (unset: into
     * as many as one wave of blocks, tpace_launch_fused). */
    p->fuse_blocks = tpace_env_long("TPACE_FUSE_BLOCKS", 0, 1, 1L << 24);
    long k = env_k ? env_k : shape->default_k;
    p->streams = (int)(env_streams ? env_streams : shape->default_streams);
    if (schedule == TPACE_NAIVE)
        k = 1;
    if (schedule == TPACE_INCORE)
        k = TPACE_MAX(p->s.steps, 1L);
    if (k > p->s.steps && p->s.steps > 0)
        k = p->s.steps;
    p->k = (int)k;
    long b_default = (p->s.n + shape->default_chunks - 1) / shape->default_chunks;
    if (p->budget && schedule != TPACE_INCORE) {
        long widest = tpace_widest_chunk(p, p->k);
        if (widest >= 1)
            b_default = widest;
    }
    if (model_b && tpace_bench_divisor > 1)
        model_b = TPACE_MAX(model_b / tpace_bench_divisor, 1L);
    if (model_b)
        b_default = model_b;
    p->b = env_b ? env_b : b_default;
    tpace_plan_derive(p);
    if (m)
        p->predicted = tpace_plan_predict(p, m, p->s.steps);
    /* Checked against the run's first chunk and block: a plan the model chose (not one the user
     * set), on a device with timers, unless TPACE_REPLAN=0 (TPACE_REPLAN=1: also on a CPU); never
     * in-core (one block, one chunk). TPACE_REPLAN_TO (tests) re-plans whatever the settings. */
    const char *to = tpace_getenv("TPACE_REPLAN_TO");
    const int user_chose = set[0] || set[1] || set[2] || set[3] || fuse_by_user;
    p->replan = m != NULL && !shape->force && !user_chose && p->schedule != TPACE_INCORE && p->s.steps > 0 &&
                (env_replan >= 0 ? env_replan == 1 : tpace_dev_replans(r));
    if (to != NULL && *to != '\0' && !shape->force && p->s.steps > 0)
        p->replan = 1;
    p->queues = p->replan ? TPACE_MAX(p->slots, TPACE_MODEL_STREAMS_MAX) + 1 : p->slots + 1;
    if (p->budget && p->device_bytes > p->budget)
        tpace_refuse_plan(p);
}

/* Steps in the block that starts at step t (the last block may be short). */
static inline int tpace_block_steps(const tpace_plan *p, long t)
{
    return (int)TPACE_MIN((long)p->k, p->s.steps - t);
}

/* The queue chunk downloads go to: mmtb over several chunks (two slots at least) gives them
 * the mm carry queue, idle under mmtb, so that a slot's next upload need not wait for the
 * whole download before it (TPACE_OUT_QUEUE=0: the slot's own queue, as before). */
static inline int tpace_out_queue(const tpace_plan *p, int slot)
{
    return p->out_queue && p->schedule == TPACE_MMTB && p->nchunks > 1 && p->slots >= 2 ? p->slots : slot;
}

/* Grid plane at the start of chunk c's buffers for a block of kb steps. */
static inline long tpace_chunk_base(const tpace_plan *p, long c, int kb)
{
    if (p->schedule == TPACE_MMTB || p->schedule == TPACE_INCORE)
        return tpace_own_lo(p, c) - tpace_mmtb_below(p, kb);
    return tpace_own_lo(p, c) - p->s.reach_lo * kb;
}

/* Planes [from, to) a sweep computes at step i (0-based) of the chunk's block.
 * mm/naive: the window shrinks by one step's reach per step, and a sweep followed
 *   by others in the same step computes extra_lo / extra_hi more planes, which those
 *   later sweeps read.
 * mmtb/incore: the window of the chunk's own planes moves down i * skew + tau planes;
 *   the first chunk starts at the grid's first plane and the last one ends at its last.
 * The generated loops intersect the window with the sweep's own bounds. */
static inline void tpace_window(const tpace_plan *p, const tpace_chunk *ch, int i, long extra_lo, long extra_hi,
                                long tau, long *from, long *to)
{
    const long top = p->s.lo + p->s.n;
    if (p->schedule == TPACE_MMTB || p->schedule == TPACE_INCORE) {
        long shift = (long)i * p->s.skew + tau;
        *from = ch->c == 0 ? p->s.lo : TPACE_MAX(tpace_own_lo(p, ch->c) - shift, p->s.lo);
        *to = ch->c == p->nchunks - 1 ? top : TPACE_MAX(tpace_own_hi(p, ch->c) - shift, p->s.lo);
        return;
    }
    long left = (long)(ch->kb - 1 - i);
    long win_lo = TPACE_MAX(ch->base, p->s.lo);
    long win_hi = TPACE_MIN(tpace_own_hi(p, ch->c) + p->s.reach_hi * ch->kb, top);
    *from = TPACE_MAX(tpace_own_lo(p, ch->c) - (p->s.reach_lo * left + extra_lo), win_lo);
    *to = TPACE_MIN(tpace_own_hi(p, ch->c) + (p->s.reach_hi * left + extra_hi), win_hi);
}

/* tpace_window for one of several devices: within its slab and the ghost planes that
 * the block's remaining steps still read (the tpace paper's mm, between slabs): step i
 * computes kb - 1 - i steps' reach beyond the slab, so that every plane it computes reads
 * only planes computed (or uploaded) before, and the slab is right after kb steps. */
static inline void tpace_window_in_slab(const tpace_rt *r, const tpace_chunk *ch, int i, long extra_lo, long extra_hi,
                                        long tau, long *from, long *to)
{
    const tpace_plan *p = &r->plan;
    tpace_window(p, ch, i, extra_lo, extra_hi, tau, from, to);
    if (!r->blockwise)
        return;
    const long left = (long)(ch->kb - 1 - i);
    *from = TPACE_MAX(*from, r->own_lo - (p->s.reach_lo * left + extra_lo));
    *to = TPACE_MIN(*to, r->own_hi + (p->s.reach_hi * left + extra_hi));
}

/* Fill the arguments of a fused kernel that runs steps [i, i + len) of chunk ch's block
 * for a sweep whose windows trail by tau and whose rows along the cut axis are
 * [box_lo, box_hi); `tiles` blocks cover the other axes, a step reads `reach` rows
 * along the cut axis (below plus above), and the launch aims at `blocks` blocks
 * (tpace_mc_fuse_segment_of). Returns the number of segments of rows (0: no row of
 * any step's window is in the box, nothing to launch). */
static inline long tpace_fuse_setup(tpace_rt *r, const tpace_chunk *ch, int i, int len, long tau,
                                                       long box_lo, long box_hi, long tiles, long reach, long blocks,
                                                       int array, tpace_fuse_args *f)
{
    const tpace_plan *p = &r->plan;
    const tpace_array *arr = &r->arrays[array];
    memset(f, 0, sizeof *f);
    f->tp_base = ch->base;
    f->tp_rows_lo = TPACE_MAX(ch->base, p->s.lo);
    f->tp_rows_hi = TPACE_MIN(ch->base + p->slot_planes, p->s.lo + p->s.n);
    f->tp_box_lo = box_lo;
    f->tp_box_hi = box_hi;
    long lo = box_hi, hi = box_lo;
    for (int l = 0; l < len; l++) {
        tpace_window_in_slab(r, ch, i + l, 0, 0, tau, &f->tp_wlo[l], &f->tp_whi[l]);
        lo = TPACE_MIN(lo, TPACE_MAX(f->tp_wlo[l], box_lo));
        hi = TPACE_MAX(hi, TPACE_MIN(f->tp_whi[l], box_hi));
    }
    f->tp_seg_lo = lo;
    f->tp_seg_hi = hi;
    f->tp_seg = (long)tpace_mc_fuse_segment_of((tpace_u64)TPACE_MAX(hi - lo, 0L), (tpace_u64)TPACE_MAX(tiles, 1L),
                                            (tpace_u64)len, (tpace_u64)reach, (tpace_u64)TPACE_MAX(blocks, 1L));
    const long seg = f->tp_seg;
    f->tp_level0 = i;
    f->tp_skew = p->s.skew;
    f->tp_strip_rows = p->s.skew + p->s.reach_lo;
    if (p->strip_planes > 0) {
        f->tp_edge_in = tpace_own_lo(p, ch->c) - tau;
        f->tp_edge_out = tpace_own_hi(p, ch->c) - tau;
        /* The predecessor's strip, read where it lies: the slot is not reused before this
         * chunk's kernels are done (mmtb keeps two slots at least, and each chunk's kernels
         * wait for its predecessor's). */
        f->tp_strip_in = ch->c > 0 ? arr->strip_out[(ch->c - 1) % p->slots] : NULL;
        f->tp_strip_out = ch->c + 1 < p->nchunks ? arr->strip_out[ch->slot] : NULL;
    }
    return lo < hi ? (hi - lo + seg - 1) / seg : 0;
}

/* Planes [*lo, *hi) of a sweep's window [from, to) whose points a reduction counts, so
 * that every point counts once per step: mmtb and incore compute every plane in one
 * chunk only, but mm and naive also compute ghost planes that neighbouring chunks own,
 * and there only the chunk's own planes count. */
static inline void tpace_count_window(const tpace_plan *p, const tpace_chunk *ch, long from, long to,
                                                         long *lo, long *hi)
{
    if (p->schedule == TPACE_MM || p->schedule == TPACE_NAIVE) {
        *lo = TPACE_MAX(from, tpace_own_lo(p, ch->c));
        *hi = TPACE_MIN(to, tpace_own_hi(p, ch->c));
    } else {
        *lo = from;
        *hi = to;
    }
}

/* tpace_count_window within an executor's slab (several devices: each counts its own). */
static inline void tpace_count_own(const tpace_rt *r, const tpace_chunk *ch, long from, long to, long *lo, long *hi)
{
    tpace_count_window(&r->plan, ch, from, to, lo, hi);
    *lo = TPACE_MAX(*lo, r->own_lo);
    *hi = TPACE_MIN(*hi, r->own_hi);
}

/* A reduction's neutral value (sum: 0, max: -inf, min: +inf). */
static inline double tpace_red_identity(int op)
{
    return op == TPACE_RED_SUM ? 0.0 : op == TPACE_RED_MAX ? -HUGE_VAL : HUGE_VAL;
}

/* Combine `value` into step `step`'s slot of reduction i on the host, in its declared type. */
TPACE_MAYBE_UNUSED static inline void tpace_reduced(tpace_rt *r, int i, long step, double value)
{
    tpace_reduction *red = &r->reductions[i];
    if (red->elem == sizeof(float)) {
        float *slot = (float *)red->partial + step, v = (float)value;
        *slot = red->op == TPACE_RED_SUM ? *slot + v : red->op == TPACE_RED_MAX ? TPACE_MAX(*slot, v) : TPACE_MIN(*slot, v);
    } else {
        double *slot = (double *)red->partial + step;
        *slot = red->op == TPACE_RED_SUM ? *slot + value
                : red->op == TPACE_RED_MAX ? TPACE_MAX(*slot, value) : TPACE_MIN(*slot, value);
    }
}

/* Host (and, where the target reduces there, device) slots of every reduction, one per
 * step, each at the identity. */
static inline void tpace_reductions_begin(tpace_rt *r)
{
    const tpace_plan *p = &r->plan;
    const size_t steps = (size_t)TPACE_MAX(p->s.steps, 1L);
    int uploaded = 0;
    for (int i = 0; i < r->nreductions; i++) {
        tpace_reduction *red = &r->reductions[i];
        red->partial = malloc(steps * red->elem);
        red->dev = NULL;
        if (red->partial == NULL)
            tpace_fail(p, "host memory ran out allocating a reduction's per-step results");
        const double id = tpace_red_identity(red->op);
        for (size_t t = 0; t < steps; t++) {
            if (red->elem == sizeof(float))
                ((float *)red->partial)[t] = (float)id;
            else
                ((double *)red->partial)[t] = id;
        }
        if (!tpace_dev_reduces_on_device() || p->s.steps == 0)
            continue;
        red->dev = tpace_dev_alloc(r, steps * red->elem);
        if (red->dev == NULL)
            tpace_fail(p, "device memory ran out allocating a reduction's per-step slots; lower TPACE_CHUNK");
        tpace_dev_upload(r, red->dev, red->partial, steps * red->elem, 0);
        uploaded = 1;
    }
    /* Every queue's kernels add into the slots: they start from the identity. (Only
     * after an upload: with no step, gcc's OpenACC runtime is not started yet and
     * must not be asked to wait.) */
    if (uploaded)
        tpace_dev_sync(r);
}

/* After the last kernel: bring the device slots back and free them. */
static inline void tpace_reductions_download(tpace_rt *r)
{
    int downloaded = 0;
    for (int i = 0; i < r->nreductions; i++) {
        tpace_reduction *red = &r->reductions[i];
        if (red->dev == NULL)
            continue;
        tpace_dev_download(r, red->partial, red->dev, (size_t)r->plan.s.steps * red->elem, 0);
        downloaded = 1;
    }
    if (!downloaded)
        return;
    tpace_dev_sync(r); /* every download done before the slots go */
    for (int i = 0; i < r->nreductions; i++) {
        tpace_reduction *red = &r->reductions[i];
        if (red->dev != NULL)
            tpace_dev_free(r, red->dev);
        red->dev = NULL;
    }
}

/* ---- The schedule executor: the same for every target. ---- */

/* Address of plane `plane` of array a in the host array / in a buffer whose first plane is `base`. */
static inline char *tpace_host_plane(const tpace_rt *r, const tpace_array *a, long plane)
{
    return (char *)a->host + (size_t)(plane - r->plan.s.lo) * r->plan.s.plane * a->elem;
}
static inline char *tpace_buf_plane(const tpace_rt *r, const tpace_array *a, void *buf, long base, long plane)
{
    return (char *)buf + (size_t)(plane - base) * r->plan.s.plane * a->elem;
}
static inline size_t tpace_planes_bytes(const tpace_rt *r, const tpace_array *a, long planes)
{
    return (size_t)planes * r->plan.s.plane * a->elem;
}

/* Fused kernels: the block's steps [0, end) run in groups of p->fuse steps, one
 * kernel each; the steps after `end` (fewer than p->fuse) run one kernel per step. */
static inline int tpace_fused_end(const tpace_plan *p, const tpace_chunk *ch)
{
    return p->fuse > 1 ? ch->kb / p->fuse * p->fuse : 0;
}

/* Steps the kernel(s) launched at step i of the block advance: p->fuse inside the
 * fused part, else 1. */
static inline int tpace_group_steps(const tpace_plan *p, const tpace_chunk *ch, int i)
{
    return i < tpace_fused_end(p, ch) ? p->fuse : 1;
}

/* Buffer swaps before step i of the block: one per kernel group (a fused kernel
 * reads one buffer and writes the other, like a single step). */
static inline int tpace_flips(const tpace_plan *p, const tpace_chunk *ch, int i)
{
    const int end = tpace_fused_end(p, ch);
    if (i <= end)
        return (i + p->fuse - 1) / p->fuse;
    return end / p->fuse + (i - end);
}

/* Swap: the buffer that holds the array at the start of step i of a block: shadow
 * after an odd number of swaps (every step swaps the two; a fused group of steps
 * swaps them once). */
static inline void *tpace_swap_buffer(const tpace_rt *r, const tpace_chunk *ch, int a, int i)
{
    const tpace_array *arr = &r->arrays[a];
    return arr->swap && tpace_flips(&r->plan, ch, i) % 2 ? arr->shadow[ch->slot] : arr->slot[ch->slot];
}

/* The buffer that holds the array once the chunk's block is done. */
static inline void *tpace_final_buffer(const tpace_rt *r, const tpace_chunk *ch, int a)
{
    return tpace_swap_buffer(r, ch, a, ch->kb);
}

/* Whether an array's planes go in / come out in a block (last_block: the one with the loop's
 * last step). An array the program never reads after the pipeline (unread) comes out only
 * where a later block reads it, so not in the last block; a pure temporary goes in only for
 * its final values, so then not at all. */
static inline int tpace_moves_in(const tpace_array *a, int last_block)
{
    return a->transfer == TPACE_UPDOWN || a->transfer == TPACE_UP ||
           (a->transfer == TPACE_LAST_BLOCK && last_block && !a->unread);
}
static inline int tpace_moves_out(const tpace_array *a, int last_block)
{
    if (last_block && a->unread)
        return 0;
    return a->transfer == TPACE_UPDOWN || (a->transfer == TPACE_LAST_BLOCK && last_block);
}

/* ---- TPACE_TRACE=FILE: the pipeline's timeline, from device timers (CUDA). Every
 * upload, hand-over, run of a chunk's kernels and download is stamped on its queue
 * where it starts and where it is done; FILE gets one line per operation (times in ms
 * from the pipeline's start) and stderr a summary: how long the kernels, uploads,
 * downloads and hand-overs kept the device busy, overlaps merged. A stamp marks
 * where its queue's earlier work and waits are done, so a chunk's kernels "start"
 * once their inputs are there. Tracing costs a few microseconds of host time per
 * operation. ---- */
enum tpace_trace_what { TPACE_TRACE_UPLOAD, TPACE_TRACE_HANDOVER, TPACE_TRACE_KERNELS, TPACE_TRACE_DOWNLOAD, TPACE_TRACE_KINDS };
static const char *const tpace_trace_names[TPACE_TRACE_KINDS] = {"upload", "handover", "kernels", "download"};

/* Start recording when TPACE_TRACE names a file, or the run checks the model against its
 * first chunk and block (and the target has timers). */
static inline void tpace_trace_begin(tpace_rt *r)
{
    tpace_trace *tr = &r->trace;
    const char *path = tpace_getenv("TPACE_TRACE");
    memset(tr, 0, sizeof *tr);
    const int traced = path != NULL && *path != '\0';
    if ((!traced && !r->plan.replan) || r->plan.s.steps == 0)
        return;
    /* The origin on the idle device, and the host's clock once it has passed (several
     * devices' timelines meet through it). */
    tr->origin = tpace_dev_stamp(r, 0);
    if (tr->origin >= 0)
        tpace_dev_sync(r);
    tr->origin_at = tpace_now();
    if (tr->origin < 0) {
        if (traced && (!r->blockwise || r->device == 0))
            fprintf(stderr, "tpace: %s: note: this target has no device timers; TPACE_TRACE is ignored\n",
                    r->plan.s.where);
        return;
    }
    tr->on = 1;
    tr->kernels_from = -1;
    if (!traced)
        return; /* measured for re-planning only: no file */
    /* One of several devices: the scale-out part writes every device's operations into one file. */
    tr->keep = r->blockwise;
    if (!tr->keep) {
        tr->file = fopen(path, "w");
        if (tr->file == NULL) {
            char msg[512];
            snprintf(msg, sizeof msg, "cannot open TPACE_TRACE file %s: %s", path, strerror(errno));
            tpace_stop(r->plan.s.where, msg);
        }
    }
    tr->path = path;
}

/* A stamp where an operation on queue q starts (-1 when not recording). */
static inline int tpace_trace_from(tpace_rt *r, int q)
{
    return r->trace.on ? tpace_dev_stamp(r, q) : -1;
}

/* The operation of chunk ch on queue q that started at stamp `from` is done once q's
 * work so far is. */
static inline void tpace_trace_done_on(tpace_rt *r, const tpace_chunk *ch, int q, int what, int from, size_t bytes)
{
    tpace_trace *tr = &r->trace;
    if (!tr->on || from < 0)
        return;
    tr->ops = (tpace_trace_op *)tpace_trace_grow(&r->plan, tr->ops, &tr->cap, tr->n, sizeof *tr->ops, 256);
    tpace_trace_op *o = &tr->ops[tr->n++];
    o->c = ch->c;
    o->t = ch->t;
    o->kb = ch->kb;
    o->slot = q;
    o->what = what;
    o->from = from;
    o->to = tpace_dev_stamp(r, q);
    o->bytes = bytes;
    o->copied = 0;
}

/* tpace_trace_done for an operation on the chunk's own queue. */
static inline void tpace_trace_done(tpace_rt *r, const tpace_chunk *ch, int what, int from, size_t bytes)
{
    tpace_trace_done_on(r, ch, ch->slot, what, from, bytes);
}

/* An interval of the timeline, in ms. */
typedef struct tpace_span {
    double from, to;
} tpace_span;

static inline int tpace_span_order(const void *a, const void *b)
{
    const double x = ((const tpace_span *)a)->from, y = ((const tpace_span *)b)->from;
    return x < y ? -1 : x > y;
}

/* Total length of the union of n intervals (sorts them). */
static inline double tpace_spans_length(tpace_span *v, long n)
{
    double total = 0.0, from = 0.0, to = 0.0;
    qsort(v, (size_t)n, sizeof *v, tpace_span_order);
    for (long i = 0; i < n; i++) {
        if (i == 0 || v[i].from > to) {
            total += to - from;
            from = v[i].from;
            to = v[i].to;
        } else if (v[i].to > to) {
            to = v[i].to;
        }
    }
    return n > 0 ? total + to - from : 0.0;
}

/* After the last operation (and a sync): one line per operation into `file` (device >= 0:
 * with the device's number in a last column, times from `offset_ms` on) and the summary
 * line on stderr (naming the device, if any). */
static inline void tpace_trace_write(tpace_rt *r, FILE *file, int device, double offset_ms)
{
    tpace_trace *tr = &r->trace;
    /* Each operation's interval (read from the timers once), and room for one kind's. */
    tpace_span *spans = (tpace_span *)malloc((size_t)(tr->n > 0 ? 2 * tr->n : 1) * sizeof *spans);
    if (spans == NULL)
        tpace_fail(&r->plan, "host memory ran out writing the TPACE_TRACE timeline");
    tpace_span *kind = spans + tr->n;
    double busy[TPACE_TRACE_KINDS], bytes[TPACE_TRACE_KINDS], wall = 0.0;
    double first_kernel = -1.0, last_kernel = 0.0; /* ms: when kernels first start and last end */
    for (long i = 0; i < tr->n; i++) {
        const tpace_trace_op *o = &tr->ops[i];
        spans[i].from = tpace_dev_stamp_ms(r, tr->origin, o->from);
        spans[i].to = tpace_dev_stamp_ms(r, tr->origin, o->to);
        wall = TPACE_MAX(wall, spans[i].to);
        if (o->what == TPACE_TRACE_KERNELS) {
            first_kernel = first_kernel < 0.0 ? spans[i].from : TPACE_MIN(first_kernel, spans[i].from);
            last_kernel = TPACE_MAX(last_kernel, spans[i].to);
        }
        fprintf(file, "%ld\t%ld\t%d\t%d\t%s\t%.3f\t%.3f\t%zu", o->c, o->t, o->kb, o->slot, tpace_trace_names[o->what],
                spans[i].from + offset_ms, spans[i].to + offset_ms, o->bytes);
        if (device >= 0)
            fprintf(file, "\t%d", device);
        fputc('\n', file);
    }
    for (int w = 0; w < TPACE_TRACE_KINDS; w++) {
        long n = 0;
        bytes[w] = 0.0;
        for (long i = 0; i < tr->n; i++) {
            if (tr->ops[i].what != w)
                continue;
            bytes[w] += (double)tr->ops[i].bytes;
            kind[n++] = spans[i];
        }
        busy[w] = tpace_spans_length(kind, n) * 1e-3;
    }
    free(spans);
    /* No kernel ran: before the first started, after the last ended, and between. */
    const double idle = wall * 1e-3 - busy[TPACE_TRACE_KERNELS];
    const double head = TPACE_MAX(first_kernel, 0.0) * 1e-3, tail = (wall - last_kernel) * 1e-3;
    char who[32] = "";
    if (device >= 0)
        snprintf(who, sizeof who, " device %d:", device);
    wall *= 1e-3;
    fprintf(stderr,
            "tpace: %s: trace:%s %ld operations written to %s; in %.6f s, kernels ran %.6f s and none ran %.6f s "
            "(%.6f s before the first, %.6f s after the last, %.6f s between); uploads %.6f s (%.3g GB), downloads "
            "%.6f s (%.3g GB), hand-overs %.6f s\n",
            r->plan.s.where, who, tr->n, tr->path, wall, busy[TPACE_TRACE_KERNELS], idle, head, tail,
            TPACE_MAX(idle - head - tail, 0.0), busy[TPACE_TRACE_UPLOAD], bytes[TPACE_TRACE_UPLOAD] * 1e-9,
            busy[TPACE_TRACE_DOWNLOAD], bytes[TPACE_TRACE_DOWNLOAD] * 1e-9, busy[TPACE_TRACE_HANDOVER]);
    free(tr->ops);
    tr->ops = NULL;
    tr->n = tr->cap = 0;
    tr->on = 0;
}

/* The header line of a TPACE_TRACE file (devices: with the device column). */
static inline void tpace_trace_header(FILE *file, int devices)
{
    fprintf(file, "chunk\tfirst_step\tsteps\tqueue\top\tstart_ms\tend_ms\tbytes%s\n", devices ? "\tdevice" : "");
}

/* After the last operation: write FILE and the summary line (one of several devices:
 * the scale-out part does, for all of them, tpace_trace_write). */
static inline void tpace_trace_end(tpace_rt *r)
{
    tpace_trace *tr = &r->trace;
    if (tr->keep)
        return;
    if (tr->path == NULL) {
        /* No file: what re-planning measured, if anything, goes. */
        free(tr->ops);
        memset(tr, 0, sizeof *tr);
        return;
    }
    tpace_dev_sync(r);
    tpace_trace_header(tr->file, 0);
    tpace_trace_write(r, tr->file, -1, 0.0);
    if (fclose(tr->file) != 0)
        tpace_stop(r->plan.s.where, "cannot write the TPACE_TRACE file");
    tr->file = NULL;
    tr->path = NULL;
}

/* Upload planes [from, to) of every array that moves in, into chunk ch's buffers (for
 * the trace, one upload, with the copies that start a swapped array's second buffer). */
static inline void tpace_upload_planes(tpace_rt *r, const tpace_chunk *ch, long from, long to)
{
    size_t moved = 0, copied = 0;
    if (from >= to)
        return;
    /* Ghost planes (several devices) come from the copies taken at the block's start. */
    for (int side = 0; side < 2; side++)
        if ((side == 0 ? from < r->own_lo : to > r->own_hi) && !r->ghost_ready[side] && r->ghost_fill)
            r->ghost_fill(r, side);
    const int stamp = tpace_trace_from(r, ch->slot);
    for (int a = 0; a < r->narrays; a++) {
        tpace_array *arr = &r->arrays[a];
        if (!tpace_moves_in(arr, ch->last_block))
            continue;
        moved += tpace_planes_bytes(r, arr, to - from);
        /* In up to three pieces: ghost planes below the slab, the slab's, ghost planes above. */
        const long cut[4] = {from, TPACE_MIN(TPACE_MAX(r->own_lo, from), to), TPACE_MAX(TPACE_MIN(r->own_hi, to), from), to};
        for (int piece = 0; piece < 3; piece++) {
            const long lo = TPACE_MAX(cut[piece], from), hi = TPACE_MIN(cut[piece + 1], to);
            if (lo >= hi)
                continue;
            const size_t at = (size_t)(lo - (piece == 0 ? r->plan.s.lo : r->own_hi)) * r->plan.s.plane * arr->elem;
            char *dst = tpace_buf_plane(r, arr, arr->slot[ch->slot], ch->base, lo);
            /* Ghost planes a neighbouring device copied to this one (several devices, peer copies). */
            if (piece != 1 && r->ghost_dev[piece / 2] && r->ghost_dev[piece / 2][a]) {
                tpace_dev_copy(r, dst, r->ghost_dev[piece / 2][a] + at, tpace_planes_bytes(r, arr, hi - lo), ch->slot);
                continue;
            }
            const char *src = piece == 1 ? tpace_host_plane(r, arr, lo) : r->ghost[piece / 2][a] + at;
            tpace_dev_upload(r, dst, src, tpace_planes_bytes(r, arr, hi - lo), ch->slot);
        }
        /* The second buffer of a swapped array starts equal: cells outside the copied
         * box are read from whichever buffer is current. */
        if (arr->swap) {
            tpace_dev_copy(r, tpace_buf_plane(r, arr, arr->shadow[ch->slot], ch->base, from),
                           tpace_buf_plane(r, arr, arr->slot[ch->slot], ch->base, from),
                           tpace_planes_bytes(r, arr, to - from), ch->slot);
            copied += tpace_planes_bytes(r, arr, to - from);
        }
    }
    r->plan.up_bytes += moved;
    if (from < r->own_lo && r->ghost_read != NULL)
        r->ghost_read(r, ch);
    tpace_trace_done(r, ch, TPACE_TRACE_UPLOAD, stamp, moved);
    if (r->trace.on && stamp >= 0)
        r->trace.ops[r->trace.n - 1].copied = copied;
}

/* ---- A folded temporary (TPACE_FOLDED) gets its final values from the copy's box of
 * the array it was copied into. A chunk's planes come back in one contiguous download,
 * from the box's first cell in those planes to its last: one transfer however thin the
 * box's rows, the form the bus serves fastest. It also overwrites the cells between the
 * box's rows (the temporary's faces, which the program never writes): unless they equal
 * the other array's faces there, they are saved before the pipeline and put back after
 * it (tpace_fold_gaps). ---- */

/* The copy's box of a folded array, clipped to planes [from, to) of the cut axis, as
 * [lo[k], hi[k]) in dimension k; stride[k] is the elements between consecutive indices
 * of dimension k. Returns 0 when the clipped box is empty. */
static inline int tpace_fold_box(const tpace_plan *p, const tpace_array *arr, long from, long to, long *lo, long *hi,
                                 size_t *stride)
{
    const int d = p->s.rank;
    if (d < 1 || d > TPACE_MAX_RANK)
        tpace_fail(p, "a folded temporary needs a grid of 1 to TPACE_MAX_RANK dimensions");
    int empty = 0;
    for (int k = d - 1; k >= 0; k--) {
        lo[k] = arr->fold_lo[k];
        hi[k] = arr->fold_hi[k];
        stride[k] = k == d - 1 ? 1 : stride[k + 1] * (size_t)p->s.dim_n[k + 1];
    }
    lo[0] = TPACE_MAX(lo[0], from);
    hi[0] = TPACE_MIN(hi[0], to);
    for (int k = 0; k < d; k++)
        empty |= lo[k] >= hi[k];
    return !empty;
}

/* Element offset in a host array of the cell at index idx (one index per dimension). */
static inline size_t tpace_host_offset(const tpace_plan *p, const long *idx, const size_t *stride)
{
    size_t at = 0;
    for (int k = 0; k < p->s.rank; k++)
        at += (size_t)(idx[k] - p->s.dim_lo[k]) * stride[k];
    return at;
}

/* The first cell of a folded array's box and the cell after its last, as host offsets
 * (the span one contiguous download covers). */
static inline void tpace_fold_span(const tpace_plan *p, const long *lo, const long *hi, const size_t *stride,
                                   size_t *first, size_t *end)
{
    long last[TPACE_MAX_RANK];
    for (int k = 0; k < p->s.rank; k++)
        last[k] = hi[k] - 1;
    *first = tpace_host_offset(p, lo, stride);
    *end = tpace_host_offset(p, last, stride) + 1;
}

/* Cells of a folded array's span outside its box (the ones its downloads overwrite
 * but the program never writes). */
static inline size_t tpace_fold_gap_cells(const tpace_rt *r, const tpace_array *arr)
{
    const tpace_plan *p = &r->plan;
    long lo[TPACE_MAX_RANK], hi[TPACE_MAX_RANK];
    size_t stride[TPACE_MAX_RANK], first, end, cells = 1;
    if (!tpace_fold_box(p, arr, r->own_lo, r->own_hi, lo, hi, stride))
        return 0;
    tpace_fold_span(p, lo, hi, stride, &first, &end);
    for (int k = 0; k < p->s.rank; k++)
        cells *= (size_t)(hi[k] - lo[k]);
    return end - first - cells;
}

/* What tpace_fold_gaps does with the cells between the box's rows. */
enum tpace_gaps_do {
    TPACE_GAPS_SAME = 0,    /* compare them with the same cells of the array it folds into */
    TPACE_GAPS_SAVE = 1,    /* copy them into arr->fold_keep */
    TPACE_GAPS_RESTORE = 2, /* put them back from arr->fold_keep */
};

/* The cells between consecutive rows of a folded array's box, in memory order: saved,
 * put back, or compared with the array it folds into. Returns, for TPACE_GAPS_SAME,
 * whether every one of them equals that array's (then the downloads, which copy that
 * array's final values there, and its faces never change, leave them as they are). */
static inline int tpace_fold_gaps(tpace_rt *r, tpace_array *arr, int what)
{
    const tpace_plan *p = &r->plan;
    const int d = p->s.rank;
    long lo[TPACE_MAX_RANK], hi[TPACE_MAX_RANK], idx[TPACE_MAX_RANK];
    size_t stride[TPACE_MAX_RANK];
    if (d < 2 || !tpace_fold_box(p, arr, r->own_lo, r->own_hi, lo, hi, stride))
        return 1;
    const size_t e = arr->elem, width = (size_t)(hi[d - 1] - lo[d - 1]);
    char *host = (char *)arr->host, *keep = (char *)arr->fold_keep;
    const char *other = (const char *)r->arrays[arr->fold_of].host;
    size_t kept = 0, prev_end = 0;
    for (int k = 0; k < d; k++)
        idx[k] = lo[k];
    for (int first_row = 1;; first_row = 0) {
        const size_t row = tpace_host_offset(p, idx, stride);
        if (!first_row) {
            char *gap = host + prev_end * e;
            const size_t bytes = (row - prev_end) * e;
            if (what == TPACE_GAPS_SAME && memcmp(gap, other + prev_end * e, bytes) != 0)
                return 0;
            if (what == TPACE_GAPS_SAVE)
                memcpy(keep + kept, gap, bytes);
            if (what == TPACE_GAPS_RESTORE)
                memcpy(gap, keep + kept, bytes);
            kept += bytes;
        }
        prev_end = row + width;
        /* The next row of the box (odometer over the dimensions outside the innermost). */
        int k = d - 2;
        while (k >= 0 && ++idx[k] == hi[k]) {
            idx[k] = lo[k];
            k--;
        }
        if (k < 0)
            return 1;
    }
}

/* A folded temporary's final values in planes [from, to): the span of the copy's box
 * in those planes, from the final buffer of the array it was copied into. Returns the
 * bytes downloaded. */
static inline size_t tpace_download_folded(tpace_rt *r, const tpace_chunk *ch, const tpace_array *arr, long from,
                                           long to)
{
    const tpace_plan *p = &r->plan;
    long lo[TPACE_MAX_RANK], hi[TPACE_MAX_RANK];
    size_t stride[TPACE_MAX_RANK], first, end;
    if (!tpace_fold_box(p, arr, from, to, lo, hi, stride))
        return 0;
    tpace_fold_span(p, lo, hi, stride, &first, &end);
    /* The chunk's buffers hold whole planes from plane ch->base on (below the grid's first
     * plane for a first chunk that reads below it). */
    const long dev_first = (long)first - (ch->base - p->s.dim_lo[0]) * (long)stride[0];
    const char *buf = (const char *)tpace_final_buffer(r, ch, arr->fold_of);
    tpace_dev_download(r, (char *)arr->host + first * arr->elem, buf + dev_first * (long)arr->elem,
                       (end - first) * arr->elem, ch->out_q);
    return (end - first) * arr->elem;
}

/* Download planes [from, to) of every array that moves out, from chunk ch's buffers, on
 * the chunk's download queue; the bytes moved. */
static inline size_t tpace_download_range(tpace_rt *r, const tpace_chunk *ch, long from, long to)
{
    size_t moved = 0;
    if (from >= to)
        return 0;
    if (r->download_gate)
        r->download_gate(r, from, to);
    for (int a = 0; a < r->narrays; a++) {
        tpace_array *arr = &r->arrays[a];
        if (arr->transfer == TPACE_FOLDED && ch->last_block && !arr->unread)
            moved += tpace_download_folded(r, ch, arr, from, to);
        if (tpace_moves_out(arr, ch->last_block)) {
            moved += tpace_planes_bytes(r, arr, to - from);
            tpace_dev_download(r, tpace_host_plane(r, arr, from),
                               tpace_buf_plane(r, arr, tpace_final_buffer(r, ch, a), ch->base, from),
                               tpace_planes_bytes(r, arr, to - from), ch->out_q);
        }
    }
    if (r->planes_out)
        r->planes_out(r, ch, from, to);
    r->plan.down_bytes += moved;
    return moved;
}

/* tpace_download_range as one download of the trace. */
static inline void tpace_download_planes(tpace_rt *r, const tpace_chunk *ch, long from, long to)
{
    if (from >= to)
        return;
    const int stamp = tpace_trace_from(r, ch->out_q);
    tpace_trace_done_on(r, ch, ch->out_q, TPACE_TRACE_DOWNLOAD, stamp, tpace_download_range(r, ch, from, to));
}

/* mm / naive: bring chunk ch in. Planes below its own come from the carry buffer
 * (the previous chunk's copy, still at the block's starting time level), except for
 * the first chunk, so that no chunk reads from the host a plane an earlier chunk has
 * already written back. Queue `slots` (the carry queue) moves them. */
static inline void tpace_mm_in(tpace_rt *r, const tpace_chunk *ch)
{
    const tpace_plan *p = &r->plan;
    const int q = ch->slot, carry_q = p->slots;
    const long own_lo = tpace_own_lo(p, ch->c), own_hi = tpace_own_hi(p, ch->c);
    const long win_lo = TPACE_MAX(ch->base, p->s.lo);
    const long win_hi = TPACE_MIN(own_hi + p->s.reach_hi * ch->kb, p->s.lo + p->s.n);
    const long host_lo = ch->c == 0 ? win_lo : own_lo;
    const long carry_lo = TPACE_MAX(own_hi - p->s.reach_lo * ch->kb, p->s.lo);
    const int has_next = ch->c + 1 < p->nchunks;
    tpace_upload_planes(r, ch, host_lo, win_hi);
    if (p->s.reach_lo == 0)
        return;
    /* The carry queue waits for this upload, fills the planes below the chunk from the
     * previous chunk, and keeps this chunk's top planes for the next. */
    tpace_dev_wait(r, q, carry_q);
    for (int a = 0; a < r->narrays; a++) {
        tpace_array *arr = &r->arrays[a];
        if (!tpace_moves_in(arr, ch->last_block))
            continue;
        void *buf = arr->slot[q];
        if (ch->c > 0 && win_lo < own_lo)
            tpace_dev_copy(r, tpace_buf_plane(r, arr, buf, ch->base, win_lo), arr->carry,
                           tpace_planes_bytes(r, arr, own_lo - win_lo), carry_q);
        if (has_next && carry_lo < own_hi)
            tpace_dev_copy(r, arr->carry, tpace_buf_plane(r, arr, buf, ch->base, carry_lo),
                           tpace_planes_bytes(r, arr, own_hi - carry_lo), carry_q);
    }
    /* The kernels overwrite the buffer: they wait until the carry copies are done. */
    tpace_dev_wait(r, carry_q, q);
    for (int a = 0; a < r->narrays; a++) {
        tpace_array *arr = &r->arrays[a];
        if (arr->swap && ch->c > 0 && win_lo < own_lo && tpace_moves_in(arr, ch->last_block))
            tpace_dev_copy(r, tpace_buf_plane(r, arr, arr->shadow[q], ch->base, win_lo),
                           tpace_buf_plane(r, arr, arr->slot[q], ch->base, win_lo),
                           tpace_planes_bytes(r, arr, own_lo - win_lo), q);
    }
}

/* mmtb: bring chunk ch in. Its own planes (and the few above that nothing has written
 * yet) come from the host; the planes below come from the previous chunk's buffer,
 * on the device, after that chunk's kernels. Then the previous chunk's finished
 * planes go back to the host. */
static inline void tpace_mmtb_in(tpace_rt *r, const tpace_chunk *ch, const tpace_chunk *prev)
{
    const tpace_plan *p = &r->plan;
    const long own_lo = tpace_own_lo(p, ch->c), own_hi = tpace_own_hi(p, ch->c);
    const long top = p->s.lo + p->s.n;
    /* The slot's previous occupant must have handed its planes over first, and (where
     * downloads have a queue of their own) have downloaded the planes this upload
     * overwrites. That occupant is chunk c - slots of this block (blocks drain, and a new
     * plan starts at chunk 0), so its buffer sat as far below its own planes as this one's:
     * tpace_chunk_out sent the planes from this upload's first on ahead of the rest. */
    const int reused = ch->c >= p->slots, own_out = ch->out_q != ch->slot;
    if (reused)
        tpace_dev_wait_mark(r, ch->slot, ch->slot);
    if (reused && own_out)
        tpace_dev_wait_mark(r, TPACE_MARK_OUT_HIGH(ch->slot), ch->slot);
    tpace_upload_planes(r, ch, own_lo, TPACE_MIN(own_hi + tpace_mmtb_above(p), top));
    if (prev == NULL)
        return;
    /* The hand-over below writes where the rest of that download reads. */
    if (reused && own_out)
        tpace_dev_wait_mark(r, TPACE_MARK_OUT_ALL(ch->slot), ch->slot);
    tpace_dev_wait(r, prev->slot, ch->slot);
    const int stamp = tpace_trace_from(r, ch->slot);
    size_t moved = 0;
    const long from = TPACE_MAX(own_lo - tpace_mmtb_below(p, ch->kb), p->s.lo);
    for (int a = 0; a < r->narrays; a++) {
        tpace_array *arr = &r->arrays[a];
        if (!tpace_on_device(arr) || from >= own_lo)
            continue;
        moved += tpace_planes_bytes(r, arr, own_lo - from);
        tpace_dev_copy(r, tpace_buf_plane(r, arr, arr->slot[ch->slot], ch->base, from),
                       tpace_buf_plane(r, arr, arr->slot[prev->slot], prev->base, from),
                       tpace_planes_bytes(r, arr, own_lo - from), ch->slot);
        if (arr->swap)
            tpace_dev_copy(r, tpace_buf_plane(r, arr, arr->shadow[ch->slot], ch->base, from),
                           tpace_buf_plane(r, arr, arr->shadow[prev->slot], prev->base, from),
                           tpace_planes_bytes(r, arr, own_lo - from), ch->slot);
        /* Fused kernels read the predecessor's strip in place (tpace_fuse_setup): not copied. */
    }
    tpace_trace_done(r, ch, TPACE_TRACE_HANDOVER, stamp, moved);
    tpace_dev_mark(r, ch->slot, prev->slot);
}

/* mmtb: planes whose every update of the block is done once chunk c has run. */
static inline long tpace_mmtb_done_below(const tpace_plan *p, long c, int kb, long max_tau)
{
    if (c == p->nchunks - 1)
        return p->s.lo + p->s.n;
    return TPACE_MAX(tpace_own_hi(p, c) - ((long)(kb - 1) * p->s.skew + max_tau), p->s.lo);
}

/* Send a chunk's finished planes back to the host. */
static inline void tpace_chunk_out(tpace_rt *r, const tpace_chunk *ch, long max_tau)
{
    const tpace_plan *p = &r->plan;
    long from, to;
    if (p->schedule == TPACE_MMTB || p->schedule == TPACE_INCORE) {
        from = ch->c == 0 ? p->s.lo : tpace_mmtb_done_below(p, ch->c - 1, ch->kb, max_tau);
        to = tpace_mmtb_done_below(p, ch->c, ch->kb, max_tau);
    } else {
        from = tpace_own_lo(p, ch->c);
        to = tpace_own_hi(p, ch->c);
    }
    /* Only the slab's planes: the ghost planes around it are its neighbours' to write. */
    from = TPACE_MAX(from, r->own_lo);
    to = TPACE_MIN(to, r->own_hi);
    if (ch->out_q == ch->slot) {
        tpace_download_planes(r, ch, from, to);
        return;
    }
    /* mmtb's downloads have a queue of their own: after the chunk's kernels, the planes from
     * where the slot's next chunk's upload begins (the chunk's own planes, at the same place
     * in the buffer) go first, then the rest, a mark after each; that upload waits only for
     * the first part (tpace_mmtb_in). */
    const long split = tpace_own_lo(p, ch->c);
    tpace_dev_wait(r, ch->slot, ch->out_q);
    const int stamp = from < to ? tpace_trace_from(r, ch->out_q) : -1; /* one download for the trace */
    size_t moved = tpace_download_range(r, ch, TPACE_MAX(from, split), to);
    tpace_dev_mark(r, ch->out_q, TPACE_MARK_OUT_HIGH(ch->slot));
    moved += tpace_download_range(r, ch, from, TPACE_MIN(to, split));
    tpace_dev_mark(r, ch->out_q, TPACE_MARK_OUT_ALL(ch->slot));
    tpace_trace_done_on(r, ch, ch->out_q, TPACE_TRACE_DOWNLOAD, stamp, moved);
}

static inline void tpace_begin_slab(tpace_rt *r, const tpace_shape *shape, tpace_array *arrays, int narrays,
                                    tpace_reduction *reductions, int nreductions, int device, long own_lo,
                                    long own_hi, int blockwise);

/* Every chunk buffer the plan needs on the device: per array that lives there, one per slot
 * (and its swap buffer and fused-kernel strips), and mm's carry buffer. */
static inline void tpace_buffers_alloc(tpace_rt *r)
{
    const tpace_plan *p = &r->plan;
    for (int a = 0; a < r->narrays; a++) {
        tpace_array *arr = &r->arrays[a];
        memset(arr->slot, 0, sizeof arr->slot);
        memset(arr->shadow, 0, sizeof arr->shadow);
        memset(arr->strip_out, 0, sizeof arr->strip_out);
        arr->carry = NULL;
        if (!tpace_on_device(arr) || p->s.steps == 0)
            continue;
        size_t plane_bytes = p->s.plane * arr->elem;
        long carry_planes = p->schedule == TPACE_NAIVE || p->schedule == TPACE_MM ? p->s.reach_lo * p->k : 0;
        for (int s = 0; s <= p->slots; s++) {
            size_t bytes = (size_t)(s < p->slots ? p->slot_planes : carry_planes) * plane_bytes;
            void *buf = bytes ? tpace_dev_alloc(r, bytes) : NULL;
            if (bytes && buf == NULL) {
                char msg[512];
                snprintf(msg, sizeof msg,
                         "device memory ran out allocating %zu bytes for array `%s` (the plan needs %zu bytes: "
                         "schedule=%s TPACE_CHUNK=%ld TPACE_K=%d TPACE_STREAMS=%d); set TPACE_DEVICE_MEM to the "
                         "memory the device has free, or lower TPACE_CHUNK",
                         bytes, arr->name, p->device_bytes, tpace_schedule_names[p->schedule], p->b, p->k,
                         p->streams);
                tpace_fail(p, msg);
            }
            if (s < p->slots)
                arr->slot[s] = buf;
            else
                arr->carry = buf;
            if (arr->swap && s < p->slots) {
                arr->shadow[s] = tpace_dev_alloc(r, bytes);
                if (arr->shadow[s] == NULL)
                    tpace_fail(p, "device memory ran out allocating a swap buffer; lower TPACE_CHUNK");
            }
            if (arr->fused && s < p->slots && p->strip_planes > 0) {
                arr->strip_out[s] = tpace_dev_alloc(r, (size_t)p->strip_planes * plane_bytes);
                if (arr->strip_out[s] == NULL)
                    tpace_fail(p, "device memory ran out allocating the fused kernels' hand-over strips; lower "
                                  "TPACE_CHUNK, or set TPACE_FUSE=1");
            }
        }
    }
}

/* Free what tpace_buffers_alloc allocated (every queue drained). */
static inline void tpace_buffers_free(tpace_rt *r)
{
    for (int a = 0; a < r->narrays; a++) {
        tpace_array *arr = &r->arrays[a];
        for (int s = 0; s < TPACE_MAX_SLOTS; s++) {
            /* A slot's chunk buffer, its swap buffer and its fused-kernel strip. */
            void *bufs[3] = {arr->slot[s], arr->shadow[s], arr->strip_out[s]};
            for (int b = 0; b < 3; b++)
                if (bufs[b])
                    tpace_dev_free(r, bufs[b]);
            arr->slot[s] = arr->shadow[s] = arr->strip_out[s] = NULL;
        }
        if (arr->carry)
            tpace_dev_free(r, arr->carry);
        arr->carry = NULL;
    }
}

/* Set up: the plan, the device buffers, the queues, and the slots of the sweeps'
 * reductions (their per-step results stay the caller's: it frees each `partial`). */
static inline void tpace_begin(tpace_rt *r, const tpace_shape *shape, tpace_array *arrays, int narrays,
                               tpace_reduction *reductions, int nreductions)
{
    tpace_begin_slab(r, shape, arrays, narrays, reductions, nreductions, 0, shape->lo, shape->lo + shape->n, 0);
}

/* tpace_begin for one of several devices: the executor runs on `device`, computes the
 * planes of `shape` (its slab and the ghost planes around it) and owns [own_lo, own_hi):
 * it downloads and counts only those. `blockwise`: tpace_next stops after each block. */
static inline void tpace_begin_slab(tpace_rt *r, const tpace_shape *shape, tpace_array *arrays, int narrays,
                                    tpace_reduction *reductions, int nreductions, int device, long own_lo,
                                    long own_hi, int blockwise)
{
    memset(r, 0, sizeof *r);
    r->arrays = arrays;
    r->narrays = narrays;
    r->reductions = reductions;
    r->nreductions = nreductions;
    r->device = device;
    r->own_lo = own_lo;
    r->own_hi = own_hi;
    r->blockwise = blockwise;
    tpace_dev_activate(r);
    tpace_plan_init(r, shape);
    if (blockwise)
        r->plan.replan = 0; /* several devices: tpace_run_devices plans for them all */
    const tpace_plan *p = &r->plan;
    tpace_dev_begin(r);
    for (int a = 0; a < narrays; a++) {
        tpace_array *arr = &arrays[a];
        arr->fold_keep = NULL;
        if (arr->transfer == TPACE_FOLDED && p->s.steps > 0 && !arr->unread) {
            /* Its faces inside the span its downloads cover, as they are before the loop,
             * unless they equal those of the array it folds into (heat-3D's do). */
            size_t gap_bytes = tpace_fold_gap_cells(r, arr) * arr->elem;
            if (gap_bytes > 0 && !tpace_fold_gaps(r, arr, TPACE_GAPS_SAME)) {
                arr->fold_keep = malloc(gap_bytes);
                if (arr->fold_keep == NULL)
                    tpace_fail(p, "host memory ran out keeping the faces of a swap's temporary");
                tpace_fold_gaps(r, arr, TPACE_GAPS_SAVE);
            }
        }
    }
    tpace_buffers_alloc(r);
    tpace_reductions_begin(r);
    tpace_trace_begin(r);
    /* The model is checked against the first chunk (where a second one follows it in the
     * block) and the first block (where another follows it). */
    r->calibrating = p->replan && p->nchunks > 1;
    r->rechecking = p->replan && p->s.steps > p->k;
    r->start = tpace_now();
}

/* ---- Plans that correct themselves. A plan the model chose is checked against the run:
 * after the first chunk of the first block (its upload and kernels; nothing has gone back to
 * the host yet) and after the first block (every upload, kernel and download), what the
 * device's timers measured against what the model predicted of the same work. Where the two
 * differ by more than TPACE_REPLAN_TOLERANCE, the model's figures are refitted to what was
 * measured (tpace_model_refit) and it plans again: after the first chunk the run starts over
 * with a plan that is faster by more than the chunk cost (k, b, streams, steps per kernel,
 * schedule), after the first block the remaining blocks take a faster plan. Results stay bit
 * for bit: a run that starts over has written nothing back, and between blocks the host
 * arrays hold every plane. ---- */

/* Most times a run re-plans: after its first chunk (twice, where the first re-plan took
 * another depth), and after its first block. */
#define TPACE_REPLANS_MAX 3

/* TPACE_REPLAN_TO=WHEN:SCHEDULE:K:B:STREAMS:FUSE, for tests: at WHEN (`chunk`: after the first
 * chunk; `block`: after the first block) the run takes that plan, whatever it measured. Returns
 * 1 when it names `when`. */
static inline int tpace_replan_to(const tpace_plan *p, const char *when, int *schedule, long *k, long *b, long *streams,
                                  int *fuse)
{
    const char *text = tpace_getenv("TPACE_REPLAN_TO");
    if (text == NULL || *text == '\0')
        return 0;
    char at[16] = "", name[16] = "";
    int used = 0;
    if (sscanf(text, "%15[a-z]:%15[a-z]:%ld:%ld:%ld:%d%n", at, name, k, b, streams, fuse, &used) != 6 ||
        text[used] != '\0' || (strcmp(at, "chunk") != 0 && strcmp(at, "block") != 0) || *k < 1 || *b < 1 ||
        *streams < 1 || *streams > TPACE_MODEL_STREAMS_MAX || *fuse < 1 || *fuse > TPACE_FUSE_MAX) {
        char msg[400];
        snprintf(msg, sizeof msg, "TPACE_REPLAN_TO=%.100s is not WHEN:SCHEDULE:K:B:STREAMS:FUSE (WHEN chunk or block, "
                                  "streams 1 to %d, fuse 1 to %d)", text, TPACE_MODEL_STREAMS_MAX, TPACE_FUSE_MAX);
        tpace_stop(p->s.where, msg);
    }
    *schedule = -1;
    for (int s = 0; s < 4; s++)
        if (strcmp(name, tpace_schedule_names[s]) == 0)
            *schedule = s;
    if (*schedule < 0)
        tpace_stop(p->s.where, "TPACE_REPLAN_TO: the schedule is one of naive, mm, mmtb, incore");
    *fuse = TPACE_MIN(*fuse, TPACE_MAX(p->fuse_most, 1));
    return strcmp(at, when) == 0;
}

/* Whether TPACE_REPLAN_TO is set: then the run re-plans only as it says, measuring nothing. */
static inline int tpace_replan_forced(void)
{
    const char *text = tpace_getenv("TPACE_REPLAN_TO");
    return text != NULL && *text != '\0';
}

/* Say what the check found (appended to the report's note). */
static inline void tpace_replan_say(tpace_plan *p, const char *what)
{
    const size_t used = strlen(p->replan_note);
    snprintf(p->replan_note + used, sizeof p->replan_note - used, "%s%s", used ? "; " : "", what);
}

/* The plan in words without `=` (the report's key=value words stay the plan that ran last). */
static inline void tpace_plan_words(const tpace_plan *p, char *text, size_t size)
{
    snprintf(text, size, "%s k %d b %ld streams %d fuse %d", tpace_schedule_names[p->schedule], p->k, p->b, p->streams,
             p->fuse);
}

/* Take the plan schedule, k, b, streams, steps per kernel from here on: every queue drained,
 * the buffers of the old plan freed and the new one's allocated. */
static inline void tpace_plan_switch(tpace_rt *r, int schedule, long k, long b, long streams, int fuse)
{
    tpace_plan *p = &r->plan;
    tpace_dev_sync(r);
    tpace_buffers_free(r);
    p->schedule = schedule;
    p->k = (int)TPACE_MIN(k, 1L << 20);
    p->b = b;
    p->streams = (int)streams;
    p->fuse_wanted = fuse;
    tpace_plan_derive(p);
    if (p->slots + 1 > p->queues)
        tpace_fail(p, "internal error: a re-plan needs more queues than were set up (please report it)");
    if (p->budget && p->device_bytes > p->budget)
        tpace_refuse_plan(p);
    tpace_buffers_alloc(r);
    r->started = 0;
}

/* Every reduction's per-step results back at the identity, on the host and the device (a run
 * that starts over). */
static inline void tpace_reductions_reset(tpace_rt *r)
{
    const size_t steps = (size_t)TPACE_MAX(r->plan.s.steps, 1L);
    for (int i = 0; i < r->nreductions; i++) {
        tpace_reduction *red = &r->reductions[i];
        const double id = tpace_red_identity(red->op);
        for (size_t t = 0; t < steps; t++) {
            if (red->elem == sizeof(float))
                ((float *)red->partial)[t] = (float)id;
            else
                ((double *)red->partial)[t] = id;
        }
        if (red->dev != NULL)
            tpace_dev_upload(r, red->dev, red->partial, steps * red->elem, 0);
    }
    tpace_dev_sync(r);
}

/* Re-plan with the refitted model for the `left` steps from here on: take the plan it prefers
 * where that saves more than `spent` seconds (the work a restart throws away) and 1 % of the
 * time left, and say so (`after`: when; `found`: what was measured). Returns 1 when the plan
 * changed. */
static inline int tpace_replan_with(tpace_rt *r, const tpace_model *refit, long left, double spent, const char *after,
                                    const char *found)
{
    tpace_plan *p = &r->plan;
    tpace_model scratch;
    const tpace_model *m = tpace_model_for_replan(refit, p->fuse_set, (tpace_u64)p->fuse_wanted, &scratch);
    if (p->replans > 0 && !p->fuse_set) {
        /* A later check searches the depths the run measured and those between them only
         * (tpace_model_replan_depths says why). */
        if (m != &scratch) {
            scratch = *m;
            m = &scratch;
        }
        scratch.search_depths = tpace_model_replan_depths(refit, p->fuse);
    }
    tpace_model_choice c = tpace_plan_search(p, m, left, -1, 0, 0, 0, p->fuse_set);
    const double now = tpace_plan_predict(p, refit, left);
    char before[160], note[900];
    tpace_plan_words(p, before, sizeof before);
    *p->model = *refit;
    p->replans++;
    if (!c.found || !(c.seconds + spent < now * 0.99)) {
        snprintf(note, sizeof note, "checked %s: %s; refitted, the model keeps %s (%.3g s predicted for the %ld steps "
                                    "left)", after, found, before, now, left);
        tpace_replan_say(p, note);
        return 0;
    }
    tpace_plan_switch(r, tpace_schedule_of_model[c.best.schedule], (long)c.best.k, (long)c.best.b,
                      (long)c.best.streams, (int)c.fuse);
    char to[160];
    tpace_plan_words(p, to, sizeof to);
    snprintf(note, sizeof note, "re-planned %s: %s; %s became %s (%.3g s predicted for the %ld steps left, %.3g s "
                                "for the old plan)",
             after, found, before, to, c.seconds, left, now);
    tpace_replan_say(p, note);
    return 1;
}

/* Seconds from stamp `from` to stamp `to` (both done). */
static inline double tpace_stamps_s(tpace_rt *r, int from, int to)
{
    return tpace_dev_stamp_ms(r, from, to) * 1e-3;
}

/* Planes of the first block's chunk `ch` that step i's window covers (the whole grid's planes). */
static inline long tpace_window_rows(const tpace_plan *p, const tpace_chunk *ch, int i)
{
    long from = 0, to = 0;
    tpace_window(p, ch, i, 0, 0, 0, &from, &to);
    from = TPACE_MAX(from, p->s.lo);
    to = TPACE_MIN(to, p->s.lo + p->s.n);
    return TPACE_MAX(to - from, 0L);
}

/* The step of the run's first chunk where its kernels are timed apart from those before: the
 * first group of steps whose window is at most half as wide as the first (tpace_mc_second_part;
 * mmtb's first windows narrow step by step), so that the check measures the depth at two
 * widths. -1 where the windows keep their width. */
static inline int tpace_first_chunk_split(const tpace_plan *p, const tpace_chunk *ch)
{
    const long first = tpace_window_rows(p, ch, 0);
    for (int i = 0, len = 1; i < ch->kb; i += len) {
        len = tpace_group_steps(p, ch, i);
        if (i > 0 && tpace_mc_second_part((tpace_u64)first, (tpace_u64)tpace_window_rows(p, ch, i)))
            return i;
    }
    return -1;
}

/* The model's time for steps [from, to) of the first chunk `first` (its points, their price at
 * each window's width, the windows and their widths summed) with model m. */
typedef struct tpace_first_part {
    double points, priced, rows_sum, windows;
} tpace_first_part;

static inline tpace_first_part tpace_first_chunk_part(const tpace_plan *p, const tpace_model *m,
                                                     const tpace_chunk *first, int from, int to)
{
    tpace_first_part q;
    memset(&q, 0, sizeof q);
    for (int i = from; i < to; i++) {
        const long rows = tpace_window_rows(p, first, i);
        if (rows == 0)
            continue;
        const double n = (double)rows * (double)p->s.plane;
        q.points += n;
        q.priced += n * tpace_mc_point_cost(m, (tpace_u64)p->fuse, (tpace_u64)p->s.plane, (tpace_u64)rows);
        q.rows_sum += (double)rows;
        q.windows += 1.0;
    }
    return q;
}

/* Two parts of the first chunk as one. */
static inline tpace_first_part tpace_first_parts_joined(tpace_first_part a, tpace_first_part b)
{
    a.points += b.points;
    a.priced += b.priced;
    a.rows_sum += b.rows_sum;
    a.windows += b.windows;
    return a;
}

/* The kernels of one part of the first chunk as the refit takes them: `seconds` measured,
 * `launches` issued. */
static inline tpace_measured tpace_first_part_measured(const tpace_plan *p, const tpace_model *m,
                                                      tpace_first_part q, double seconds, double launches)
{
    tpace_measured x;
    memset(&x, 0, sizeof x);
    x.kernel_s = seconds;
    x.kernel_pred_s = q.priced + launches * m->launch_s;
    x.kernel_depth = p->fuse;
    x.kernel_points = q.points;
    x.kernel_launches = launches;
    x.kernel_rows = q.windows > 0.0 ? (tpace_u64)(q.rows_sum / q.windows + 0.5) : (tpace_u64)p->b;
    x.kernel_plane = (tpace_u64)p->s.plane;
    return x;
}

/* After the first chunk of the first block, its kernels issued and the second chunk brought in
 * (nothing written back yet): its upload and kernels, measured, against the model's prediction
 * of them. Returns 1 when the run starts over with another plan (the queues drained, the
 * reductions reset, the next chunk is the first one again). */
static inline int tpace_replan_first_chunk(tpace_rt *r, const tpace_chunk *first)
{
    tpace_plan *p = &r->plan;
    r->calibrating = 0;
    int schedule = -1, fuse = 1;
    long k = 0, b = 0, streams = 0;
    if (tpace_replan_to(p, "chunk", &schedule, &k, &b, &streams, &fuse)) {
        char before[160], note[160];
        tpace_plan_words(p, before, sizeof before);
        tpace_plan_switch(r, schedule, k, b, streams, fuse);
        tpace_plan_words(p, note, sizeof note);
        char say[400];
        snprintf(say, sizeof say, "re-planned after the first chunk (TPACE_REPLAN_TO): %s became %s", before, note);
        tpace_replan_say(p, say);
        p->replans++;
    } else {
        const tpace_trace *tr = &r->trace;
        const tpace_trace_op *up = NULL, *kern = NULL;
        for (long i = 0; i < tr->n; i++) {
            const tpace_trace_op *o = &tr->ops[i];
            /* (the last ones: a run that started over has the first attempt's too) */
            if (o->c == first->c && o->t == first->t && o->what == TPACE_TRACE_UPLOAD)
                up = o;
            if (o->c == first->c && o->t == first->t && o->what == TPACE_TRACE_KERNELS)
                kern = o;
        }
        if (p->model == NULL || !tr->on || kern == NULL || tpace_replan_forced())
            return 0;
        tpace_dev_stamp_wait(r, kern->to);
        if (up != NULL)
            tpace_dev_stamp_wait(r, up->to);
        /* The model's time for the same work: the chunk's points in its windows at the plan's cost
         * of a point, its launches, its upload (and the copies that start the swap buffers). */
        tpace_model scratch;
        const tpace_model *m = tpace_model_fusing(p->model, (tpace_u64)p->fuse_wanted, &scratch);
        /* Each step's window priced at its own width: the first chunk's windows narrow step by step
         * (mmtb: b - skew x i planes), where a point costs more than on the plan's b planes (heat-3D
         * at b=24, k=64 on an H100: 12.5 planes on average; priced at 24 its kernels measured 1.67
         * times the prediction, and the re-plan left for b=72, which the H100's own profile prices
         * no faster; bench/RESULTS.md, eleventh session). The figure the refit takes is that of the
         * windows' mean width (a launch's cost per row kept goes as 1 / width, and a window's points
         * as its width: the mean of the widths), not of b. */
        /* Its kernels in two parts where the windows narrow (tpace_first_chunk_split): the depth
         * at two widths. Each window priced once; the whole is the two parts joined. */
        const int split = r->first_split > 0 && r->first_split_stamp >= 0 ? r->first_split : 0;
        const tpace_first_part head = tpace_first_chunk_part(p, m, first, 0, split ? split : first->kb);
        tpace_first_part whole = head;
        tpace_measured wide, narrow;
        if (split) {
            const tpace_first_part tail = tpace_first_chunk_part(p, m, first, split, first->kb);
            whole = tpace_first_parts_joined(head, tail);
            wide = tpace_first_part_measured(p, m, head, tpace_stamps_s(r, kern->from, r->first_split_stamp),
                                             (double)r->first_split_launches);
            narrow = tpace_first_part_measured(p, m, tail, tpace_stamps_s(r, r->first_split_stamp, kern->to),
                                               (double)(r->launches - r->first_split_launches));
        }
        tpace_measured x = tpace_first_part_measured(p, m, whole, tpace_stamps_s(r, kern->from, kern->to),
                                                     (double)r->launches);
        /* After a switch (the run started over) the first chunk's upload is not the link's rate:
         * on an H100 it ran at 25.5 GB/s against 52.9 before the switch, the device's memory just
         * freed and taken again (bench/RESULTS.md, 2026-11-26, eighth session, call 9); the
         * link keeps what the first check measured, and the kernels alone are checked. */
        const int after_switch = p->replans > 0;
        if (up != NULL && !after_switch) {
            x.upload_s = tpace_stamps_s(r, up->from, up->to);
            x.upload_pred_s = (double)up->bytes / m->h2d_bps + 2.0 * (double)up->copied / m->memory_bps;
        }
        x.wall_s = x.kernel_s + x.upload_s;
        x.wall_pred_s = x.kernel_pred_s + x.upload_pred_s;
        char found[640], parts[160] = "";
        if (split)
            snprintf(parts, sizeof parts, "; %.2fx on its windows of %llu planes on average, %.2fx on its narrower ones "
                                          "of %llu",
                     tpace_mc_ratio(wide.kernel_s, wide.kernel_pred_s), (unsigned long long)wide.kernel_rows,
                     tpace_mc_ratio(narrow.kernel_s, narrow.kernel_pred_s), (unsigned long long)narrow.kernel_rows);
        if (!after_switch)
            snprintf(found, sizeof found, "its upload and kernels took %.3g s, profile %s predicts %.3g s (kernels "
                                          "%.2fx on windows of %llu planes on average%s, upload %.2fx, taken for the link "
                                          "both ways)",
                     x.wall_s, p->model->machine, x.wall_pred_s, tpace_mc_ratio(x.kernel_s, x.kernel_pred_s),
                     (unsigned long long)x.kernel_rows, parts, tpace_mc_ratio(x.upload_s, x.upload_pred_s));
        else
            snprintf(found, sizeof found, "its kernels took %.3g s, profile %s predicts %.3g s (%.2fx on windows of %llu "
                                          "planes on average%s; its upload, the first after a switch, not counted)",
                     x.kernel_s, p->model->machine, x.kernel_pred_s, tpace_mc_ratio(x.kernel_s, x.kernel_pred_s),
                     (unsigned long long)x.kernel_rows, parts);
        if (!tpace_model_kernels_off(&x, TPACE_REPLAN_TOLERANCE, TPACE_REPLAN_KERNEL_TOLERANCE)) {
            char say[200];
            snprintf(say, sizeof say, "the first chunk as predicted (%.2fx; kernels %.2fx)",
                     tpace_mc_ratio(x.wall_s, x.wall_pred_s), tpace_mc_ratio(x.kernel_s, x.kernel_pred_s));
            tpace_replan_say(p, say);
            return 0;
        }
        tpace_model refit;
        if (split) {
            wide.upload_s = x.upload_s;
            wide.upload_pred_s = x.upload_pred_s;
            tpace_model_refit_parts(p->model, &wide, &narrow, &refit);
        } else {
            tpace_model_refit(p->model, &x, &refit);
        }
        /* Starting over throws away what ran so far. */
        if (!tpace_replan_with(r, &refit, p->s.steps, tpace_now() - r->start, "after the first chunk", found))
            return 0;
    }
    tpace_dev_sync(r);
    tpace_reductions_reset(r);
    r->next_t = 0;
    r->started = 0;
    r->launches = 0;
    /* The new plan's first chunk is checked too (another depth measured, say), up to the most
     * re-plans a run makes; then its first block. */
    r->calibrating = p->replans < TPACE_REPLANS_MAX && p->nchunks > 1 && !tpace_replan_forced();
    r->rechecking = p->replan && p->replans < TPACE_REPLANS_MAX && p->s.steps > p->k;
    return 1;
}

/* Union of the intervals of the trace's operations of kind `what` (and `also`, or -1) in the
 * block that starts at step t, in seconds, those of chunks before `from_chunk` left out; *first
 * and *last widen to the extent of them all. */
static inline double tpace_ops_busy(tpace_rt *r, long t, int what, int also, long from_chunk, double *first,
                                    double *last)
{
    const tpace_trace *tr = &r->trace;
    tpace_span *v = (tpace_span *)malloc((size_t)TPACE_MAX(tr->n, 1L) * sizeof *v);
    if (v == NULL)
        tpace_fail(&r->plan, "host memory ran out checking the model against the first block");
    long n = 0;
    for (long i = 0; i < tr->n; i++) {
        const tpace_trace_op *o = &tr->ops[i];
        if (o->t != t || (o->what != what && o->what != also))
            continue;
        v[n].from = tpace_dev_stamp_ms(r, tr->origin, o->from) * 1e-3;
        v[n].to = tpace_dev_stamp_ms(r, tr->origin, o->to) * 1e-3;
        *first = TPACE_MIN(*first, v[n].from);
        *last = TPACE_MAX(*last, v[n].to);
        if (o->c >= from_chunk)
            n++;
    }
    const double busy = tpace_spans_length(v, n);
    free(v);
    return busy;
}

/* After the first block (every queue drained), when more blocks follow: the block's time and its
 * kernels, uploads and downloads, measured, against the model's prediction of them; the steps
 * left re-planned where they differ by more than the tolerance. */
static inline void tpace_replan_first_block(tpace_rt *r, long t, int kb)
{
    tpace_plan *p = &r->plan;
    r->rechecking = 0;
    int schedule = -1, fuse = 1;
    long k = 0, b = 0, streams = 0;
    const long left = p->s.steps - (t + kb);
    if (tpace_replan_to(p, "block", &schedule, &k, &b, &streams, &fuse)) {
        char before[160], after[160], say[400];
        tpace_plan_words(p, before, sizeof before);
        tpace_plan_switch(r, schedule, k, b, streams, fuse);
        tpace_plan_words(p, after, sizeof after);
        snprintf(say, sizeof say, "re-planned after block 1 (TPACE_REPLAN_TO): %s became %s", before, after);
        tpace_replan_say(p, say);
        p->replans++;
    } else if (p->model != NULL && r->trace.on && left > 0 && !tpace_replan_forced()) {
        double first = 1e300, last = -1e300;
        tpace_measured x;
        memset(&x, 0, sizeof x);
        /* After a switch the first chunk's upload is not the link's rate (tpace_replan_first_chunk):
         * the uploads are timed from the second chunk on (the block's wall from its first). */
        const long uploads_from = p->replans > 0 ? 1 : 0;
        x.kernel_s = tpace_ops_busy(r, t, TPACE_TRACE_KERNELS, TPACE_TRACE_HANDOVER, 0, &first, &last);
        x.upload_s = tpace_ops_busy(r, t, TPACE_TRACE_UPLOAD, -1, uploads_from, &first, &last);
        x.download_s = tpace_ops_busy(r, t, TPACE_TRACE_DOWNLOAD, -1, 0, &first, &last);
        x.wall_s = last > first ? last - first : 0.0;
        /* The model's block (predict.rs `block` and `pipeline`): the kernels' time, and each
         * copy's, stretched where uploads and downloads share the link. */
        tpace_model scratch;
        const tpace_model *m = tpace_model_fusing(p->model, (tpace_u64)p->fuse_wanted, &scratch);
        const tpace_model_run run = {(tpace_u64)p->s.n, (tpace_u64)p->s.plane, (tpace_u64)p->s.steps};
        tpace_model_config c = {tpace_model_of_schedule[p->schedule], (tpace_u64)p->k, (tpace_u64)p->b,
                                (tpace_u64)p->streams};
        c = tpace_mc_normalise(&run, c);
        const tpace_u64 chunks = tpace_mc_count(run.n, c.b), slots = tpace_mc_slots_for(c, chunks);
        const tpace_mc_block blk = tpace_mc_block_of(m, &run, c, chunks, (tpace_u64)kb, 0);
        const double cn = (double)chunks;
        x.kernel_pred_s =
            tpace_mc_kernels_s(m, &run, c, chunks, (double)blk.points, (double)blk.launches, (double)blk.d2d);
        x.kernel_depth = (int)tpace_mc_fuse_for(m, c, chunks);
        x.kernel_points = (double)blk.points;
        x.kernel_launches = (double)blk.launches;
        x.kernel_copy_s = 2.0 * (double)blk.d2d / m->memory_bps * tpace_mc_ratio(x.kernel_s, x.kernel_pred_s);
        x.kernel_rows = c.b;
        x.kernel_plane = run.plane;
        const double t_in = (double)blk.h2d / cn / m->h2d_bps, t_out = (double)blk.d2h / cn / m->d2h_bps;
        double up = t_in, down = t_out;
        if (slots > 1 && chunks > 1)
            tpace_mc_cycle_parts(m, slots, (double)blk.h2d / cn, x.kernel_pred_s / cn, (double)blk.d2h / cn,
                                 blk.out_first, &up, &down);
        x.upload_pred_s = (uploads_from > 0 ? 0.0 : t_in) + (cn - 1.0) * up;
        x.download_pred_s = t_out + (cn - 1.0) * down;
        x.wall_pred_s = tpace_mc_block_time(m, &run, c, chunks, slots, &blk);
        char found[400];
        snprintf(found, sizeof found, "it took %.3g s, profile %s predicts %.3g s (kernels %.2fx, uploads %.2fx, "
                                      "downloads %.2fx)",
                 x.wall_s, p->model->machine, x.wall_pred_s, tpace_mc_ratio(x.kernel_s, x.kernel_pred_s),
                 tpace_mc_ratio(x.upload_s, x.upload_pred_s), tpace_mc_ratio(x.download_s, x.download_pred_s));
        if (!tpace_model_off(&x, TPACE_REPLAN_TOLERANCE)) {
            char say[200];
            snprintf(say, sizeof say, "block %ld as predicted (%.2fx)", r->blocks_done,
                     tpace_mc_ratio(x.wall_s, x.wall_pred_s));
            tpace_replan_say(p, say);
        } else {
            tpace_model refit;
            char after[64];
            snprintf(after, sizeof after, "after block %ld", r->blocks_done);
            tpace_model_refit(p->model, &x, &refit);
            /* A plan taken after a block is checked after its own first block too (its depth
             * measured on its chunks, say), up to the most re-plans a run makes: one taken after
             * block 1 with a spec sheet, four steps a kernel priced from two measured on chunks
             * of 13 planes, ran its 426 steps 1.13 times as long as the best plan (heat-3D, H100,
             * bench/RESULTS.md, eleventh session, call 5). */
            if (tpace_replan_with(r, &refit, left, 0.0, after, found) && p->replans < TPACE_REPLANS_MAX &&
                left > p->k) {
                r->rechecking = 1;
                return; /* (the timeline kept for that check) */
            }
        }
    }
    /* The timeline is kept only for TPACE_TRACE. */
    if (r->trace.path == NULL && r->trace.on) {
        free(r->trace.ops);
        r->trace.ops = NULL;
        r->trace.n = r->trace.cap = 0;
        r->trace.on = 0;
    }
}

/* Finish the chunk whose kernels were issued last and bring the next one in.
 * max_tau is the largest window trail of any sweep (mmtb). Returns 0 when all
 * steps are done. */
static inline int tpace_next(tpace_rt *r, tpace_chunk *ch, long max_tau)
{
    const tpace_plan *p = &r->plan;
    tpace_chunk prev = r->cur;
    int have_prev = r->started;
    tpace_chunk next;
    memset(&next, 0, sizeof next);
    tpace_dev_activate(r);
    /* The kernels issued for the previous chunk end here on its queue. */
    if (have_prev)
        tpace_trace_done(r, &prev, TPACE_TRACE_KERNELS, r->trace.kernels_from, 0);
    if (!have_prev) {
        if (r->next_t >= p->s.steps)
            return 0;
        next.t = r->next_t;
        next.c = 0;
    } else if (prev.c + 1 < p->nchunks) {
        next.t = prev.t;
        next.c = prev.c + 1;
    } else {
        /* The block is done: its last chunk goes back, then every queue drains,
         * since the next block reads planes this block writes back. Blockwise, the
         * caller drains the queues (of every device) and starts the next block. */
        tpace_chunk_out(r, &prev, max_tau);
        r->next_t = prev.t + prev.kb;
        r->started = 0;
        r->blocks_done++;
        if (r->blockwise)
            return 0;
        tpace_dev_sync(r);
        if (r->next_t >= p->s.steps)
            return 0;
        if (r->rechecking) /* the first block against the model; the next block may take another plan */
            tpace_replan_first_block(r, prev.t, prev.kb);
        have_prev = 0;
        next.t = r->next_t;
        next.c = 0;
    }
    next.kb = tpace_block_steps(p, next.t);
    next.last_block = next.t + next.kb >= p->s.steps;
    next.slot = (int)(next.c % p->slots);
    next.out_q = tpace_out_queue(p, next.slot);
    next.base = tpace_chunk_base(p, next.c, next.kb);
    /* After the run's first chunk, nothing written back yet: the model checked against it. */
    const int check = r->calibrating && have_prev && prev.c == 0 && prev.t == 0;
    if (p->schedule == TPACE_MMTB || p->schedule == TPACE_INCORE) {
        tpace_mmtb_in(r, &next, have_prev ? &prev : NULL);
        if (check && tpace_replan_first_chunk(r, &prev))
            return tpace_next(r, ch, max_tau); /* the run starts over with the new plan */
        if (have_prev)
            tpace_chunk_out(r, &prev, max_tau);
    } else {
        /* The next chunk's upload before the check, where it has a queue of its own (it reads no
         * plane the previous chunk writes back). */
        const int early = check && prev.slot != next.slot;
        if (early)
            tpace_mm_in(r, &next);
        if (check && tpace_replan_first_chunk(r, &prev))
            return tpace_next(r, ch, max_tau);
        if (have_prev)
            tpace_chunk_out(r, &prev, max_tau);
        if (!early)
            tpace_mm_in(r, &next);
    }
    r->trace.kernels_from = tpace_trace_from(r, next.slot); /* once its inputs are there */
    r->cur = next;
    r->started = 1;
    *ch = next;
    return 1;
}

/* ---- The pipeline's steps: the same loop for every program and target. ---- */

/* The largest window trail of any sweep (mmtb: how far behind its chunk the last
 * update of a block ends). */
static inline long tpace_max_tau(const tpace_sweep *sweeps, int nsweeps)
{
    long tau = 0;
    for (int s = 0; s < nsweeps; s++)
        tau = TPACE_MAX(tau, sweeps[s].tau);
    return tau;
}

/* Each array's device buffer for steps [i, i + len) of chunk ch's block: its chunk
 * buffer; for a swapped array the one of its two that holds step i; for the swap's
 * folded temporary the other one, which the step's sweep writes. Where the program
 * exchanges pointers at the end of each step, the buffers are those of the storage
 * each pointer names at that step (the device buffers stay with the storage: every
 * upload and download is the host array's own). */
static inline void tpace_step_buffers(const tpace_rt *r, const tpace_chunk *ch, int i, int len, void **buf)
{
    for (int a = 0; a < r->narrays; a++) {
        const int at = tpace_rotated(r->plan.s.rotate, a, ch->t + i);
        const tpace_array *arr = &r->arrays[at];
        if (arr->swap)
            buf[a] = tpace_swap_buffer(r, ch, at, i);
        else if (arr->transfer == TPACE_FOLDED)
            buf[a] = tpace_swap_buffer(r, ch, arr->fold_of, i + len);
        else
            buf[a] = tpace_on_device(arr) ? arr->slot[ch->slot] : NULL;
    }
}

/* Steps [i, i + len) of chunk ch's block in one fused kernel: the fused sweep's rows
 * in the steps' windows, its tiles across the other axes. */
static inline void tpace_launch_fused(tpace_rt *r, const tpace_chunk *ch, int i, int len, const tpace_sweep *sweeps,
                                      const tpace_fused *fused, tpace_launch *l)
{
    const tpace_sweep *sw = &sweeps[fused->sweep];
    long tiles = 1;
    for (int d = 1; d < r->plan.s.rank; d++) {
        l->tp_lo[d] = sw->box_lo[d];
        l->tp_hi[d] = sw->box_hi[d];
        if (l->tp_lo[d] >= l->tp_hi[d])
            return;
        const long keep = fused->tile[d - 1] - 2L * len * fused->inner_reach[d - 1]; /* columns a block keeps */
        tiles *= (TPACE_MAX(l->tp_hi[d] - l->tp_lo[d], 1L) + keep - 1) / keep;
    }
    /* Segments for one wave: every block of the launch runs at once. Measured on the H100
     * (Jacobi-2D, 61440 columns, mmtb k=128, 8 steps a kernel, 4 blocks a multiprocessor,
     * 2026-11-25): the chunks' kernels took 0.1312 / 0.1344 / 0.1416 / 0.1565 s aiming at
     * 512 / 1024 / 2048 / 4096 blocks (b = 1586), 0.1433 / 0.1514 / 0.1678 / 0.1847 s
     * (b = 793): a segment recomputes rows below its own, so the fewer the better, down
     * to a wave (528 there). Where the multiprocessors are unknown, the model's count. */
    const long per_sm = len <= fused->most_steps ? fused->blocks_per_sm[len] : 0;
    long blocks = r->plan.fuse_blocks;
    if (blocks == 0)
        blocks = r->units > 0 && per_sm > 0 ? r->units * per_sm : (long)TPACE_MC_FUSE_BLOCKS;
    tpace_fuse_args f;
    if (tpace_fuse_setup(r, ch, i, len, sw->tau, sw->box_lo[0], sw->box_hi[0], tiles, fused->reach, blocks,
                         fused->array, &f) == 0)
        return;
    l->tp_lo[0] = f.tp_seg_lo;
    l->tp_hi[0] = f.tp_seg_hi;
    l->tp_fuse = &f;
    fused->launch(r, l);
    r->launches++;
    l->tp_fuse = NULL;
}

/* The chunks tpace_next brings in, until it stops (after every block, or after each
 * block for an executor that runs blockwise): for each, every step of its block and
 * every sweep, the sweep's launcher on the part of its box inside the step's window;
 * where kernels fuse steps, groups of steps go to the fused launcher
 * (tpace_group_steps says how many). `in` reaches every launcher as tp_in. */
static inline void tpace_run_block(tpace_rt *r, const tpace_sweep *sweeps, int nsweeps, const tpace_fused *fused,
                                   const void *in, long max_tau)
{
    const tpace_plan *p = &r->plan;
    void **buf = (void **)calloc((size_t)TPACE_MAX(r->narrays, 1), sizeof *buf);
    void **reduced = (void **)calloc((size_t)TPACE_MAX(r->nreductions, 1), sizeof *reduced);
    if (buf == NULL || reduced == NULL)
        tpace_fail(p, "host memory ran out starting the pipeline");
    for (int i = 0; i < r->nreductions; i++)
        reduced[i] = r->reductions[i].dev;
    tpace_launch l;
    memset(&l, 0, sizeof l);
    l.tp_buf = buf;
    l.tp_reduced = reduced;
    l.tp_dim_lo = p->s.dim_lo;
    l.tp_dim_n = p->s.dim_n;
    l.tp_in = in;
    tpace_chunk ch;
    while (tpace_next(r, &ch, max_tau)) {
        l.tp_q = ch.slot;
        l.tp_base = ch.base;
        /* The run's first chunk, checked against the model: its kernels timed in two parts where
         * its windows narrow (tpace_replan_first_chunk). */
        const int first = r->calibrating && ch.c == 0 && ch.t == 0 && r->trace.on;
        if (first) {
            r->first_split = tpace_first_chunk_split(p, &ch);
            r->first_split_stamp = -1;
        }
        for (int i = 0, len = 1; i < ch.kb; i += len) {
            len = tpace_group_steps(p, &ch, i);
            if (first && i == r->first_split) {
                r->first_split_stamp = tpace_trace_from(r, ch.slot);
                r->first_split_launches = r->launches;
            }
            tpace_step_buffers(r, &ch, i, len, buf);
            l.tp_step = ch.t + i;
            l.tp_steps = len;
            if (len > 1) {
                tpace_launch_fused(r, &ch, i, len, sweeps, fused, &l);
                continue;
            }
            for (int s = 0; s < nsweeps; s++) {
                const tpace_sweep *sw = &sweeps[s];
                if (sw->launch == NULL) /* the copy a swap replaces */
                    continue;
                long from, to;
                int empty = 0;
                tpace_window_in_slab(r, &ch, i, sw->extra_lo, sw->extra_hi, sw->tau, &from, &to);
                for (int d = 0; d < p->s.rank; d++) {
                    l.tp_lo[d] = d == 0 ? TPACE_MAX(sw->box_lo[0], from) : sw->box_lo[d];
                    l.tp_hi[d] = d == 0 ? TPACE_MIN(sw->box_hi[0], to) : sw->box_hi[d];
                    empty |= l.tp_lo[d] >= l.tp_hi[d];
                }
                if (empty)
                    continue;
                if (sw->reduces)
                    tpace_count_own(r, &ch, l.tp_lo[0], l.tp_hi[0], &l.tp_count_lo, &l.tp_count_hi);
                sw->launch(r, &l);
                r->launches++;
            }
        }
    }
    free(buf);
    free(reduced);
}

/* Run the pipeline: for every chunk the executor brings in (tpace_next), every step of
 * its block and every sweep, the sweep's launcher on the part of its box inside the
 * step's window. (Blockwise, one block: the scale-out part runs the blocks.) */
static inline void tpace_run(tpace_rt *r, const tpace_sweep *sweeps, int nsweeps, const tpace_fused *fused,
                             const void *in)
{
    tpace_run_block(r, sweeps, nsweeps, fused, in, tpace_max_tau(sweeps, nsweeps));
}

/* One line on stderr that people read and `tpace run` parses. */
static inline void tpace_report_devices(const tpace_plan *p, int devices, int ranks)
{
    double points = (double)p->s.n * (double)p->s.plane * (double)p->s.steps;
    double glups = p->seconds > 0 ? points / p->seconds * 1e-9 : 0.0;
    fprintf(stderr,
            "tpace: %s: schedule=%s k=%d b=%ld streams=%d chunks=%ld fuse=%d steps=%ld points=%.0f device_bytes=%zu "
            "seconds=%.6f glups=%.3f predicted_seconds=%.9g devices=%d ranks=%d up_bytes=%zu down_bytes=%zu replans=%d "
            "(%s%s%s)\n",
            p->s.where, tpace_schedule_names[p->schedule], p->k, p->b, p->streams, p->nchunks, p->fuse, p->s.steps, points,
            p->device_bytes, p->seconds, glups, p->predicted, devices, ranks, p->up_bytes, p->down_bytes, p->replans,
            p->chosen_by, p->replan_note[0] ? "; " : "", p->replan_note);
}

/* The report of one executor on one device. */
static inline void tpace_report(const tpace_plan *p)
{
    tpace_report_devices(p, 1, 1);
}

/* The results in place: the reductions' per-step results back, the folded temporaries'
 * faces restored, the pipeline's time taken, the trace written. */
static inline void tpace_finish(tpace_rt *r)
{
    r->finished = 1;
    tpace_reductions_download(r);
    /* The folded temporaries' faces go back once their last download is done. */
    for (int a = 0; a < r->narrays; a++) {
        tpace_array *arr = &r->arrays[a];
        if (arr->fold_keep == NULL)
            continue;
        tpace_dev_sync(r);
        tpace_fold_gaps(r, arr, TPACE_GAPS_RESTORE);
        free(arr->fold_keep);
        arr->fold_keep = NULL;
    }
    r->plan.seconds = tpace_now() - r->start;
    tpace_trace_end(r);
}

/* Wait for the last transfers, free the device buffers and report. */
static inline void tpace_end(tpace_rt *r)
{
    if (!r->finished)
        tpace_finish(r);
    tpace_buffers_free(r);
    tpace_dev_end(r);
    if (!r->blockwise)
        tpace_report(&r->plan);
    free(r->plan.model);
    r->plan.model = NULL;
}


/* ---- TPACE_BENCH_PLANS="PLAN;PLAN;...": for benchmarks, one pipeline run once under each plan
 * in one process, from the arrays as each run leaves them (so the program's set-up, which on a
 * large grid takes longer than the pipeline, runs once), each with its report line. A PLAN is
 * `model` (the model's choice) or SCHEDULE:K:B:STREAMS:FUSE (B a width, `-` for the model's at
 * that k and streams, `-/2` for half of that, `-/4` a quarter...; FUSE `-` for the model's depth), then optionally
 * `,NAME=VALUE` settings for that run alone (`,TPACE_REPLAN=0`, `,TPACE_MACHINE=FILE`; an empty
 * VALUE unsets NAME). A plan that does not fit is said and skipped. The arrays and reductions end
 * as the last run leaves them: timing only, not the program's answer (bench/gpu.sh uses it). ---- */

/* Set the bench overrides for one PLAN (its text is modified); returns 0 when it does not read. */
static inline int tpace_bench_setup(char *plan)
{
    static char slot[TPACE_BENCH_VARS][32];
    tpace_bench_env.n = 0;
    tpace_bench_divisor = 0;
    char *extra = strchr(plan, ',');
    if (extra != NULL)
        *extra++ = '\0';
    static const char *const vars[5] = {"TPACE_SCHEDULE", "TPACE_K", "TPACE_CHUNK", "TPACE_STREAMS", "TPACE_FUSE"};
    char *field[5] = {NULL, NULL, NULL, NULL, NULL};
    if (strcmp(plan, "model") != 0) {
        char *at = plan;
        for (int i = 0; i < 5; i++) {
            field[i] = at;
            char *colon = strchr(at, ':');
            if ((colon == NULL) != (i == 4))
                return 0;
            if (colon != NULL) {
                *colon = '\0';
                at = colon + 1;
            }
        }
    }
    for (int i = 0; i < 5; i++) {
        const char *v = field[i];
        if (v != NULL && i == 2 && strncmp(v, "-/", 2) == 0) {
            tpace_bench_divisor = strtol(v + 2, NULL, 10);
            if (tpace_bench_divisor < 1)
                return 0;
            v = NULL;
        } else if (v != NULL && strcmp(v, "-") == 0) {
            v = NULL;
        }
        snprintf(slot[i], sizeof slot[i], "%s", v ? v : "");
        tpace_bench_env.name[tpace_bench_env.n] = vars[i];
        tpace_bench_env.value[tpace_bench_env.n++] = v ? slot[i] : NULL;
    }
    while (extra != NULL && *extra && tpace_bench_env.n < TPACE_BENCH_VARS) {
        char *next = strchr(extra, ',');
        if (next != NULL)
            *next++ = '\0';
        char *eq = strchr(extra, '=');
        if (eq == NULL)
            return 0;
        *eq = '\0';
        tpace_bench_env.name[tpace_bench_env.n] = extra;
        tpace_bench_env.value[tpace_bench_env.n++] = eq[1] ? eq + 1 : NULL;
        extra = next;
    }
    return 1;
}

/* One run of TPACE_BENCH_PLANS under the overrides set: 1 when it ran, 0 when its plan was
 * refused (the refusal said). */
static inline int tpace_bench_run(const tpace_shape *shape, tpace_array *arrays, int narrays, tpace_reduction *reds,
                                  int nreds, const tpace_sweep *sweeps, int nsweeps, const tpace_fused *fused,
                                  const void *in)
{
    static tpace_rt tp; /* static: kept across the longjmp of a refusal */
    if (setjmp(tpace_bench_jump) != 0) {
        tpace_bench_refusing = 0;
        free(tp.plan.model);
        tp.plan.model = NULL;
        return 0;
    }
    tpace_bench_refusing = 1;
    tpace_begin(&tp, shape, arrays, narrays, reds, nreds);
    tpace_bench_refusing = 0;
    tpace_run(&tp, sweeps, nsweeps, fused, in);
    tpace_end(&tp);
    return 1;
}

/* Run the pipeline under every plan of TPACE_BENCH_PLANS (one device); 0 when it is unset. */
static inline int tpace_bench_plans(const tpace_shape *shape, tpace_array *arrays, int narrays, tpace_reduction *reds,
                                    int nreds, const tpace_sweep *sweeps, int nsweeps, const tpace_fused *fused,
                                    const void *in)
{
    const char *list = getenv("TPACE_BENCH_PLANS");
    if (list == NULL || *list == '\0')
        return 0;
    int ran = 0, count = 0;
    for (const char *at = list; *at;) {
        while (*at == ';' || *at == ' ' || *at == '\t' || *at == '\n')
            at++;
        const size_t len = strcspn(at, "; \t\n");
        if (len == 0)
            break;
        char said[512], plan[512];
        snprintf(said, sizeof said, "%.*s", (int)TPACE_MIN(len, sizeof said - 1), at);
        at += len;
        snprintf(plan, sizeof plan, "%s", said);
        count++;
        if (!tpace_bench_setup(plan)) {
            char msg[700];
            snprintf(msg, sizeof msg, "TPACE_BENCH_PLANS: `%s` is not model or SCHEDULE:K:B:STREAMS:FUSE[,NAME=VALUE...]",
                     said);
            tpace_stop(shape->where, msg);
        }
        fprintf(stderr, "tpace: %s: bench plan %d: %s\n", shape->where, count, said);
        fflush(stderr);
        /* The reductions' results of the run before: only the last run's go on. */
        for (int i = 0; i < nreds && ran > 0; i++) {
            free(reds[i].partial);
            reds[i].partial = NULL;
        }
        if (tpace_bench_run(shape, arrays, narrays, reds, nreds, sweeps, nsweeps, fused, in))
            ran = 1;
        fflush(stderr);
    }
    tpace_bench_env.n = 0;
    tpace_bench_divisor = 0;
    if (!ran)
        tpace_stop(shape->where, "TPACE_BENCH_PLANS: no plan ran (every one was refused)");
    return 1;
}

/* ==== end of tpace runtime, schedule part ==== */
