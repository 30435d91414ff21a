/* ==== tpace runtime, model part (embedded by the translator; same for every program and target) ====
 * The performance model of src/model/ in C: the same predictor (transfer volumes,
 * redundant points, kernel time, overlap, device memory) and the same search over
 * schedule x k x b x streams, so that a program picks at start-up, for its actual
 * extents, step count and memory budget, the plan `tpace plan` prints. Every line
 * mirrors a Rust function of the same name (chunks.rs, predict.rs, search.rs); the
 * arithmetic is done in the same order and width, so that both give the same plan
 * and the same predicted seconds (tests/model_c.rs checks it). The translator prints
 * one `tpace_model` with the program's coefficients and the machine's figures.
 */
#include <errno.h>

typedef unsigned long long tpace_u64;

/* Most steps one fused kernel advances (plan::MAX_FUSED_STEPS; the per-step-count
 * tables below have one entry more). */
#define TPACE_MC_FUSE_MAX 8
typedef unsigned __int128 tpace_u128;
typedef __int128 tpace_i128;

/* Schedules in the model's order (predict.rs `Schedule::ALL`: ties go to the first). */
enum tpace_model_schedule { TPACE_MODEL_INCORE = 0, TPACE_MODEL_NAIVE = 1, TPACE_MODEL_MM = 2, TPACE_MODEL_MMTB = 3 };

/* One program on one machine (model::Machine and the extent-free part of model::Workload). */
typedef struct tpace_model {
    const char *machine;         /* profile name, for the report */
    double memory_bps;           /* device copy bandwidth, bytes read plus written per second */
    double kernel_bps;           /* bandwidth stencil kernels reach */
    double h2d_bps, d2h_bps;     /* pinned copies, one direction alone */
    double duplex_bps;           /* both directions together (0: unknown) */
    double peak_flops;           /* 0: unknown, kernels bound by memory */
    double launch_s;             /* seconds per kernel launch */
    double memory_bytes;         /* the profile's device memory (0: unknown) */
    tpace_u64 h_lo, h_hi;        /* planes one step reads below / above along the cut axis */
    tpace_u64 skew;              /* mmtb: planes the windows move down per step */
    tpace_u64 handover_below;    /* mmtb: hand-over planes besides skew per step */
    tpace_u64 upload_above;      /* mmtb: planes above its own a chunk uploads */
    tpace_u64 kernels_per_step;  /* kernel launches per chunk and step */
    tpace_u64 extra_bytes_per_point; /* second buffer of a swapped array */
    double flops_per_point;      /* per point and step, all sweeps */
    double bytes_per_point;      /* device bytes read plus written per point and step */
    tpace_u64 in_bytes[2];       /* bytes per element of the arrays moved in, [last block] */
    tpace_u64 out_bytes[2];      /* ... moved out */
    tpace_u64 dev_bytes;         /* ... living on the device */
    tpace_u64 fuse;              /* steps one kernel advances (two-level blocking; 1: one) */
    tpace_u64 fuse_max;          /* most steps the program's fused kernels advance (1: none) */
    double fuse_overhead[TPACE_MC_FUSE_MAX + 1]; /* per fused step count: points a block computes per point it keeps */
    tpace_u64 strip_elem_bytes;  /* bytes per element of the fused array (its mmtb strips) */
    tpace_u64 fuse_keep[TPACE_MC_FUSE_MAX + 1]; /* per fused step count: elements of a row a block keeps */
    tpace_u64 fuse_wave[TPACE_MC_FUSE_MAX + 1]; /* ... blocks a launch aims at: one wave (predict.rs fuse_wave) */
    double fused_point_s;        /* fused kernels: seconds per point and step computed (0: no floor) */
    double exchange_bps;         /* several devices: a block's ghost planes between neighbours (0: free) */
    double exchange_latency_s;   /* ... and the fixed cost of one exchange */
    double host_memory_bps;      /* several devices of one node: their copies together, both ways (0: unknown) */
    double kernel_s[TPACE_MC_FUSE_MAX + 1]; /* per steps per kernel: measured seconds per point and step (0: none) */
    tpace_u64 kernel_rows[TPACE_MC_FUSE_MAX + 1]; /* ... and the chunk width it was measured on */
    tpace_u64 kernel_blocks[TPACE_MC_FUSE_MAX + 1]; /* ... the blocks its launches aimed at */
    double kernel_segment_rows[TPACE_MC_FUSE_MAX + 1]; /* ... rows a segment cost beyond its own (< 0: not measured) */
    double kernel_launch_rows[TPACE_MC_FUSE_MAX + 1]; /* ... rows a launch cost beyond its segments' */
    /* The program's side of the machine figures above, to derive them for another machine
     * (tpace_model_on): */
    const char *kernel_elem;     /* element type its [[kernels]] entries are keyed by: "float" or "double" */
    const char *kernel_shape;    /* ... and shape class, e.g. "2d-r1" */
    tpace_u64 fuse_blocks_per_sm[TPACE_MC_FUSE_MAX + 1]; /* per fused step count: its blocks a multiprocessor holds */
    tpace_u64 refit_depths;      /* bit d: the run measured steps-per-kernel d itself (tpace_model_refit) */
    tpace_u64 search_depths;     /* bit d: a search may take d steps per kernel (0: any; a later re-plan's) */
    tpace_u64 profile_depths;    /* bit d: the profile measured d steps per kernel for this class (0: none) */
} tpace_model;

/* One measured kernel time of a machine profile's [[kernels]] table (profile.rs KernelFigure). */
typedef struct tpace_kernel_figure {
    const char *elem, *shape; /* "float" or "double"; shape class */
    tpace_u64 fuse;           /* steps per kernel */
    double ps, bytes;         /* picoseconds per point and step; the measured program's bytes per point */
    tpace_u64 rows, blocks;   /* chunk width measured on; blocks its launches aimed at (2048 where not said) */
    double segment_rows;      /* rows a segment cost beyond its own (< 0: not measured) */
    double launch_rows;       /* rows a launch cost beyond its segments' (0: not measured) */
} tpace_kernel_figure;

/* A profile's figures for OpenCL's work groups and T (evolution.rs EvolutionMachine, as
 * opencl.rs c_config prints them into a pipeline's tpace_cl_config). */
typedef struct tpace_cl_figures {
    int known;                 /* the profile has them (bytes_per_flop, tile_bytes, min_work_groups) */
    int phi;                   /* growth rule: 0 GPU, 1 Xeon Phi */
    double bf_sys;             /* system B/F */
    unsigned long long tile_bytes, min_groups, max_group; /* on-chip bytes a tile, fewest groups, most items */
    double stream_bps, tile_point_s; /* the priced choice's figures (0: the paper's choice) */
} tpace_cl_figures;

/* A machine profile's figures in the model's units (predict.rs Machine::from_profile): the
 * bundled profiles a program carries, or a TPACE_MACHINE file (tpace_machine_read). */
typedef struct tpace_machine {
    const char *name;            /* profile name */
    const char *device;          /* pattern of the device's name it describes (NULL: none) */
    double memory_bps, kernel_bps, h2d_bps, d2h_bps;
    double duplex_bps, peak_flops; /* 0: unknown */
    double launch_s, memory_bytes; /* 0: none, unknown */
    double fused_point_s, exchange_bps, exchange_latency_s;
    double host_memory_bps;      /* 0: unknown */
    tpace_u64 units;             /* multiprocessors (0: unknown) */
    int nkernels;
    const tpace_kernel_figure *kernels;
    tpace_cl_figures cl;
} tpace_machine;

/* Seconds per point and step of a program with `bytes` bytes per point and `kernels` kernels a
 * step from a kernel figure measured on another program of its class (one kernel a step), `fuse`
 * steps a kernel: one step a kernel, the figure's memory time at the copy rate scaled to the
 * program's bytes and the rest once per kernel; fused, the figure scaled by the bytes whole
 * (predict.rs scaled_figure_seconds, which says why). */
static inline double tpace_scaled_figure_seconds(const tpace_kernel_figure *f, double bytes, tpace_u64 kernels,
                                                 tpace_u64 fuse, double memory_bps)
{
    const double measured = f->ps * 1e-12;
    if (fuse > 1 || memory_bps <= 0.0 || f->bytes <= 0.0)
        return f->bytes > 0.0 ? measured * (bytes / f->bytes) : measured;
    /* A figure faster than the copy rate allows (caches) is all memory time. */
    const double at_copy_rate = f->bytes / memory_bps;
    const double memory = at_copy_rate < measured ? at_copy_rate : measured;
    return (measured - memory) * (double)(kernels > 1 ? kernels : 1) + memory * (bytes / f->bytes);
}

/* `program`'s model with the machine's figures of `mc` (cmodel.rs `initializer` for another
 * profile): the measured kernel times of the program's element type and shape class scaled to
 * its bytes per point, and one wave of blocks from the machine's multiprocessors. */
static inline void tpace_model_on(const tpace_model *program, const tpace_machine *mc, tpace_model *out)
{
    *out = *program;
    out->machine = mc->name;
    out->memory_bps = mc->memory_bps;
    out->kernel_bps = mc->kernel_bps;
    out->h2d_bps = mc->h2d_bps;
    out->d2h_bps = mc->d2h_bps;
    out->duplex_bps = mc->duplex_bps;
    out->peak_flops = mc->peak_flops;
    out->launch_s = mc->launch_s;
    out->memory_bytes = mc->memory_bytes;
    out->fused_point_s = mc->fused_point_s;
    out->exchange_bps = mc->exchange_bps;
    out->exchange_latency_s = mc->exchange_latency_s;
    out->host_memory_bps = mc->host_memory_bps;
    out->profile_depths = 0;
    for (int d = 0; d <= TPACE_MC_FUSE_MAX; d++) {
        const tpace_u64 per_sm = program->fuse_blocks_per_sm[d];
        out->fuse_wave[d] = d < 2 ? 0 : mc->units > 0 && per_sm > 0 ? mc->units * per_sm : 2048ULL;
        const tpace_kernel_figure *f = NULL;
        for (int i = 0; d >= 1 && i < mc->nkernels && f == NULL; i++)
            if (mc->kernels[i].fuse == (tpace_u64)d && program->kernel_elem && program->kernel_shape &&
                strcmp(mc->kernels[i].elem, program->kernel_elem) == 0 &&
                strcmp(mc->kernels[i].shape, program->kernel_shape) == 0)
                f = &mc->kernels[i];
        out->kernel_s[d] = f ? tpace_scaled_figure_seconds(f, program->bytes_per_point, program->kernels_per_step, (tpace_u64)d,
                                                          mc->memory_bps)
                             : 0.0;
        out->kernel_rows[d] = f ? f->rows : 0;
        out->kernel_blocks[d] = f ? f->blocks : 0;
        out->kernel_segment_rows[d] = f ? f->segment_rows : -1.0;
        out->kernel_launch_rows[d] = f ? f->launch_rows : 0.0;
        if (d >= 1 && f != NULL)
            out->profile_depths |= 1ULL << d;
    }
}

