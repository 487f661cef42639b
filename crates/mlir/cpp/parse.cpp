//===- parse.cpp - Parse a module with its source's name ---------*- C++ -*-===//
//
// mlirModuleCreateParse names its buffer "-", so every location in the module
// would say "-:line:col". This parses the same text under the name of the file
// it came from, so the locations of ops (in diagnostics, graph JSON, reports)
// name that file.
//
//===----------------------------------------------------------------------===//

#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Support.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"

extern "C" MlirModule rematParseModule(MlirContext context, MlirStringRef text,
                                       MlirStringRef sourceName) {
  mlir::ParserConfig config(unwrap(context));
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::parseSourceString<mlir::ModuleOp>(
      unwrap(text), config, unwrap(sourceName));
  if (!module)
    return MlirModule{nullptr};
  return MlirModule{module.release().getOperation()};
}
