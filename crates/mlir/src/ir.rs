//! Thin helpers over raw MLIR C API handles.
//!
//! The importer and the rewriter keep owned Rust ids for planning and touch IR only through
//! these handles. All of them are plain pointers into a module that the caller keeps alive;
//! an `MlirOperation` stays valid when moved within a block and is invalid once destroyed.
//! Every function here is `unsafe`-free for callers because it is only ever given handles
//! obtained from a live module (the invariant of this crate).

use mlir_sys::*;
use std::ffi::{c_void, CString};

pub type Op = MlirOperation;
pub type Val = MlirValue;

/// A string ref to `text` (valid while `text` is).
pub fn string_ref(text: &str) -> MlirStringRef {
    MlirStringRef { data: text.as_ptr() as *const std::ffi::c_char, length: text.len() }
}

pub fn string_ref_to_string(s: MlirStringRef) -> String {
    if s.data.is_null() {
        return String::new();
    }
    let bytes = unsafe { std::slice::from_raw_parts(s.data as *const u8, s.length) };
    String::from_utf8_lossy(bytes).into_owned()
}

unsafe extern "C" fn append_to_string(s: MlirStringRef, data: *mut c_void) {
    let out = unsafe { &mut *(data as *mut String) };
    out.push_str(&string_ref_to_string(s));
}

pub fn op_name(op: Op) -> String {
    unsafe { string_ref_to_string(mlirIdentifierStr(mlirOperationGetName(op))) }
}

pub fn operands(op: Op) -> Vec<Val> {
    let n = unsafe { mlirOperationGetNumOperands(op) };
    (0..n).map(|i| unsafe { mlirOperationGetOperand(op, i) }).collect()
}

pub fn results(op: Op) -> Vec<Val> {
    let n = unsafe { mlirOperationGetNumResults(op) };
    (0..n).map(|i| unsafe { mlirOperationGetResult(op, i) }).collect()
}

pub fn set_operand(op: Op, index: usize, value: Val) {
    unsafe { mlirOperationSetOperand(op, index as isize, value) }
}

pub fn value_type(v: Val) -> MlirType {
    unsafe { mlirValueGetType(v) }
}

/// All uses of `v`: (owner op, operand number).
pub fn uses(v: Val) -> Vec<(Op, usize)> {
    let mut out = Vec::new();
    unsafe {
        let mut use_ = mlirValueGetFirstUse(v);
        while !mlirOpOperandIsNull(use_) {
            out.push((mlirOpOperandGetOwner(use_), mlirOpOperandGetOperandNumber(use_) as usize));
            use_ = mlirOpOperandGetNextUse(use_);
        }
    }
    out
}

pub fn replace_all_uses(of: Val, with: Val) {
    unsafe { mlirValueReplaceAllUsesOfWith(of, with) }
}

pub fn regions(op: Op) -> Vec<MlirRegion> {
    let n = unsafe { mlirOperationGetNumRegions(op) };
    (0..n).map(|i| unsafe { mlirOperationGetRegion(op, i) }).collect()
}

pub fn blocks(region: MlirRegion) -> Vec<MlirBlock> {
    let mut out = Vec::new();
    unsafe {
        let mut b = mlirRegionGetFirstBlock(region);
        while !b.ptr.is_null() {
            out.push(b);
            b = mlirBlockGetNextInRegion(b);
        }
    }
    out
}

pub fn block_ops(block: MlirBlock) -> Vec<Op> {
    let mut out = Vec::new();
    unsafe {
        let mut op = mlirBlockGetFirstOperation(block);
        while !op.ptr.is_null() {
            out.push(op);
            op = mlirOperationGetNextInBlock(op);
        }
    }
    out
}

pub fn block_arguments(block: MlirBlock) -> Vec<Val> {
    let n = unsafe { mlirBlockGetNumArguments(block) };
    (0..n).map(|i| unsafe { mlirBlockGetArgument(block, i) }).collect()
}