/* Whether a device called `name` is the one the pattern names (profile.rs device_matches): the
 * pattern's words appear in the name one after another, each a whole word (runs of ASCII letters
 * and digits), in any case. */
static inline int tpace_device_matches(const char *pattern, const char *name)
{
    if (pattern == NULL || name == NULL)
        return 0;
    /* Words as [start, end) pairs, lower-cased on comparison. */
    const char *pw[16], *pe[16], *nw[64], *ne[64];
    int np = 0, nn = 0;
    const char *texts[2] = {pattern, name};
    for (int which = 0; which < 2; which++) {
        const char *t = texts[which];
        while (*t) {
            while (*t && !((*t >= '0' && *t <= '9') || (*t >= 'a' && *t <= 'z') || (*t >= 'A' && *t <= 'Z')))
                t++;
            const char *start = t;
            while ((*t >= '0' && *t <= '9') || (*t >= 'a' && *t <= 'z') || (*t >= 'A' && *t <= 'Z'))
                t++;
            if (t == start)
                break;
            if (which == 0 && np < 16) {
                pw[np] = start;
                pe[np++] = t;
            } else if (which == 1 && nn < 64) {
                nw[nn] = start;
                ne[nn++] = t;
            }
        }
    }
    for (int at = 0; np > 0 && at + np <= nn; at++) {
        int same = 1;
        for (int i = 0; i < np && same; i++) {
            const long len = (long)(pe[i] - pw[i]);
            same = len == (long)(ne[at + i] - nw[at + i]);
            for (long c = 0; c < len && same; c++) {
                char a = pw[i][c], b = nw[at + i][c];
                a = a >= 'A' && a <= 'Z' ? (char)(a - 'A' + 'a') : a;
                b = b >= 'A' && b <= 'Z' ? (char)(b - 'A' + 'a') : b;
                same = a == b;
            }
        }
        if (same)
            return 1;
    }
    return 0;
}

/* ---- TPACE_MACHINE=FILE.toml: a machine profile read at run time, in the form of
 * profiles/NAME.toml (profiles/README.md): `key = value` lines, [figure] tables of value, kind
 * and source (or the same as an inline table), [[kernels]] entries, # comments, basic and
 * literal strings, numbers. The checks are profile.rs's: every figure a positive number
 * with a kind and a source, counts whole, kernels entries complete, no unknown key. ---- */

/* Every figure a profile may give (profile.rs FIGURE_NAMES), and which are counts. */
static const char *const tpace_figure_names[] = {
    "memory_gbs", "stencil_gbs", "h2d_gbs", "d2h_gbs", "duplex_gbs", "h2d_pageable_gbs", "memory_gb",
    "compute_units", "cores", "peak_gflops", "bytes_per_flop", "l2_bytes", "l1_bytes", "shared_bytes",
    "tile_bytes", "min_work_groups", "max_work_group_size", "launch_overhead_us", "fused_point_ps",
    "exchange_gbs", "exchange_latency_us", "tile_point_ps", "host_memory_gbs"};
#define TPACE_FIGURES ((int)(sizeof tpace_figure_names / sizeof tpace_figure_names[0]))
static const char *const tpace_whole_figures[] = {"compute_units", "cores", "l2_bytes", "l1_bytes", "shared_bytes",
                                                  "tile_bytes", "min_work_groups", "max_work_group_size"};

/* A profile file as read: each figure's value, kind and source seen, and the kernels. */
typedef struct tpace_profile_text {
    const char *path;
    int line;            /* the line being read */
    char *err;           /* where a failure is said */
    size_t err_size;
    int failed;
    int xeon_phi; /* arch = "xeon-phi" */
    char name[128];
    double value[32];
    int seen[32];        /* bit 0 value, 1 kind, 2 source */
    int figure_line[32];
    tpace_kernel_figure *kernels;
    int kernel_seen[256]; /* per entry: bits for elem shape fuse ps bytes rows kind source */
    int kernel_line[256];
    int nkernels;
    char device[128];
} tpace_profile_text;

/* Say what is wrong at the current line (the first failure is kept). */
static inline void tpace_toml_fail(tpace_profile_text *t, const char *what)
{
    if (!t->failed)
        snprintf(t->err, t->err_size, "%s:%d: %s", t->path, t->line, what);
    t->failed = 1;
}

static inline const char *tpace_toml_space(const char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    return s;
}

/* A bare key: letters, digits, _ and -. Returns its end. */
static inline const char *tpace_toml_key(const char *s, char *key, size_t size)
{
    size_t n = 0;
    while ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_' || *s == '-') {
        if (n + 1 < size)
            key[n++] = *s;
        s++;
    }
    key[n] = '\0';
    return s;
}

/* A value: a string (kind 's', into str) or a number (kind 'n', into *num). Returns its end,
 * NULL on a malformed value (said). */
static inline const char *tpace_toml_value(tpace_profile_text *t, const char *s, char *str, size_t size, double *num,
                                           char *kind)
{
    if (*s == '"' || *s == '\'') {
        const char quote = *s++;
        size_t n = 0;
        for (; *s && *s != quote; s++) {
            char c = *s;
            if (quote == '"' && c == '\\') {
                s++;
                c = *s == 'n' ? '\n' : *s == 't' ? '\t' : *s == '"' ? '"' : *s == '\\' ? '\\' : '\0';
                if (c == '\0') {
                    tpace_toml_fail(t, "an escape this reader does not take in a string (use \\\", \\\\, \\n, \\t)");
                    return NULL;
                }
            }
            if (n + 1 < size)
                str[n++] = c;
        }
        str[n] = '\0';
        if (*s != quote) {
            tpace_toml_fail(t, "a string that does not end on its line");
            return NULL;
        }
        *kind = 's';
        return s + 1;
    }
    /* A number: digits with optional sign, _, fraction and exponent. */
    char digits[64];
    size_t n = 0;
    const char *start = s;
    while ((*s >= '0' && *s <= '9') || *s == '+' || *s == '-' || *s == '.' || *s == 'e' || *s == 'E' || *s == '_') {
        if (*s != '_' && n + 1 < sizeof digits)
            digits[n++] = *s;
        s++;
    }
    digits[n] = '\0';
    char *end = NULL;
    *num = strtod(digits, &end);
    if (s == start || end == digits || *end != '\0') {
        tpace_toml_fail(t, "a value that is neither a number nor a quoted string");
        return NULL;
    }
    *kind = 'n';
    return s;
}

/* The index of a figure's name, -1 if none. */
static inline int tpace_figure_index(const char *name)
{
    for (int i = 0; i < TPACE_FIGURES; i++)
        if (strcmp(tpace_figure_names[i], name) == 0)
            return i;
    return -1;
}

/* One `key = value` in the table `section` (-1 top level, 0.. a figure, -2 the last kernel). */
static inline void tpace_toml_set(tpace_profile_text *t, int section, const char *key, char kind, const char *str,
                                  double num)
{
    char msg[256];
    if (section == -1) {
        if (strcmp(key, "name") == 0 && kind == 's') {
            snprintf(t->name, sizeof t->name, "%s", str);
            return;
        }
        if (strcmp(key, "device") == 0 && kind == 's') {
            snprintf(t->device, sizeof t->device, "%s", str);
            return;
        }
        if ((strcmp(key, "description") == 0 || strcmp(key, "arch") == 0) && kind == 's') {
            if (strcmp(key, "arch") == 0 && strcmp(str, "gpu") != 0 && strcmp(str, "xeon-phi") != 0)
                tpace_toml_fail(t, "`arch` must be \"gpu\" or \"xeon-phi\"");
            if (strcmp(key, "arch") == 0)
                t->xeon_phi = strcmp(str, "xeon-phi") == 0;
            return;
        }
        if (tpace_figure_index(key) >= 0)
            snprintf(msg, sizeof msg, "`%s` is a figure: give it as a table with value, kind and source", key);
        else
            snprintf(msg, sizeof msg, "unknown field `%s` (profiles/README.md lists the fields)", key);
        tpace_toml_fail(t, msg);
        return;
    }
    if (strcmp(key, "kind") == 0 || strcmp(key, "source") == 0) {
        if (kind != 's') {
            snprintf(msg, sizeof msg, "`%s` must be a quoted string", key);
            tpace_toml_fail(t, msg);
            return;
        }
        if (strcmp(key, "kind") == 0 && strcmp(str, "measured") != 0 && strcmp(str, "spec") != 0 &&
            strcmp(str, "paper") != 0 && strcmp(str, "derived") != 0 && strcmp(str, "assumed") != 0) {
            tpace_toml_fail(t, "`kind` must be one of measured, spec, paper, derived, assumed");
            return;
        }
        if (strcmp(key, "source") == 0 && str[0] == '\0') {
            tpace_toml_fail(t, "`source` is empty: say where the figure comes from");
            return;
        }
        if (section >= 0)
            t->seen[section] |= strcmp(key, "kind") == 0 ? 2 : 4;
        else
            t->kernel_seen[t->nkernels - 1] |= strcmp(key, "kind") == 0 ? 64 : 128;
        return;
    }
    if (section >= 0) {
        if (strcmp(key, "value") != 0 || kind != 'n') {
            snprintf(msg, sizeof msg, "a figure has `value` (a number), `kind` and `source`, not `%s`", key);
            tpace_toml_fail(t, msg);
            return;
        }
        if (!(num > 0.0 && num < 1e300)) {
            snprintf(msg, sizeof msg, "`%s` must be a positive number, not %g", tpace_figure_names[section], num);
            tpace_toml_fail(t, msg);
            return;
        }
        for (size_t w = 0; w < sizeof tpace_whole_figures / sizeof *tpace_whole_figures; w++)
            if (strcmp(tpace_whole_figures[w], tpace_figure_names[section]) == 0 && num != (double)(tpace_u64)num) {
                snprintf(msg, sizeof msg, "`%s` must be a whole number, not %g", tpace_figure_names[section], num);
                tpace_toml_fail(t, msg);
                return;
            }
        t->value[section] = num;
        t->seen[section] |= 1;
        return;
    }
    /* A [[kernels]] entry. */
    tpace_kernel_figure *k = &t->kernels[t->nkernels - 1];
    int *seen = &t->kernel_seen[t->nkernels - 1];
    if (strcmp(key, "elem") == 0 || strcmp(key, "shape") == 0) {
        if (kind != 's') {
            snprintf(msg, sizeof msg, "`%s` must be a quoted string", key);
            tpace_toml_fail(t, msg);
            return;
        }
        char *copy = (char *)malloc(strlen(str) + 1);
        if (copy == NULL) {
            tpace_toml_fail(t, "host memory ran out");
            return;
        }
        strcpy(copy, str);
        if (strcmp(key, "elem") == 0) {
            if (strcmp(str, "float") != 0 && strcmp(str, "double") != 0)
                tpace_toml_fail(t, "`elem` must be one of float, double");
            k->elem = copy;
            *seen |= 1;
        } else {
            int rank = 0, radius = -1, used = 0;
            if (sscanf(str, "%dd-r%d%n", &rank, &radius, &used) != 2 || str[used] != '\0' || rank < 1 || rank > 8 ||
                radius < 0 || radius > 64)
                tpace_toml_fail(t, "`shape` must read like `2d-r1` (rank, radius)");
            k->shape = copy;
            *seen |= 2;
        }
        return;
    }
    static const char *const numbers[] = {"fuse", "ps", "bytes", "rows", "blocks", "segment_rows", "launch_rows"};
    int which = -1;
    for (int i = 0; i < 7; i++)
        if (strcmp(key, numbers[i]) == 0)
            which = i;
    if (which < 0) {
        snprintf(msg, sizeof msg, "unknown field `%s` in a [[kernels]] entry", key);
        tpace_toml_fail(t, msg);
        return;
    }
    if (kind != 'n') {
        snprintf(msg, sizeof msg, "`%s` must be a number", key);
        tpace_toml_fail(t, msg);
        return;
    }
    const int whole = which == 0 || which == 3 || which == 4;
    if (whole && (num < 1.0 || num != (double)(tpace_u64)num)) {
        snprintf(msg, sizeof msg, "`%s` must be a whole number of at least 1", key);
        tpace_toml_fail(t, msg);
        return;
    }
    if ((which == 1 || which == 2) && !(num > 0.0 && num < 1e300)) {
        snprintf(msg, sizeof msg, "`%s` must be a positive number, not %g", key, num);
        tpace_toml_fail(t, msg);
        return;
    }
    switch (which) {
    case 0: k->fuse = (tpace_u64)num; *seen |= 4; break;
    case 1: k->ps = num; *seen |= 8; break;
    case 2: k->bytes = num; *seen |= 16; break;
    case 3: k->rows = (tpace_u64)num; *seen |= 32; break;
    case 4: k->blocks = (tpace_u64)num; break;
    case 5: k->segment_rows = num; break;
    default: k->launch_rows = num; break;
    }
}

