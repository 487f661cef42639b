/*===-- capi_test.c - The remat C API, called from C -----------------------===*\
|*                                                                            *|
|* Usage: remat-capi-test STEP.mlir [OUT.mlir]                                *|
|* Loads a training step and exercises every function of remat-c/Remat.h,    *|
|* printing what each gives back; lit-tests/capi checks the output with       *|
|* FileCheck, and compares the rewritten module with remat-opt's.             *|
|*                                                                            *|
|* Sections (each starts with a line FileCheck labels):                       *|
|*   VERSIONS  the library's versions against the header's                   *|
|*   PLAN      rematPlan: the report, and the module left unchanged           *|
|*   CREATE    rematCreatePass in a pass manager, and bad options             *|
|*   RUN       rematRun on the function: the report after rewriting           *|
|*   ERRORS    diagnostics for an infeasible budget and bad options           *|
|*   PIPELINE  the registered pass in a textual pipeline; writes the module   *|
|*             to OUT.mlir (or prints it) as mlir-opt would                   *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#include "remat-c/Remat.h"

#include "mlir-c/Diagnostics.h"
#include "mlir-c/IR.h"
#include "mlir-c/Pass.h"
#include "mlir-c/RegisterEverything.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Appends each piece to a growable buffer. */
typedef struct {
  char *data;
  size_t length;
} Buffer;

static void appendToBuffer(MlirStringRef piece, void *userData) {
  Buffer *buffer = (Buffer *)userData;
  char *grown = realloc(buffer->data, buffer->length + piece.length + 1);
  if (!grown) {
    fprintf(stderr, "out of memory\n");
    exit(2);
  }
  buffer->data = grown;
  memcpy(buffer->data + buffer->length, piece.data, piece.length);
  buffer->length += piece.length;
  buffer->data[buffer->length] = '\0';
}

static void printToFile(MlirStringRef piece, void *userData) {
  fwrite(piece.data, 1, piece.length, (FILE *)userData);
}

static MlirLogicalResult printDiagnostic(MlirDiagnostic diagnostic, void *userData) {
  (void)userData;
  printf("diagnostic: ");
  mlirLocationPrint(mlirDiagnosticGetLocation(diagnostic), printToFile, stdout);
  printf(": ");
  mlirDiagnosticPrint(diagnostic, printToFile, stdout);
  printf("\n");
  return mlirLogicalResultSuccess();
}

/* Parses the step from its file, so that locations name it. */
static MlirModule parseStep(MlirContext context, const char *path) {
  MlirModule module = mlirModuleCreateParseFromFile(context, mlirStringRefCreateFromCString(path));
  if (mlirModuleIsNull(module)) {
    fprintf(stderr, "capi_test: cannot parse %s\n", path);
    exit(2);
  }
  return module;
}

static char *printOperation(MlirOperation op) {
  Buffer buffer = {NULL, 0};
  mlirOperationPrint(op, appendToBuffer, &buffer);
  return buffer.data;
}

static void check(int condition, const char *what) {
  if (!condition) {
    fprintf(stderr, "capi_test: FAILED: %s\n", what);
    exit(1);
  }
}

/* The first func.func in the module's body. */
static MlirOperation firstFunction(MlirModule module) {
  MlirOperation op = mlirBlockGetFirstOperation(mlirModuleGetBody(module));
  while (!mlirOperationIsNull(op)) {
    MlirIdentifier name = mlirOperationGetName(op);
    if (mlirStringRefEqual(mlirIdentifierStr(name), mlirStringRefCreateFromCString("func.func")))
      return op;
    op = mlirOperationGetNextInBlock(op);
  }
  return op;
}

