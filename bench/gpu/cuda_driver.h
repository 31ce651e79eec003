// The CUDA driver API as bench/gpu's programs use it: no CUDA headers exist where they are
// built, so the types are declared here, and the entry points a program lists in its
// DRIVER_API(X) X-macro (each X(name, symbol the driver exports, (parameters))) are declared as
// pointers and looked up in libcuda.so.1 at run time. Include after defining DRIVER_API.
#include <dlfcn.h>
#include <stdio.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUlinkState_st *CUlinkState;
typedef void (*CUhostFn)(void *);

#define CU_STREAM_NON_BLOCKING 1

#define DECLARE_DRIVER_FN(fn, sym, args) static CUresult(*fn) args;
DRIVER_API(DECLARE_DRIVER_FN)

// Resolves every entry point of DRIVER_API; `program` names the caller in the message. Returns
// 0, or 2 (the programs' exit status for "no driver") when the library or an entry is missing.
static int load_driver_api(const char *program) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "%s: libcuda.so.1 not found: %s\n", program, dlerror());
    return 2;
  }
#define LOOKUP_DRIVER_FN(fn, sym, args)                                                          \
  if (!(*(void **)&fn = dlsym(lib, sym))) {                                                      \
    fprintf(stderr, "%s: libcuda.so.1 lacks %s\n", program, sym);                                \
    return 2;                                                                                    \
  }
  DRIVER_API(LOOKUP_DRIVER_FN)
  return 0;
}

// The driver's name for `r` (DRIVER_API must list cuGetErrorName).
static const char *error_name(CUresult r) {
  const char *name = NULL;
  if (!cuGetErrorName || cuGetErrorName(r, &name) != 0 || !name) return "unknown error";
  return name;
}

// An empty kernel, `empty`, for the driver to JIT-compile: the launch path alone.
static const char empty_ptx[] = ".version 7.8\n"
                                ".target sm_90\n"
                                ".address_size 64\n"
                                ".visible .entry empty()\n"
                                "{\n"
                                "  ret;\n"
                                "}\n";
