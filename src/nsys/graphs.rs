//! The creation of CUDA graphs, graph execs and graph nodes
//! (`CUDA_GRAPH_EVENTS`, `CUDA_GRAPH_NODE_EVENTS`), on the calling thread.
//!
//! nsys 2025.3 records graphs, execs and clones in `CUDA_GRAPH_EVENTS`
//! (`graphId`, `originalGraphId`, `graphExecId`) and nodes in
//! `CUDA_GRAPH_NODE_EVENTS` (`graphNodeId`, `originalGraphNodeId`: the node an
//! instantiated node was made from); up to 2022.4, `CUDA_GRAPH_EVENTS` held
//! the nodes. Every id column is optional: a row carries what its table has.

use super::cuda::CudaEvent;
use super::ids::{pid_of, tid_of};
use super::scan::TableScan;
use super::select::{Row, Select};
use super::Report;

pub(crate) const GRAPH_EVENTS: &str = "CUDA_GRAPH_EVENTS";
pub(crate) const GRAPH_NODE_EVENTS: &str = "CUDA_GRAPH_NODE_EVENTS";

/// A graph, graph exec or graph node made (or cloned) by a thread.
pub(crate) struct GraphCreation<'r> {
    pub start: i64,
    pub end: i64,
    pub pid: u32,
    pub tid: u32,
    /// As recorded (`Graph Node Creation`); empty where the row names none.
    pub name: &'r str,
    /// `ENUM_NSYS_EVENT_CLASS`: 77 node, 94 exec, 95 graph, 96 clone.
    pub event_class: Option<i64>,
    pub graph_id: Option<i64>,
    pub original_graph_id: Option<i64>,
    pub graph_exec_id: Option<i64>,
    pub graph_node_id: Option<i64>,
    pub original_graph_node_id: Option<i64>,
}

impl Report {
    /// The scans of the graph creation tables, for the CUDA stream.
    pub(crate) fn graph_creation_scans(&self) -> Vec<TableScan<'_, CudaEvent<'_>>> {
        let strings = &self.strings;
        let declare = |s: &mut Select| {
            let start = s.required("start");
            let end = s.optional::<i64>("end");
            let gtid = s.required::<Option<i64>>("globalTid");
            let name = s.optional("nameId");
            let event_class = s.optional("eventClass");
            let graph_id = s.optional("graphId");
            let original_graph_id = s.optional("originalGraphId");
            let graph_exec_id = s.optional("graphExecId");
            let graph_node_id = s.optional("graphNodeId");
            let original_graph_node_id = s.optional("originalGraphNodeId");
            move |r: &Row| {
                let gtid = gtid.get(r)?.unwrap_or(0);
                let start = start.get(r)?;
                Ok(CudaEvent::GraphCreation(Box::new(GraphCreation {
                    start,
                    end: end.get(r)?.unwrap_or(start),
                    pid: pid_of(gtid),
                    tid: tid_of(gtid),
                    name: strings.name(name.get(r)?),
                    event_class: event_class.get(r)?,
                    graph_id: graph_id.get(r)?,
                    original_graph_id: original_graph_id.get(r)?,
                    graph_exec_id: graph_exec_id.get(r)?,
                    graph_node_id: graph_node_id.get(r)?,
                    original_graph_node_id: original_graph_node_id.get(r)?,
                })))
            }
        };
        [GRAPH_EVENTS, GRAPH_NODE_EVENTS]
            .into_iter()
            .filter_map(|table| self.scan(table, declare, CudaEvent::key))
            .collect()
    }
}
