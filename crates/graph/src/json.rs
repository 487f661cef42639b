//! Graph JSON (networkx node-link, as in the Checkmate and Moccasin benchmark graphs) and
//! schedule JSON.
//!
//! Read: `{"directed": true, "nodes": [{"id", "cost_cpu", "cost_ram", "backward", "input",
//! "output", "name"?}], "links" | "edges": [{"source", "target"}]}`. Ids may be numbers or
//! strings; nodes are numbered in file order. When no node says `output`, sinks are outputs.
//!
//! remat-opt's own extensions, written only where they differ from the default and read
//! back: `"pure": false` (never recomputed), `"view_of": id` (a zero-byte view that keeps its
//! source live), `"reuses": id` (an input whose buffer the node takes where that input dies),
//! `"fuses": [id, …]` (inputs the node can compute itself where they are recomputed for it),
//! `"op"` and `"loc"` (the MLIR op and location the node came from).

use crate::graph::{Graph, GraphBuilder, NodeId, NodeSpec};
use indexmap::IndexMap;
use serde_json::{json, Map, Value};

/// A graph JSON document that could not be read, with the place it went wrong.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("{message}")]
pub struct JsonError {
    /// What is wrong.
    pub message: String,
    /// 1-based line and column, where the JSON parser knows them.
    pub line_col: Option<(usize, usize)>,
}

impl JsonError {
    fn new(message: impl Into<String>) -> Self {
        JsonError { message: message.into(), line_col: None }
    }
}

fn id_key(value: &Value) -> Result<String, JsonError> {
    match value {
        Value::Number(n) => Ok(n.to_string()),
        Value::String(s) => Ok(format!("s:{s}")),
        other => Err(JsonError::new(format!("node ids must be numbers or strings, found {other}"))),
    }
}

fn number(node: &Map<String, Value>, field: &str, index: usize) -> Result<Option<f64>, JsonError> {
    match node.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => match n.as_f64() {
            Some(v) if v.is_finite() && v >= 0.0 => Ok(Some(v)),
            _ => Err(JsonError::new(format!("node #{index}: '{field}' must be a non-negative number"))),
        },
        Some(_) => Err(JsonError::new(format!("node #{index}: '{field}' must be a number"))),
    }
}

fn flag(node: &Map<String, Value>, field: &str, index: usize) -> Result<Option<bool>, JsonError> {
    match node.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(JsonError::new(format!("node #{index}: '{field}' must be true or false"))),
    }
}

