/* ==== tpace runtime, OpenCL part (shipped by the translator; the same for every program) ====
 * The device hooks of the common executor on OpenCL 1.2, through the ICD loader:
 * queue q is command queue q (one per slot, and one for the mm carry), marks and
 * waits are events (clEnqueueMarkerWithWaitList, clEnqueueBarrierWithWaitList),
 * synchronising is clFinish on every queue. Every OpenCL call is checked and a
 * failure is reported with the call, OpenCL's error name and what it means.
 *
 * Device pointers. The executor computes with device addresses (a plane's place
 * in a chunk buffer); OpenCL has buffer objects instead. tpace_dev_alloc hands
 * out addresses in a private range that is never dereferenced: allocation i lives
 * at TPACE_CL_BASE + i * TPACE_CL_SPAN (plus half a span, so that a pointer
 * slightly below a buffer would still name it), and every copy and launch turns
 * an address back into its buffer and a byte offset (tpace_cl_mem), checking that
 * it lies inside the buffer. Kernels take each array as buffer + element offset.
 *
 * Host memory. Copies go straight between the user's arrays and the device with
 * non-blocking clEnqueueWriteBuffer / clEnqueueReadBuffer: OpenCL 1.2 has no way
 * to page-lock memory the program already has (CUDA's cudaHostRegister), and
 * staging each chunk through a CL_MEM_ALLOC_HOST_PTR buffer would add a host
 * copy of every plane, about as slow as the pageable transfer it would speed
 * up, and a wait for each staging buffer; the executor's order of copies (which
 * plane may be read or written back when) is the same as with CUDA's async copies.
 *
 * The device: TPACE_CL_PLATFORM and TPACE_CL_DEVICE (an index, or a part of the
 * name, any case), by default the first GPU of any platform, else the first
 * device. The kernels' program is built once per run of the program, with
 * single-precision division and square root correctly rounded (as C's) where the
 * device can, and its build log is printed when the build fails.
 */

/* ---- The program's kernels: the translator prints their source, names and each
 * pipeline's configuration after the launchers. ---- */
static const char *tpace_cl_source(void);
static int tpace_cl_kernel_count(void);
static const char *tpace_cl_kernel_name(int i);

/* ---- OpenCL's error codes in words ---- */
static inline const char *tpace_cl_error_name(cl_int e)
{
    switch (e) {
#define TPACE_CL_NAME(c) \
    case c:              \
        return #c;
        TPACE_CL_NAME(CL_SUCCESS)
        TPACE_CL_NAME(CL_DEVICE_NOT_FOUND)
        TPACE_CL_NAME(CL_DEVICE_NOT_AVAILABLE)
        TPACE_CL_NAME(CL_COMPILER_NOT_AVAILABLE)
        TPACE_CL_NAME(CL_MEM_OBJECT_ALLOCATION_FAILURE)
        TPACE_CL_NAME(CL_OUT_OF_RESOURCES)
        TPACE_CL_NAME(CL_OUT_OF_HOST_MEMORY)
        TPACE_CL_NAME(CL_PROFILING_INFO_NOT_AVAILABLE)
        TPACE_CL_NAME(CL_MEM_COPY_OVERLAP)
        TPACE_CL_NAME(CL_BUILD_PROGRAM_FAILURE)
        TPACE_CL_NAME(CL_MISALIGNED_SUB_BUFFER_OFFSET)
        TPACE_CL_NAME(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
        TPACE_CL_NAME(CL_INVALID_VALUE)
        TPACE_CL_NAME(CL_INVALID_DEVICE_TYPE)
        TPACE_CL_NAME(CL_INVALID_PLATFORM)
        TPACE_CL_NAME(CL_INVALID_DEVICE)
        TPACE_CL_NAME(CL_INVALID_CONTEXT)
        TPACE_CL_NAME(CL_INVALID_QUEUE_PROPERTIES)
        TPACE_CL_NAME(CL_INVALID_COMMAND_QUEUE)
        TPACE_CL_NAME(CL_INVALID_HOST_PTR)
        TPACE_CL_NAME(CL_INVALID_MEM_OBJECT)
        TPACE_CL_NAME(CL_INVALID_BUILD_OPTIONS)
        TPACE_CL_NAME(CL_INVALID_PROGRAM)
        TPACE_CL_NAME(CL_INVALID_PROGRAM_EXECUTABLE)
        TPACE_CL_NAME(CL_INVALID_KERNEL_NAME)
        TPACE_CL_NAME(CL_INVALID_KERNEL)
        TPACE_CL_NAME(CL_INVALID_ARG_INDEX)
        TPACE_CL_NAME(CL_INVALID_ARG_VALUE)
        TPACE_CL_NAME(CL_INVALID_ARG_SIZE)
        TPACE_CL_NAME(CL_INVALID_KERNEL_ARGS)
        TPACE_CL_NAME(CL_INVALID_WORK_DIMENSION)
        TPACE_CL_NAME(CL_INVALID_WORK_GROUP_SIZE)
        TPACE_CL_NAME(CL_INVALID_WORK_ITEM_SIZE)
        TPACE_CL_NAME(CL_INVALID_GLOBAL_OFFSET)
        TPACE_CL_NAME(CL_INVALID_EVENT_WAIT_LIST)
        TPACE_CL_NAME(CL_INVALID_EVENT)
        TPACE_CL_NAME(CL_INVALID_OPERATION)
        TPACE_CL_NAME(CL_INVALID_BUFFER_SIZE)
        TPACE_CL_NAME(CL_INVALID_GLOBAL_WORK_SIZE)
#undef TPACE_CL_NAME
    case -1001:
        return "CL_PLATFORM_NOT_FOUND_KHR";
    default:
        return "an unknown OpenCL error";
    }
}

/* What an error most likely means for a tpace program, and what to do. */
static inline const char *tpace_cl_error_words(cl_int e)
{
    switch (e) {
    case -1001:
        return "no OpenCL platform is installed (the ICD loader found none: install a driver, e.g. PoCL for the CPU)";
    case CL_DEVICE_NOT_FOUND:
        return "the platform has no device";
    case CL_MEM_OBJECT_ALLOCATION_FAILURE:
    case CL_OUT_OF_RESOURCES:
        return "the device ran out of memory or other resources (lower TPACE_CHUNK or TPACE_DEVICE_MEM; for a "
               "kernel, a smaller TPACE_WG or TPACE_T)";
    case CL_OUT_OF_HOST_MEMORY:
        return "host memory ran out";
    case CL_INVALID_WORK_GROUP_SIZE:
    case CL_INVALID_WORK_ITEM_SIZE:
        return "the device or this kernel does not take work groups of this shape (set a smaller TPACE_WG)";
    case CL_INVALID_BUFFER_SIZE:
        return "a buffer larger than the device allows in one allocation (lower TPACE_CHUNK)";
    case CL_BUILD_PROGRAM_FAILURE:
        return "the kernels did not compile for this device (the build log is above)";
    case CL_MEM_COPY_OVERLAP:
        return "a copy between overlapping parts of one buffer (a tpace bug: please report it)";
    default:
        return "an OpenCL call failed (a tpace bug or a driver problem: please report it)";
    }
}

/* Stop with the call that failed and what it means. */
static inline void tpace_cl_check(cl_int e, const char *call, const char *where)
{
    if (e != CL_SUCCESS) {
        char msg[1024];
        snprintf(msg, sizeof msg, "OpenCL call %s failed with %s (%d): %s", call, tpace_cl_error_name(e), (int)e,
                 tpace_cl_error_words(e));
        tpace_stop(where, msg);
    }
}
#define TPACE_CL(where, call) tpace_cl_check((call), #call, (where))

/* ---- Device pointers: a private address range, one span per allocation ---- */
#define TPACE_CL_BASE ((uintptr_t)1 << 44)
#define TPACE_CL_SPAN ((uintptr_t)1 << 40)

typedef struct tpace_cl_alloc {
    cl_mem mem;   /* NULL: a free entry */
    size_t bytes;
} tpace_cl_alloc;

/* The device, its context, the kernels and the allocations: one set for the whole
 * program, set up when it first needs the device (each executor's queues are its own,
 * tpace_cl_queues). */
typedef struct tpace_cl {
    int ready;
    cl_platform_id platform;
    cl_device_id device;
    cl_context context;
    cl_program program;
    char platform_name[256], device_name[256];
    int cpu;              /* the device is a CPU (CL_DEVICE_TYPE_CPU) */
    cl_ulong local_mem, global_mem, max_alloc;
    size_t max_group, max_items[3];
    cl_kernel *kernels;
    size_t *kernel_group; /* most work items each kernel takes on this device */
    int nkernels;
    tpace_cl_alloc *allocs;
    long nallocs, alloc_cap;
    const char *where;    /* the pipeline running, for messages */
} tpace_cl;

static tpace_cl tpace_cl_state;

/* The buffer and byte offset of a device address that `bytes` bytes from it must fit. */
static inline cl_mem tpace_cl_mem(const void *p, size_t bytes, size_t *offset)
{
    tpace_cl *c = &tpace_cl_state;
    const uintptr_t a = (uintptr_t)p;
    const long i = a >= TPACE_CL_BASE ? (long)((a - TPACE_CL_BASE) / TPACE_CL_SPAN) : -1;
    const uintptr_t start = TPACE_CL_BASE + (uintptr_t)i * TPACE_CL_SPAN + TPACE_CL_SPAN / 2;
    if (i < 0 || i >= c->nallocs || c->allocs[i].mem == NULL || a < start || a - start > c->allocs[i].bytes ||
        bytes > c->allocs[i].bytes - (a - start)) {
        tpace_stop(c->where ? c->where : "runtime",
                   "internal error: a device address outside every OpenCL buffer (please report it)");
    }
    *offset = (size_t)(a - start);
    return c->allocs[i].mem;
}

/* ---- Choosing the device ---- */

/* Whether `text` contains `part`, ignoring case. */
static inline int tpace_cl_contains(const char *text, const char *part)
{
    for (const char *t = text; *t; t++) {
        size_t i = 0;
        while (part[i] && t[i] && tolower((unsigned char)t[i]) == tolower((unsigned char)part[i]))
            i++;
        if (part[i] == '\0')
            return 1;
    }
    return *part == '\0';
}

/* An index (all digits) or -1 for a name part. */
static inline long tpace_cl_index(const char *text)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(text, &end, 10);
    return errno == 0 && end != text && *end == '\0' && v >= 0 ? v : -1;
}