/* Read a machine profile from `path` into *mc (its strings and kernels allocated for the
 * program's life, or until its caller frees them). Returns 1, or 0 with what is wrong, "FILE:LINE: ...", in err. */
static inline int tpace_machine_read(const char *path, tpace_machine *mc, char *err, size_t err_size)
{
    static tpace_profile_text text; /* large; one read at a time */
    tpace_profile_text *t = &text;
    memset(t, 0, sizeof *t);
    t->path = path;
    t->err = err;
    t->err_size = err_size;
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        snprintf(err, err_size, "%s: cannot open it: %s", path, strerror(errno));
        return 0;
    }
    t->kernels = (tpace_kernel_figure *)calloc(256, sizeof *t->kernels);
    if (t->kernels == NULL) {
        fclose(f);
        snprintf(err, err_size, "%s: host memory ran out reading it", path);
        return 0;
    }
    char line[4096];
    int section = -1;
    while (!t->failed && fgets(line, sizeof line, f) != NULL) {
        t->line++;
        if (strchr(line, '\n') == NULL && !feof(f)) {
            tpace_toml_fail(t, "a line longer than 4095 characters");
            break;
        }
        const char *s = tpace_toml_space(line);
        char key[64];
        if (*s == '#' || *s == '\n' || *s == '\r' || *s == '\0')
            continue;
        if (s[0] == '[' && s[1] == '[') {
            s = tpace_toml_key(tpace_toml_space(s + 2), key, sizeof key);
            s = tpace_toml_space(s);
            if (strcmp(key, "kernels") != 0 || s[0] != ']' || s[1] != ']') {
                tpace_toml_fail(t, "the only array of tables a profile has is [[kernels]]");
                break;
            }
            if (t->nkernels == 256) {
                tpace_toml_fail(t, "more than 256 [[kernels]] entries");
                break;
            }
            tpace_kernel_figure *k = &t->kernels[t->nkernels];
            k->blocks = 0;
            k->segment_rows = -1.0;
            k->launch_rows = 0.0;
            t->kernel_line[t->nkernels++] = t->line;
            section = -2;
            s += 2;
        } else if (s[0] == '[') {
            s = tpace_toml_space(tpace_toml_key(tpace_toml_space(s + 1), key, sizeof key));
            section = tpace_figure_index(key);
            if (section < 0 || *s != ']') {
                char msg[160];
                snprintf(msg, sizeof msg,
                         section < 0 ? "unknown figure [%s] (profiles/README.md lists them)" : "expected `]` after [%s]",
                         key);
                tpace_toml_fail(t, msg);
                break;
            }
            if (t->figure_line[section]) {
                tpace_toml_fail(t, "a figure given twice");
                break;
            }
            t->figure_line[section] = t->line;
            s++;
        } else {
            s = tpace_toml_space(tpace_toml_key(s, key, sizeof key));
            if (key[0] == '\0' || *s != '=') {
                tpace_toml_fail(t, "expected `key = value`, a [figure] or [[kernels]]");
                break;
            }
            s = tpace_toml_space(s + 1);
            if (*s == '{' && section == -1) {
                /* An inline figure: name = { value = ..., kind = "...", source = "..." }. */
                const int fig = tpace_figure_index(key);
                if (fig < 0) {
                    char msg[160];
                    snprintf(msg, sizeof msg, "unknown figure `%s` (profiles/README.md lists them)", key);
                    tpace_toml_fail(t, msg);
                    break;
                }
                if (t->figure_line[fig]) {
                    tpace_toml_fail(t, "a figure given twice");
                    break;
                }
                t->figure_line[fig] = t->line;
                s = tpace_toml_space(s + 1);
                while (!t->failed && *s != '}') {
                    char inner[64], str[1024], vkind = 0;
                    double num = 0.0;
                    s = tpace_toml_space(tpace_toml_key(s, inner, sizeof inner));
                    if (inner[0] == '\0' || *s != '=') {
                        tpace_toml_fail(t, "expected `key = value` inside { }");
                        break;
                    }
                    s = tpace_toml_value(t, tpace_toml_space(s + 1), str, sizeof str, &num, &vkind);
                    if (s == NULL)
                        break;
                    tpace_toml_set(t, fig, inner, vkind, str, num);
                    s = tpace_toml_space(s);
                    if (*s == ',')
                        s = tpace_toml_space(s + 1);
                    else if (*s != '}')
                        tpace_toml_fail(t, "expected , or } in an inline table");
                }
                if (t->failed)
                    break;
                s++;
            } else {
                char str[1024], vkind = 0;
                double num = 0.0;
                s = tpace_toml_value(t, s, str, sizeof str, &num, &vkind);
                if (s == NULL)
                    break;
                tpace_toml_set(t, section, key, vkind, str, num);
            }
        }
        s = tpace_toml_space(s);
        if (!t->failed && *s != '#' && *s != '\n' && *s != '\r' && *s != '\0')
            tpace_toml_fail(t, "more on the line than one key and value or one [table] (a comment starts with #)");
    }
    fclose(f);
    /* Whole tables: every figure value, kind and source; every kernel its fields. */
    for (int i = 0; i < TPACE_FIGURES && !t->failed; i++)
        if (t->figure_line[i] && t->seen[i] != 7) {
            char msg[160];
            t->line = t->figure_line[i];
            snprintf(msg, sizeof msg, "figure [%s] lacks %s", tpace_figure_names[i],
                     !(t->seen[i] & 1) ? "`value`" : !(t->seen[i] & 2) ? "`kind`" : "`source`");
            tpace_toml_fail(t, msg);
        }
    for (int i = 0; i < t->nkernels && !t->failed; i++) {
        static const char *const need[] = {"elem", "shape", "fuse", "ps", "bytes", "rows", "kind", "source"};
        t->line = t->kernel_line[i];
        for (int b = 0; b < 8 && !t->failed; b++)
            if (!(t->kernel_seen[i] & (1 << b))) {
                char msg[160];
                snprintf(msg, sizeof msg, "this [[kernels]] entry lacks `%s`", need[b]);
                tpace_toml_fail(t, msg);
            }
        for (int j = 0; j < i && !t->failed; j++)
            if (t->kernels[j].fuse == t->kernels[i].fuse && strcmp(t->kernels[j].elem, t->kernels[i].elem) == 0 &&
                strcmp(t->kernels[j].shape, t->kernels[i].shape) == 0)
                tpace_toml_fail(t, "a second [[kernels]] entry for the same elem, shape and fuse");
        if (t->kernels[i].blocks == 0)
            t->kernels[i].blocks = 2048; /* predict.rs measured_blocks */
    }
    if (!t->failed && t->name[0] == '\0') {
        t->line = 1;
        tpace_toml_fail(t, "the profile has no `name`");
    }
    const int need[3] = {tpace_figure_index("memory_gbs"), tpace_figure_index("h2d_gbs"), tpace_figure_index("d2h_gbs")};
    for (int i = 0; i < 3 && !t->failed; i++)
        if (!t->seen[need[i]]) {
            snprintf(err, err_size, "%s: the profile lacks %s, which the out-of-core model needs", path,
                     tpace_figure_names[need[i]]);
            t->failed = 1;
        }
    if (t->failed) {
        for (int i = 0; i < t->nkernels; i++) {
            free((void *)t->kernels[i].elem);
            free((void *)t->kernels[i].shape);
        }
        free(t->kernels);
        return 0;
    }
    /* In the model's units, as predict.rs Machine::from_profile computes them. */