/// Reads a graph from node-link JSON text.
pub fn read_graph(text: &str) -> Result<Graph, JsonError> {
    let doc: Value = serde_json::from_str(text)
        .map_err(|e| JsonError { message: format!("invalid JSON: {e}"), line_col: Some((e.line(), e.column())) })?;
    let doc = doc.as_object().ok_or_else(|| JsonError::new("a graph JSON document must be an object"))?;
    if doc.get("directed") == Some(&Value::Bool(false)) {
        return Err(JsonError::new("the graph must be directed (\"directed\": true)"));
    }
    let nodes = doc.get("nodes").and_then(Value::as_array).ok_or_else(|| JsonError::new("missing \"nodes\" array"))?;
    let links = match doc.get("links").or_else(|| doc.get("edges")) {
        Some(Value::Array(links)) => links.as_slice(),
        Some(_) => return Err(JsonError::new("\"links\" must be an array")),
        None => &[],
    };

    let mut ids: IndexMap<String, NodeId> = IndexMap::new();
    for (index, node) in nodes.iter().enumerate() {
        let node = node.as_object().ok_or_else(|| JsonError::new(format!("node #{index} is not an object")))?;
        let key = id_key(node.get("id").ok_or_else(|| JsonError::new(format!("node #{index} has no \"id\"")))?)?;
        if ids.insert(key.clone(), NodeId(index as u32)).is_some() {
            return Err(JsonError::new(format!("node id {} appears twice", node["id"])));
        }
    }
    let lookup = |value: &Value, what: &str| -> Result<NodeId, JsonError> {
        let key = id_key(value)?;
        ids.get(&key).copied().ok_or_else(|| JsonError::new(format!("{what} {value} names no node")))
    };

    let mut preds: Vec<Vec<NodeId>> = vec![Vec::new(); nodes.len()];
    let mut has_succ = vec![false; nodes.len()];
    for (index, link) in links.iter().enumerate() {
        let link = link.as_object().ok_or_else(|| JsonError::new(format!("link #{index} is not an object")))?;
        let source = lookup(link.get("source").unwrap_or(&Value::Null), "link source")?;
        let target = lookup(link.get("target").unwrap_or(&Value::Null), "link target")?;
        if source == target {
            return Err(JsonError::new(format!(
                "link #{index} is a self-loop on node {}",
                nodes[source.index()]["id"]
            )));
        }
        preds[target.index()].push(source);
        has_succ[source.index()] = true;
    }

    let mut specs = Vec::with_capacity(nodes.len());
    let mut any_output = false;
    for (index, node) in nodes.iter().enumerate() {
        let node = node.as_object().expect("checked above");
        let name = match node.get("name") {
            Some(Value::String(s)) => s.clone(),
            _ => match &node["id"] {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            },
        };
        let cost = number(node, "cost_cpu", index)?.unwrap_or(1.0);
        let bytes = number(node, "cost_ram", index)?.unwrap_or(0.0);
        if bytes.fract() != 0.0 || bytes > u64::MAX as f64 {
            return Err(JsonError::new(format!("node #{index}: 'cost_ram' must be a whole number of bytes")));
        }
        let workspace = number(node, "workspace", index)?.unwrap_or(0.0);
        if workspace.fract() != 0.0 || workspace < 0.0 || workspace > u64::MAX as f64 {
            return Err(JsonError::new(format!("node #{index}: 'workspace' must be a whole number of bytes")));
        }
        let input = flag(node, "input", index)?.unwrap_or(false);
        let output = flag(node, "output", index)?;
        any_output |= output == Some(true);
        let mut spec =
            if input { NodeSpec::argument(name, bytes as u64) } else { NodeSpec::op(name, bytes as u64, cost) };
        spec = spec.with_output(output.unwrap_or(false)).with_workspace(workspace as u64);
        spec = spec.backward(flag(node, "backward", index)?.unwrap_or(false));
        if flag(node, "pure", index)? == Some(false) {
            spec = spec.impure();
        }
        if let Some(source) = node.get("view_of") {
            let source = lookup(source, "view_of")?;
            spec = spec.view_of(source);
        }
        if let Some(input) = node.get("reuses") {
            spec = spec.reusing(lookup(input, "reuses")?);
        }
        if let Some(inputs) = node.get("fuses") {
            let Value::Array(inputs) = inputs else {
                return Err(JsonError::new(format!("node #{index}: 'fuses' must be a list of node ids")));
            };
            let inputs = inputs.iter().map(|v| lookup(v, "fuses")).collect::<Result<Vec<_>, _>>()?;
            spec = spec.fusing(&inputs);
        }
        if let Some(Value::String(op)) = node.get("op") {
            let loc = node.get("loc").and_then(Value::as_str).map(str::to_string);
            spec = spec.origin(op.clone(), loc);
        }
        specs.push(spec);
    }
    let mut builder = GraphBuilder::new();
    for (index, spec) in specs.into_iter().enumerate() {
        let spec = if !any_output && !has_succ[index] { spec.output() } else { spec };
        builder.add(spec, &preds[index]);
    }
    builder.finish().map_err(|e| JsonError::new(e.to_string()))
}

