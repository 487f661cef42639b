/* A stand-in for the CUDA driver, for testing remat-gpu-run on machines without a GPU.
 *
 * "Device" memory is host memory (so unified addressing holds trivially), a module image is
 * a table of named host functions, and a kernel is a host function called with the launch's
 * parameter array. cuMemGetInfo reports the live device allocations rounded up to 512 bytes,
 * like a real allocator's granularity. FAKE_CUDA_FAIL_LAUNCH=1 makes every launch fail.
 * FAKE_CUDA_SKIP_KERNELS=1 accepts any module image (a real cubin or PTX from remat-opt) and
 * launches nothing: the host side of a compiled step then runs for real — its allocations,
 * frees and launches — with kernels that compute nothing. */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_INVALID_DEVICE = 101,
  CUDA_ERROR_NOT_FOUND = 500,
  CUDA_ERROR_LAUNCH_FAILED = 719,
};

typedef struct {
  const char *name;
  void (*function)(void **params);
} FakeKernel;

static int initialized;
static int context_depth;
static size_t device_used;
static const size_t device_total = (size_t)1 << 30;

/* Live device blocks and their sizes, for cuMemGetInfo. */
#define MAX_BLOCKS 4096
static void *block_address[MAX_BLOCKS];
static size_t block_size[MAX_BLOCKS];

static size_t rounded(size_t bytes) { return (bytes + 511) / 512 * 512; }

CUresult cuInit(unsigned flags) {
  (void)flags;
  initialized = 1;
  return CUDA_SUCCESS;
}