#define TPACE_FIG(n) (t->seen[tpace_figure_index(n)] ? t->value[tpace_figure_index(n)] : 0.0)
#define TPACE_HAS(n) (t->seen[tpace_figure_index(n)] != 0)
    char *name = (char *)malloc(strlen(t->name) + 1);
    char *device = (char *)malloc(strlen(t->device) + 1);
    if (name == NULL || device == NULL) {
        snprintf(err, err_size, "%s: host memory ran out reading it", path);
        return 0;
    }
    strcpy(name, t->name);
    strcpy(device, t->device);
    memset(mc, 0, sizeof *mc);
    mc->name = name;
    mc->device = device[0] ? device : NULL;
    if (!device[0])
        free(device);
    mc->memory_bps = TPACE_FIG("memory_gbs") * 1e9;
    mc->kernel_bps = TPACE_HAS("stencil_gbs") ? TPACE_FIG("stencil_gbs") * 1e9 : mc->memory_bps;
    mc->h2d_bps = TPACE_FIG("h2d_gbs") * 1e9;
    mc->d2h_bps = TPACE_FIG("d2h_gbs") * 1e9;
    mc->duplex_bps = TPACE_HAS("duplex_gbs") ? TPACE_FIG("duplex_gbs") * 1e9 : 0.0;
    mc->peak_flops = TPACE_HAS("peak_gflops") ? TPACE_FIG("peak_gflops") * 1e9 : 0.0;
    mc->launch_s = TPACE_HAS("launch_overhead_us") ? TPACE_FIG("launch_overhead_us") * 1e-6 : 0.0;
    mc->memory_bytes = TPACE_HAS("memory_gb") ? TPACE_FIG("memory_gb") * 1e9 : 0.0;
    mc->fused_point_s = TPACE_HAS("fused_point_ps") ? TPACE_FIG("fused_point_ps") * 1e-12 : 0.0;
    mc->exchange_bps = TPACE_HAS("exchange_gbs") ? TPACE_FIG("exchange_gbs") * 1e9 : 0.0;
    mc->exchange_latency_s = TPACE_HAS("exchange_latency_us") ? TPACE_FIG("exchange_latency_us") / 1e6 : 0.0;
    mc->host_memory_bps = TPACE_HAS("host_memory_gbs") ? TPACE_FIG("host_memory_gbs") * 1e9 : 0.0;
    mc->units = TPACE_HAS("compute_units") ? (tpace_u64)TPACE_FIG("compute_units") : 0;
    /* OpenCL's figures (evolution.rs EvolutionMachine::from_profile). */
    const double bf = TPACE_HAS("bytes_per_flop") ? TPACE_FIG("bytes_per_flop")
                      : TPACE_HAS("peak_gflops")  ? TPACE_FIG("memory_gbs") / TPACE_FIG("peak_gflops")
                                                  : 0.0;
    if (bf > 0.0 && TPACE_HAS("tile_bytes") && TPACE_HAS("min_work_groups")) {
        mc->cl.known = 1;
        mc->cl.phi = t->xeon_phi;
        mc->cl.bf_sys = bf;
        mc->cl.tile_bytes = (unsigned long long)TPACE_FIG("tile_bytes");
        mc->cl.min_groups = (unsigned long long)TPACE_FIG("min_work_groups");
        mc->cl.max_group = (unsigned long long)TPACE_FIG("max_work_group_size");
        if (TPACE_HAS("tile_point_ps")) {
            mc->cl.tile_point_s = TPACE_FIG("tile_point_ps") * 1e-12;
            mc->cl.stream_bps = mc->kernel_bps;
        }
    }
#undef TPACE_FIG
#undef TPACE_HAS
    mc->nkernels = t->nkernels;
    mc->kernels = t->kernels;
    return 1;
}

/* A run: extents, steps. */
typedef struct tpace_model_run {
    tpace_u64 n, plane, steps;
} tpace_model_run;

/* One plan (predict.rs `Config`). */
typedef struct tpace_model_config {
    int schedule; /* enum tpace_model_schedule */
    tpace_u64 k, b, streams;
} tpace_model_config;

/* ---- chunks.rs ---- */

static inline tpace_u64 tpace_mc_count(tpace_u64 n, tpace_u64 b)
{
    b = b < 1 ? 1 : b;
    return (n + b - 1) / b;
}

static inline tpace_u128 tpace_mc_range_sum(tpace_u64 a, tpace_u64 z)
{
    if (a > z)
        return 0;
    return ((tpace_u128)a + (tpace_u128)z) * (tpace_u128)(z - a + 1) / 2;
}

static inline tpace_u128 tpace_mc_upper(tpace_u64 n, tpace_u64 b, tpace_u64 g)
{
    tpace_u64 c = tpace_mc_count(n, b);
    if (c <= 1 || g == 0)
        return 0;
    tpace_u64 full = n >= g ? (n - g) / b : 0;
    if (full > c - 1)
        full = c - 1;
    tpace_u128 partial_n = c - 1 - full;
    return (tpace_u128)full * g + partial_n * n - (tpace_u128)b * tpace_mc_range_sum(full + 1, c - 1);
}

static inline tpace_u128 tpace_mc_lower(tpace_u64 n, tpace_u64 b, tpace_u64 g)
{
    tpace_u64 c = tpace_mc_count(n, b);
    if (c <= 1 || g == 0)
        return 0;
    tpace_u64 first_full = (g + b - 1) / b;
    if (first_full < 1)
        first_full = 1;
    tpace_u64 clipped_end = (first_full < c ? first_full : c) - 1;
    return (tpace_u128)b * tpace_mc_range_sum(1, clipped_end) + (tpace_u128)g * (c - 1 - clipped_end);
}

typedef struct tpace_mc_floor_sums {
    tpace_i128 plain, weighted, squares;
} tpace_mc_floor_sums;

/* Sums over i = 0..=n of q_i = floor((a i + b) / c), q_i i and q_i^2. */
static tpace_mc_floor_sums tpace_mc_floor(tpace_i128 a, tpace_i128 b, tpace_i128 c, tpace_i128 n)
{
    tpace_mc_floor_sums s;
    tpace_i128 s1 = n * (n + 1) / 2;
    tpace_i128 s2 = n * (n + 1) * (2 * n + 1) / 6;
    if (a == 0) {
        tpace_i128 q = b / c;
        s.plain = (n + 1) * q;
        s.weighted = q * s1;
        s.squares = (n + 1) * q * q;
        return s;
    }
    if (a >= c || b >= c) {
        tpace_i128 qa = a / c, qb = b / c;
        tpace_mc_floor_sums r = tpace_mc_floor(a % c, b % c, c, n);
        s.plain = r.plain + qa * s1 + qb * (n + 1);
        s.weighted = r.weighted + qa * s2 + qb * s1;
        s.squares = r.squares + 2 * qb * r.plain + 2 * qa * r.weighted + qa * qa * s2 + qb * qb * (n + 1) +
                    2 * qa * qb * s1;
        return s;
    }
    tpace_i128 m = (a * n + b) / c;
    if (m == 0) {
        s.plain = s.weighted = s.squares = 0;
        return s;
    }
    tpace_mc_floor_sums r = tpace_mc_floor(c, c - b - 1, a, m - 1);
    s.plain = n * m - r.plain;
    s.weighted = (m * n * (n + 1) - r.squares - r.plain) / 2;
    s.squares = n * m * (m + 1) - 2 * r.weighted - 2 * r.plain - s.plain;
    return s;
}

static inline tpace_u128 tpace_mc_near_sum(tpace_u64 d0_, tpace_u64 b_, tpace_u64 h_, tpace_u64 k_, tpace_u64 cnt_)
{
    if (cnt_ == 0)
        return 0;
    tpace_i128 d0 = d0_, b = b_, h = h_, k = k_, cnt = cnt_;
    tpace_mc_floor_sums s = tpace_mc_floor(b, d0, h, cnt - 1);
    tpace_i128 sum_d = cnt * d0 + b * cnt * (cnt - 1) / 2;
    return (tpace_u128)(h * (s.squares + s.plain) / 2 + (k - 1) * sum_d - (d0 * s.plain + b * s.weighted));
}

/* Ghost planes of the shrinking windows of a block of k steps, up or down. */
static inline tpace_u128 tpace_mc_over_steps(tpace_u64 n, tpace_u64 b, tpace_u64 h, tpace_u64 k, int up)
{
    tpace_u64 c = tpace_mc_count(n, b);
    if (c <= 1 || h == 0 || k <= 1)
        return 0;
    tpace_u64 reach = h * (k - 1);
    tpace_u128 triangle = (tpace_u128)h * k * (k - 1) / 2;
    tpace_u64 d0 = up ? n - (c - 1) * b : b;
    tpace_u64 near_ = 0;
    if (reach > d0) {
        near_ = (reach - d0 + b - 1) / b;
        if (near_ > c - 1)
            near_ = c - 1;
    }
    return (tpace_u128)(c - 1 - near_) * triangle + tpace_mc_near_sum(d0, b, h, k, near_);
}

/* ---- predict.rs ---- */

/* Normalise a config the way the runtime does (k, b and streams are at least 1). */
static inline tpace_model_config tpace_mc_normalise(const tpace_model_run *w, tpace_model_config c)
{
    tpace_u64 steps = w->steps < 1 ? 1 : w->steps;
    switch (c.schedule) {
    case TPACE_MODEL_INCORE:
        c.k = steps;
        c.b = w->n;
        c.streams = 1;
        break;
    case TPACE_MODEL_NAIVE:
        c.k = 1;
        break;
    default:
        c.k = c.k < steps ? c.k : steps;
    }
    c.b = c.b < w->n ? c.b : w->n;
    return c;
}

static inline tpace_u64 tpace_mc_handover(const tpace_model *m, tpace_u64 k)
{
    return m->skew * ((k < 1 ? 1 : k) - 1) + m->handover_below;
}

/* Steps one kernel advances under a normalised plan with `count` chunks (predict.rs fuse_for). */
static inline tpace_u64 tpace_mc_fuse_for(const tpace_model *m, tpace_model_config c, tpace_u64 count)
{
    int narrow = c.schedule == TPACE_MODEL_MMTB && count > 1 && c.b < m->skew + m->h_lo;
    if (m->fuse <= 1 || c.schedule == TPACE_MODEL_NAIVE || narrow)
        return 1;
    return m->fuse;
}

/* Planes of each fused-mmtb hand-over strip (predict.rs strip_planes). */
static inline tpace_u64 tpace_mc_strip_planes(const tpace_model *m, tpace_model_config c, tpace_u64 count)
{
    if (tpace_mc_fuse_for(m, c, count) <= 1 || c.schedule != TPACE_MODEL_MMTB || count <= 1)
        return 0;
    tpace_u64 fuse = tpace_mc_fuse_for(m, c, count);
    return c.k / fuse * (fuse - 1) * (m->skew + m->h_lo);
}

/* Kernel groups of a block of kb steps (predict.rs kernel_groups). */
static inline tpace_u64 tpace_mc_kernel_groups(tpace_u64 kb, tpace_u64 fuse)
{
    if (fuse <= 1)
        return kb;
    return kb / fuse + kb % fuse;
}

/* Fused kernels: rows of the cut axis each block streams over when `tiles` blocks
 * cover the other axes and a launch has `rows` rows (predict.rs fuse_segment):
 * segments of at most 1024 rows, as many as a wave of `blocks` blocks holds (one wave,
 * or TPACE_FUSE_BLOCKS where the run sets it; TPACE_MC_FUSE_BLOCKS where the
 * multiprocessors are unknown) or a multiple of that, so that no wave is partial (768
 * blocks where 528 fit ran 6 % slower on the H100); each at least 4 times the rows a
 * block streams in vain (steps x reach). */
#define TPACE_MC_FUSE_BLOCKS 2048ULL
static inline tpace_u64 tpace_mc_fuse_segment_of(tpace_u64 rows, tpace_u64 tiles, tpace_u64 fuse, tpace_u64 reach,
                                                 tpace_u64 blocks)
{
    tpace_u64 per_wave = blocks / (tiles > 0 ? tiles : 1);
    per_wave = per_wave > 0 ? per_wave : 1;
    tpace_u64 segments = (rows + 1023) / 1024;
    segments = segments > 0 ? segments : 1;
    segments = (segments + per_wave - 1) / per_wave * per_wave;
    tpace_u64 seg = (rows + segments - 1) / segments;
    tpace_u64 least = 4 * fuse * reach;
    return seg < least ? least : seg;
}