pub fn op_block(op: Op) -> MlirBlock {
    unsafe { mlirOperationGetBlock(op) }
}

/// Every op nested inside `op`'s regions (not `op` itself), in pre-order.
pub fn nested_ops(op: Op) -> Vec<Op> {
    let mut out = Vec::new();
    let mut stack = vec![op];
    while let Some(o) = stack.pop() {
        for region in regions(o) {
            for block in blocks(region) {
                let ops = block_ops(block);
                for &inner in ops.iter().rev() {
                    stack.push(inner);
                }
                out.extend(ops);
            }
        }
    }
    out
}

pub fn attribute(op: Op, name: &str) -> Option<MlirAttribute> {
    let c = CString::new(name).expect("attribute names have no NUL");
    let a = unsafe { mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString(c.as_ptr())) };
    (!a.ptr.is_null()).then_some(a)
}

pub fn string_attribute(op: Op, name: &str) -> Option<String> {
    let a = attribute(op, name)?;
    unsafe { mlirAttributeIsAString(a).then(|| string_ref_to_string(mlirStringAttrGetValue(a))) }
}

pub fn flat_symbol_attribute(op: Op, name: &str) -> Option<String> {
    let a = attribute(op, name)?;
    unsafe { mlirAttributeIsAFlatSymbolRef(a).then(|| string_ref_to_string(mlirFlatSymbolRefAttrGetValue(a))) }
}

pub fn dense_i32_array(attr: MlirAttribute) -> Option<Vec<i32>> {
    unsafe {
        if !mlirAttributeIsADenseI32Array(attr) {
            return None;
        }
        let n = mlirDenseArrayGetNumElements(attr);
        Some((0..n).map(|i| mlirDenseI32ArrayGetElement(attr, i)).collect())
    }
}

/// The values of an `array<i64: …>` attribute (`slice_sizes`, `static_offsets`, …).
pub fn dense_i64_array(attr: MlirAttribute) -> Option<Vec<i64>> {
    unsafe {
        if !mlirAttributeIsADenseI64Array(attr) {
            return None;
        }
        let n = mlirDenseArrayGetNumElements(attr);
        Some((0..n).map(|i| mlirDenseI64ArrayGetElement(attr, i)).collect())
    }
}

/// Whether two types are the same (types are uniqued in their context).
pub fn types_equal(a: MlirType, b: MlirType) -> bool {
    unsafe { mlirTypeEqual(a, b) }
}

pub fn attribute_text(attr: MlirAttribute) -> String {
    let mut s = String::new();
    unsafe { mlirAttributePrint(attr, Some(append_to_string), &mut s as *mut String as *mut c_void) };
    s
}

pub fn set_unit_attribute(op: Op, name: &str) {
    let c = CString::new(name).expect("attribute names have no NUL");
    unsafe {
        let ctx = mlirOperationGetContext(op);
        mlirOperationSetDiscardableAttributeByName(
            op,
            mlirStringRefCreateFromCString(c.as_ptr()),
            mlirUnitAttrGet(ctx),
        );
    }
}

pub fn location(op: Op) -> MlirLocation {
    unsafe { mlirOperationGetLocation(op) }
}

/// `file:line:col` for a file location (or the file location a call-site, fused or named
/// location wraps); the printed location otherwise.
pub fn location_text(loc: MlirLocation) -> String {
    unsafe {
        if mlirLocationIsAFileLineColRange(loc) {
            let file = string_ref_to_string(mlirIdentifierStr(mlirLocationFileLineColRangeGetFilename(loc)));
            let line = mlirLocationFileLineColRangeGetStartLine(loc);
            let col = mlirLocationFileLineColRangeGetStartColumn(loc);
            // Line 0 is MLIR's "somewhere in this file" (e.g. an implicit module).
            return if line == 0 { file } else { format!("{file}:{line}:{col}") };
        }
        if mlirLocationIsACallSite(loc) {
            return location_text(mlirLocationCallSiteGetCaller(loc));
        }
        if mlirLocationIsAName(loc) {
            return location_text(mlirLocationNameGetChildLoc(loc));
        }
        if mlirLocationIsAFused(loc) && mlirLocationFusedGetNumLocations(loc) > 0 {
            let mut first = mlirLocationUnknownGet(mlirLocationGetContext(loc));
            mlirLocationFusedGetLocations(loc, &mut first);
            return location_text(first);
        }
        let mut s = String::new();
        mlirLocationPrint(loc, Some(append_to_string), &mut s as *mut String as *mut c_void);
        s
    }
}

