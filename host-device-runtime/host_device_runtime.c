/* omptarget-rs host device runtime (libomptarget-host-device.a)
 * =============================================================
 *
 * What it is: the device runtime of x86-64 offload images, the counterpart of the
 * libomptarget-<gpu>.bc that LLVM links into every GPU image. flang emits each target region as
 * a GPU-style kernel even for `-fopenmp-targets=x86_64-pc-linux-gnu`: the kernel takes a
 * `KernelLaunchEnvironmentTy *` first and one pointer-sized value per argument, a global
 * `<kernel>_kernel_environment` describes it, and its code calls the GPU device runtime's entry
 * points (__kmpc_target_init, __kmpc_parallel_60, __kmpc_distribute_for_static_loop_4u, ...),
 * for which LLVM ships no x86-64 build. This library provides them, written for a CPU.
 *
 * How it is used: linked into the program's x86-64 device image, a shared object that the host
 * plugin (libomptarget.rtl.host.so) loads once per host device:
 *
 *     flang-22 -fopenmp -fopenmp-targets=x86_64-pc-linux-gnu -L<dist>/lib -L<libomp dir> \
 *         -Xoffload-linker -lomptarget-host-device prog.f90
 *
 * The image is linked with -Bsymbolic and these definitions are protected, so the image's
 * calls of omp_get_device_num() and its kin bind here, not to libomp's host answers.
 *
 * How it runs a kernel: the host plugin calls __omptarget_host_device_launch_v1 in the image
 * (instead of the kernel itself) with the league's shape. Teams run on a pool of threads of this
 * image, created on first use and kept; each team's main thread calls the kernel, whose
 * __kmpc_target_init answers "run the user code" (every kernel runs in generic mode: SPMD is a
 * GPU optimisation, and code that is correct on every thread of a team is correct on its main
 * thread alone). A parallel region (__kmpc_parallel_60) is a libomp parallel region forked from
 * that thread: the team's threads are real threads, and the host-style calls flang emits in
 * device code for x86-64 (__kmpc_barrier, __kmpc_critical, __kmpc_single, tasks) are libomp's,
 * which the image links (-lomp). Pool threads are libomp root threads, so a kernel's parallel
 * regions are never nested in the launching thread's.
 *
 * Under another runtime: LLVM's own host plugin runs the same images (it fills
 * __omp_rtl_device_environment but knows nothing of the launcher): it calls each kernel once,
 * on the thread that launched it. Such a kernel runs as one team of one thread: its __kmpc_target_init finds
 * no team on its thread and sets a team of one for the kernel's duration.
 *
 * What is ours rather than libomp's: the team and device queries (team numbers are ours, not
 * libomp's `teams`), the worksharing-loop entry points of the GPU runtime (with LLVM's
 * iteration assignment: blocks of iterations to teams, then to threads), and the reductions:
 * flang emits host-style __kmpc_reduce for x86-64, whose libomp version combines without a lock
 * in a team of one thread or with its tree method, which is wrong when several teams combine
 * into the same variable at once; here every combination is under one lock of the image.
 *
 * The entry points' semantics follow LLVM 22's device runtime (openmp/device/src) and the
 * layouts offload/include/Shared/Environment.h; the code is our own.
 */

#define _GNU_SOURCE /* RTLD_NEXT */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arity.h"

#define EXPORT __attribute__((visibility("protected"), used))

typedef struct ident ident_t; /* libomp's and LLVM's source location: passed through */

/* ---- libomp, which the image links ------------------------------------------------------- */

typedef void (*kmpc_micro)(int32_t *gtid, int32_t *btid, ...);
extern int32_t __kmpc_global_thread_num(ident_t *loc);
extern void __kmpc_push_num_threads(ident_t *loc, int32_t gtid, int32_t num_threads);
extern void __kmpc_fork_call(ident_t *loc, int32_t argc, kmpc_micro microtask, ...);
extern void __kmpc_barrier(ident_t *loc, int32_t gtid);
extern int omp_get_thread_num(void);
extern int omp_get_num_threads(void);
extern int omp_get_level(void);
extern size_t kmp_get_stacksize_s(void);