/* Device memory a normalised plan allocates, as tpace_bytes_for counts it. */
static inline tpace_u128 tpace_mc_device_bytes(const tpace_model *m, const tpace_model_run *w, tpace_model_config c)
{
    tpace_u128 per_plane = (tpace_u128)m->dev_bytes * w->plane + (tpace_u128)(m->extra_bytes_per_point * w->plane);
    tpace_u64 count = tpace_mc_count(w->n, c.b);
    tpace_u64 slots = c.streams < count ? c.streams : count;
    tpace_u128 planes;
    if (c.schedule == TPACE_MODEL_INCORE) {
        planes = w->n;
    } else if (c.schedule != TPACE_MODEL_MMTB) {
        planes = (tpace_u128)slots * (c.b + (m->h_lo + m->h_hi) * c.k) + (tpace_u128)(m->h_lo * c.k);
    } else if (count > 1) {
        tpace_u64 s = c.streams < 2 ? 2 : c.streams;
        s = s < count ? s : count;
        planes = (tpace_u128)s * (tpace_mc_handover(m, c.k) + c.b + m->upload_above);
    } else {
        planes = c.b;
    }
    tpace_u128 strips = 0;
    if (c.schedule == TPACE_MODEL_MMTB && count > 1) {
        tpace_u64 s = c.streams < 2 ? 2 : c.streams;
        s = s < count ? s : count;
        strips = (tpace_u128)s * tpace_mc_strip_planes(m, c, count) * w->plane * m->strip_elem_bytes;
    }
    return planes * per_plane + strips;
}

/* Counts of one block. */
typedef struct tpace_mc_block {
    tpace_u128 h2d, d2h, d2d, points, launches;
    double out_first; /* the part of a chunk's download the slot's next upload waits for */
} tpace_mc_block;

/* The part of an mmtb chunk's download the next upload into its slot waits for (predict.rs
 * out_first): downloads have a queue of their own and send the chunk's own planes first;
 * 1 for the other schedules and one chunk. */
static inline double tpace_mc_out_first(const tpace_model *m, tpace_model_config c, tpace_u64 n_chunks, tpace_u64 kb)
{
    if (c.schedule != TPACE_MODEL_MMTB || n_chunks <= 1 || c.b == 0)
        return 1.0;
    tpace_u64 lag = tpace_mc_handover(m, kb);
    return (double)(c.b > lag ? c.b - lag : 0) / (double)c.b;
}

static inline tpace_mc_block tpace_mc_block_of(const tpace_model *m, const tpace_model_run *w, tpace_model_config c,
                                               tpace_u64 n_chunks, tpace_u64 kb, int last)
{
    tpace_u128 in_plane = (tpace_u128)m->in_bytes[last] * w->plane;
    tpace_u128 out_plane = (tpace_u128)m->out_bytes[last] * w->plane;
    /* The swap's second buffer goes over with the hand-over too (predict.rs block). */
    tpace_u128 dev_plane = (tpace_u128)m->dev_bytes * w->plane + (tpace_u128)(m->extra_bytes_per_point * w->plane);
    tpace_u128 n = w->n, kb128 = kb;
    tpace_mc_block r;
    tpace_u64 fuse = tpace_mc_fuse_for(m, c, n_chunks);
    r.launches = (tpace_u128)n_chunks * tpace_mc_kernel_groups(kb, fuse) * m->kernels_per_step;
    tpace_u128 h2d_planes, computed;
    r.d2d = 0;
    if (c.schedule == TPACE_MODEL_INCORE) {
        h2d_planes = n;
        computed = n * kb128;
    } else if (c.schedule != TPACE_MODEL_MMTB) {
        tpace_u128 up = tpace_mc_upper(w->n, c.b, m->h_hi * kb);
        r.d2d = 2 * tpace_mc_lower(w->n, c.b, m->h_lo * kb) * in_plane;
        computed = n * kb128 + tpace_mc_over_steps(w->n, c.b, m->h_hi, kb, 1) +
                   tpace_mc_over_steps(w->n, c.b, m->h_lo, kb, 0);
        h2d_planes = n + up;
    } else {
        tpace_u128 up = tpace_mc_upper(w->n, c.b, m->h_hi);
        /* The fused kernels' strips are read in place, not copied. */
        r.d2d = (tpace_u128)(n_chunks - 1) * tpace_mc_handover(m, kb) * dev_plane;
        h2d_planes = n + up;
        computed = n * kb128;
    }
    r.points = computed * w->plane;
    r.h2d = h2d_planes * in_plane;
    r.d2h = n * out_plane;
    r.out_first = tpace_mc_out_first(m, c, n_chunks, kb);
    return r;
}

/* What a fused kernel's launches over chunks of `rows` planes cost per row they keep,
 * aiming at `blocks` blocks: each segment its rows and `segment` more, each launch
 * `launch` more; with `measured`, the kernel's measured figures where it has them,
 * else a segment costs the reach x steps (steps - 1) / 2 rows it computes in vain
 * (predict.rs fuse_row_overhead). */
static inline double tpace_mc_fuse_row_overhead(const tpace_model *m, tpace_u64 plane, tpace_u64 rows, tpace_u64 fuse,
                                                tpace_u64 blocks, int measured)
{
    tpace_u64 keep = m->fuse_keep[fuse] < 1 ? 1 : m->fuse_keep[fuse];
    tpace_u64 reach = m->h_lo + m->h_hi;
    tpace_u64 seg = tpace_mc_fuse_segment_of(rows, (plane + keep - 1) / keep, fuse, reach, blocks);
    double segment = (double)(reach * (fuse - 1)) / 2.0, launch = 0.0;
    if (measured && m->kernel_segment_rows[fuse] >= 0)
        segment = m->kernel_segment_rows[fuse];
    if (measured)
        launch = m->kernel_launch_rows[fuse];
    return 1.0 + segment / (double)seg + launch / (double)(rows > 0 ? rows : 1);
}

/* Blocks a launch of the fused kernel with `fuse` steps aims at (predict.rs fuse_wave). */
static inline tpace_u64 tpace_mc_wave(const tpace_model *m, tpace_u64 fuse)
{
    return m->fuse_wave[fuse] > 0 ? m->fuse_wave[fuse] : TPACE_MC_FUSE_BLOCKS;
}

/* The measured depths a depth the profile has no figure for lies between (`*lo` < fuse < `*hi`,
 * both measured by this run: tpace_model_refit), 1 where there are such, 0 where not. */
static inline int tpace_mc_measured_around(const tpace_model *m, tpace_u64 fuse, tpace_u64 *lo, tpace_u64 *hi)
{
    *lo = *hi = 0;
    if (fuse < 2 || fuse >= TPACE_MC_FUSE_MAX || m->kernel_s[fuse] > 0 || (m->refit_depths >> fuse & 1))
        return 0;
    for (tpace_u64 d = fuse - 1; d >= 1 && !*lo; d--)
        if (m->refit_depths >> d & 1)
            *lo = d;
    for (tpace_u64 d = fuse + 1; d <= TPACE_MC_FUSE_MAX && !*hi; d++)
        if (m->refit_depths >> d & 1)
            *hi = d;
    return *lo && *hi;
}

static inline double tpace_mc_point_cost(const tpace_model *m, tpace_u64 fuse, tpace_u64 plane, tpace_u64 rows)
{
    tpace_u64 lo, hi;
    if (tpace_mc_measured_around(m, fuse, &lo, &hi)) {
        /* A depth the profile has no figure for, between two this run measured: their costs at
         * this width, weighed by the distance in depth. The profile's formula scaled by what the
         * run measured priced it from the first depth measured (a spec sheet on an H100: three
         * steps a kernel at 1.2 times its cost after four steps were measured on narrow chunks;
         * bench/RESULTS.md, twelfth session); the two measured around it bound it on the device. */
        const double t = (double)(fuse - lo) / (double)(hi - lo);
        return (1.0 - t) * tpace_mc_point_cost(m, lo, plane, rows) + t * tpace_mc_point_cost(m, hi, plane, rows);
    }
    double flops_only = m->peak_flops > 0 ? m->flops_per_point / m->peak_flops : 0.0;
    if (m->kernel_s[fuse > 1 ? fuse : 1] > 0) {
        /* Measured (predict.rs measured_point_cost): narrower chunks recompute more rows. */
        double overhead = 1.0, ratio = 1.0;
        if (fuse > 1) {
            const double here = tpace_mc_fuse_row_overhead(m, plane, rows, fuse, tpace_mc_wave(m, fuse), 1);
            overhead = m->fuse_overhead[fuse] * here;
            ratio = here / tpace_mc_fuse_row_overhead(m, plane, m->kernel_rows[fuse], fuse, m->kernel_blocks[fuse], 1);
        } else if (m->kernel_launch_rows[1] > 0.0) {
            /* One step a kernel: a launch's ramp and tail (predict.rs one_step_row_overhead). */
            const double launch = m->kernel_launch_rows[1];
            const double measured_rows = (double)(m->kernel_rows[1] > 0 ? m->kernel_rows[1] : 1);
            ratio = (1.0 + launch / (double)(rows > 0 ? rows : 1)) / (1.0 + launch / measured_rows);
        }
        double measured = m->kernel_s[fuse > 1 ? fuse : 1] * ratio;
        double flops_m = flops_only * overhead;
        return measured > flops_m ? measured : flops_m;
    }
    double steps = fuse > 1 ? (double)fuse : 1.0;
    double overhead =
        fuse > 1 ? m->fuse_overhead[fuse] * tpace_mc_fuse_row_overhead(m, plane, rows, fuse, tpace_mc_wave(m, fuse), 0)
                 : 1.0;
    double mem = m->bytes_per_point / m->kernel_bps * overhead / steps;
    double flops = flops_only * overhead;
    double floor = fuse > 1 ? m->fused_point_s * overhead : 0.0;
    double cost = mem > flops ? mem : flops;
    return cost > floor ? cost : floor;
}

static inline double tpace_mc_max(double a, double b) { return a > b ? a : b; }

/* Rounds of the fixed point of tpace_mc_cycle (predict.rs OVERLAP_ROUNDS). */
#define TPACE_MC_OVERLAP_ROUNDS 6

/* Seconds a chunk adds in the steady state with `slots` queues (predict.rs `steady`): the
 * longest cycle of the executor's dependences, per chunk, where an upload and a download
 * that must overlap (by U + D - T) share the link at duplex_bps and each loses
 * 1 - duplex / (h2d + d2h) of the overlapped time; a few rounds of the fixed point. A queue's
 * round is its upload, kernels and the part `out_first` of its download the slot's next upload
 * waits for, or its kernels and whole download (the next hand-over). */