pub fn call_site_location(callee: MlirLocation, caller: MlirLocation) -> MlirLocation {
    unsafe { mlirLocationCallSiteGet(callee, caller) }
}

pub fn set_location(op: Op, loc: MlirLocation) {
    unsafe { mlirOperationSetLocation(op, loc) }
}

pub fn clone_op(op: Op) -> Op {
    unsafe { mlirOperationClone(op) }
}

pub fn insert_before(block: MlirBlock, reference: Op, op: Op) {
    unsafe { mlirBlockInsertOwnedOperationBefore(block, reference, op) }
}

pub fn move_before(op: Op, reference: Op) {
    unsafe { mlirOperationMoveBefore(op, reference) }
}

pub fn erase(op: Op) {
    unsafe {
        mlirOperationRemoveFromParent(op);
        mlirOperationDestroy(op);
    }
}

pub fn same_op(a: Op, b: Op) -> bool {
    unsafe { mlirOperationEqual(a, b) }
}

/// The op after `op` in its block, if any.
pub fn next_op(op: Op) -> Option<Op> {
    let next = unsafe { mlirOperationGetNextInBlock(op) };
    (!next.ptr.is_null()).then_some(next)
}

pub fn same_value(a: Val, b: Val) -> bool {
    a.ptr == b.ptr
}

pub fn value_key(v: Val) -> usize {
    v.ptr as usize
}

pub fn op_key(op: Op) -> usize {
    op.ptr as usize
}

/// The size of a tensor type in bytes, or why it has none.
pub enum TypeBytes {
    /// Not a tensor: scalars, tokens, and other register-like values own no buffer.
    NotATensor,
    Static(u64),
    Dynamic,
    Unranked,
    UnknownElement(String),
    MemRef,
}

pub fn type_text(t: MlirType) -> String {
    let mut s = String::new();
    unsafe { mlirTypePrint(t, Some(append_to_string), &mut s as *mut String as *mut c_void) };
    s
}

fn element_bytes(t: MlirType) -> Option<u64> {
    unsafe {
        let bits = if mlirTypeIsAInteger(t) {
            mlirIntegerTypeGetWidth(t) as u64
        } else if mlirTypeIsAFloat(t) {
            mlirFloatTypeGetWidth(t) as u64
        } else if mlirTypeIsAIndex(t) {
            64
        } else if mlirTypeIsAComplex(t) {
            return element_bytes(mlirComplexTypeGetElementType(t)).map(|b| 2 * b);
        } else {
            return None;
        };
        Some(bits.div_ceil(8).max(1))
    }
}

pub fn type_bytes(t: MlirType) -> TypeBytes {
    unsafe {
        if mlirTypeIsAMemRef(t) {
            return TypeBytes::MemRef;
        }
        if !mlirTypeIsATensor(t) {
            return TypeBytes::NotATensor;
        }
        if !mlirTypeIsARankedTensor(t) {
            return TypeBytes::Unranked;
        }
        if !mlirShapedTypeHasStaticShape(t) {
            return TypeBytes::Dynamic;
        }
        let element = mlirShapedTypeGetElementType(t);
        let Some(bytes) = element_bytes(element) else {
            return TypeBytes::UnknownElement(type_text(element));
        };
        let rank = mlirShapedTypeGetRank(t);
        let elements: u64 = (0..rank).map(|i| mlirShapedTypeGetDimSize(t, i as isize) as u64).product();
        TypeBytes::Static(elements.saturating_mul(bytes))
    }
}