/* ---- layouts the host plugin and the compiler share with us (Environment.h) -------------- */

/* DeviceEnvironmentTy: the host plugin writes it when it loads the image. */
struct device_environment {
    uint32_t debug_kind;
    uint32_t num_devices;
    uint32_t device_num;
    uint32_t dynamic_mem_size;
    uint64_t clock_frequency;
    uint64_t indirect_call_table;
    uint64_t indirect_call_table_size;
    uint64_t hardware_parallelism;
};

EXPORT struct device_environment __omp_rtl_device_environment = {0};

/* ConfigurationEnvironmentTy at the head of KernelEnvironmentTy. */
struct configuration_environment {
    uint8_t use_generic_state_machine;
    uint8_t may_use_nested_parallelism;
    uint8_t exec_mode;
    int32_t min_threads;
    int32_t max_threads;
    int32_t min_teams;
    int32_t max_teams;
    int32_t reduction_data_size;
    int32_t reduction_buffer_length;
};

struct kernel_environment {
    struct configuration_environment configuration;
    ident_t *ident;
    void *dynamic_environment;
};

/* ---- the league and the team a thread works for ------------------------------------------ */

struct launch {
    void *kernel;
    const uintptr_t *args;
    uint64_t nargs;
    uint32_t teams;
    uint32_t thread_limit;    /* the most threads a parallel region of a team gets */
    uint32_t default_threads; /* a parallel region's threads without num_threads */
    uint64_t dyn_mem;         /* bytes of "dynamic shared memory" per team */
    /* Pool bookkeeping, under pool.lock. */
    uint32_t next_team;
    uint32_t finished;
    int failed;
    struct launch *next;
};

struct team {
    uint32_t num;
    const struct launch *launch;
    void *dyn_shared;
};

/* The team of the running thread: set on a pool thread while it runs a team, and on each
 * thread of a parallel region while it runs the region's body. */
static __thread const struct team *current_team;

static const struct team *team_of_thread(void) { return current_team; }

/* ---- kernels ----------------------------------------------------------------------------- */

/* A kernel another runtime calls directly (LLVM's host plugin: one call, on the thread that
 * launched it, not through __omptarget_host_device_launch_v1) runs as a league of one team of
 * one thread: __kmpc_target_init finds no team on its thread and sets this one for the kernel's
 * duration, so that the team queries, the loops and the parallel regions (one thread) agree. */
static const struct launch solo_launch = {.teams = 1, .thread_limit = 1, .default_threads = 1};
static const struct team solo_team = {0, &solo_launch, NULL};
/* Whether this thread's current_team is the solo team, set by __kmpc_target_init. */
static __thread int solo_kernel;

EXPORT int32_t __kmpc_target_init(struct kernel_environment *environment, void *launch_environment) {
    (void)environment;
    (void)launch_environment;
    if (!current_team) {
        current_team = &solo_team;
        solo_kernel = 1;
    }
    /* Only a team's main thread enters a kernel: it runs the user code. */
    return -1;
}

EXPORT void __kmpc_target_deinit(void) {
    if (solo_kernel) {
        solo_kernel = 0;
        current_team = NULL;
    }
}

EXPORT int8_t __kmpc_is_spmd_exec_mode(void) { return 0; }

/* The generic-mode worker state machine's calls: workers never enter a kernel here. */
EXPORT void __kmpc_kernel_prepare_parallel(void *work_fn) { (void)work_fn; }

EXPORT int __kmpc_kernel_parallel(void **work_fn) {
    *work_fn = NULL;
    return 0;
}

EXPORT void __kmpc_kernel_end_parallel(void) {}

/* ---- parallel regions -------------------------------------------------------------------- */

struct parallel_region {
    void *fn;
    void **args;
    int64_t nargs;
    const struct team *team;
};