/* Copy a name, cut to fit. */
static inline void tpace_cl_name(char *to, size_t size, const char *from)
{
    size_t n = strlen(from);
    if (n >= size)
        n = size - 1;
    memcpy(to, from, n);
    to[n] = '\0';
}

#define TPACE_CL_MAX_PLATFORMS 16
#define TPACE_CL_MAX_DEVICES 64

/* Pick the platform and device (TPACE_CL_PLATFORM, TPACE_CL_DEVICE), or stop with
 * the choices there are. */
static inline void tpace_cl_pick(tpace_cl *c)
{
    const char *where = c->where ? c->where : "OpenCL set-up";
    cl_platform_id platforms[TPACE_CL_MAX_PLATFORMS];
    cl_uint np = 0;
    TPACE_CL(where, clGetPlatformIDs(TPACE_CL_MAX_PLATFORMS, platforms, &np));
    np = TPACE_MIN(np, (cl_uint)TPACE_CL_MAX_PLATFORMS);
    char pname[TPACE_CL_MAX_PLATFORMS][256];
    for (cl_uint i = 0; i < np; i++)
        TPACE_CL(where, clGetPlatformInfo(platforms[i], CL_PLATFORM_NAME, sizeof pname[i], pname[i], NULL));
    const char *want_p = getenv("TPACE_CL_PLATFORM");
    const char *want_d = getenv("TPACE_CL_DEVICE");
    if (want_p != NULL && *want_p == '\0')
        want_p = NULL;
    if (want_d != NULL && *want_d == '\0')
        want_d = NULL;
    /* Every device of the platforms asked for, in platform order. */
    cl_device_id devices[TPACE_CL_MAX_DEVICES];
    int owner[TPACE_CL_MAX_DEVICES];
    cl_device_type type[TPACE_CL_MAX_DEVICES];
    char dname[TPACE_CL_MAX_DEVICES][256];
    int nd = 0, matched_platform = 0;
    const long pi = want_p ? tpace_cl_index(want_p) : -1;
    for (cl_uint i = 0; i < np; i++) {
        if (want_p && (pi >= 0 ? (long)i != pi : !tpace_cl_contains(pname[i], want_p)))
            continue;
        matched_platform = 1;
        cl_uint n = 0;
        cl_int e = clGetDeviceIDs(platforms[i], CL_DEVICE_TYPE_ALL, (cl_uint)(TPACE_CL_MAX_DEVICES - nd),
                                  devices + nd, &n);
        if (e == CL_DEVICE_NOT_FOUND)
            continue;
        tpace_cl_check(e, "clGetDeviceIDs", where);
        n = TPACE_MIN(n, (cl_uint)(TPACE_CL_MAX_DEVICES - nd));
        for (cl_uint j = 0; j < n; j++, nd++) {
            owner[nd] = (int)i;
            TPACE_CL(where, clGetDeviceInfo(devices[nd], CL_DEVICE_TYPE, sizeof type[nd], &type[nd], NULL));
            TPACE_CL(where, clGetDeviceInfo(devices[nd], CL_DEVICE_NAME, sizeof dname[nd], dname[nd], NULL));
        }
    }
    int pick = -1;
    if (want_d) {
        const long di = tpace_cl_index(want_d);
        for (int d = 0; d < nd && pick < 0; d++)
            if (di >= 0 ? d == di : tpace_cl_contains(dname[d], want_d))
                pick = d;
    } else {
        for (int d = 0; d < nd && pick < 0; d++)
            if (type[d] & CL_DEVICE_TYPE_GPU)
                pick = d;
        if (nd > 0 && pick < 0)
            pick = 0;
    }
    if (pick < 0) {
        if (want_p && !matched_platform)
            fprintf(stderr, "tpace: TPACE_CL_PLATFORM=%s names no OpenCL platform; there are:\n", want_p);
        else if (want_d)
            fprintf(stderr, "tpace: TPACE_CL_DEVICE=%s names no OpenCL device%s; there are:\n", want_d,
                    want_p ? " of the platform asked for" : "");
        else
            fprintf(stderr, "tpace: no OpenCL device found; the platforms are:\n");
        for (cl_uint i = 0; i < np; i++)
            fprintf(stderr, "  platform %u: %s\n", i, pname[i]);
        for (int d = 0; d < nd; d++)
            fprintf(stderr, "  device %d: %s (platform %d)\n", d, dname[d], owner[d]);
        tpace_stop(where, "set TPACE_CL_PLATFORM and TPACE_CL_DEVICE to an index or a part of a name above");
    }
    c->platform = platforms[owner[pick]];
    c->device = devices[pick];
    c->cpu = (type[pick] & CL_DEVICE_TYPE_CPU) != 0;
    tpace_cl_name(c->platform_name, sizeof c->platform_name, pname[owner[pick]]);
    tpace_cl_name(c->device_name, sizeof c->device_name, dname[pick]);
}

