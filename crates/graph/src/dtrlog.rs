//! DTR operator logs: the JSON-lines traces the Dynamic Tensor Rematerialization prototype
//! records from PyTorch (Kirisame et al., *Dynamic Tensor Rematerialization*, ICLR 2021,
//! Appendix C.6, "Log-replaying mechanism"), read into a [`Graph`] and its program order.
//!
//! # Format
//!
//! One JSON object per line (blank lines are skipped; unknown fields are ignored). Numbers
//! the prototype writes as decimal strings (`MEMORY`, `TIME`, `ALIAS`) may also be numbers.
//!
//! | instruction | fields | meaning (C.6) |
//! | --- | --- | --- |
//! | `CONSTANT` | `NAME` | a weight or input; followed by its `MEMORY` line |
//! | `MEMORY` | `NAME`, `MEMORY` | bytes of a result of the `CALL` before it, or of a constant |
//! | `ALIAS` | `NAME`, `ALIAS` | index into the `CALL`'s `ARGS` of the argument whose storage the result views, or `-1` for a fresh storage |
//! | `CALL` | `NAME`, `RESULT`, `ARGS`, `TIME` | `RESULT = NAME(ARGS)`; followed by a `MEMORY` and an `ALIAS` line per result (in any order) |
//! | `MUTATE` | `NAME`, `ARGS`, `MUTATE`, `TIME` | the in-place call `NAME(ARGS)`, writing the `ARGS` at the indices `MUTATE` |
//! | `COPY` | `DST`, `SRC` | a new name `DST` for `SRC`'s tensor (`x = y`, `x` fresh): one more reference |
//! | `COPY_FROM` | `DST`, `SRC` | `DST = SRC` for an existing `DST`: a reference moves from `DST`'s tensor to `SRC`'s |
//! | `RELEASE` | `NAME` | the name's destructor: one reference less; the name is gone |
//! | `PIN` | `NAME` | the tensor must be kept |
//! | `ANNOTATE` | `ANNOTATION` | a marker; after `"BACKWARD"` every node is part of the backward pass |
//!
//! # Mapping onto the graph
//!
//! * A `CONSTANT` is a pinned argument node of its `MEMORY` bytes, named by the tensor.
//!   Constants are never outputs.
//! * A `CALL` is one node (named `"<op> <first fresh result>"`, cost `TIME`, 1 when absent)
//!   that owns the bytes of all its fresh (`ALIAS -1`) results; its predecessors are the
//!   nodes holding its `ARGS` (deduplicated). A multi-output op is thus one node whose bytes
//!   are the sum of its fresh results (the results are computed together, C.4).
//! * A result that aliases argument `k` is a zero-byte view node (`"<op> <result>"`,
//!   [`NodeSpec::view_of`]) whose only predecessor and source is the node holding `ARGS[k]`'s
//!   tensor, which may itself be a view or a constant. It costs nothing, unless every result
//!   of the `CALL` is a view: then there is no owning node and the first view carries the
//!   op's cost. A `MEMORY` line for a view is read and ignored (an alias has size 0, C.1).
//! * A `MUTATE` is modelled as C.6 says: a pure node from `ARGS` to fresh copies of the mutated
//!   arguments (`"<op> <first mutated argument>"`), owning the sizes of the mutated tensors'
//!   *storages* (for a view: its root's bytes); each mutated name then refers to its copy and
//!   its old tensor loses that reference. Other names of the old tensor (from `COPY`) keep
//!   pointing to it, as in the prototype (C.6's caveat on aliases).
//! * Reference counts follow C.6: a tensor gets 1 reference when it is made, `COPY` adds one,
//!   `COPY_FROM` moves one, `RELEASE` removes one, and defining a name that is already bound
//!   releases its old tensor first. At the end of the log every non-constant tensor with
//!   references left is an output ("Output condition"), and so is every `PIN`ned one.
//! * The program order is the nodes in log order (a `CALL`'s owning node, then its views in
//!   result order), arguments excluded; it is a valid schedule of the graph.
//!
//! Every node records its op name and `line N` of the log as its origin. A missing `ALIAS`
//! line means a fresh storage, a missing `MEMORY` line 0 bytes. Errors name the 1-based line.

use crate::graph::{Graph, GraphBuilder, GraphError, NodeId, NodeSpec};
use serde_json::{Map, Value};
use std::collections::HashMap;

/// A DTR log that could not be read, with the line it went wrong on.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("line {line}: {kind}")]
pub struct DtrLogError {
    /// 1-based line of the log (the last line for a problem found at the end).
    pub line: usize,
    /// What is wrong (its `Display` is the message, without the line).
    pub kind: DtrLogErrorKind,
}