static void run_region(int32_t *gtid, int32_t *btid, struct parallel_region *region) {
    const struct team *saved = current_team;
    current_team = region->team;
    hdr_call_microtask(region->fn, gtid, btid, region->args, (uint64_t)region->nargs);
    current_team = saved;
}

static void run_parallel(ident_t *loc, int32_t if_expr, int32_t num_threads, void *fn, void **args,
                         int64_t nargs) {
    if (nargs < 0 || nargs > HDR_MAX_ARGS) {
        fprintf(stderr,
                "omptarget-rs host device runtime: a parallel region with %lld shared values "
                "(at most %d)\n",
                (long long)nargs, HDR_MAX_ARGS);
        abort();
    }
    const struct team *team = team_of_thread();
    int32_t threads = 1;
    if (if_expr) {
        uint32_t limit = team ? team->launch->thread_limit : 1;
        uint32_t wanted = num_threads > 0 ? (uint32_t)num_threads
                          : team          ? team->launch->default_threads
                                          : 1;
        threads = (int32_t)(wanted < limit ? wanted : limit);
        if (threads < 1)
            threads = 1;
    }
    struct parallel_region region = {fn, args, nargs, team};
    int32_t gtid = __kmpc_global_thread_num(loc);
    __kmpc_push_num_threads(loc, gtid, threads);
    __kmpc_fork_call(loc, 1, (kmpc_micro)run_region, &region);
}

EXPORT void __kmpc_parallel_60(ident_t *loc, int32_t gtid, int32_t if_expr, int32_t num_threads,
                               int proc_bind, void *fn, void *wrapper_fn, void **args, int64_t nargs,
                               int32_t strict) {
    (void)gtid;
    (void)proc_bind;
    (void)wrapper_fn;
    (void)strict;
    run_parallel(loc, if_expr, num_threads, fn, args, nargs);
}

EXPORT void __kmpc_parallel_51(ident_t *loc, int32_t gtid, int32_t if_expr, int32_t num_threads,
                               int proc_bind, void *fn, void *wrapper_fn, void **args, int64_t nargs) {
    (void)gtid;
    (void)proc_bind;
    (void)wrapper_fn;
    run_parallel(loc, if_expr, num_threads, fn, args, nargs);
}

EXPORT uint16_t __kmpc_parallel_level(ident_t *loc, uint32_t gtid) {
    (void)loc;
    (void)gtid;
    return (uint16_t)omp_get_level();
}

/* Barriers the GPU runtime's optimisations insert: a barrier of the innermost team. */
static void team_barrier(ident_t *loc) {
    if (omp_get_num_threads() > 1)
        __kmpc_barrier(loc, __kmpc_global_thread_num(loc));
}

EXPORT void __kmpc_barrier_simple_spmd(ident_t *loc, int32_t gtid) {
    (void)gtid;
    team_barrier(loc);
}

EXPORT void __kmpc_barrier_simple_generic(ident_t *loc, int32_t gtid) {
    (void)gtid;
    team_barrier(loc);
}

EXPORT uint32_t __kmpc_get_hardware_thread_id_in_block(void) { return (uint32_t)omp_get_thread_num(); }

EXPORT uint32_t __kmpc_get_hardware_num_threads_in_block(void) {
    return (uint32_t)omp_get_num_threads();
}

EXPORT uint32_t __kmpc_get_warp_size(void) { return 1; }

/* ---- memory a team shares ---------------------------------------------------------------- */

EXPORT void *__kmpc_alloc_shared(uint64_t bytes) { return malloc(bytes ? bytes : 1); }

EXPORT void __kmpc_free_shared(void *ptr, uint64_t bytes) {
    (void)bytes;
    free(ptr);
}

EXPORT void *__kmpc_get_dynamic_shared(void) {
    const struct team *team = team_of_thread();
    return team ? team->dyn_shared : NULL;
}

EXPORT void *llvm_omp_target_dynamic_shared_alloc(void) { return __kmpc_get_dynamic_shared(); }

EXPORT void *llvm_omp_get_dynamic_shared(void) { return __kmpc_get_dynamic_shared(); }