/* Build the program's kernels for the device; on failure print the build log. */
static inline void tpace_cl_build(tpace_cl *c)
{
    const char *where = c->where ? c->where : "OpenCL set-up";
    cl_int e = CL_SUCCESS;
    const char *source = tpace_cl_source();
    c->program = clCreateProgramWithSource(c->context, 1, &source, NULL, &e);
    tpace_cl_check(e, "clCreateProgramWithSource", where);
    /* C rounds float division and square root correctly; OpenCL does only when asked. */
    cl_device_fp_config fp = 0;
    TPACE_CL(where, clGetDeviceInfo(c->device, CL_DEVICE_SINGLE_FP_CONFIG, sizeof fp, &fp, NULL));
    const int exact = (fp & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) != 0;
    if (!exact)
        fprintf(stderr, "tpace: note: OpenCL device %s does not round float division and square root correctly: "
                        "float results may differ from the sequential program's in the last bit\n", c->device_name);
    e = clBuildProgram(c->program, 1, &c->device, exact ? "-cl-fp32-correctly-rounded-divide-sqrt" : "", NULL, NULL);
    if (e != CL_SUCCESS) {
        size_t size = 0;
        clGetProgramBuildInfo(c->program, c->device, CL_PROGRAM_BUILD_LOG, 0, NULL, &size);
        char *log = (char *)malloc(size + 1);
        if (log != NULL && clGetProgramBuildInfo(c->program, c->device, CL_PROGRAM_BUILD_LOG, size, log, NULL) ==
                               CL_SUCCESS) {
            log[size] = '\0';
            fprintf(stderr, "tpace: the OpenCL kernels did not build for %s; the build log:\n%s\n", c->device_name, log);
        }
        free(log);
        tpace_cl_check(e, "clBuildProgram", where);
    }
    c->nkernels = tpace_cl_kernel_count();
    c->kernels = (cl_kernel *)calloc((size_t)TPACE_MAX(c->nkernels, 1), sizeof *c->kernels);
    c->kernel_group = (size_t *)calloc((size_t)TPACE_MAX(c->nkernels, 1), sizeof *c->kernel_group);
    if (c->kernels == NULL || c->kernel_group == NULL)
        tpace_stop(where, "host memory ran out setting up the OpenCL kernels");
    for (int k = 0; k < c->nkernels; k++) {
        c->kernels[k] = clCreateKernel(c->program, tpace_cl_kernel_name(k), &e);
        tpace_cl_check(e, "clCreateKernel", where);
        TPACE_CL(where, clGetKernelWorkGroupInfo(c->kernels[k], c->device, CL_KERNEL_WORK_GROUP_SIZE,
                                                 sizeof c->kernel_group[k], &c->kernel_group[k], NULL));
    }
}

/* The device, its context and the built kernels, set up on first use (the executor
 * asks for free memory before it starts the queues). */
static inline tpace_cl *tpace_cl_get(void)
{
    tpace_cl *c = &tpace_cl_state;
    if (c->ready)
        return c;
    const char *where = c->where ? c->where : "OpenCL set-up";
    tpace_cl_pick(c);
    TPACE_CL(where, clGetDeviceInfo(c->device, CL_DEVICE_LOCAL_MEM_SIZE, sizeof c->local_mem, &c->local_mem, NULL));
    TPACE_CL(where, clGetDeviceInfo(c->device, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof c->global_mem, &c->global_mem, NULL));
    TPACE_CL(where, clGetDeviceInfo(c->device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof c->max_alloc, &c->max_alloc, NULL));
    TPACE_CL(where, clGetDeviceInfo(c->device, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof c->max_group, &c->max_group, NULL));
    cl_uint dims = 0;
    TPACE_CL(where, clGetDeviceInfo(c->device, CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS, sizeof dims, &dims, NULL));
    size_t items[16] = {0};
    TPACE_CL(where, clGetDeviceInfo(c->device, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof(size_t) * TPACE_MIN(dims, 16u),
                                    items, NULL));
    for (int d = 0; d < 3; d++)
        c->max_items[d] = d < (int)dims ? items[d] : 1;
    cl_int e = CL_SUCCESS;
    c->context = clCreateContext(NULL, 1, &c->device, NULL, NULL, &e);
    tpace_cl_check(e, "clCreateContext", where);
    tpace_cl_build(c);
    c->ready = 1;
    return c;
}

/* ---- The hooks ---- */

TPACE_HOOK void *tpace_dev_alloc(tpace_rt *r, size_t bytes)
{
    tpace_cl *c = tpace_cl_get();
    if (bytes > c->max_alloc) {
        fprintf(stderr, "tpace: %s: note: OpenCL device %s allocates at most %llu bytes in one buffer, %zu asked\n",
                r->plan.s.where, c->device_name, (unsigned long long)c->max_alloc, bytes);
        return NULL;
    }
    cl_int e = CL_SUCCESS;
    cl_mem mem = clCreateBuffer(c->context, CL_MEM_READ_WRITE, TPACE_MAX(bytes, (size_t)1), NULL, &e);
    if (e == CL_MEM_OBJECT_ALLOCATION_FAILURE || e == CL_OUT_OF_RESOURCES || e == CL_INVALID_BUFFER_SIZE ||
        e == CL_OUT_OF_HOST_MEMORY)
        return NULL; /* the executor says which parameter to lower */
    tpace_cl_check(e, "clCreateBuffer", r->plan.s.where);
    long i = 0;
    while (i < c->nallocs && c->allocs[i].mem != NULL)
        i++;
    if (i == c->nallocs) {
        c->allocs = (tpace_cl_alloc *)tpace_trace_grow(&r->plan, c->allocs, &c->alloc_cap, c->nallocs,
                                                       sizeof *c->allocs, 64);
        c->nallocs++;
    }
    c->allocs[i].mem = mem;
    c->allocs[i].bytes = bytes;
    return (void *)(TPACE_CL_BASE + (uintptr_t)i * TPACE_CL_SPAN + TPACE_CL_SPAN / 2);
}

TPACE_HOOK void tpace_dev_free(tpace_rt *r, void *p)
{
    size_t off = 0;
    cl_mem mem = tpace_cl_mem(p, 0, &off);
    TPACE_CL(r->plan.s.where, clReleaseMemObject(mem));
    tpace_cl *c = &tpace_cl_state;
    for (long i = 0; i < c->nallocs; i++)
        if (c->allocs[i].mem == mem)
            c->allocs[i].mem = NULL;
}

/* One executor's queues (one per slot and the mm carry queue), marks and TPACE_TRACE
 * stamps: several executors may drive the device at once (TPACE_GPUS, the scale-out
 * part), each with a set of its own (r->target). */
typedef struct tpace_cl_queues {
    cl_command_queue queue[TPACE_MAX_SLOTS + 1];
    int nqueues;
    cl_event mark[TPACE_MARKS];
    int profiling;    /* queues time their commands (TPACE_TRACE) */
    cl_event *stamps; /* markers, in the order recorded */
    long nstamps, stamp_cap;
    cl_event *flags;  /* tpace_dev_flag's markers, in the order recorded */
    long nflags, flag_cap;
} tpace_cl_queues;

static inline tpace_cl_queues *tpace_cl_q(tpace_rt *r)
{
    if (r->target == NULL)
        tpace_stop(r->plan.s.where, "internal error: an OpenCL queue used before the device was set up (please report it)");
    return (tpace_cl_queues *)r->target;
}