static inline double tpace_mc_cycle_parts(const tpace_model *m, tpace_u64 slots, double in_bytes, double t_k,
                                          double out_bytes, double out_first, double *up_out, double *down_out)
{
    double t_in = in_bytes / m->h2d_bps;
    double t_out = out_bytes / m->d2h_bps;
    double both = m->duplex_bps > 0 ? (in_bytes + out_bytes) / m->duplex_bps : 0.0;
    double lose = m->duplex_bps > 0 ? tpace_mc_max(1.0 - m->duplex_bps / (m->h2d_bps + m->d2h_bps), 0.0) : 0.0;
    double s = (double)(slots < 1 ? 1 : slots);
    double o = 0.0, cycle = 0.0, up = t_in, down = t_out;
    for (int round = 0; round < TPACE_MC_OVERLAP_ROUNDS; round++) {
        up = t_in + lose * o;
        down = t_out + lose * o;
        double around = tpace_mc_max((up + t_k + out_first * down) / s, (t_k + down) / s);
        cycle = tpace_mc_max(tpace_mc_max(tpace_mc_max(tpace_mc_max(t_k, up), down), both), around);
        double next = tpace_mc_max(up + down - cycle, 0.0);
        if (next == o) /* settled: at once where the copies need not meet */
            break;
        o = next;
    }
    if (up_out != NULL)
        *up_out = up; /* each copy as the steady state stretches it */
    if (down_out != NULL)
        *down_out = down;
    return cycle;
}

static inline double tpace_mc_cycle(const tpace_model *m, tpace_u64 slots, double in_bytes, double t_k,
                                    double out_bytes, double out_first)
{
    return tpace_mc_cycle_parts(m, slots, in_bytes, t_k, out_bytes, out_first, NULL, NULL);
}

/* Time of `chunks` chunks through `slots` queues (predict.rs `pipeline`): the first chunk
 * whole (the pipeline's fill and drain), then per chunk its steady share. */
static inline double tpace_mc_pipeline(const tpace_model *m, tpace_u64 chunks, tpace_u64 slots, double in_bytes,
                                       double t_k, double out_bytes, double out_first)
{
    double t_in = in_bytes / m->h2d_bps;
    double t_out = out_bytes / m->d2h_bps;
    double first = t_in + t_k + t_out;
    if (slots <= 1 || chunks <= 1)
        return (double)chunks * first;
    return first + (double)(chunks - 1) * tpace_mc_cycle(m, slots, in_bytes, t_k, out_bytes, out_first);
}

/* Chunk buffers (queues) in flight, as tpace_slots_for counts them (predict.rs slots_for). */
static inline tpace_u64 tpace_mc_slots_for(tpace_model_config c, tpace_u64 n_chunks)
{
    tpace_u64 want = c.schedule == TPACE_MODEL_MMTB && n_chunks > 1 && c.streams < 2 ? 2 : c.streams;
    return want < n_chunks ? want : n_chunks;
}

/* Seconds of kernels computing `points` grid-point updates in `launches` launches with `d2d` bytes of
 * device copies among them (predict.rs: kernel_s + launch_s + d2d_s). */
static inline double tpace_mc_kernels_s(const tpace_model *m, const tpace_model_run *w, tpace_model_config c,
                                        tpace_u64 n_chunks, double points, double launches, double d2d)
{
    return points * tpace_mc_point_cost(m, tpace_mc_fuse_for(m, c, n_chunks), w->plane, c.b) + launches * m->launch_s +
           2.0 * d2d / m->memory_bps;
}

static inline double tpace_mc_block_time(const tpace_model *m, const tpace_model_run *w, tpace_model_config c,
                                         tpace_u64 n_chunks, tpace_u64 slots, const tpace_mc_block *b)
{
    double kernel = tpace_mc_kernels_s(m, w, c, n_chunks, (double)b->points, (double)b->launches, (double)b->d2d);
    if (c.schedule == TPACE_MODEL_INCORE)
        return (double)b->h2d / m->h2d_bps + kernel + (double)b->d2h / m->d2h_bps;
    double cn = (double)n_chunks;
    return tpace_mc_pipeline(m, n_chunks, slots, (double)b->h2d / cn, kernel / cn, (double)b->d2h / cn, b->out_first);
}

/* How near the copies may come to the kernels' time before more streams' slack pays (search.rs
 * SLACK_NEAR). */
#define TPACE_MC_SLACK_NEAR 0.10

/* Whether more streams buy slack (search.rs `slack_pays`): a run's uploads and downloads together
 * outlast its kernels (with launches and device copies) or come within TPACE_MC_SLACK_NEAR of them,
 * neither alone outlasts them. */
static inline int tpace_mc_slack_pays(const tpace_model *m, const tpace_model_run *w, tpace_model_config c,
                                      tpace_u64 n_chunks, tpace_u64 full_blocks, const tpace_mc_block *full,
                                      const tpace_mc_block *last)
{
    const double times = (double)full_blocks;
    const double points = (double)full->points * times + (double)last->points;
    const double launches = (double)full->launches * times + (double)last->launches;
    const double d2d = (double)full->d2d * times + (double)last->d2d;
    const double up = ((double)full->h2d * times + (double)last->h2d) / m->h2d_bps;
    const double down = ((double)full->d2h * times + (double)last->d2h) / m->d2h_bps;
    const double kernels = tpace_mc_kernels_s(m, w, c, n_chunks, points, launches, d2d);
    return up < kernels && down < kernels && up + down > kernels * (1.0 - TPACE_MC_SLACK_NEAR);
}

/* Predicted seconds of one schedule, k and b for each of `nstreams` stream counts
 * (predict.rs `predict_streams`: the counts are shared, only the overlap differs), and in
 * *slack_pays (unless NULL) whether more of them buy slack. */
static inline void tpace_mc_predict_streams(const tpace_model *m, const tpace_model_run *w, tpace_model_config base,
                                            const tpace_u64 *streams, int nstreams, double *seconds, int *slack_pays)
{
    base.streams = 1;
    tpace_model_config c = tpace_mc_normalise(w, base);
    tpace_u64 n_chunks = tpace_mc_count(w->n, c.b);
    tpace_u64 full_blocks = 0, last_k = 0;
    if (w->steps > 0) {
        if (w->steps % c.k == 0) {
            full_blocks = w->steps / c.k - 1;
            last_k = c.k;
        } else {
            full_blocks = w->steps / c.k;
            last_k = w->steps % c.k;
        }
    }
    tpace_mc_block full, last;
    memset(&full, 0, sizeof full);
    memset(&last, 0, sizeof last);
    if (w->steps > 0) {
        if (full_blocks > 0)
            full = tpace_mc_block_of(m, w, c, n_chunks, c.k, 0);
        last = tpace_mc_block_of(m, w, c, n_chunks, last_k, 1);
    }
    if (slack_pays != NULL)
        *slack_pays = tpace_mc_slack_pays(m, w, c, n_chunks, full_blocks, &full, &last);
    for (int i = 0; i < nstreams; i++) {
        tpace_model_config ci = c;
        ci.streams = streams[i];
        ci = tpace_mc_normalise(w, ci);
        tpace_u64 slots = tpace_mc_slots_for(ci, n_chunks);
        double total = 0.0;
        if (w->steps > 0) {
            if (full_blocks > 0)
                total += tpace_mc_block_time(m, w, ci, n_chunks, slots, &full) * (double)full_blocks;
            total += tpace_mc_block_time(m, w, ci, n_chunks, slots, &last) * 1.0;
        }
        seconds[i] = total;
    }
}

/* Predicted seconds of one plan. */
static inline double tpace_model_predict(const tpace_model *m, const tpace_model_run *w, tpace_model_config c)
{
    double s = 0.0;
    tpace_mc_predict_streams(m, w, c, &c.streams, 1, &s, NULL);
    return s;
}

/* ---- search.rs ---- */

#define TPACE_MC_MAX_CANDIDATES 1024

/* How much faster a plan must be than the same k and b with more streams (search.rs SLACK_TIE). */
#define TPACE_MC_SLACK_TIE 0.01

/* Round half away from zero without libm (x >= 0): f64::round. */
static inline tpace_u64 tpace_mc_round(double x)
{
    tpace_u64 i = (tpace_u64)x;
    return x - (double)i >= 0.5 ? i + 1 : i;
}

static int tpace_mc_cmp_u64(const void *a, const void *b)
{
    tpace_u64 x = *(const tpace_u64 *)a, y = *(const tpace_u64 *)b;
    return x < y ? -1 : x > y;
}

/* Sort and drop repeats; returns the new length. */
static inline int tpace_mc_sort_dedup(tpace_u64 *v, int len)
{
    qsort(v, (size_t)len, sizeof *v, tpace_mc_cmp_u64);
    int out = 0;
    for (int i = 0; i < len; i++)
        if (out == 0 || v[out - 1] != v[i])
            v[out++] = v[i];
    return out;
}

/* k: every value to 32, steps of about a quarter up to the step count, and the step count
 * split evenly into 1 to 16 blocks. */
static inline int tpace_mc_k_candidates(tpace_u64 steps, tpace_u64 *ks)
{
    tpace_u64 top = steps < 1 ? 1 : steps;
    int len = 0;
    for (tpace_u64 k = 1; k <= (top < 32 ? top : 32); k++)
        ks[len++] = k;
    double k = 32.0;
    while ((tpace_u64)k < top && len < TPACE_MC_MAX_CANDIDATES - 1) {
        k *= 1.25;
        tpace_u64 r = tpace_mc_round(k);
        ks[len++] = r < top ? r : top;
    }
    ks[len++] = top;
    /* Blocks of equal length: k = 62 would leave a third block of 4 steps for 128. */
    for (tpace_u64 blocks = 1; blocks <= 16 && len < TPACE_MC_MAX_CANDIDATES; blocks++)
        ks[len++] = (top + blocks - 1) / blocks;
    return tpace_mc_sort_dedup(ks, len);
}

/* b: n / C for C = 1..16, then chunk counts growing by about a quarter up to n. */
static inline int tpace_mc_b_candidates(tpace_u64 n, tpace_u64 *bs)
{
    n = n < 1 ? 1 : n;
    int len = 0;
    for (tpace_u64 c = 1; c <= (n < 16 ? n : 16); c++)
        bs[len++] = c;
    double c = 16.0;
    while ((tpace_u64)c < n && len < TPACE_MC_MAX_CANDIDATES) {
        c *= 1.25;
        tpace_u64 r = tpace_mc_round(c);
        bs[len++] = r < n ? r : n;
    }
    for (int i = 0; i < len; i++)
        bs[i] = (n + bs[i] - 1) / bs[i];
    return tpace_mc_sort_dedup(bs, len);
}