/// Static shape of a ranked tensor type (None otherwise).
pub fn tensor_shape(t: MlirType) -> Option<Vec<u64>> {
    unsafe {
        if !mlirTypeIsARankedTensor(t) || !mlirShapedTypeHasStaticShape(t) {
            return None;
        }
        let rank = mlirShapedTypeGetRank(t);
        Some((0..rank).map(|i| mlirShapedTypeGetDimSize(t, i as isize) as u64).collect())
    }
}

pub fn is_memref(t: MlirType) -> bool {
    unsafe { mlirTypeIsAMemRef(t) }
}

/// Whether `t` is a ranked tensor type.
pub fn is_ranked_tensor(t: MlirType) -> bool {
    unsafe { mlirTypeIsARankedTensor(t) }
}

/// `value : i<width>` in `op`'s context.
pub fn integer_attribute(op: Op, width: u32, value: i64) -> MlirAttribute {
    unsafe {
        let ctx = mlirOperationGetContext(op);
        mlirIntegerAttrGet(mlirIntegerTypeGet(ctx, width), value)
    }
}

/// Loop bounds of a linalg op's iteration space from its `indexing_maps`: each dimension that
/// appears as a plain `d_k` result of some operand's map takes that operand's dimension size.
pub fn iteration_volume(op: Op) -> Option<u64> {
    let maps = attribute(op, "indexing_maps")?;
    unsafe {
        if !mlirAttributeIsAArray(maps) {
            return None;
        }
        let ops = operands(op);
        let count = mlirArrayAttrGetNumElements(maps) as usize;
        if count != ops.len() {
            return None;
        }
        let mut bounds: Vec<Option<u64>> = Vec::new();
        for (i, &operand) in ops.iter().enumerate() {
            let attr = mlirArrayAttrGetElement(maps, i as isize);
            if !mlirAttributeIsAAffineMap(attr) {
                return None;
            }
            let map = mlirAffineMapAttrGetValue(attr);
            let dims = mlirAffineMapGetNumDims(map) as usize;
            if bounds.len() < dims {
                bounds.resize(dims, None);
            }
            let shape = tensor_shape(value_type(operand)).unwrap_or_default();
            for r in 0..mlirAffineMapGetNumResults(map) {
                let expr = mlirAffineMapGetResult(map, r);
                if mlirAffineExprIsADim(expr) {
                    let d = mlirAffineDimExprGetPosition(expr) as usize;
                    if let Some(&size) = shape.get(r as usize) {
                        bounds[d] = Some(bounds[d].map_or(size, |b: u64| b.max(size)));
                    }
                }
            }
        }
        Some(bounds.iter().map(|b| b.unwrap_or(1)).product())
    }
}

/// The op that defines `v` and the result number, or `None` for a block argument.
pub fn defining_op(v: Val) -> Option<(Op, usize)> {
    unsafe { mlirValueIsAOpResult(v).then(|| (mlirOpResultGetOwner(v), mlirOpResultGetResultNumber(v) as usize)) }
}

/// The element type of a shaped type, or the type itself.
pub fn element_type(t: MlirType) -> MlirType {
    unsafe {
        if mlirTypeIsAShaped(t) {
            mlirShapedTypeGetElementType(t)
        } else {
            t
        }
    }
}

/// Bit width of an integer type (64 for `index`), `None` for any other type.
pub fn integer_width(t: MlirType) -> Option<u32> {
    unsafe {
        if mlirTypeIsAInteger(t) {
            Some(mlirIntegerTypeGetWidth(t))
        } else if mlirTypeIsAIndex(t) {
            Some(64)
        } else {
            None
        }
    }
}