TPACE_HOOK void tpace_dev_upload(tpace_rt *r, void *dev, const void *host, size_t bytes, int q)
{
    size_t off = 0;
    cl_mem mem = tpace_cl_mem(dev, bytes, &off);
    if (bytes == 0)
        return;
    TPACE_CL(r->plan.s.where,
             clEnqueueWriteBuffer(tpace_cl_q(r)->queue[q], mem, CL_FALSE, off, bytes, host, 0, NULL, NULL));
}

TPACE_HOOK void tpace_dev_download(tpace_rt *r, void *host, const void *dev, size_t bytes, int q)
{
    size_t off = 0;
    cl_mem mem = tpace_cl_mem(dev, bytes, &off);
    if (bytes == 0)
        return;
    TPACE_CL(r->plan.s.where,
             clEnqueueReadBuffer(tpace_cl_q(r)->queue[q], mem, CL_FALSE, off, bytes, host, 0, NULL, NULL));
}

TPACE_HOOK void tpace_dev_copy(tpace_rt *r, void *dst, const void *src, size_t bytes, int q)
{
    size_t to = 0, from = 0;
    cl_mem d = tpace_cl_mem(dst, bytes, &to);
    cl_mem s = tpace_cl_mem(src, bytes, &from);
    if (bytes == 0)
        return;
    TPACE_CL(r->plan.s.where, clEnqueueCopyBuffer(tpace_cl_q(r)->queue[q], s, d, from, to, bytes, 0, NULL, NULL));
}

/* Another queue may wait for an event only once the queue that holds it has
 * submitted it: every marker is flushed. */
TPACE_HOOK void tpace_dev_wait(tpace_rt *r, int from_q, int to_q)
{
    tpace_cl_queues *c = tpace_cl_q(r);
    cl_event e = NULL;
    TPACE_CL(r->plan.s.where, clEnqueueMarkerWithWaitList(c->queue[from_q], 0, NULL, &e));
    TPACE_CL(r->plan.s.where, clFlush(c->queue[from_q]));
    TPACE_CL(r->plan.s.where, clEnqueueBarrierWithWaitList(c->queue[to_q], 1, &e, NULL));
    TPACE_CL(r->plan.s.where, clReleaseEvent(e));
}

TPACE_HOOK void tpace_dev_mark(tpace_rt *r, int q, int id)
{
    tpace_cl_queues *c = tpace_cl_q(r);
    if (c->mark[id] != NULL)
        TPACE_CL(r->plan.s.where, clReleaseEvent(c->mark[id]));
    c->mark[id] = NULL;
    TPACE_CL(r->plan.s.where, clEnqueueMarkerWithWaitList(c->queue[q], 0, NULL, &c->mark[id]));
    TPACE_CL(r->plan.s.where, clFlush(c->queue[q]));
}

TPACE_HOOK void tpace_dev_wait_mark(tpace_rt *r, int id, int q)
{
    tpace_cl_queues *c = tpace_cl_q(r);
    if (c->mark[id] != NULL)
        TPACE_CL(r->plan.s.where, clEnqueueBarrierWithWaitList(c->queue[q], 1, &c->mark[id], NULL));
}

TPACE_HOOK void tpace_dev_sync(tpace_rt *r)
{
    tpace_cl_queues *c = tpace_cl_q(r);
    for (int q = 0; q < c->nqueues; q++)
        TPACE_CL(r->plan.s.where, clFlush(c->queue[q]));
    for (int q = 0; q < c->nqueues; q++)
        TPACE_CL(r->plan.s.where, clFinish(c->queue[q]));
}

/* TPACE_TRACE: a marker on queue q, whose end time is when q's work so far was done. */
TPACE_HOOK int tpace_dev_stamp(tpace_rt *r, int q)
{
    tpace_cl_queues *c = tpace_cl_q(r);
    if (!c->profiling)
        return -1;
    c->stamps = (cl_event *)tpace_trace_grow(&r->plan, c->stamps, &c->stamp_cap, c->nstamps, sizeof *c->stamps, 1024);
    TPACE_CL(r->plan.s.where, clEnqueueMarkerWithWaitList(c->queue[q], 0, NULL, &c->stamps[c->nstamps]));
    return (int)c->nstamps++;
}

TPACE_HOOK double tpace_dev_stamp_ms(tpace_rt *r, int from, int to)
{
    tpace_cl_queues *c = tpace_cl_q(r);
    cl_ulong a = 0, b = 0;
    TPACE_CL(r->plan.s.where, clGetEventProfilingInfo(c->stamps[from], CL_PROFILING_COMMAND_END, sizeof a, &a, NULL));
    TPACE_CL(r->plan.s.where, clGetEventProfilingInfo(c->stamps[to], CL_PROFILING_COMMAND_END, sizeof b, &b, NULL));
    return ((double)b - (double)a) * 1e-6;
}

/* The host waits until a stamp's marker is done. */
TPACE_HOOK void tpace_dev_stamp_wait(tpace_rt *r, int stamp)
{
    tpace_cl_queues *c = tpace_cl_q(r);
    if (stamp < 0)
        return;
    for (int q = 0; q < c->nqueues; q++)
        TPACE_CL(r->plan.s.where, clFlush(c->queue[q]));
    TPACE_CL(r->plan.s.where, clWaitForEvents(1, &c->stamps[stamp]));
}

/* The device's name, as CL_DEVICE_NAME gives it. */
TPACE_HOOK void tpace_dev_name(tpace_rt *r, char *name, size_t size)
{
    (void)r;
    tpace_cl_name(name, size, tpace_cl_get()->device_name);
}

/* A GPU (or an accelerator) is checked against the model by default; a CPU device (PoCL) is not:
 * no GPU profile predicts it (TPACE_REPLAN=1 asks for it). */
TPACE_HOOK int tpace_dev_replans(tpace_rt *r)
{
    (void)r;
    return !tpace_cl_get()->cpu;
}

/* OpenCL does not say how much device memory is free: the device's global memory,
 * less a tenth for the context, the kernels and other programs. */
TPACE_HOOK size_t tpace_dev_free_memory(tpace_rt *r)
{
    (void)r;
    tpace_cl *c = tpace_cl_get();
    return (size_t)(c->global_mem / 10 * 9);
}

/* Local memory a work group may use. The runtime asks it only where the target leaves the
 * steps per kernel to TPACE_FUSE; OpenCL chooses its own T (tpace_cl_choose), checking its
 * tiles against this same figure. */
TPACE_MAYBE_UNUSED TPACE_HOOK long tpace_dev_shared_limit(tpace_rt *r)
{
    (void)r;
    return (long)tpace_cl_get()->local_mem;
}

/* One device a process: the one TPACE_CL_PLATFORM and TPACE_CL_DEVICE choose (MPI
 * ranks each take theirs; TPACE_GPUS executors of one process share it). */
TPACE_HOOK int tpace_dev_count(void)
{
    return 1;
}

TPACE_HOOK void tpace_dev_activate(tpace_rt *r)
{
    (void)r; /* one device, one context: nothing to switch */
}

TPACE_HOOK void tpace_dev_begin(tpace_rt *r)
{
    tpace_cl *c = tpace_cl_get();
    tpace_cl_queues *qs = (tpace_cl_queues *)calloc(1, sizeof *qs);
    if (qs == NULL)
        tpace_stop(r->plan.s.where, "host memory ran out setting up the OpenCL queues");
    const char *trace = getenv("TPACE_TRACE");
    c->where = r->plan.s.where;
    qs->profiling = (trace != NULL && *trace != '\0') || r->plan.replan;
    qs->nqueues = r->plan.queues;
    r->target = qs;
    for (int q = 0; q < qs->nqueues; q++) {
        cl_int e = CL_SUCCESS;
        qs->queue[q] = clCreateCommandQueue(c->context, c->device, qs->profiling ? CL_QUEUE_PROFILING_ENABLE : 0, &e);
        tpace_cl_check(e, "clCreateCommandQueue", r->plan.s.where);
    }
}