/* The model's choice. */
typedef struct tpace_model_choice {
    int found;                /* whether any plan fits */
    tpace_model_config best;  /* normalised */
    double seconds;           /* predicted wall time */
    tpace_u128 device_bytes;  /* device memory it allocates */
    tpace_u128 smallest;      /* the least memory of any candidate (when none fits) */
    tpace_u64 fuse;           /* steps per kernel the search assumed (the model's fuse) */
} tpace_model_choice;

/* The fastest plan (then the smallest) under `cap` bytes (0: no limit), over the same
 * candidates as search.rs `choose`. A fixed parameter (schedule >= 0, k, b or streams
 * > 0) replaces its candidate list; schedules that ignore a fixed parameter are left
 * out, unless the schedule is fixed too. */
static inline tpace_model_choice tpace_model_choose(const tpace_model *m, const tpace_model_run *w, tpace_u128 cap,
                                                    int fixed_schedule, tpace_u64 fixed_k, tpace_u64 fixed_b,
                                                    tpace_u64 fixed_streams)
{
    static tpace_u64 ks[TPACE_MC_MAX_CANDIDATES], bs[TPACE_MC_MAX_CANDIDATES];
    int nk = fixed_k ? (ks[0] = fixed_k, 1) : tpace_mc_k_candidates(w->steps, ks);
    int nb = fixed_b ? (bs[0] = fixed_b, 1) : tpace_mc_b_candidates(w->n, bs);
    static const tpace_u64 all_streams[4] = {1, 2, 3, 4};
    const tpace_u64 one = 1;
    tpace_model_choice best;
    memset(&best, 0, sizeof best);
    int have_smallest = 0;
    for (int schedule = TPACE_MODEL_INCORE; schedule <= TPACE_MODEL_MMTB; schedule++) {
        if (fixed_schedule >= 0 && schedule != fixed_schedule)
            continue;
        if (fixed_schedule < 0 && ((schedule == TPACE_MODEL_INCORE && (fixed_k || fixed_b || fixed_streams)) ||
                                   (schedule == TPACE_MODEL_NAIVE && fixed_k)))
            continue;
        const tpace_u64 *k_list = ks, *b_list = bs, *s_list = all_streams;
        int k_len = nk, b_len = nb, s_len = 4;
        if (schedule == TPACE_MODEL_INCORE) {
            k_list = b_list = s_list = &one;
            k_len = b_len = s_len = 1;
        } else if (schedule == TPACE_MODEL_NAIVE && !fixed_k) {
            k_list = &one;
            k_len = 1;
        }
        if (fixed_streams && schedule != TPACE_MODEL_INCORE) {
            s_list = &fixed_streams;
            s_len = 1;
        }
        for (int ki = 0; ki < k_len; ki++) {
            for (int bi = 0; bi < b_len; bi++) {
                tpace_model_config base = {schedule, k_list[ki], b_list[bi], 1};
                tpace_u64 fitting[4];
                tpace_u128 need_of[4];
                int nfit = 0;
                for (int si = 0; si < s_len; si++) {
                    tpace_model_config c = base;
                    c.streams = s_list[si];
                    c = tpace_mc_normalise(w, c);
                    /* mmtb runs two queues at one stream: the same plan as two (search.rs). */
                    if (schedule == TPACE_MODEL_MMTB && c.streams == 1 && s_len > 1 && tpace_mc_count(w->n, c.b) > 1)
                        continue;
                    tpace_u128 need = tpace_mc_device_bytes(m, w, c);
                    if (!have_smallest || need < best.smallest) {
                        best.smallest = need;
                        have_smallest = 1;
                    }
                    if (cap == 0 || need <= cap) {
                        need_of[nfit] = need;
                        fitting[nfit++] = s_list[si];
                    }
                }
                if (nfit == 0)
                    continue;
                double seconds[4];
                int slack_pays = 0; /* (only where stream counts compete) */
                tpace_mc_predict_streams(m, w, base, fitting, nfit, seconds, nfit > 1 ? &slack_pays : NULL);
                for (int i = 0; i < nfit; i++) {
                    /* Within TPACE_MC_SLACK_TIE of each other, more streams at the same k and b win
                     * where their slack pays, fewer elsewhere (search.rs `gives_way`). A re-plan's
                     * model (refitted) gives ties to more streams always: its kernels' figures are
                     * partly scaled from another depth or width, too rough to say the copies fit
                     * (an H100 planned with a spec sheet re-planned Jacobi-2D to two streams where
                     * the copies outlast the kernels: 0.490 s against 0.405 with four;
                     * bench/RESULTS.md, eleventh session). */
                    int gives_way = 0;
                    for (int j = 0; j < nfit; j++)
                        if ((slack_pays || m->refit_depths ? fitting[j] > fitting[i] : fitting[j] < fitting[i]) &&
                            seconds[j] <= seconds[i] * (1.0 + TPACE_MC_SLACK_TIE))
                            gives_way = 1;
                    if (gives_way)
                        continue;
                    if (best.found && !(seconds[i] < best.seconds ||
                                        (seconds[i] == best.seconds && need_of[i] < best.device_bytes)))
                        continue;
                    tpace_model_config c = base;
                    c.streams = fitting[i];
                    best.found = 1;
                    best.best = tpace_mc_normalise(w, c);
                    best.seconds = seconds[i];
                    best.device_bytes = need_of[i];
                }
            }
        }
    }
    return best;
}

/* m itself, or a copy of it in *scratch that assumes `fuse` steps per kernel. */
static inline const tpace_model *tpace_model_fusing(const tpace_model *m, tpace_u64 fuse, tpace_model *scratch)
{
    if (m == NULL || m->fuse == fuse)
        return m;
    if (m != scratch)
        *scratch = *m;
    scratch->fuse = fuse;
    return scratch;
}

/* The model a re-plan searches with: the refitted one at the program's own steps per kernel, so
 * that the search weighs every depth as the first plan's did (started at the running plan's depth
 * it would stop there where that is one step a kernel: a spec-sheet profile's one-step plan on an
 * H100 was kept where four steps a kernel ran 1.24 times as fast; bench/RESULTS.md,
 * 2026-11-26, eighth session); at the running depth where the user set it (`fuse_set`). */
static inline const tpace_model *tpace_model_for_replan(const tpace_model *refit, int fuse_set, tpace_u64 fuse_wanted,
                                                        tpace_model *scratch)
{
    return fuse_set ? tpace_model_fusing(refit, fuse_wanted, scratch) : refit;
}

/* The depths a later re-plan searches (tpace_model.search_depths): those the run measured, the
 * one running, and those between two measured that the profile has no figure for (priced from
 * the two: tpace_mc_measured_around). Another depth's figure is the profile's scaled by what
 * the run measured, too rough to leave a measured depth for (an H100 planned with a spec sheet
 * went from four steps a kernel, measured, to three priced so, and ran 1.25 times the best;
 * bench/RESULTS.md, eleventh session), and a search of every depth kept the kernels waiting
 * 15 ms. */
static inline tpace_u64 tpace_model_replan_depths(const tpace_model *refit, tpace_u64 running)
{
    tpace_u64 depths = refit->refit_depths | 1ULL << running;
    for (tpace_u64 d = 2; d < TPACE_MC_FUSE_MAX; d++) {
        tpace_u64 lo, hi;
        if (tpace_mc_measured_around(refit, d, &lo, &hi))
            depths |= 1ULL << d;
    }
    return depths;
}

/* Whether choice a beats choice b: faster, then smaller. */
static inline int tpace_mc_better(const tpace_model_choice *a, const tpace_model_choice *b)
{
    return a->found && (!b->found || a->seconds < b->seconds ||
                        (a->seconds == b->seconds && a->device_bytes < b->device_bytes));
}

/* Whether the bandwidth formula can price `t` steps a kernel (predict.rs formula_prices): not
 * where that kernel holds a multiprocessor alone while a shallower fused depth shares one (the
 * formula does not see the warps that hide a block's barriers). */
static inline int tpace_mc_formula_prices(const tpace_model *m, tpace_u64 t)
{
    if (t <= 1 || t > TPACE_MC_FUSE_MAX || m->fuse_blocks_per_sm[t] != 1)
        return 1;
    for (tpace_u64 d = 2; d < t; d++)
        if (m->fuse_blocks_per_sm[d] > 1)
            return 0;
    return 1;
}

/* tpace_model_choose, and where the kernels can advance several steps each and
 * `fixed_fuse` is 0, the same for every other step count per kernel the device holds
 * (2 .. `fuse_most`, at most m->fuse_max) and for one step per kernel: the fastest
 * (then smallest), the first tried on a tie, in the order m->fuse, then from the most
 * steps down, then one (search.rs `choose_fused` and `depths`). */
static inline tpace_model_choice tpace_model_choose_fused(const tpace_model *m, const tpace_model_run *w, tpace_u128 cap,
                                                          int fixed_schedule, tpace_u64 fixed_k, tpace_u64 fixed_b,
                                                          tpace_u64 fixed_streams, int fixed_fuse, tpace_u64 fuse_most)
{
    /* A depth the search may take: a later re-plan's (m->search_depths), else one step, or a
     * depth the profile measured, or where it measured none of this class any the formula can
     * price (predict.rs depth_priced: a depth left out beside measured ones is priced from the
     * formula against measured neighbours, which flatters it). */
#define TPACE_MC_DEPTH_OK(t)                                                                                  \
    (m->search_depths != 0 ? (m->search_depths >> (t) & 1)                                                   \
                           : ((t) <= 1 || (m->profile_depths >> (t) & 1) ||                           \
                              (m->profile_depths == 0 && tpace_mc_formula_prices(m, (t)))))
    tpace_model_choice best;
    if (TPACE_MC_DEPTH_OK(m->fuse) || fixed_fuse) {
        best = tpace_model_choose(m, w, cap, fixed_schedule, fixed_k, fixed_b, fixed_streams);
    } else {
        memset(&best, 0, sizeof best);
    }
    best.fuse = m->fuse;
    if (m->fuse <= 1 || fixed_fuse)
        return best;
    tpace_u64 most = fuse_most < m->fuse_max ? fuse_most : m->fuse_max;
    tpace_model other = *m;
    for (tpace_u64 t = most > TPACE_MC_FUSE_MAX ? TPACE_MC_FUSE_MAX : most;; t--) {
        if (t < 2)
            t = 1; /* one step per kernel last */
        if (t != m->fuse && TPACE_MC_DEPTH_OK(t)) {
            other.fuse = t;
            tpace_model_choice c = tpace_model_choose(&other, w, cap, fixed_schedule, fixed_k, fixed_b, fixed_streams);
            c.fuse = t;
            if (tpace_mc_better(&c, &best))
                best = c;
        }
        if (t == 1)
            break;
    }
#undef TPACE_MC_DEPTH_OK
    return best;
}

/* ---- Plans that correct themselves (the schedule part's tpace_replan_*): what a run measured
 * of its first chunk or block against what the model predicted of the same work, and the model
 * refitted to it. One function for every executor (one device, or each of several). ---- */