/* ---- worksharing loops ------------------------------------------------------------------- */

/* The static schedule of the loop entry points, over the normalised iterations
 * [0, iterations): blocks of `block_chunk` iterations go round-robin to the `teams` teams, and
 * within each block, chunks of `thread_chunk` iterations round-robin to the team's `threads`
 * threads; `body(i, arg)` runs for each iteration this thread owns. A chunk of 0 is one the
 * program did not give: then each team gets one contiguous block and each thread one contiguous
 * part of it (schedule(static) without a chunk; LLVM's GPU runtime deals single iterations
 * round-robin instead, which on a CPU puts neighbouring elements on different cores). Each
 * loop checks by division that its next step starts before the end, so nothing wraps. */
#define STATIC_LOOP(NAME, TY)                                                                      \
    static TY NAME##_part(TY n, TY parts) { return n / parts + (n % parts != 0); }                 \
    static void NAME(void (*body)(TY, void *), void *arg, TY iterations, TY teams, TY team,       \
                     TY block_chunk, TY threads, TY thread, TY thread_chunk) {                   \
        if (iterations <= 0)                                                                         \
            return;                                                                                \
        if (teams < 1)                                                                             \
            teams = 1;                                                                             \
        if (threads < 1)                                                                           \
            threads = 1;                                                                           \
        if (block_chunk < 1)                                                                       \
            block_chunk = NAME##_part(iterations, teams);                                          \
        /* Does the team's first block start before the end? (team * block_chunk < iterations) */ \
        if (team > (iterations - 1) / block_chunk)                                                 \
            return;                                                                                \
        for (TY block = team * block_chunk;;) {                                                    \
            TY left = iterations - block;                                                          \
            TY length = left > block_chunk ? block_chunk : left;                                   \
            TY chunk = thread_chunk > 0 ? thread_chunk : NAME##_part(length, threads);             \
            if (thread <= (length - 1) / chunk) {                                                  \
                for (TY first = block + thread * chunk;;) {                                        \
                    TY rest = block + length - first;                                              \
                    TY last = rest > chunk ? first + chunk : first + rest;                         \
                    for (TY i = first; i < last; i++)                                              \
                        body(i, arg);                                                              \
                    /* The next chunk, threads * chunk on, starts inside the block? */             \
                    if ((rest - 1) / chunk < threads)                                              \
                        break;                                                                     \
                    first += threads * chunk;                                                      \
                }                                                                                  \
            }                                                                                      \
            /* The team's next block, teams * block_chunk on, starts before the end? */           \
            if ((left - 1) / block_chunk < teams)                                                  \
                break;                                                                             \
            block += teams * block_chunk;                                                          \
        }                                                                                          \
    }

static uint32_t team_num(void) {
    const struct team *team = team_of_thread();
    return team ? team->num : 0;
}

static uint32_t team_count(void) {
    const struct team *team = team_of_thread();
    return team ? team->launch->teams : 1;
}

#define LOOP_ENTRIES(SUFFIX, TY)                                                                   \
    STATIC_LOOP(static_loop##SUFFIX, TY)                                                           \
    EXPORT void __kmpc_distribute_for_static_loop##SUFFIX(                                         \
        ident_t *loc, void (*body)(TY, void *), void *arg, TY iterations, TY threads,             \
        TY block_chunk, TY thread_chunk, uint8_t one_iteration_per_thread) {                       \
        (void)loc;                                                                                 \
        (void)one_iteration_per_thread;                                                            \
        static_loop##SUFFIX(body, arg, iterations, (TY)team_count(), (TY)team_num(), block_chunk,  \
                            threads, (TY)omp_get_thread_num(), thread_chunk);                      \
    }                                                                                              \
    EXPORT void __kmpc_distribute_static_loop##SUFFIX(ident_t *loc, void (*body)(TY, void *),      \
                                                      void *arg, TY iterations, TY block_chunk,    \
                                                      uint8_t one_iteration_per_thread) {          \
        (void)loc;                                                                                 \
        (void)one_iteration_per_thread;                                                            \
        static_loop##SUFFIX(body, arg, iterations, (TY)team_count(), (TY)team_num(), block_chunk,  \
                            1, 0, 0);                                                              \
    }                                                                                              \
    EXPORT void __kmpc_for_static_loop##SUFFIX(ident_t *loc, void (*body)(TY, void *), void *arg,  \
                                               TY iterations, TY threads, TY thread_chunk,         \
                                               uint8_t one_iteration_per_thread) {                 \
        (void)loc;                                                                                 \
        (void)one_iteration_per_thread;                                                            \
        static_loop##SUFFIX(body, arg, iterations, 1, 0, iterations, threads,                      \
                            (TY)omp_get_thread_num(), thread_chunk);                               \
    }

