//! The creation of CUDA graphs, graph execs and graph nodes
//! (`CUDA_GRAPH_EVENTS`, `CUDA_GRAPH_NODE_EVENTS`), on the calling thread.
//!
//! nsys 2025.3 records graphs, execs and clones in `CUDA_GRAPH_EVENTS`
//! (`graphId`, `originalGraphId`, `graphExecId`) and nodes in
//! `CUDA_GRAPH_NODE_EVENTS` (`graphNodeId`, `originalGraphNodeId`: the node an
//! instantiated node was made from); up to 2022.4, `CUDA_GRAPH_EVENTS` held
//! the nodes. Every id column is optional: a row carries what its table has.

use super::columns::{columns, ReadRow, TakeAll};
use super::cuda::CudaEvent;
use super::ids::{pid_of, tid_of};
use super::scan::TableScan;
use super::select::{Row, Select};
use super::Report;

pub(crate) const GRAPH_EVENTS: &str = "CUDA_GRAPH_EVENTS";
pub(crate) const GRAPH_NODE_EVENTS: &str = "CUDA_GRAPH_NODE_EVENTS";

columns! {
    /// The columns of both tables that say when and by whom.
    struct CreationColumns = CREATION {
        start: i64 = required("start"),
        end: Option<i64> = optional("end"),
        global_tid: Option<i64> = required("globalTid"),
        name_id: Option<i64> = expected("nameId"),
    }
}

columns! {
    /// The columns of both tables that say what was made.
    struct GraphIdColumns = GRAPH_IDS {
        /// `ENUM_NSYS_EVENT_CLASS`: 77 node, 94 exec, 95 graph, 96 clone.
        event_class: Option<i64> = optional("eventClass"),
        graph_id: Option<i64> = optional("graphId"),
        original_graph_id: Option<i64> = optional("originalGraphId"),
        graph_exec_id: Option<i64> = optional("graphExecId"),
        graph_node_id: Option<i64> = expected_in("graphNodeId", &[GRAPH_NODE_EVENTS]),
        original_graph_node_id: Option<i64> = expected_in("originalGraphNodeId", &[GRAPH_NODE_EVENTS]),
    }
    /// What a creation made: the ids its table has.
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct GraphIds;
}

/// A graph, graph exec or graph node made (or cloned) by a thread.
pub(crate) struct GraphCreation<'r> {
    pub start: i64,
    pub end: i64,
    pub pid: u32,
    pub tid: u32,
    /// As recorded (`Graph Node Creation`); empty where the row names none.
    pub name: &'r str,
    pub ids: GraphIds,
}

impl Report {
    /// The scans of the graph creation tables, for the CUDA stream.
    pub(crate) fn graph_creation_scans(&self) -> Vec<TableScan<'_, CudaEvent<'_>>> {
        let strings = &self.strings;
        let declare = |s: &mut Select| {
            let c = CREATION.take_all(s);
            let ids = GRAPH_IDS.take_all(s);
            move |r: &Row| {
                let gtid = c.global_tid.get(r)?.unwrap_or(0);
                let start = c.start.get(r)?;
                Ok(CudaEvent::GraphCreation(Box::new(GraphCreation {
                    start,
                    end: c.end.get(r)?.unwrap_or(start),
                    pid: pid_of(gtid),
                    tid: tid_of(gtid),
                    name: strings.name(c.name_id.get(r)?),
                    ids: ids.read(r)?,
                })))
            }
        };
        [GRAPH_EVENTS, GRAPH_NODE_EVENTS]
            .into_iter()
            .filter_map(|table| self.scan(table, declare, CudaEvent::key))
            .collect()
    }
}