TPACE_HOOK void tpace_dev_end(tpace_rt *r)
{
    tpace_cl_queues *c = tpace_cl_q(r);
    tpace_dev_sync(r);
    for (long i = 0; i < c->nstamps; i++)
        TPACE_CL(r->plan.s.where, clReleaseEvent(c->stamps[i]));
    free(c->stamps);
    for (long i = 0; i < c->nflags; i++)
        TPACE_CL(r->plan.s.where, clReleaseEvent(c->flags[i]));
    free(c->flags);
    for (int m = 0; m < TPACE_MARKS; m++)
        if (c->mark[m] != NULL)
            TPACE_CL(r->plan.s.where, clReleaseEvent(c->mark[m]));
    for (int q = 0; q < c->nqueues; q++)
        TPACE_CL(r->plan.s.where, clReleaseCommandQueue(c->queue[q]));
    free(c);
    r->target = NULL;
}

/* The executors of one process share its one device, context and kernel objects (whose
 * arguments clSetKernelArg sets): they run one after another on one host thread, each
 * issuing its non-blocking commands before any of them waits. */
TPACE_HOOK int tpace_dev_threads(void)
{
    return 0;
}

/* One device a process: ghost planes between its executors go through host memory. */
TPACE_HOOK int tpace_dev_peer_able(tpace_rt *r, int other)
{
    (void)r;
    (void)other;
    return 0;
}

TPACE_HOOK void tpace_dev_peer_enable(tpace_rt *r, int other)
{
    (void)other;
    tpace_fail(&r->plan, "internal error: OpenCL runs no copies between devices here (please report it)");
}

TPACE_HOOK void tpace_dev_peer_copy(tpace_rt *r, void *dst, int dst_device, const void *src, size_t bytes, int q)
{
    (void)dst;
    (void)dst_device;
    (void)src;
    (void)bytes;
    (void)q;
    tpace_fail(&r->plan, "internal error: OpenCL runs no copies between devices here (please report it)");
}

/* Host memory stays as it is (OpenCL 1.2 cannot page-lock memory the program has). */
TPACE_HOOK void tpace_dev_pin(tpace_rt *r, void *host, size_t bytes)
{
    (void)r;
    (void)host;
    (void)bytes;
}

TPACE_HOOK void tpace_dev_unpin(tpace_rt *r, void *host)
{
    (void)r;
    (void)host;
}

/* A flag: a marker on queue q, which the host waits for (a chunk's last download, whose
 * planes then go on to another rank). */
TPACE_HOOK int tpace_dev_flag(tpace_rt *r, int q)
{
    tpace_cl_queues *c = tpace_cl_q(r);
    if (c->nflags == c->flag_cap) {
        const long want = c->flag_cap ? 2 * c->flag_cap : 64;
        cl_event *more = (cl_event *)realloc(c->flags, (size_t)want * sizeof *more);
        if (more == NULL)
            tpace_stop(r->plan.s.where, "host memory ran out recording the chunks' last downloads");
        c->flags = more;
        c->flag_cap = want;
    }
    TPACE_CL(r->plan.s.where, clEnqueueMarkerWithWaitList(c->queue[q], 0, NULL, &c->flags[c->nflags]));
    TPACE_CL(r->plan.s.where, clFlush(c->queue[q]));
    return (int)c->nflags++;
}

TPACE_HOOK void tpace_dev_flag_wait(tpace_rt *r, int id)
{
    TPACE_CL(r->plan.s.where, clWaitForEvents(1, &tpace_cl_q(r)->flags[id]));
}

/* Kernels combine each work group's terms and add them into the step's slot with an
 * atomic compare-and-swap (float: 32-bit, double: cl_khr_int64_base_atomics). */
TPACE_HOOK int tpace_dev_reduces_on_device(void)
{
    return 1;
}

/* ---- Launching: kernel arguments and the launch, checked ---- */

/* Set argument *arg of kernel k (and move on to the next). */
static inline void tpace_cl_arg(tpace_rt *r, int k, cl_uint *arg, size_t size, const void *value)
{
    cl_int e = clSetKernelArg(tpace_cl_state.kernels[k], *arg, size, value);
    if (e != CL_SUCCESS) {
        char msg[1024];
        snprintf(msg, sizeof msg, "OpenCL call clSetKernelArg (argument %u of kernel %s) failed with %s (%d): %s", *arg,
                 tpace_cl_kernel_name(k), tpace_cl_error_name(e), (int)e, tpace_cl_error_words(e));
        tpace_stop(r->plan.s.where, msg);
    }
    (*arg)++;
}

/* An array's arguments: its buffer and the element offset of the address `dev`
 * (`fallback` stands in for a NULL address, which the kernel then does not use). */
static inline void tpace_cl_arg_array(tpace_rt *r, int k, cl_uint *arg, const void *dev, size_t elem,
                                      const void *fallback)
{
    size_t off = 0;
    cl_mem mem = tpace_cl_mem(dev != NULL ? dev : fallback, 0, &off);
    const cl_long at = dev != NULL ? (cl_long)(off / elem) : 0;
    tpace_cl_arg(r, k, arg, sizeof mem, &mem);
    tpace_cl_arg(r, k, arg, sizeof at, &at);
}

/* Local memory of `bytes` bytes (at least one element). */
static inline void tpace_cl_arg_local(tpace_rt *r, int k, cl_uint *arg, size_t bytes)
{
    tpace_cl_arg(r, k, arg, TPACE_MAX(bytes, (size_t)8), NULL);
}

/* Launch kernel k on queue q over `global` work items in groups of `local` (dims 1 to 3). */
/* GPUs take at most this many work groups along their second and third axes in one
 * launch (CUDA's grid limit, which NVIDIA's OpenCL inherits): a launch with more is
 * cut into several, each with a global offset (the kernels count their groups from
 * their global ids, offset included). */
#define TPACE_CL_MAX_GROUPS_YZ 65535

static inline void tpace_cl_launch(tpace_rt *r, int k, int q, cl_uint dims, const size_t *global,
                                   const size_t *local, const char *what)
{
    tpace_cl *c = &tpace_cl_state;
    const cl_command_queue queue = tpace_cl_q(r)->queue[q];
    size_t step[3] = {global[0], 1, 1}, offset[3] = {0, 0, 0}, part[3] = {global[0], 1, 1};
    for (cl_uint d = 1; d < dims; d++)
        step[d] = TPACE_MIN(global[d], (size_t)TPACE_CL_MAX_GROUPS_YZ * local[d]);
    for (offset[2] = 0; offset[2] < (dims > 2 ? global[2] : 1); offset[2] += step[2]) {
        for (offset[1] = 0; offset[1] < (dims > 1 ? global[1] : 1); offset[1] += step[1]) {
            for (cl_uint d = 1; d < dims; d++)
                part[d] = TPACE_MIN(step[d], global[d] - offset[d]);
            cl_int e = clEnqueueNDRangeKernel(queue, c->kernels[k], dims, offset, part, local, 0, NULL, NULL);
            if (e != CL_SUCCESS) {
                char msg[1024];
                snprintf(msg, sizeof msg,
                         "OpenCL call clEnqueueNDRangeKernel (%s, work group %zux%zux%zu, %zu x %zu x %zu work items) "
                         "failed with %s (%d): %s",
                         what, local[0], dims > 1 ? local[1] : 1, dims > 2 ? local[2] : 1, part[0], part[1], part[2],
                         tpace_cl_error_name(e), (int)e, tpace_cl_error_words(e));
                tpace_stop(r->plan.s.where, msg);
            }
        }
    }
}

