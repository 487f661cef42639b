/*===-- remat-c/Remat.h - C API of the remat pass ------------------*- C -*-===*\
|*                                                                            *|
|* The remat pass plans which activations of a training step to keep and      *|
|* which to recompute, and rewrites the function to the plan. This header     *|
|* lets a compiler built on MLIR 22 (C or C++) register the pass, create it   *|
|* with options, and plan a module to get the memory report as JSON.          *|
|*                                                                            *|
|* Link libremat.so (or libremat.a) and MLIR's shared libMLIR.so: the pass    *|
|* must live in the same MLIR as the compiler that runs it. docs/c-api.md     *|
|* has the build recipe; docs/pass-options.md and docs/report-schema.md the   *|
|* options and the report these functions take and give.                      *|
|*                                                                            *|
|* Errors follow the MLIR C API: functions that work on an operation emit     *|
|* diagnostics at its location (attach a handler with                         *|
|* mlirContextAttachDiagnosticHandler to see them) and return failure;        *|
|* functions without one pass the message to an MlirStringCallback.           *|
|* No function here panics or throws across the boundary.                     *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef REMAT_C_REMAT_H
#define REMAT_C_REMAT_H

#include "mlir-c/IR.h"
#include "mlir-c/Pass.h"
#include "mlir-c/Support.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Version of this C API. Functions are only added within a version; a change
/// to a declared function's signature or meaning increments it.
#define REMAT_C_API_VERSION 1
/// Version of the pass options (docs/pass-options.md). Options are only added
/// within a version; renaming or removing one, or changing what a value means,
/// increments it.
#define REMAT_PASS_OPTIONS_VERSION 2
/// Version of the report JSON (docs/report-schema.md), also its
/// `schema_version` field. Fields are only added within a version.
#define REMAT_REPORT_SCHEMA_VERSION 2

/// The versions the linked library implements: compare with the macros above
/// to catch a header and a library from different releases.
intptr_t rematGetCApiVersion(void);
intptr_t rematGetPassOptionsVersion(void);
intptr_t rematGetReportSchemaVersion(void);

/// Registers the remat passes in MLIR's global pass registry, so textual
/// pipelines can name them:
///   - `remat`: plan and rewrite a `func.func` (or a module: its public
///     function, or the one named by `function=`), e.g.
///     `builtin.module(func.func(remat{strategy=treewidth budget=60%}))`;
///   - `remat-lower-stablehlo`, `remat-place-deallocs` and the other passes of
///     remat's CPU and GPU lowering pipelines (`remat-opt
///     --print-lowering-pipeline` lists them).
/// Also registers MLIR's upstream passes, which those pipelines name.
/// Idempotent and safe to call from several threads.
void rematRegisterPasses(void);

/// Creates a `remat` pass configured by `options`, written as inside the
/// braces of a pipeline: "strategy=treewidth budget=60%" ("" for the
/// defaults). The caller owns the pass; adding it to a pass manager
/// (mlirOpPassManagerAddOwnedPass) hands it over. Does not need
/// rematRegisterPasses. On an unknown option or a bad value returns a null
/// pass (`.ptr == NULL`) after calling `errorCallback` (if not NULL) with the
/// message, in one or more pieces.
MlirPass rematCreatePass(MlirStringRef options, MlirStringCallback errorCallback,
                         void *userData);

/// Plans `op` (a `func.func`, or a module) under `options` as the pass would
/// and leaves it unchanged. On success calls `reportCallback` (if not NULL)
/// with the report as one JSON object (docs/report-schema.md), in one or more
/// pieces, and returns success. On bad options, input the importer cannot
/// read, or an infeasible budget, emits an error at `op` and returns failure.
MlirLogicalResult rematPlan(MlirOperation op, MlirStringRef options,
                            MlirStringCallback reportCallback, void *userData);

/// Like rematPlan, then rewrites `op` to the plan (as the pass does: ops
/// reordered, recomputations cloned and marked `remat.recompute`) and checks
/// that the result verifies. The report is that of the rewritten function.
MlirLogicalResult rematRun(MlirOperation op, MlirStringRef options,
                           MlirStringCallback reportCallback, void *userData);

#ifdef __cplusplus
}
#endif

#endif // REMAT_C_REMAT_H