/// What is wrong with a DTR log line. `record` fields describe the line being read as the
/// messages name it: `a log line`, `CONSTANT`, `COPY`, `CALL <op>`, `MUTATE <op>`, …
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum DtrLogErrorKind {
    /// The line is not JSON.
    #[error("invalid JSON: {0}")]
    InvalidJson(
        /// serde_json's description of the problem.
        String,
    ),
    /// The line is JSON, but not an object.
    #[error("a log line must be a JSON object")]
    NotAnObject,
    /// A required field is absent.
    #[error("{record} without \"{field}\"")]
    MissingField {
        /// The record (see the enum).
        record: String,
        /// The absent field.
        field: String,
    },
    /// A field that must be a string is not.
    #[error("{record}: \"{field}\" must be a string, found {found}")]
    NotAString {
        /// The record (see the enum).
        record: String,
        /// The field.
        field: String,
        /// Its value.
        found: Box<Value>,
    },
    /// A field that must be a list of strings is not.
    #[error("{record}: \"{field}\" must be a list of strings")]
    NotAStringList {
        /// The record (see the enum).
        record: String,
        /// The field.
        field: String,
    },
    /// `TIME` is not a non-negative number.
    #[error("{record}: \"TIME\" must be a non-negative number, found {found}")]
    BadTime {
        /// The record (see the enum).
        record: String,
        /// The value of `TIME`.
        found: Box<Value>,
    },
    /// The `INSTRUCTION` is none of the known ones.
    #[error("unknown instruction \"{0}\"")]
    UnknownInstruction(
        /// The instruction.
        String,
    ),
    /// A name that is not bound (never defined, or released).
    #[error("tensor \"{0}\" is used before it is defined (or after its RELEASE)")]
    UndefinedTensor(
        /// The name.
        String,
    ),
    /// A `CALL` lists a result name twice.
    #[error("{record}: result \"{name}\" is listed twice")]
    DuplicateResult {
        /// The record (see the enum).
        record: String,
        /// The repeated result.
        name: String,
    },
    /// A `MEMORY` line without its `MEMORY` value.
    #[error("MEMORY of \"{name}\" without \"MEMORY\"")]
    MissingMemory {
        /// The tensor the line is about.
        name: String,
    },
    /// A `MEMORY` value that is not a whole number of bytes.
    #[error("MEMORY of \"{name}\" must be a whole number of bytes, found {found}")]
    BadMemory {
        /// The tensor the line is about.
        name: String,
        /// The value of `MEMORY`.
        found: Box<Value>,
    },
    /// A `MEMORY` line for a name that is not bound.
    #[error("MEMORY for unknown tensor \"{0}\"")]
    MemoryForUnknownTensor(
        /// The name.
        String,
    ),
    /// A `MEMORY` line for a computed tensor whose `CALL` is over.
    #[error("MEMORY for \"{0}\", which is neither a result of the CALL before it nor a CONSTANT")]
    MemoryForComputedTensor(
        /// The name.
        String,
    ),
    /// An `ALIAS` line without its `ALIAS` value.
    #[error("ALIAS of \"{name}\" without \"ALIAS\"")]
    MissingAlias {
        /// The tensor the line is about.
        name: String,
    },
    /// An `ALIAS` value that is not an integer.
    #[error("ALIAS of \"{name}\" must be an argument index or -1, found {found}")]
    BadAlias {
        /// The tensor the line is about.
        name: String,
        /// The value of `ALIAS`.
        found: Box<Value>,
    },
    /// An `ALIAS` line for a bound name that is not a result of the pending `CALL`.
    #[error("ALIAS for \"{0}\", which is not a result of the CALL before it")]
    AliasForNonResult(
        /// The name.
        String,
    ),
    /// An `ALIAS` line for a name that is not bound.
    #[error("ALIAS for unknown tensor \"{0}\"")]
    AliasForUnknownTensor(
        /// The name.
        String,
    ),
    /// An `ALIAS` index that is neither -1 nor an argument of the call.
    #[error("ALIAS index {index} of \"{name}\" is out of range: the call has {arity} argument(s)")]
    AliasOutOfRange {
        /// The tensor the line is about.
        name: String,
        /// The index.
        index: i64,
        /// The call's number of arguments.
        arity: usize,
    },
    /// A `MUTATE` whose `MUTATE` field is not a list.
    #[error("{record}: \"MUTATE\" must be a list of argument indices")]
    MutateNotAList {
        /// The record (see the enum).
        record: String,
    },
    /// A `MUTATE` index that is not an integer.
    #[error("{record}: MUTATE index {found} is not an integer")]
    MutateIndexNotInteger {
        /// The record (see the enum).
        record: String,
        /// The index as written.
        found: Box<Value>,
    },
    /// A `MUTATE` index that is not an argument of the call.
    #[error("{record}: MUTATE index {index} is out of range: the call has {arity} argument(s)")]
    MutateIndexOutOfRange {
        /// The record (see the enum).
        record: String,
        /// The index.
        index: i64,
        /// The call's number of arguments.
        arity: usize,
    },
    /// The whole log does not make a valid graph (found at the end).
    #[error("the log does not make a valid graph: {0}")]
    InvalidGraph(
        /// Why.
        GraphError,
    ),
}

/// Whether `text` looks like a DTR log: its first non-empty line is a JSON object with an
/// `"INSTRUCTION"` key.
pub fn looks_like_dtr_log(text: &str) -> bool {
    text.lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .and_then(|line| serde_json::from_str::<Value>(line).ok())
        .is_some_and(|value| value.get("INSTRUCTION").is_some())
}

/// Reads a DTR operator log into a graph and its program order (the nodes in log order,
/// arguments excluded). See the module documentation for the format and the mapping.
pub fn read_dtr_log(text: &str) -> Result<(Graph, Vec<NodeId>), DtrLogError> {
    let mut reader = Reader::default();
    let mut last_line = 0;
    for (index, raw) in text.lines().enumerate() {
        let line = index + 1;
        last_line = line;
        let raw = raw.trim();
        if raw.is_empty() {
            continue;
        }
        let err = |kind: DtrLogErrorKind| DtrLogError { line, kind };
        let value: Value = serde_json::from_str(raw).map_err(|e| err(DtrLogErrorKind::InvalidJson(e.to_string())))?;
        let Value::Object(record) = value else {
            return Err(err(DtrLogErrorKind::NotAnObject));
        };
        reader.instruction(line, &record).map_err(err)?;
    }
    reader.finish().map_err(|kind| DtrLogError { line: last_line, kind })
}

/// One simulator tensor (C.1): a value some names refer to.
struct Tensor {
    /// The node holding it: its owning node, a view node, or a constant's argument node.
    node: NodeId,
    /// Bytes of its storage (for a view: its root's), what a `MUTATE` copies.
    storage_bytes: u64,
    /// External references (C.1 `refs`).
    refs: u64,
    /// A `CONSTANT`: never an output.
    constant: bool,
}