LOOP_ENTRIES(_4, int32_t)
LOOP_ENTRIES(_4u, uint32_t)
LOOP_ENTRIES(_8, int64_t)
LOOP_ENTRIES(_8u, uint64_t)

EXPORT void __kmpc_distribute_static_fini(ident_t *loc, int32_t gtid) {
    (void)loc;
    (void)gtid;
}

/* ---- reductions -------------------------------------------------------------------------- */

/* Every combination into a reduction's original variable is under this lock (see the header):
 * teams run at once and may all combine into the same mapped variable. */
static pthread_mutex_t reduction_lock = PTHREAD_MUTEX_INITIALIZER;

/* 1: the caller combines its partial result into the original variable, then calls the end. */
EXPORT int32_t __kmpc_reduce_nowait(ident_t *loc, int32_t gtid, int32_t nvars, size_t size,
                                    void *data, void (*combine)(void *, void *), void *lock) {
    (void)loc, (void)gtid, (void)nvars, (void)size, (void)data, (void)combine, (void)lock;
    pthread_mutex_lock(&reduction_lock);
    return 1;
}

EXPORT void __kmpc_end_reduce_nowait(ident_t *loc, int32_t gtid, void *lock) {
    (void)loc, (void)gtid, (void)lock;
    pthread_mutex_unlock(&reduction_lock);
}

EXPORT int32_t __kmpc_reduce(ident_t *loc, int32_t gtid, int32_t nvars, size_t size, void *data,
                             void (*combine)(void *, void *), void *lock) {
    return __kmpc_reduce_nowait(loc, gtid, nvars, size, data, combine, lock);
}

/* The blocking form ends with the team's barrier: every thread has combined when it returns. */
EXPORT void __kmpc_end_reduce(ident_t *loc, int32_t gtid, void *lock) {
    (void)gtid;
    __kmpc_end_reduce_nowait(loc, gtid, lock);
    team_barrier(loc);
}

/* ---- the OpenMP API on the device -------------------------------------------------------- */

/* libomp's function `name`, for the queries below when they are called outside any kernel of
 * this runtime's: from a clang-compiled (host-style) kernel in the same image, whose teams are
 * libomp's. The image's own name binds here, so libomp's is looked up by name: the next
 * definition after this image's (RTLD_NEXT: the image's own dependencies, libomp among them).
 * Not RTLD_DEFAULT: the image is linked -Bsymbolic, which puts the image first in its own
 * lookup scope, so that would find `self` again, and the query would call itself forever.
 * Where libomp's cannot be found, `otherwise`. */
static int host_query(int (**cached)(void), int (*self)(void), const char *name, int otherwise) {
    int (*query)(void) = __atomic_load_n(cached, __ATOMIC_RELAXED);
    if (!query) {
        query = (int (*)(void))dlsym(RTLD_NEXT, name);
        if (!query || query == self)
            query = NULL;
        __atomic_store_n(cached, query, __ATOMIC_RELAXED);
    }
    return query ? query() : otherwise;
}

EXPORT int omp_get_team_num(void) {
    static int (*host)(void);
    return team_of_thread() ? (int)team_num()
                            : host_query(&host, omp_get_team_num, "omp_get_team_num", 0);
}