/* A whole number argument. */
static inline void tpace_cl_arg_long(tpace_rt *r, int k, cl_uint *arg, long value)
{
    const cl_long v = (cl_long)value;
    tpace_cl_arg(r, k, arg, sizeof v, &v);
}

/* What a tiled kernel needs to know about its group of steps, passed by value: the
 * executor's tpace_fuse_args without the strips' addresses (separate arguments), as the
 * kernels' prelude declares it. */
typedef struct tpace_cl_fuse {
    cl_long base, rows_lo, rows_hi, box_lo, box_hi, seg_lo, seg_hi, level0, skew, strip_rows, edge_in, edge_out;
    cl_long steps, has_sin, has_sout, unused;
    cl_long wlo[TPACE_FUSE_MAX], whi[TPACE_FUSE_MAX];
} tpace_cl_fuse;

static inline tpace_cl_fuse tpace_cl_fuse_of(const tpace_fuse_args *f, int steps)
{
    tpace_cl_fuse g;
    memset(&g, 0, sizeof g);
    g.base = f->tp_base;
    g.rows_lo = f->tp_rows_lo;
    g.rows_hi = f->tp_rows_hi;
    g.box_lo = f->tp_box_lo;
    g.box_hi = f->tp_box_hi;
    g.seg_lo = f->tp_seg_lo;
    g.seg_hi = f->tp_seg_hi;
    g.level0 = f->tp_level0;
    g.skew = f->tp_skew;
    g.strip_rows = f->tp_strip_rows;
    g.edge_in = f->tp_edge_in;
    g.edge_out = f->tp_edge_out;
    g.steps = steps;
    g.has_sin = f->tp_strip_in != NULL;
    g.has_sout = f->tp_strip_out != NULL;
    for (int l = 0; l < steps && l < TPACE_FUSE_MAX; l++) {
        g.wlo[l] = f->tp_wlo[l];
        g.whi[l] = f->tp_whi[l];
    }
    return g;
}

/* Work items along an axis of `n` points in groups of `wg`: n rounded up to whole groups. */
static inline size_t tpace_cl_cover(long n, size_t wg)
{
    const size_t m = (size_t)TPACE_MAX(n, 1L);
    return (m + wg - 1) / wg * wg;
}

/* ---- Work groups and temporal blocking: the evolution-vector algorithm of the
 * stencil-directives paper (model/evolution.rs, the same decisions in the same order),
 * run when a pipeline starts for its actual extents; TPACE_WG and TPACE_T override. ---- */

/* Most steps a tiled kernel advances (the translator's plan::CHOSEN_MAX_STEPS). */
#define TPACE_CL_T_MAX 4

/* One pipeline's figures (printed by the translator) and what it chose for this run. */
typedef struct tpace_cl_config {
    const char *name;       /* "pipeline 1" */
    int rank;               /* dimensions of the grid */
    const char *machine;    /* the profile the figures come from */
    int phi;                /* growth rule: 0 GPU, 1 Xeon Phi */
    double bf_sys;          /* system B/F */
    unsigned long long tile_bytes, min_groups, max_group; /* on-chip bytes a tile, fewest groups, most items (0: any) */
    long radius[3];         /* stencil radius, x (innermost) first */
    long arrays, tile_arrays, elem, flops;
    int max_t;              /* most steps one kernel advances: the tiled kernel's limit, 1 without one */
    long span[3];           /* tiled kernel: tile growth per step along each work-group axis */
    long tile_elem;         /* tiled kernel: bytes per element */
    double stream_bps;      /* priced choice: bytes a second one-step kernels stream (0: not priced) */
    double tile_point_s;    /* ... seconds a tiled kernel spends per point it computes (0: not priced) */
    int kernel_lo, kernel_hi; /* the pipeline's kernels in the program's table */
    /* Chosen when the pipeline starts: */
    size_t wg[3];           /* work-group shape, x first */
    int t;                  /* steps per tiled kernel */
} tpace_cl_config;

/* A parameter vector (x, y, z, t). */
typedef struct tpace_cl_pv {
    unsigned long long g[3], t;
} tpace_cl_pv;

/* Points of the group widened by `steps` halos. */
static inline unsigned long long tpace_cl_widened(const tpace_cl_config *c, const tpace_cl_pv *p,
                                                  unsigned long long steps)
{
    unsigned long long v = 1;
    for (int d = 0; d < 3; d++)
        v *= p->g[d] + 2ULL * (unsigned long long)c->radius[d] * steps;
    return v;
}

/* Algorithm B/F for a block of p->t steps (evolution.rs `bf`). */
static inline double tpace_cl_bf(const tpace_cl_config *c, const tpace_cl_pv *p)
{
    const unsigned long long t = TPACE_MAX(p->t, 1ULL);
    unsigned long long computed = 0;
    for (unsigned long long left = 0; left < t; left++)
        computed += tpace_cl_widened(c, p, left);
    const double bf1 = (double)(c->arrays * c->elem) / (double)TPACE_MAX(c->flops, 1L);
    return bf1 * (double)(p->g[0] * p->g[1] * p->g[2]) / ((double)t * (double)computed);
}

/* Why a proposal is refused (evolution.rs `check`), 0 when it is taken. */
enum { TPACE_CL_TAKEN, TPACE_CL_BEYOND_GRID, TPACE_CL_TOO_LARGE, TPACE_CL_TILE, TPACE_CL_COMPUTE, TPACE_CL_FEW, TPACE_CL_STEPS };
static inline int tpace_cl_refusal(const tpace_cl_config *c, const unsigned long long *ext, const tpace_cl_pv *p,
                                   int max_t)
{
    const int rank = TPACE_MIN(c->rank, 3);
    if (p->t > (unsigned long long)max_t)
        return TPACE_CL_STEPS;
    for (int d = 0; d < rank; d++)
        if (p->g[d] > ext[d])
            return TPACE_CL_BEYOND_GRID;
    const unsigned long long size = p->g[0] * p->g[1] * p->g[2];
    if (c->max_group && size > c->max_group)
        return TPACE_CL_TOO_LARGE;
    unsigned long long tile = 0;
    for (unsigned long long j = 1; j <= TPACE_MAX(p->t, 1ULL); j++)
        tile += tpace_cl_widened(c, p, j);
    if (tile * (unsigned long long)(c->tile_arrays * c->elem) > c->tile_bytes)
        return TPACE_CL_TILE;
    if (tpace_cl_bf(c, p) < c->bf_sys)
        return TPACE_CL_COMPUTE;
    double items = 1.0;
    for (int d = 0; d < rank; d++)
        items *= (double)(ext[d] > 2ULL * (unsigned long long)c->radius[d] ? ext[d] - 2ULL * (unsigned long long)c->radius[d] : 0);
    if (items / (double)size < (double)c->min_groups)
        return TPACE_CL_FEW;
    return TPACE_CL_TAKEN;
}