/// The integer an integer, bool or splat dense attribute holds.
pub fn integer_attribute_value(attr: MlirAttribute) -> Option<i64> {
    unsafe {
        if mlirAttributeIsAInteger(attr) {
            Some(mlirIntegerAttrGetValueInt(attr))
        } else if mlirAttributeIsABool(attr) {
            Some(mlirBoolAttrGetValue(attr) as i64)
        } else if mlirAttributeIsADenseElements(attr) && mlirDenseElementsAttrIsSplat(attr) {
            integer_attribute_value(mlirDenseElementsAttrGetSplatValue(attr))
        } else {
            None
        }
    }
}

/// Creates (unattached) `name` with one result of type `t` holding the integer `value`:
/// an integer attribute for a scalar type, a splat for a tensor type.
pub fn create_integer_constant(name: &str, t: MlirType, value: i64, loc: MlirLocation) -> Op {
    unsafe {
        let scalar = mlirIntegerAttrGet(element_type(t), value);
        let attr = if mlirTypeIsAShaped(t) { mlirDenseElementsAttrSplatGet(t, scalar) } else { scalar };
        create_op(name, &[], &[t], &[("value", attr)], loc)
    }
}

/// Creates (unattached) a region-free op `name` from operands, result types and attributes.
pub fn create_op(
    name: &str,
    operands: &[Val],
    result_types: &[MlirType],
    attributes: &[(&str, MlirAttribute)],
    loc: MlirLocation,
) -> Op {
    let op_name = CString::new(name).expect("op names have no NUL");
    unsafe {
        let ctx = mlirLocationGetContext(loc);
        let mut state = mlirOperationStateGet(mlirStringRefCreateFromCString(op_name.as_ptr()), loc);
        mlirOperationStateAddOperands(&mut state, operands.len() as isize, operands.as_ptr());
        mlirOperationStateAddResults(&mut state, result_types.len() as isize, result_types.as_ptr());
        let names: Vec<CString> =
            attributes.iter().map(|(n, _)| CString::new(*n).expect("attribute names have no NUL")).collect();
        let named: Vec<MlirNamedAttribute> = names
            .iter()
            .zip(attributes)
            .map(|(n, (_, a))| {
                mlirNamedAttributeGet(mlirIdentifierGet(ctx, mlirStringRefCreateFromCString(n.as_ptr())), *a)
            })
            .collect();
        mlirOperationStateAddAttributes(&mut state, named.len() as isize, named.as_ptr());
        mlirOperationCreate(&mut state)
    }
}

/// Makes operand `n` of `user` read a fresh copy of its value instead: a
/// `bufferization.alloc_tensor copy(%v)` inserted right before `user` in `block`, which
/// bufferization always allocates.
pub fn read_through_copy(block: MlirBlock, user: Op, n: usize) {
    let value = operands(user)[n];
    let copy = create_op(
        "bufferization.alloc_tensor",
        &[value],
        &[value_type(value)],
        &[("operandSegmentSizes", dense_i32_array_attribute(user, &[0, 1, 0]))],
        location(user),
    );
    insert_before(block, user, copy);
    set_operand(user, n, results(copy)[0]);
}

/// `array<i32: …>` in `op`'s context.
pub fn dense_i32_array_attribute(op: Op, values: &[i32]) -> MlirAttribute {
    unsafe { mlirDenseI32ArrayGet(mlirOperationGetContext(op), values.len() as isize, values.as_ptr()) }
}

/// Clones `op` (with its regions) before `reference` in `block`, pointing every operand found
/// in `map` (value keys, the clone's nested ops included) at its mapped value, then maps
/// `op`'s results to the clone's. Returns the clone.
pub fn clone_remapped(op: Op, block: MlirBlock, reference: Op, map: &mut std::collections::HashMap<usize, Val>) -> Op {
    let clone = clone_op(op);
    insert_before(block, reference, clone);
    for inner in std::iter::once(clone).chain(nested_ops(clone)) {
        for (i, v) in operands(inner).into_iter().enumerate() {
            if let Some(&mapped) = map.get(&value_key(v)) {
                set_operand(inner, i, mapped);
            }
        }
    }
    for (orig, new) in results(op).into_iter().zip(results(clone)) {
        map.insert(value_key(orig), new);
    }
    clone
}