EXPORT int omp_get_num_teams(void) {
    static int (*host)(void);
    return team_of_thread() ? (int)team_count()
                            : host_query(&host, omp_get_num_teams, "omp_get_num_teams", 1);
}

/* The host plugin (ours or LLVM's) fills __omp_rtl_device_environment when it loads the image.
 * Where none did (num_devices 0, which no filled environment has), the device count is libomp's
 * (the same runtime's); the device number, which nothing else tells the image, is then 0. */
EXPORT int omp_get_device_num(void) { return (int)__omp_rtl_device_environment.device_num; }

EXPORT int omp_get_num_devices(void) {
    static int (*host)(void);
    uint32_t filled = __atomic_load_n(&__omp_rtl_device_environment.num_devices, __ATOMIC_RELAXED);
    return filled ? (int)filled : host_query(&host, omp_get_num_devices, "omp_get_num_devices", 0);
}

EXPORT int omp_is_initial_device(void) { return 0; }

/* As LLVM's device runtime: omp_initial_device. */
EXPORT int omp_get_initial_device(void) { return -1; }

EXPORT int omp_get_thread_limit(void) {
    static int (*host)(void);
    const struct team *team = team_of_thread();
    return team ? (int)team->launch->thread_limit
                : host_query(&host, omp_get_thread_limit, "omp_get_thread_limit", 1);
}

/* Outside a parallel region: the threads a parallel region would get; inside one, nested
 * regions are libomp's (serialised unless nesting is enabled), so its answer. */
EXPORT int omp_get_max_threads(void) {
    static int (*host)(void);
    const struct team *team = team_of_thread();
    if (team && omp_get_level() == 0)
        return (int)team->launch->default_threads;
    return host_query(&host, omp_get_max_threads, "omp_get_max_threads", 1);
}

/* ---- the pool of team threads ------------------------------------------------------------ */

static struct {
    pthread_mutex_t lock;
    pthread_cond_t work;  /* a launch has teams left, or the pool closes */
    pthread_cond_t done;  /* a launch finished a team */
    struct launch *queue; /* launches with teams not yet taken, oldest first */
    pthread_t *threads;
    uint32_t count;
    uint32_t busy; /* launches in flight */
    int closing;
} pool = {.lock = PTHREAD_MUTEX_INITIALIZER, .work = PTHREAD_COND_INITIALIZER, .done = PTHREAD_COND_INITIALIZER};

static __thread int is_pool_thread;

static void run_team(const struct launch *launch, uint32_t num, int *failed) {
    struct team team = {num, launch, NULL};
    if (launch->dyn_mem)
        team.dyn_shared = calloc(1, launch->dyn_mem);
    const struct team *saved = current_team;
    current_team = &team;
    if (hdr_call_words(launch->kernel, launch->args, launch->nargs) != 0)
        *failed = 1;
    current_team = saved;
    free(team.dyn_shared);
}

static void *pool_thread(void *unused) {
    (void)unused;
    is_pool_thread = 1;
    pthread_mutex_lock(&pool.lock);
    for (;;) {
        while (!pool.queue && !pool.closing)
            pthread_cond_wait(&pool.work, &pool.lock);
        struct launch *launch = pool.queue;
        if (!launch)
            break;
        uint32_t num = launch->next_team++;
        if (launch->next_team == launch->teams)
            pool.queue = launch->next;
        pthread_mutex_unlock(&pool.lock);
        int failed = 0;
        run_team(launch, num, &failed);
        pthread_mutex_lock(&pool.lock);
        launch->failed |= failed;
        if (++launch->finished == launch->teams)
            pthread_cond_broadcast(&pool.done);
    }
    pthread_mutex_unlock(&pool.lock);
    return NULL;
}

static uint32_t processors(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (uint32_t)n : 1;
}