CUresult cuGetErrorName(CUresult error, const char **name) {
  switch (error) {
  case CUDA_SUCCESS: *name = "CUDA_SUCCESS"; return CUDA_SUCCESS;
  case CUDA_ERROR_INVALID_VALUE: *name = "CUDA_ERROR_INVALID_VALUE"; return CUDA_SUCCESS;
  case CUDA_ERROR_OUT_OF_MEMORY: *name = "CUDA_ERROR_OUT_OF_MEMORY"; return CUDA_SUCCESS;
  case CUDA_ERROR_NOT_INITIALIZED: *name = "CUDA_ERROR_NOT_INITIALIZED"; return CUDA_SUCCESS;
  case CUDA_ERROR_INVALID_DEVICE: *name = "CUDA_ERROR_INVALID_DEVICE"; return CUDA_SUCCESS;
  case CUDA_ERROR_NOT_FOUND: *name = "CUDA_ERROR_NOT_FOUND"; return CUDA_SUCCESS;
  case CUDA_ERROR_LAUNCH_FAILED: *name = "CUDA_ERROR_LAUNCH_FAILED"; return CUDA_SUCCESS;
  default: *name = NULL; return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult cuDeviceGetCount(int *count) {
  if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
  *count = 1;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(int *device, int ordinal) {
  if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
  *device = 0;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int length, int device) {
  (void)device;
  snprintf(name, (size_t)length, "Fake CUDA Device");
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *value, int attribute, int device) {
  (void)attribute;
  (void)device;
  *value = 1; /* unified addressing, and anything else asked */
  return CUDA_SUCCESS;
}

static int the_context;

CUresult cuDevicePrimaryCtxRetain(void **context, int device) {
  (void)device;
  if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
  *context = &the_context;
  return CUDA_SUCCESS;
}

CUresult cuCtxPushCurrent_v2(void *context) {
  if (context != &the_context) return CUDA_ERROR_INVALID_VALUE;
  context_depth++;
  return CUDA_SUCCESS;
}

CUresult cuCtxPopCurrent_v2(void **context) {
  if (context_depth == 0) return CUDA_ERROR_INVALID_VALUE;
  context_depth--;
  if (context) *context = &the_context;
  return CUDA_SUCCESS;
}

/* Every call that needs a current context checks this. */
static CUresult need_context(void) { return context_depth > 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE; }

CUresult cuCtxSynchronize(void) { return need_context(); }

CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total_bytes) {
  CUresult r = need_context();
  if (r) return r;
  *free_bytes = device_total - device_used;
  *total_bytes = device_total;
  return CUDA_SUCCESS;
}

static CUresult device_allocate(uint64_t *address, size_t bytes) {
  CUresult r = need_context();
  if (r) return r;
  if (bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  for (int i = 0; i < MAX_BLOCKS; i++) {
    if (!block_address[i]) {
      void *p = aligned_alloc(256, rounded(bytes));
      if (!p) return CUDA_ERROR_OUT_OF_MEMORY;
      block_address[i] = p;
      block_size[i] = rounded(bytes);
      device_used += block_size[i];
      *address = (uint64_t)(uintptr_t)p;
      return CUDA_SUCCESS;
    }
  }
  return CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult cuMemAlloc_v2(uint64_t *address, size_t bytes) { return device_allocate(address, bytes); }

CUresult cuMemAllocManaged(uint64_t *address, size_t bytes, unsigned flags) {
  (void)flags;
  return device_allocate(address, bytes);
}

CUresult cuMemFree_v2(uint64_t address) {
  CUresult r = need_context();
  if (r) return r;
  for (int i = 0; i < MAX_BLOCKS; i++) {
    if (block_address[i] && (uint64_t)(uintptr_t)block_address[i] == address) {
      free(block_address[i]);
      block_address[i] = NULL;
      device_used -= block_size[i];
      return CUDA_SUCCESS;
    }
  }
  return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemHostAlloc(void **pointer, size_t bytes, unsigned flags) {
  CUresult r = need_context();
  if (r) return r;
  if (flags != 3) return CUDA_ERROR_INVALID_VALUE; /* DEVICEMAP | PORTABLE */
  *pointer = aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
  return *pointer ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult cuMemHostGetDevicePointer_v2(uint64_t *device, void *host, unsigned flags) {
  (void)flags;
  *device = (uint64_t)(uintptr_t)host;
  return CUDA_SUCCESS;
}

CUresult cuMemFreeHost(void *pointer) {
  free(pointer);
  return CUDA_SUCCESS;
}

CUresult cuMemcpy(uint64_t dst, uint64_t src, size_t bytes) {
  CUresult r = need_context();
  if (r) return r;
  memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, bytes);
  return CUDA_SUCCESS;
}

CUresult cuMemcpyAsync(uint64_t dst, uint64_t src, size_t bytes, void *stream) {
  (void)stream;
  return cuMemcpy(dst, src, bytes);
}

CUresult cuMemsetD32Async(uint64_t dst, unsigned value, size_t count, void *stream) {
  (void)stream;
  for (size_t i = 0; i < count; i++) ((uint32_t *)(uintptr_t)dst)[i] = value;
  return need_context();
}

CUresult cuMemsetD16Async(uint64_t dst, unsigned short value, size_t count, void *stream) {
  (void)stream;
  for (size_t i = 0; i < count; i++) ((uint16_t *)(uintptr_t)dst)[i] = value;
  return need_context();
}

static int skip_kernels(void) {
  const char *skip = getenv("FAKE_CUDA_SKIP_KERNELS");
  return skip && strcmp(skip, "1") == 0;
}

static const FakeKernel no_kernel = {"", 0};

CUresult cuModuleLoadData(void **module, const void *image) {
  CUresult r = need_context();
  if (r) return r;
  *module = skip_kernels() ? (void *)&no_kernel : (void *)image;
  return CUDA_SUCCESS;
}

CUresult cuModuleLoadDataEx(void **module, const void *image, unsigned count, int *options, void **values) {
  (void)count;
  (void)options;
  (void)values;
  return cuModuleLoadData(module, image);
}

CUresult cuModuleUnload(void *module) {
  (void)module;
  return need_context();
}

CUresult cuModuleGetFunction(void **function, void *module, const char *name) {
  if (module == &no_kernel) {
    *function = (void *)&no_kernel;
    return CUDA_SUCCESS;
  }
  for (const FakeKernel *k = module; k->name; k++) {
    if (strcmp(k->name, name) == 0) {
      *function = (void *)k;
      return CUDA_SUCCESS;
    }
  }
  return CUDA_ERROR_NOT_FOUND;
}

CUresult cuFuncSetAttribute(void *function, int attribute, int value) {
  (void)function;
  (void)attribute;
  (void)value;
  return CUDA_SUCCESS;
}

CUresult cuLaunchKernel(void *function, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shared, void *stream, void **params, void **extra) {
  (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)shared, (void)stream, (void)extra;
  CUresult r = need_context();
  if (r) return r;
  const char *fail = getenv("FAKE_CUDA_FAIL_LAUNCH");
  if (fail && strcmp(fail, "1") == 0) return CUDA_ERROR_LAUNCH_FAILED;
  if (function != &no_kernel) ((const FakeKernel *)function)->function(params);
  return CUDA_SUCCESS;
}

static int a_stream, an_event;

CUresult cuStreamCreate(void **stream, unsigned flags) {
  (void)flags;
  *stream = &a_stream;
  return need_context();
}
CUresult cuStreamSynchronize(void *stream) { return stream == &a_stream ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE; }
CUresult cuStreamDestroy_v2(void *stream) { return stream == &a_stream ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE; }
CUresult cuStreamWaitEvent(void *stream, void *event, unsigned flags) {
  (void)flags;
  return stream == &a_stream && event == &an_event ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
CUresult cuEventCreate(void **event, unsigned flags) {
  (void)flags;
  *event = &an_event;
  return need_context();
}
CUresult cuEventDestroy_v2(void *event) { return event == &an_event ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE; }
CUresult cuEventSynchronize(void *event) { return event == &an_event ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE; }
CUresult cuEventRecord(void *event, void *stream) { return event == &an_event && stream == &a_stream ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE; }