/// A result of the pending `CALL`, filled in by its `MEMORY` and `ALIAS` lines.
struct PendingResult {
    name: String,
    bytes: u64,
    /// Index into the call's arguments whose storage this result views.
    alias: Option<usize>,
}

/// A `CALL` whose `MEMORY` and `ALIAS` lines are still being read.
struct PendingCall {
    line: usize,
    op: String,
    cost: f64,
    /// The tensors of the call's `ARGS`, in order.
    args: Vec<usize>,
    results: Vec<PendingResult>,
    backward: bool,
}

#[derive(Default)]
struct Reader {
    builder: GraphBuilder,
    order: Vec<NodeId>,
    tensors: Vec<Tensor>,
    /// Live names and the tensor each refers to.
    names: HashMap<String, usize>,
    pending: Option<PendingCall>,
    backward: bool,
    /// The line being read.
    line: usize,
}

/// What the reader's helpers fail with: the line is added by [`read_dtr_log`].
type Result<T, E = DtrLogErrorKind> = std::result::Result<T, E>;

fn missing(what: &str, field: &str) -> DtrLogErrorKind {
    DtrLogErrorKind::MissingField { record: what.to_string(), field: field.to_string() }
}

fn string_field<'a>(record: &'a Map<String, Value>, field: &str, what: &str) -> Result<&'a str> {
    match record.get(field) {
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(DtrLogErrorKind::NotAString {
            record: what.to_string(),
            field: field.to_string(),
            found: Box::new(other.clone()),
        }),
        None => Err(missing(what, field)),
    }
}

fn string_list(record: &Map<String, Value>, field: &str, what: &str) -> Result<Vec<String>> {
    let bad = || DtrLogErrorKind::NotAStringList { record: what.to_string(), field: field.to_string() };
    match record.get(field) {
        Some(Value::Array(items)) => {
            items.iter().map(|item| item.as_str().map(str::to_string).ok_or_else(bad)).collect()
        }
        Some(_) => Err(bad()),
        None => Err(missing(what, field)),
    }
}

