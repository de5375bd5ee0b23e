//! What the commands other than conversion compute from a report: the
//! summaries of `nsys stats` (`stats`), the findings of `nsys analyze`
//! (`analyze`), the comparison of two runs (`compare`), event times across
//! runs (`series`), where the GPU time went (`gpu_time`, the page of the
//! `report` command), steps across the ranks of a job (`steps`), and the
//! NVTX GPU projection they and the conversion share (`projection`). They
//! read through `nsys/`; the only trace they write (findings in a trace)
//! goes through `perfetto/`. Opening inputs and saving answers to files is
//! the workflows' part: nothing here calls `workflows/`.

pub(crate) mod analyze;
pub(crate) mod compare;
pub(crate) mod gpu_time;
mod needs;
pub(crate) mod projection;
pub(crate) mod rules;
pub(crate) mod series;
pub(crate) mod stats;
pub(crate) mod steps;

pub(crate) use needs::{missing, Needs};