/* Grows the pool to `wanted` threads (under pool.lock); fewer where threads cannot be made. */
static void grow_pool(uint32_t wanted) {
    if (pool.count >= wanted)
        return;
    pthread_t *threads = realloc(pool.threads, wanted * sizeof *threads);
    if (!threads)
        return;
    pool.threads = threads;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    /* As deep a stack as libomp gives its own threads, at least 8 MiB (Fortran keeps arrays on
     * the stack). */
    size_t stack = kmp_get_stacksize_s();
    if (stack < ((size_t)8 << 20))
        stack = (size_t)8 << 20;
    pthread_attr_setstacksize(&attr, stack);
    while (pool.count < wanted && pthread_create(&pool.threads[pool.count], &attr, pool_thread, NULL) == 0)
        pool.count++;
    pthread_attr_destroy(&attr);
}

/* After fork the child has none of the parent's pool threads. */
static void pool_after_fork(void) {
    pthread_mutex_init(&pool.lock, NULL);
    pthread_cond_init(&pool.work, NULL);
    pthread_cond_init(&pool.done, NULL);
    pool.queue = NULL;
    free(pool.threads);
    pool.threads = NULL;
    pool.count = 0;
    pool.busy = 0;
}

__attribute__((constructor)) static void pool_init(void) {
    pthread_atfork(NULL, NULL, pool_after_fork);
}

/* The image is unloaded (or the process ends): the pool's threads run this image's code, so they
 * end first. Not where a kernel is still running (a kernel that ended the process, say), nor on
 * a pool thread, which cannot wait for itself. */
__attribute__((destructor)) static void pool_close(void) {
    pthread_mutex_lock(&pool.lock);
    if (pool.busy || is_pool_thread) {
        pthread_mutex_unlock(&pool.lock);
        return;
    }
    pool.closing = 1;
    pthread_cond_broadcast(&pool.work);
    uint32_t count = pool.count;
    pthread_mutex_unlock(&pool.lock);
    for (uint32_t i = 0; i < count; i++)
        pthread_join(pool.threads[i], NULL);
    free(pool.threads);
    pool.threads = NULL;
    pool.count = 0;
}

/* Version 1 of the launch call between the host plugin and this runtime: runs `kernel` with
 * the `nargs` words at `args` (its launch environment pointer first) on `teams` teams, whose
 * parallel regions get at most `thread_limit` threads and `default_threads` without a
 * num_threads clause; `dyn_mem` bytes of dynamic shared memory per team. Returns when every
 * team has finished: 0, or -1 when the kernel could not be called (too many arguments). */
EXPORT int32_t __omptarget_host_device_launch_v1(void *kernel, const uintptr_t *args, uint64_t nargs,
                                                 uint32_t teams, uint32_t thread_limit,
                                                 uint32_t default_threads, uint64_t dyn_mem) {
    if (nargs > HDR_MAX_ARGS)
        return -1;
    struct launch launch = {
        .kernel = kernel,
        .args = args,
        .nargs = nargs,
        .teams = teams ? teams : 1,
        .thread_limit = thread_limit ? thread_limit : 1,
        .default_threads = default_threads ? default_threads : 1,
        .dyn_mem = dyn_mem,
    };
    if (launch.default_threads > launch.thread_limit)
        launch.default_threads = launch.thread_limit;
    uint32_t cpus = processors();
    pthread_mutex_lock(&pool.lock);
    grow_pool(launch.teams < cpus ? launch.teams : cpus);
    if (pool.count == 0 || is_pool_thread) {
        /* No thread could be made: the teams run here, one after another. */
        pthread_mutex_unlock(&pool.lock);
        for (uint32_t t = 0; t < launch.teams; t++)
            run_team(&launch, t, &launch.failed);
        return launch.failed ? -1 : 0;
    }
    struct launch **tail = &pool.queue;
    while (*tail)
        tail = &(*tail)->next;
    *tail = &launch;
    pool.busy++;
    pthread_cond_broadcast(&pool.work);
    while (launch.finished < launch.teams)
        pthread_cond_wait(&pool.done, &pool.lock);
    pool.busy--;
    pthread_mutex_unlock(&pool.lock);
    return launch.failed ? -1 : 0;
}