/// A decimal string or a JSON number, as an integer.
fn integer(value: &Value) -> Option<i64> {
    match value {
        Value::Number(n) => {
            n.as_i64().or_else(|| n.as_f64().filter(|f| f.fract() == 0.0 && f.abs() < 9e15).map(|f| f as i64))
        }
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// `TIME`: a decimal string or a number, non-negative; 1 when absent.
fn cost(record: &Map<String, Value>, what: &str) -> Result<f64> {
    let parsed = match record.get("TIME") {
        None | Some(Value::Null) => return Ok(1.0),
        Some(Value::Number(n)) => n.as_f64(),
        Some(Value::String(s)) => s.trim().parse::<f64>().ok(),
        Some(_) => None,
    };
    match parsed {
        Some(t) if t.is_finite() && t >= 0.0 => Ok(t),
        _ => Err(DtrLogErrorKind::BadTime { record: what.to_string(), found: Box::new(record["TIME"].clone()) }),
    }
}

impl Reader {
    fn instruction(&mut self, line: usize, record: &Map<String, Value>) -> Result<()> {
        self.line = line;
        let instruction = string_field(record, "INSTRUCTION", "a log line")?;
        match instruction {
            "MEMORY" => return self.memory(record),
            "ALIAS" => return self.alias(record),
            _ => {}
        }
        self.flush();
        match instruction {
            "CONSTANT" => {
                let name = string_field(record, "NAME", "CONSTANT")?;
                let node = self.builder.add(NodeSpec::argument(name, 0).backward(self.backward), &[]);
                let tensor = self.new_tensor(node, 0, true);
                self.bind(name, tensor);
            }
            "CALL" => self.call(record)?,
            "MUTATE" => self.mutate(record)?,
            "COPY" => {
                let src = self.lookup(string_field(record, "SRC", "COPY")?)?;
                self.bind(string_field(record, "DST", "COPY")?, src);
            }
            "COPY_FROM" => {
                let src = self.lookup(string_field(record, "SRC", "COPY_FROM")?)?;
                let dst = string_field(record, "DST", "COPY_FROM")?;
                self.lookup(dst)?;
                self.bind(dst, src);
            }
            "RELEASE" => {
                let name = string_field(record, "NAME", "RELEASE")?;
                let tensor = self.lookup(name)?;
                self.names.remove(name);
                self.tensors[tensor].refs = self.tensors[tensor].refs.saturating_sub(1);
            }
            "PIN" => {
                let tensor = self.lookup(string_field(record, "NAME", "PIN")?)?;
                if !self.tensors[tensor].constant {
                    self.builder.node_mut(self.tensors[tensor].node).output = true;
                }
            }
            "ANNOTATE" => {
                if string_field(record, "ANNOTATION", "ANNOTATE")? == "BACKWARD" {
                    self.backward = true;
                }
            }
            other => return Err(DtrLogErrorKind::UnknownInstruction(other.to_string())),
        }
        Ok(())
    }

    fn new_tensor(&mut self, node: NodeId, storage_bytes: u64, constant: bool) -> usize {
        self.tensors.push(Tensor { node, storage_bytes, refs: 0, constant });
        self.tensors.len() - 1
    }

    /// Points `name` at `tensor` (one more reference), releasing the tensor it named before.
    fn bind(&mut self, name: &str, tensor: usize) {
        self.tensors[tensor].refs += 1;
        if let Some(old) = self.names.insert(name.to_string(), tensor) {
            self.tensors[old].refs = self.tensors[old].refs.saturating_sub(1);
        }
    }

    fn lookup(&self, name: &str) -> Result<usize> {
        self.names.get(name).copied().ok_or_else(|| DtrLogErrorKind::UndefinedTensor(name.to_string()))
    }

    fn call(&mut self, record: &Map<String, Value>) -> Result<()> {
        let op = string_field(record, "NAME", "CALL")?.to_string();
        let what = format!("CALL {op}");
        let results = string_list(record, "RESULT", &what)?;
        let arg_names = string_list(record, "ARGS", &what)?;
        let cost = cost(record, &what)?;
        let args = arg_names.iter().map(|a| self.lookup(a)).collect::<Result<Vec<_>, _>>()?;
        for (i, r) in results.iter().enumerate() {
            if results[..i].contains(r) {
                return Err(DtrLogErrorKind::DuplicateResult { record: what, name: r.clone() });
            }
        }
        let results = results.into_iter().map(|name| PendingResult { name, bytes: 0, alias: None }).collect();
        self.pending = Some(PendingCall { line: self.line, op, cost, args, results, backward: self.backward });
        Ok(())
    }

    /// The pending call's result named `name`, if any.
    fn pending_result(&mut self, name: &str) -> Option<(&mut PendingResult, usize)> {
        let call = self.pending.as_mut()?;
        let arity = call.args.len();
        call.results.iter_mut().find(|r| r.name == name).map(|r| (r, arity))
    }

    fn memory(&mut self, record: &Map<String, Value>) -> Result<()> {
        let name = string_field(record, "NAME", "MEMORY")?;
        let raw = record.get("MEMORY").ok_or_else(|| DtrLogErrorKind::MissingMemory { name: name.to_string() })?;
        let bytes = integer(raw)
            .and_then(|b| u64::try_from(b).ok())
            .ok_or_else(|| DtrLogErrorKind::BadMemory { name: name.to_string(), found: Box::new(raw.clone()) })?;
        if let Some((result, _)) = self.pending_result(name) {
            result.bytes = bytes;
            return Ok(());
        }
        let tensor =
            self.names.get(name).copied().ok_or_else(|| DtrLogErrorKind::MemoryForUnknownTensor(name.to_string()))?;
        if !self.tensors[tensor].constant {
            return Err(DtrLogErrorKind::MemoryForComputedTensor(name.to_string()));
        }
        self.tensors[tensor].storage_bytes = bytes;
        self.builder.node_mut(self.tensors[tensor].node).bytes = bytes;
        Ok(())
    }

    fn alias(&mut self, record: &Map<String, Value>) -> Result<()> {
        let name = string_field(record, "NAME", "ALIAS")?;
        let raw = record.get("ALIAS").ok_or_else(|| DtrLogErrorKind::MissingAlias { name: name.to_string() })?;
        let index = integer(raw)
            .ok_or_else(|| DtrLogErrorKind::BadAlias { name: name.to_string(), found: Box::new(raw.clone()) })?;
        let known = self.names.contains_key(name);
        let Some((result, arity)) = self.pending_result(name) else {
            return Err(if known {
                DtrLogErrorKind::AliasForNonResult(name.to_string())
            } else {
                DtrLogErrorKind::AliasForUnknownTensor(name.to_string())
            });
        };
        result.alias = match index {
            -1 => None,
            i if i >= 0 && (i as u64) < arity as u64 => Some(i as usize),
            i => return Err(DtrLogErrorKind::AliasOutOfRange { name: name.to_string(), index: i, arity }),
        };
        Ok(())
    }

    /// Turns the pending call, its results now known, into nodes.
    fn flush(&mut self) {
        let Some(call) = self.pending.take() else { return };
        let origin = Some(format!("line {}", call.line));
        let fresh: Vec<&PendingResult> = call.results.iter().filter(|r| r.alias.is_none()).collect();
        let owner = if !fresh.is_empty() || call.results.is_empty() {
            let name = match fresh.first() {
                Some(r) => format!("{} {}", call.op, r.name),
                None => call.op.clone(),
            };
            let bytes = fresh.iter().map(|r| r.bytes).sum();
            let spec =
                NodeSpec::op(name, bytes, call.cost).backward(call.backward).origin(call.op.clone(), origin.clone());
            let preds: Vec<NodeId> = call.args.iter().map(|&a| self.tensors[a].node).collect();
            let node = self.builder.add(spec, &preds);
            self.order.push(node);
            Some(node)
        } else {
            None
        };
        let mut cost_left = if owner.is_some() { 0.0 } else { call.cost };
        for result in &call.results {
            let tensor = match result.alias {
                None => {
                    let node = owner.expect("a call with a fresh result has an owning node");
                    self.new_tensor(node, result.bytes, false)
                }
                Some(k) => {
                    let source = &self.tensors[call.args[k]];
                    let (source_node, storage_bytes) = (source.node, source.storage_bytes);
                    let spec = NodeSpec::op(format!("{} {}", call.op, result.name), 0, std::mem::take(&mut cost_left))
                        .view_of(source_node)
                        .backward(call.backward)
                        .origin(call.op.clone(), origin.clone());
                    let node = self.builder.add(spec, &[source_node]);
                    self.order.push(node);
                    self.new_tensor(node, storage_bytes, false)
                }
            };
            self.bind(&result.name, tensor);
        }
    }

    fn mutate(&mut self, record: &Map<String, Value>) -> Result<()> {
        let op = string_field(record, "NAME", "MUTATE")?.to_string();
        let what = format!("MUTATE {op}");
        let arg_names = string_list(record, "ARGS", &what)?;
        let cost = cost(record, &what)?;
        let args = arg_names.iter().map(|a| self.lookup(a)).collect::<Result<Vec<_>, _>>()?;
        let Some(Value::Array(indices)) = record.get("MUTATE") else {
            return Err(DtrLogErrorKind::MutateNotAList { record: what });
        };
        // The mutated names, each once, in the order MUTATE lists them.
        let mut mutated: Vec<&str> = Vec::new();
        for raw in indices {
            let index = integer(raw).ok_or_else(|| DtrLogErrorKind::MutateIndexNotInteger {
                record: what.clone(),
                found: Box::new(raw.clone()),
            })?;
            let name = usize::try_from(index).ok().and_then(|i| arg_names.get(i)).ok_or_else(|| {
                DtrLogErrorKind::MutateIndexOutOfRange { record: what.clone(), index, arity: arg_names.len() }
            })?;
            if !mutated.contains(&name.as_str()) {
                mutated.push(name);
            }
        }
        let name = match mutated.first() {
            Some(first) => format!("{op} {first}"),
            None => op.clone(),
        };
        let sizes: Vec<u64> = mutated.iter().map(|m| self.tensors[self.names[*m]].storage_bytes).collect();
        let bytes = sizes.iter().sum();
        let spec =
            NodeSpec::op(name, bytes, cost).backward(self.backward).origin(op, Some(format!("line {}", self.line)));
        let preds: Vec<NodeId> = args.iter().map(|&a| self.tensors[a].node).collect();
        let node = self.builder.add(spec, &preds);
        self.order.push(node);
        for (m, size) in mutated.into_iter().zip(sizes) {
            let copy = self.new_tensor(node, size, false);
            self.bind(m, copy);
        }
        Ok(())
    }

    fn finish(mut self) -> Result<(Graph, Vec<NodeId>)> {
        self.flush();
        for tensor in self.tensors.iter().filter(|t| t.refs > 0 && !t.constant) {
            self.builder.node_mut(tensor.node).output = true;
        }
        let graph = self.builder.finish().map_err(DtrLogErrorKind::InvalidGraph)?;
        Ok((graph, self.order))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::simulate;

    const LINEAR: &str = include_str!("../../../examples/dtr-logs/linear.jsonl");
    const ALIASING: &str = include_str!("../../../examples/dtr-logs/aliasing.jsonl");
    const MULTI_OUTPUT: &str = include_str!("../../../examples/dtr-logs/multi-output.jsonl");

    fn find(graph: &Graph, name: &str) -> NodeId {
        graph.ids().find(|&n| graph.node(n).name == name).unwrap_or_else(|| panic!("no node named {name:?}"))
    }

    fn names(graph: &Graph, ids: impl IntoIterator<Item = NodeId>) -> Vec<String> {
        ids.into_iter().map(|n| graph.node(n).name.clone()).collect()
    }

    fn read(text: &str) -> (Graph, Vec<NodeId>) {
        let (graph, order) = read_dtr_log(text).unwrap();
        assert_eq!(order.len(), graph.op_count(), "the order runs every op once");
        (graph, order)
    }

    fn error(text: &str) -> DtrLogError {
        read_dtr_log(text).expect_err("the log should be rejected")
    }

    #[test]
    fn linear_net_forward_and_backward() {
        let (g, order) = read(LINEAR);
        // 6 constants (x, w1..w4, y) and 13 ops.
        assert_eq!(g.len(), 19);
        assert_eq!(g.argument_bytes(), 1000 + 4 * 100 + 1000);
        assert!(g.nodes().iter().filter(|n| n.argument).all(|n| !n.output && !n.backward));
        assert_eq!(
            names(&g, order.iter().copied()),
            [
                "linear h1",
                "linear h2",
                "linear h3",
                "linear h4",
                "mse_loss loss",
                "mse_loss_backward g4",
                "linear_backward_weight gw4",
                "linear_backward_input g3",
                "linear_backward_weight gw3",
                "linear_backward_input g2",
                "linear_backward_weight gw2",
                "linear_backward_input g1",
                "linear_backward_weight gw1",
            ]
        );
        // What is still referenced at the end: the loss and the weight gradients.
        assert_eq!(
            names(&g, g.outputs()),
            [
                "mse_loss loss",
                "linear_backward_weight gw4",
                "linear_backward_weight gw3",
                "linear_backward_weight gw2",
                "linear_backward_weight gw1",
            ]
        );
        let h3 = find(&g, "linear h3");
        assert_eq!(names(&g, g.preds(h3).iter().copied()), ["linear h2", "w3"]);
        assert_eq!((g.node(h3).bytes, g.node(h3).cost), (1000, 10.0));
        assert_eq!(g.node(h3).op.as_deref(), Some("linear"));
        assert_eq!(g.node(h3).location.as_deref(), Some("line 17"));
        // The BACKWARD annotation: everything from mse_loss_backward on.
        assert_eq!(order.iter().filter(|&&n| g.node(n).backward).count(), 8);
        assert!(!g.node(find(&g, "mse_loss loss")).backward && g.node(find(&g, "mse_loss_backward g4")).backward);

        // By hand: activations 1000 bytes, weight gradients 100, the loss 4. h4 dies after
        // mse_loss_backward, g4 after g3 is made, and so on.
        let sim = simulate(&g, &order).unwrap();
        assert_eq!(sim.step_bytes, [1000, 2000, 3000, 4000, 4004, 5004, 4104, 4104, 3204, 3204, 2304, 2304, 1404]);
        assert_eq!((sim.peak_bytes, sim.peak_step), (5004, Some(5)));
        assert_eq!(sim.cost, 4.0 * 10.0 + 2.0 + 2.0 + 4.0 * 10.0 + 3.0 * 10.0);
    }

    #[test]
    fn aliasing_views_and_mutation() {
        let (g, order) = read(ALIASING);
        assert_eq!(g.argument_bytes(), 800 + 40);
        assert_eq!(
            names(&g, order.iter().copied()),
            ["matmul h", "view v", "t vt", "expand be", "add_ vt", "relu r", "sum s", "mean m"]
        );
        let (h, v, vt, be) = (find(&g, "matmul h"), find(&g, "view v"), find(&g, "t vt"), find(&g, "expand be"));
        // Views own nothing, have their source as only input, and carry the op's cost.
        assert_eq!(g.node(v).view_of, Some(h));
        assert_eq!(g.node(vt).view_of, Some(v), "a view of a view");
        assert_eq!(g.node(be).view_of, Some(find(&g, "b")), "a view of a constant");
        for view in [v, vt, be] {
            assert_eq!((g.node(view).bytes, g.node(view).cost), (0, 1.0));
            assert_eq!(g.preds(view), &[g.node(view).view_of.unwrap()]);
        }
        assert_eq!(g.storage_root(vt), h);
        // MUTATE add_(vt, be) writes vt: a fresh copy of vt's storage (h's 1000 bytes, not
        // the view's 0), reading both arguments; relu then reads the copy.
        let add = find(&g, "add_ vt");
        assert_eq!((g.node(add).bytes, g.node(add).cost, g.node(add).view_of), (1000, 3.0, None));
        assert!(g.node(add).pure);
        assert_eq!(g.preds(add), &[vt, be]);
        assert_eq!(g.preds(find(&g, "relu r")), &[add]);
        // `loss` (a COPY of s) outlives s's RELEASE; m's tensor lost its name to COPY_FROM.
        assert_eq!(names(&g, g.outputs()), ["sum s"]);

        // By hand: h (1000) lives while its views do, up to add_; add_'s copy and r are 1000
        // each; s and m 4.
        let sim = simulate(&g, &order).unwrap();
        assert_eq!(sim.step_bytes, [1000, 1000, 1000, 1000, 2000, 2000, 1004, 1008]);
        assert_eq!((sim.peak_bytes, sim.peak_step), (2000, Some(4)));
    }

    #[test]
    fn multi_output_calls() {
        let (g, order) = read(MULTI_OUTPUT);
        assert_eq!(
            names(&g, order.iter().copied()),
            ["layer_norm y", "split a", "split b", "view_and_sum bs", "view_and_sum bv", "add z"]
        );
        // Three fresh results: one node owning all their bytes.
        let ln = find(&g, "layer_norm y");
        assert_eq!((g.node(ln).bytes, g.node(ln).cost), (2000 + 16 + 16, 5.0));
        // Two views, no owning node: the first view carries the cost.
        let (a, b) = (find(&g, "split a"), find(&g, "split b"));
        assert_eq!((g.node(a).view_of, g.node(a).cost), (Some(ln), 2.0));
        assert_eq!((g.node(b).view_of, g.node(b).cost), (Some(ln), 0.0));
        // A fresh result and a view: the owner holds the fresh bytes and the cost.
        let (bs, bv) = (find(&g, "view_and_sum bs"), find(&g, "view_and_sum bv"));
        assert_eq!((g.node(bs).bytes, g.node(bs).cost, g.preds(bs)), (4, 3.0, &[b][..]));
        assert_eq!((g.node(bv).bytes, g.node(bv).cost, g.node(bv).view_of), (0, 0.0, Some(b)));
        assert_eq!(g.storage_root(bv), ln);
        assert_eq!(g.preds(find(&g, "add z")), &[a, bv]);
        // `mean` is released but pinned, so layer_norm's node is kept; bs and z are live.
        assert_eq!(names(&g, g.outputs()), ["layer_norm y", "view_and_sum bs", "add z"]);

        let sim = simulate(&g, &order).unwrap();
        assert_eq!(sim.step_bytes, [2032, 2032, 2032, 2036, 2036, 3036]);
        assert_eq!(sim.peak_bytes, 3036);
    }

    #[test]
    fn memory_and_alias_lines_in_any_order_numbers_or_strings() {
        let log = r#"{"INSTRUCTION":"CONSTANT","NAME":"x"}
{"INSTRUCTION":"MEMORY","NAME":"x","MEMORY":64}

{"INSTRUCTION":"CALL","NAME":"op","RESULT":["y","z"],"ARGS":["x"]}
{"INSTRUCTION":"ALIAS","NAME":"z","ALIAS":0}
{"INSTRUCTION":"MEMORY","NAME":"z","MEMORY":"64"}
{"INSTRUCTION":"MEMORY","NAME":"y","MEMORY":"8"}
{"INSTRUCTION":"CALL","NAME":"f","RESULT":["w"],"ARGS":["y","y","z"],"TIME":2.5}
{"INSTRUCTION":"MEMORY","NAME":"w","MEMORY":"4"}
{"INSTRUCTION":"RELEASE","NAME":"y"}
{"INSTRUCTION":"RELEASE","NAME":"z"}
"#;
        let (g, order) = read(log);
        assert_eq!(names(&g, order.iter().copied()), ["op y", "op z", "f w"]);
        let (y, z, w) = (order[0], order[1], order[2]);
        assert_eq!((g.node(y).bytes, g.node(y).cost), (8, 1.0), "TIME missing: cost 1");
        assert_eq!(g.node(z).view_of, Some(find(&g, "x")));
        assert_eq!((g.node(w).bytes, g.node(w).cost), (4, 2.5), "ALIAS missing: fresh");
        assert_eq!(g.preds(w), &[y, z], "deduplicated");
        assert_eq!(names(&g, g.outputs()), ["f w"]);
        assert!(simulate(&g, &order).is_ok());
    }

    #[test]
    fn copies_and_rebinding_follow_the_reference_counts() {
        let log = r#"{"INSTRUCTION":"CALL","NAME":"a","RESULT":["p"],"ARGS":[],"TIME":"1"}
{"INSTRUCTION":"MEMORY","NAME":"p","MEMORY":"10"}
{"INSTRUCTION":"ALIAS","NAME":"p","ALIAS":"-1"}
{"INSTRUCTION":"CALL","NAME":"b","RESULT":["q"],"ARGS":["p"],"TIME":"1"}
{"INSTRUCTION":"MEMORY","NAME":"q","MEMORY":"10"}
{"INSTRUCTION":"ALIAS","NAME":"q","ALIAS":"-1"}
{"INSTRUCTION":"CALL","NAME":"c","RESULT":["r"],"ARGS":["q"],"TIME":"1"}
{"INSTRUCTION":"MEMORY","NAME":"r","MEMORY":"10"}
{"INSTRUCTION":"ALIAS","NAME":"r","ALIAS":"-1"}
{"INSTRUCTION":"COPY","DST":"p2","SRC":"p"}
{"INSTRUCTION":"RELEASE","NAME":"p"}
{"INSTRUCTION":"COPY_FROM","DST":"q","SRC":"r"}
{"INSTRUCTION":"RELEASE","NAME":"r"}
{"INSTRUCTION":"ANNOTATE","ANNOTATION":"START"}
"#;
        // p lives on as p2; q's tensor lost its only name; r's is still named q.
        let (g, _) = read(log);
        assert_eq!(names(&g, g.outputs()), ["a p", "c r"]);
        assert!(g.nodes().iter().all(|n| !n.backward), "only BACKWARD marks the backward pass");
    }

    #[test]
    fn looks_like_a_log() {
        for log in [LINEAR, ALIASING, MULTI_OUTPUT] {
            assert!(looks_like_dtr_log(log));
        }
        assert!(looks_like_dtr_log("\n  \n{\"INSTRUCTION\": \"RELEASE\", \"NAME\": \"x\"}\nnot json"));
        assert!(!looks_like_dtr_log(r#"{"directed": true, "nodes": [], "links": []}"#));
        assert!(!looks_like_dtr_log("{\n\"INSTRUCTION\": \"CALL\"}"));
        assert!(!looks_like_dtr_log("func.func @main() {\n}"));
        assert!(!looks_like_dtr_log(""));
        assert!(!looks_like_dtr_log("[{\"INSTRUCTION\": \"CALL\"}]"));
    }

    #[test]
    fn empty_log_is_an_empty_graph() {
        let (g, order) = read("\n\n");
        assert!(g.is_empty() && order.is_empty());
    }

    const CONSTANT_X: &str =
        "{\"INSTRUCTION\":\"CONSTANT\",\"NAME\":\"x\"}\n{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"x\",\"MEMORY\":\"8\"}\n";

    fn with_x(rest: &str) -> String {
        format!("{CONSTANT_X}{rest}")
    }

    #[test]
    fn bad_json_names_its_line() {
        let err = error(&with_x("\n{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"x\"\n"));
        assert_eq!(err.line, 4);
        assert!(err.kind.to_string().starts_with("invalid JSON"), "{err}");
        assert!(err.to_string().starts_with("line 4: invalid JSON"), "{err}");
        let err = error(&with_x("[1, 2]\n"));
        assert_eq!((err.line, err.kind.to_string().as_str()), (3, "a log line must be a JSON object"));
        let err = error(&with_x("{\"NAME\":\"x\"}\n"));
        assert_eq!((err.line, err.kind.to_string().as_str()), (3, "a log line without \"INSTRUCTION\""));
    }

    #[test]
    fn unknown_instruction_names_its_line() {
        let err = error(&with_x("{\"INSTRUCTION\":\"FREE\",\"NAME\":\"x\"}\n"));
        assert_eq!((err.line, err.kind.to_string().as_str()), (3, "unknown instruction \"FREE\""));
    }

    #[test]
    fn use_before_definition_names_its_line() {
        let call =
            "{\"INSTRUCTION\":\"CALL\",\"NAME\":\"f\",\"RESULT\":[\"y\"],\"ARGS\":[\"x\",\"u\"],\"TIME\":\"1\"}\n";
        let err = error(&with_x(call));
        assert_eq!(err.line, 3);
        assert!(err.kind.to_string().contains("\"u\" is used before it is defined"), "{err}");
        // Released names are gone too, for every instruction that reads a name.
        for use_ in [
            "{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"x\"}",
            "{\"INSTRUCTION\":\"PIN\",\"NAME\":\"x\"}",
            "{\"INSTRUCTION\":\"COPY\",\"DST\":\"y\",\"SRC\":\"x\"}",
            "{\"INSTRUCTION\":\"COPY_FROM\",\"DST\":\"x\",\"SRC\":\"x\"}",
            "{\"INSTRUCTION\":\"MUTATE\",\"NAME\":\"g\",\"ARGS\":[\"x\"],\"MUTATE\":[0]}",
        ] {
            let err = error(&with_x(&format!("{{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"x\"}}\n{use_}\n")));
            assert_eq!(err.line, 4, "{use_}");
            assert!(err.kind.to_string().contains("\"x\" is used before it is defined"), "{err}");
        }
        let err = error(&with_x("{\"INSTRUCTION\":\"COPY_FROM\",\"DST\":\"fresh\",\"SRC\":\"x\"}\n"));
        assert_eq!(err.line, 3);
        assert!(err.kind.to_string().contains("\"fresh\""), "{err}");
    }

    #[test]
    fn memory_for_unknown_tensor_names_its_line() {
        let err = error(&with_x("{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"ghost\",\"MEMORY\":\"8\"}\n"));
        assert_eq!((err.line, err.kind.to_string().as_str()), (3, "MEMORY for unknown tensor \"ghost\""));
        // A computed tensor whose CALL is over.
        let log = with_x(
            "{\"INSTRUCTION\":\"CALL\",\"NAME\":\"f\",\"RESULT\":[\"y\"],\"ARGS\":[\"x\"]}\n\
             {\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"y\",\"MEMORY\":\"8\"}\n\
             {\"INSTRUCTION\":\"PIN\",\"NAME\":\"y\"}\n\
             {\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"y\",\"MEMORY\":\"8\"}\n",
        );
        let err = error(&log);
        assert_eq!(err.line, 6);
        assert!(err.kind.to_string().contains("neither a result of the CALL before it nor a CONSTANT"), "{err}");
        let err = error(&with_x("{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"x\",\"MEMORY\":\"-3\"}\n"));
        assert_eq!(err.line, 3);
        assert!(err.kind.to_string().contains("whole number of bytes"), "{err}");
    }

    #[test]
    fn alias_out_of_range_names_its_line() {
        let call = "{\"INSTRUCTION\":\"CALL\",\"NAME\":\"f\",\"RESULT\":[\"y\"],\"ARGS\":[\"x\"]}\n";
        for (alias, message) in [
            ("1", "ALIAS index 1 of \"y\" is out of range: the call has 1 argument(s)"),
            ("-2", "ALIAS index -2 of \"y\" is out of range: the call has 1 argument(s)"),
            ("\"one\"", "ALIAS of \"y\" must be an argument index or -1, found \"one\""),
        ] {
            let err = error(&with_x(&format!(
                "{call}{{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"y\",\"MEMORY\":\"8\"}}\n{{\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"y\",\"ALIAS\":{alias}}}\n"
            )));
            assert_eq!((err.line, err.kind.to_string().as_str()), (5, message));
        }
        let err = error(&with_x("{\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"x\",\"ALIAS\":\"-1\"}\n"));
        assert_eq!(
            (err.line, err.kind.to_string().as_str()),
            (3, "ALIAS for \"x\", which is not a result of the CALL before it")
        );
    }

    #[test]
    fn other_malformed_lines_name_their_line() {
        let mutate = "{\"INSTRUCTION\":\"MUTATE\",\"NAME\":\"add_\",\"ARGS\":[\"x\"],\"MUTATE\":[1]}\n";
        let err = error(&with_x(mutate));
        assert_eq!(
            (err.line, err.kind.to_string().as_str()),
            (3, "MUTATE add_: MUTATE index 1 is out of range: the call has 1 argument(s)")
        );
        let call = "{\"INSTRUCTION\":\"CALL\",\"NAME\":\"f\",\"RESULT\":[\"y\"],\"ARGS\":[\"x\"],\"TIME\":\"soon\"}\n";
        let err = error(&with_x(call));
        assert_eq!(err.line, 3);
        assert!(err.kind.to_string().contains("\"TIME\" must be a non-negative number"), "{err}");
        let call = "{\"INSTRUCTION\":\"CALL\",\"NAME\":\"f\",\"RESULT\":\"y\",\"ARGS\":[\"x\"]}\n";
        let err = error(&with_x(call));
        assert_eq!((err.line, err.kind.to_string().as_str()), (3, "CALL f: \"RESULT\" must be a list of strings"));
        let call = "{\"INSTRUCTION\":\"CALL\",\"NAME\":\"f\",\"RESULT\":[\"y\",\"y\"],\"ARGS\":[]}\n";
        let err = error(&with_x(call));
        assert_eq!((err.line, err.kind.to_string().as_str()), (3, "CALL f: result \"y\" is listed twice"));
    }

    /// The kinds carry what the messages name, so a caller need not parse the text.
    #[test]
    fn error_kinds_carry_their_data() {
        let call = "{\"INSTRUCTION\":\"CALL\",\"NAME\":\"f\",\"RESULT\":[\"y\"],\"ARGS\":[\"x\"],\"TIME\":\"soon\"}\n";
        let err = error(&with_x(call));
        assert_eq!(
            err,
            DtrLogError {
                line: 3,
                kind: DtrLogErrorKind::BadTime {
                    record: "CALL f".into(),
                    found: Box::new(Value::String("soon".into()))
                }
            }
        );
        assert_eq!(err.to_string(), "line 3: CALL f: \"TIME\" must be a non-negative number, found \"soon\"");

        let err = error(&with_x("{\"INSTRUCTION\":\"COPY\",\"DST\":7,\"SRC\":\"x\"}\n"));
        assert_eq!(
            err.kind,
            DtrLogErrorKind::NotAString { record: "COPY".into(), field: "DST".into(), found: Box::new(Value::from(7)) }
        );
        assert_eq!(err.kind.to_string(), "COPY: \"DST\" must be a string, found 7");

        let err = error(&with_x("{\"INSTRUCTION\":\"PIN\"}\n"));
        assert_eq!(err.kind, DtrLogErrorKind::MissingField { record: "PIN".into(), field: "NAME".into() });
        assert_eq!(err.kind.to_string(), "PIN without \"NAME\"");

        let err = error(&with_x("{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"ghost\"}\n"));
        assert_eq!(err.kind, DtrLogErrorKind::UndefinedTensor("ghost".into()));

        let mutate = "{\"INSTRUCTION\":\"MUTATE\",\"NAME\":\"add_\",\"ARGS\":[\"x\"],\"MUTATE\":[2]}\n";
        assert_eq!(
            error(&with_x(mutate)).kind,
            DtrLogErrorKind::MutateIndexOutOfRange { record: "MUTATE add_".into(), index: 2, arity: 1 }
        );
        let err = error(&with_x("{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"x\"}\n"));
        assert_eq!(err.kind, DtrLogErrorKind::MissingMemory { name: "x".into() });
        assert_eq!(err.kind.to_string(), "MEMORY of \"x\" without \"MEMORY\"");
        assert!(matches!(error("{\"INSTRUCTION\":\n").kind, DtrLogErrorKind::InvalidJson(_)));
    }
}