/* The search (evolution.rs `evolve_up_to`), for extents ext (x first) and at most max_t steps. */
static inline tpace_cl_pv tpace_cl_evolve(const tpace_cl_config *c, const unsigned long long *ext, int max_t)
{
    const int rank = TPACE_MAX(TPACE_MIN(c->rank, 3), 1);
    const int z = rank - 1, y = rank >= 2 ? 1 : -1;
    tpace_cl_pv pv = {{1, 1, 1}, 1};
    int ev[4] = {1, 1, 1, 1};
    for (int d = rank; d < 3; d++)
        ev[d] = 0;
    int yz_open = !c->phi;
    while (ev[0] || ev[1] || ev[2] || ev[3]) {
        int d = -1;
        unsigned long long value = 0;
        if (ev[0] && pv.g[0] < 32) {
            d = 0;
            value = 32;
        } else if (ev[3] && tpace_cl_bf(c, &pv) > c->bf_sys) {
            d = 3;
            value = pv.t + 1;
        } else if (ev[0] && (c->phi || pv.g[0] == pv.g[z])) {
            d = 0;
            value = pv.g[0] * 2;
        } else if (y >= 0 && yz_open && ev[y] && pv.g[y] == pv.g[z]) {
            d = y;
            value = pv.g[y] * 2;
        } else if (yz_open && ev[z]) {
            d = z;
            value = pv.g[z] * 2;
        }
        if (d < 0)
            break;
        tpace_cl_pv tried = pv;
        if (d == 3)
            tried.t = value;
        else
            tried.g[d] = value;
        const int why = tpace_cl_refusal(c, ext, &tried, max_t);
        if (why == TPACE_CL_TAKEN) {
            pv = tried;
        } else {
            ev[d] = 0;
            if (d == 0 && why == TPACE_CL_TILE)
                yz_open = 1;
        }
    }
    return pv;
}

/* Work groups a launch has: interior points over the group's size (evolution.rs `groups`). */
static inline double tpace_cl_groups(const tpace_cl_config *c, const unsigned long long *ext, const tpace_cl_pv *p)
{
    const int rank = TPACE_MIN(c->rank, 3);
    double items = 1.0;
    for (int d = 0; d < rank; d++)
        items *= (double)(ext[d] > 2ULL * (unsigned long long)c->radius[d] ? ext[d] - 2ULL * (unsigned long long)c->radius[d] : 0);
    return items / (double)(p->g[0] * p->g[1] * p->g[2]);
}

/* Work items a one-step group puts along x before y where the grid has a y (opencl.rs
 * `ROW_ITEMS`). */
#define TPACE_CL_ROW_ITEMS 64ULL

/* The work group of one-step kernels (opencl.rs `row_group`): a row along x of up to
 * TPACE_CL_ROW_ITEMS (as long as the group may be on a 1-D grid) and the grid is, in powers
 * of two, then y as far as the group may go, then z where y covers its extent; past 32 work
 * items only while the launch keeps the fewest work groups. */
static inline tpace_cl_pv tpace_cl_row_group(const tpace_cl_config *c, const unsigned long long *ext)
{
    const int rank = TPACE_MAX(TPACE_MIN(c->rank, 3), 1);
    const unsigned long long limit = c->max_group ? c->max_group : 1024ULL;
    tpace_cl_pv p = {{1, 1, 1}, 1};
    for (int d = 0; d < rank; d++) {
        const unsigned long long row_cap = d == 0 && rank > 1 ? TPACE_CL_ROW_ITEMS : ~0ULL;
        for (;;) {
            tpace_cl_pv next = p;
            next.g[d] *= 2;
            const unsigned long long size = next.g[0] * next.g[1] * next.g[2];
            if (next.g[d] > ext[d] || next.g[d] > row_cap || size > limit ||
                (size > 32 && tpace_cl_groups(c, ext, &next) < (double)c->min_groups))
                break;
            p = next;
        }
        if (d > 0 && p.g[d] < ext[d])
            break;
    }
    return p;
}

/* Seconds per point and step of kernels of p->t steps on groups p->g (opencl.rs
 * `point_seconds`): one-step kernels stream the arrays; a tiled kernel loads its group
 * widened by T steps' reach once and computes the shrinking widened groups at
 * tile_point_s a point; the larger, per point kept and step. */
static inline double tpace_cl_point_seconds(const tpace_cl_config *c, const tpace_cl_pv *p)
{
    const double stream = (double)(c->arrays * c->elem) / c->stream_bps;
    const unsigned long long t = TPACE_MAX(p->t, 1ULL);
    if (t == 1)
        return stream;
    const double kept = (double)(t * p->g[0] * p->g[1] * p->g[2]);
    unsigned long long computed = 0;
    for (unsigned long long left = 0; left < t; left++)
        computed += tpace_cl_widened(c, p, left);
    const double loaded = (double)tpace_cl_widened(c, p, t);
    const double mem = stream * loaded / kept, tile = c->tile_point_s * (double)computed / kept;
    return mem > tile ? mem : tile;
}

/* The choice for extents ext: where the profile prices tiles, the cheapest of T = 1 on the
 * row group and each T up to max_t on the group the search reaches with that limit
 * (opencl.rs `priced`); else the paper's search. */
static inline tpace_cl_pv tpace_cl_priced(const tpace_cl_config *c, const unsigned long long *ext)
{
    if (!(c->stream_bps > 0.0 && c->tile_point_s > 0.0))
        return tpace_cl_evolve(c, ext, c->max_t);
    tpace_cl_pv best = tpace_cl_row_group(c, ext);
    double best_s = tpace_cl_point_seconds(c, &best);
    for (int t = 2; t <= c->max_t; t++) {
        const tpace_cl_pv p = tpace_cl_evolve(c, ext, t);
        if (p.t != (unsigned long long)t)
            continue;
        const double s = tpace_cl_point_seconds(c, &p);
        if (s < best_s) {
            best = p;
            best_s = s;
        }
    }
    return best;
}

/* Local memory the tiled kernel needs for steps of `t`: two tiles, the group widened
 * by t and by t - 1 steps' reach. 0 for one step. */
static inline size_t tpace_cl_local_bytes(const tpace_cl_config *c, const size_t *wg, int t)
{
    if (t < 2 || c->tile_elem == 0)
        return 0;
    size_t a = 1, b = 1;
    for (int d = 0; d < 3; d++) {
        a *= wg[d] + (size_t)c->span[d] * (size_t)t;
        b *= wg[d] + (size_t)c->span[d] * (size_t)(t - 1);
    }
    return (a + b) * (size_t)c->tile_elem;
}

/* Elements of the tiled kernel's two tiles for `steps` steps: the group widened by
 * steps and by steps - 1 steps' reach. */
static inline void tpace_cl_tiles(const tpace_cl_config *c, int steps, size_t *tile)
{
    tile[0] = tile[1] = 1;
    for (int d = 0; d < 3; d++) {
        tile[0] *= c->wg[d] + (size_t)c->span[d] * (size_t)steps;
        tile[1] *= c->wg[d] + (size_t)c->span[d] * (size_t)(steps - 1);
    }
}

/* TPACE_WG: 1 to 3 sizes, x (innermost) first, separated by `x` or `,`; sizes past
 * the grid's rank are ignored, with a note (one setting may serve pipelines of several
 * ranks). Returns 0 when unset. */
static inline int tpace_cl_env_wg(const tpace_shape *s, int rank, size_t *wg)
{
    const char *text = getenv("TPACE_WG");
    if (text == NULL || *text == '\0')
        return 0;
    long v[3] = {1, 1, 1};
    int n = 0;
    const char *at = text;
    int ok = 1;
    while (ok) {
        char *end = NULL;
        errno = 0;
        long x = strtol(at, &end, 10);
        ok = n < 3 && end != at && errno == 0 && x >= 1 && x <= 65536 && *at >= '0' && *at <= '9';
        if (!ok)
            break;
        v[n++] = x;
        if (*end == '\0')
            break;
        ok = *end == 'x' || *end == 'X' || *end == ',';
        at = end + 1;
    }
    if (!ok) {
        char msg[512];
        snprintf(msg, sizeof msg, "TPACE_WG=%.64s is not a work-group shape: give 1 to 3 sizes from 1 to 65536, x "
                                  "(innermost) first, separated by x or a comma (e.g. 64x4 or 64,4,1)", text);
        tpace_stop(s->where, msg);
    }
    for (int d = rank; d < 3; d++)
        if (v[d] != 1) {
            fprintf(stderr, "tpace: %s: note: TPACE_WG=%s gives %d sizes but the grid has %d dimension%s: the sizes "
                            "past it are taken as 1\n", s->where, text, n, rank, rank == 1 ? "" : "s");
            break;
        }
    for (int d = 0; d < 3; d++)
        wg[d] = d < rank ? (size_t)v[d] : 1;
    return 1;
}