int main(int argc, char **argv) {
  if (argc != 2 && argc != 3) {
    fprintf(stderr, "usage: %s STEP.mlir [OUT.mlir]\n", argv[0]);
    return 2;
  }

  printf("VERSIONS\n");
  printf("c-api %ld options %ld report-schema %ld\n", (long)rematGetCApiVersion(),
         (long)rematGetPassOptionsVersion(), (long)rematGetReportSchemaVersion());
  check(rematGetCApiVersion() == REMAT_C_API_VERSION, "C API version matches the header");
  check(rematGetPassOptionsVersion() == REMAT_PASS_OPTIONS_VERSION, "options version matches");
  check(rematGetReportSchemaVersion() == REMAT_REPORT_SCHEMA_VERSION, "schema version matches");

  MlirDialectRegistry registry = mlirDialectRegistryCreate();
  mlirRegisterAllDialects(registry);
  MlirContext context = mlirContextCreateWithRegistry(registry, /*threadingEnabled=*/false);
  mlirDialectRegistryDestroy(registry);
  mlirContextLoadAllAvailableDialects(context);
  /* The examples carry ops of dialects MLIR does not register (stablehlo.scatter). */
  mlirContextSetAllowUnregisteredDialects(context, true);
  mlirContextAttachDiagnosticHandler(context, printDiagnostic, NULL, NULL);

  MlirModule module = parseStep(context, argv[1]);
  MlirOperation moduleOp = mlirModuleGetOperation(module);
  MlirOperation function = firstFunction(module);
  check(!mlirOperationIsNull(function), "the step has a func.func");

  printf("PLAN\n");
  char *before = printOperation(moduleOp);
  Buffer report = {NULL, 0};
  MlirLogicalResult planned =
      rematPlan(moduleOp, mlirStringRefCreateFromCString("strategy=treewidth budget=80%"),
                appendToBuffer, &report);
  check(mlirLogicalResultIsSuccess(planned), "rematPlan succeeds");
  printf("report: %s\n", report.data);
  char *after = printOperation(moduleOp);
  printf("module unchanged: %s\n", strcmp(before, after) == 0 ? "yes" : "no");
  free(report.data);
  free(before);
  free(after);

  printf("CREATE\n");
  Buffer error = {NULL, 0};
  MlirPass bad = rematCreatePass(mlirStringRefCreateFromCString("strategy=magic"),
                                 appendToBuffer, &error);
  printf("bad strategy: %s: %s\n", bad.ptr ? "created" : "null", error.data ? error.data : "");
  free(error.data);
  error = (Buffer){NULL, 0};
  bad = rematCreatePass(mlirStringRefCreateFromCString("colour=blue"), appendToBuffer, &error);
  printf("bad option: %s: %s\n", bad.ptr ? "created" : "null", error.data ? error.data : "");
  free(error.data);

  MlirModule copy = parseStep(context, argv[1]);
  MlirPassManager manager = mlirPassManagerCreate(context);
  MlirOpPassManager functions =
      mlirPassManagerGetNestedUnder(manager, mlirStringRefCreateFromCString("func.func"));
  MlirPass pass = rematCreatePass(mlirStringRefCreateFromCString("strategy=treewidth"), NULL, NULL);
  check(pass.ptr != NULL, "rematCreatePass makes a pass");
  mlirOpPassManagerAddOwnedPass(functions, pass);
  printf("pipeline: ");
  mlirPrintPassPipeline(mlirPassManagerGetAsOpPassManager(manager), printToFile, stdout);
  printf("\n");
  MlirLogicalResult ran = mlirPassManagerRunOnOp(manager, mlirModuleGetOperation(copy));
  check(mlirLogicalResultIsSuccess(ran), "the created pass runs");
  char *created = printOperation(mlirModuleGetOperation(copy));
  printf("recomputes: %s\n", strstr(created, "remat.recompute") ? "yes" : "no");
  free(created);
  mlirPassManagerDestroy(manager);
  mlirModuleDestroy(copy);

  printf("RUN\n");
  copy = parseStep(context, argv[1]);
  report = (Buffer){NULL, 0};
  MlirLogicalResult rewritten = rematRun(firstFunction(copy), mlirStringRefCreateFromCString("strategy=greedy budget=80%"),
                                         appendToBuffer, &report);
  check(mlirLogicalResultIsSuccess(rewritten), "rematRun succeeds");
  printf("report: %s\n", report.data);
  free(report.data);
  created = printOperation(mlirModuleGetOperation(copy));
  printf("recomputes: %s\n", strstr(created, "remat.recompute") ? "yes" : "no");
  free(created);
  mlirModuleDestroy(copy);

  printf("ERRORS\n");
  MlirLogicalResult infeasible = rematPlan(function, mlirStringRefCreateFromCString("strategy=greedy budget=1KiB"), NULL, NULL);
  printf("infeasible: %s\n", mlirLogicalResultIsFailure(infeasible) ? "failure" : "success");
  MlirLogicalResult invalid = rematPlan(function, mlirStringRefCreateFromCString("strategy=treewidth polish=maybe"), NULL, NULL);
  printf("invalid: %s\n", mlirLogicalResultIsFailure(invalid) ? "failure" : "success");

  printf("PIPELINE\n");
  rematRegisterPasses();
  rematRegisterPasses(); /* idempotent */
  manager = mlirPassManagerCreate(context);
  error = (Buffer){NULL, 0};
  MlirLogicalResult parsed = mlirParsePassPipeline(
      mlirPassManagerGetAsOpPassManager(manager),
      mlirStringRefCreateFromCString("builtin.module(func.func(remat{strategy=treewidth}))"),
      appendToBuffer, &error);
  check(mlirLogicalResultIsSuccess(parsed), "the registered pass parses in a pipeline");
  free(error.data);
  ran = mlirPassManagerRunOnOp(manager, moduleOp);
  check(mlirLogicalResultIsSuccess(ran), "the pipeline runs");
  /* As mlir-opt and remat-opt print it: the module, then a newline. */
  FILE *out = argc == 3 ? fopen(argv[2], "wb") : stdout;
  check(out != NULL, "the output file opens");
  mlirOperationPrint(moduleOp, printToFile, out);
  fprintf(out, "\n");
  if (out != stdout)
    fclose(out);
  printf("written\n");
  mlirPassManagerDestroy(manager);

  mlirModuleDestroy(module);
  mlirContextDestroy(context);
  return 0;
}