/// Writes a graph as node-link JSON (ids are the dense node indices).
pub fn write_graph(graph: &Graph, graph_attributes: &[(&str, Value)]) -> String {
    let mut nodes = Vec::with_capacity(graph.len());
    let mut links = Vec::new();
    for id in graph.ids() {
        let n = graph.node(id);
        let mut obj = Map::new();
        obj.insert("id".into(), json!(id.0));
        obj.insert("name".into(), json!(n.name));
        obj.insert("cost_cpu".into(), json!(n.cost));
        obj.insert("cost_ram".into(), json!(n.bytes));
        if n.workspace > 0 {
            obj.insert("workspace".into(), json!(n.workspace));
        }
        obj.insert("backward".into(), json!(n.backward));
        obj.insert("input".into(), json!(n.argument));
        obj.insert("output".into(), json!(n.output));
        if !n.pure && !n.argument {
            obj.insert("pure".into(), json!(false));
        }
        if let Some(source) = n.view_of {
            obj.insert("view_of".into(), json!(source.0));
        }
        if let Some(input) = n.reuses {
            obj.insert("reuses".into(), json!(input.0));
        }
        if !n.fuses.is_empty() {
            obj.insert("fuses".into(), json!(n.fuses.iter().map(|p| p.0).collect::<Vec<_>>()));
        }
        if let Some(op) = &n.op {
            obj.insert("op".into(), json!(op));
        }
        if let Some(loc) = &n.location {
            obj.insert("loc".into(), json!(loc));
        }
        nodes.push(Value::Object(obj));
        for &p in graph.preds(id) {
            links.push(json!({"source": p.0, "target": id.0}));
        }
    }
    let attrs: Map<String, Value> = graph_attributes.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
    let doc = json!({"directed": true, "multigraph": false, "graph": attrs, "nodes": nodes, "links": links});
    let mut text = serde_json::to_string_pretty(&doc).expect("JSON values always serialize");
    text.push('\n');
    text
}

/// Writes a schedule as `{"function", "strategy", "steps"}` JSON, with `"transfers"` (host round
/// trips as `[instance, offload_after, prefetch_before]` step indices) when there are any.
pub fn write_schedule(function: &str, strategy: &str, steps: &[NodeId], transfers: &[crate::Transfer]) -> String {
    let mut doc = json!({"function": function, "strategy": strategy, "steps": steps});
    if !transfers.is_empty() {
        // Step indices: [instance, offload_after, prefetch_before] (simulate_with_transfers).
        doc["transfers"] =
            json!(transfers.iter().map(|t| [t.instance, t.offload_after, t.prefetch_before]).collect::<Vec<_>>());
    }
    let mut text = serde_json::to_string(&doc).expect("JSON values always serialize");
    text.push('\n');
    text
}

/// serde_json's error at its place, without the place repeated in the message.
fn located(e: serde_json::Error) -> JsonError {
    let message = e.to_string();
    let message = match message.rfind(" at line ") {
        Some(at) => message[..at].to_string(),
        None => message,
    };
    JsonError { message, line_col: Some((e.line(), e.column())) }
}

/// A schedule read back from schedule JSON ([`write_schedule`]'s output).
#[derive(Clone, Debug, PartialEq)]
pub struct SavedSchedule {
    /// The function it was planned for.
    pub function: String,
    /// The strategy that planned it.
    pub strategy: String,
    /// Node numbers in execution order.
    pub steps: Vec<NodeId>,
    /// Host round trips, by step index.
    pub transfers: Vec<crate::Transfer>,
}