/* The most work items every kernel of the pipeline takes on this device. */
static inline size_t tpace_cl_group_limit(const tpace_cl *cl, const tpace_cl_config *c)
{
    size_t limit = cl->max_group;
    for (int k = c->kernel_lo; k < c->kernel_hi; k++)
        limit = TPACE_MIN(limit, cl->kernel_group[k]);
    return limit;
}

/* The pipeline's configuration with the OpenCL figures of the profile the run plans with
 * (tpace_machine_for, as the out-of-core plan takes it); `c` itself where that is the profile it
 * was translated for, or one without such figures. `about` gets what the report says of it. */
static inline const tpace_cl_config *tpace_cl_for_device(const tpace_shape *s, const tpace_cl_config *c,
                                                         const char *device, char *about, size_t size)
{
    static tpace_cl_config mine;
    const tpace_machine *match = NULL;
    const char *file = NULL;
    const tpace_machine *m = tpace_machine_for(s, device, &match, &file);
    const char *why = file != NULL ? "named by TPACE_MACHINE" : "matching the device";
    if (m == NULL || strcmp(m->name, c->machine) == 0)
        return c;
    if (!m->cl.known) {
        snprintf(about, size, " (profile %s, %s, has no OpenCL figures)", m->name, why);
        return c;
    }
    mine = *c;
    mine.machine = m->name;
    mine.phi = m->cl.phi;
    mine.bf_sys = m->cl.bf_sys;
    mine.tile_bytes = m->cl.tile_bytes;
    mine.min_groups = m->cl.min_groups;
    mine.max_group = m->cl.max_group;
    mine.stream_bps = m->cl.stream_bps;
    mine.tile_point_s = m->cl.tile_point_s;
    snprintf(about, size, " (%s; the program was translated for %s)", why, c->machine);
    return &mine;
}

/* Choose the pipeline's work-group shape and steps per tiled kernel for its extents
 * on the device: the model's, or TPACE_WG / TPACE_T; say what was chosen. Returns T
 * (the executor's steps per kernel). */
static inline int tpace_cl_choose(const tpace_shape *s, tpace_cl_config *c)
{
    tpace_cl_state.where = s->where; /* set-up messages name the pipeline that needs the device */
    tpace_cl *cl = tpace_cl_get();
    const int rank = TPACE_MIN(c->rank, 3);
    unsigned long long ext[3] = {1, 1, 1};
    for (int d = 0; d < rank; d++)
        ext[d] = (unsigned long long)TPACE_MAX(s->dim_n[s->rank - 1 - d], 1L);
    /* The figures of the profile the run plans with (as tpace_pick_model takes it). */
    char about[256] = "";
    const tpace_cl_config *priced = tpace_cl_for_device(s, c, cl->device_name, about, sizeof about);
    const tpace_cl_pv pv = tpace_cl_priced(priced, ext);
    size_t wg[3] = {(size_t)pv.g[0], (size_t)pv.g[1], (size_t)pv.g[2]};
    int t = (int)pv.t;
    char how[768];
    int at = snprintf(how, sizeof how, "the evolution-vector model for %s%s", priced->machine, about);
    const int wg_set = tpace_cl_env_wg(s, rank, wg);
    const long t_env = tpace_env_long("TPACE_T", 0, 1, TPACE_CL_T_MAX);
    if (wg_set)
        at += snprintf(how + at, sizeof how - (size_t)at, "; work group set by TPACE_WG");
    if (t_env > 0) {
        t = (int)t_env;
        at += snprintf(how + at, sizeof how - (size_t)at, "; T set by TPACE_T");
    }
    const char *fuse = getenv("TPACE_FUSE");
    if (fuse != NULL && *fuse != '\0')
        at += snprintf(how + at, sizeof how - (size_t)at, "; TPACE_FUSE is the CUDA target's, OpenCL reads TPACE_T");
    if (t > c->max_t) {
        at += snprintf(how + at, sizeof how - (size_t)at, "; T=%d is 1 here: this pipeline's kernels advance one "
                       "step each (no tiled kernel)", t);
        t = c->max_t;
    }
    /* The device's limits: the model's shape shrinks to fit them, a shape set by hand is refused. */
    const size_t limit = tpace_cl_group_limit(cl, c);
    for (;;) {
        const size_t items = wg[0] * wg[1] * wg[2];
        int over = items > limit;
        for (int d = 0; d < 3; d++)
            over |= wg[d] > cl->max_items[d];
        if (!over || items == 1)
            break;
        if (wg_set) {
            char msg[768];
            snprintf(msg, sizeof msg, "TPACE_WG=%zux%zux%zu is more than OpenCL device %s takes for %s: at most %zu "
                                      "work items a group (%zu x %zu x %zu along x, y, z); set a smaller TPACE_WG",
                     wg[0], wg[1], wg[2], cl->device_name, c->name, limit, cl->max_items[0], cl->max_items[1],
                     cl->max_items[2]);
            tpace_stop(s->where, msg);
        }
        int big = 0;
        for (int d = 1; d < 3; d++)
            if (wg[d] > wg[big])
                big = d;
        wg[big] = TPACE_MAX(wg[big] / 2, (size_t)1);
        if (at < (int)sizeof how - 80 && strstr(how, "halved") == NULL)
            at += snprintf(how + at, sizeof how - (size_t)at, "; work group halved to fit the device");
    }
    /* T's tiles must fit local memory. */
    while (t > 1 && tpace_cl_local_bytes(c, wg, t) > cl->local_mem) {
        if (t_env > 0) {
            int fit = t - 1;
            while (fit > 1 && tpace_cl_local_bytes(c, wg, fit) > cl->local_mem)
                fit--;
            char msg[768];
            snprintf(msg, sizeof msg, "TPACE_T=%d with work group %zux%zux%zu needs %zu bytes of local memory a group "
                                      "for %s, but OpenCL device %s has %llu; lower TPACE_T to %d or the work group",
                     t, wg[0], wg[1], wg[2], tpace_cl_local_bytes(c, wg, t), c->name, cl->device_name,
                     (unsigned long long)cl->local_mem, fit);
            tpace_stop(s->where, msg);
        }
        t--;
        if (strstr(how, "local memory") == NULL && at < (int)sizeof how - 80)
            at += snprintf(how + at, sizeof how - (size_t)at, "; T lowered to fit the device's local memory");
    }
    for (int d = 0; d < 3; d++)
        c->wg[d] = wg[d];
    c->t = t;
    fprintf(stderr, "tpace: %s: OpenCL device %s (platform %s): %s work group %zux%zux%zu, T=%d (%s); local memory "
                    "%zu of %llu bytes\n",
            s->where, cl->device_name, cl->platform_name, c->name, wg[0], wg[1], wg[2], t, how,
            tpace_cl_local_bytes(c, wg, t), (unsigned long long)cl->local_mem);
    return t;
}
/* ==== end of tpace runtime, OpenCL part ==== */