/* How far (as a fraction) a run may differ from the model's prediction before it re-plans. */
#define TPACE_REPLAN_TOLERANCE 0.15

/* How far a first chunk's kernels alone may differ (tpace_model_kernels_off): its windows narrow
 * to nothing, where even a measured profile prices them less closely than whole chunks (the
 * H100's own, heat-3D: 0.83 to 0.86 of the prediction; a refit to that made the first block
 * 1.19 times the refitted prediction and the run 6 % slower; the spec sheet's: 2.1 to 2.7
 * times; bench/RESULTS.md, twelfth session). */
#define TPACE_REPLAN_KERNEL_TOLERANCE 0.30

/* Seconds measured and predicted for the same work: the whole of it (wall) and its parts; a
 * part with no prediction (0) was not measured. */
typedef struct tpace_measured {
    double wall_s, wall_pred_s;         /* the work from its first operation's start to its last one's end */
    double kernel_s, kernel_pred_s;     /* the kernels (and mmtb's hand-overs) */
    double upload_s, upload_pred_s;     /* host to device */
    double download_s, download_pred_s; /* device to host */
    /* What the kernels were: their steps per kernel (0: not said), the grid points times steps
     * they advanced, their launches, the seconds of device copies among them, the chunk width. */
    int kernel_depth;
    double kernel_points, kernel_launches, kernel_copy_s;
    tpace_u64 kernel_rows;
    tpace_u64 kernel_plane; /* points a plane (0: not said; a depth measured at two widths needs it) */
} tpace_measured;

/* Measured over predicted, 1 where either is missing. */
static inline double tpace_mc_ratio(double measured, double predicted)
{
    return measured > 0.0 && predicted > 0.0 ? measured / predicted : 1.0;
}

/* Whether the work took more than (1 + tolerance) times or less than (1 - tolerance) times
 * what the model predicted of it. */
static inline int tpace_model_off(const tpace_measured *x, double tolerance)
{
    const double r = tpace_mc_ratio(x->wall_s, x->wall_pred_s);
    return r > 1.0 + tolerance || r < 1.0 - tolerance;
}

/* tpace_model_off, or the kernels alone off by more than `kernel_tolerance`: a first chunk's
 * upload can hide them (a spec sheet's two steps a kernel on an H100: the first chunk "as
 * predicted", 1.09x, its kernels on a triangle of 13 planes beside an upload of 13 planes and
 * more; the first block then ran 2.57 times the prediction, a quarter of the run's time;
 * bench/RESULTS.md, twelfth session). */
static inline int tpace_model_kernels_off(const tpace_measured *x, double tolerance, double kernel_tolerance)
{
    const double k = tpace_mc_ratio(x->kernel_s, x->kernel_pred_s);
    return tpace_model_off(x, tolerance) || k > 1.0 + kernel_tolerance || k < 1.0 - kernel_tolerance;
}

/* The rows a launch of `d` steps a kernel costs beyond its own, fitted to two widths the run
 * measured (`c1` seconds a point and step on chunks of `b1` planes of `plane` points, `c2` on
 * `b2`), so that each width's cost is what it measured and neither is priced from the other by
 * the profile's guess (the probe's two-width fit, segments.rs): c = a (s(b) + L / b), s the
 * segments' overhead (1 at one step a kernel). Where no L >= 0 fits (the wider chunks dearer a
 * point), the profile's L stays. A run that flipped between 24 and 72 planes at four steps a
 * kernel, each width priced from the other's figure, kept the slower one (bench/RESULTS.md,
 * ninth session, call 1). */
static inline double tpace_mc_two_width_launch_rows(const tpace_model *m, int d, tpace_u64 plane, double c1,
                                                    tpace_u64 b1, double c2, tpace_u64 b2)
{
    tpace_model flat = *m;
    flat.kernel_launch_rows[d] = 0.0;
    const double s1 = d > 1 ? tpace_mc_fuse_row_overhead(&flat, plane, b1, (tpace_u64)d, tpace_mc_wave(m, (tpace_u64)d), 1)
                            : 1.0;
    const double s2 = d > 1 ? tpace_mc_fuse_row_overhead(&flat, plane, b2, (tpace_u64)d, tpace_mc_wave(m, (tpace_u64)d), 1)
                            : 1.0;
    const double den = c1 / (double)b2 - c2 / (double)b1;
    const double rows = den != 0.0 ? (c2 * s1 - c1 * s2) / den : -1.0;
    return rows >= 0.0 && rows < 1e12 ? rows : m->kernel_launch_rows[d];
}

/* `m` with the figures the measurement gives. The kernels: the steps per kernel that ran get
 * what they measured, per grid point and step at the chunk width they ran on (a measured
 * figure, as a profile's [[kernels]] entry); every other cost the run has not measured itself
 * (other depths, the bandwidth figures, launches, device copies) is scaled by what the kernels
 * took over what the model predicted, as nothing says otherwise. The host-to-device rate goes
 * by the uploads' factor, the way back by the downloads' (the uploads' where no download was
 * measured: the same link), both ways at once by the mean of the two. A depth measured before
 * changes its own figure only (at another width: the launch cost the two widths give). */
static inline void tpace_model_refit(const tpace_model *m, const tpace_measured *x, tpace_model *out)
{
    /* A depth measured again (another width, or its first block after its first chunk) says how
     * the model prices that depth's widths, not how fast the device is: the rest stays. */
    const int again = x->kernel_depth >= 1 && x->kernel_depth <= TPACE_MC_FUSE_MAX &&
                      (m->refit_depths >> x->kernel_depth & 1);
    const double fk = again ? 1.0 : tpace_mc_ratio(x->kernel_s, x->kernel_pred_s);
    const double fu = tpace_mc_ratio(x->upload_s, x->upload_pred_s);
    const double fd = x->download_pred_s > 0.0 ? tpace_mc_ratio(x->download_s, x->download_pred_s) : fu;
    /* The device's own rates (memory, launches, arithmetic) go by the run's first kernels or by
     * one step a kernel (bound by memory); a fused depth's first figure after those says how
     * the profile prices fused kernels, not how fast memory is (a spec sheet on an H100: four
     * steps a kernel on narrow chunks 1.9 times the prediction halved the device copies' rate
     * again, after one step a kernel had set it, and priced the best plan 17 % slow;
     * bench/RESULTS.md, twelfth session). */
    const double fr = m->refit_depths == 0 || x->kernel_depth == 1 ? fk : 1.0;
    *out = *m;
    for (int d = 0; d <= TPACE_MC_FUSE_MAX; d++)
        if (!(m->refit_depths >> d & 1))
            out->kernel_s[d] = m->kernel_s[d] * fk;
    out->kernel_bps = m->kernel_bps / fr;
    out->peak_flops = m->peak_flops / fr;
    out->fused_point_s = m->fused_point_s * fk;
    out->launch_s = m->launch_s * fr;
    out->memory_bps = m->memory_bps / fr;
    out->h2d_bps = m->h2d_bps / fu;
    out->d2h_bps = m->d2h_bps / fd;
    out->duplex_bps = m->duplex_bps / ((fu + fd) / 2.0);
    const int d = x->kernel_depth;
    if (d >= 1 && d <= TPACE_MC_FUSE_MAX && x->kernel_points > 0.0 && x->kernel_rows > 0) {
        const double per =
            (x->kernel_s - x->kernel_launches * out->launch_s - x->kernel_copy_s) / x->kernel_points;
        if (per > 0.0) {
            if ((m->refit_depths >> d & 1) && m->kernel_rows[d] != x->kernel_rows && x->kernel_plane > 0)
                out->kernel_launch_rows[d] = tpace_mc_two_width_launch_rows(m, d, x->kernel_plane, m->kernel_s[d],
                                                                            m->kernel_rows[d], per, x->kernel_rows);
            out->kernel_s[d] = per;
            out->kernel_rows[d] = x->kernel_rows;
            out->kernel_blocks[d] = tpace_mc_wave(m, (tpace_u64)d);
            out->refit_depths |= 1ULL << d;
        }
    }
}

/* Where a chunk's kernels are timed in two parts: the first step whose window is at most half
 * as wide as the first window (mmtb's first chunk: the windows narrow a plane or more a step),
 * given the first window's width `first_rows` and this one's `rows`. */
static inline int tpace_mc_second_part(tpace_u64 first_rows, tpace_u64 rows)
{
    return first_rows >= 4 && rows > 0 && 2 * rows <= first_rows;
}

/* `m` refitted with a first chunk timed in two parts: its wider windows (`wide`: the run's
 * first figure for that depth, what the device's rates follow) and then its narrower ones
 * (`narrow`: the same depth at another width, which gives its launch cost). One width alone
 * left the launch cost to the profile: a spec sheet has none, and four steps a kernel measured
 * on windows of 13 planes priced every wider chunk 1.5 times what it ran (bench/RESULTS.md,
 * eleventh session, call 9). `narrow` may be NULL or hold no points: one width. */
static inline void tpace_model_refit_parts(const tpace_model *m, const tpace_measured *wide,
                                           const tpace_measured *narrow, tpace_model *out)
{
    const int d = wide->kernel_depth;
    const int two = narrow != NULL && narrow->kernel_points > 0.0 && narrow->kernel_rows != wide->kernel_rows &&
                    d == narrow->kernel_depth && d >= 1 && d <= TPACE_MC_FUSE_MAX;
    tpace_measured again;
    if (two) {
        again = *narrow;
        again.upload_s = again.upload_pred_s = again.download_s = again.download_pred_s = 0.0;
    }
    tpace_model_refit(m, wide, out);
    if (!two)
        return;
    tpace_model once = *out;
    tpace_model_refit(&once, &again, out);
    if (m->refit_depths >> d & 1)
        return;
    /* What the rest of the model follows: the depth's cost without its launches (on chunks so
     * wide they vanish) over what the profile priced there, not the wider part's ratio, which
     * holds launch costs a profile without them leaves out (a spec sheet's two steps a kernel on
     * windows of 7 to 13 planes: 4.9 times its prediction, while its cost without launches was
     * 2.2 times the spec sheet's; every other depth priced by the first factor, the re-plan kept
     * two steps a kernel at 1.19 times the best; tests/replan.rs). */
    const tpace_u64 wide_rows = (tpace_u64)1 << 24;
    const double without = tpace_mc_ratio(tpace_mc_point_cost(out, (tpace_u64)d, wide->kernel_plane, wide_rows),
                                          tpace_mc_point_cost(m, (tpace_u64)d, wide->kernel_plane, wide_rows));
    tpace_measured rescaled = *wide;
    rescaled.kernel_pred_s = wide->kernel_s / without;
    tpace_model_refit(m, &rescaled, &once);
    tpace_model_refit(&once, &again, out);
}

/* ==== end of tpace runtime, model part ==== */