/// Reads schedule JSON. Only its form is checked here; whether the steps are a schedule of a
/// graph is [`crate::simulate_with_transfers`]'s question. Unknown fields are ignored.
pub fn read_schedule(text: &str) -> Result<SavedSchedule, JsonError> {
    let doc: Value = serde_json::from_str(text).map_err(located)?;
    let Value::Object(doc) = doc else {
        return Err(JsonError::new("a schedule must be a JSON object with 'function' and 'steps'"));
    };
    let text_field = |field: &str| match doc.get(field) {
        Some(Value::String(s)) => Ok(Some(s.clone())),
        None | Some(Value::Null) => Ok(None),
        Some(_) => Err(JsonError::new(format!("'{field}' must be a string"))),
    };
    let function = text_field("function")?.ok_or_else(|| JsonError::new("the schedule has no 'function'"))?;
    let strategy = text_field("strategy")?.unwrap_or_default();
    let index = |value: &Value, what: &str| -> Result<usize, JsonError> {
        value
            .as_u64()
            .and_then(|v| usize::try_from(v).ok())
            .ok_or_else(|| JsonError::new(format!("{what} must be a non-negative integer, found {value}")))
    };
    let Some(Value::Array(steps)) = doc.get("steps") else {
        return Err(JsonError::new("the schedule has no 'steps' array"));
    };
    let steps = steps
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let node = index(v, &format!("step {i}"))?;
            u32::try_from(node).map(NodeId).map_err(|_| JsonError::new(format!("step {i}: node {v} is out of range")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let transfers = match doc.get("transfers") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(list)) => list
            .iter()
            .enumerate()
            .map(|(i, t)| match t.as_array().map(Vec::as_slice) {
                Some([a, b, c]) => Ok(crate::Transfer {
                    instance: index(a, &format!("transfer {i}'s instance"))?,
                    offload_after: index(b, &format!("transfer {i}'s offload step"))?,
                    prefetch_before: index(c, &format!("transfer {i}'s prefetch step"))?,
                }),
                _ => Err(JsonError::new(format!(
                    "transfer {i} must be [instance, offload_after, prefetch_before], found {t}"
                ))),
            })
            .collect::<Result<_, _>>()?,
        Some(other) => return Err(JsonError::new(format!("'transfers' must be an array, found {other}"))),
    };
    Ok(SavedSchedule { function, strategy, steps, transfers })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::simulate;

    #[test]
    fn reads_checkmate_style_graphs_and_defaults_outputs_to_sinks() {
        let text = r#"{"directed": true, "multigraph": false, "graph": {},
            "nodes": [{"id": 0, "name": "conv1", "cost_cpu": 385, "cost_ram": 32, "backward": false},
                      {"id": 1, "cost_cpu": 2.5, "cost_ram": 16},
                      {"id": "grad", "cost_cpu": 1, "cost_ram": 8, "backward": true}],
            "links": [{"source": 0, "target": 1}, {"source": 1, "target": "grad"}, {"source": 0, "target": "grad"}]}"#;
        let g = read_graph(text).unwrap();
        assert_eq!(g.len(), 3);
        assert_eq!(g.node(NodeId(0)).name, "conv1");
        assert_eq!(g.node(NodeId(2)).name, "grad");
        assert!(g.node(NodeId(2)).output && !g.node(NodeId(1)).output);
        assert_eq!(g.preds(NodeId(2)), &[NodeId(1), NodeId(0)]);
    }

    #[test]
    fn a_workspace_counts_only_at_its_nodes_step_and_survives_a_round_trip() {
        // x (8 B) -> loop (0 B, 100 B while it runs) -> y (4 B): the peak is at the loop's step.
        let text = r#"{"nodes": [{"id": 0, "cost_ram": 8}, {"id": 1, "cost_ram": 0, "workspace": 100, "pure": false},
                                 {"id": 2, "cost_ram": 4}],
            "links": [{"source": 0, "target": 1}, {"source": 1, "target": 2}]}"#;
        let g = read_graph(text).unwrap();
        assert_eq!(g.node(NodeId(1)).workspace, 100);
        let order = g.topological_schedule();
        let sim = simulate(&g, &order).unwrap();
        assert_eq!(sim.step_bytes, vec![8, 108, 4]);
        assert_eq!(crate::lower_bound(&g), 108);
        let again = read_graph(&write_graph(&g, &[])).unwrap();
        assert_eq!(again.node(NodeId(1)).workspace, 100);
        assert_eq!(again.node(NodeId(0)).workspace, 0);
        let err = read_graph(r#"{"nodes": [{"id": 0, "workspace": 1.5}], "links": []}"#).unwrap_err().message;
        assert_eq!(err, "node #0: 'workspace' must be a whole number of bytes");
    }

    #[test]
    fn schedules_read_back_what_was_written() {
        let transfers = [crate::Transfer { instance: 0, offload_after: 1, prefetch_before: 3 }];
        let steps = [NodeId(1), NodeId(2), NodeId(1), NodeId(3)];
        let saved = read_schedule(&write_schedule("main", "chain", &steps, &transfers)).unwrap();
        assert_eq!(
            saved,
            SavedSchedule {
                function: "main".into(),
                strategy: "chain".into(),
                steps: steps.to_vec(),
                transfers: transfers.to_vec()
            }
        );
        let err = |text: &str| read_schedule(text).unwrap_err().message;
        assert_eq!(err(r#"{"steps": [1]}"#), "the schedule has no 'function'");
        assert_eq!(err(r#"{"function": "f", "steps": [1, -2]}"#), "step 1 must be a non-negative integer, found -2");
        assert_eq!(err(r#"{"function": "f", "steps": [99999999999]}"#), "step 0: node 99999999999 is out of range");
        assert_eq!(
            err(r#"{"function": "f", "steps": [1], "transfers": [[0, 1]]}"#),
            "transfer 0 must be [instance, offload_after, prefetch_before], found [0,1]"
        );
        assert_eq!(read_schedule("{\n\"function\": ").unwrap_err().line_col, Some((2, 12)));
    }

    #[test]
    fn round_trip_keeps_everything_the_model_uses() {
        let text = r#"{"directed": true, "nodes": [
            {"id": 0, "cost_ram": 100, "input": true},
            {"id": 1, "cost_ram": 8, "cost_cpu": 3},
            {"id": 2, "cost_ram": 0, "cost_cpu": 0, "view_of": 1},
            {"id": 3, "cost_ram": 4, "cost_cpu": 1, "pure": false, "output": true},
            {"id": 4, "cost_ram": 8, "cost_cpu": 1, "output": true, "fuses": [1]}],
            "edges": [{"source": 0, "target": 1}, {"source": 1, "target": 2}, {"source": 2, "target": 3},
                      {"source": 1, "target": 4}]}"#;
        let g = read_graph(text).unwrap();
        assert_eq!(g.node(NodeId(4)).fuses, vec![NodeId(1)]);
        let again = read_graph(&write_graph(&g, &[])).unwrap();
        assert_eq!(g.nodes(), again.nodes());
        let s = g.topological_schedule();
        assert_eq!(simulate(&g, &s).unwrap(), simulate(&again, &s).unwrap());
    }

    #[test]
    fn errors_say_what_and_where() {
        let err = read_graph("{\"nodes\": [}").unwrap_err();
        assert_eq!(err.line_col, Some((1, 12)));
        let err = read_graph(r#"{"nodes": [{"id": 0}], "links": [{"source": 0, "target": 7}]}"#).unwrap_err();
        assert!(err.message.contains("link target 7 names no node"), "{}", err.message);
        let err = read_graph(
            r#"{"nodes": [{"id": 0}, {"id": 1}], "links": [{"source": 0, "target": 1}, {"source": 1, "target": 0}]}"#,
        )
        .unwrap_err();
        assert!(err.message.contains("cycle"), "{}", err.message);
    }

    #[test]
    fn a_fusion_of_what_a_node_does_not_read_is_refused() {
        let err = read_graph(
            r#"{"nodes": [{"id": 0}, {"id": 1}, {"id": 2, "fuses": [0]}], "links": [{"source": 0, "target": 1}, {"source": 1, "target": 2}]}"#,
        )
        .unwrap_err();
        assert!(err.message.contains("node 2 ('2') cannot fuse node 0"), "{}", err.message);
        let err = read_graph(r#"{"nodes": [{"id": 0, "fuses": 1}]}"#).unwrap_err();
        assert!(err.message.contains("'fuses' must be a list"), "{}", err.message);
    }
}
