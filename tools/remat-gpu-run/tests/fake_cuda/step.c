/* A hand-written step library in the shape `remat-opt --lower=gpu --emit=library` produces,
 * for the fake driver in libcuda.c (its "kernels" are host functions):
 *
 *   main(a: tensor<2x3xf32>, labels: tensor<3xi32>)
 *       -> (tensor<3x2xf32> transpose(a), tensor<f32> sum(a), tensor<3xi32> labels)
 *
 * It loads its module in a constructor, offloads `a` to a host buffer and back (after
 * remat_host_alloc_next), allocates a scratch buffer, a zero-byte buffer and a gpu.alloc
 * buffer, returns the transpose as a strided view of a dense copy, and returns its second
 * argument unchanged. */

#include <stddef.h>
#include <stdint.h>

void *mgpuModuleLoad(const void *data, int64_t size);
void mgpuModuleUnload(void *module);
void *mgpuModuleGetFunction(void *module, const char *name);
void *mgpuStreamCreate(void);
void mgpuStreamSynchronize(void *stream);
void mgpuStreamDestroy(void *stream);
void mgpuLaunchKernel(void *function, int64_t gx, int64_t gy, int64_t gz, int64_t bx, int64_t by, int64_t bz,
                      int32_t shared, void *stream, void **params, void **extra, int64_t count);
void *mgpuEventCreate(void);
void mgpuEventRecord(void *event, void *stream);
void mgpuStreamWaitEvent(void *stream, void *event);
void mgpuEventSynchronize(void *event);
void mgpuEventDestroy(void *event);
void *mgpuMemAlloc(uint64_t size, void *stream, _Bool host_shared);
void mgpuMemFree(void *ptr, void *stream);
void mgpuMemset32(void *dst, uint32_t value, size_t count, void *stream);
void *_mlir_memref_to_llvm_alloc(uint64_t size);
void *_mlir_memref_to_llvm_aligned_alloc(uint64_t alignment, uint64_t size);
void _mlir_memref_to_llvm_free(void *ptr);
void remat_host_alloc_next(void);

const char remat_step_signature[] =
    "{\"function\":\"main\",\"inputs\":[\"tensor<2x3xf32>\",\"tensor<3xi32>\"],"
    "\"results\":[\"tensor<3x2xf32>\",\"tensor<f32>\",\"tensor<3xi32>\"]}";

typedef struct {
  const char *name;
  void (*function)(void **params);
} FakeKernel;

/* copy(src: float*, dst: float*, n: i64) */
static void copy_kernel(void **params) {
  const float *src = *(float **)params[0];
  float *dst = *(float **)params[1];
  int64_t n = *(int64_t *)params[2];
  for (int64_t i = 0; i < n; i++) dst[i] = src[i];
}

/* sum(src: float*, out: float*, n: i64) */
static void sum_kernel(void **params) {
  const float *src = *(float **)params[0];
  float *out = *(float **)params[1];
  int64_t n = *(int64_t *)params[2];
  float total = 0.0f;
  for (int64_t i = 0; i < n; i++) total += src[i];
  *out = total;
}

static const FakeKernel image[] = {{"copy", copy_kernel}, {"sum", sum_kernel}, {NULL, NULL}};
static void *module;

__attribute__((constructor)) static void load_module(void) { module = mgpuModuleLoad(image, sizeof image); }
__attribute__((destructor)) static void unload_module(void) { mgpuModuleUnload(module); }

void _mlir_main(void **args) {
  float *a = *(float **)args[1];
  int64_t *labels = (int64_t *)0;
  (void)labels;
  void *stream = mgpuStreamCreate();
  void *event = mgpuEventCreate();
  void *scratch = _mlir_memref_to_llvm_aligned_alloc(64, 1000);
  remat_host_alloc_next();
  float *offloaded = _mlir_memref_to_llvm_alloc(24);
  float *dense = _mlir_memref_to_llvm_aligned_alloc(64, 24);
  float *total = _mlir_memref_to_llvm_aligned_alloc(64, 4);
  void *empty = _mlir_memref_to_llvm_alloc(0);
  void *gpu_buffer = mgpuMemAlloc(16, stream, 0);
  mgpuMemset32(gpu_buffer, 0, 4, stream);

  int64_t n = 6;
  void *copy = mgpuModuleGetFunction(module, "copy");
  void *sum = mgpuModuleGetFunction(module, "sum");
  void *to_host[] = {&a, &offloaded, &n};
  mgpuLaunchKernel(copy, 1, 1, 1, 6, 1, 1, 0, stream, to_host, NULL, 3);
  void *back[] = {&offloaded, &dense, &n};
  mgpuLaunchKernel(copy, 1, 1, 1, 6, 1, 1, 0, stream, back, NULL, 3);
  void *reduce[] = {&a, &total, &n};
  mgpuLaunchKernel(sum, 1, 1, 1, 1, 1, 1, 0, stream, reduce, NULL, 3);
  mgpuEventRecord(event, stream);
  mgpuStreamWaitEvent(stream, event);
  mgpuEventSynchronize(event);
  mgpuEventDestroy(event);
  mgpuStreamSynchronize(stream);
  mgpuStreamDestroy(stream);

  _mlir_memref_to_llvm_free(scratch);
  _mlir_memref_to_llvm_free(offloaded);
  _mlir_memref_to_llvm_free(empty);
  mgpuMemFree(gpu_buffer, NULL);

  int64_t *out = (int64_t *)args[12];
  /* The transpose: a 3x2 view (strides [1, 3]) of the dense 2x3 copy. */
  int64_t transpose[7] = {(int64_t)dense, (int64_t)dense, 0, 3, 2, 1, 3};
  int64_t sum_result[3] = {(int64_t)total, (int64_t)total, 0};
  for (int i = 0; i < 7; i++) out[i] = transpose[i];
  for (int i = 0; i < 3; i++) out[7 + i] = sum_result[i];
  /* The second argument, returned as it came. */
  for (int i = 0; i < 5; i++) out[10 + i] = *(int64_t *)args[7 + i];
}
