//! The cells of a summary that say how a set of values spreads; the tables
//! themselves are written by [`crate::render::table`].

pub(crate) use crate::render::table::{Cell, RowSource, Rows, Table};

/// The cells that say how a set of values spreads: average, median,
/// minimum, maximum, standard deviation.
pub(super) fn spread_cells(s: &super::Stats) -> [Cell; 5] {
    [
        Cell::Real(s.mean, 1),
        Cell::Real(s.median, 1),
        Cell::Int(i128::from(s.min)),
        Cell::Int(i128::from(s.max)),
        Cell::Real(s.stddev, 1),
    ]
}
